//! One Millipede unfolding end to end — the hypothesis from the user's numbers, the event binned,
//! Λ built on the CPU or a GPU, the energies solved — shared by `warpdrive spline unfold` and
//! `warpdrive.spline.unfold` so that both run the same code on the same checks (spec §2).

use super::event::{Binning, Event};
use super::model::{direction, response, Hypothesis, Model, Source};
use super::solve::{unfold as solve, Solution, SolveOptions};
use crate::SplineTable;
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpdrive_core::cuda::GpuError;
use warpdrive_core::table::{Column, Table};
use warpdrive_core::InputError;
use warpdrive_photon::geometry::Geometry;

/// The most track segments of a hypothesis (IceCube unfoldings use hundreds; Λ holds
/// DOMs × segments).
pub const MAX_SEGMENTS: u64 = 100_000;

/// Why an unfolding did not run.
#[derive(Debug, thiserror::Error)]
pub enum UnfoldError {
    /// A number or option the user gave (the message names it as the CLI flag).
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    File(#[from] InputError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// The default tables and geometry, relative to the data directory (`WARPDRIVE_DATA`): the
/// public EM cascade tables of icetray's photospline examples and IceCube's geo-f2k.
pub const DEFAULT_AMPLITUDE: &str = "splines/icetray_photospline_ems/ems_z0_a0.pt.abs.fits";
pub const DEFAULT_TIMING: &str = "splines/icetray_photospline_ems/ems_z0_a0.pt.prob.fits";
pub const DEFAULT_GEOMETRY: &str = "geometry/icecube_geo-f2k";

/// The model's tables and the geometry: the given files, or the defaults in the data directory
/// (`note` hears about a default that is missing); `amplitude_only` reads no timing table.
pub fn model_and_geometry(
    amplitude: Option<&Path>,
    timing: Option<&Path>,
    amplitude_only: bool,
    geometry: Option<&Path>,
    note: impl Fn(String),
) -> Result<(Model, Geometry), UnfoldError> {
    let file = |given: Option<&Path>, rel: &str| -> PathBuf {
        given.map(Path::to_path_buf).unwrap_or_else(|| {
            let p = warpdrive_core::data::data_dir().join(rel);
            if !p.exists() {
                note(format!(
                    "default table {} not found; {}",
                    p.display(),
                    warpdrive_core::data::missing_hint()
                ));
            }
            p
        })
    };
    let amp = SplineTable::read(&file(amplitude, DEFAULT_AMPLITUDE))?;
    let tim = if amplitude_only {
        None
    } else {
        Some(SplineTable::read(&file(timing, DEFAULT_TIMING))?)
    };
    let model = Model::new(amp, tim).map_err(UnfoldError::Input)?;
    let geo = Geometry::read(&file(geometry, DEFAULT_GEOMETRY))?;
    Ok((model, geo))
}

impl Hypothesis {
    /// The hypothesis of `--cascade x,y,z,zenith,azimuth,t` or `--track x,y,z,zenith,azimuth,t,length`
    /// with `--spacing` (positions in m, angles in degrees, times in ns); exactly one of the two
    /// is non-empty.
    pub fn from_numbers(cascade: &[f64], track: &[f64], spacing: f64) -> Result<Self, UnfoldError> {
        let bad = |v: &[f64]| v.iter().any(|x| !x.is_finite());
        let err = |m: String| Err(UnfoldError::Input(m));
        match (cascade.len(), track.len()) {
            (6, 0) if !bad(cascade) => {
                let c = cascade;
                Ok(Hypothesis::Cascade(Source {
                    pos: [c[0], c[1], c[2]],
                    dir: direction(c[3].to_radians(), c[4].to_radians()),
                    time: c[5],
                }))
            }
            (0, 7) if !bad(track) => {
                let t = track;
                if !(t[6] > 0.0 && spacing > 0.0) {
                    return err("--track length and --spacing must be positive".into());
                }
                let segments = (t[6] / spacing).round();
                if segments > MAX_SEGMENTS as f64 {
                    return err(format!(
                        "--track length {} m / --spacing {spacing} m = {segments:e} segments, more than the limit of {MAX_SEGMENTS} (the response matrix holds DOMs × segments); use a larger --spacing",
                        t[6]
                    ));
                }
                Ok(Hypothesis::Track {
                    vertex: [t[0], t[1], t[2]],
                    dir: direction(t[3].to_radians(), t[4].to_radians()),
                    time: t[5],
                    length: t[6],
                    spacing,
                })
            }
            (0, 0) => err("give the hypothesis: --cascade x,y,z,zenith,azimuth,t or --track x,y,z,zenith,azimuth,t,length".into()),
            (n, 0) => err(format!("--cascade takes 6 finite numbers (x,y,z,zenith,azimuth,t), got {n}")),
            (_, n) => err(format!("--track takes 7 finite numbers (x,y,z,zenith,azimuth,t,length), got {n}")),
        }
    }
}

/// Everything an unfolding needs besides the model, geometry, hypothesis and event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnfoldOptions {
    pub solve: SolveOptions,
    /// Binning of the pulses (`photons_per_bin` is ignored, one bin per DOM, for an
    /// amplitude-only model).
    pub binning: Binning,
    /// Build Λ on this GPU (None: on the CPU threads of the current rayon pool).
    pub device: Option<usize>,
    /// GPU precise mode (no fast intrinsics).
    pub precise: bool,
}

impl UnfoldOptions {
    /// The CLI's checks of `--regularization`, `--tolerance` and `--max-iterations`.
    pub fn check(&self) -> Result<(), UnfoldError> {
        let s = &self.solve;
        if !(s.regularization >= 0.0 && s.regularization.is_finite()) {
            return Err(UnfoldError::Input("--regularization must be finite and ≥ 0".into()));
        }
        if !(s.tolerance > 0.0 && s.tolerance.is_finite()) || s.max_iterations == 0 {
            return Err(UnfoldError::Input(
                "--tolerance must be finite and > 0, --max-iterations ≥ 1".into(),
            ));
        }
        Ok(())
    }
}

/// An unfolded event: the sources, their energies and how the fit went.
#[derive(Clone, Debug)]
pub struct Unfolding {
    pub sources: Vec<Source>,
    /// Distance of each source from the vertex along the track [m].
    pub distances: Vec<f64>,
    pub solution: Solution,
    /// Rows (DOM time bins) and columns (sources) of Λ.
    pub rows: usize,
    pub cols: usize,
    /// Where Λ was built (`cpu` or the GPU's name).
    pub device: String,
    pub response_seconds: f64,
    pub solve_seconds: f64,
    pub hit_doms: usize,
    pub charge_pe: f64,
}

/// Bin `event`, build Λ for `hypothesis` and solve for the energies (spec §2.1–2.3).
pub fn unfold_event(
    model: &Model,
    geo: &Geometry,
    hypothesis: &Hypothesis,
    event: &Event,
    opts: &UnfoldOptions,
) -> Result<Unfolding, UnfoldError> {
    opts.check()?;
    let sources = hypothesis.sources();
    let binning = Binning {
        photons_per_bin: if model.timing.is_none() {
            0.0
        } else {
            opts.binning.photons_per_bin
        },
        ..opts.binning
    };
    let bins = event.bin(geo, &binning).map_err(UnfoldError::Input)?;
    let t_build = Instant::now();
    let (l, device) = match opts.device {
        Some(ordinal) => {
            let (l, st) = crate::gpu::response(
                model,
                &bins,
                &sources,
                ordinal,
                &crate::gpu::EvalOptions {
                    window: true,
                    repeats: 1,
                    precise: opts.precise,
                    ..Default::default()
                },
            )?;
            (l, st.device)
        }
        None => (response(model, &bins, &sources), "cpu".to_string()),
    };
    let response_seconds = t_build.elapsed().as_secs_f64();
    let t_solve = Instant::now();
    let solution = solve(&l, &bins.charge, &bins.noise, &opts.solve);
    Ok(Unfolding {
        distances: hypothesis.distances(),
        sources,
        solution,
        rows: l.rows,
        cols: l.cols,
        device,
        response_seconds,
        solve_seconds: t_solve.elapsed().as_secs_f64(),
        hit_doms: event.hit_doms(),
        charge_pe: event.total_charge(),
    })
}

impl Unfolding {
    /// Sources the detector barely sees (< 1 PE expected per PeV): unconstrained by the data.
    pub fn blind(&self) -> Vec<usize> {
        (0..self.sources.len()).filter(|&j| self.solution.pe_per_gev[j] < 1e-6).collect()
    }

    /// Σ E and its 1σ from the covariance [GeV].
    pub fn total(&self) -> (f64, f64) {
        let s = &self.solution;
        (s.energy.iter().sum(), s.covariance.iter().sum::<f64>().max(0.0).sqrt())
    }

    /// `energies.parquet`'s columns: source, distance, x, y, z, time, energy, sigma.
    pub fn energies_table(&self) -> Table {
        let mut t = Table::default();
        t.push("source", Column::I32((0..self.sources.len() as i32).collect()));
        t.push("distance", Column::F64(self.distances.clone()));
        for (k, name) in ["x", "y", "z"].iter().enumerate() {
            t.push(name, Column::F64(self.sources.iter().map(|s| s.pos[k]).collect()));
        }
        t.push("time", Column::F64(self.sources.iter().map(|s| s.time).collect()));
        t.push("energy", Column::F64(self.solution.energy.clone()));
        t.push("sigma", Column::F64(self.solution.sigma.clone()));
        t
    }
}
