//! Synthetic events from the forward model: for every DOM and source a Poisson number of
//! photo-electrons with mean E_j·(amplitude)·P(window), arrival delays drawn from the timing
//! table's CDF by inversion (bisection for the smallest delay with CDF ≥ u), plus Poisson dark
//! noise uniform in the window. Random numbers: Philox stream (seed, "MS"+1, event·2^20 + DOM),
//! so an event does not depend on thread count.

use super::event::{Event, Pulse};
use super::model::{table_coordinates, Model, Source};
use rayon::prelude::*;
use warpdrive_core::RandomStream;
use warpdrive_photon::geometry::Geometry;

const TAG_SYNTH: u32 = 0x4d53_0001;

/// Smallest delay in [lo, hi] with CDF(delay) ≥ u (CDF non-decreasing up to the table's
/// rounding).
fn invert(model: &Model, x: &[f64; 3], u: f64, lo: f64, hi: f64) -> f64 {
    let (mut a, mut b) = (lo, hi);
    for _ in 0..48 {
        let m = 0.5 * (a + b);
        if model.cdf(x, m) >= u {
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

/// Draw event number `event` (`energy[j]` GeV for `sources[j]`).
pub fn generate(model: &Model, geo: &Geometry, sources: &[Source], energy: &[f64], opts: &SynthOptions, event: u64) -> Event {
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
            for (s, &e) in sources.iter().zip(energy) {
                if e <= 0.0 {
                    continue;
                }
                let x = table_coordinates(dom.pos, s);
                let amp = model.amplitude(&x) * dom.rde;
                if amp == 0.0 {
                    continue;
                }
                let t0 = s.time + model.t_geo(x[0]);
                let (lo, hi) = (window[0] - t0, window[1] - t0);
                let (c_lo, c_hi) = (model.cdf(&x, lo), model.cdf(&x, hi));
                let n = rng.poisson(e * amp * (c_hi - c_lo).max(0.0));
                for _ in 0..n {
                    let u = c_lo + (c_hi - c_lo) * rng.uniform_f64();
                    let delay = if model.timing.is_some() {
                        invert(model, &x, u, lo, hi)
                    } else {
                        0.0
                    };
                    out.push(pulse((t0 + delay).clamp(window[0], window[1])));
                }
            }
            let n = rng.poisson(noise_rate_hz * 1e-9 * (window[1] - window[0]));
            for _ in 0..n {
                out.push(pulse(window[0] + (window[1] - window[0]) * rng.uniform_f64()));
            }
            out.into_iter()
        })
        .collect();
    Event { pulses, window }
}
