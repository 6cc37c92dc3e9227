//! Record outputs (hit lists, energies, profiles, counts) to Python through the Arrow C data
//! interface (<https://arrow.apache.org/docs/format/CDataInterface.html>) and its PyCapsule
//! protocol (`__arrow_c_array__`, <https://arrow.apache.org/docs/format/CDataInterface/PyCapsuleInterface.html>):
//! a library [`Table`] becomes one struct array whose children are the columns. The columns'
//! vectors move into the exported arrays — no copy — and are freed when the consumer (pyarrow,
//! polars, DuckDB, …) calls the release callback. Only what the library's tables hold is
//! exported: int32, int64, float32 and float64 columns without nulls.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::{c_char, c_void, CString};
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use warpdrive_core::table::{Column, Table};

/// `struct ArrowSchema` of the C data interface (field order and types as the specification).
#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

/// `struct ArrowArray` of the C data interface.
#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

/// What a schema's pointers point into; freed by [`release_schema`].
struct SchemaPrivate {
    _format: CString,
    _name: CString,
    _metadata: Option<Vec<u8>>,
    children: Vec<ArrowSchema>,
    _child_ptrs: Vec<*mut ArrowSchema>,
}

/// What an array's pointers point into (the column's data among them); freed by [`release_array`].
struct ArrayPrivate {
    _data: Option<Column>,
    /// The UTF-8 bytes of a text column (its offsets are `_data`).
    _text: Option<Vec<u8>>,
    _buffers: Vec<*const c_void>,
    children: Vec<ArrowArray>,
    _child_ptrs: Vec<*mut ArrowArray>,
}

/// The release callback of every schema we export: release the children, free what the
/// pointers point into, mark the struct released (spec: "Released structure").
unsafe extern "C" fn release_schema(s: *mut ArrowSchema) {
    // SAFETY: called by the consumer (or our capsule destructor) on a struct we built, once.
    let s = unsafe { &mut *s };
    if s.release.is_none() {
        return;
    }
    // SAFETY: private_data is the Box<SchemaPrivate> leaked in `schema`.
    let mut p = unsafe { Box::from_raw(s.private_data.cast::<SchemaPrivate>()) };
    for c in &mut p.children {
        if let Some(r) = c.release {
            // SAFETY: a child built by `schema`, not yet released.
            unsafe { r(c) };
        }
    }
    drop(p);
    s.release = None;
}

unsafe extern "C" fn release_array(a: *mut ArrowArray) {
    // SAFETY: as for `release_schema`.
    let a = unsafe { &mut *a };
    if a.release.is_none() {
        return;
    }
    // SAFETY: private_data is the Box<ArrayPrivate> leaked in `array`.
    let mut p = unsafe { Box::from_raw(a.private_data.cast::<ArrayPrivate>()) };
    for c in &mut p.children {
        if let Some(r) = c.release {
            // SAFETY: a child built by `array`, not yet released.
            unsafe { r(c) };
        }
    }
    drop(p);
    a.release = None;
}

/// Key/value metadata in the interface's binary layout: int32 count, then per pair int32
/// length + key bytes, int32 length + value bytes (native endianness).
fn encode_metadata(meta: &[(String, String)]) -> Option<Vec<u8>> {
    if meta.is_empty() {
        return None;
    }
    let mut b = Vec::new();
    b.extend_from_slice(&(meta.len() as i32).to_ne_bytes());
    for (k, v) in meta {
        for s in [k, v] {
            b.extend_from_slice(&(s.len() as i32).to_ne_bytes());
            b.extend_from_slice(s.as_bytes());
        }
    }
    Some(b)
}

fn cstring(s: &str) -> PyResult<CString> {
    CString::new(s).map_err(|_| PyRuntimeError::new_err(format!("name {s:?} holds a NUL byte")))
}

fn schema(format: &str, name: &str, meta: &[(String, String)], children: Vec<ArrowSchema>) -> PyResult<ArrowSchema> {
    let mut p = Box::new(SchemaPrivate {
        _format: cstring(format)?,
        _name: cstring(name)?,
        _metadata: encode_metadata(meta),
        children,
        _child_ptrs: Vec::new(),
    });
    p._child_ptrs = p.children.iter_mut().map(|c| c as *mut ArrowSchema).collect();
    Ok(ArrowSchema {
        format: p._format.as_ptr(),
        name: p._name.as_ptr(),
        metadata: p._metadata.as_ref().map_or(null(), |m| m.as_ptr().cast()),
        flags: 0,
        n_children: p.children.len() as i64,
        children: if p.children.is_empty() {
            null_mut()
        } else {
            p._child_ptrs.as_mut_ptr()
        },
        dictionary: null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(p).cast(),
    })
}

fn array(length: usize, data: Option<Column>, children: Vec<ArrowArray>) -> ArrowArray {
    // Text (format `u`): buffer 1 holds the int32 offsets, buffer 2 the UTF-8 bytes; both stay
    // in the private data, so the pointers are valid until release.
    let (data, text_bytes) = match data {
        Some(Column::Str(v)) => {
            let mut offsets = Vec::with_capacity(v.len() + 1);
            let mut bytes = Vec::new();
            offsets.push(0i32);
            for s in &v {
                bytes.extend_from_slice(s.as_bytes());
                offsets.push(i32::try_from(bytes.len()).unwrap_or(i32::MAX));
            }
            (Some(Column::I32(offsets)), Some(bytes))
        }
        other => (other, None),
    };
    let data_ptr: *const c_void = match &data {
        None => null(),
        Some(Column::I32(v)) => v.as_ptr().cast(),
        Some(Column::I64(v)) => v.as_ptr().cast(),
        Some(Column::F32(v)) => v.as_ptr().cast(),
        Some(Column::F64(v)) => v.as_ptr().cast(),
        Some(Column::Str(_)) => null(), // converted above
    };
    // Buffer 0 is the validity bitmap: absent (null) because no value is null.
    let mut buffers = if data.is_some() { vec![null(), data_ptr] } else { vec![null()] };
    if let Some(b) = &text_bytes {
        buffers.push(b.as_ptr().cast());
    }
    let mut p = Box::new(ArrayPrivate {
        _data: data,
        _text: text_bytes,
        _buffers: buffers,
        children,
        _child_ptrs: Vec::new(),
    });
    p._child_ptrs = p.children.iter_mut().map(|c| c as *mut ArrowArray).collect();
    ArrowArray {
        length: length as i64,
        null_count: 0,
        offset: 0,
        n_buffers: p._buffers.len() as i64,
        n_children: p.children.len() as i64,
        buffers: p._buffers.as_mut_ptr(),
        children: if p.children.is_empty() {
            null_mut()
        } else {
            p._child_ptrs.as_mut_ptr()
        },
        dictionary: null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(p).cast(),
    }
}

/// A table as (schema, array): a struct (`+s`) of its columns with the table's metadata.
pub fn export(t: Table) -> PyResult<(ArrowSchema, ArrowArray)> {
    let rows = t.columns.first().map_or(0, |(_, c)| c.len());
    let mut field_schemas = Vec::with_capacity(t.columns.len());
    let mut field_arrays = Vec::with_capacity(t.columns.len());
    for (name, c) in t.columns {
        if c.len() != rows {
            return Err(PyRuntimeError::new_err(format!("column {name} has {} rows, not {rows}", c.len())));
        }
        // Format strings of the specification: i int32, l int64, f float32, g float64, u utf-8.
        let format = match &c {
            Column::I32(_) => "i",
            Column::I64(_) => "l",
            Column::F32(_) => "f",
            Column::F64(_) => "g",
            Column::Str(_) => "u",
        };
        field_schemas.push(schema(format, &name, &[], Vec::new())?);
        field_arrays.push(array(rows, Some(c), Vec::new()));
    }
    Ok((schema("+s", "", &t.metadata, field_schemas)?, array(rows, None, field_arrays)))
}

/// Raw structs moved into capsules: only their owner (the capsule, then the consumer) touches them.
/// Transparent, so the capsule's pointer is the struct's address as the protocol requires.
#[repr(transparent)]
struct Owned<T>(T);
// SAFETY: the structs own their data (no shared references); Python hands a capsule to one
// consumer, which moves the struct out and marks ours released.
unsafe impl<T> Send for Owned<T> {}

/// A library table waiting to be imported by an Arrow consumer (`pa.record_batch(obj)`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct ArrowTable {
    table: Mutex<Option<Table>>,
}

impl ArrowTable {
    pub fn new(t: Table) -> Self {
        Self {
            table: Mutex::new(Some(t)),
        }
    }
}

#[pymethods]
impl ArrowTable {
    /// The PyCapsule protocol: (schema capsule, array capsule). The data moves to the
    /// consumer, so a table can be exported once.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema; // the schema is what the library computed; no casts offered
        let t = self
            .table
            .lock()
            .map_err(|_| PyRuntimeError::new_err("table lock poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this table was already exported"))?;
        let (s, a) = export(t)?;
        let sc = PyCapsule::new_with_destructor(py, Owned(s), Some(cstring("arrow_schema")?), |mut s: Owned<ArrowSchema>, _| {
            if let Some(r) = s.0.release {
                // SAFETY: not consumed (the consumer would have set release to NULL).
                unsafe { r(&mut s.0) };
            }
        })?;
        let ac = PyCapsule::new_with_destructor(py, Owned(a), Some(cstring("arrow_array")?), |mut a: Owned<ArrowArray>, _| {
            if let Some(r) = a.0.release {
                // SAFETY: as above.
                unsafe { r(&mut a.0) };
            }
        })?;
        Ok((sc, ac))
    }
}
