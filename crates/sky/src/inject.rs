//! Signal injection (issue #35): scrambled trials in which N·K background events are replaced by
//! K events from each of N point sources, for the test-statistic distributions with signal.
//!
//! Trial k of an injection is built from background trial k and the injection stream of k:
//!
//! 1. **Background.** Every selected event gets its scrambled right ascension of trial k exactly
//!    as in a background run ([`crate::trials::trial_turn`], rounded to the RA grid), so with no
//!    signal (N·K = 0) the trial *is* background trial k, count for count.
//! 2. **Sources.** N positions isotropic in the declination band [δ_lo, δ_hi]: sin δ uniform in
//!    [sin δ_lo, sin δ_hi] (equal solid angle per sin δ), α uniform in [0°, 360°).
//! 3. **Replaced events** (drawn after the signal events, below). Each signal event replaces a
//!    selected event of its own energy level (the data's cuts: level = number of cut thresholds
//!    an energy reaches) and of nearly its declination: the free event of that level nearest to
//!    a rank drawn uniformly within ±[`REPLACE_WINDOW`] of the signal event's declination rank
//!    in the level (`replaced_events`). So every cut holds exactly the data's number of events,
//!    and the declination distribution of every cut — signal included — is the data's up to the
//!    window's spread: signal takes the place of background where it appears, as it would in the
//!    detector's fixed acceptance. (Drawn from all events alike, the replaced events would be
//!    mostly low-energy ones near the horizon while sources are isotropic in sin δ: on the
//!    up-going sample 100 × 15 events then *removed* 15 000 pairs from N(≤5°), and a hard
//!    spectrum enlarged the top cuts — excesses and deficits without any clustering.) A level
//!    with no event left passes to the nearest lower, then higher, level.
//! 4. **Signal events**, K per source, in source order. Each takes the energy proxy and the
//!    angular error σ of a data event of the *tail* (the selected events with proxy ≥ the
//!    injection threshold): a value x is drawn from the power law dN/dE ∝ E^γ of E = 10^x on
//!    [x_thr, x_max] (the tail's proxy range; [`power_law_log10`]) and the tail event whose proxy
//!    is nearest to x is taken (uniformly among equal proxies). So the signal's proxy follows
//!    the requested spectrum within the data's range, on the data's own proxy values, and its
//!    point-spread function is the angular error the data give events of that proxy. (The
//!    public releases give no detector response, so the proxy stands in for the energy: an
//!    assumption, stated here and in docs/sky.md.)
//! 5. **Point-spread function.** The event is displaced from its source by an angle θ drawn from
//!    the von Mises–Fisher distribution on the sphere with κ = 1/σ² (σ in radians) — the
//!    spherical form of a circular 2-D Gaussian of standard deviation σ per axis, the model
//!    behind IceCube's `ang_err` — and a position angle φ uniform in [0, 2π) ([`vmf_angle`],
//!    [`displace`]).
//! 6. **Grids.** The signal's right ascension is rounded to the RA grid of the scrambled events
//!    and its declination to the declination grid of the data (both 0.1° in IceCube's public
//!    releases; none for continuous data), so signal events sit on the same lattice as the
//!    background (docs/sky.md, "RA grid").
//!
//! Signal events keep their displaced positions even where the PSF takes them outside the
//! analysed region (the sample size stays n). All draws of trial k come from the Philox stream
//! (seed, [`TAG_INJECT`], k) in the order sources (2 each), signal events (4 each: spectrum,
//! tie, θ, φ), replaced events (1 each, in signal order): the result of a trial depends only on the seed, the
//! trial number, N and K — not on threads, jobs or the other strengths of a scan.

use crate::count;
use crate::cuts::ResolvedCuts;
use crate::events::Event;
use crate::sample::Sample;
use crate::sphere::unit_vector_turn;
use crate::trials::{quantize_turn, trial_turn, Background};
use rayon::prelude::*;
use std::ops::Range;
use warpdrive_core::progress::Progress;
use warpdrive_core::rng::{Philox4x32, RandomStream};

/// Stream tag of signal injection ("SK" + 2).
pub const TAG_INJECT: u32 = 0x534b_0002;

/// A declination band [deg], δ_lo ≤ δ ≤ δ_hi.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecBand {
    pub lo: f64,
    pub hi: f64,
}

/// The data events signal energies and angular errors are taken from: the selected events with
/// proxy ≥ the injection threshold, sorted by proxy.
#[derive(Clone, Debug, PartialEq)]
pub struct Tail {
    /// Energy proxy (log10 E), ascending.
    pub energy: Vec<f64>,
    /// Angular error [deg] of the same events.
    pub sigma_deg: Vec<f64>,
}

impl Tail {
    /// The events of `events` with proxy ≥ `threshold`; `None` when there are none.
    #[must_use]
    pub fn new(events: &[Event], threshold: f64) -> Option<Tail> {
        let mut t: Vec<(f64, f64)> = events
            .iter()
            .filter(|e| e.energy >= threshold)
            .map(|e| (e.energy, e.ang_err.unwrap_or(f64::NAN)))
            .collect();
        if t.is_empty() {
            return None;
        }
        t.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        Some(Tail {
            energy: t.iter().map(|p| p.0).collect(),
            sigma_deg: t.iter().map(|p| p.1).collect(),
        })
    }

    /// Index of a tail event whose proxy is nearest to `x` (ties in distance go to the lower
    /// value); `u` ∈ (0, 1] picks uniformly among the events with that proxy.
    #[must_use]
    pub fn nearest(&self, x: f64, u: f64) -> usize {
        let e = &self.energy;
        let p = e.partition_point(|&v| v < x);
        let v = if p == e.len() || (p > 0 && x - e[p - 1] <= e[p] - x) {
            e[p - 1]
        } else {
            e[p]
        };
        let lo = e.partition_point(|&w| w < v);
        let hi = e.partition_point(|&w| w <= v);
        lo + (((1.0 - u) * (hi - lo) as f64) as usize).min(hi - lo - 1)
    }
}

/// What is injected into every trial (besides N, the strength, which a scan varies).
#[derive(Clone, Debug)]
pub struct Injection {
    /// Events per source, K.
    pub per_source: u64,
    /// Declination band of the sources.
    pub band: DecBand,
    /// Spectral index γ of dN/dE ∝ E^γ (e.g. −2).
    pub gamma: f64,
    pub tail: Tail,
    /// Declination grid [deg] of the data (None: continuous).
    pub dec_grid: Option<f64>,
}

/// Draw x = log10 E for dN/dE ∝ E^γ on [10^lo, 10^hi] by inverting the CDF:
/// F(E) = (E^a − E_lo^a)/(E_hi^a − E_lo^a), a = γ + 1 ≠ 0, so
/// x = lo + log10(1 + u·(10^{a(hi−lo)} − 1))/a; for a = 0 (γ = −1) E is log-uniform,
/// x = lo + u·(hi − lo). `u` ∈ [0, 1].
#[must_use]
pub fn power_law_log10(u: f64, gamma: f64, lo: f64, hi: f64) -> f64 {
    let a = gamma + 1.0;
    let span = hi - lo;
    if a.abs() < 1e-12 || span <= 0.0 {
        return lo + u * span;
    }
    let x = lo + (u * (10f64.powf(a * span) - 1.0)).ln_1p() / (a * std::f64::consts::LN_10);
    x.clamp(lo, hi)
}

/// The angle θ [rad] between a von Mises–Fisher draw on the sphere S² and its mean direction,
/// concentration κ = 1/σ² (σ [rad]); `u` ∈ (0, 1]. Wood (1994), "Simulation of the von
/// Mises Fisher distribution", Commun. Statist. Simul. 23, 157, exact for S²:
/// W = cos θ = 1 + ln(u + (1 − u)·e^{−2κ})/κ. Written as 1 − cos θ = t = −ln(…)/κ and
/// θ = 2·asin(√(t/2)), which keeps θ accurate for small σ. For σ → 0 this is the Rayleigh
/// radius of a circular 2-D Gaussian: P(Θ ≤ θ) = (1 − e^{−κ(1 − cos θ)})/(1 − e^{−2κ})
/// ≈ 1 − e^{−θ²/2σ²} ([`vmf_cdf`]).
#[must_use]
pub fn vmf_angle(u: f64, sigma_rad: f64) -> f64 {
    if sigma_rad <= 0.0 {
        return 0.0;
    }
    let kappa = 1.0 / (sigma_rad * sigma_rad);
    let t = (-(u + (1.0 - u) * (-2.0 * kappa).exp()).ln() / kappa).clamp(0.0, 2.0);
    2.0 * (0.5 * t).sqrt().asin()
}

/// P(Θ ≤ θ) of [`vmf_angle`]: (1 − e^{−κ(1 − cos θ)})/(1 − e^{−2κ}), κ = 1/σ², with
/// 1 − cos θ = 2 sin²(θ/2).
#[must_use]
pub fn vmf_cdf(theta_rad: f64, sigma_rad: f64) -> f64 {
    if sigma_rad <= 0.0 {
        return 1.0;
    }
    let kappa = 1.0 / (sigma_rad * sigma_rad);
    let s = (0.5 * theta_rad).sin();
    (-kappa * 2.0 * s * s).exp_m1() / (-2.0 * kappa).exp_m1()
}

/// The point at angular distance θ [rad] from (α, δ) [rad] in position angle φ [rad] (from
/// north towards east), by the spherical law of cosines for the side and the sine/cosine rules
/// for the angle at the pole (e.g. Smart, Textbook on Spherical Astronomy, §§ 10–11):
/// sin δ' = sin δ cos θ + cos δ sin θ cos φ,
/// Δα = atan2(sin φ sin θ cos δ, cos θ − sin δ sin δ'). Returns (α' ∈ [0, 2π), δ').
#[must_use]
pub fn displace(alpha: f64, delta: f64, theta: f64, phi: f64) -> (f64, f64) {
    let (sd, cd) = delta.sin_cos();
    let (st, ct) = theta.sin_cos();
    let sd2 = (sd * ct + cd * st * phi.cos()).clamp(-1.0, 1.0);
    let dalpha = (phi.sin() * st * cd).atan2(ct - sd * sd2);
    ((alpha + dalpha).rem_euclid(std::f64::consts::TAU), sd2.asin())
}

/// Round `x` to the nearest multiple of `step` (None: unchanged).
fn on_grid(x: f64, step: Option<f64>) -> f64 {
    step.map_or(x, |q| (x / q).round() * q)
}

/// One signal event as drawn, before the grids round its position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SignalEvent {
    /// The source it came from (0..N).
    pub source: u32,
    /// Position [deg].
    pub ra: f64,
    pub dec: f64,
    /// Energy proxy and angular error [deg] (of the tail event it took them from).
    pub energy: f64,
    pub sigma_deg: f64,
    /// Angle from its source [deg].
    pub theta_deg: f64,
}

/// The injection of one trial.
#[derive(Clone, Debug, PartialEq)]
pub struct TrialSignal {
    /// Source positions (α, δ) [deg].
    pub sources: Vec<(f64, f64)>,
    /// Replaced events: indices into the selection (input order), ascending.
    pub replaced: Vec<u32>,
    pub events: Vec<SignalEvent>,
}

impl Injection {
    /// Draw the signal of trial `trial` with `n_sources` sources; `levels` are the selection's
    /// events of each energy level of `cuts` ([`level_members`]).
    #[must_use]
    pub fn draw(&self, seed: u64, trial: u64, n_sources: u64, levels: &[Vec<(f64, u32)>], cuts: &ResolvedCuts) -> TrialSignal {
        let mut r = RandomStream::new(seed, TAG_INJECT, trial);
        let (s_lo, s_hi) = (self.band.lo.to_radians().sin(), self.band.hi.to_radians().sin());
        let sources: Vec<(f64, f64)> = (0..n_sources)
            .map(|_| {
                let sin_dec = s_lo + (1.0 - r.uniform_f64()) * (s_hi - s_lo);
                let ra = 360.0 * (1.0 - r.uniform_f64());
                (ra, sin_dec.clamp(-1.0, 1.0).asin().to_degrees())
            })
            .collect();
        let m = n_sources * self.per_source;
        let tail = &self.tail;
        let (lo, hi) = (tail.energy[0], tail.energy[tail.energy.len() - 1]);
        let mut events = Vec::with_capacity(m as usize);
        for (s, &(ra, dec)) in sources.iter().enumerate() {
            for _ in 0..self.per_source {
                let x = power_law_log10(1.0 - r.uniform_f64(), self.gamma, lo, hi);
                let i = tail.nearest(x, r.uniform_f64());
                let sigma = tail.sigma_deg[i];
                let theta = vmf_angle(r.uniform_f64(), sigma.to_radians());
                let phi = std::f64::consts::TAU * (1.0 - r.uniform_f64());
                let (a, d) = displace(ra.to_radians(), dec.to_radians(), theta, phi);
                events.push(SignalEvent {
                    source: s as u32,
                    ra: a.to_degrees(),
                    dec: d.to_degrees(),
                    energy: tail.energy[i],
                    sigma_deg: sigma,
                    theta_deg: theta.to_degrees(),
                });
            }
        }
        let replaced = replaced_events(&mut r, &events, levels, cuts);
        TrialSignal { sources, replaced, events }
    }
}

/// The selection's events of each energy level of `cuts`: (declination, index in input order),
/// sorted by declination (then index).
#[must_use]
pub fn level_members(events: &[Event], cuts: &ResolvedCuts) -> Vec<Vec<(f64, u32)>> {
    let mut out = vec![Vec::new(); cuts.levels()];
    for (i, e) in events.iter().enumerate() {
        out[usize::from(cuts.level(e.energy))].push((e.dec, i as u32));
    }
    for l in &mut out {
        l.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    }
    out
}

/// Half-width, in declination rank within a level, of the window a replaced event is drawn from.
pub const REPLACE_WINDOW: usize = 10;

/// The events the signal `events` replace (module docs, step 3), ascending. For each signal
/// event in turn: its level (or, when that level has no event left, the nearest lower level,
/// then the nearest higher one), the rank p its declination has among the level's events, a
/// rank drawn uniformly in [p − W, p + W] ([`REPLACE_WINDOW`], clamped to the level), and the
/// free event nearest to that rank (searching up, then down, alternately). One draw per signal
/// event. Needs as many selected events as signal events.
fn replaced_events(r: &mut RandomStream, events: &[SignalEvent], levels: &[Vec<(f64, u32)>], cuts: &ResolvedCuts) -> Vec<u32> {
    let mut taken: Vec<std::collections::HashSet<usize>> = vec![std::collections::HashSet::new(); levels.len()];
    let mut out = Vec::with_capacity(events.len());
    let w = REPLACE_WINDOW as f64;
    for e in events {
        let u = r.uniform_f64();
        let own = usize::from(cuts.level(e.energy));
        let Some(l) = (0..=own)
            .rev()
            .chain(own + 1..levels.len())
            .find(|&l| taken[l].len() < levels[l].len())
        else {
            break;
        };
        let m = &levels[l];
        let p = m.partition_point(|&(d, _)| d < e.dec) as f64;
        let q = (p - w + ((1.0 - u) * (2.0 * w + 1.0)).floor()).clamp(0.0, (m.len() - 1) as f64) as i64;
        let pick = (0..2 * m.len() as i64)
            .map(|k| if k % 2 == 0 { q + k / 2 } else { q - (k / 2 + 1) })
            .filter(|&i| i >= 0 && (i as usize) < m.len())
            .map(|i| i as usize)
            .find(|i| !taken[l].contains(i));
        if let Some(i) = pick {
            taken[l].insert(i);
            out.push(m[i].1);
        }
    }
    out.sort_unstable();
    out
}

/// The selection as the trials see it: the selected events in input order (the keys of their
/// scrambling draws) with the resolved cuts, bins and grids of the data's sample.
#[derive(Clone, Debug)]
pub struct Selection<'a> {
    pub events: &'a [Event],
    /// The data's sample (bins, cuts, RA grid).
    pub sample: &'a Sample,
    /// The events of each energy level, by declination ([`level_members`]).
    pub levels: Vec<Vec<(f64, u32)>>,
    /// Sorted position in `sample` of each event (input order): the inverse of `sample.order`.
    pub position: Vec<u32>,
}

impl<'a> Selection<'a> {
    #[must_use]
    pub fn new(events: &'a [Event], sample: &'a Sample) -> Self {
        let mut position = vec![0u32; sample.order.len()];
        for (p, &e) in sample.order.iter().enumerate() {
            position[e as usize] = p as u32;
        }
        Self {
            events,
            sample,
            levels: level_members(events, &sample.cuts),
            position,
        }
    }
}

/// Where a signal event enters the count: its declination on the data's grid (clamped to
/// ±90°) and its right ascension as a turn on the scrambled events' grid — the values both the
/// CPU trial ([`trial_counts`]) and the GPU batch ([`SignalBatch`]) count it at.
#[must_use]
pub fn signal_position(sg: &SignalEvent, inj: &Injection, ra_grid: u32) -> (f64, f64) {
    let dec = on_grid(sg.dec, inj.dec_grid).clamp(-90.0, 90.0);
    (dec, quantize_turn((sg.ra / 360.0).rem_euclid(1.0), ra_grid))
}

/// The stand-in vector of a replaced background event at sorted position `p` on the GPU:
/// (4(p + 1), 0, 0). Its squared chord to any unit vector is ≥ (4 − 1)² = 9 and to another
/// stand-in ≥ 4² = 16, both above every bin limit (≤ 4 + the edge tolerance, the squared chord
/// of 180°), so the pair test `c² ≤ limit` — which the kernels do before any bin lookup —
/// rejects every pair with a replaced event and the `pairs` kernel needs no change.
#[must_use]
pub fn far_vector(p: u32) -> [f64; 3] {
    [4.0 * (f64::from(p) + 1.0), 0.0, 0.0]
}

/// The signal of a batch of trials as the GPU counts it (`kernels/autocorr.cu`: `remove_replaced`,
/// `signal_pairs`), drawn on the host by the same code as the CPU trial ([`Injection::draw`],
/// [`signal_position`]), so the signal events are bit for bit the CPU's. Per trial of the
/// batch, `per_trial` = N·K entries of each array.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SignalBatch {
    pub trials: u32,
    pub per_trial: u32,
    /// Unit vector and energy level (x, y, z, level) of every signal event: [trial][event][4].
    pub vec: Vec<f64>,
    /// Sorted background positions lo..hi whose declination lies within the window of the
    /// signal event (the same rule as `Sample::window_end`): [trial][event][2].
    pub window: Vec<u32>,
    /// Sorted positions of the replaced background events, ascending (`u32::MAX`: none, when
    /// a trial replaces fewer): [trial][event].
    pub replaced: Vec<u32>,
}

/// Bytes of one signal event of a [`SignalBatch`] (on the host and again on the GPU).
pub const SIGNAL_BYTES: u64 = 4 * 8 + 2 * 4 + 4;

impl SignalBatch {
    /// Draw the signal of trials `trials` with `n_sources` sources, in parallel over the trials
    /// (rayon), and lay it out for upload.
    pub fn new(sel: &Selection, inj: &Injection, seed: u64, n_sources: u64, trials: Range<u64>) -> SignalBatch {
        let s = sel.sample;
        let m = (n_sources * inj.per_source) as usize;
        let count = (trials.end - trials.start) as usize;
        let theta = crate::sample::window_deg(&s.bins);
        let per: Vec<(Vec<f64>, Vec<u32>, Vec<u32>)> = trials
            .into_par_iter()
            .map(|k| {
                let signal = inj.draw(seed, k, n_sources, &sel.levels, &s.cuts);
                let mut vec = Vec::with_capacity(4 * m);
                let mut window = Vec::with_capacity(2 * m);
                for sg in &signal.events {
                    let (dec, turn) = signal_position(sg, inj, s.ra_grid);
                    let r = dec.to_radians();
                    let u = unit_vector_turn(turn, r.sin(), r.cos());
                    vec.extend_from_slice(&[u[0], u[1], u[2], f64::from(s.cuts.level(sg.energy))]);
                    // Partners at sorted positions with d − δ_j ≤ θ and δ_j − d ≤ θ.
                    window.push(s.dec.partition_point(|&x| dec - x > theta) as u32);
                    window.push(s.dec.partition_point(|&x| x - dec <= theta) as u32);
                }
                let mut replaced: Vec<u32> = signal.replaced.iter().map(|&e| sel.position[e as usize]).collect();
                replaced.sort_unstable();
                replaced.resize(m, u32::MAX);
                (vec, window, replaced)
            })
            .collect();
        let mut b = SignalBatch {
            trials: count as u32,
            per_trial: m as u32,
            vec: Vec::with_capacity(4 * m * count),
            window: Vec::with_capacity(2 * m * count),
            replaced: Vec::with_capacity(m * count),
        };
        for (v, w, r) in per {
            b.vec.extend(v);
            b.window.extend(w);
            b.replaced.extend(r);
        }
        b
    }
}

/// Cumulative counts N[cut][bin] of trial `trial` with `n_sources` sources injected (none:
/// exactly background trial `trial`).
pub fn trial_counts(sel: &Selection, inj: &Injection, seed: u64, trial: u64, n_sources: u64) -> Result<Vec<u64>, String> {
    let s = sel.sample;
    let gen = Philox4x32::new(seed);
    let n = sel.events.len();
    let signal = inj.draw(seed, trial, n_sources, &sel.levels, &s.cuts);
    let mut events: Vec<Event> = Vec::with_capacity(n);
    let mut turns: Vec<f64> = Vec::with_capacity(n);
    let mut next = signal.replaced.iter().peekable();
    for (e, ev) in sel.events.iter().enumerate() {
        if next.peek() == Some(&&(e as u32)) {
            next.next();
            continue;
        }
        events.push(*ev);
        turns.push(quantize_turn(trial_turn(&gen, trial, e as u32), s.ra_grid));
    }
    for sg in &signal.events {
        let (dec, turn) = signal_position(sg, inj, s.ra_grid);
        events.push(Event {
            ra: sg.ra,
            dec,
            energy: sg.energy,
            ang_err: Some(sg.sigma_deg),
        });
        turns.push(turn);
    }
    let mut t = Sample::new(&events, s.bins.clone(), s.cuts.clone())?;
    for p in 0..t.len() {
        t.ra_turn[p] = turns[t.order[p] as usize];
    }
    Ok(count::observed(&t))
}

/// The count distributions of trials `range` with `n_sources` sources on the CPU (rayon over
/// trials). Stops early, with a partial result the caller discards, when `progress` says so.
pub fn run_cpu(
    sel: &Selection,
    inj: &Injection,
    seed: u64,
    n_sources: u64,
    range: Range<u64>,
    progress: &Progress,
) -> Result<Background, String> {
    let mut bg = Background::new(sel.sample.hist_len());
    let batch = 64u64;
    let mut start = range.start;
    while start < range.end {
        let end = (start + batch * rayon::current_num_threads() as u64).min(range.end);
        let counts: Vec<Result<Vec<u64>, String>> = (start..end)
            .into_par_iter()
            .map(|k| {
                if progress.should_stop() {
                    return Ok(Vec::new());
                }
                let c = trial_counts(sel, inj, seed, k, n_sources);
                progress.add(1);
                c
            })
            .collect();
        if progress.should_stop() {
            return Ok(bg);
        }
        for c in counts {
            bg.add(&c?);
        }
        start = end;
    }
    Ok(bg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::cumulative;

    #[test]
    fn power_law_inverts_its_cdf() {
        // γ = −2 on [0, 2]: F(x) = (1 − 10^{−x})/(1 − 10^{−2}); the median solves F = 1/2.
        let x = power_law_log10(0.5, -2.0, 0.0, 2.0);
        assert!(((1.0 - 10f64.powf(-x)) / 0.99 - 0.5).abs() < 1e-12, "{x}");
        assert_eq!(power_law_log10(0.0, -2.0, 1.0, 3.0), 1.0);
        assert!((power_law_log10(1.0, -2.0, 1.0, 3.0) - 3.0).abs() < 1e-12);
        assert!((power_law_log10(0.25, -1.0, 1.0, 3.0) - 1.5).abs() < 1e-12);
    }

    #[test]
    fn vmf_angle_inverts_its_cdf() {
        for sigma in [0.001f64, 0.02, 0.5, 2.0] {
            for u in [1e-9, 0.1, 0.5, 0.9, 1.0] {
                let th = vmf_angle(u, sigma);
                // P(Θ ≤ θ) = 1 − u (u is the upper tail in Wood's form).
                assert!((vmf_cdf(th, sigma) - (1.0 - u)).abs() < 1e-9, "σ {sigma} u {u} θ {th}");
            }
        }
        // Small σ: the Rayleigh median σ√(2 ln 2).
        let s = 1e-3;
        assert!((vmf_angle(0.5, s) / (s * (2.0 * 2f64.ln()).sqrt()) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn displace_moves_by_theta() {
        for (a, d, th, ph) in [
            (0.3, 0.2, 0.01, 1.0),
            (6.2, -1.5, 0.3, 4.0),
            (1.0, 1.55, 0.05, 2.5),
            (2.0, 0.0, 1.0, 0.0),
        ] {
            let (a2, d2) = displace(a, d, th, ph);
            let sep = crate::sphere::separation_deg(a.to_degrees(), d.to_degrees(), a2.to_degrees(), d2.to_degrees());
            assert!((sep - f64::to_degrees(th)).abs() < 1e-9, "{sep} vs {}", f64::to_degrees(th));
        }
        // φ = 0 goes north.
        let (_, d2) = displace(1.0, 0.2, 0.1, 0.0);
        assert!((d2 - 0.3).abs() < 1e-12);
    }

    #[test]
    fn replaced_events_match_the_signal_events_level_and_declination() {
        use crate::cuts::{resolve, EnergyCut};
        // 1 000 events: energy i mod 100, declination −45° + 0.09°·i.
        let data: Vec<Event> = (0..1000)
            .map(|i| Event {
                ra: 0.0,
                dec: -45.0 + 0.09 * f64::from(i),
                energy: f64::from(i % 100),
                ang_err: Some(1.0),
            })
            .collect();
        // Levels: 0 (E < 90: 900 events), 1 (E ≥ 90: 100).
        let cuts = resolve(&data, &[EnergyCut::TopFraction(0.1)]).unwrap();
        let levels = level_members(&data, &cuts);
        assert_eq!((levels[0].len(), levels[1].len()), (900, 100));
        assert!(levels[1].windows(2).all(|w| w[0].0 <= w[1].0));
        let sig = |e: f64, dec: f64| SignalEvent {
            source: 0,
            ra: 0.0,
            dec,
            energy: e,
            sigma_deg: 1.0,
            theta_deg: 0.0,
        };
        let events = [sig(95.0, 0.0), sig(95.0, 0.0), sig(3.0, 20.0), sig(120.0, -44.0), sig(3.0, 40.0)];
        for k in 0..100 {
            let mut r = RandomStream::new(11, TAG_INJECT, k);
            let rep = replaced_events(&mut r, &events, &levels, &cuts);
            assert_eq!(rep.len(), 5);
            assert!(rep.windows(2).all(|w| w[0] < w[1]));
            let lv: Vec<u8> = rep.iter().map(|&i| cuts.level(data[i as usize].energy)).collect();
            assert_eq!(lv.iter().filter(|&&l| l == 1).count(), 3, "three signal events of level 1");
            // Each signal event has a replaced event of its level within W ranks of its own
            // declination rank (+2: the other events of the level may have taken neighbours).
            for e in &events {
                let l = usize::from(cuts.level(e.energy)).min(1);
                let p = levels[l].partition_point(|&(d, _)| d < e.dec) as i64;
                assert!(
                    rep.iter().any(|&i| levels[l]
                        .iter()
                        .position(|&(_, j)| j == i)
                        .is_some_and(|rank| (rank as i64 - p).abs() <= REPLACE_WINDOW as i64 + 2)),
                    "trial {k}: nothing replaced near δ = {}° in level {l}: {rep:?}",
                    e.dec
                );
            }
        }
        // A level with nothing left passes to the next lower one.
        let two: Vec<Vec<(f64, u32)>> = vec![levels[0].clone(), levels[1][..1].to_vec()];
        let mut r = RandomStream::new(11, TAG_INJECT, 0);
        let rep = replaced_events(&mut r, &[sig(95.0, 0.0), sig(95.0, 0.0)], &two, &cuts);
        let lv: Vec<u8> = rep.iter().map(|&i| cuts.level(data[i as usize].energy)).collect();
        assert_eq!((rep.len(), lv.iter().filter(|&&l| l == 0).count()), (2, 1));
    }

    /// The CPU twin of the GPU's decomposition of an injected trial: background pairs of the
    /// scrambled sample with the replaced events' stand-in vectors ([`far_vector`]) in the
    /// `pairs` loop (no event skipped: the limit test must reject them), then each signal event
    /// against its declination window of the background and against the later signal events
    /// (`signal_pairs`), all from a [`SignalBatch`]. Returns the three parts' differential
    /// histograms.
    fn decomposed(sel: &Selection, b: &SignalBatch, t: usize, seed: u64, trial: u64) -> [Vec<u64>; 3] {
        use crate::sphere::chord2;
        let s = sel.sample;
        let gen = Philox4x32::new(seed);
        let m = b.per_trial as usize;
        let mut v: Vec<([f64; 3], u8)> = (0..s.len())
            .map(|p| {
                let turn = quantize_turn(trial_turn(&gen, trial, s.order[p]), s.ra_grid);
                (unit_vector_turn(turn, s.sin_dec[p], s.cos_dec[p]), s.level[p])
            })
            .collect();
        for &p in &b.replaced[t * m..(t + 1) * m] {
            if p != u32::MAX {
                v[p as usize].0 = far_vector(p);
            }
        }
        let nb = s.bins.len();
        let limit = s.bins.chord2_limits[nb - 1];
        let test = |u: ([f64; 3], u8), w: ([f64; 3], u8), h: &mut Vec<u64>| {
            let c2 = chord2(u.0, w.0);
            if c2 <= limit {
                h[usize::from(u.1.min(w.1)) * nb + s.bins.first_bin(c2).unwrap()] += 1;
            }
        };
        let mut out = [vec![0u64; s.hist_len()], vec![0u64; s.hist_len()], vec![0u64; s.hist_len()]];
        for i in 0..s.len() {
            for j in i + 1..s.window_end[i] as usize {
                test(v[i], v[j], &mut out[0]);
            }
        }
        let sig: Vec<([f64; 3], u8)> = (0..m)
            .map(|i| {
                let x = &b.vec[4 * (t * m + i)..4 * (t * m + i + 1)];
                ([x[0], x[1], x[2]], x[3] as u8)
            })
            .collect();
        for i in 0..m {
            let (lo, hi) = (b.window[2 * (t * m + i)], b.window[2 * (t * m + i) + 1]);
            for w in &v[lo as usize..hi as usize] {
                test(sig[i], *w, &mut out[1]);
            }
            for j in i + 1..m {
                test(sig[i], sig[j], &mut out[2]);
            }
        }
        out
    }

    /// The GPU's decomposition of an injected trial (background without the replaced events,
    /// signal × background in declination windows, signal × signal) gives exactly the counts
    /// of the CPU's trial ([`trial_counts`]), on a sky on 0.1° grids with sources over the
    /// whole sphere (poles included) and a spread of angular errors.
    #[test]
    fn the_gpu_decomposition_counts_what_the_cpu_trial_counts() {
        use crate::bins::AngularBins;
        use crate::cuts::{default_cuts, resolve};
        let ev: Vec<Event> = crate::events::synthetic(4000, 9)
            .into_iter()
            .enumerate()
            .map(|(i, e)| Event {
                ra: (e.ra * 10.0).round() / 10.0 % 360.0,
                dec: (e.dec * 10.0).round() / 10.0,
                energy: e.energy,
                ang_err: Some(0.2 + 0.05 * (i % 40) as f64),
            })
            .collect();
        let bins = AngularBins::uniform(20, 0.25).unwrap();
        let cuts = resolve(&ev, &default_cuts()).unwrap();
        let mut sample = Sample::new(&ev, bins, cuts).unwrap();
        sample.ra_grid = 3600;
        let sel = Selection::new(&ev, &sample);
        let thr = resolve(&ev, &[crate::cuts::EnergyCut::TopFraction(0.5)]).unwrap().thresholds[0];
        let inj = Injection {
            per_source: 8,
            band: DecBand { lo: -90.0, hi: 90.0 },
            gamma: -2.0,
            tail: Tail::new(&ev, thr).unwrap(),
            dec_grid: Some(0.1),
        };
        let (seed, n_sources, first) = (5u64, 30u64, 7u64);
        let b = SignalBatch::new(&sel, &inj, seed, n_sources, first..first + 6);
        assert_eq!((b.trials, b.per_trial), (6, 240));
        let (levels, nb) = (sample.cuts.levels(), sample.bins.len());
        let mut parts = [0u64; 3];
        for t in 0..6 {
            let k = first + t as u64;
            let cpu = trial_counts(&sel, &inj, seed, k, n_sources).unwrap();
            let d = decomposed(&sel, &b, t, seed, k);
            let sum: Vec<u64> = (0..d[0].len()).map(|c| d[0][c] + d[1][c] + d[2][c]).collect();
            assert_eq!(cumulative(&sum, levels, nb), cpu, "trial {k}");
            for (p, h) in parts.iter_mut().zip(&d) {
                *p += h.iter().sum::<u64>();
            }
            // Every slot names a distinct replaced event (N·K ≤ n here).
            let r = &b.replaced[t * 240..(t + 1) * 240];
            assert!(r.windows(2).all(|w| w[0] < w[1]) && r[239] < sample.len() as u32);
            // Without the stand-ins the replaced events would count: the trial differs from
            // background trial k.
            let mut ws = crate::count::Workspace::default();
            assert_ne!(crate::trials::trial_counts(&sample, seed, k, &mut ws, &mut Vec::new()), cpu);
        }
        // All three parts hold pairs (the comparison is not carried by the background alone).
        assert!(parts.iter().all(|&p| p > 0), "{parts:?}");
        // A stand-in is beyond every limit from unit vectors and from other stand-ins.
        let lim = sample.bins.chord2_limits[nb - 1];
        let far = far_vector(0);
        assert!(crate::sphere::chord2(far, [-1.0, 0.0, 0.0]) > lim && crate::sphere::chord2(far, far_vector(1)) > lim);
    }

    #[test]
    fn nearest_tail_event_takes_ties_uniformly() {
        let t = Tail {
            energy: vec![1.0, 2.0, 2.0, 2.0, 3.0],
            sigma_deg: vec![0.0; 5],
        };
        assert_eq!(t.nearest(0.2, 0.5), 0);
        assert_eq!(t.nearest(9.0, 0.5), 4);
        assert_eq!(t.nearest(1.4, 0.5), 0);
        assert_eq!(t.nearest(1.6, 1.0), 1);
        assert_eq!(t.nearest(1.6, 0.5), 2);
        assert_eq!(t.nearest(2.2, 1e-9), 3);
    }
}
