//! `warpdrive-photon`: IceCube-style optical photon propagation through layered, tilted,
//! anisotropic ice to optical modules, with PPC-equivalent physics (shared/specs/photon.md).
//!
//! Data flow: [`detector::Detector`] (ice + geometry params) and [`source::SourceSpec`]s (from
//! f2k, steps, typed sources or flashers) → [`source::realise`] (photon counts) →
//! [`propagate::run`] (raw hits, rayon over photons) or [`gpu::run`] → [`hits::accept`] (CPU-side
//! acceptance) → Parquet or `HIT` lines. Front ends use [`engine`]: a validated request run under
//! a `Control` (device, threads, progress, cancellation).

pub mod anchor;
pub mod bench;
pub mod birefringence;
pub mod collision;
pub mod config;
pub mod detector;
pub mod engine;
pub mod envelope;
pub mod f2k;
pub mod fast;
pub mod geometry;
pub mod gpu;
pub mod gpu_check;
pub mod hits;
pub mod hole;
pub mod ice;
pub mod medium;
pub mod optics;
pub mod ppc;
pub mod propagate;
pub mod reach;
pub mod scatter;
pub mod sensors;
pub mod source;
pub mod spectrum;
pub mod tabulate;
mod test_data;
pub mod tilt;
pub mod validate;

use warpdrive_core::progress::Progress;

/// Result of propagating a set of sources.
#[derive(Clone, Debug)]
pub struct Simulation {
    pub sources: Vec<source::Source>,
    /// Photons propagated (counted as PPC counts them: after the 1/xR² down-sampling).
    pub photons: u64,
    /// Hits before and after the acceptance.
    pub raw_hits: usize,
    pub hits: Vec<hits::Hit>,
}

/// Where the propagation runs.
#[derive(Clone, Debug)]
pub enum Backend {
    /// rayon on the current thread pool: the fast mode (`fast::run`), or with `precise` the
    /// precise path (`propagate::run`) the GPU's precise mode follows photon by photon.
    Cpu { precise: bool },
    /// The CUDA kernel on the given GPUs.
    Cuda(gpu::GpuOptions),
}

/// Draw photon counts, propagate on the CPU in the precise arithmetic, apply the acceptance. Deterministic in `seed` for any
/// number of rayon threads. (Tests and benchmarks; runs for users go through [`engine`], which
/// also runs on GPUs and can be stopped.)
pub fn simulate(det: &detector::Detector, specs: &[source::SourceSpec], seed: u64, progress: &Progress) -> Simulation {
    simulate_cpu(det, specs, seed, progress, true)
}

/// [`simulate`] in the CPU fast mode ([`fast`]; the default of runs on the CPU).
pub fn simulate_fast(det: &detector::Detector, specs: &[source::SourceSpec], seed: u64, progress: &Progress) -> Simulation {
    simulate_cpu(det, specs, seed, progress, false)
}

fn simulate_cpu(det: &detector::Detector, specs: &[source::SourceSpec], seed: u64, progress: &Progress, precise: bool) -> Simulation {
    let sources = source::realise(specs, seed);
    let photons = sources.iter().fold(0u64, |t, s| t.saturating_add(s.photons));
    let raw = if precise {
        propagate::run(&det.medium, &det.index, &sources, seed, progress)
    } else {
        fast::run(&det.medium, &det.index, &sources, seed, progress)
    };
    let hits = hits::accept(det, &raw, &sources, seed);
    Simulation {
        sources,
        photons,
        raw_hits: raw.len(),
        hits,
    }
}
