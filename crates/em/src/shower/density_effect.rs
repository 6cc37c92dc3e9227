//! Sternheimer's density-effect correction δ(x), x = log₁₀(βγ) = log₁₀(p/mc):
//!
//! ```text
//! δ(x) = 2 ln10 · x − C̄                       x ≥ x₁
//!      = 2 ln10 · x − C̄ + a (x₁ − x)^m        x₀ ≤ x < x₁
//!      = δ₀ · 10^{2(x − x₀)}                   x < x₀   (δ₀ = 0 for insulators)
//! ```
//!
//! (R. M. Sternheimer, M. J. Berger, S. M. Seltzer, At. Data Nucl. Data Tables 30 (1984) 261,
//! eq. 14; PDG Review "Passage of particles through matter", eq. 34.7.) The parameters come either
//! from that paper's Table 1 or, for any material, from the general formulas of Sternheimer and
//! Peierls, Phys. Rev. B 3 (1971) 3681, which need only I and the plasma energy ħω_p.

use std::f64::consts::LN_10;

/// 2 ln 10 = 4.606…
pub const TWO_LN10: f64 = 2.0 * LN_10;

/// State of matter: the Sternheimer–Peierls parameters differ for gases and condensed matter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Solid,
    Liquid,
    Gas,
}

impl State {
    /// Geant4's convention when no state is given: a gas below 10 mg/cm³, condensed above.
    #[must_use]
    pub fn from_density(density: f64) -> State {
        if density < 0.01 {
            State::Gas
        } else {
            State::Solid
        }
    }
}

/// Parameters of δ(x). `c` is C̄ = −C = 1 + 2 ln(I/ħω_p) (a positive number).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DensityEffect {
    #[serde(rename = "C")]
    pub c: f64,
    pub x0: f64,
    pub x1: f64,
    pub a: f64,
    pub m: f64,
    /// δ(x₀) for conductors; 0 for insulators.
    #[serde(default)]
    pub delta0: f64,
}

impl DensityEffect {
    /// Sternheimer–Peierls general formulas (Phys. Rev. B 3 (1971) 3681, Table I; as quoted in
    /// ICRU Report 37 §4): C̄ = 1 + 2 ln(I/ħω_p), m = 3, and
    ///
    /// * solids and liquids: I < 100 eV: x₁ = 2, x₀ = 0.2 if C̄ < 3.681 else 0.326 C̄ − 1.0;
    ///   I ≥ 100 eV: x₁ = 3, x₀ = 0.2 if C̄ < 5.215 else 0.326 C̄ − 1.5;
    /// * gases: C̄ < 10: (x₀, x₁) = (1.6, 4); < 10.5: (1.7, 4); < 11: (1.8, 4); < 11.5: (1.9, 4);
    ///   < 12.25: (2.0, 4); < 13.804: (2.0, 5); else (0.326 C̄ − 2.5, 5);
    ///
    /// and a = (C̄ − 2 ln10 · x₀)/(x₁ − x₀)^m so that δ is continuous at x₀ (δ₀ = 0).
    /// `mean_excitation` and `plasma_energy` in the same unit.
    #[must_use]
    pub fn sternheimer_peierls(mean_excitation: f64, plasma_energy: f64, state: State) -> DensityEffect {
        let c = 1.0 + 2.0 * (mean_excitation / plasma_energy).ln();
        let (x0, x1) = match state {
            State::Solid | State::Liquid => {
                let i_ev = mean_excitation / super::EV;
                let (c_lim, shift, x1) = if i_ev < 100.0 { (3.681, 1.0, 2.0) } else { (5.215, 1.5, 3.0) };
                (if c < c_lim { 0.2 } else { 0.326 * c - shift }, x1)
            }
            State::Gas => match c {
                c if c < 10.0 => (1.6, 4.0),
                c if c < 10.5 => (1.7, 4.0),
                c if c < 11.0 => (1.8, 4.0),
                c if c < 11.5 => (1.9, 4.0),
                c if c < 12.25 => (2.0, 4.0),
                c if c < 13.804 => (2.0, 5.0),
                c => (0.326 * c - 2.5, 5.0),
            },
        };
        let m = 3.0;
        let a = (c - TWO_LN10 * x0) / (x1 - x0).powf(m);
        DensityEffect {
            c,
            x0,
            x1,
            a,
            m,
            delta0: 0.0,
        }
    }

    /// Sternheimer, Berger & Seltzer (1984), Table 1, lead: ħω_p = 61.072 eV, −C = 6.2018,
    /// x₀ = 0.3776, x₁ = 3.8073, a = 0.09359, m = 3.1608, δ₀ = 0.14 (I = 823 eV).
    /// Geant4 10.3 takes these for any one-element Z = 82 solid at the nominal density
    /// (TestEm3's "Lead" included).
    #[must_use]
    pub fn lead_1984() -> DensityEffect {
        DensityEffect {
            c: 6.2018,
            x0: 0.3776,
            x1: 3.8073,
            a: 0.09359,
            m: 3.1608,
            delta0: 0.14,
        }
    }

    /// δ(x) for x = log₁₀(βγ) (module doc formula).
    #[must_use]
    pub fn delta(&self, x: f64) -> f64 {
        if x >= self.x1 {
            TWO_LN10 * x - self.c
        } else if x >= self.x0 {
            TWO_LN10 * x - self.c + self.a * (self.x1 - x).powf(self.m)
        } else if self.delta0 > 0.0 {
            self.delta0 * 10f64.powf(2.0 * (x - self.x0))
        } else {
            0.0
        }
    }

    /// Finite, x₀ < x₁, a ≥ 0, m > 0, δ₀ ≥ 0.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let all = [self.c, self.x0, self.x1, self.a, self.m, self.delta0];
        if all.iter().any(|v| !v.is_finite()) {
            return Err(("density_effect", format!("parameters must be finite numbers: {self:?}")));
        }
        if self.x1 <= self.x0 {
            return Err(("x1", format!("x1 = {} must be above x0 = {}", self.x1, self.x0)));
        }
        if self.a < 0.0 || self.m <= 0.0 || self.delta0 < 0.0 {
            return Err(("density_effect", format!("need a ≥ 0, m > 0, delta0 ≥ 0: {self:?}")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_formula_gives_sternheimer_table_c_and_continuity() {
        // Gaseous argon (ESTAR: ρ = 1.66201e-3 g/cm³, Z/A = 0.45059, I = 188 eV): ħω_p =
        // 28.816 √(ρ Z/A) eV = 0.789 eV, C̄ = 11.948 (Sternheimer 1984 Table 1: ħω_p 0.789,
        // −C 11.9480) → x₀ = 2.0, x₁ = 4 by the 1971 table.
        let hw = 28.816 * (1.662_01e-3 * 0.450_59f64).sqrt() * 1e-6;
        let d = DensityEffect::sternheimer_peierls(188e-6, hw, State::Gas);
        assert!((d.c - 11.948).abs() < 2e-3, "{d:?}");
        assert_eq!((d.x0, d.x1, d.m), (2.0, 4.0, 3.0));
        // Continuous at x0 (δ = 0 there) and at x1.
        assert!(d.delta(d.x0).abs() < 1e-12);
        let e = 1e-9;
        assert!((d.delta(d.x1 - e) - d.delta(d.x1 + e)).abs() < 1e-6);
        // Condensed, I ≥ 100 eV, C̄ above 5.215 → x₀ = 0.326 C̄ − 1.5.
        let l = DensityEffect::sternheimer_peierls(823e-6, 61.072e-6, State::Solid);
        assert!((l.x0 - (0.326 * l.c - 1.5)).abs() < 1e-12 && l.x1 == 3.0);
    }

    #[test]
    fn lead_table_is_nearly_continuous_at_x0() {
        // With δ₀ the 1984 fit joins its two branches to within the quoted δ error (0.019).
        let d = DensityEffect::lead_1984();
        let above = d.delta(d.x0 + 1e-12);
        assert!((above - d.delta0).abs() < 0.02, "{above}");
    }
}
