//! `warpdrive.beam`: ELEGANT-style tracking of `.lte` lattices (`warpdrive beam track`).

use crate::errors;
use numpy::{PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::path::PathBuf;
use warpdrive_beam::beam::{from_columns, to_table};
use warpdrive_beam::lattice::Lattice;
use warpdrive_beam::program::Program;
use warpdrive_beam::setup::{self, BackendOptions};
use warpdrive_beam::track::{track, TrackOptions, WatchEvent};
use warpdrive_core::table::Table;

/// A lattice read from an `.lte` file and compiled once.
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct BeamLattice {
    lattice: Lattice,
    program: Program,
}

/// One watch-point record: element index, name, pass, position s [m], particle columns.
type Watch = (usize, String, u32, f64, Table);

#[pymethods]
impl BeamLattice {
    #[staticmethod]
    #[pyo3(signature = (path, line=None))]
    fn from_lte(path: PathBuf, line: Option<&str>) -> PyResult<Self> {
        let lattice = Lattice::read(&path, line).map_err(|e| {
            let m = e.to_string();
            if m.contains("cannot read") && m.contains("No such file") {
                PyFileNotFoundError::new_err(m)
            } else {
                errors::value(m)
            }
        })?;
        let program = Program::compile(&lattice);
        Ok(Self { lattice, program })
    }

    #[getter]
    fn line(&self) -> String {
        self.lattice.line.clone()
    }

    #[getter]
    fn length(&self) -> f64 {
        self.program.length
    }

    #[getter]
    fn n_elements(&self) -> usize {
        self.lattice.elements.len()
    }

    /// Track `coords` (N, 6): ELEGANT's (x, xp, y, yp, t [s], p = βγ) with `elegant`, else
    /// (x, xp, y, yp, s [m], δ). Returns (final columns, watch records, device): columns as
    /// (name, array) pairs of `final.parquet` (x, xp, y, yp, s, delta, t, p, lost_at, lost_pass).
    #[pyo3(signature = (coords, elegant, passes, particle, p_central, momentum, aperture, charge, histogram, device, threads, precise, per_element, min_blocks, progress))]
    #[allow(clippy::too_many_arguments)]
    fn track<'py>(
        &self,
        py: Python<'py>,
        coords: PyReadonlyArray2<'py, f64>,
        elegant: bool,
        passes: u32,
        particle: &str,
        p_central: f64,
        momentum: Option<f64>,
        aperture: Option<f64>,
        charge: f64,
        histogram: &str,
        device: &str,
        threads: Option<usize>,
        precise: bool,
        per_element: bool,
        min_blocks: u32,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, crate::arrow_c::ArrowTable>, Bound<'py, PyList>, String)> {
        if coords.shape()[1] != 6 {
            return Err(errors::value(format!(
                "particles must be an (N, 6) array, got {:?}",
                coords.shape()
            )));
        }
        let reference = setup::reference(particle, p_central, momentum).map_err(errors::value)?;
        let histogram = setup::histogram(histogram).map_err(errors::value)?;
        let aperture = aperture.unwrap_or(f64::INFINITY);
        if !(aperture == f64::INFINITY || (aperture > 0.0 && aperture.is_finite())) {
            return Err(errors::value("--aperture must be positive"));
        }
        if passes == 0 {
            return Err(errors::value("--passes must be at least 1"));
        }
        let a = coords.as_array();
        let col = |k: usize| a.column(k).to_vec();
        let (st, dp) = if elegant {
            ((None, Some(col(4))), (None, Some(col(5))))
        } else {
            ((Some(col(4)), None), (Some(col(5)), None))
        };
        let particles =
            from_columns([col(0), col(1), col(2), col(3)], st, dp, &reference).map_err(|m| errors::value(format!("particles: {m}")))?;
        if particles.is_empty() {
            return Err(errors::value("--particles must be at least 1"));
        }
        let o = BackendOptions {
            devices: crate::run::devices(device)?,
            precise,
            aperture,
            histogram,
            per_element,
            min_blocks,
        };
        let program = &self.program;
        let result = crate::run::legacy(py, threads, progress, u64::from(passes), |prog| {
            let (mut backend, device) = setup::make_backend(program, particles, reference, &o)?;
            let mut watches: Vec<Watch> = Vec::new();
            track(
                program,
                backend.as_mut(),
                &TrackOptions {
                    passes,
                    aperture,
                    histogram,
                    charge,
                    reference,
                },
                &mut |ev: WatchEvent| {
                    watches.push((
                        ev.element,
                        ev.name.to_string(),
                        ev.pass,
                        ev.position,
                        to_table(ev.particles, &reference),
                    ));
                    Ok(())
                },
                &mut |p| prog.add(u64::from(p) - prog.done()),
            )?;
            let fin = backend.particles()?;
            Ok::<_, String>((to_table(&fin, &reference), watches, device))
        })?;
        let (fin, watches, device) = result.map_err(PyRuntimeError::new_err)?;
        let out = PyList::empty(py);
        for (element, name, pass, s, t) in watches {
            out.append((element, name, pass, s, crate::photon::columns(py, t)?))?;
        }
        Ok((crate::photon::columns(py, fin)?, out, device))
    }
}
