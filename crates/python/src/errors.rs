//! Library errors → Python exceptions, with parameters spelled as Python keywords.

use pyo3::exceptions::{
    PyException, PyFileExistsError, PyFileNotFoundError, PyMemoryError, PyOSError, PyOverflowError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use warpdrive_core::cuda::{CudaError, GpuError};
use warpdrive_core::engine::{Error as EngineError, ParamError, Style};
use warpdrive_core::output::OutputError;
use warpdrive_core::InputError;

pyo3::create_exception!(
    warpdrive,
    Cancelled,
    PyException,
    "A run stopped before it finished because its progress callback returned False; nothing was written."
);

/// Bad input: `FileNotFoundError` when a named file or directory is missing, else `ValueError`.
/// The readers say so as "No such file", "… not found", or "not found, but …" (one file of a
/// pair that needs both, such as tilt.par without tilt.dat).
pub fn input(e: &InputError) -> PyErr {
    let m = &e.message;
    if m.contains("No such file") || m.ends_with("not found") || m.starts_with("not found") {
        PyFileNotFoundError::new_err(e.to_string())
    } else {
        PyValueError::new_err(e.to_string())
    }
}

/// A request value: `ValueError` naming the keyword argument.
pub fn param(e: &ParamError) -> PyErr {
    PyValueError::new_err(e.render(Style::Python))
}

/// An output: `FileExistsError` for an existing output without `force=True`, else `OSError`.
pub fn output(e: &OutputError) -> PyErr {
    let m = e.to_string().replace("--force", "force=True");
    match e {
        OutputError::Exists { .. } => PyFileExistsError::new_err(m),
        OutputError::SameAsInput { .. }
        | OutputError::InsideInput { .. }
        | OutputError::ContainsInput { .. }
        | OutputError::Duplicate { .. } => PyValueError::new_err(m),
        _ => PyOSError::new_err(m),
    }
}

/// An engine error by kind.
pub fn engine(e: &EngineError) -> PyErr {
    match e {
        EngineError::Param(p) => param(p),
        EngineError::Input(i) => input(i),
        EngineError::Limit(l) => PyMemoryError::new_err(l.render(Style::Python)),
        EngineError::Output(o) => output(o),
        EngineError::Device(g) => gpu(g),
        EngineError::Cancelled(c) => Cancelled::new_err(c.to_string()),
        EngineError::Failed(m) => PyValueError::new_err(m.clone()),
    }
}

/// Device errors: a wrong device name is a `ValueError`, a missing driver or a failed launch a
/// `RuntimeError`.
pub fn cuda(e: &CudaError) -> PyErr {
    match e {
        CudaError::Other(m) if m.contains("expected") => PyValueError::new_err(e.to_string()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

pub fn gpu(e: &GpuError) -> PyErr {
    match e {
        GpuError::Cuda(c) => cuda(c),
        GpuError::Other(m) if m.contains("not a multiple") => PyValueError::new_err(m.clone()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

pub fn value(m: impl Into<String>) -> PyErr {
    PyValueError::new_err(m.into())
}

/// A non-negative integer argument of any size, as Python gave it: a `u64`, or the text of an
/// int that is negative or beyond 64 bits. pyo3's conversion to a Rust integer raises
/// `OverflowError` for those; [`count`] raises `ValueError` naming the argument instead (issue
/// #28: "ValueError for negative or out-of-range ints"), so `trials=10**20` reads as the range
/// check it is.
pub struct Count(Result<u64, String>);

impl<'py> FromPyObject<'py> for Count {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        match ob.extract::<u64>() {
            Ok(v) => Ok(Count(Ok(v))),
            Err(e) if e.is_instance_of::<PyOverflowError>(ob.py()) => Ok(Count(Err(ob.str()?.to_string()))),
            Err(e) => Err(e),
        }
    }
}

/// A non-negative integer argument: `ValueError` naming it when it is negative or does not fit
/// in 64 bits.
pub fn count(name: &str, v: Count) -> Result<u64, PyErr> {
    v.0.map_err(|text| {
        if text.starts_with('-') {
            PyValueError::new_err(format!("{name} must be a non-negative integer, got {text}"))
        } else {
            PyValueError::new_err(format!("{name} {text}: at most {}", u64::MAX))
        }
    })
}
