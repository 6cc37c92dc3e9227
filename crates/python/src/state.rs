//! Plain-value state of native results for pickling: a dict built field by field, read back
//! with errors that name the missing or mistyped field.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A dict of a result's fields, built with chained [`State::set`] calls.
pub struct State<'py>(Bound<'py, PyDict>);

impl<'py> State<'py> {
    pub fn new(py: Python<'py>) -> Self {
        Self(PyDict::new(py))
    }

    /// Set field `key` to `value`.
    pub fn set(&mut self, key: &str, value: impl IntoPyObject<'py>) -> PyResult<&mut Self> {
        self.0.set_item(key, value)?;
        Ok(self)
    }

    pub fn into_dict(self) -> Bound<'py, PyDict> {
        self.0
    }
}

/// Field `key` of a state dict.
pub fn item<'py, T: FromPyObject<'py>>(state: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    state
        .get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("pickled state without the field {key:?}")))?
        .extract()
}
