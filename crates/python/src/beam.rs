//! `warpdrive.beam`: ELEGANT-style tracking of `.lte` lattices (`warpdrive beam track`), a
//! translation of keyword arguments into `warpdrive_beam::engine` (`Line`, `Bunch`, `Track`).

use crate::errors::{self, Count};
use crate::state::{item, State};
use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::path::PathBuf;
use std::sync::Arc;
use warpdrive_beam::beam::{Particles, Reference};
use warpdrive_beam::beam_file::{Coordinates, Longitudinal, Momentum, Origin};
use warpdrive_beam::engine::{self, BeamSource, Bunch, GaussianOptions, Line, ReferenceOptions, Track, TrackOptions};
use warpdrive_beam::species::Species;
use warpdrive_core::jobs::Share;

/// A lattice read from an `.lte` file (or text) and compiled once.
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct BeamLattice {
    line: Arc<Line>,
}

/// Particles with their species and reference momentum (checked).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct BeamParticles {
    bunch: Arc<Bunch>,
}

/// The species and momentum keywords as the engine's options.
fn reference(
    particle: Option<&str>,
    mass: Option<f64>,
    particle_charge: Option<f64>,
    p_central: Option<f64>,
    momentum: Option<f64>,
) -> PyResult<ReferenceOptions> {
    Ok(ReferenceOptions {
        particle: particle.map(engine::species).transpose().map_err(|e| errors::param(&e))?,
        mass,
        particle_charge,
        p_central,
        momentum,
    })
}

/// An (N, 6) array as coordinates: ELEGANT's (x, xp, y, yp, t, p) with `elegant`, else
/// (x, xp, y, yp, s, δ); rows are named as rows of `particles`.
fn coordinates(coords: &PyReadonlyArray2<'_, f64>, elegant: bool) -> PyResult<Coordinates> {
    if coords.shape()[1] != 6 {
        return Err(errors::value(format!(
            "particles must be an (N, 6) array, got {:?}",
            coords.shape()
        )));
    }
    let a = coords.as_array();
    let col = |k: usize| a.column(k).to_vec();
    Ok(Coordinates {
        x: col(0),
        xp: col(1),
        y: col(2),
        yp: col(3),
        longitudinal: if elegant {
            Longitudinal::T(col(4))
        } else {
            Longitudinal::S(col(4))
        },
        momentum: if elegant { Momentum::P(col(5)) } else { Momentum::Delta(col(5)) },
        origin: Origin::Arrays("particles".into()),
    })
}

fn bunch(py: Python<'_>, source: BeamSource, r: &ReferenceOptions) -> PyResult<BeamParticles> {
    let bunch = py.allow_threads(|| Bunch::new(source, r)).map_err(|e| errors::engine(&e))?;
    Ok(BeamParticles { bunch: Arc::new(bunch) })
}

/// `Particles.gaussian`: the CLI's Gaussian beam (`--particles`, Twiss options, `--seed`).
#[pyfunction]
#[pyo3(signature = (particles, beta_x, alpha_x, emit_x, nemit_x, beta_y, alpha_y, emit_y, nemit_y, sigma_s, sigma_delta, seed, particle, mass, particle_charge, p_central, momentum))]
#[allow(clippy::too_many_arguments)]
pub fn beam_gaussian(
    py: Python<'_>,
    particles: Count,
    beta_x: f64,
    alpha_x: f64,
    emit_x: Option<f64>,
    nemit_x: Option<f64>,
    beta_y: f64,
    alpha_y: f64,
    emit_y: Option<f64>,
    nemit_y: Option<f64>,
    sigma_s: f64,
    sigma_delta: f64,
    seed: Count,
    particle: Option<&str>,
    mass: Option<f64>,
    particle_charge: Option<f64>,
    p_central: Option<f64>,
    momentum: Option<f64>,
) -> PyResult<BeamParticles> {
    let g = GaussianOptions {
        particles: errors::count("particles", particles)?,
        beta_x,
        alpha_x,
        emit_x,
        nemit_x,
        beta_y,
        alpha_y,
        emit_y,
        nemit_y,
        sigma_s,
        sigma_delta,
        seed: errors::count("seed", seed)?,
    };
    let r = reference(particle, mass, particle_charge, p_central, momentum)?;
    bunch(py, BeamSource::Gaussian(g), &r)
}

/// `Particles(coords)` and `Particles.from_file(path)`.
#[pyfunction]
#[pyo3(signature = (coords, elegant, path, particle, mass, particle_charge, p_central, momentum))]
#[allow(clippy::too_many_arguments)]
pub fn beam_particles(
    py: Python<'_>,
    coords: Option<PyReadonlyArray2<'_, f64>>,
    elegant: bool,
    path: Option<PathBuf>,
    particle: Option<&str>,
    mass: Option<f64>,
    particle_charge: Option<f64>,
    p_central: Option<f64>,
    momentum: Option<f64>,
) -> PyResult<BeamParticles> {
    let r = reference(particle, mass, particle_charge, p_central, momentum)?;
    let source = match (coords, path) {
        (Some(c), None) => BeamSource::Coordinates(coordinates(&c, elegant)?),
        (None, Some(p)) => BeamSource::File(p),
        _ => {
            return Err(errors::value(
                "give the particles as an (N, 6) array or as a file path (one of them)",
            ))
        }
    };
    bunch(py, source, &r)
}

#[pymethods]
impl BeamParticles {
    /// (N, 6) coordinates: ELEGANT's (x, xp, y, yp, t [s], p) with `elegant`, else
    /// (x, xp, y, yp, s [m], δ).
    fn coords<'py>(&self, py: Python<'py>, elegant: bool) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let t = warpdrive_beam::beam::to_table(&self.bunch.particles, &self.bunch.reference);
        let names = if elegant {
            ["x", "xp", "y", "yp", "t", "p"]
        } else {
            ["x", "xp", "y", "yp", "s", "delta"]
        };
        let cols: Vec<Vec<f64>> = names.iter().map(|n| t.column(n).map(|c| c.to_f64()).unwrap_or_default()).collect();
        let n = self.bunch.len();
        let flat: Vec<f64> = (0..n).flat_map(|i| cols.iter().map(move |c| c[i])).collect();
        flat.into_pyarray(py).reshape([n, 6])
    }

    /// The particles as a table (x, xp, y, yp, s, delta, t, p, lost_at, lost_pass).
    fn table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, warpdrive_beam::beam::to_table(&self.bunch.particles, &self.bunch.reference))
    }

    fn __len__(&self) -> usize {
        self.bunch.len()
    }

    #[getter]
    fn particle(&self) -> String {
        self.bunch.species.name.clone()
    }

    /// Rest mass [MeV/c²].
    #[getter]
    fn mass(&self) -> f64 {
        self.bunch.species.mass_ev / 1e6
    }

    /// Charge number [e].
    #[getter]
    fn particle_charge(&self) -> f64 {
        self.bunch.species.charge
    }

    #[getter]
    fn p_central(&self) -> f64 {
        self.bunch.reference.p_central
    }

    #[getter]
    fn description(&self) -> String {
        self.bunch.description.clone()
    }

    /// Pickling: the particles' columns (NumPy), species, reference and origin, rebuilt by
    /// `from_state` bit for bit.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let (b, p) = (&*self.bunch, &self.bunch.particles);
        let mut s = State::new(py);
        for (name, col) in [
            ("x", &p.x),
            ("xp", &p.xp),
            ("y", &p.y),
            ("yp", &p.yp),
            ("s", &p.s),
            ("delta", &p.delta),
        ] {
            s.set(name, col.clone().into_pyarray(py))?;
        }
        s.set("lost_at", p.lost_at.clone().into_pyarray(py))?
            .set("lost_pass", p.lost_pass.clone().into_pyarray(py))?
            .set("species", (&b.species.name, b.species.mass_ev, b.species.charge))?
            .set("reference", (b.reference.mass_ev, b.reference.p_central, b.reference.charge))?
            .set("path", &b.path)?
            .set("description", &b.description)?;
        let restore = py.get_type::<Self>().getattr("from_state")?;
        Ok((restore, PyTuple::new(py, [s.into_dict()])?))
    }

    /// The particles from the values of `__reduce__`.
    #[staticmethod]
    fn from_state(state: &Bound<'_, PyDict>) -> PyResult<Self> {
        let f64s = |key: &str| -> PyResult<Vec<f64>> { Ok(item::<PyReadonlyArray1<'_, f64>>(state, key)?.as_slice()?.to_vec()) };
        let u32s = |key: &str| -> PyResult<Vec<u32>> { Ok(item::<PyReadonlyArray1<'_, u32>>(state, key)?.as_slice()?.to_vec()) };
        let (name, mass_ev, charge): (String, f64, f64) = item(state, "species")?;
        let (ref_mass_ev, p_central, ref_charge): (f64, f64, f64) = item(state, "reference")?;
        let bunch = Bunch {
            particles: Particles {
                x: f64s("x")?,
                xp: f64s("xp")?,
                y: f64s("y")?,
                yp: f64s("yp")?,
                s: f64s("s")?,
                delta: f64s("delta")?,
                lost_at: u32s("lost_at")?,
                lost_pass: u32s("lost_pass")?,
            },
            species: Species { name, mass_ev, charge },
            reference: Reference {
                mass_ev: ref_mass_ev,
                p_central,
                charge: ref_charge,
            },
            path: item(state, "path")?,
            description: item(state, "description")?,
        };
        Ok(Self { bunch: Arc::new(bunch) })
    }
}

/// (final table, watch records as (element, name, pass, s, table), moments table, device,
/// lost by element, LSC peak currents of the last pass, tracking seconds).
type TrackResult<'py> = (
    Bound<'py, crate::arrow_c::ArrowTable>,
    Bound<'py, PyList>,
    Bound<'py, crate::arrow_c::ArrowTable>,
    String,
    Vec<(String, usize)>,
    Vec<f64>,
    f64,
);

fn pass_list(name: &str, v: Option<Vec<Count>>) -> PyResult<Option<Vec<u64>>> {
    v.map(|l| l.into_iter().map(|x| errors::count(name, x)).collect()).transpose()
}

#[pymethods]
impl BeamLattice {
    /// Read `path` (or parse `text`, called `name` in messages) and use `line` (default: the
    /// file's USE, else its last line).
    #[new]
    #[pyo3(signature = (path=None, line=None, text=None, name=None))]
    fn new(py: Python<'_>, path: Option<PathBuf>, line: Option<String>, text: Option<String>, name: Option<String>) -> PyResult<Self> {
        let line = py
            .allow_threads(|| match (path, text) {
                (Some(p), None) => Ok(Line::read(&p, line.as_deref())),
                (None, Some(t)) => Ok(Line::parse(&t, name.as_deref().unwrap_or("<text>"), line.as_deref())),
                _ => Err(()),
            })
            .map_err(|()| errors::value("give a lattice file path or text= (one of them)"))?
            .map_err(|e| errors::engine(&e))?;
        Ok(Self { line: Arc::new(line) })
    }

    #[getter]
    fn line(&self) -> String {
        self.line.line_name().to_string()
    }

    #[getter]
    fn name(&self) -> String {
        self.line.name().to_string()
    }

    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.line.path().map(PathBuf::from)
    }

    #[getter]
    fn length(&self) -> f64 {
        self.line.length()
    }

    #[getter]
    fn n_elements(&self) -> usize {
        self.line.elements()
    }

    /// `warpdrive beam track` on `beam` (a `BeamParticles`) or `coords` (an (N, 6) array in the
    /// `elegant` or warpdrive convention); `output` writes the CLI's directory.
    #[pyo3(signature = (beam, coords, elegant, passes, particle, mass, particle_charge, p_central, momentum, aperture, charge, histogram, launch_per_element, min_blocks, watch, watch_every, watch_passes, watch_particles, output, force, plot, device, threads, precise, progress, jobs=None, job_index=None, sdds=false))]
    #[allow(clippy::too_many_arguments)]
    fn track<'py>(
        &self,
        py: Python<'py>,
        beam: Option<Bound<'py, BeamParticles>>,
        coords: Option<PyReadonlyArray2<'py, f64>>,
        elegant: bool,
        passes: Count,
        particle: Option<&str>,
        mass: Option<f64>,
        particle_charge: Option<f64>,
        p_central: Option<f64>,
        momentum: Option<f64>,
        aperture: Option<f64>,
        charge: f64,
        histogram: &str,
        launch_per_element: bool,
        min_blocks: Count,
        watch: &str,
        watch_every: Count,
        watch_passes: Option<Vec<Count>>,
        watch_particles: Option<Vec<Count>>,
        output: Option<PathBuf>,
        force: bool,
        plot: bool,
        device: &str,
        threads: Option<Count>,
        precise: bool,
        progress: Option<&Bound<'py, PyAny>>,
        jobs: Option<Count>,
        job_index: Option<Count>,
        sdds: bool,
    ) -> PyResult<TrackResult<'py>> {
        let jobs = jobs.map(|n| errors::count("jobs", n)).transpose()?.unwrap_or(1);
        let job_index = job_index.map(|n| errors::count("job_index", n)).transpose()?.unwrap_or(0);
        let source = match (beam, coords) {
            (Some(b), None) => BeamSource::Bunch(Arc::clone(&b.get().bunch)),
            (None, Some(c)) => BeamSource::Coordinates(coordinates(&c, elegant)?),
            _ => return Err(errors::value("give the particles as Particles or as an (N, 6) array (one of them)")),
        };
        let r = reference(particle, mass, particle_charge, p_central, momentum)?;
        let min_blocks = u32::try_from(errors::count("min_blocks", min_blocks)?).unwrap_or(u32::MAX);
        let opts = TrackOptions {
            passes: errors::count("passes", passes)?,
            aperture,
            charge,
            histogram: engine::histogram(histogram).map_err(|e| errors::param(&e))?,
            launch_per_element,
            min_blocks,
            watch: engine::watch_mode(watch).map_err(|e| errors::param(&e))?,
            watch_every: errors::count("watch_every", watch_every)?,
            watch_passes: pass_list("watch_passes", watch_passes)?,
            watch_particles: pass_list("watch_particles", watch_particles)?,
            output: output.is_some(),
            plot,
            sdds,
            command: "python: warpdrive.beam.Lattice.track".into(),
            split: Share::new(jobs, job_index).map_err(|e| errors::param(&e))?,
        };
        let (ctl, notes) = crate::run::control(device, threads, precise)?;
        let line = Arc::clone(&self.line);
        let req = py
            .allow_threads(|| Track::new(line, source, &r, &opts))
            .map_err(|e| errors::engine(&e))?;
        let out = match &output {
            None => None,
            Some(dir) => Some(
                py.allow_threads(|| engine::prepare_output(dir, force, &req.inputs()))
                    .map_err(|e| errors::engine(&e))?,
            ),
        };
        let mut t = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl, out))?;
        let records = PyList::empty(py);
        for w in std::mem::take(&mut t.records) {
            records.append((w.element, w.name, w.pass, w.s, crate::photon::columns(py, w.table)?))?;
        }
        let moments = warpdrive_beam::watch::moments_table(&t.moments);
        Ok((
            crate::photon::columns(py, t.final_table())?,
            records,
            crate::photon::columns(py, moments)?,
            t.device.clone(),
            t.lost_by_element.clone(),
            t.lsc.iter().map(|s| s.peak_current).collect(),
            t.tracking_seconds,
        ))
    }

    /// `warpdrive beam twiss`: the numeric columns of `twiss.parquet`, the element names and
    /// types, and `summary.json`'s text; `betx`/`bety` (both) make it a line.
    #[pyo3(signature = (betx, bety, alfx, alfy, dx, dpx, particle, p_central, momentum, output, force, plot, sdds=false))]
    #[allow(clippy::too_many_arguments)]
    fn twiss<'py>(
        &self,
        py: Python<'py>,
        betx: Option<f64>,
        bety: Option<f64>,
        alfx: f64,
        alfy: f64,
        dx: f64,
        dpx: f64,
        particle: Option<&str>,
        p_central: Option<f64>,
        momentum: Option<f64>,
        output: Option<PathBuf>,
        force: bool,
        plot: bool,
        sdds: bool,
    ) -> PyResult<TwissResult<'py>> {
        let initial = match (betx, bety) {
            (None, None) => None,
            (Some(betx), Some(bety)) => Some(warpdrive_beam::twiss::Initial {
                betx,
                bety,
                alfx,
                alfy,
                dx,
                dpx,
            }),
            _ => return Err(errors::value("give both betx and bety (a line), or neither (a ring)")),
        };
        let r = reference(particle, None, None, p_central, momentum)?;
        let opts = engine::TwissOptions {
            initial,
            plot,
            sdds,
            command: "python: warpdrive.beam.Lattice.twiss".into(),
        };
        let line = Arc::clone(&self.line);
        let optics = py
            .allow_threads(|| -> Result<_, warpdrive_core::engine::Error> {
                let out = match &output {
                    None => None,
                    Some(dir) => Some(engine::prepare_output(
                        dir,
                        force,
                        &line.path().map(PathBuf::from).into_iter().collect::<Vec<_>>(),
                    )?),
                };
                line.twiss(&r, &opts, out)
            })
            .map_err(|e| errors::engine(&e))?;
        let mut t = warpdrive_core::table::Table::default();
        let col = |f: fn(&warpdrive_beam::twiss::Row) -> f64| warpdrive_core::table::Column::F64(optics.rows.iter().map(f).collect());
        t.push("s", col(|r| r.s));
        t.push("betx", col(|r| r.betx));
        t.push("bety", col(|r| r.bety));
        t.push("alfx", col(|r| r.alfx));
        t.push("alfy", col(|r| r.alfy));
        t.push("dx", col(|r| r.dx));
        t.push("dpx", col(|r| r.dpx));
        t.push("mux", col(|r| r.mux));
        t.push("muy", col(|r| r.muy));
        Ok((
            crate::photon::columns(py, t)?,
            optics.rows.iter().map(|r| r.name.clone()).collect(),
            optics.rows.iter().map(|r| r.kind.to_string()).collect(),
            optics.summary_json(&self.line, &opts.command).to_string(),
        ))
    }
}

/// `warpdrive merge` of beam tracking jobs (`Lattice.track(..., jobs=, job_index=, output=)`):
/// their directories combined into `output` as the unsplit run writes it; returns (particles,
/// watch events, watch files).
#[pyfunction]
#[pyo3(signature = (dirs, output, force))]
pub fn beam_merge(py: Python<'_>, dirs: Vec<PathBuf>, output: PathBuf, force: bool) -> PyResult<(u64, usize, Vec<String>)> {
    let ctl = crate::run::control("cpu", None, false)?.0;
    let m = py
        .allow_threads(|| {
            let out = engine::prepare_output(&output, force, &dirs)?;
            engine::merge_tracks(&dirs, out, &ctl)
        })
        .map_err(|e| errors::engine(&e))?;
    Ok((m.particles, m.watch_events, m.watch_files))
}

/// `warpdrive beam run FILE.ele` (one library call, [`warpdrive_beam::ele::run_file`]):
/// (output directory, files written, steps as (track, step, dir, particles, lost, device, σx,
/// σy), the last twiss_output's summary JSON, the last matrix_output's (C, R, T by i and
/// pair j ≤ k)).
#[pyfunction]
#[pyo3(signature = (ele, output, force, sdds, device, threads, precise, progress))]
#[allow(clippy::too_many_arguments)]
pub fn beam_run(
    py: Python<'_>,
    ele: PathBuf,
    output: Option<PathBuf>,
    force: bool,
    sdds: bool,
    device: &str,
    threads: Option<Count>,
    precise: bool,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<RunResult> {
    let (ctl, notes) = crate::run::control(device, threads, precise)?;
    let opts = warpdrive_beam::ele::EleOptions {
        sdds,
        command: "python: warpdrive.beam.run".into(),
    };
    let r = crate::run::run(py, &ctl, &notes, progress, || {
        warpdrive_beam::ele::run_file(&ele, output.as_deref(), force, &opts, &ctl)
    })?;
    let steps = r
        .steps
        .iter()
        .map(|t| {
            (
                t.track,
                t.step,
                t.dir.clone(),
                t.particles,
                t.lost,
                t.device.clone(),
                t.sigma_x,
                t.sigma_y,
            )
        })
        .collect();
    let twiss = match (&r.twiss, &r.line) {
        (Some(o), Some(line)) => Some(o.summary_json(line, &opts.command).to_string()),
        _ => None,
    };
    let matrix = r.matrix.as_ref().map(|m| {
        (
            m.c.to_vec(),
            m.r.iter().map(|row| row.to_vec()).collect(),
            m.t.iter().map(|row| row.to_vec()).collect(),
        )
    });
    Ok((r.output.display().to_string(), r.written, steps, twiss, matrix))
}

/// (output, written, steps, twiss summary JSON, matrix (C, R, T)).
type RunResult = (
    String,
    Vec<String>,
    Vec<(usize, usize, String, usize, usize, String, f64, f64)>,
    Option<String>,
    Option<(Vec<f64>, Vec<Vec<f64>>, Vec<Vec<f64>>)>,
);

/// (numeric columns, element names, element types, summary JSON).
type TwissResult<'py> = (Bound<'py, crate::arrow_c::ArrowTable>, Vec<String>, Vec<String>, String);
