//! Synthetic events from the forward model: for every DOM and source a Poisson number of
//! photo-electrons with mean E_j·(amplitude)·P(window), arrival delays drawn from the timing
//! table's CDF by inversion (bisection for the smallest delay with CDF ≥ u), plus Poisson dark
//! noise uniform in the window. Random numbers: Philox stream (seed, "MS"+1, event·2^20 + DOM),
//! so an event does not depend on thread count.

use super::event::{Event, Pulse};
use super::model::{table_coordinates, Model, Source, SourcePoint};
use rayon::prelude::*;
use warpdrive_core::progress::Progress;
use warpdrive_core::RandomStream;
use warpdrive_photon::geometry::Geometry;

const TAG_SYNTH: u32 = 0x4d53_0001;

/// Smallest delay in [lo, hi] with CDF(delay) ≥ u (CDF non-decreasing up to the table's
/// rounding).
fn invert(model: &Model, x: &[f64; 3], at: &SourcePoint, u: f64, lo: f64, hi: f64) -> f64 {
    let (mut a, mut b) = (lo, hi);
    for _ in 0..48 {
        let m = 0.5 * (a + b);
        if model.cdf(x, at, m) >= u {
            b = m;
        } else {
            a = m;
        }
    }
    b
}

/// Readout window, dark rate and random seed of synthetic events.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SynthOptions {
    pub window: [f64; 2],
    pub noise_rate_hz: f64,
    pub seed: u64,
}

impl Default for SynthOptions {
    fn default() -> Self {
        Self {
            window: [-1000.0, 9000.0],
            noise_rate_hz: 500.0,
            seed: 1,
        }
    }
}

/// What one DOM sees of one source: its table coordinates, the direct-light arrival time, the
/// readout window as delays after it with the CDF there, and the mean photo-electrons.
struct Seen {
    x: [f64; 3],
    at: SourcePoint,
    t0: f64,
    delays: [f64; 2],
    cdf: [f64; 2],
    mean: f64,
}

fn seen(model: &Model, pos: [f64; 3], rde: f64, s: &Source, energy: f64, window: [f64; 2]) -> Option<Seen> {
    if energy <= 0.0 {
        return None;
    }
    let x = table_coordinates(pos, s);
    let at = model.locate(s);
    let amp = model.amplitude(&x, &at) * rde;
    if amp == 0.0 {
        return None;
    }
    let t0 = s.time + model.t_geo(x[0]);
    let delays = [window[0] - t0, window[1] - t0];
    let cdf = [model.cdf(&x, &at, delays[0]), model.cdf(&x, &at, delays[1])];
    Some(Seen {
        x,
        at,
        t0,
        delays,
        cdf,
        mean: energy * amp * (cdf[1] - cdf[0]).max(0.0),
    })
}

/// The mean number of pulses of an event (photo-electrons of every source at every DOM inside
/// the window, plus dark noise): what the draw will allocate, known before drawing. Counts DOMs
/// on `progress` and returns early (a partial sum) once it says stop.
pub fn expected_pulses(model: &Model, geo: &Geometry, sources: &[Source], energy: &[f64], opts: &SynthOptions, progress: &Progress) -> f64 {
    let w = opts.window;
    let noise = opts.noise_rate_hz * 1e-9 * (w[1] - w[0]);
    geo.doms
        .par_iter()
        .map(|dom| {
            if progress.should_stop() {
                return 0.0;
            }
            let light: f64 = sources
                .iter()
                .zip(energy)
                .filter_map(|(s, &e)| seen(model, dom.pos, dom.rde, s, e, w))
                .map(|v| v.mean)
                .sum();
            progress.add(1);
            light + noise
        })
        .sum()
}

/// Draw event number `event` (`energy[j]` GeV for `sources[j]`).
pub fn generate(model: &Model, geo: &Geometry, sources: &[Source], energy: &[f64], opts: &SynthOptions, event: u64) -> Event {
    generate_with(model, geo, sources, energy, opts, event, &Progress::hidden())
}

/// [`generate`] counting DOMs done on `progress`; once it says stop, the remaining draws are
/// skipped (the event is then incomplete: the caller's run is cancelled).
pub fn generate_with(
    model: &Model,
    geo: &Geometry,
    sources: &[Source],
    energy: &[f64],
    opts: &SynthOptions,
    event: u64,
    progress: &Progress,
) -> Event {
    let SynthOptions {
        window,
        noise_rate_hz,
        seed,
    } = *opts;
    let pulses: Vec<Pulse> = geo
        .doms
        .par_iter()
        .enumerate()
        .flat_map_iter(|(i, dom)| {
            let mut rng = RandomStream::new(seed, TAG_SYNTH, (event << 20) | i as u64);
            let mut out = Vec::new();
            let pulse = |t: f64| Pulse {
                string: dom.string,
                om: dom.om,
                time: t,
                charge: 1.0,
            };
            if progress.should_stop() {
                return out.into_iter();
            }
            for (s, &e) in sources.iter().zip(energy) {
                let Some(v) = seen(model, dom.pos, dom.rde, s, e, window) else {
                    continue;
                };
                let n = rng.poisson(v.mean);
                for k in 0..n {
                    // A DOM next to a PeV cascade draws millions: poll the stop request here too.
                    if k % 4096 == 4095 && progress.should_stop() {
                        return out.into_iter();
                    }
                    let u = v.cdf[0] + (v.cdf[1] - v.cdf[0]) * rng.uniform_f64();
                    let delay = if model.timing.is_some() {
                        invert(model, &v.x, &v.at, u, v.delays[0], v.delays[1])
                    } else {
                        0.0
                    };
                    out.push(pulse((v.t0 + delay).clamp(window[0], window[1])));
                }
            }
            let n = rng.poisson(noise_rate_hz * 1e-9 * (window[1] - window[0]));
            for _ in 0..n {
                out.push(pulse(window[0] + (window[1] - window[0]) * rng.uniform_f64()));
            }
            progress.add(1);
            out.into_iter()
        })
        .collect();
    Event { pulses, window }
}
