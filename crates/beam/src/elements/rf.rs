//! The RF cavity (RFCA) in ELEGANT's phase convention: a particle arriving Δt after the
//! reference sees the phase φ = PHASE + 2π FREQ Δt and gains the energy |q| VOLT sin φ, so
//! PHASE = 90° is the crest and PHASE = 180° the stable phase of a storage ring above transition
//! without energy loss (ELEGANT manual, RFCA).
//!
//! The kick acts in the middle of the cavity (drift L/2, kick, drift L/2). Its transverse
//! canonical momenta are conserved, so the slopes shrink as p grows (adiabatic damping). With
//! CHANGE_P0 the reference momentum after the cavity is that of the reference particle
//! (arriving at Δt = 0) and δ and the momenta are renormalised to it.
//!
//! The energy kick alone is symplectic in the pair (−c Δt, ΔE/(p0 c)) (it adds a function of
//! the time to the energy), which is what [`super::symplectic`]-style tests check here.

use crate::tpsa::Real;

/// Speed of light [m/s].
pub const C_LIGHT: f64 = 299_792_458.0;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cavity {
    pub l: f64,
    /// Peak voltage [V].
    pub volt: f64,
    /// Frequency [Hz].
    pub freq: f64,
    /// Phase [deg], ELEGANT's convention.
    pub phase: f64,
    pub change_p0: bool,
}

/// The reference particle at the cavity: rest energy and momentum (both [eV], p as p c) and
/// the charge number's magnitude.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RfReference {
    pub mass_ev: f64,
    pub p0_ev: f64,
    pub charge: f64,
}

impl RfReference {
    pub fn energy(&self) -> f64 {
        self.p0_ev.hypot(self.mass_ev)
    }
    pub fn beta(&self) -> f64 {
        self.p0_ev / self.energy()
    }
    pub fn gamma(&self) -> f64 {
        self.energy() / self.mass_ev
    }
}

impl Cavity {
    /// The phase [rad] seen by a particle arriving `dt` [s] after the reference.
    pub fn phase_at<R: Real>(&self, dt: R) -> R {
        R::cst(self.phase.to_radians()) + R::cst(2.0 * std::f64::consts::PI * self.freq) * dt
    }

    /// Energy gain [eV] of a particle arriving `dt` after the reference.
    pub fn gain<R: Real>(&self, dt: R, r: &RfReference) -> R {
        R::cst(r.charge.abs() * self.volt) * self.phase_at(dt).sin()
    }

    /// The reference momentum p0 c [eV] after the cavity.
    pub fn p0_after(&self, r: &RfReference) -> f64 {
        if self.change_p0 {
            let e = r.energy() + self.gain(0.0, r);
            (e * e - r.mass_ev * r.mass_ev).max(0.0).sqrt()
        } else {
            r.p0_ev
        }
    }

    /// The energy kick: δ after the cavity (relative to [`Cavity::p0_after`]) and the factor
    /// p0/p0_after that scales the canonical transverse momenta.
    pub fn kick<R: Real>(&self, delta: R, dt: R, r: &RfReference) -> (R, f64) {
        let p = R::cst(r.p0_ev) * (R::cst(1.0) + delta);
        let m2 = R::cst(r.mass_ev * r.mass_ev);
        let e = (p * p + m2).sqrt() + self.gain(dt, r);
        let p1 = (e * e - m2).sqrt();
        let p0_after = self.p0_after(r);
        (p1 / R::cst(p0_after) - R::cst(1.0), r.p0_ev / p0_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpsa::Tpsa2;

    fn electron(p0_ev: f64) -> RfReference {
        RfReference {
            mass_ev: 510_998.95,
            p0_ev,
            charge: -1.0,
        }
    }

    #[test]
    fn on_crest_gain_is_the_voltage() {
        let r = electron(50e6);
        let cav = Cavity {
            l: 0.0,
            volt: 2e6,
            freq: 2.856e9,
            phase: 90.0,
            change_p0: false,
        };
        let (d, scale) = cav.kick(0.0, 0.0, &r);
        let e1 = (r.p0_ev * (1.0 + d)).hypot(r.mass_ev);
        assert!((e1 - r.energy() - 2e6).abs() < 1e-6, "{}", e1 - r.energy());
        assert_eq!(scale, 1.0);
        // Off crest by 2π f Δt: the gain follows sin.
        let dt = 1e-11;
        let (d, _) = cav.kick(0.0, dt, &r);
        let e1 = (r.p0_ev * (1.0 + d)).hypot(r.mass_ev);
        let want = 2e6 * (std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * 2.856e9 * dt).sin();
        assert!((e1 - r.energy() - want).abs() < 1e-6);
        // CHANGE_P0: the reference leaves with δ = 0 at the new momentum.
        let c = Cavity { change_p0: true, ..cav };
        let (d, scale) = c.kick(0.0, 0.0, &r);
        assert!(d.abs() < 1e-15);
        let p1 = c.p0_after(&r);
        assert!((p1.hypot(r.mass_ev) - r.energy() - 2e6).abs() < 1e-6 && (scale - r.p0_ev / p1).abs() < 1e-15);
    }

    #[test]
    fn energy_kick_is_symplectic_in_time_and_energy() {
        // In (t, E) the kick is E += g(t): Jacobian [[1, 0], [g', 1]], det 1; through δ's
        // series check that dE_out/dE_in = 1 at fixed t.
        let r = electron(3e9);
        let cav = Cavity {
            l: 0.0,
            volt: 1e6,
            freq: 5e8,
            phase: 170.0,
            change_p0: false,
        };
        let d = Tpsa2::variable(5, 1e-3);
        let (d1, _) = cav.kick(d, Tpsa2::constant(0.0), &r);
        let e = |dl: f64| (r.p0_ev * (1.0 + dl)).hypot(r.mass_ev);
        let de_dd = |dl: f64| r.p0_ev * r.p0_ev * (1.0 + dl) / e(dl);
        let ratio = d1.g[5] * de_dd(d1.c) / de_dd(1e-3);
        assert!((ratio - 1.0).abs() < 1e-12, "{ratio}");
    }
}
