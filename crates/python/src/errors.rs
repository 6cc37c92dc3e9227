//! Library errors → Python exceptions, carrying the messages the CLI prints.

use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyValueError};
use pyo3::PyErr;
use warpdrive_core::cuda::{CudaError, GpuError};
use warpdrive_core::InputError;

/// Bad input: `FileNotFoundError` when a named file or directory is missing, else `ValueError`.
pub fn input(e: &InputError) -> PyErr {
    let m = &e.message;
    if m.contains("No such file") || m.ends_with("not found") {
        PyFileNotFoundError::new_err(e.to_string())
    } else {
        PyValueError::new_err(e.to_string())
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
