//! The tracking driver: passes over the compiled line, runs of map elements, LSC kicks, charge
//! and watch points, on a back end that holds the particles (CPU here, GPU in [`crate::gpu`]).

use crate::beam::{Moments, Particles, Reference};
use crate::lsc::{Histogram, LscStats};
use crate::program::{run_cpu, Program, RunItem, Step};

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

/// Track `opts.passes` passes. `on_watch` gets every watch point record (WATCH INTERVAL
/// honoured); `on_pass` is called after each pass (progress). Returns the LSC statistics of the
/// last pass, per LSC element.
pub fn track(
    program: &Program,
    backend: &mut dyn Backend,
    opts: &TrackOptions,
    on_watch: &mut dyn FnMut(WatchEvent) -> Result<(), String>,
    on_pass: &mut dyn FnMut(u32),
) -> Result<Vec<LscStats>, String> {
    // A line of map elements only: every pass in one run (one launch on the GPU).
    if let [Step::Run(items)] = program.steps.as_slice() {
        backend.run(0, items, 0..opts.passes)?;
        on_pass(opts.passes);
        return Ok(Vec::new());
    }
    let mut charge = opts.charge;
    let mut last = Vec::new();
    for pass in 0..opts.passes {
        last.clear();
        for (k, step) in program.steps.iter().enumerate() {
            match step {
                Step::Run(items) => backend.run(k, items, pass..pass + 1)?,
                Step::Charge { total } => charge = *total,
                Step::Lsc { params, half_drift, .. } => last.push(backend.lsc(k, params, half_drift, charge, pass)?),
                Step::Watch {
                    element,
                    name,
                    filename,
                    interval,
                } => {
                    if pass % interval == 0 {
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
        on_pass(pass + 1);
    }
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
