//! Bethe–Heitler pair production γ → e⁻e⁺ in the field of a nucleus (and its electrons), as
//! in the Geant4 Physics Reference Manual (release 10.x), "Gamma conversion into an
//! electron–positron pair" (spec `specs/em.md` §2.7, first bullet):
//!
//! * **Cross section per atom**: L. Urban's parameterisation (Geant4 PRM eq. "σ(Z, E)",
//!   fitted to the Hubbell–Gimm–Øverbø data, J. Phys. Chem. Ref. Data 9 (1980) 1023, nuclear +
//!   electron field, 1.5 MeV–100 GeV): x = ln(E/mc²), F1,2,3(x) = Σ_{i=0..5} a_i, b_i, c_i xⁱ
//!   [µb], σ = (Z + 1)(F1 Z + F2 Z² + F3); below 1.5 MeV the 1.5 MeV value times
//!   ((E − 2mc²)/(1.5 MeV − 2mc²))²; 0 at or below 2mc².
//! * **Energy sharing**: ε = E_lepton/E from the Bethe–Heitler dσ/dε with Thomas–Fermi
//!   screening (Butcher & Messel 1960 parameterisation as refitted in Geant4) and the Coulomb
//!   correction f_c(Z) (Davies, Bethe, Maximon 1954) above 50 MeV; below 2 MeV ε is uniform in
//!   [mc²/E, ½]. The two-branch composition–rejection of the PRM is used (see [`sample_epsilon`]).
//! * **Angles**: "modified Tsai" (Geant4 PRM "Angular distribution of pair products", after
//!   Y.-S. Tsai, Rev. Mod. Phys. 46 (1974) 815): u from f(u) ∝ u e^{−au} + d u e^{−3au},
//!   a = 0.625, d = 27, θ = u·mc²/E_lepton (total energy); the leptons at opposite azimuth.
//! * Kinetic energies sum to E − 2mc² exactly in floating point.
//!
//! Validity: 1.5 MeV–100 GeV (no LPM suppression, which matters above ~100 GeV in Pb). The
//! parameterisation agrees with NIST XCOM (pair, nuclear + electron field) within 5 % from
//! 5 MeV to 1 GeV for Pb and Ar (tests print the deviations); close to threshold (2 MeV) it is
//! a rough quadratic fall-off.

use super::interaction::{deflect, Secondary};
use super::material::{coulomb_correction, ShowerMaterial};
use super::photoelectric::close_sum;
use super::{Particle, ELECTRON_MASS};
use warpdrive_core::pmath::Portable;
use warpdrive_core::RandomStream;

/// 1 µb in cm².
const MICROBARN: f64 = 1e-30;
/// Coefficients of F1, F2, F3 [µb] (Geant4 PRM, "Gamma conversion", L. Urban's fit).
const A: [f64; 6] = [8.7842e2, -1.9625e3, 1.2949e3, -2.0028e2, 1.2575e1, -2.8333e-1];
const B: [f64; 6] = [-1.0342e1, 1.7692e1, -8.2381, 1.3063, -9.0815e-2, 2.3586e-3];
const C: [f64; 6] = [-4.5263e2, 1.1161e3, -8.6749e2, 2.1773e2, -2.0467e1, 6.5372e-1];
/// Lower end of the fit [MeV]; quadratic fall-off below.
const E_LOW: f64 = 1.5;
/// Modified Tsai parameters.
const TSAI_A: f64 = 0.625;
const TSAI_D: f64 = 27.0;

fn poly(c: &[f64; 6], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ci| acc * x + ci)
}

/// Pair-production cross section per atom [cm²] for atomic number `z` at photon energy `e`
/// [MeV] (Urban's fit, module doc).
#[must_use]
pub fn xs_per_atom(z: f64, e: f64) -> f64 {
    let two_mc2 = 2.0 * ELECTRON_MASS;
    if e <= two_mc2 {
        return 0.0;
    }
    let x = (e.max(E_LOW) / ELECTRON_MASS).pln();
    let (f1, f2, f3) = (poly(&A, x), poly(&B, x), poly(&C, x));
    let mut sigma = (z + 1.0) * (f1 * z + f2 * z * z + f3) * MICROBARN;
    if e < E_LOW {
        let r = (e - two_mc2) / (E_LOW - two_mc2);
        sigma *= r * r;
    }
    sigma.max(0.0)
}

/// Macroscopic pair-production cross section Σ = Σ_i n_i σ(Z_i, E) [1/cm].
#[must_use]
pub fn macro_xs(m: &ShowerMaterial, e: f64) -> f64 {
    m.elements.iter().zip(&m.atom_density).map(|(c, n)| n * xs_per_atom(c.z, e)).sum()
}

/// Screening function 3Φ1(δ) − Φ2(δ) (Geant4 PRM's fit to the Thomas–Fermi Φ1, Φ2).
#[must_use]
pub fn screen1(delta: f64) -> f64 {
    if delta > 1.4 {
        42.038 - 8.29 * (delta + 0.958).pln()
    } else {
        42.184 - delta * (7.444 - 1.623 * delta)
    }
}

/// Screening function (3/2)Φ1(δ) + (1/2)Φ2(δ).
#[must_use]
pub fn screen2(delta: f64) -> f64 {
    if delta > 1.4 {
        42.038 - 8.29 * (delta + 0.958).pln()
    } else {
        41.326 - delta * (5.848 - 0.902 * delta)
    }
}

/// F(Z) = (8/3) ln Z, plus 8 f_c(Z) above 50 MeV (Coulomb correction).
#[must_use]
pub fn f_z(z: f64, e: f64) -> f64 {
    let f = 8.0 / 3.0 * z.pln();
    if e > 50.0 {
        f + 8.0 * coulomb_correction(z)
    } else {
        f
    }
}

/// Lower limit ε_min of the (folded) energy fraction: max(mc²/E, ½ − ½√(1 − δ_min/δ_max)),
/// δ_min = 4·136 ε0 Z^{−1/3}, δ_max where 3Φ1 − Φ2 = F(Z) (the cross section vanishes).
#[must_use]
pub fn epsilon_min(z: f64, e: f64) -> f64 {
    let eps0 = ELECTRON_MASS / e;
    let dmin = 4.0 * 136.0 * eps0 / z.pcbrt();
    let dmax = ((42.038 - f_z(z, e)) / 8.29).pexp() - 0.958;
    let eps1 = 0.5 - 0.5 * (1.0 - (dmin / dmax).min(1.0)).sqrt();
    eps0.max(eps1)
}

/// Samples the energy fraction ε ∈ [ε_min, ½] of one lepton (before the random charge swap).
///
/// Geant4 PRM: dσ/dε ∝ (½ − ε)² C1(δ) + ½ C2(δ), C1 = 3Φ1 − Φ2 − F, C2 = (3/2)Φ1 + (1/2)Φ2 − F,
/// δ = 136 ε0 Z^{−1/3}/(ε(1 − ε)). Branch 1 (weight N1 = max(C1(δ_min)(½ − ε_min)², 0)):
/// ε = ½ − (½ − ε_min)ξ^{1/3}, accepted with probability C1(δ)/C1(δ_min); branch 2 (weight
/// N2 = max(1.5 C2(δ_min), 0)): ε uniform, accepted with C2(δ)/C2(δ_min). Below 2 MeV ε is
/// uniform in [mc²/E, ½].
#[must_use]
pub fn sample_epsilon(z: f64, e: f64, rng: &mut RandomStream) -> f64 {
    let eps0 = ELECTRON_MASS / e;
    if e < 2.0 {
        return eps0 + (0.5 - eps0) * rng.uniform_f64();
    }
    let f = f_z(z, e);
    let screen = 136.0 * eps0 / z.pcbrt();
    let dmin = 4.0 * screen;
    let eps_min = epsilon_min(z, e);
    let range = 0.5 - eps_min;
    let (f10, f20) = (screen1(dmin) - f, screen2(dmin) - f);
    let n1 = (f10 * range * range).max(0.0);
    let n2 = (1.5 * f20).max(0.0);
    loop {
        let branch1 = n1 > (n1 + n2) * rng.uniform_f64();
        let u = rng.uniform_f64();
        let eps = if branch1 { 0.5 - range * u.pcbrt() } else { eps_min + range * u };
        let delta = screen / (eps * (1.0 - eps));
        let g = if branch1 {
            (screen1(delta) - f) / f10
        } else {
            (screen2(delta) - f) / f20
        };
        if rng.uniform_f64() < g {
            return eps;
        }
    }
}

/// Polar angle θ [rad] of a lepton of total energy `e_total` [MeV]: modified Tsai, u drawn as
/// Γ(2, a) (−ln(ξ1ξ2)/a) with a = 0.625 (probability 9/(9 + d)) or 3a (probability d/(9 + d)).
#[must_use]
pub fn sample_tsai_theta(e_total: f64, rng: &mut RandomStream) -> f64 {
    let a = if rng.uniform_f64() < 9.0 / (9.0 + TSAI_D) {
        TSAI_A
    } else {
        3.0 * TSAI_A
    };
    let u = -(rng.uniform_f64() * rng.uniform_f64()).max(f64::MIN_POSITIVE).pln() / a;
    (u * ELECTRON_MASS / e_total).min(std::f64::consts::PI)
}

/// Picks the element of `m` with probability n_i σ_i(E)/Σ; returns its Z.
fn pick_z(m: &ShowerMaterial, e: f64, rng: &mut RandomStream) -> f64 {
    let w: Vec<f64> = m
        .elements
        .iter()
        .zip(&m.atom_density)
        .map(|(c, n)| n * xs_per_atom(c.z, e))
        .collect();
    let mut u = rng.uniform_f64() * w.iter().sum::<f64>();
    for (c, x) in m.elements.iter().zip(&w) {
        if u < *x {
            return c.z;
        }
        u -= x;
    }
    m.elements.last().map_or(1.0, |c| c.z)
}

/// Samples a conversion of a photon of energy `e` > 2mc² [MeV] moving along `dir` in `m`:
/// returns [e⁻, e⁺] with kinetic energies summing exactly to E − 2mc².
#[must_use]
pub fn sample(m: &ShowerMaterial, e: f64, dir: [f64; 3], rng: &mut RandomStream) -> [Secondary; 2] {
    let z = pick_z(m, e, rng);
    let eps = sample_epsilon(z, e, rng);
    let eps = if rng.uniform_f64() < 0.5 { eps } else { 1.0 - eps };
    let k = (e - 2.0 * ELECTRON_MASS).max(0.0);
    let (t_minus, _, t_plus) = close_sum(k, eps * e - ELECTRON_MASS, 0.0);
    let th_minus = sample_tsai_theta(t_minus + ELECTRON_MASS, rng);
    let th_plus = sample_tsai_theta(t_plus + ELECTRON_MASS, rng);
    let phi = std::f64::consts::TAU * rng.uniform_f64();
    [
        Secondary {
            particle: Particle::Electron,
            energy: t_minus,
            dir: deflect(dir, th_minus.pcos(), phi),
        },
        Secondary {
            particle: Particle::Positron,
            energy: t_plus,
            dir: deflect(dir, th_plus.pcos(), phi + std::f64::consts::PI),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NIST XCOM (XCOM 3.1 element files MDATX3.018 / MDATX3.082), pair production in the
    /// nuclear + electron field [barn/atom]: (Z, E [MeV], σ).
    const XCOM_PAIR: [(f64, f64, f64); 8] = [
        (82.0, 5.0, 7.389 + 2.673e-2),
        (82.0, 10.0, 12.63 + 9.427e-2),
        (82.0, 100.0, 30.94 + 3.981e-1),
        (82.0, 1000.0, 38.77 + 5.570e-1),
        (18.0, 5.0, 0.3568 + 5.908e-3),
        (18.0, 10.0, 0.6839 + 2.103e-2),
        (18.0, 100.0, 1.791 + 9.573e-2),
        (18.0, 1000.0, 2.323 + 1.440e-1),
    ];

    #[test]
    fn cross_section_matches_xcom_within_5_percent() {
        for (z, e, xcom) in XCOM_PAIR {
            let s = xs_per_atom(z, e) / 1e-24;
            let rel = s / xcom - 1.0;
            println!("Z = {z} E = {e} MeV: {s:.4} b vs XCOM {xcom:.4} b ({:+.2} %)", 100.0 * rel);
            assert!(rel.abs() < 0.05, "Z = {z} E = {e}: {rel}");
        }
        assert_eq!(xs_per_atom(82.0, 1.0), 0.0);
        assert!(xs_per_atom(82.0, 1.2) > 0.0 && xs_per_atom(82.0, 1.2) < xs_per_atom(82.0, 1.5));
    }

    /// dσ/dε (un-normalised) in the PRM's original form with Φ1 = (S1 + 2 S2)/6 and
    /// Φ2 = S2 − S1/2 recovered from the fitted combinations S1 = 3Φ1 − Φ2, S2 = 1.5Φ1 + 0.5Φ2:
    /// [ε² + (1 − ε)²](Φ1 − F/2) + (2/3)ε(1 − ε)(Φ2 − F/2), clipped at 0.
    fn dsigma_deps(z: f64, e: f64, eps: f64) -> f64 {
        let delta = 136.0 * ELECTRON_MASS / e / z.cbrt() / (eps * (1.0 - eps));
        let (s1, s2) = (screen1(delta), screen2(delta));
        let (phi1, phi2) = ((s1 + 2.0 * s2) / 6.0, s2 - 0.5 * s1);
        let f = f_z(z, e);
        ((eps * eps + (1.0 - eps) * (1.0 - eps)) * (phi1 - 0.5 * f) + 2.0 / 3.0 * eps * (1.0 - eps) * (phi2 - 0.5 * f)).max(0.0)
    }

    fn chi2_epsilon(z: f64, e: f64, seed: u64) -> (f64, usize) {
        let nbins = 40;
        let n = 400_000u32;
        let lo = epsilon_min(z, e);
        let w = (0.5 - lo) / f64::from(nbins as u32);
        let mut counts = vec![0u32; nbins];
        let mut rng = RandomStream::new(seed, 0, 0);
        for _ in 0..n {
            let eps = sample_epsilon(z, e, &mut rng);
            assert!(eps >= lo - 1e-12 && eps <= 0.5);
            counts[(((eps - lo) / w) as usize).min(nbins - 1)] += 1;
        }
        // Expected: Simpson integral of dσ/dε per bin (20 sub-intervals), normalised.
        let integ = |a: f64, b: f64| {
            let m = 20;
            let h = (b - a) / f64::from(m);
            (0..=m)
                .map(|i| {
                    let c = if i == 0 || i == m {
                        1.0
                    } else if i % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    c * dsigma_deps(z, e, a + h * f64::from(i))
                })
                .sum::<f64>()
                * h
                / 3.0
        };
        let p: Vec<f64> = (0..nbins).map(|i| integ(lo + w * i as f64, lo + w * (i + 1) as f64)).collect();
        let tot: f64 = p.iter().sum();
        let chi2 = counts
            .iter()
            .zip(&p)
            .map(|(&c, &pi)| {
                let ex = f64::from(n) * pi / tot;
                (f64::from(c) - ex).powi(2) / ex
            })
            .sum();
        (chi2, nbins - 1)
    }

    #[test]
    fn epsilon_distribution_matches_screened_bethe_heitler() {
        // χ² over 40 bins (39 dof): threshold 39 + 5·√78 ≈ 83 (a 5σ excursion of the χ²).
        for &(z, e, seed) in &[(82.0, 10.0, 1), (82.0, 1000.0, 2), (18.0, 10.0, 3), (18.0, 1000.0, 4)] {
            let (chi2, dof) = chi2_epsilon(z, e, seed);
            println!("Z = {z} E = {e} MeV: chi2 = {chi2:.1} / {dof}");
            assert!(chi2 < 83.0, "Z = {z} E = {e}: chi2 {chi2}");
        }
    }

    #[test]
    fn kinetic_energies_sum_exactly_and_leptons_are_coplanar() {
        let mut rng = RandomStream::new(21, 0, 0);
        let dir = [0.0, 0.6, 0.8];
        for m in [ShowerMaterial::lead(), ShowerMaterial::liquid_argon()] {
            for &e in &[1.03, 1.7, 3.0, 10.0, 137.0, 1000.0] {
                for _ in 0..20_000 {
                    let [em, ep] = sample(&m, e, dir, &mut rng);
                    assert_eq!(em.particle, Particle::Electron);
                    assert_eq!(ep.particle, Particle::Positron);
                    assert_eq!(em.energy + ep.energy, (e - 2.0 * ELECTRON_MASS).max(0.0), "E = {e}");
                    assert!(em.energy >= 0.0 && ep.energy >= 0.0);
                    // Opposite azimuths: dir, e⁻ and e⁺ directions are coplanar.
                    let (a, b) = (em.dir, ep.dir);
                    let cross = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
                    let triple = cross[0] * dir[0] + cross[1] * dir[1] + cross[2] * dir[2];
                    assert!(triple.abs() < 1e-9, "{triple}");
                }
            }
        }
    }

    #[test]
    fn tsai_mean_angle() {
        // <u> of f(u) ∝ u e^{−au} + d u e^{−3au}: (9/(9+d))·2/a + (d/(9+d))·2/(3a) = 1.6 for
        // a = 0.625, d = 27, so <θ> = 1.6 mc²/E (no clipping at E = 100 MeV).
        let mut rng = RandomStream::new(3, 0, 0);
        let n = 400_000;
        let e = 100.0;
        let mean: f64 = (0..n).map(|_| sample_tsai_theta(e, &mut rng)).sum::<f64>() / f64::from(n);
        let expected = 1.6 * ELECTRON_MASS / e;
        // Var(u) per component: Γ(2,λ) has variance 2/λ²; mixture sd of u ≈ 1.3 → rel. sd ≈ 1.3/1.6/√n.
        println!("Tsai <theta> = {mean:.6e} vs {expected:.6e}");
        assert!((mean / expected - 1.0).abs() < 5.0 * 1.3 / 1.6 / f64::from(n).sqrt(), "{mean}");
    }
}
