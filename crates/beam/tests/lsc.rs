//! Longitudinal space charge against the linear theory of spec §3: the energy modulation a
//! density modulation imprints (amplitude |Z(k)| L I_k, 90° phase), and the space-charge plasma
//! oscillation of a modulation over a long drift. Beams are "quiet" (stratified) so the only
//! noise is the transverse sampling.

// Index loops mirror the normal equations of the fit.
#![allow(clippy::needless_range_loop)]

use std::f64::consts::PI;
use warpdrive_beam::beam::{Particles, Reference, C_LIGHT};
use warpdrive_beam::lattice::{parse, LscParams};
use warpdrive_beam::lsc::{self, impedance_per_length, Histogram};
use warpdrive_beam::program::Program;
use warpdrive_beam::track::{track, CpuBackend, TrackOptions};
use warpdrive_core::rng::RandomStream;

/// A coasting beam: t ∈ [0, periods·τ) with density ∝ 1 + a cos(2π t/τ), δ = 0, round
/// Gaussian transverse profile of RMS `sigma`, zero slopes.
fn coasting(n: usize, reference: &Reference, tau: f64, periods: f64, a: f64, sigma: f64) -> Particles {
    let beta = reference.beta();
    let omega = 2.0 * PI / tau;
    let total = periods * tau;
    let mut p = Particles::with_len(n);
    let mut r = RandomStream::new(5, 1, 0);
    for i in 0..n {
        // Invert the cumulative t + (a/ω) sin ωt = u·T by Newton's method.
        let target = (i as f64 + 0.5) / n as f64 * total;
        let mut t = target;
        for _ in 0..50 {
            let f = t + a / omega * (omega * t).sin() - target;
            t -= f / (1.0 + a * (omega * t).cos());
        }
        p.set(i, [sigma * r.normal(), 0.0, sigma * r.normal(), 0.0, t * beta * C_LIGHT, 0.0]);
    }
    p
}

fn params(l: f64, bins: usize) -> LscParams {
    LscParams {
        l,
        l_effective: 0.0,
        bins,
        interpolate: true,
        low_cutoff: (-1.0, -1.0),
        high_cutoff: (-1.0, -1.0),
        radius_factor: 1.7,
        enabled: true,
    }
}

/// Least squares: coefficients of `basis` fitted to (x, y).
fn fit(points: &[(f64, f64)], basis: &dyn Fn(f64) -> Vec<f64>) -> Vec<f64> {
    let m = basis(0.0).len();
    let mut a = vec![vec![0.0; m + 1]; m];
    for &(x, y) in points {
        let b = basis(x);
        for i in 0..m {
            for j in 0..m {
                a[i][j] += b[i] * b[j];
            }
            a[i][m] += b[i] * y;
        }
    }
    // Gauss–Jordan with partial pivoting.
    for c in 0..m {
        let p = (c..m).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
        a.swap(c, p);
        for r in 0..m {
            if r != c {
                let f = a[r][c] / a[c][c];
                for k in c..=m {
                    a[r][k] -= f * a[c][k];
                }
            }
        }
    }
    (0..m).map(|i| a[i][m] / a[i][i]).collect()
}

/// A kick of length L on a modulated coasting beam gives ΔE(t) = −|Z(k)/L|·L·I0·a·sin(ωt):
/// the amplitude of spec §3 and the 90° phase (a particle just behind a density peak loses
/// energy). Fitted over the middle half of the beam with a smooth polynomial for the field of
/// the bunch ends. Thresholds: amplitude within 1 %, in-phase part below 1 % of it.
#[test]
fn energy_modulation_of_a_density_modulation() {
    let reference = Reference::electron(10.0);
    let (lambda, periods, a, sigma, current) = (300e-6, 32.0, 0.1, 1e-3 / 1.7, 10.0);
    let tau = lambda / (reference.beta() * C_LIGHT);
    let mut p = coasting(400_000, &reference, tau, periods, a, sigma);
    let before = p.clone();
    let charge = current * periods * tau;
    let prm = params(1.0, 2048);
    let stats = lsc::apply(&mut p, &prm, &reference, charge, Histogram::BlockAtomic);
    let energy = |d: f64| reference.mass_ev * (1.0 + (reference.p_central * (1.0 + d)).powi(2)).sqrt();
    let omega = 2.0 * PI / tau;
    let total = periods * tau;
    let points: Vec<(f64, f64)> = (0..p.len())
        .map(|i| {
            (
                lsc::time_of(before.s[i], 0.0, reference.p_central),
                energy(p.delta[i]) - energy(0.0),
            )
        })
        .filter(|(t, _)| *t > 0.25 * total && *t < 0.75 * total)
        .collect();
    let basis = |t: f64| {
        let u = 2.0 * t / total - 1.0;
        vec![(omega * t).sin(), (omega * t).cos(), 1.0, u, u * u, u * u * u, u.powi(4), u.powi(5)]
    };
    let c = fit(&points, &basis);
    let k = 2.0 * PI / lambda;
    let z = impedance_per_length(k, stats.radius, reference.gamma()).abs();
    let expected = -z * prm.l * current * a;
    println!(
        "r_b {:.4e} m, |Z/L| {z:.4e} Ω/m, fitted sin {:.5e} eV, cos {:.3e} eV, expected {expected:.5e} eV",
        stats.radius, c[0], c[1]
    );
    assert!((c[0] / expected - 1.0).abs() < 0.01, "amplitude {} vs {expected}", c[0]);
    assert!(c[1].abs() < 0.01 * expected.abs(), "in-phase part {} (phase error)", c[1]);
}

/// Over a long drift the bunching b = ⟨e^{iω(t − t_ref)}⟩ of the middle of a modulated coasting
/// beam oscillates as b0 cos(k_p s) with the plasma wavenumber of the linearised 1-D model,
///   k_p² = ω I0 |Z(k)/L| / (β0³ γ0² c E0),
/// from dτ/ds = −δ/(β0γ0²c) and dδ/ds = −V'/(β0² E0). The measured first zero of b (a quarter
/// plasma period) must give k_p within 1 %.
#[test]
fn plasma_oscillation_wavenumber() {
    let reference = Reference::electron(2.0);
    let (lambda, periods, a, sigma, current) = (1e-3, 64.0, 0.02, 1e-3 / 1.7, 1.0);
    let (beta, gamma) = (reference.beta(), reference.gamma());
    let tau = lambda / (beta * C_LIGHT);
    let omega = 2.0 * PI / tau;
    let p = coasting(200_000, &reference, tau, periods, a, sigma);
    let rb = 1.7 * sigma; // nominal; the kicks use the sampled RMS
    let z = impedance_per_length(2.0 * PI / lambda, rb, gamma).abs();
    let kp = (omega * current * z / (beta.powi(3) * gamma * gamma * C_LIGHT * reference.energy_ev())).sqrt();
    let step = 0.01;
    let quarter = PI / (2.0 * kp);
    let elements = (1.6 * quarter / step).ceil() as usize;
    let lte = format!("L1: LSCDRIFT, L={step}, BINS=2048\nW: WATCH, FILENAME=\"w\"\nA: LINE=({elements}*(L1, W))\n");
    let program = Program::compile(&parse(&lte, "plasma.lte", None).unwrap());
    let mut cpu = CpuBackend {
        particles: p,
        reference,
        aperture: f64::INFINITY,
        histogram: Histogram::BlockAtomic,
    };
    let total = periods * tau;
    let mut b = vec![(0.0, a / 2.0)];
    track(
        &program,
        &mut cpu,
        &TrackOptions {
            passes: 1,
            aperture: f64::INFINITY,
            histogram: Histogram::BlockAtomic,
            charge: current * total,
            reference,
        },
        &mut |ev| {
            let s_travelled = ev.position;
            let t_ref = s_travelled / (beta * C_LIGHT);
            let q = ev.particles;
            let (mut re, mut n) = (0.0, 0.0);
            for i in 0..q.len() {
                let t = lsc::time_of(q.s[i], q.delta[i], reference.p_central) - t_ref;
                if t > 0.25 * total && t < 0.75 * total {
                    re += (omega * t).cos();
                    n += 1.0;
                }
            }
            b.push((s_travelled, re / n));
            Ok(())
        },
        &mut |_| {},
    )
    .unwrap();
    let zero = b.windows(2).find(|w| w[0].1 > 0.0 && w[1].1 <= 0.0).expect("bunching crosses zero");
    let s0 = zero[0].0 + (zero[1].0 - zero[0].0) * zero[0].1 / (zero[0].1 - zero[1].1);
    let kp_measured = PI / (2.0 * s0);
    let min = b.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    println!(
        "k_p theory {kp:.4} /m, measured {kp_measured:.4} /m (zero at {s0:.4} m); bunching from {:.4} to {min:.4}",
        a / 2.0
    );
    assert!((kp_measured / kp - 1.0).abs() < 0.01, "k_p {kp_measured} vs {kp}");
    assert!(min < -0.2 * a / 2.0, "the modulation reverses sign after a quarter period");
}

/// All three histogram strategies give identical integer histograms of a real beam.
#[test]
fn histogram_strategies_identical_on_a_beam() {
    let reference = Reference::electron(100.0);
    let beam = warpdrive_beam::beam::gaussian(&warpdrive_beam::beam::BeamSpec {
        x: warpdrive_beam::beam::Plane {
            beta: 5.0,
            alpha: 0.0,
            emittance: 1e-9,
        },
        y: warpdrive_beam::beam::Plane {
            beta: 5.0,
            alpha: 0.0,
            emittance: 1e-9,
        },
        sigma_s: 1e-3,
        sigma_delta: 1e-3,
        particles: 300_001,
        seed: 9,
    });
    let alive = vec![true; beam.len()];
    let t: Vec<f64> = (0..beam.len())
        .map(|i| lsc::time_of(beam.s[i], beam.delta[i], reference.p_central))
        .collect();
    let (lo, hi) = t.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, &v| (a.0.min(v), a.1.max(v)));
    for bins in [256usize, 1000] {
        let keys = lsc::bin_indices(&t, &alive, lo, (hi - lo) / bins as f64, bins);
        let h = lsc::histogram(&keys, bins, Histogram::Sort);
        assert_eq!(h.iter().sum::<u64>(), beam.len() as u64);
        assert!(h[bins - 1] > 0, "t_max is counted in the last bin");
        for how in Histogram::ALL {
            assert_eq!(lsc::histogram(&keys, bins, how), h);
        }
    }
}
