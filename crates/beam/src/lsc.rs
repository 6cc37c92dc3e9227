//! Longitudinal space charge (LSCDRIFT, spec §3), CPU implementation of the ten steps; the GPU
//! twin in `kernels/lsc.cu` does the same arithmetic in the same order.
//!
//! Conventions. t = s/(βc) with the particle's own β (larger t = later = towards the tail).
//! The binned current I_b = Q_b/Δt is zero-padded to 2N points so the voltage of a bunch does
//! not wrap around, transformed with X_m = Σ_n x_n e^{−2πi mn/M} and synthesised with e^{+iωt}.
//! In that convention the impedance per unit length of a round, transversely uniform beam of
//! radius r_b (Z. Huang et al., PRST-AB 7, 074401 (2004), eq. (11), written there for e^{−iωt}) is
//!   Z(ω)/L = −i Z0/(π k r_b²) [1 − 2 I1(ξ) K1(ξ)],  k = ω/(β0 c), ξ = |k| r_b/γ0,
//! i.e. the complex conjugate of the spec's expression, which makes V(t) real and gives the
//! physical sign: a particle just behind a density peak loses energy. The energy change of a
//! particle of charge ±e is ΔE = −V(t) [eV with V in volts]; its momentum follows exactly from
//! p'² = p² + ΔE(2E + ΔE)/m², and s is rescaled by β'/β so t is continuous across the kick.

use crate::beam::{Particles, Reference, C_LIGHT};
use crate::lattice::LscParams;
use rayon::prelude::*;

/// Impedance of free space [Ω].
pub const Z0: f64 = 376.730_313_412;

/// Imaginary part of Z(ω)/L [Ω/m] at signed wavenumber k = ω/(β0c) [1/m] (real part zero);
/// zero at k = 0.
pub fn impedance_per_length(k: f64, rb: f64, gamma: f64) -> f64 {
    if k == 0.0 {
        return 0.0;
    }
    let xi = k.abs() * rb / gamma;
    -Z0 / (std::f64::consts::PI * k * rb * rb) * (1.0 - 2.0 * crate::bessel::i1k1(xi))
}

/// Cosine-tapered filter at `r` = |f|/f_Nyquist. High-frequency cutoffs (c0, c1): 1 below c0,
/// 0 above c1, a half cosine between (c1 ≤ c0: a sharp cut at c0). Low-frequency: the mirror
/// image (0 below c0, 1 above c1). Negative c0 = no filter.
pub fn filter(r: f64, low: (f64, f64), high: (f64, f64)) -> f64 {
    let taper = |r: f64, (c0, c1): (f64, f64)| -> f64 {
        // 1 at and below c0, 0 at and above c1.
        if r <= c0 {
            1.0
        } else if c1 <= c0 || r >= c1 {
            0.0
        } else {
            0.5 * (1.0 + (std::f64::consts::PI * (r - c0) / (c1 - c0)).cos())
        }
    };
    let mut f = 1.0;
    if high.0 >= 0.0 {
        f *= taper(r, high);
    }
    if low.0 >= 0.0 {
        f *= 1.0 - taper(r, low);
    }
    f
}

/// How charge histograms are built (the three GPU strategies of the seed; CPU twins here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Histogram {
    /// Sort all bin indices, then count each bin by binary search (lower bound).
    Sort,
    /// Per-block private histograms (shared-memory atomics on the GPU), then added.
    BlockAtomic,
    /// Per-block sort of bin indices, then run lengths (segmented scan) added.
    BlockSortScan,
}

impl Histogram {
    pub const ALL: [Histogram; 3] = [Histogram::Sort, Histogram::BlockAtomic, Histogram::BlockSortScan];
    pub fn name(self) -> &'static str {
        match self {
            Histogram::Sort => "sort",
            Histogram::BlockAtomic => "block-atomic",
            Histogram::BlockSortScan => "block-sort-scan",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.name() == s)
    }
}

/// Step 1: arrival time t = s/(βc) of one particle.
#[inline]
pub fn time_of(s: f64, delta: f64, p_central: f64) -> f64 {
    s / (crate::beam::beta_of(p_central, delta) * C_LIGHT)
}

/// Step 3: bin of a time (the last bin includes t_max).
#[inline]
pub fn bin_of(t: f64, tmin: f64, dt: f64, bins: usize) -> usize {
    let b = ((t - tmin) / dt) as usize;
    b.min(bins - 1)
}

/// Bin indices of the alive particles (step 3's input).
pub fn bin_indices(times: &[f64], alive: &[bool], tmin: f64, dt: f64, bins: usize) -> Vec<u32> {
    times
        .par_iter()
        .zip(alive)
        .filter(|(_, &a)| a)
        .map(|(&t, _)| bin_of(t, tmin, dt, bins) as u32)
        .collect()
}

/// Step 3: integer histogram of bin indices by the chosen strategy.
pub fn histogram(keys: &[u32], bins: usize, how: Histogram) -> Vec<u64> {
    match how {
        Histogram::Sort => {
            let mut k = keys.to_vec();
            k.par_sort_unstable();
            let lower = |b: u32| k.partition_point(|&v| v < b) as u64;
            (0..bins as u32).map(|b| lower(b + 1) - lower(b)).collect()
        }
        Histogram::BlockAtomic => keys
            .par_chunks(4096)
            .map(|c| {
                let mut h = vec![0u64; bins];
                c.iter().for_each(|&b| h[b as usize] += 1);
                h
            })
            .reduce(|| vec![0u64; bins], add_hist),
        Histogram::BlockSortScan => keys
            .par_chunks(2048)
            .map(|c| {
                let mut s = c.to_vec();
                s.sort_unstable();
                let mut h = vec![0u64; bins];
                let mut start = 0;
                for i in 0..s.len() {
                    if i + 1 == s.len() || s[i + 1] != s[i] {
                        h[s[i] as usize] += (i + 1 - start) as u64;
                        start = i + 1;
                    }
                }
                h
            })
            .reduce(|| vec![0u64; bins], add_hist),
    }
}

fn add_hist(mut a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
    a
}

/// What one LSC kick saw (for logs and checks).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LscStats {
    pub tmin: f64,
    pub tmax: f64,
    pub max_count: u64,
    pub sigma_x: f64,
    pub sigma_y: f64,
    pub radius: f64,
    pub peak_current: f64,
    /// Voltage at the bin centres [V].
    pub voltage: Vec<f64>,
    pub counts: Vec<u64>,
}

/// Steps 5, 7, 8: voltage at the bin centres from the histogram.
pub fn voltage(counts: &[u64], charge_per_particle: f64, dt: f64, rb: f64, p: &LscParams, reference: &Reference) -> Vec<f64> {
    let n = counts.len();
    let current: Vec<f64> = (0..2 * n)
        .map(|i| if i < n { counts[i] as f64 * charge_per_particle / dt } else { 0.0 })
        .collect();
    let raw = raw_voltage(&current, dt, rb, p, reference);
    raw[..n].iter().map(|v| v / (2 * n) as f64).collect()
}

/// Steps 5, 7, 8 from the zero-padded current (length M = 2·bins): the inverse FFT of
/// I(ω)·Z(ω)·L_eff·filter, not yet divided by M (as cuFFT returns it).
pub fn raw_voltage(current: &[f64], dt: f64, rb: f64, p: &LscParams, reference: &Reference) -> Vec<f64> {
    use rustfft::num_complex::Complex64;
    let m = current.len();
    let mut buf: Vec<Complex64> = current.iter().map(|&c| Complex64::new(c, 0.0)).collect();
    let mut planner = rustfft::FftPlanner::<f64>::new();
    planner.plan_fft_forward(m).process(&mut buf);
    let scale = spectrum_scale(m, dt, rb, p, reference);
    for (j, b) in buf.iter_mut().enumerate() {
        // Z = i·im: (a + ib)(i im) = −b im + i a im.
        let im = scale(j);
        *b = Complex64::new(-b.im * im, b.re * im);
    }
    planner.plan_fft_inverse(m).process(&mut buf);
    buf.iter().map(|c| c.re).collect()
}

/// RMS from a count, a sum and a sum of squares (the order of operations the GPU repeats).
pub fn rms_from_sums(n: f64, sum: f64, sum_sq: f64) -> f64 {
    let m = sum / n;
    (sum_sq / n - m * m).max(0.0).sqrt()
}

/// Imaginary part of Z(ω_j)·L_eff·filter at FFT index j of length m (the Nyquist bin and DC
/// are zero).
pub fn spectrum_scale(m: usize, dt: f64, rb: f64, p: &LscParams, reference: &Reference) -> impl Fn(usize) -> f64 {
    let (beta, gamma) = (reference.beta(), reference.gamma());
    let (low, high, leff) = (p.low_cutoff, p.high_cutoff, p.kick_length());
    move |j: usize| {
        if j == 0 || 2 * j == m {
            return 0.0;
        }
        let signed = if 2 * j < m { j as f64 } else { j as f64 - m as f64 };
        let omega = 2.0 * std::f64::consts::PI * signed / (m as f64 * dt);
        let k = omega / (beta * C_LIGHT);
        let r = signed.abs() / (0.5 * m as f64);
        impedance_per_length(k, rb, gamma) * leff * filter(r, low, high)
    }
}

/// Step 9: voltage at time t, linear between bin centres (clamped at the ends), or the bin's.
#[inline]
pub fn interpolate(v: &[f64], t: f64, tmin: f64, dt: f64, linear: bool) -> f64 {
    let n = v.len();
    if !linear {
        return v[bin_of(t, tmin, dt, n)];
    }
    let u = (t - tmin) / dt - 0.5;
    if u <= 0.0 {
        return v[0];
    }
    let b = u as usize;
    if b >= n - 1 {
        return v[n - 1];
    }
    let f = u - b as f64;
    v[b] * (1.0 - f) + v[b + 1] * f
}

/// Step 10: new (δ, s) after an energy change of −|q|·V eV (a particle of charge q in the field
/// of its own bunch, whose charge has the same sign).
#[inline]
pub fn kick(s: f64, delta: f64, volts: f64, reference: &Reference) -> (f64, f64) {
    let p0 = reference.p_central;
    let p = p0 * (1.0 + delta);
    let e = (1.0 + p * p).sqrt(); // E/mc²
    let de = -volts / reference.mass_per_charge();
    let p_new = (p * p + de * (2.0 * e + de)).sqrt();
    let beta = p / e;
    let beta_new = p_new / (1.0 + p_new * p_new).sqrt();
    (p_new / p0 - 1.0, s * (beta_new / beta))
}

/// RMS of the alive values. Partial sums over fixed chunks are added in order, so the result
/// does not depend on the number of threads.
fn rms(v: &[f64], alive: &[bool]) -> f64 {
    let parts: Vec<(usize, f64, f64)> = v
        .par_chunks(8192)
        .zip(alive.par_chunks(8192))
        .map(|(v, a)| {
            v.iter()
                .zip(a)
                .filter(|(_, &a)| a)
                .fold((0usize, 0.0, 0.0), |s, (&x, _)| (s.0 + 1, s.1 + x, s.2 + x * x))
        })
        .collect();
    let (n, s, s2) = parts.iter().fold((0usize, 0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    if n == 0 {
        return 0.0;
    }
    rms_from_sums(n as f64, s, s2)
}

/// The space-charge kick of one LSCDRIFT element (steps 1–10; the drifts around it are the
/// caller's). `total_charge` [C] is shared by all particles, lost ones included.
pub fn apply(p: &mut Particles, params: &LscParams, reference: &Reference, total_charge: f64, how: Histogram) -> LscStats {
    let n_all = p.len();
    let alive: Vec<bool> = p.lost_at.iter().map(|&l| l == 0).collect();
    let times: Vec<f64> =
        p.s.par_iter()
            .zip(&p.delta)
            .map(|(&s, &d)| time_of(s, d, reference.p_central))
            .collect();
    let (tmin, tmax) = times
        .par_iter()
        .zip(&alive)
        .filter(|(_, &a)| a)
        .map(|(&t, _)| (t, t))
        .reduce(|| (f64::INFINITY, f64::NEG_INFINITY), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    let mut stats = LscStats {
        tmin,
        tmax,
        ..Default::default()
    };
    if !params.acts_on(tmin, tmax, total_charge) {
        return stats;
    }
    let bins = params.bins;
    let dt = (tmax - tmin) / bins as f64;
    let keys = bin_indices(&times, &alive, tmin, dt, bins);
    let counts = histogram(&keys, bins, how);
    stats.max_count = counts.iter().copied().max().unwrap_or(0);
    stats.sigma_x = rms(&p.x, &alive);
    stats.sigma_y = rms(&p.y, &alive);
    stats.radius = params.beam_radius(stats.sigma_x, stats.sigma_y);
    let q = total_charge / n_all as f64;
    stats.peak_current = stats.max_count as f64 * q / dt;
    if stats.radius <= 0.0 {
        return stats;
    }
    let v = voltage(&counts, q, dt, stats.radius, params, reference);
    let linear = params.interpolate;
    p.s.par_iter_mut()
        .zip(p.delta.par_iter_mut())
        .zip(times.par_iter().zip(&alive))
        .for_each(|((s, d), (&t, &a))| {
            if a {
                let volts = interpolate(&v, t, tmin, dt, linear);
                (*d, *s) = kick(*s, *d, volts, reference);
            }
        });
    stats.voltage = v;
    stats.counts = counts;
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_taper_between_their_cutoffs() {
        let none = (-1.0, -1.0);
        assert_eq!(filter(0.7, none, none), 1.0);
        assert_eq!(filter(0.2, none, (0.3, 0.5)), 1.0);
        assert!((filter(0.4, none, (0.3, 0.5)) - 0.5).abs() < 1e-15);
        assert_eq!(filter(0.6, none, (0.3, 0.5)), 0.0);
        assert_eq!(filter(0.31, none, (0.3, -1.0)), 0.0, "sharp cut");
        assert_eq!(filter(0.05, (0.1, 0.2), none), 0.0);
        assert!((filter(0.15, (0.1, 0.2), none) - 0.5).abs() < 1e-15);
        assert_eq!(filter(0.25, (0.1, 0.2), none), 1.0);
    }

    #[test]
    fn impedance_limits() {
        // ξ ≫ 1: Z/L → Z0/(π k r_b²)(1 − 1/ξ); odd in k.
        let (rb, g) = (1e-3, 2.0);
        let k = 1e6;
        let xi = k * rb / g;
        let z = impedance_per_length(k, rb, g);
        let lead = Z0 / (std::f64::consts::PI * k * rb * rb);
        assert!((z / (-lead * (1.0 - 1.0 / xi)) - 1.0).abs() < 1e-6, "{z}");
        assert_eq!(impedance_per_length(-k, rb, g), -z);
        // ξ ≪ 1: 1 − 2I1K1 ≈ (ξ²/2)(ln(2/ξ) + 1/4 − γ_E) (leading terms of the series of I1
        // and K1; checked against mpmath to 7e-6 at ξ = 0.005), so
        // Z/L ≈ −i Z0 k/(4π γ²)(2 ln(2/ξ) + 1/2 − 2γ_E): the long-wavelength limit.
        let k = 10.0;
        let xi = k * rb / g;
        let z = impedance_per_length(k, rb, g);
        let approx = -Z0 * k / (4.0 * std::f64::consts::PI * g * g) * (2.0 * (2.0 / xi).ln() + 0.5 - 2.0 * 0.5772156649015329);
        assert!((z / approx - 1.0).abs() < 1e-4, "{z} vs {approx}");
    }

    #[test]
    fn histogram_strategies_agree() {
        let keys: Vec<u32> = (0..100_003u64).map(|i| ((i * 2_654_435_761) % 257) as u32).collect();
        let h = histogram(&keys, 257, Histogram::Sort);
        assert_eq!(h.iter().sum::<u64>(), keys.len() as u64);
        for how in Histogram::ALL {
            assert_eq!(histogram(&keys, 257, how), h, "{how:?}");
        }
    }

    #[test]
    fn kick_is_exact_energy_change() {
        let r = Reference::electron(3.0);
        let (d, s) = kick(2.0, 0.01, -1000.0, &r); // gains 1 keV
        let e = |d: f64| r.mass_ev * (1.0 + (3.0 * (1.0 + d)).powi(2)).sqrt();
        assert!((e(d) - e(0.01) - 1000.0).abs() < 1e-6);
        let beta = |d: f64| {
            let p = 3.0 * (1.0 + d);
            p / (1.0 + p * p).sqrt()
        };
        assert!((s / beta(d) - 2.0 / beta(0.01)).abs() < 1e-15, "t continuous");
    }

    /// A particle of charge q gains q·V: a doubly charged ion (alpha particle) in −1 kV of its
    /// own bunch's field gains 2 keV; an antiproton (|q| = 1) the same as a proton.
    #[test]
    fn kick_scales_with_the_charge_number() {
        let alpha = crate::species::Species::custom(3727.379e6, 2.0).unwrap();
        let r = Reference::new(&alpha, 0.5);
        let (d, _) = kick(1.0, 0.0, -1000.0, &r);
        let e = |d: f64| r.mass_ev * (1.0 + (0.5 * (1.0 + d)).powi(2)).sqrt();
        assert!((e(d) - e(0.0) - 2000.0).abs() < 1e-6, "{}", e(d) - e(0.0));
        let p = Reference::new(&"proton".parse().unwrap(), 0.5);
        let pbar = Reference::new(&"antiproton".parse().unwrap(), 0.5);
        assert_eq!(kick(1.0, 0.0, -1000.0, &p), kick(1.0, 0.0, -1000.0, &pbar));
    }
}
