//! Refractive indices, Cherenkov angle and photon speed in ice (spec §3.3), and the
//! Frank–Tamm photon yield (spec §3.4).

/// Speed of light in vacuum [m/ns].
pub const C_VACUUM: f64 = 0.299_792_458;

/// Phase refractive index of ice, λ in µm (Price & Bergström, Astropart. Phys. 2001; spec §3.3):
/// n_p = 1.55749 − 1.57988λ + 3.99993λ² − 4.68271λ³ + 2.09354λ⁴.
#[must_use]
pub fn n_phase(lambda_um: f64) -> f64 {
    let l = lambda_um;
    1.55749 - 1.57988 * l + 3.99993 * l * l - 4.68271 * l.powi(3) + 2.09354 * l.powi(4)
}

/// Group refractive index: n_g = n_p·(1.227106 − 0.954648λ + 1.42568λ² − 0.711832λ³) (spec §3.3).
#[must_use]
pub fn n_group(lambda_um: f64) -> f64 {
    let l = lambda_um;
    n_phase(l) * (1.227106 - 0.954648 * l + 1.42568 * l * l - 0.711832 * l.powi(3))
}

/// cos θ_c = 1/(β·n_p), clamped to 1 below threshold.
#[must_use]
pub fn cos_cherenkov(beta: f64, n_p: f64) -> f64 {
    (1.0 / (beta * n_p)).min(1.0)
}

/// Photon group velocity c/n_g [m/ns].
#[must_use]
pub fn group_velocity(lambda_um: f64) -> f64 {
    C_VACUUM / n_group(lambda_um)
}

/// Fine-structure constant.
const ALPHA_FS: f64 = 1.0 / 137.036;

/// Frank–Tamm yield per metre between λ1 and λ2 [nm] for a particle of speed β (spec §3.4):
/// dN/dx = ∫ 2πα (1 − 1/(β²n_p²)) dλ/λ², integrated by Simpson's rule on 1 nm steps.
#[must_use]
pub fn frank_tamm_per_m(beta: f64, lambda1_nm: f64, lambda2_nm: f64) -> f64 {
    let n = (2.0 * ((lambda2_nm - lambda1_nm) / 2.0).ceil()).max(2.0) as usize;
    let h = (lambda2_nm - lambda1_nm) / n as f64;
    let f = |lnm: f64| {
        let np = n_phase(lnm * 1e-3);
        let s = (1.0 - 1.0 / (beta * beta * np * np)).max(0.0);
        2.0 * std::f64::consts::PI * ALPHA_FS * s / (lnm * 1e-9).powi(2)
    };
    let mut sum = f(lambda1_nm) + f(lambda2_nm);
    for i in 1..n {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * f(lambda1_nm + i as f64 * h);
    }
    sum * h * 1e-9 / 3.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's table (§3.3): n_p, n_g, θ_c at 300/400/500 nm and v_g at 400 nm.
    #[test]
    fn refractive_indices_match_spec_values() {
        for (l, np, ng, theta) in [
            (0.3, 1.33404, 1.40048, 41.44),
            (0.4, 1.31943, 1.35611, 40.72),
            (0.5, 1.31304, 1.33565, 40.40),
        ] {
            assert!((n_phase(l) - np).abs() < 5e-5, "n_p({l}) = {}", n_phase(l));
            assert!((n_group(l) - ng).abs() < 5e-5, "n_g({l}) = {}", n_group(l));
            let th = cos_cherenkov(1.0, n_phase(l)).acos().to_degrees();
            assert!((th - theta).abs() < 0.01, "θc({l}) = {th}");
        }
        assert!((group_velocity(0.4) - 0.22107).abs() < 1e-5);
    }

    /// The spec's Frank–Tamm yields for β = 1 (§3.4): 26 180 /m (300–500 nm), 45 023 /m (265–675 nm).
    #[test]
    fn frank_tamm_yields_match_spec() {
        let a = frank_tamm_per_m(1.0, 300.0, 500.0);
        let b = frank_tamm_per_m(1.0, 265.0, 675.0);
        assert!((a / 26_180.0 - 1.0).abs() < 2e-3, "{a}");
        assert!((b / 45_023.0 - 1.0).abs() < 2e-3, "{b}");
        assert_eq!(frank_tamm_per_m(0.5, 300.0, 500.0), 0.0, "below threshold");
    }
}
