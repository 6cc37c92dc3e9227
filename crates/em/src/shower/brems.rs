//! e± bremsstrahlung: the Bethe–Heitler cross section with Thomas–Fermi screening, the
//! Coulomb correction and dielectric suppression; its integrals (cross section above a photon
//! cut, restricted radiative loss below it) and the sampling of the photon.
//!
//! **Model.** Y.-S. Tsai, Rev. Mod. Phys. 46 (1974) 815, eq. (3.9), per atom of atomic number Z,
//! for an e± of total energy E = T + mc² emitting a photon of energy k (y = k/E, E' = E − k):
//!
//! dσ/dk = (α r_e²/k) {(4/3 − 4/3 y + y²) [Z²(φ₁ − 4/3 ln Z − 4f) + Z(ψ₁ − 8/3 ln Z)]
//!                     + 2/3 (1 − y) [Z²(φ₁ − φ₂) + Z(ψ₁ − ψ₂)]},
//!
//! with the nuclear (φ) and atomic-electron (ψ) screening functions of the Thomas–Fermi
//! atom in Tsai's analytic approximations (eqs. 3.38–3.41; also Geant4 Physics Reference Manual
//! 10.3, "Bremsstrahlung" of e±, `eBremsstrahlungRelModel`), of the screening variables
//! γ = 100 mc² k/(E E' Z^{1/3}) and ε = 100 mc² k/(E E' Z^{2/3}):
//!
//! φ₁(γ) = 20.863 − 2 ln[1 + (0.55846 γ)²] − 4 [1 − 0.6 e^{−0.9γ} − 0.4 e^{−1.5γ}],
//! φ₁ − φ₂ = 2/3 (1 + 6.5 γ + 6 γ²)⁻¹,
//! ψ₁(ε) = 28.340 − 2 ln[1 + (3.621 ε)²] − 4 [1 − 0.7 e^{−8ε} − 0.3 e^{−29.2ε}],
//! ψ₁ − ψ₂ = 2/3 (1 + 40 ε + 400 ε²)⁻¹.
//!
//! These cover complete (γ → 0: φ₁/4 − ln Z/3 = ln(184.15 Z^{-1/3}), ψ₁/4 − 2 ln Z/3 =
//! ln(1194 Z^{-2/3}), Tsai's L_rad and L'_rad), intermediate and no screening, so the same
//! formula is used at every energy ("intermediate-screening form"). Where the Born
//! approximation drives the braces negative (the last per-mille of the spectrum at high Z,
//! E' → mc²) the cross section is set to 0.
//!
//! * **Coulomb correction** f = f_c(Z) of Davies, Bethe & Maximon (1954)
//!   ([`coulomb_correction`]) for T > 50 MeV ([`COULOMB_CORRECTION_MIN`]), f = 0 below: this
//!   is where Seltzer & Berger (Nucl. Instrum. Meth. B 12 (1985) 95; ADNDT 35 (1986) 345) take
//!   the high-energy theory with the Coulomb correction as exact; below it their cross sections
//!   are interpolated towards the partial-wave results of Pratt, Tseng et al. (≤ 2 MeV). The
//!   switch makes dσ/dk drop by 4f Z²/{…} at 50 MeV: −8.7 % for lead at small k (more towards
//!   the tip), −0.45 % for argon; the unrestricted loss drops by 9.8 % (lead) and 0.5 % (argon)
//!   from 50 − ε to 50 + ε MeV. Tables built across 50 MeV interpolate over that step.
//! * **Dielectric suppression** (Ter-Mikaelian): k² → k² + k_p² in the 1/k = k/k² of the
//!   spectrum, i.e. dσ/dk × k²/(k² + k_p²), k_p = ħω_p E/mc² ([`dielectric_k2`]), as in Geant4's
//!   `eBremsstrahlungRelModel`. For 1 GeV e± in lead k_p = 0.12 MeV: it halves the spectrum at
//!   the 0.1 MeV photon cut of TestEm3.
//! * No LPM suppression (it matters in lead above ~10 GeV; TestEm3 is 1 GeV).
//! * **Positrons** use the electron cross section (as Geant4's relativistic and Tsai-type
//!   models do). The positron/electron ratio of Kim, Pratt, Seltzer & Berger (Phys. Rev. A 33
//!   (1986) 3002), which Geant4's Seltzer–Berger model applies, is below 1 at low energy and
//!   high Z and tends to 1 at high energy; it is not applied here.
//!
//! **Comparison with Seltzer–Berger** (their tabulated spectra, integrated over κ = k/T, are
//! NIST ESTAR's radiative stopping powers; Geant4 10.3 uses them below 1 GeV). Unrestricted
//! radiative stopping power, this model / SB − 1:
//!
//! | T [MeV]  | 1     | 2     | 5     | 10    | 20    | 50⁻    | 50⁺   | 100   | 1000  | 10⁴   |
//! |----------|-------|-------|-------|-------|-------|--------|-------|-------|-------|-------|
//! | Pb       | −22 % | −11 % | +0.9 %| +6.6 %| +9.7 %| +11 %  | +0.4 %| +1.1 %| +1.8 %| +1.9 %|
//! | Ar       | −0.3 %| +1.8 %| +1.1 %| +1.0 %| +1.3 %| +1.5 % | +1.0 %| +1.0 %| +1.1 %| +1.2 %|
//!
//! So above 50 MeV the model is 1–2 % above SB in both materials (the analytic screening
//! functions and the ψ (electron–electron) term; SB's own uncertainty there is quoted as a
//! few %). Below 50 MeV, argon stays within 2 % down to 1 MeV, but lead is the Born
//! approximation without its Coulomb correction: 6–11 % high between 10 and 50 MeV and low
//! below 3 MeV (the Born approximation fails for αZ = 0.6 at low energy). The spectral shape
//! differs more than the integral: in lead at 10 MeV, χ = (β²/Z²) k dσ/dk is +6 % at κ → 0,
//! +9 % at κ = 0.5, −7 % at κ = 0.9 and −40 % at κ = 0.99 (SB's Coulomb-enhanced tip); at
//! 1 GeV it is within 2 % of SB for κ ≤ 0.99. Argon at 10 MeV: −7 % at κ → 0 (SB's larger
//! electron–electron part), +2 % to +4 % at κ = 0.5–0.9. No published correction that
//! reproduces SB between 2 and 50 MeV from the analytic formula was found (SB themselves
//! interpolate between partial-wave results and the high-energy theory there), so none is
//! applied: for TestEm3 (1 GeV e⁻) the electrons below 50 MeV in lead radiate ≈ 5–10 % too
//! much energy, which is below the δ-ray/ionisation share of those electrons.
//!
//! **Photon angle**: the "modified Tsai" distribution, θ = u mc²/E with
//! f(u) ∝ u e^{−a u} + d u e^{−3 a u}, a = 0.625, d = 27 (Geant4 PRM, "Angular distribution"
//! of bremsstrahlung photons, after Tsai 1974); the e± keeps its direction and the caller
//! subtracts k from its energy.

use super::interaction::{deflect, Secondary};
use super::material::{coulomb_correction, ShowerMaterial};
use super::{Particle, ELECTRON_MASS, ELECTRON_RADIUS, FINE_STRUCTURE};
use warpdrive_core::pmath::Portable;
use warpdrive_core::RandomStream;

/// Kinetic energy [MeV] above which the Coulomb correction is applied (Seltzer & Berger 1985:
/// their cross sections are the Coulomb-corrected high-energy theory from here up).
pub const COULOMB_CORRECTION_MIN: f64 = 50.0;

/// α r_e² [cm²].
pub const ALPHA_RE2: f64 = FINE_STRUCTURE * ELECTRON_RADIUS * ELECTRON_RADIUS;

/// Tsai's nuclear screening function φ₁(γ) (Tsai 1974 eq. 3.38): decreasing in γ.
#[must_use]
pub fn phi1(g: f64) -> f64 {
    20.863 - 2.0 * (1.0 + (0.55846 * g).powi(2)).pln() - 4.0 * (1.0 - 0.6 * (-0.9 * g).pexp() - 0.4 * (-1.5 * g).pexp())
}

/// φ₁(γ) − φ₂(γ) = 2/3 (1 + 6.5 γ + 6 γ²)⁻¹ (Tsai 1974 eq. 3.39): positive, decreasing.
#[must_use]
pub fn phi1_minus_phi2(g: f64) -> f64 {
    (2.0 / 3.0) / (1.0 + 6.5 * g + 6.0 * g * g)
}

/// Tsai's atomic-electron screening function ψ₁(ε) (Tsai 1974 eq. 3.40): decreasing in ε.
#[must_use]
pub fn psi1(e: f64) -> f64 {
    28.340 - 2.0 * (1.0 + (3.621 * e).powi(2)).pln() - 4.0 * (1.0 - 0.7 * (-8.0 * e).pexp() - 0.3 * (-29.2 * e).pexp())
}

/// ψ₁(ε) − ψ₂(ε) = 2/3 (1 + 40 ε + 400 ε²)⁻¹ (Tsai 1974 eq. 3.41): positive, decreasing.
#[must_use]
pub fn psi1_minus_psi2(e: f64) -> f64 {
    (2.0 / 3.0) / (1.0 + 40.0 * e + 400.0 * e * e)
}

/// k_p² = (ħω_p E/mc²)² [MeV²] of the dielectric suppression for an e± of kinetic energy `t`.
#[must_use]
pub fn dielectric_k2(m: &ShowerMaterial, t: f64) -> f64 {
    let kp = m.plasma_energy * (t + ELECTRON_MASS) / ELECTRON_MASS;
    kp * kp
}

/// What the spectrum needs of a nucleus besides Z: ln Z, Z^{1/3} and the Coulomb correction
/// f_c(Z), computed once per element and not at every evaluation of k dσ/dk (the table
/// integrals and the rejection loop evaluate it millions of times; the GPU's element records
/// hold the same three numbers, shower/gpu.rs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Nucleus {
    pub z: f64,
    pub ln_z: f64,
    pub cbrt_z: f64,
    pub coulomb: f64,
}

impl Nucleus {
    #[must_use]
    pub fn new(z: f64) -> Self {
        Self {
            z,
            ln_z: z.pln(),
            cbrt_z: z.pcbrt(),
            coulomb: coulomb_correction(z),
        }
    }
}

/// The Coulomb correction f used at kinetic energy `t`: f_c(Z) above
/// [`COULOMB_CORRECTION_MIN`], 0 below.
#[must_use]
pub fn coulomb_term(z: f64, t: f64) -> f64 {
    nucleus_coulomb_term(&Nucleus::new(z), t)
}

fn nucleus_coulomb_term(n: &Nucleus, t: f64) -> f64 {
    if t > COULOMB_CORRECTION_MIN {
        n.coulomb
    } else {
        0.0
    }
}

/// The two screened brackets of Tsai eq. (3.9) at screening variables γ, ε:
/// (A, B) = (Z²(φ₁ − 4/3 ln Z − 4f) + Z(ψ₁ − 8/3 ln Z), Z²(φ₁ − φ₂) + Z(ψ₁ − ψ₂)).
fn brackets(n: &Nucleus, g: f64, e: f64, fc: f64) -> (f64, f64) {
    let (z, lnz) = (n.z, n.ln_z);
    let a = z * z * (phi1(g) - 4.0 / 3.0 * lnz - 4.0 * fc) + z * (psi1(e) - 8.0 / 3.0 * lnz);
    let b = z * z * phi1_minus_phi2(g) + z * psi1_minus_psi2(e);
    (a, b)
}

/// Screening variable γ = 100 mc² k/(E E' Z^{1/3}) (ε = γ/Z^{1/3}).
fn screening_gamma(n: &Nucleus, e_tot: f64, k: f64) -> f64 {
    100.0 * ELECTRON_MASS * k / (e_tot * (e_tot - k) * n.cbrt_z)
}

/// k dσ/dk per atom [cm²] (Tsai eq. 3.9 with dielectric suppression), 0 outside 0 < k ≤ t.
#[must_use]
pub fn k_dxs_dk(z: f64, t: f64, k: f64, k_p2: f64) -> f64 {
    nucleus_k_dxs_dk(&Nucleus::new(z), t, k, k_p2)
}

/// [`k_dxs_dk`] of a nucleus whose constants are computed.
#[must_use]
pub fn nucleus_k_dxs_dk(n: &Nucleus, t: f64, k: f64, k_p2: f64) -> f64 {
    if !(k > 0.0 && k <= t && t > 0.0) {
        return 0.0;
    }
    let e_tot = t + ELECTRON_MASS;
    let y = k / e_tot;
    let g = screening_gamma(n, e_tot, k);
    let (a, b) = brackets(n, g, g / n.cbrt_z, nucleus_coulomb_term(n, t));
    let braces = (4.0 / 3.0 - 4.0 / 3.0 * y + y * y) * a + 2.0 / 3.0 * (1.0 - y) * b;
    ALPHA_RE2 * braces.max(0.0) * k * k / (k * k + k_p2)
}

/// dσ/dk per atom [cm²/MeV] for an e± of kinetic energy `t` [MeV] emitting a photon of energy
/// `k` [MeV] on an atom of atomic number `z`, with dielectric suppression k_p² = `k_p2` [MeV²]
/// (see the module doc); 0 outside 0 < k ≤ t.
#[must_use]
pub fn dxs_dk(z: f64, t: f64, k: f64, k_p2: f64) -> f64 {
    if k > 0.0 {
        k_dxs_dk(z, t, k, k_p2) / k
    } else {
        0.0
    }
}

/// 8-point Gauss–Legendre nodes and weights on [−1, 1] (Abramowitz & Stegun Table 25.4).
const GL8: [(f64, f64); 4] = [
    (0.183_434_642_495_65, 0.362_683_783_378_362),
    (0.525_532_409_916_329, 0.313_706_645_877_887),
    (0.796_666_477_413_627, 0.222_381_034_453_374),
    (0.960_289_856_497_536, 0.101_228_536_290_376),
];

/// Largest panel width in the logarithmic integration variables (tests: halving it changes
/// the integrals by < 1e-8).
const PANEL: f64 = 0.2;

/// ∫_a^b f(x) dx by composite 8-point Gauss–Legendre on panels no wider than [`PANEL`].
fn integrate(f: impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    if b <= a {
        return 0.0;
    }
    let n = ((b - a) / PANEL).ceil().max(1.0) as usize;
    let h = (b - a) / n as f64;
    (0..n)
        .map(|i| {
            let mid = a + (i as f64 + 0.5) * h;
            GL8.iter()
                .map(|&(x, w)| w * (f(mid - 0.5 * h * x) + f(mid + 0.5 * h * x)))
                .sum::<f64>()
                * 0.5
                * h
        })
        .sum()
}

/// ∫_{k_lo}^{k_hi} k^p dσ/dk dk for p = 0 (cross section) or 1 (energy loss): in ln k up to
/// T/2 and in ln(E − k) above, where the screening and the E' → mc² end vary on the scale of E'.
fn integrate_spectrum(z: f64, t: f64, k_lo: f64, k_hi: f64, k_p2: f64, moment: i32) -> f64 {
    let k_hi = k_hi.min(t);
    if !(k_hi > k_lo && k_lo > 0.0) {
        return 0.0;
    }
    let e_tot = t + ELECTRON_MASS;
    let split = (0.5 * t).clamp(k_lo, k_hi);
    let n = Nucleus::new(z);
    // k^p dσ/dk dk = k^p (k dσ/dk) d ln k.
    let low = integrate(
        |lnk| {
            let k = lnk.pexp();
            k.powi(moment) * nucleus_k_dxs_dk(&n, t, k, k_p2)
        },
        k_lo.pln(),
        split.pln(),
    );
    // u = ln(E − k): dk = −(E − k) du.
    let high = integrate(
        |u| {
            let ep = u.pexp();
            let k = e_tot - ep;
            k.powi(moment) * nucleus_k_dxs_dk(&n, t, k, k_p2) / k * ep
        },
        (e_tot - k_hi).pln(),
        (e_tot - split).pln(),
    );
    low + high
}

/// Cross section per atom [cm²] for photons with `k_cut` < k ≤ `t` (numerical integration;
/// see [`integrate_spectrum`]); 0 when `k_cut` ≥ `t`.
#[must_use]
pub fn xs_per_atom(z: f64, t: f64, k_cut: f64, k_p2: f64) -> f64 {
    integrate_spectrum(z, t, k_cut, t, k_p2, 0)
}

/// Lower end of the loss integral relative to its upper end: ∫_0^{k₀} k dσ/dk dk ≤ k₀ max(k dσ/dk),
/// 1e-12 of the whole.
const LOSS_FLOOR: f64 = 1e-12;

/// Restricted radiative loss per atom [MeV cm²]: ∫_0^{min(k_cut, t)} k dσ/dk dk.
#[must_use]
pub fn restricted_loss_per_atom(z: f64, t: f64, k_cut: f64, k_p2: f64) -> f64 {
    let k_hi = k_cut.min(t);
    integrate_spectrum(z, t, LOSS_FLOOR * k_hi, k_hi, k_p2, 1)
}

/// Macroscopic cross section Σ = Σ_i n_i σ_i [1/cm] for photons above `k_cut` of an e± of kinetic
/// energy `t` in material `m`.
#[must_use]
pub fn macro_xs(m: &ShowerMaterial, t: f64, k_cut: f64) -> f64 {
    let k_p2 = dielectric_k2(m, t);
    m.elements
        .iter()
        .zip(&m.atom_density)
        .map(|(el, n)| n * xs_per_atom(el.z, t, k_cut, k_p2))
        .sum()
}

/// Restricted radiative stopping power [MeV/cm] = Σ_i n_i ∫_0^{min(k_cut, t)} k dσ/dk dk
/// (`k_cut` ≥ `t`: the unrestricted one).
#[must_use]
pub fn restricted_loss(m: &ShowerMaterial, t: f64, k_cut: f64) -> f64 {
    let k_p2 = dielectric_k2(m, t);
    m.elements
        .iter()
        .zip(&m.atom_density)
        .map(|(el, n)| n * restricted_loss_per_atom(el.z, t, k_cut, k_p2))
        .sum()
}

/// An upper bound of k dσ/dk [cm²] on k_cut ≤ k ≤ t, for the rejection in [`sample`].
///
/// Proof: γ(k) = 100 mc² k/(E(E − k)Z^{1/3}) and ε = γ/Z^{1/3} grow with k, so on the interval
/// γ ≥ γ₀ = γ(k_cut), ε ≥ ε₀. φ₁, ψ₁ decrease (their derivatives are sums of negative terms),
/// hence A(k) ≤ A₀ = A(γ₀, ε₀); φ₁ − φ₂ and ψ₁ − ψ₂ are positive and decrease, hence
/// 0 ≤ B(k) ≤ B₀. The coefficient c(y) = 4/3 − 4/3 y + y² is convex, so c ≤ c_max = max(c(y₀),
/// c(y₁)) with y₀ = k_cut/E, y₁ = t/E; 1 − y ≤ 1 − y₀; the suppression k²/(k² + k_p²) ≤ 1; and f is
/// fixed by t. If A ≥ 0, c A ≤ c_max A₀; if A < 0, c A < 0 ≤ c_max max(A₀, 0). So
/// k dσ/dk ≤ α r_e² [c_max max(A₀, 0) + 2/3 (1 − y₀) B₀].
#[must_use]
pub fn majorant(z: f64, t: f64, k_cut: f64) -> f64 {
    nucleus_majorant(&Nucleus::new(z), t, k_cut)
}

fn nucleus_majorant(n: &Nucleus, t: f64, k_cut: f64) -> f64 {
    let e_tot = t + ELECTRON_MASS;
    let k0 = k_cut.clamp(0.0, t);
    let g0 = screening_gamma(n, e_tot, k0);
    let (a0, b0) = brackets(n, g0, g0 / n.cbrt_z, nucleus_coulomb_term(n, t));
    let c = |y: f64| 4.0 / 3.0 - 4.0 / 3.0 * y + y * y;
    let (y0, y1) = (k0 / e_tot, t / e_tot);
    ALPHA_RE2 * (c(y0).max(c(y1)) * a0.max(0.0) + 2.0 / 3.0 * (1.0 - y0) * b0)
}

/// Modified Tsai distribution parameters (Geant4 PRM): f(u) ∝ u e^{−a u} + d u e^{−3 a u}.
const TSAI_A: f64 = 0.625;
const TSAI_D: f64 = 27.0;

/// A polar angle θ [rad] of the photon from the modified Tsai distribution for an e± of total
/// energy `e_tot`: u ~ f(u) is a Gamma(2) variate −ln(r₁ r₂)/b with rate b = a (probability
/// 1/a² : d/(9a²) of the two terms' integrals, i.e. 9/(9 + d)) or b = 3a (d/(9 + d));
/// θ = u mc²/E, redrawn while θ > π.
pub fn sample_tsai_angle(e_tot: f64, rng: &mut RandomStream) -> f64 {
    loop {
        let rate = if rng.uniform_f64() < 9.0 / (9.0 + TSAI_D) {
            TSAI_A
        } else {
            3.0 * TSAI_A
        };
        // 1 − r ∈ (0, 1]: the logarithm is finite.
        let u = -((1.0 - rng.uniform_f64()) * (1.0 - rng.uniform_f64())).pln() / rate;
        let theta = u * ELECTRON_MASS / e_tot;
        if theta <= std::f64::consts::PI {
            return theta;
        }
    }
}

/// The element (index into `m.elements`) an e± of kinetic energy `t` radiates on, chosen with
/// probability n_i σ_i(t, k_cut) / Σ (one-element materials: 0, no integration).
pub fn select_element(m: &ShowerMaterial, t: f64, k_cut: f64, rng: &mut RandomStream) -> usize {
    if m.elements.len() == 1 {
        return 0;
    }
    let k_p2 = dielectric_k2(m, t);
    let w: Vec<f64> = m
        .elements
        .iter()
        .zip(&m.atom_density)
        .map(|(el, n)| n * xs_per_atom(el.z, t, k_cut, k_p2))
        .collect();
    let mut r = rng.uniform_f64() * w.iter().sum::<f64>();
    for (i, wi) in w.iter().enumerate() {
        if r < *wi {
            return i;
        }
        r -= wi;
    }
    w.len() - 1
}

/// The photon energy k [MeV] on (k_cut, t] for atomic number `z`: ln k uniform on
/// [ln k_cut, ln t], accepted with probability k dσ/dk / [`majorant`].
pub fn sample_photon_energy(z: f64, t: f64, k_cut: f64, k_p2: f64, rng: &mut RandomStream) -> f64 {
    assert!(
        k_cut > 0.0 && k_cut < t,
        "bremsstrahlung photon cut {k_cut} MeV not below T = {t} MeV"
    );
    let n = Nucleus::new(z);
    let bound = nucleus_majorant(&n, t, k_cut);
    let log_range = (t / k_cut).pln();
    loop {
        let k = k_cut * (log_range * rng.uniform_f64()).pexp();
        if rng.uniform_f64() * bound <= nucleus_k_dxs_dk(&n, t, k, k_p2) {
            return k;
        }
    }
}

/// Sample one bremsstrahlung photon above `k_cut` for an e± of kinetic energy `t` [MeV] moving
/// along `dir` in `m`: the element by n_i σ_i, k by rejection ([`sample_photon_energy`]), θ from
/// the modified Tsai distribution around `dir`, φ uniform. The caller subtracts k from the e±
/// and keeps its direction (as Geant4 does). Requires 0 < k_cut < t.
pub fn sample(m: &ShowerMaterial, t: f64, dir: [f64; 3], k_cut: f64, rng: &mut RandomStream) -> Secondary {
    let i = select_element(m, t, k_cut, rng);
    let k = sample_photon_energy(m.elements[i].z, t, k_cut, dielectric_k2(m, t), rng);
    let theta = sample_tsai_angle(t + ELECTRON_MASS, rng);
    let phi = std::f64::consts::TAU * rng.uniform_f64();
    Secondary {
        particle: Particle::Gamma,
        energy: k,
        dir: deflect(dir, theta.pcos(), phi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::stats::chi2_sf;

    fn lead() -> ShowerMaterial {
        ShowerMaterial::lead()
    }

    /// Mass radiative stopping power [MeV cm²/g], unrestricted.
    fn s_rad(m: &ShowerMaterial, t: f64) -> f64 {
        restricted_loss(m, t, t) / m.density
    }

    #[test]
    fn integration_is_converged() {
        // The composite Gauss–Legendre integral against a 2 × 4000-point midpoint rule in the
        // same variables (relative error of the latter ~1e-7): agreement to 1e-5.
        for &(z, t, kc, kp2) in &[(82.0, 1000.0, 0.1, 0.0144), (82.0, 10.0, 0.1, 0.0), (18.0, 60.0, 1e-3, 1e-4)] {
            let coarse = xs_per_atom(z, t, kc, kp2);
            let e_tot = t + ELECTRON_MASS;
            let n = 4000;
            // Fine midpoint rule in ln k up to T/2 and in ln(E − k) above (error ~ 1e-8).
            let (a, b) = (f64::ln(kc), f64::ln(0.5 * t));
            let fine_low: f64 = (0..n)
                .map(|i| {
                    let k = (a + (i as f64 + 0.5) * (b - a) / n as f64).exp();
                    k_dxs_dk(z, t, k, kp2) * (b - a) / n as f64
                })
                .sum();
            let (a, b) = (ELECTRON_MASS.ln(), (e_tot - 0.5 * t).ln());
            let fine_high: f64 = (0..n)
                .map(|i| {
                    let ep = (a + (i as f64 + 0.5) * (b - a) / n as f64).exp();
                    let k = e_tot - ep;
                    k_dxs_dk(z, t, k, kp2) / k * ep * (b - a) / n as f64
                })
                .sum();
            let fine = fine_low + fine_high;
            assert!((coarse / fine - 1.0).abs() < 1e-5, "{z} {t}: {coarse} vs {fine}");
        }
    }

    /// (a) Unrestricted radiative stopping powers against ESTAR. ESTAR's radiative stopping
    /// powers (NIST, Berger et al.; ICRU Report 37) are the integrals over κ = k/T of the
    /// Seltzer–Berger scaled spectra χ = (β²/Z²) k dσ/dk (Seltzer & Berger, ADNDT 35 (1986) 345;
    /// NIST tables "S. M. Seltzer, NBS, 5 Sep 84", 57 energies × 32 κ). The reference values
    /// below are those integrals (trapezoidal rule on the 32-point κ grid; A = 207.2 and 39.948
    /// as in ESTAR), in MeV cm²/g:
    ///
    /// | T [MeV] | Pb      | Ar      |
    /// |---------|---------|---------|
    /// | 10      | 1.2026  | 0.35667 |
    /// | 100     | 14.381  | 4.5988  |
    /// | 1000    | 153.91  | 50.110  |
    ///
    /// This model: Pb 1.2814 (+6.6 %), 14.538 (+1.1 %), 156.75 (+1.8 %); Ar 0.36032 (+1.0 %),
    /// 4.6437 (+1.0 %), 50.659 (+1.1 %). Each deviation is pinned to a band so that a change of
    /// the model in either direction shows.
    #[test]
    fn radiative_stopping_powers_match_estar() {
        let pb = lead();
        let ar = ShowerMaterial::liquid_argon();
        // (material, T, ESTAR/SB value, lowest and highest accepted ratio − 1)
        let cases = [
            (&pb, 10.0, 1.2026, 0.05, 0.08),
            (&pb, 100.0, 14.381, 0.0, 0.02),
            (&pb, 1000.0, 153.91, 0.0, 0.025),
            (&ar, 10.0, 0.35667, 0.0, 0.02),
            (&ar, 100.0, 4.5988, 0.0, 0.02),
            (&ar, 1000.0, 50.110, 0.0, 0.02),
        ];
        for (m, t, reference, lo, hi) in cases {
            let dev = s_rad(m, t) / reference - 1.0;
            println!(
                "{} T = {t} MeV: {:.5} MeV cm2/g vs ESTAR {reference}: {:+.2} %",
                m.name,
                s_rad(m, t),
                100.0 * dev
            );
            assert!(dev > lo && dev < hi, "{} {t}: {dev}", m.name);
        }
    }

    /// (b) At 10 GeV the radiative loss approaches E/X₀: Tsai's X₀ counts the
    /// (4/3 − 4/3 y + y²) term in complete screening; the (1 − y)(Z² + Z)/9 term adds
    /// 1/(18 [L_rad − f + L'_rad/Z]) = +1.6 % (Pb), +1.1 % (Ar); incomplete screening near
    /// y → 1 takes a little off. Measured +1.3 % and +0.9 %; the brief asks for 3 %.
    #[test]
    fn high_energy_loss_is_e_over_x0() {
        for m in [lead(), ShowerMaterial::liquid_argon()] {
            let t = 1e4;
            let ratio = restricted_loss(&m, t, t) * m.radiation_length / (t + ELECTRON_MASS);
            println!("{}: dE/dx X0/E = {ratio:.4}", m.name);
            assert!((ratio - 1.0).abs() < 0.03 && ratio > 1.0, "{}: {ratio}", m.name);
        }
    }

    /// (d) The majorant bounds k dσ/dk on a fine scan (in ln k, and in ln(E − k) near the tip)
    /// for light to heavy atoms, low to high energies, both sides of the Coulomb switch, with
    /// and without dielectric suppression; and it is not loose (≥ 0.6 of it is reached).
    #[test]
    fn majorant_bounds_the_spectrum() {
        for &z in &[1.0, 6.0, 18.0, 82.0, 100.0] {
            for &t in &[0.05, 1.0, 10.0, 49.9, 50.1, 1e3, 1e5] {
                for &kc_frac in &[1e-4, 1e-2, 0.3] {
                    for &kp2 in &[0.0, 1e-2] {
                        let kc = kc_frac * t;
                        let bound = majorant(z, t, kc);
                        let e_tot = t + ELECTRON_MASS;
                        let n = 20_000;
                        let mut top: f64 = 0.0;
                        for i in 0..=n {
                            let f = i as f64 / n as f64;
                            let k1 = kc * (t / kc).powf(f);
                            let k2 = e_tot - (e_tot - kc).powf(1.0 - f) * ELECTRON_MASS.powf(f);
                            for k in [k1, k2.clamp(kc, t)] {
                                let v = k_dxs_dk(z, t, k, kp2);
                                assert!(v <= bound * (1.0 + 1e-12), "Z {z} T {t} kc {kc} k {k}: {v} > {bound}");
                                top = top.max(v);
                            }
                        }
                        if kp2 == 0.0 {
                            assert!(top >= 0.6 * bound, "Z {z} T {t} kc {kc}: max {top} vs bound {bound}");
                        }
                    }
                }
            }
        }
    }

    /// Histogram the photon energies of `n` samples in `bins` bins uniform in ln k on
    /// (k_cut, t] and return (χ², dof) against the numerically integrated spectrum.
    fn spectrum_chi2(m: &ShowerMaterial, t: f64, k_cut: f64, n: usize, bins: usize, seed: u64) -> (f64, f64) {
        let mut rng = RandomStream::new(seed, 0, 0);
        let mut counts = vec![0.0f64; bins];
        let width = (t / k_cut).ln() / bins as f64;
        for _ in 0..n {
            let s = sample(m, t, [0.0, 0.0, 1.0], k_cut, &mut rng);
            assert_eq!(s.particle, Particle::Gamma);
            assert!(s.energy > k_cut && s.energy <= t);
            let b = (((s.energy / k_cut).ln() / width) as usize).min(bins - 1);
            counts[b] += 1.0;
        }
        let kp2 = dielectric_k2(m, t);
        let z = m.elements[0].z;
        let total = xs_per_atom(z, t, k_cut, kp2);
        let mut chi2 = 0.0;
        for (b, c) in counts.iter().enumerate() {
            let lo = k_cut * (width * b as f64).exp();
            let hi = k_cut * (width * (b + 1) as f64).exp();
            let expect = n as f64 * integrate_spectrum(z, t, lo, hi, kp2, 0) / total;
            chi2 += (c - expect).powi(2) / expect;
        }
        (chi2, (bins - 1) as f64)
    }

    /// (c) Sampled k spectra in lead at 1 GeV and 10 MeV (k_cut = 0.1 MeV, TestEm3's gamma cut
    /// in lead) against the numerically normalised dσ/dk: 40 bins in ln k, 200 000 photons, fixed
    /// seeds; fails if the χ² p-value is below 1e-3.
    #[test]
    fn sampled_spectrum_follows_the_cross_section() {
        let pb = lead();
        for (t, seed) in [(1000.0, 11), (10.0, 12)] {
            let (chi2, dof) = spectrum_chi2(&pb, t, 0.1, 200_000, 40, seed);
            let p = chi2_sf(chi2, dof);
            println!("Pb T = {t} MeV: chi2 = {chi2:.1} / {dof}, p = {p:.3}");
            assert!(p > 1e-3, "T {t}: chi2 {chi2} dof {dof} p {p}");
        }
    }

    /// The χ² test can fail: a spectrum sampled without the dielectric suppression (k_p = 0)
    /// is rejected against the suppressed one at 1 GeV in lead, where k_p = 0.12 MeV.
    #[test]
    fn spectrum_test_detects_a_missing_suppression() {
        let pb = lead();
        let (t, kc, n, bins): (f64, f64, usize, usize) = (1000.0, 0.1, 200_000, 40);
        let mut rng = RandomStream::new(13, 0, 0);
        let width = (t / kc).ln() / bins as f64;
        let mut counts = vec![0.0f64; bins];
        for _ in 0..n {
            let k = sample_photon_energy(82.0, t, kc, 0.0, &mut rng);
            counts[(((k / kc).ln() / width) as usize).min(bins - 1)] += 1.0;
        }
        let kp2 = dielectric_k2(&pb, t);
        let total = xs_per_atom(82.0, t, kc, kp2);
        let chi2: f64 = counts
            .iter()
            .enumerate()
            .map(|(b, c)| {
                let lo = kc * (width * b as f64).exp();
                let e = n as f64 * integrate_spectrum(82.0, t, lo, lo * width.exp(), kp2, 0) / total;
                (c - e).powi(2) / e
            })
            .sum();
        assert!(chi2_sf(chi2, 39.0) < 1e-6, "{chi2}");
    }

    /// (e) Photons above 100 keV per cm of a 1 GeV e⁻ in lead: [`macro_xs`] against the
    /// complete-screening closed form (Tsai 1974 eq. 3.83, with L_rad = φ₁(0)/4 − ln Z/3 and
    /// L'_rad = ψ₁(0)/4 − 2 ln Z/3 of the same analytic screening functions):
    /// Σ = 4α r_e² n {[Z²(L_rad − f) + Z L'_rad] [4/3 ln(T/k_c) − 4/3 (T − k_c)/E + (T² − k_c²)/(2E²)]
    /// plus (Z² + Z)/9 [ln(T/k_c) − (T − k_c)/E]}, less the dielectric suppression of the soft
    /// end, which removes ∫ (1/k) k_p²/(k² + k_p²) dk = ½ ln(1 + k_p²/k_c²) from the logarithms.
    /// Incomplete screening (only at y → 1 at 1 GeV) is the neglected difference: 0.1 %.
    /// For comparison, the Seltzer–Berger spectrum (no dielectric suppression) gives 20.53/cm;
    /// this model without suppression 20.83/cm (+1.5 %), with it 19.75/cm (closed forms: 20.87 and
    /// 19.79, −0.2 %).
    #[test]
    fn photons_per_cm_in_lead_at_1_gev() {
        let pb = lead();
        let (t, kc) = (1000.0, 0.1);
        let e = t + ELECTRON_MASS;
        let z: f64 = 82.0;
        let fc = coulomb_correction(z);
        let lrad = phi1(0.0) / 4.0 - z.ln() / 3.0;
        let lprad = psi1(0.0) / 4.0 - 2.0 * z.ln() / 3.0;
        let kp2 = dielectric_k2(&pb, t);
        let soft = 0.5 * (1.0 + kp2 / (kc * kc)).ln();
        let log = (t / kc).ln();
        let main = z * z * (lrad - fc) + z * lprad;
        let extra = (z * z + z) / 9.0;
        let n = pb.atom_density[0] * 4.0 * ALPHA_RE2;
        let closed_no_diel =
            n * (main * (4.0 / 3.0 * log - 4.0 / 3.0 * (t - kc) / e + (t * t - kc * kc) / (2.0 * e * e)) + extra * (log - (t - kc) / e));
        let closed = closed_no_diel - n * (main * 4.0 / 3.0 + extra) * soft;
        let got = macro_xs(&pb, t, kc);
        let got_no_diel = pb.atom_density[0] * xs_per_atom(z, t, kc, 0.0);
        println!(
            "photons > 100 keV per cm: {got:.4} (closed form {closed:.4}); without suppression {got_no_diel:.4} ({closed_no_diel:.4})"
        );
        assert!(
            (got_no_diel / closed_no_diel - 1.0).abs() < 3e-3,
            "{got_no_diel} vs {closed_no_diel}"
        );
        assert!((got / closed - 1.0).abs() < 3e-3, "{got} vs {closed}");
        // The suppression matters here: ½ ln(1 + k_p²/k_c²) = 0.45 of the ≈ 9 of the logarithms,
        // 5 % fewer photons above the cut.
        assert!(got < 0.96 * got_no_diel, "{got} vs {got_no_diel}");
    }

    #[test]
    fn photon_angles_follow_modified_tsai() {
        // ⟨u⟩ of f(u) ∝ u e^{−au} + d u e^{−3au}: weights 9/(9+d) and d/(9+d) of Gamma(2, a) and
        // Gamma(2, 3a), means 2/a and 2/(3a): ⟨u⟩ = (2/a)(9 + d/3)/(9 + d) = 2.0 for a = 0.625,
        // d = 27. σ_u ≈ 2.3, so with 200 000 draws 5σ of the mean is 0.026.
        let mut rng = RandomStream::new(5, 0, 0);
        let e_tot = 1000.0 + ELECTRON_MASS;
        let n = 200_000;
        let mean_u: f64 = (0..n)
            .map(|_| sample_tsai_angle(e_tot, &mut rng) * e_tot / ELECTRON_MASS)
            .sum::<f64>()
            / n as f64;
        let want = 2.0 / TSAI_A * (9.0 + TSAI_D / 3.0) / (9.0 + TSAI_D);
        assert!((mean_u - want).abs() < 0.026, "{mean_u} vs {want}");
        // At 1 MeV the cap θ ≤ π bites but every angle is physical.
        for _ in 0..10_000 {
            let th = sample_tsai_angle(1.0 + ELECTRON_MASS, &mut rng);
            assert!((0.0..=std::f64::consts::PI).contains(&th));
        }
        // The photon leaves along the e± direction to within ~mc²/E.
        let s = sample(&lead(), 1000.0, [1.0, 0.0, 0.0], 0.1, &mut rng);
        assert!(s.dir[0] > 0.99 && ((s.dir[0].powi(2) + s.dir[1].powi(2) + s.dir[2].powi(2)) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn edge_cases_and_compounds() {
        assert_eq!(dxs_dk(82.0, 10.0, 10.5, 0.0), 0.0);
        assert_eq!(dxs_dk(82.0, 10.0, 0.0, 0.0), 0.0);
        assert_eq!(xs_per_atom(82.0, 1.0, 1.0, 0.0), 0.0);
        assert_eq!(macro_xs(&lead(), 0.05, 0.1), 0.0);
        // restricted + above-cut loss = unrestricted.
        let pb = lead();
        let t = 300.0;
        let kp2 = dielectric_k2(&pb, t);
        let above = pb.atom_density[0] * integrate_spectrum(82.0, t, 1.0, t, kp2, 1);
        let sum = restricted_loss(&pb, t, 1.0) + above;
        assert!((sum / restricted_loss(&pb, t, t) - 1.0).abs() < 1e-9);
        // Water: element choice follows n_i σ_i.
        let water = ShowerMaterial::from_toml_str(
            "name = \"water\"\ndensity = 1.0\nI_eV = 78\n[[elements]]\nZ = 1\nA = 1.008\nfraction = 0.111894\n[[elements]]\nZ = 8\nA = 15.999\nfraction = 0.888106\n",
            std::path::Path::new("water.toml"),
        )
        .unwrap();
        let (t, kc) = (100.0, 1.0);
        let kp2 = dielectric_k2(&water, t);
        let w_h = water.atom_density[0] * xs_per_atom(1.0, t, kc, kp2);
        let p_h = w_h / macro_xs(&water, t, kc);
        let mut rng = RandomStream::new(3, 0, 0);
        let n = 20_000;
        let hits = (0..n).filter(|_| select_element(&water, t, kc, &mut rng) == 0).count() as f64;
        // Binomial 5σ.
        let sd = (n as f64 * p_h * (1.0 - p_h)).sqrt();
        assert!((hits - n as f64 * p_h).abs() < 5.0 * sd, "{hits} vs {}", n as f64 * p_h);
    }
}
