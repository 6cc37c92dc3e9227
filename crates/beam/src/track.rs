//! The tracking driver: passes over the compiled line, runs of map elements, LSC kicks, charge
//! and watch points, on a back end that holds the particles (CPU here, GPU in [`crate::gpu`]).

use crate::beam::{Moments, Particles, Reference};
use crate::lsc::{Histogram, LscStats};
use crate::program::{run_cpu, run_cpu_until, Program, RunItem, Step};
use warpdrive_core::progress::Progress;

/// How to track.
#[derive(Clone, Copy, Debug)]
pub struct TrackOptions {
    pub passes: u32,
    /// Half-width of the square aperture checked after every element [m] (∞: NaN/∞ only).
    pub aperture: f64,
    pub histogram: Histogram,
    /// Total bunch charge [C] until a CHARGE element sets it.
    pub charge: f64,
    pub reference: Reference,
}

/// Where particles live while they are tracked.
pub trait Backend {
    /// Apply a run of map elements for `passes` (first pass index `passes.start`).
    fn run(&mut self, step: usize, items: &[RunItem], passes: std::ops::Range<u32>) -> Result<(), String>;
    /// [`Backend::run`] that may stop early when `stop` says so (`Ok(false)`: the particles are
    /// part-way through the run). By default the whole run is one uninterruptible call.
    fn run_until(
        &mut self,
        step: usize,
        items: &[RunItem],
        passes: std::ops::Range<u32>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<bool, String> {
        let _ = stop;
        self.run(step, items, passes).map(|()| true)
    }
    /// One LSCDRIFT: half drift, kick, half drift.
    fn lsc(
        &mut self,
        step: usize,
        params: &crate::lattice::LscParams,
        half_drift: &[RunItem],
        charge: f64,
        pass: u32,
    ) -> Result<LscStats, String>;
    /// The particles as they are now (copied back from a device).
    fn particles(&mut self) -> Result<Particles, String>;
}

/// A watch point's record for one pass.
pub struct WatchEvent<'a> {
    pub element: usize,
    pub name: &'a str,
    pub filename: &'a str,
    pub pass: u32,
    pub position: f64,
    pub particles: &'a Particles,
    pub moments: Moments,
}

/// Why tracking stopped early.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TrackError {
    /// The progress counter's stop flag was raised (Ctrl-C, a signal, a callback).
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Failed(String),
}

impl From<String> for TrackError {
    fn from(m: String) -> Self {
        TrackError::Failed(m)
    }
}

/// Track `opts.passes` passes. `on_watch` gets every watch point record (WATCH INTERVAL
/// honoured); `on_pass` is called after each pass (progress). Returns the LSC statistics of the
/// last pass, per LSC element. A line of map elements only runs all its passes in one call of
/// the back end (one launch on the GPU). Nothing stops it: runs that can be cancelled use
/// [`track_controlled`].
pub fn track(
    program: &Program,
    backend: &mut dyn Backend,
    opts: &TrackOptions,
    on_watch: &mut dyn FnMut(WatchEvent) -> Result<(), String>,
    on_pass: &mut dyn FnMut(u32),
) -> Result<Vec<LscStats>, String> {
    let progress = Progress::hidden();
    let control = Control {
        progress: &progress,
        watch_at: &|_| true,
        first_batch: opts.passes.max(1),
    };
    track_controlled(program, backend, opts, &control, on_watch, on_pass).map_err(|e| e.to_string())
}

/// How a run is watched and stopped, for [`track_controlled`].
pub struct Control<'a> {
    /// Counts passes; its stop flag is polled before every step, before every chunk of
    /// particles and every few thousand elements within one (CPU).
    pub progress: &'a Progress,
    /// Whether watch points act at a pass (on top of each WATCH's INTERVAL).
    pub watch_at: &'a dyn Fn(u32) -> bool,
    /// Passes in the first call of a line of map elements only; later calls are sized to take
    /// about [`BATCH_SECONDS`] each, so progress moves and a stop is seen between them (a GPU
    /// launch cannot be interrupted). Batching does not change any result: each pass is applied
    /// with its own index, in order.
    pub first_batch: u32,
}

/// Target duration of one batch of passes of a map-only line [s].
pub const BATCH_SECONDS: f64 = 0.2;

/// The next batch size after `passes` passes took `seconds`: about [`BATCH_SECONDS`] worth,
/// at most twice the last one, at least one pass.
fn next_batch(passes: u32, seconds: f64) -> u32 {
    let target = if seconds > 0.0 {
        (f64::from(passes) * BATCH_SECONDS / seconds).floor()
    } else {
        f64::INFINITY
    };
    target.clamp(1.0, 2.0 * f64::from(passes)).min(f64::from(u32::MAX)) as u32
}

/// [`track`] under a [`Control`]: progress counted in passes, watch points limited to chosen
/// passes, and [`TrackError::Cancelled`] soon after the progress counter's stop flag is raised
/// (the particles are then part-way through a pass and must be discarded).
pub fn track_controlled(
    program: &Program,
    backend: &mut dyn Backend,
    opts: &TrackOptions,
    control: &Control,
    on_watch: &mut dyn FnMut(WatchEvent) -> Result<(), String>,
    on_pass: &mut dyn FnMut(u32),
) -> Result<Vec<LscStats>, TrackError> {
    let progress = control.progress;
    let stop = || progress.should_stop();
    let check = || if stop() { Err(TrackError::Cancelled) } else { Ok(()) };
    // A line of map elements only: passes in batches (one launch each on the GPU).
    if let [Step::Run(items)] = program.steps.as_slice() {
        let mut pass = 0;
        let mut batch = control.first_batch.max(1);
        while pass < opts.passes {
            check()?;
            let n = batch.min(opts.passes - pass);
            let t0 = std::time::Instant::now();
            if !backend.run_until(0, items, pass..pass + n, &stop)? {
                return Err(TrackError::Cancelled);
            }
            pass += n;
            progress.add(u64::from(n));
            on_pass(pass);
            batch = next_batch(n, t0.elapsed().as_secs_f64());
        }
        check()?;
        return Ok(Vec::new());
    }
    let mut charge = opts.charge;
    let mut last = Vec::new();
    for pass in 0..opts.passes {
        last.clear();
        for (k, step) in program.steps.iter().enumerate() {
            check()?;
            match step {
                Step::Run(items) => {
                    if !backend.run_until(k, items, pass..pass + 1, &stop)? {
                        return Err(TrackError::Cancelled);
                    }
                }
                Step::Charge { total } => charge = *total,
                Step::Lsc { params, half_drift, .. } => last.push(backend.lsc(k, params, half_drift, charge, pass)?),
                Step::Watch {
                    element,
                    name,
                    filename,
                    interval,
                } => {
                    if pass % interval == 0 && (control.watch_at)(pass) {
                        let p = backend.particles()?;
                        let moments = Moments::of(&p);
                        on_watch(WatchEvent {
                            element: *element,
                            name,
                            filename,
                            pass,
                            position: program.positions[*element],
                            particles: &p,
                            moments,
                        })?;
                    }
                }
            }
        }
        progress.add(1);
        on_pass(pass + 1);
    }
    check()?;
    Ok(last)
}

/// Particles in host memory, tracked with rayon.
pub struct CpuBackend {
    pub particles: Particles,
    pub reference: Reference,
    pub aperture: f64,
    pub histogram: Histogram,
}

impl Backend for CpuBackend {
    fn run(&mut self, _step: usize, items: &[RunItem], passes: std::ops::Range<u32>) -> Result<(), String> {
        run_cpu(items, &mut self.particles, passes, self.aperture);
        Ok(())
    }

    fn run_until(
        &mut self,
        _step: usize,
        items: &[RunItem],
        passes: std::ops::Range<u32>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<bool, String> {
        Ok(run_cpu_until(items, &mut self.particles, passes, self.aperture, stop))
    }

    fn lsc(
        &mut self,
        _step: usize,
        params: &crate::lattice::LscParams,
        half: &[RunItem],
        charge: f64,
        pass: u32,
    ) -> Result<LscStats, String> {
        run_cpu(half, &mut self.particles, pass..pass + 1, self.aperture);
        let stats = crate::lsc::apply(&mut self.particles, params, &self.reference, charge, self.histogram);
        run_cpu(half, &mut self.particles, pass..pass + 1, self.aperture);
        Ok(stats)
    }

    fn particles(&mut self) -> Result<Particles, String> {
        Ok(self.particles.clone())
    }
}
