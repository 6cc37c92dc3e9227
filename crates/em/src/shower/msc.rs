//! Multiple Coulomb scattering of e± in condensed history, Urban-type (L. Urban, "A model for
//! multiple scattering in Geant4", CERN-OPEN-2006-077; Geant4 Physics Reference Manual 10.3,
//! "Multiple scattering", Urban model): the transport mean free path λ₁(E), the mean deflection
//! ⟨cos θ⟩ after a true path t with λ₁ varying along the step, the true ↔ geometric path
//! conversion, the angular distribution (a central exp(−a(1 − cos θ)) part of Highland width plus
//! a 1/(b − cos θ)² tail), the lateral displacement correlated with the deflection, and the
//! "UseSafety" step limitation (the Geant4 10.3 opt0 default for e±).
//!
//! # Transport mean free path
//! Not Urban's empirical fit (its ~60 coefficients are not in the PRM): the first transport cross
//! section of the screened-Rutherford (Wentzel) cross section with Molière's screening angle,
//! with two published corrections, summed over the elements:
//! 1/λ₁ = Σ_i n_i σ₁(Z_i, E), see [`transport_xs_per_atom`]. Compared with Dirac partial-wave
//! (ELSEPA, Salvat, Jablonski & Powell, CPC 165 (2005) 157) transport cross sections of e⁻ on
//! free atoms (tests; tables as shipped in mhyounis/wiscobolt): Al 1 MeV +1.6 %, 10 MeV +1.2 %,
//! 100 MeV +18 % (the monopole nuclear form factor cuts large angles less than ELSEPA's Fermi
//! nucleus); Fe 100 keV −3.2 %, 1 MeV −0.7 %, 10 MeV −0.4 %;
//! Au 100 keV −12 %, 1 MeV −10.4 %, 10 MeV −5.9 % (the McKinley–Feshbach first-order Mott factor
//! under-corrects at high Z). So **λ₁ of lead is about 10 % too long at 1 MeV** (no Pb ELSEPA
//! table was at hand; gold, Z = 79, is the nearest), which makes e± in lead scatter ~10 % less
//! than a partial-wave model in the MeV region. Urban's own fit is quoted at a few per cent
//! against Liljequist & Ismail, J. Appl. Phys. 62 (1987) 342. The per-atom weight is Z(Z + 1)
//! (scattering on atomic electrons below the δ-ray cut, Fano's Z → Z(Z + 1)); the ELSEPA
//! comparisons use Z² (ELSEPA is elastic only).
//!
//! # Angular distribution
//! Urban's model function (PRM eq. "g(u) = p g₁(u) + (1 − p) g₂(u)", u = cos θ):
//! g₁ ∝ exp(−a(1 − u)) with a = 0.5/(1 − cos θ₀), θ₀ the Highland–Lynch–Dahl width (PDG Review
//! "Passage of particles through matter", eq. 34.15, with βcp the geometric mean of the values at
//! the start and end of the step, as in Urban's model); g₂ ∝ 1/(b − u)², a Wentzel tail whose
//! screening is tied to the core, b − 1 = (κ_t θ₀)²/2 with κ_t = [`TAIL_SCALE`] = 3; p fixed so
//! that ⟨u⟩ = ⟨cos θ⟩ of the transport theory exactly. Urban's published tail has a fitted power
//! d(Z, t/X₀) and matched b, c; those fits could not be pinned down from the PRM text at hand, so
//! the exponent is the single-scattering value d = 2 and b is tied to θ₀ (κ_t = 3 keeps the tail
//! out of the core: with κ_t = 2, 3, 4, 6 the fitted core width changes by < 1 % at 1 GeV).
//! Where no p in [0, 1] exists (θ₀ from Highland wider than the transport mean allows, or a mean
//! beyond what the tail can carry — thick steps, large angles), the whole distribution is g₁ with
//! a solved from ⟨u⟩ alone. The first two cases are how the model is tested: the width of the
//! central 98 % of θ_x = θ cos φ (the projected space angle) vs Highland (tests) — 1 GeV e⁻ in
//! 1 mm Pb and 5 mm lAr ≈ +0.5 %, 10 MeV e⁻ in 5 mm lAr ≈ +1.6 %, in 1 mm Pb ≈ +6 % (θ₀ = 0.51
//! rad there; with the projection atan(sin θ cos φ / cos θ) instead it is +24 %). The core width
//! is Highland by construction, so that test checks the sampler and the tail admixture, not the
//! physics of the width.
//!
//! # Path length and lateral displacement
//! λ₁ is linear in the true path along a step, λ₁(s) = λ₁₀(1 − αs), α = (λ₁₀ − λ₁₁)/(tλ₁₀)
//! (Urban; PRM "Path length correction"), which gives ⟨cos θ⟩ = (1 − αt)^{1/(αλ₁₀)} and
//! z = [1 − (1 − αt)^w]/(αw), w = 1 + 1/(αλ₁₀) (→ λ₁[1 − exp(−t/λ₁)] as α → 0). Where only the
//! range is known (the [`true_to_geom`]/[`geom_to_true`] API), the energy at the end of the step
//! is estimated as E·(1 − t/R) (exact for a constant stopping power; at low energy, where
//! R ∝ E^~1.7, it underestimates the end energy and so λ₁₁). The lateral displacement has the
//! mean square of Lewis' moments (H. W. Lewis, Phys. Rev. 78 (1950) 526; PRM "Lateral
//! displacement"): ⟨r²⟩ = (4λ₁²/3)[τ − (k + 1)/k + k/(k − 1) e^{−τ} − e^{−kτ}/(k(k − 1))],
//! τ = t/λ₁, k = λ₁/λ₂ = 3 (the small-angle value), which is (2k/9)·t²τ = (2/3)t²τ for small τ.
//! It is correlated with the deflection as in small-angle diffusion, where the projected
//! displacement x and angle θ_x are jointly Gaussian with ⟨θ_x²⟩ = τ, ⟨xθ_x⟩ = tτ/2,
//! ⟨x²⟩ = t²τ/3 (correlation √3/2): r = c·w + n, w the transverse part of the new direction,
//! c² = (3/4)⟨r²⟩/⟨|w|²⟩ with ⟨|w|²⟩ = ⟨sin²θ⟩ of the sampled distribution (analytic), n a Gaussian in the
//! plane ⊥ the initial direction with ⟨|n|²⟩ = ⟨r²⟩/4. It is scaled down to 0.99·safety when
//! longer (Geant4 does the same), so it never crosses a boundary.
//!
//! # Step limitation ("UseSafety")
//! At the first step of a track and after entering a volume: R_init = max(R, λ₁),
//! t_limit = max(f_r·R_init, f_s·safety), f_r = 0.04, f_s = 0.6, bounded below by
//! t_min = [`T_LIMIT_MIN`] = 10 nm (a fixed floor chosen here; Urban also uses an
//! energy-dependent minimum step that is not reproduced); t_limit is kept until the next volume.
//! No limit when the range is below the safety (the particle cannot reach a boundary).
//! Not included: Urban's positron correction to θ₀, the "skin"/boundary-crossing algorithms
//! (UseDistanceToBoundary), the single-scattering mode for very small steps.
//!
//! Units: MeV, cm.

use super::grid::LogGrid;
use super::interaction::deflect;
use super::material::ShowerMaterial;
use super::tables::TableOptions;
use super::{Particle, ELECTRON_MASS, ELECTRON_RADIUS, FINE_STRUCTURE, HBAR_C};
use std::f64::consts::{PI, TAU};
use warpdrive_core::pmath::Portable;
use warpdrive_core::RandomStream;

/// f_r of the UseSafety step limit (Geant4 10.3 default `RangeFactor` for e±).
pub const F_RANGE: f64 = 0.04;
/// f_s of the UseSafety step limit (Geant4 10.3 default `SafetyFactor`).
pub const F_SAFETY: f64 = 0.6;
/// Lower bound of the msc step limit [cm] (10 nm; see the module doc).
pub const T_LIMIT_MIN: f64 = 1e-6;
/// Tail screening angle in units of θ₀ (b − 1 = (κ_t θ₀)²/2; see the module doc).
pub const TAIL_SCALE: f64 = 3.0;
/// λ₁/λ₂ in the small-angle limit, used in Lewis' ⟨r²⟩.
pub const K_LEWIS: f64 = 3.0;
/// 2^{1/4}, the factor of the scan in [`geom_to_true`] (the correctly rounded value, equal to
/// `2f64.ppowf(0.25)`; a literal so that the CUDA twin uses the same number).
pub const FOURTH_ROOT_2: f64 = 1.189_207_115_002_721;
/// Thomas–Fermi radius a_TF = 0.885 a₀ Z^{-1/3}: the 0.885 [Molière 1947].
const THOMAS_FERMI: f64 = 0.885;
/// Nuclear radius R = 1.2 A^{1/3} fm [cm].
const NUCLEAR_R0: f64 = 1.2e-13;

/// (pc)² [MeV²] and β² of an e± of kinetic energy `t` [MeV].
#[inline]
fn momentum2_beta2(t: f64) -> (f64, f64) {
    let p2 = t * (t + 2.0 * ELECTRON_MASS);
    let e = t + ELECTRON_MASS;
    (p2, p2 / (e * e))
}

/// Molière's screening parameter A = χ_a²/4 with χ_a² = χ₀²(1.13 + 3.76 (αZ/β)²),
/// χ₀ = ħ/(p a_TF) = α mc² Z^{1/3}/(0.885 pc) (G. Molière, Z. Naturforsch. 2a (1947) 133;
/// H. A. Bethe, Phys. Rev. 89 (1953) 1256, eqs. 2–4). The screened Rutherford cross section is
/// dσ/dΩ ∝ 1/(1 − cos θ + 2A)².
#[must_use]
pub fn screening_parameter(z: f64, t: f64) -> f64 {
    let (p2, b2) = momentum2_beta2(t);
    let chi0_2 = (FINE_STRUCTURE * ELECTRON_MASS * z.pcbrt() / THOMAS_FERMI).powi(2) / p2;
    0.25 * chi0_2 * (1.13 + 3.76 * (FINE_STRUCTURE * z).powi(2) / b2)
}

/// Nuclear-size parameter B of the form factor 1/(1 + (1 − cos θ)/(2B)) that multiplies the
/// screened Rutherford cross section: matching F²(q) ≈ 1 − q²⟨r²⟩/3 of a uniform sphere
/// (⟨r²⟩ = 3R²/5, R = 1.2 A^{1/3} fm, q² = 2(p/ħ)²(1 − cos θ)) gives B = 1.25 (ħc/(pc R))².
#[must_use]
pub fn nuclear_parameter(a_mass: f64, t: f64) -> f64 {
    let (p2, _) = momentum2_beta2(t);
    let r = NUCLEAR_R0 * a_mass.pcbrt();
    1.25 * HBAR_C * HBAR_C / (p2 * r * r)
}

/// ∫₀² u/((u + a)²(1 + u/b)) du with a = 2A, b = 2B (partial fractions): the transport integral
/// of the screened Rutherford cross section with the nuclear form factor. For b → ∞ it is
/// ln(1 + 1/A) − 1/(1 + A), the Wentzel result.
#[must_use]
pub fn transport_integral(screening: f64, nuclear: f64) -> f64 {
    let a = 2.0 * screening;
    let b = 2.0 * nuclear;
    let p = b * b / ((b - a) * (b - a));
    let q = -a * b / (b - a);
    p * (2.0 / a).pln_1p() + q * (1.0 / a - 1.0 / (2.0 + a)) - p * (2.0 / b).pln_1p()
}

/// First transport cross section per atom [cm²] of an e⁻ or e⁺ of kinetic energy `t` [MeV] on an
/// atom (Z, A [g/mol]), with weight `z2` for Z² (Z(Z + 1) to include the atomic electrons):
///
/// σ₁ = 2π z2 (r_e mc²/(β pc))² [I(A, B) + M],
///
/// I the screened-Rutherford transport integral with Molière's screening A and nuclear size B
/// ([`transport_integral`]), M = −β² ± παZβ (+ for e⁻, − for e⁺) the first-order Mott
/// correction: the McKinley–Feshbach ratio R = 1 − β² sin²(θ/2) ± παZβ sin(θ/2)(1 − sin(θ/2))
/// (W. A. McKinley and H. Feshbach, Phys. Rev. 74 (1948) 1759) integrated with weight
/// (1 − cos θ) over the unscreened cross section, to leading order in A.
#[must_use]
pub fn transport_xs_per_atom(particle: Particle, z: f64, a_mass: f64, z2: f64, t: f64) -> f64 {
    let (p2, b2) = momentum2_beta2(t);
    let k = z2 * (ELECTRON_RADIUS * ELECTRON_MASS).powi(2) / (b2 * p2);
    let sign = if particle == Particle::Positron { -1.0 } else { 1.0 };
    let mott = -b2 + sign * PI * FINE_STRUCTURE * z * b2.sqrt();
    let i = transport_integral(screening_parameter(z, t), nuclear_parameter(a_mass, t));
    2.0 * PI * k * (i + mott).max(0.0)
}

/// The longest λ₁ [cm] tabulated: "no scattering". Below a few keV a positron's σ₁ on a
/// high-Z atom is 0 ([`transport_xs_per_atom`] clamps I + M, where the first-order Mott term
/// −παZβ outweighs the screened integral: Pb below ~6 keV), so 1/Σ nσ₁ is ∞. An ∞ in the
/// table made NaN downstream — ∞ − ∞ in the grid's interpolation, 0·∞ in z(t) — and a NaN
/// geometric length put the positron at a NaN position (its annihilation photons too); in a
/// field the curved step never reached its NaN length and ran its chord loop to the cap
/// (seconds per step: issue #31's slow GPU runs of Celeritas' simple-cms). 10²⁰ cm keeps every
/// quantity finite and changes no step: z(t) = t, ⟨cos θ⟩ = 1 to double precision.
pub const LAMBDA1_MAX: f64 = 1e20;

/// Transport mean free path λ₁ [cm] in a material: 1/λ₁ = Σ_i n_i σ₁(Z_i) with Z(Z + 1),
/// at most [`LAMBDA1_MAX`].
#[must_use]
pub fn lambda1_formula(m: &ShowerMaterial, particle: Particle, t: f64) -> f64 {
    let inv: f64 = m
        .elements
        .iter()
        .zip(&m.atom_density)
        .map(|(e, n)| n * transport_xs_per_atom(particle, e.z, e.a, e.z * (e.z + 1.0), t))
        .sum();
    (1.0 / inv).min(LAMBDA1_MAX)
}

/// λ₁ of e⁻ and e⁺ in one material, tabulated, plus what the sampler needs of the material.
#[derive(Clone, Debug, PartialEq)]
pub struct MscTables {
    /// λ₁ [cm] of e⁻.
    pub electron: LogGrid,
    /// λ₁ [cm] of e⁺.
    pub positron: LogGrid,
    /// Radiation length [cm] (Highland's θ₀).
    pub radiation_length: f64,
}

impl MscTables {
    /// λ₁ of e⁻ and e⁺ in `m` on the grid of `opts` (linear interpolation in E, end values
    /// outside).
    #[must_use]
    pub fn build(m: &ShowerMaterial, opts: &TableOptions) -> MscTables {
        let grid = |p| LogGrid::new(opts.e_min, opts.e_max, opts.bins_per_decade, |e| lambda1_formula(m, p, e));
        MscTables {
            electron: grid(Particle::Electron),
            positron: grid(Particle::Positron),
            radiation_length: m.radiation_length,
        }
    }

    /// Transport mean free path λ₁ [cm] at kinetic energy `t` [MeV].
    #[must_use]
    pub fn lambda1(&self, particle: Particle, t: f64) -> f64 {
        match particle {
            Particle::Electron => self.electron.eval(t),
            Particle::Positron => self.positron.eval(t),
            Particle::Gamma => panic!("multiple scattering of a photon"),
        }
    }
}

/// Per-track state of the UseSafety step limitation; reset (or pass `entered_volume`) when the
/// track enters a volume.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MscStepState {
    /// R_init = max(range, λ₁) at the first step in the volume [cm].
    pub range_init: f64,
    /// The true-path limit kept for the steps in this volume [cm].
    pub t_limit: f64,
    /// Whether `range_init`/`t_limit` were set (false: the next call is a first step).
    pub initialised: bool,
}

impl MscStepState {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

/// The msc limit on the true path length [cm] of the next step (UseSafety, module doc):
/// at the first step or when `entered_volume`, t_limit = max(f_r·max(R, λ₁), f_s·safety, t_min)
/// is stored in `state`; every step returns min(t_limit, R), or R when R < safety. The
/// stepping loop takes min(this, physics step).
#[must_use]
pub fn limit_step(
    tables: &MscTables,
    state: &mut MscStepState,
    particle: Particle,
    t: f64,
    range: f64,
    safety: f64,
    entered_volume: bool,
) -> f64 {
    if entered_volume || !state.initialised {
        let l1 = tables.lambda1(particle, t);
        state.range_init = range.max(l1);
        state.t_limit = (F_RANGE * state.range_init).max(F_SAFETY * safety).max(T_LIMIT_MIN);
        state.initialised = true;
    }
    if range < safety {
        return range;
    }
    state.t_limit.min(range)
}

/// Coefficients of the linear λ₁ along a step: (λ₁₀, α) with α = (λ₁₀ − λ₁₁)/(t λ₁₀) ≥ 0.
#[inline]
fn linear_lambda(tables: &MscTables, particle: Particle, t_start: f64, t_end: f64, true_len: f64) -> (f64, f64) {
    let l0 = tables.lambda1(particle, t_start);
    let l1 = tables.lambda1(particle, t_end.max(0.0));
    let alpha = if true_len > 0.0 && l1 < l0 {
        (l0 - l1) / (true_len * l0)
    } else {
        0.0
    };
    (l0, alpha)
}

/// ⟨cos θ⟩ after `true_len` with λ₁(s) = λ₁₀(1 − αs): (1 − αt)^{1/(αλ₁₀)}, exp(−t/λ₁₀) at α = 0.
#[must_use]
pub fn mean_cos_linear(l0: f64, alpha: f64, true_len: f64) -> f64 {
    if alpha * true_len < 1e-12 {
        return (-true_len / l0).pexp();
    }
    ((-alpha * true_len).pln_1p() / (alpha * l0)).pexp()
}

/// Mean geometric path z(t) = [1 − (1 − αt)^w]/(αw), w = 1 + 1/(αλ₁₀) (Urban; PRM "Path length
/// correction"); λ₁[1 − exp(−t/λ₁)] at α = 0.
#[must_use]
pub fn geom_linear(l0: f64, alpha: f64, true_len: f64) -> f64 {
    let aw = alpha + 1.0 / l0;
    if alpha * true_len < 1e-12 {
        return -(-true_len / l0).pexp_m1() * l0;
    }
    let w = aw / alpha;
    -(w * (-alpha * true_len).pln_1p()).pexp_m1() / aw
}

/// ⟨cos θ⟩ after a step of true length `true_len` [cm] from kinetic energy `t_start` to `t_end`.
#[must_use]
pub fn mean_cos(tables: &MscTables, particle: Particle, t_start: f64, t_end: f64, true_len: f64) -> f64 {
    let (l0, alpha) = linear_lambda(tables, particle, t_start, t_end, true_len);
    mean_cos_linear(l0, alpha, true_len)
}

/// Geometric (straight-line, along the initial direction) length of a step of true length
/// `true_len` from energy `t_start` to `t_end` (both known).
#[must_use]
pub fn true_to_geom_energies(tables: &MscTables, particle: Particle, t_start: f64, t_end: f64, true_len: f64) -> f64 {
    let (l0, alpha) = linear_lambda(tables, particle, t_start, t_end, true_len);
    geom_linear(l0, alpha, true_len)
}

/// End energy of a true path `true_len` from kinetic energy `t` with residual range `range`,
/// E(1 − t/R) (module doc).
#[inline]
fn end_energy(t: f64, true_len: f64, range: f64) -> f64 {
    if range > 0.0 {
        t * (1.0 - true_len / range).max(0.0)
    } else {
        t
    }
}

/// Geometric length [cm] of a true path `true_len` [cm] from kinetic energy `t` [MeV] with
/// residual range `range` [cm].
#[must_use]
pub fn true_to_geom(tables: &MscTables, particle: Particle, t: f64, true_len: f64, range: f64) -> f64 {
    if true_len <= 0.0 {
        return 0.0;
    }
    true_to_geom_energies(tables, particle, t, end_energy(t, true_len, range), true_len)
}

/// True path length [cm] whose geometric length is `geom_len` [cm] (the inverse of
/// [`true_to_geom`], for a step cut by a boundary): the smallest t with z(t) = `geom_len`, found
/// by a geometric scan of t ∈ [z, R] (R the range; z(t) can flatten, and with the secant λ₁ even
/// dip slightly, many λ₁ before the end of the range) followed by bisection. Returns the t of
/// the largest z when `geom_len` is beyond reach.
#[must_use]
pub fn geom_to_true(tables: &MscTables, particle: Particle, t: f64, geom_len: f64, range: f64) -> f64 {
    if geom_len <= 0.0 {
        return 0.0;
    }
    let z = |s: f64| true_to_geom(tables, particle, t, s, range);
    let t_cap = if range > 0.0 { range } else { 1e30 };
    if geom_len >= t_cap {
        return t_cap;
    }
    // Scan lo = z⁻¹ lower bound (t ≥ z) upwards by factors of 2^{1/4} to bracket the root.
    let mut lo = geom_len;
    if z(lo) >= geom_len {
        return lo;
    }
    let (mut best_t, mut best_z) = (lo, z(lo));
    let mut hi = lo;
    loop {
        let next = (hi * FOURTH_ROOT_2).min(t_cap);
        let zn = z(next);
        if zn >= geom_len {
            lo = hi;
            hi = next;
            break;
        }
        if zn > best_z {
            (best_t, best_z) = (next, zn);
        }
        if next >= t_cap {
            return best_t;
        }
        hi = next;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if z(mid) < geom_len {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Highland–Lynch–Dahl width θ₀ [rad] of the projected angle after a true path `true_len` [cm]
/// (PDG Review "Passage of particles through matter", eq. 34.15):
/// θ₀ = 13.6 MeV/(βcp) √(t/X₀) [1 + 0.038 ln(t/(X₀β²))], βcp = √(βcp(E_start)·βcp(E_end))
/// (Urban's geometric mean over the step). The bracket is floored at 0.
#[must_use]
pub fn highland_theta0(t_start: f64, t_end: f64, true_len: f64, radiation_length: f64) -> f64 {
    let bcp = |t: f64| {
        let (p2, b2) = momentum2_beta2(t);
        (p2 * b2).sqrt()
    };
    let (_, b2s) = momentum2_beta2(t_start);
    let (_, b2e) = momentum2_beta2(t_end);
    let beta2 = (b2s * b2e).sqrt();
    let y = true_len / radiation_length;
    let c = (1.0 + 0.038 * (y / beta2).pln()).max(0.0);
    13.6 / (bcp(t_start) * bcp(t_end)).sqrt() * y.sqrt() * c
}

/// ⟨1 − u⟩ of g₁ ∝ exp(−a(1 − u)) on [−1, 1]: 1/a − 2/(e^{2a} − 1) = 1 − L(a), L the Langevin
/// function; below a = 0.1 its series 1 − a/3 + a³/45 − 2a⁵/945 + a⁷/4725 − 2a⁹/93555 (next term
/// < 3e-17 there; the closed form cancels at small a: 1/a and 2/(e^{2a} − 1) agree to 1 − a/3 of
/// 1/a, leaving an error of ≈ ε/a).
#[must_use]
pub fn core_mean(a: f64) -> f64 {
    if a < 0.1 {
        let a2 = a * a;
        1.0 - a * (1.0 / 3.0 - a2 * (1.0 / 45.0 - a2 * (2.0 / 945.0 - a2 * (1.0 / 4725.0 - a2 * (2.0 / 93555.0)))))
    } else if a > 300.0 {
        1.0 / a
    } else {
        1.0 / a - 2.0 / (2.0 * a).pexp_m1()
    }
}

/// ⟨1 − u⟩ of g₂ ∝ 1/(1 − u + c)² on [−1, 1], c = b − 1 = 2A: 2A[(1 + A) ln(1 + 1/A) − 1].
#[must_use]
pub fn tail_mean(c: f64) -> f64 {
    let a = 0.5 * c;
    c * ((1.0 + a) * (1.0 / a).pln_1p() - 1.0)
}

/// Limits of the core parameter a: e⁻³⁰ and e⁶⁰ (those of the bisection this replaced).
const CORE_A_MIN: f64 = 9.357_622_968_840_175e-14;
const CORE_A_MAX: f64 = 1.142_007_389_815_684_2e26;

/// d⟨1 − u⟩/da of g₁ (see [`core_mean`]): 1/sinh²a − 1/a² (its series −1/3 + a²/15 − 2a⁴/189 +
/// a⁶/675 below a = 0.1, −1/a² above 300 where core_mean is 1/a). Only Newton's step uses it.
#[must_use]
pub fn core_mean_slope(a: f64) -> f64 {
    if a < 0.1 {
        let a2 = a * a;
        -1.0 / 3.0 + a2 * (1.0 / 15.0 - a2 * (2.0 / 189.0 - a2 * (1.0 / 675.0)))
    } else if a > 300.0 {
        -1.0 / (a * a)
    } else {
        let m = (-2.0 * a).pexp_m1();
        4.0 * (-2.0 * a).pexp() / (m * m) - 1.0 / (a * a)
    }
}

/// The a of g₁ whose ⟨1 − u⟩ is `d` ∈ (0, 1). ⟨1 − u⟩ = 1 − L(a) with L(a) = coth a − 1/a the
/// Langevin function, so a = L⁻¹(1 − d): start from Cohen's Padé approximant of the inverse
/// Langevin function, L⁻¹(y) ≈ y(3 − y²)/(1 − y²) (A. Cohen, Rheol. Acta 30 (1991) 270; within
/// 5 %), then Newton steps on core_mean(a) = d. core_mean is convex and decreasing, so from
/// the first step on the iterates approach the root from below, monotonically and
/// quadratically (3–5 steps). a = 1/d exactly where core_mean is 1/a (a > 300); a stays within
/// [e⁻³⁰, e⁶⁰]. (A 200-step bisection did this before: on the GPU it kept warps at 4 of 32
/// lanes, docs/performance/em.md.)
#[must_use]
pub fn core_a_from_mean(d: f64) -> f64 {
    if d.is_nan() || d >= core_mean(CORE_A_MIN) {
        return CORE_A_MIN;
    }
    if d <= 1.0 / CORE_A_MAX {
        return CORE_A_MAX;
    }
    if d <= 1.0 / 300.0 {
        return 1.0 / d;
    }
    let y = 1.0 - d;
    let mut a = y * (3.0 - y * y) / (1.0 - y * y);
    for _ in 0..12 {
        let step = (core_mean(a) - d) / core_mean_slope(a);
        let next = (a - step).clamp(0.5 * a, 2.0 * a);
        let done = (next - a).abs() <= 4.0 * f64::EPSILON * a;
        a = next;
        if done {
            break;
        }
    }
    a.clamp(CORE_A_MIN, CORE_A_MAX)
}

/// Parameters of the angular distribution: p, a of the core, c = b − 1 of the tail.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AngularParams {
    pub p: f64,
    pub a: f64,
    pub c: f64,
}

/// The model function's parameters for ⟨1 − u⟩ = `d` and Highland width `theta0` (module doc).
#[must_use]
pub fn angular_params(d: f64, theta0: f64) -> AngularParams {
    let pure = |d: f64| AngularParams {
        p: 1.0,
        a: core_a_from_mean(d),
        c: 1.0,
    };
    if !(theta0 > 0.0 && theta0 < 0.5 * PI) {
        return pure(d);
    }
    let a = 0.5 / (1.0 - theta0.pcos());
    let c = 0.5 * (TAIL_SCALE * theta0).powi(2);
    let (m1, m2) = (core_mean(a), tail_mean(c));
    if m1 <= d && d <= m2 && m2 > m1 {
        AngularParams {
            p: (m2 - d) / (m2 - m1),
            a,
            c,
        }
    } else {
        pure(d)
    }
}

/// ⟨(1 − u)²⟩ of g₁: [2/a³ − e^{−2a}(4/a + 4/a² + 2/a³)]·a/(1 − e^{−2a}) (4/3 − 2a/3 for
/// a → 0, the uniform limit).
#[must_use]
pub fn core_mean2(a: f64) -> f64 {
    if a < 1e-3 {
        return 4.0 / 3.0 - 2.0 * a / 3.0;
    }
    let e = (-2.0 * a).pexp();
    (2.0 / (a * a * a) - e * (4.0 / a + 4.0 / (a * a) + 2.0 / (a * a * a))) * a / -(-2.0 * a).pexp_m1()
}

/// ⟨(1 − u)²⟩ of g₂ ∝ 1/(1 − u + c)²: [2 − 2c ln(1 + 2/c) + 2c/(2 + c)]·c(2 + c)/2.
#[must_use]
pub fn tail_mean2(c: f64) -> f64 {
    (2.0 - 2.0 * c * (2.0 / c).pln_1p() + 2.0 * c / (2.0 + c)) * c * (2.0 + c) / 2.0
}

impl AngularParams {
    /// ⟨sin²θ⟩ = 2⟨1 − u⟩ − ⟨(1 − u)²⟩ of the model function.
    #[must_use]
    pub fn mean_sin2(&self) -> f64 {
        let m1 = core_mean(self.a);
        let m2 = if self.p < 1.0 { tail_mean(self.c) } else { 0.0 };
        let q1 = core_mean2(self.a);
        let q2 = if self.p < 1.0 { tail_mean2(self.c) } else { 0.0 };
        let mean = self.p * m1 + (1.0 - self.p) * m2;
        let mean2 = self.p * q1 + (1.0 - self.p) * q2;
        (2.0 * mean - mean2).max(0.0)
    }
}

/// Draw u = cos θ from p g₁ + (1 − p) g₂: g₁ by inversion, x = 1 − u = −ln(1 − ξ(1 − e^{−2a}))/a;
/// g₂ by inversion, x = 2cξ/(2 + c − 2ξ).
#[must_use]
pub fn sample_cos(params: &AngularParams, rng: &mut RandomStream) -> f64 {
    let AngularParams { p, a, c } = *params;
    let xi = rng.uniform_f64();
    let x = if p >= 1.0 || rng.uniform_f64() <= p {
        -(-xi * -(-2.0 * a).pexp_m1()).pln_1p() / a
    } else {
        2.0 * c * xi / (2.0 + c - 2.0 * xi)
    };
    (1.0 - x).clamp(-1.0, 1.0)
}

/// Lewis' mean square lateral displacement [cm²] after a true path `true_len` with transport
/// mean free path `l1` and k = λ₁/λ₂ (module doc); the small-τ series (2k/9) t² τ below τ = 1e-3.
#[must_use]
pub fn lateral_r2(l1: f64, k: f64, true_len: f64) -> f64 {
    let tau = true_len / l1;
    if tau < 1e-3 {
        return 2.0 * k / 9.0 * true_len * true_len * tau * (1.0 - (k + 1.0) / 4.0 * tau);
    }
    let r2 = 4.0 * l1 * l1 / 3.0 * (tau - (k + 1.0) / k + k / (k - 1.0) * (-tau).pexp() - (-k * tau).pexp() / (k * (k - 1.0)));
    r2.max(0.0)
}

/// New direction and lateral displacement after an msc step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MscResult {
    /// Unit direction at the end of the step.
    pub dir: [f64; 3],
    /// Displacement [cm] to add to the end point of the straight geometric step; ⊥ the initial
    /// direction, shorter than the safety.
    pub displacement: [f64; 3],
}

/// Sample the deflection and lateral displacement of a step of true length `true_len` [cm] from
/// kinetic energy `t_start` to `t_end` [MeV], initial unit direction `dir`; `safety` [cm] is the
/// distance from the end point of the geometric step to the nearest boundary (≤ 0: no
/// displacement).
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn sample(
    tables: &MscTables,
    particle: Particle,
    t_start: f64,
    t_end: f64,
    true_len: f64,
    dir: [f64; 3],
    safety: f64,
    rng: &mut RandomStream,
) -> MscResult {
    let unchanged = MscResult {
        dir,
        displacement: [0.0; 3],
    };
    if true_len <= 0.0 {
        return unchanged;
    }
    let (l0, alpha) = linear_lambda(tables, particle, t_start, t_end, true_len);
    let m = mean_cos_linear(l0, alpha, true_len);
    let d = 1.0 - m;
    if d <= 1e-14 {
        return unchanged;
    }
    let theta0 = highland_theta0(t_start, t_end.max(1e-9 * t_start), true_len, tables.radiation_length);
    let params = angular_params(d, theta0);
    let u = sample_cos(&params, rng);
    let phi = TAU * rng.uniform_f64();
    let new_dir = deflect(dir, u, phi);

    let mut displacement = [0.0; 3];
    if safety > 0.0 {
        // Effective constant λ₁ with the same ⟨cos θ⟩, τ = −ln⟨cos θ⟩.
        let tau = -m.pln();
        let l_eff = true_len / tau;
        let r2 = lateral_r2(l_eff, K_LEWIS, true_len);
        let sin2 = params.mean_sin2();
        let corr = if sin2 > 0.0 { (0.75 * r2 / sin2).sqrt() } else { 0.0 };
        let sigma = (r2 / 8.0).sqrt();
        // Two Gaussians (Box–Muller); uniform_f64 is in (0, 1].
        let rho = sigma * (-2.0 * rng.uniform_f64().pln()).sqrt();
        let psi = TAU * rng.uniform_f64();
        let (e1, e2) = perpendicular_basis(dir);
        let dot = new_dir[0] * dir[0] + new_dir[1] * dir[1] + new_dir[2] * dir[2];
        for k in 0..3 {
            let w = new_dir[k] - dot * dir[k];
            displacement[k] = corr * w + rho * (psi.pcos() * e1[k] + psi.psin() * e2[k]);
        }
        let r = (displacement[0].powi(2) + displacement[1].powi(2) + displacement[2].powi(2)).sqrt();
        let r_max = 0.99 * safety;
        if r > r_max {
            let s = r_max / r;
            for v in &mut displacement {
                *v *= s;
            }
        }
    }
    MscResult {
        dir: new_dir,
        displacement,
    }
}

/// Two unit vectors ⊥ `d` and each other.
fn perpendicular_basis(d: [f64; 3]) -> ([f64; 3], [f64; 3]) {
    let a = if d[0].abs() < 0.6 { [1.0, 0.0, 0.0] } else { [0.0, 1.0, 0.0] };
    let dot = a[0] * d[0] + a[1] * d[1] + a[2] * d[2];
    let mut e1 = [a[0] - dot * d[0], a[1] - dot * d[1], a[2] - dot * d[2]];
    let n = (e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]).sqrt();
    for v in &mut e1 {
        *v /= n;
    }
    let e2 = [
        d[1] * e1[2] - d[2] * e1[1],
        d[2] * e1[0] - d[0] * e1[2],
        d[0] * e1[1] - d[1] * e1[0],
    ];
    (e1, e2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(m: &ShowerMaterial) -> MscTables {
        MscTables::build(m, &TableOptions::default())
    }

    /// The a of core_mean(a) = d by bisection in ln a (what the model used before Newton).
    fn core_a_by_bisection(d: f64) -> f64 {
        let (mut lo, mut hi) = (-30.0f64, 60.0f64);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if core_mean(mid.pexp()) > d {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (0.5 * (lo + hi)).pexp()
    }

    #[test]
    fn core_a_from_mean_inverts_core_mean_as_the_bisection_does() {
        // d from 1e-8 (a = 1e8) to 1 − 1e-12 (a ≈ 3e-12), 4 000 points, and the edges.
        let mut worst = 0.0f64;
        for i in 0..=4000 {
            let x = f64::from(i) / 4000.0;
            for d in [(1e-8f64).powf(1.0 - x), 1.0 - (1e-12f64).powf(1.0 - x) * 0.999] {
                let (a, b) = (core_a_from_mean(d), core_a_by_bisection(d));
                // How well d fixes a: one rounding of d (ε·d) moves the root by ε·d/|slope|;
                // near d = 1 (a → 0) that is most of a's digits.
                let conditioning = f64::EPSILON * d / (core_mean_slope(b).abs() * b);
                worst = worst.max((a / b - 1.0).abs() / (1e-9 + 16.0 * conditioning));
                // As good a root as the bisection's (core_mean's own rounding limits both).
                let (ra, rb) = ((core_mean(a) - d).abs(), (core_mean(b) - d).abs());
                // The closed form's rounding is ≈ ε/a for 0.1 ≤ a ≤ 1, ≈ ε·d elsewhere.
                let noise = f64::EPSILON * d.max((1.0 / b).min(10.0));
                assert!(ra <= 2.0 * rb + 4.0 * noise, "d {d}: a {a} (residual {ra}) vs {b} ({rb})");
            }
        }
        assert!(
            worst < 1.0,
            "relative difference from the bisection {worst} × (1e-9 + 16 × conditioning)"
        );
        for d in [0.0, -1.0, 1.0, 2.0, f64::NAN] {
            assert_eq!(core_a_from_mean(d), core_a_by_bisection(d).clamp(CORE_A_MIN, CORE_A_MAX), "d {d}");
        }
        eprintln!("largest relative difference from the bisection: {worst:.2e} × (1e-9 + 16 × conditioning)");
    }

    #[test]
    fn core_mean_slope_is_the_derivative() {
        for a in [1e-3, 0.009, 0.099, 0.101, 0.3, 1.0, 7.0, 299.0, 301.0, 1e4] {
            let h = 1e-6 * a;
            let numeric = (core_mean(a + h) - core_mean(a - h)) / (2.0 * h);
            let s = core_mean_slope(a);
            assert!((numeric / s - 1.0).abs() < 1e-4, "a {a}: {s} vs numeric {numeric}");
        }
    }

    /// ELSEPA (Salvat, Jablonski & Powell, Comput. Phys. Commun. 165 (2005) 157; DF atom, Fermi
    /// nucleus, Furness–McCarthy exchange, free atoms) first transport cross sections of e⁻
    /// [cm²], as tabulated in mhyounis/wiscobolt "Physics data/Electron elastic/ELSEPA/<Z>/".
    /// Elastic only, so compared with the Z² weight. Tolerances: what the model reaches (module
    /// doc), not the accuracy one would like for Au.
    #[test]
    fn transport_cross_sections_vs_elsepa() {
        let cases: [(f64, f64, f64, f64, f64); 8] = [
            // Z, A, T [MeV], ELSEPA σ₁ [cm²], tolerance
            (13.0, 26.98, 1.0, 1.15619e-22, 0.03),
            (13.0, 26.98, 10.0, 2.65976e-24, 0.03),
            (26.0, 55.85, 0.1, 1.76298e-20, 0.04),
            (26.0, 55.85, 1.0, 4.59664e-22, 0.03),
            (26.0, 55.85, 10.0, 1.05943e-23, 0.03),
            (79.0, 196.97, 0.1, 1.44152e-19, 0.13),
            (79.0, 196.97, 1.0, 4.56250e-21, 0.11),
            (79.0, 196.97, 10.0, 1.01816e-22, 0.07),
        ];
        for (z, a, t, reference, tol) in cases {
            let s = transport_xs_per_atom(Particle::Electron, z, a, z * z, t);
            let rel = s / reference - 1.0;
            assert!(rel.abs() < tol, "Z = {z}, T = {t} MeV: {s:e} vs ELSEPA {reference:e} ({rel:+.3})");
        }
        // Positrons scatter less than electrons (McKinley–Feshbach sign), more so at high Z.
        let e = transport_xs_per_atom(Particle::Electron, 82.0, 207.2, 82.0 * 82.0, 1.0);
        let p = transport_xs_per_atom(Particle::Positron, 82.0, 207.2, 82.0 * 82.0, 1.0);
        assert!(p < 0.8 * e, "{p:e} {e:e}");
    }

    /// λ₁ of lead at 1 MeV: n σ₁ with Z(Z + 1). Nearest published partial-wave value: gold
    /// (ELSEPA σ₁ = 4.5625e-21 cm² at 1 MeV); scaled to lead by Z(Z + 1)/Z² and the atom
    /// densities this gives λ₁(Pb) ≈ 1/(3.299e22 · 4.5625e-21 · (82/79)² · 83/82) = 6.09e-3 cm
    /// (the Z² scaling between neighbours is an approximation of a few %). The model is ~10 %
    /// longer (module doc): tolerance 15 %.
    #[test]
    fn low_energy_positrons_in_lead_keep_finite_lengths() {
        // σ₁ of a positron in Pb is clamped to 0 below a few keV: λ₁ must stay finite, and
        // so must the geometric length and ⟨cos θ⟩ of its last steps (they were NaN).
        let tb = tables(&ShowerMaterial::lead());
        assert_eq!(transport_xs_per_atom(Particle::Positron, 82.0, 207.2, 82.0 * 83.0, 0.002), 0.0);
        assert!(tb.positron.value.iter().all(|v| v.is_finite() && *v > 0.0 && *v <= LAMBDA1_MAX));
        for &(t, len) in &[(0.0048279553323760105, 1.811227699464049e-5), (0.0035, 1.1e-5), (0.02, 2e-4)] {
            let z = true_to_geom(&tb, Particle::Positron, t, len, len);
            assert!(z.is_finite() && z > 0.0 && z <= len, "z({t} MeV, {len} cm) = {z}");
            let c = mean_cos(&tb, Particle::Positron, t, 0.0, len);
            assert!(c.is_finite() && c <= 1.0, "<cos> = {c}");
        }
    }

    #[test]
    fn lambda1_of_lead_at_1_mev() {
        let pb = ShowerMaterial::lead();
        let tb = tables(&pb);
        let l1 = tb.lambda1(Particle::Electron, 1.0);
        assert!((l1 / lambda1_formula(&pb, Particle::Electron, 1.0) - 1.0).abs() < 1e-3);
        let n = pb.atom_density[0];
        let reference = 1.0 / (n * 4.5625e-21 * (82.0f64 / 79.0).powi(2) * 83.0 / 82.0);
        assert!((reference - 6.09e-3).abs() < 0.01e-3, "{reference}");
        let rel = l1 / reference - 1.0;
        assert!(rel > 0.0 && rel < 0.15, "λ₁(Pb, 1 MeV) = {l1} cm vs {reference} ({rel:+.3})");
        // λ₁ grows with energy and is longer in argon.
        let ar = tables(&ShowerMaterial::liquid_argon());
        assert!(tb.lambda1(Particle::Electron, 10.0) > 10.0 * l1);
        assert!(ar.lambda1(Particle::Electron, 1.0) > 10.0 * l1);
    }

    #[test]
    fn true_geom_inverse() {
        let pb = ShowerMaterial::lead();
        let tb = tables(&pb);
        for &(t, range) in &[(1.0, 0.08), (10.0, 0.6), (0.05, 2e-3), (1000.0, 50.0)] {
            for frac in [1e-6, 1e-3, 0.01, 0.04, 0.2, 0.5, 0.9] {
                let s = frac * range;
                // Only where z(t) is well conditioned, dz/dt = ⟨cos θ⟩ > 0.01 (τ ≲ 4.6).
                let e_end = t * (1.0 - frac);
                if mean_cos(&tb, Particle::Electron, t, e_end, s) < 0.01 {
                    continue;
                }
                let z = true_to_geom(&tb, Particle::Electron, t, s, range);
                assert!(z > 0.0 && z <= s, "{t} {s} {z}");
                let back = geom_to_true(&tb, Particle::Electron, t, z, range);
                assert!((back / s - 1.0).abs() < 1e-10, "T = {t}, t = {s}: z = {z}, back {back}");
            }
        }
        // Constant-λ form for a step without energy loss: z = λ₁(1 − e^{−t/λ₁}).
        let l1 = tb.lambda1(Particle::Electron, 2.0);
        let z = true_to_geom_energies(&tb, Particle::Electron, 2.0, 2.0, 0.5 * l1);
        assert!((z / (l1 * (1.0 - (-0.5f64).exp())) - 1.0).abs() < 1e-12);
        // Linear λ₁: dz/dt = ⟨cos θ⟩ (numerical derivative).
        let (l0, alpha) = (0.1, 2.0);
        let (t, h) = (0.2, 1e-6);
        let dz = (geom_linear(l0, alpha, t + h) - geom_linear(l0, alpha, t - h)) / (2.0 * h);
        assert!((dz / mean_cos_linear(l0, alpha, t) - 1.0).abs() < 1e-6);
    }

    /// Projected angles θ_x = θ cos φ of `n` samples.
    /// Also ⟨cos θ⟩ and its standard error.
    fn projected(tb: &MscTables, t: f64, len: f64, n: usize, seed: u64) -> (Vec<f64>, f64, f64) {
        let mut rng = RandomStream::new(seed, 0, 0);
        let mut th = Vec::with_capacity(n);
        let (mut sum_cos, mut sum_x2) = (0.0, 0.0);
        for _ in 0..n {
            let r = sample(tb, Particle::Electron, t, t, len, [0.0, 0.0, 1.0], 0.0, &mut rng);
            let u = r.dir[2].clamp(-1.0, 1.0);
            sum_cos += u;
            sum_x2 += (1.0 - u) * (1.0 - u);
            let st = (r.dir[0] * r.dir[0] + r.dir[1] * r.dir[1]).sqrt();
            let theta = u.acos();
            th.push(if st > 0.0 { theta * r.dir[0] / st } else { 0.0 });
        }
        let mean = sum_cos / n as f64;
        let var = sum_x2 / n as f64 - (1.0 - mean).powi(2);
        (th, mean, (var / n as f64).sqrt())
    }

    /// σ of a Gaussian fitted (by moments) to the central 98 % of `x`: the truncated variance
    /// σ²[1 − 2kφ(k)/(2Φ(k) − 1)], k = x_c/σ, solved for σ.
    fn central98_width(x: &mut [f64]) -> f64 {
        x.sort_by(f64::total_cmp);
        let n = x.len();
        let (lo, hi) = (x[n / 100], x[n - 1 - n / 100]);
        let kept: Vec<f64> = x.iter().copied().filter(|&v| v >= lo && v <= hi).collect();
        let mean = kept.iter().sum::<f64>() / kept.len() as f64;
        let var = kept.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / kept.len() as f64;
        let xc = 0.5 * (hi - lo);
        let mut sigma = var.sqrt();
        for _ in 0..200 {
            let k = xc / sigma;
            let phi = (-0.5 * k * k).exp() / (2.0 * PI).sqrt();
            let p = erf(k / 2f64.sqrt());
            sigma = (var / (1.0 - 2.0 * k * phi / p)).sqrt();
        }
        sigma
    }

    /// erf (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
    fn erf(x: f64) -> f64 {
        let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
        let y = 1.0
            - t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429)))) * (-x * x).exp();
        y.copysign(x)
    }

    /// Width of the central 98 % of the projected angle vs the PDG Highland formula, whose own
    /// accuracy is 11 % (PDG Review "Passage of particles through matter", eq. 34.15), for 1 GeV
    /// and 10 MeV e⁻ through 1 mm Pb and 5 mm lAr (no energy loss in the step); also the mean
    /// cos θ vs the transport theory. Seeds fixed; 2e5 samples: the statistical error of the
    /// fitted width is ≈ 0.2 %, of ⟨cos θ⟩ − 1 well below 1 %.
    #[test]
    fn width_vs_highland_and_mean_cos() {
        let pb = tables(&ShowerMaterial::lead());
        let ar = tables(&ShowerMaterial::liquid_argon());
        let cases = [
            (&pb, 1000.0, 0.1, "Pb 1 GeV"),
            (&pb, 10.0, 0.1, "Pb 10 MeV"),
            (&ar, 1000.0, 0.5, "lAr 1 GeV"),
            (&ar, 10.0, 0.5, "lAr 10 MeV"),
        ];
        for (i, (tb, t, len, name)) in cases.into_iter().enumerate() {
            let (mut th, mean, se) = projected(tb, t, len, 200_000, 11 + i as u64);
            let w = central98_width(&mut th);
            // Highland with β, p of the electron, x/X₀ for the slab.
            let (p2, b2) = momentum2_beta2(t);
            let y = len / tb.radiation_length;
            let highland = 13.6 / (p2 * b2).sqrt() * y.sqrt() * (1.0 + 0.038 * (y / b2).ln());
            let rel = w / highland - 1.0;
            assert!(rel.abs() < 0.11, "{name}: width {w} vs Highland {highland} ({rel:+.3})");
            // ⟨1 − cos θ⟩ vs 1 − exp(−t/λ₁) to 1 %.
            let expected = 1.0 - (-len / tb.lambda1(Particle::Electron, t)).exp();
            // The tail makes 1 − cos θ heavy-tailed: at 1 GeV its standard error over 2e5 samples
            // is ~10 % of the mean, so there the bound is 4 standard errors instead of 1 %.
            let rel_mean = (1.0 - mean) / expected - 1.0;
            let tol = (0.01 * expected).max(4.0 * se);
            assert!(
                ((1.0 - mean) - expected).abs() < tol,
                "{name}: ⟨1 − cos θ⟩ {} ± {se} vs {expected} ({rel_mean:+.4})",
                1.0 - mean
            );
            eprintln!(
                "{name}: width/Highland − 1 = {rel:+.4}; ⟨1 − cos θ⟩/(1 − e^(−t/λ₁)) − 1 = {rel_mean:+.4} (standard error {:.4})",
                se / expected
            );
            // Analytically the model's mean is exact.
            let th0 = highland_theta0(t, t, len, tb.radiation_length);
            let prm = angular_params(expected, th0);
            let model = prm.p * core_mean(prm.a) + (1.0 - prm.p) * if prm.p < 1.0 { tail_mean(prm.c) } else { 0.0 };
            assert!((model / expected - 1.0).abs() < 1e-9, "{name}: {prm:?}");
        }
    }

    /// ⟨cos θ⟩ = exp(−t/λ₁) also for thick steps (pure-core branch) and with energy loss
    /// ((1 − αt)^{1/(αλ₁₀)}), to 1 %.
    #[test]
    fn mean_cos_thick_steps_and_energy_loss() {
        let tb = tables(&ShowerMaterial::lead());
        let mut rng = RandomStream::new(5, 1, 0);
        for &(t0, t1, len) in &[
            (1.0, 1.0, 0.01),
            (1.0, 1.0, 0.003),
            (0.2, 0.2, 1e-3),
            (5.0, 3.0, 0.1),
            (1.0, 0.5, 0.02),
        ] {
            let expected = mean_cos(&tb, Particle::Electron, t0, t1, len);
            let n = 200_000;
            let mut s = 0.0;
            for _ in 0..n {
                s += sample(&tb, Particle::Electron, t0, t1, len, [0.0, 1.0, 0.0], 0.0, &mut rng).dir[1];
            }
            let m = s / f64::from(n);
            // 1 % of ⟨1 − cos θ⟩.
            let rel = (1.0 - m) / (1.0 - expected) - 1.0;
            eprintln!("{t0}→{t1} MeV, {len} cm: ⟨cos θ⟩ {m:.5} vs {expected:.5} ({rel:+.4} of 1 − ⟨cos θ⟩)");
            assert!(rel.abs() < 0.01, "{t0}→{t1} MeV, {len} cm: {m} vs {expected}");
        }
        let l0 = tb.lambda1(Particle::Electron, 5.0);
        let l1 = tb.lambda1(Particle::Electron, 3.0);
        assert!(mean_cos(&tb, Particle::Electron, 5.0, 3.0, 0.1) < (-0.1 / l0).exp());
        assert!(mean_cos(&tb, Particle::Electron, 5.0, 3.0, 0.1) > (-0.1 / l1).exp());
    }

    /// The displacement never reaches the safety, is ⊥ the initial direction, and without the
    /// cap its mean square is Lewis' ⟨r²⟩ (5 %, 1e5 samples).
    #[test]
    fn displacement_within_safety_and_lewis_r2() {
        let tb = tables(&ShowerMaterial::lead());
        let mut rng = RandomStream::new(3, 2, 0);
        let dir = [0.6, 0.0, 0.8];
        for &safety in &[1e-5, 1e-4, 1e-3, 1e-2] {
            for _ in 0..20_000 {
                let r = sample(&tb, Particle::Electron, 2.0, 1.8, 0.02, dir, safety, &mut rng);
                let d = r.displacement;
                let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                assert!(len < safety, "{len} ≥ {safety}");
                assert!((d[0] * dir[0] + d[1] * dir[1] + d[2] * dir[2]).abs() < 1e-12 * (1.0 + len));
            }
        }
        // Uncapped: ⟨r²⟩ vs Lewis with the step's λ₁ (no energy loss), and correlation.
        let (t, len) = (10.0, 0.01);
        let l1 = tb.lambda1(Particle::Electron, t);
        let expected = lateral_r2(l1, K_LEWIS, len);
        let n = 100_000;
        let (mut s2, mut sxw) = (0.0, 0.0);
        for _ in 0..n {
            let r = sample(&tb, Particle::Electron, t, t, len, [0.0, 0.0, 1.0], 1e3, &mut rng);
            s2 += r.displacement[0].powi(2) + r.displacement[1].powi(2);
            sxw += r.displacement[0] * r.dir[0] + r.displacement[1] * r.dir[1];
        }
        let r2 = s2 / f64::from(n);
        assert!((r2 / expected - 1.0).abs() < 0.05, "{r2} vs {expected}");
        // Correlation: ⟨r·w⟩ = c⟨|w|²⟩ = √(3/4 ⟨r²⟩⟨sin²θ⟩) (5 %); small-angle diffusion would
        // give tτ (⟨sin²θ⟩ = 2τ); the model's ⟨sin²θ⟩ is lower (its tail is not Lewis' λ₂).
        let rw = sxw / f64::from(n);
        let prm = angular_params(-(-len / l1).exp_m1(), highland_theta0(t, t, len, tb.radiation_length));
        let model = (0.75 * expected * prm.mean_sin2()).sqrt();
        assert!((rw / model - 1.0).abs() < 0.05, "{rw} vs {model}");
        eprintln!(
            "⟨r²⟩ {r2:e} vs Lewis {expected:e}; ⟨r·w⟩ {rw:e} vs model {model:e}, small-angle tτ {:e}",
            len * len / l1
        );
        // Small-τ limit of Lewis: (2/3) t² τ.
        let r2s = lateral_r2(1.0, 3.0, 1e-4);
        assert!((r2s / (2.0 / 3.0 * 1e-8 * 1e-4) - 1.0).abs() < 1e-3);
        let r2l = lateral_r2(1.0, 3.0, 2e-3);
        let series = 2.0 / 3.0 * 4e-6 * 2e-3;
        assert!((r2l / series - 1.0).abs() < 2e-3, "{r2l} {series}");
    }

    #[test]
    fn use_safety_step_limit() {
        let tb = tables(&ShowerMaterial::lead());
        let mut st = MscStepState::new();
        let e = Particle::Electron;
        let l1 = tb.lambda1(e, 10.0);
        let range = 0.6;
        // First step: max(0.04 max(R, λ₁), 0.6 safety).
        let lim = limit_step(&tb, &mut st, e, 10.0, range, 0.01, false);
        assert!((lim - F_RANGE * range.max(l1)).abs() < 1e-15, "{lim}");
        assert!(st.initialised && st.range_init == range.max(l1));
        // Later steps in the volume keep the limit, whatever the safety.
        assert_eq!(limit_step(&tb, &mut st, e, 8.0, 0.5, 0.2, false), lim);
        // Entering a volume resets it; a large safety wins.
        let lim2 = limit_step(&tb, &mut st, e, 8.0, 0.5, 0.3, true);
        let want = (F_RANGE * 0.5f64.max(tb.lambda1(e, 8.0))).max(F_SAFETY * 0.3);
        assert!((lim2 - want).abs() < 1e-15 && want == F_SAFETY * 0.3, "{lim2} {want}");
        // Range below the safety: no msc limit beyond the range.
        assert_eq!(limit_step(&tb, &mut st, e, 8.0, 0.1, 0.3, false), 0.1);
        // Floor.
        let mut st2 = MscStepState::new();
        assert_eq!(limit_step(&tb, &mut st2, e, 1e-4, 1e-9, 0.0, false), 1e-9f64.min(T_LIMIT_MIN));
        let mut st3 = MscStepState::new();
        let _ = limit_step(&tb, &mut st3, e, 1e-4, 1e-3, 0.0, false);
        assert!(st3.t_limit >= T_LIMIT_MIN);
    }
}
