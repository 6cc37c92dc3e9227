//! `warpdrive.spline`: photospline tables (`warpdrive spline info|eval`).

use crate::errors;
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::path::PathBuf;
use warpdrive_spline::points::{evaluate_points, PointsOptions};
use warpdrive_spline::SplineTable as Table;

/// A photospline table read once (`warpdrive spline info`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SplineTable {
    table: Table,
    path: PathBuf,
}

#[pymethods]
impl SplineTable {
    #[new]
    fn new(path: PathBuf) -> PyResult<Self> {
        let table = Table::read(&path).map_err(|e| errors::input(&e))?;
        Ok(Self { table, path })
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.table.ndim()
    }

    #[getter]
    fn extents(&self) -> Vec<(f64, f64)> {
        self.table.extents.iter().map(|e| (e[0], e[1])).collect()
    }

    #[getter]
    fn order(&self) -> Vec<u32> {
        self.table.order.clone()
    }

    #[getter]
    fn knots(&self) -> Vec<Vec<f64>> {
        self.table.knots.clone()
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Evaluate at `points` (N, ndim) float64. Returns (N,) values, or with `gradient` an
    /// (N, ndim + 1) array: value then ∂/∂x_d per row (the layout the library computes; the Python
    /// wrapper hands out views of it). C-contiguous input is read in place.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (points, gradient=false, device="auto", threads=None, precise=false, standard_layout=false))]
    fn eval<'py>(
        &self,
        py: Python<'py>,
        points: PyReadonlyArray2<'py, f64>,
        gradient: bool,
        device: &str,
        threads: Option<usize>,
        precise: bool,
        standard_layout: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let nd = self.table.ndim();
        let shape = points.shape();
        if shape[1] != nd {
            return Err(errors::value(format!(
                "points have {} columns for a {nd}-D table ({})",
                shape[1],
                self.path.display()
            )));
        }
        let n = shape[0];
        let owned;
        // `as_slice` also accepts Fortran order, whose memory is column-major: only a
        // C-contiguous array is read in place, anything else is copied in row-major order.
        let flat: &[f64] = match points.as_slice() {
            Ok(s) if points.is_c_contiguous() => s,
            _ => {
                owned = points.as_array().iter().copied().collect::<Vec<f64>>();
                &owned
            }
        };
        let opts = PointsOptions {
            gradient,
            devices: crate::run::devices(device)?,
            window: !standard_layout,
            precise,
        };
        let table = &self.table;
        let (values, _how) =
            crate::run::run(py, threads, None, 0, |_| evaluate_points(table, flat, &opts))?.map_err(|e| errors::gpu(&e))?;
        let arr: Bound<'py, PyArray1<f64>> = values.into_pyarray(py);
        if gradient {
            Ok(arr.reshape([n, nd + 1])?.into_any())
        } else {
            Ok(arr.into_any())
        }
    }
}
