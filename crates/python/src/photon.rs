//! `warpdrive.photon`: the detector and propagation (`warpdrive photon`) and the PPC mode
//! (`warpdrive ppc`), translations of keyword arguments into `warpdrive_photon::engine` calls.

use crate::errors::{self, Count};
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;
use warpdrive_core::jobs::Share;
use warpdrive_core::table::{Column, Table};
use warpdrive_photon::detector::Detector as Det;
use warpdrive_photon::engine::{self, DetectorSpec, ParticleName, Propagate, PropagateOptions, SourceOptions, TypedSources};

/// Ice, geometry and modules built and validated once (`--ice`, `--geometry`, `--sensors`,
/// `--oversize`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct Detector {
    det: Arc<Det>,
}

/// A library table for Python: exported through the Arrow C data interface ([`crate::arrow_c`]);
/// `warpdrive._arrow.table` imports it as a `pyarrow.Table` without copying the columns.
pub fn columns(py: Python<'_>, t: Table) -> PyResult<Bound<'_, crate::arrow_c::ArrowTable>> {
    Bound::new(py, crate::arrow_c::ArrowTable::new(t))
}

/// A particle as Python gives it: a PDG code or a name.
#[derive(FromPyObject)]
pub enum ParticleArg {
    Code(i64),
    Name(String),
}

/// (N, `width`) float64 rows as the flat list the request takes.
fn rows(name: &str, a: Option<PyReadonlyArray2<'_, f64>>, width: usize, what: &str) -> PyResult<Option<Vec<f64>>> {
    let Some(a) = a else { return Ok(None) };
    if a.shape()[1] != width {
        return Err(errors::value(format!(
            "{name} must be (N, {width}) {what}, got shape {:?}",
            a.shape()
        )));
    }
    Ok(Some(a.as_array().iter().copied().collect()))
}

fn values(a: Option<PyReadonlyArray1<'_, f64>>) -> Option<Vec<f64>> {
    a.map(|a| a.as_array().to_vec())
}

/// What `Detector.propagate` returns: the hit table, its metadata, the device, photons
/// propagated and seconds.
type Propagated<'py> = (Bound<'py, crate::arrow_c::ArrowTable>, Vec<(String, String)>, String, u64, f64);

#[pymethods]
impl Detector {
    #[new]
    #[pyo3(signature = (ice=None, geometry=None, oversize=None, sensors=None))]
    fn new(
        py: Python<'_>,
        ice: Option<PathBuf>,
        geometry: Option<PathBuf>,
        oversize: Option<Count>,
        sensors: Option<PathBuf>,
    ) -> PyResult<Self> {
        let spec = DetectorSpec {
            ice,
            geometry,
            sensors,
            oversize: oversize.map(|o| errors::count("oversize", o)).transpose()?,
        };
        let det = py.allow_threads(|| engine::detector(&spec)).map_err(|e| errors::engine(&e))?;
        Ok(Self { det: Arc::new(det) })
    }

    /// What the CLI prints about the model on stderr (description, then unsupported options).
    #[getter]
    fn description(&self) -> Vec<String> {
        self.det.description.clone()
    }

    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.det.unsupported.clone()
    }

    #[getter]
    fn ice(&self) -> String {
        self.det.ice.clone()
    }

    /// Where the geometry comes from (a file, or the generated detector).
    #[getter]
    fn geometry_source(&self) -> String {
        self.det.geometry.source.clone()
    }

    /// The modules: string, om, x, y, z [m] (IceCube coordinates), in the geometry's order.
    fn geometry_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        let d = &self.det.geometry.doms;
        let mut t = Table::default();
        t.push("string", Column::I32(d.iter().map(|m| m.string).collect()));
        t.push("om", Column::I32(d.iter().map(|m| m.om).collect()));
        for (k, name) in ["x", "y", "z"].iter().enumerate() {
            t.push(name, Column::F64(d.iter().map(|m| m.pos[k]).collect()));
        }
        columns(py, t)
    }

    #[getter]
    fn doms(&self) -> usize {
        self.det.geometry.doms.len()
    }

    #[getter]
    fn strings(&self) -> usize {
        self.det.strings()
    }

    /// The tilt model in words (`none`, `1-D (…)`, `2-D (…)`).
    #[getter]
    fn tilt(&self) -> String {
        self.det.medium.tilt.describe()
    }

    /// The multi-PMT module directory, if any.
    #[getter]
    fn sensors(&self) -> Option<String> {
        self.det.sensors.as_ref().map(|s| s.dir.display().to_string())
    }

    /// `warpdrive photon` on this detector: the sources as one of `input` (f2k file), `f2k`
    /// (f2k text), `steps` (step file) or the typed arrays; the outputs written by the library
    /// when `output`/`hit_lines` are given.
    #[pyo3(signature = (input, f2k, steps, particle, position, direction, energy, time, length, seed, max_photons, output, hit_lines, force, device, threads, precise, progress, jobs, job_index))]
    #[allow(clippy::too_many_arguments)]
    fn propagate<'py>(
        &self,
        py: Python<'py>,
        input: Option<PathBuf>,
        f2k: Option<String>,
        steps: Option<PathBuf>,
        particle: Option<Vec<ParticleArg>>,
        position: Option<PyReadonlyArray2<'py, f64>>,
        direction: Option<PyReadonlyArray2<'py, f64>>,
        energy: Option<PyReadonlyArray1<'py, f64>>,
        time: Option<PyReadonlyArray1<'py, f64>>,
        length: Option<PyReadonlyArray1<'py, f64>>,
        seed: Count,
        max_photons: Option<Count>,
        output: Option<PathBuf>,
        hit_lines: Option<PathBuf>,
        force: bool,
        device: &str,
        threads: Option<Count>,
        precise: bool,
        progress: Option<&Bound<'py, PyAny>>,
        jobs: Count,
        job_index: Count,
    ) -> PyResult<Propagated<'py>> {
        let particle = particle.map(|p| {
            p.into_iter()
                .map(|a| match a {
                    ParticleArg::Code(c) => ParticleName::Pdg(c),
                    ParticleArg::Name(n) => ParticleName::Name(n),
                })
                .collect()
        });
        let sources = SourceOptions {
            input,
            f2k,
            steps,
            typed: TypedSources {
                particle,
                position: rows("position", position, 3, "[m]")?,
                direction: rows("direction", direction, 2, "f2k zenith and azimuth [deg]")?,
                energy: values(energy),
                time: values(time),
                length: values(length),
            },
        };
        let opts = PropagateOptions {
            seed: errors::count("seed", seed)?,
            max_photons: max_photons.map(|m| errors::count("max_photons", m)).transpose()?,
            split: Share::new(errors::count("jobs", jobs)?, errors::count("job_index", job_index)?).map_err(|e| errors::param(&e))?,
            command: "warpdrive.photon.propagate (Python)".into(),
        };
        let (ctl, notes) = crate::run::control(device, threads, precise)?;
        let det = Arc::clone(&self.det);
        let req = py
            .allow_threads(|| Propagate::new(det, sources, &opts))
            .map_err(|e| errors::engine(&e))?;
        let outs = if output.is_some() || hit_lines.is_some() {
            let staged = py.allow_threads(|| engine::prepare_outputs(output.as_deref(), hit_lines.as_deref(), force, req.inputs()));
            Some(staged.map_err(|e| errors::engine(&e))?)
        } else {
            None
        };
        let r = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
        if let Some(outs) = outs {
            py.allow_threads(|| r.save(outs)).map_err(|e| errors::engine(&e))?;
        }
        let meta = r.metadata().to_vec();
        Ok((columns(py, r.table())?, meta, r.device.clone(), r.sim.photons, r.seconds))
    }
}

/// The particle names and PDG codes typed sources accept besides the f2k names: (name, code,
/// the f2k kind simulated).
pub fn particle_aliases() -> Vec<(&'static str, i64, &'static str)> {
    warpdrive_photon::source::Particle::PDG_NAMES
        .iter()
        .map(|(n, c, p)| (*n, *c, p.name()))
        .collect()
}

/// PPC's command line (`warpdrive ppc ARGS`) with `env` as its environment (PPCTABLESDIR, WFLA,
/// FLDR, …, WARPDRIVE_SEED, WARPDRIVE_DEVICE) and `stdin` (bytes) or the text file `stdin_path`
/// (read through the bounded input reader: a NUL byte stops it) as its standard input, under a control of `threads`
/// (Ctrl-C and `progress` stop it). Returns (stdout, stderr) as the command writes them; errors
/// are raised with the command's message.
/// The merged hits and their metadata.
type MergedHits<'py> = (Bound<'py, crate::arrow_c::ArrowTable>, Vec<(String, String)>);

/// `warpdrive merge` of photon jobs: the hits of the jobs' Parquet files (`jobs=`/`job_index=`,
/// written with `output=`) as the unsplit run's table; written to `output` when given.
#[pyfunction]
#[pyo3(signature = (paths, output, force))]
pub fn photon_merge<'py>(py: Python<'py>, paths: Vec<PathBuf>, output: Option<PathBuf>, force: bool) -> PyResult<MergedHits<'py>> {
    let ctl = crate::run::control("cpu", None, false)?.0;
    let table = py
        .allow_threads(|| warpdrive_photon::engine::merge(&paths, output.as_deref(), force, &ctl))
        .map_err(|e| errors::engine(&e))?;
    let meta = table.metadata.clone();
    Ok((columns(py, table)?, meta))
}

#[pyfunction]
#[pyo3(signature = (args, env, stdin, stdin_path=None, threads=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn ppc_run(
    py: Python<'_>,
    args: Vec<String>,
    env: std::collections::HashMap<String, String>,
    stdin: Vec<u8>,
    stdin_path: Option<PathBuf>,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<(String, String)> {
    use warpdrive_photon::ppc::{run, PpcEnv, PpcError};
    let env = PpcEnv::from_env(|k| env.get(k).cloned()).map_err(|e| errors::input(&e))?;
    let (ctl, notes) = crate::run::control("auto", threads, false)?;
    let stdin = match stdin_path {
        Some(p) => py
            .allow_threads(|| warpdrive_core::input::read_text(&p))
            .map_err(|e| errors::input(&e))?
            .into_bytes(),
        None => stdin,
    };
    let (r, out, err) = crate::run::run(py, &ctl, &notes, progress, || {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let r = run(&args, &env, &mut stdin.as_slice(), &mut out, &mut err, &ctl);
        Ok((r, out, err))
    })?;
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    match r {
        Ok(()) => Ok((text(out), text(err))),
        Err(PpcError::Input(e)) => Err(errors::input(&e)),
        Err(PpcError::Engine(e)) => Err(errors::engine(&e)),
        Err(PpcError::Usage(m)) => Err(errors::value(m)),
        Err(PpcError::Io(e)) => Err(pyo3::exceptions::PyOSError::new_err(e.to_string())),
    }
}

/// The HIT lines of PPC's output as columns: `block` (ordinal of the `EM … EE` block, from 0;
/// -1 outside blocks, as for flashers), string, om, time [ns], wavelength [nm], the photon's
/// direction (θ, φ [rad]) and the impact point's (θ, φ) on the DOM, as PPC prints them.
#[pyfunction]
pub fn ppc_hits<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
    let mut block = -1i32;
    let mut blocks = 0i32;
    let (mut b, mut s, mut o) = (Vec::new(), Vec::new(), Vec::new());
    let mut f: [Vec<f64>; 6] = Default::default();
    for (n, line) in text.lines().enumerate() {
        let mut w = line.split_ascii_whitespace();
        match w.next() {
            Some("EM") => {
                block = blocks;
                blocks += 1;
            }
            Some("EE") => block = -1,
            Some("HIT") => {
                let v: Vec<&str> = w.collect();
                let bad = || errors::value(format!("line {}: not a HIT line of 8 numbers: {line}", n + 1));
                if v.len() != 8 {
                    return Err(bad());
                }
                b.push(block);
                s.push(v[0].parse::<i32>().map_err(|_| bad())?);
                o.push(v[1].parse::<i32>().map_err(|_| bad())?);
                for (k, c) in f.iter_mut().enumerate() {
                    c.push(v[2 + k].parse::<f64>().map_err(|_| bad())?);
                }
            }
            _ => {}
        }
    }
    let mut t = Table::default();
    t.push("block", Column::I32(b));
    t.push("string", Column::I32(s));
    t.push("om", Column::I32(o));
    let names = ["time", "wavelength", "photon_theta", "photon_phi", "impact_theta", "impact_phi"];
    for (name, c) in names.iter().zip(f) {
        t.push(name, Column::F64(c));
    }
    columns(py, t)
}

/// What `photon_tabulate` returns: `summary.json`'s text, photons propagated, tabulated,
/// absorbed, left the table, segments, seconds and threads.
type Tabulated = (String, u64, u64, u64, u64, u64, f64, usize);

/// `warpdrive photon tabulate` (issue #32): the same `warpdrive_photon::tabulate` request as the
/// CLI, the output directory staged before the work (refused when it exists without `force`,
/// or is an input), written whole. Edges are the CLI's text (`LO:HI:N` or a list); `delay_bins`
/// None: no time table.
#[pyfunction]
#[pyo3(signature = (output, ice, source, depth, zenith, azimuth, energy, length, photons, radial_bins, azimuth_bins, polar_bins, delay_bins, margin, seed, tilt, anisotropy, birefringence, estimator, sample_step, force, device, threads, progress, invocation))]
#[allow(clippy::too_many_arguments)]
pub fn photon_tabulate(
    py: Python<'_>,
    output: PathBuf,
    ice: Option<PathBuf>,
    source: &str,
    depth: Vec<f64>,
    zenith: Vec<f64>,
    azimuth: f64,
    energy: f64,
    length: f64,
    photons: Count,
    radial_bins: &str,
    azimuth_bins: &str,
    polar_bins: Option<&str>,
    delay_bins: Option<&str>,
    margin: f64,
    seed: Count,
    tilt: bool,
    anisotropy: bool,
    birefringence: bool,
    estimator: Option<&str>,
    sample_step: Option<&str>,
    force: bool,
    device: &str,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
    invocation: String,
) -> PyResult<Tabulated> {
    use warpdrive_photon::tabulate::{self, Edges, SourceKind, TabulateOptions};
    let eng = |e: warpdrive_core::engine::Error| errors::engine(&e);
    let o = TabulateOptions {
        ice,
        source: SourceKind::parse(source).map_err(eng)?,
        depth,
        zenith,
        azimuth,
        energy,
        length,
        photons: errors::count("photons", photons)?,
        radial: Edges::parse("radial_bins", radial_bins).map_err(eng)?,
        azimuth_bins: Edges::parse("azimuth_bins", azimuth_bins).map_err(eng)?,
        polar: polar_bins.map(|t| Edges::parse("polar_bins", t)).transpose().map_err(eng)?,
        delay: delay_bins.map(|t| Edges::parse("delay_bins", t)).transpose().map_err(eng)?,
        margin,
        seed: errors::count("seed", seed)?,
        tilt,
        anisotropy,
        birefringence,
        estimator: tabulate::Estimator::parse(estimator, sample_step).map_err(eng)?,
        command: invocation,
    };
    let (ctl, notes) = crate::run::control(device, threads, false)?;
    let inputs: Vec<PathBuf> = o.ice.iter().cloned().collect();
    let out = py
        .allow_threads(|| tabulate::prepare_output(&output, force, &inputs))
        .map_err(eng)?;
    let req = py.allow_threads(|| tabulate::Tabulate::new(&o)).map_err(eng)?;
    let t = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    py.allow_threads(|| t.save(out, &o.command)).map_err(eng)?;
    let h = &t.hist;
    Ok((
        t.summary_json(),
        t.photons * t.sources.len() as u64,
        h.tabulated,
        h.absorbed,
        h.escaped,
        h.segments,
        t.seconds,
        t.threads,
    ))
}
