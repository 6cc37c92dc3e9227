//! The fast mode's birefringent deflection (precise twin: `Birefringence::deflect`): the widths
//! σx, σy, μx from the host's 513-entry table in the flow angle (`Birefringence::width_table`,
//! the GPU's WD_BFR_TABLE) instead of atan, pow and exp per segment; the Box–Muller normals from
//! `fast::math`; the stereographic map without the final renormalisation (WD_FAST_BFR: for the
//! orthonormal frame (n, q, p) it is a unit vector, |m|² = (4k + (1 − k)²)/(1 + k)² = 1; the
//! rounding it leaves is cleaned by the next scattering's normalisation).

use super::math::{self, Plain, Poly};
use crate::birefringence::{Birefringence, BFR_TABLE_BINS};

/// The widths table of a model's diffusion.
#[derive(Clone, Debug)]
pub struct FastBfr {
    pub(crate) axis: [f32; 2],
    table: Vec<[f32; 4]>,
}

impl FastBfr {
    #[must_use]
    pub fn new(b: &Birefringence) -> Self {
        Self {
            axis: b.axis,
            table: b.width_table(),
        }
    }

    /// σx, σy, μx at `dot` (linear in the table's pseudo-angle s/(s + c)).
    #[inline(always)]
    #[must_use]
    pub fn widths(&self, dot: f32) -> [f32; 3] {
        let f = Birefringence::width_table_position(dot);
        let j = (f as usize).min(BFR_TABLE_BINS - 1);
        let a = f - j as f32;
        let (w0, w1) = (self.table[j], self.table[j + 1]);
        [
            w0[0] * (1.0 - a) + w1[0] * a,
            w0[1] * (1.0 - a) + w1[1] * a,
            w0[2] * (1.0 - a) + w1[2] * a,
        ]
    }

    /// The deflected direction and the end point's shift (the order of `Birefringence::deflect`).
    #[inline(always)]
    #[must_use]
    pub fn deflect(&self, n: [f32; 3], len: f32, ra_l: f32, rb_l: f32, u: [f32; 4]) -> ([f32; 3], [f32; 3]) {
        self.deflect_p::<Plain>(n, len, ra_l, rb_l, u)
    }

    /// [`Self::deflect`] with Box–Muller's polynomials rounded as `P` says.
    #[inline(always)]
    #[must_use]
    pub fn deflect_p<P: Poly>(&self, n: [f32; 3], len: f32, ra_l: f32, rb_l: f32, u: [f32; 4]) -> ([f32; 3], [f32; 3]) {
        // The sums below through `Poly::gmad` in their written order (FusedGeom: the kernel's
        // WD_TWIN_FMA_GEOM).
        let dot = P::gmad(self.axis[1], n[1], self.axis[0] * n[0]);
        let sra = ra_l.sqrt();
        let w = self.widths(dot);
        let (sx, sy, mx) = (sra * w[0], sra * w[1], rb_l * w[2]);
        let mut q = [P::gmad(-dot, n[0], self.axis[0]), P::gmad(-dot, n[1], self.axis[1]), -dot * n[2]];
        if dot < 0.0 {
            q = [-q[0], -q[1], -q[2]];
        }
        let qn = P::gmad(q[2], q[2], P::gmad(q[1], q[1], q[0] * q[0]));
        q = if qn > 0.0 {
            let f = P::rsqrt(qn);
            [q[0] * f, q[1] * f, q[2] * f]
        } else {
            [0.0, 0.0, 1.0]
        };
        let pv = [
            P::gmad(n[1], q[2], -(n[2] * q[1])),
            P::gmad(n[2], q[0], -(n[0] * q[2])),
            P::gmad(n[0], q[1], -(n[1] * q[0])),
        ];
        let (g1, g2) = box_muller::<P>(u[0], u[1]);
        let (g3, g4) = box_muller::<P>(u[2], u[3]);
        let du = P::gmad(sx, g1, mx);
        let dv = sy * g2;
        let r3 = 1.0 / 3.0f32.sqrt();
        let m = stereographic::<P>(n, q, pv, P::gmad(sx * g3, r3, du) * 0.5, P::gmad(sy * g4, r3, dv) * 0.5);
        let half = len * 0.5;
        let shift = [half * (m[0] - n[0]), half * (m[1] - n[1]), half * (m[2] - n[2])];
        (stereographic::<P>(n, q, pv, du * 0.5, dv * 0.5), shift)
    }
}

/// Two standard normals from two uniforms in (0, 1]: √(−2 ln u1)·(cos 2πu2, sin 2πu2).
#[inline(always)]
fn box_muller<P: Poly>(u1: f32, u2: f32) -> (f32, f32) {
    let r = (-2.0 * math::ln_p::<P>(u1)).sqrt();
    let (s, c) = math::sincos_turn_p::<P>(u2);
    (r * c, r * s)
}

/// The unit vector of stereographic coordinates (a, b) around n in the frame (q, p), without
/// renormalising (the kernel's `bfr_stereographic` with WD_FAST_BFR; tests/twin_host_arith.rs
/// compares the two).
#[inline(always)]
#[must_use]
pub fn stereographic<P: Poly>(n: [f32; 3], q: [f32; 3], p: [f32; 3], a: f32, b: f32) -> [f32; 3] {
    let k = P::gmad(b, b, a * a);
    let den = 2.0 / (1.0 + k);
    let (a, b, c) = (a * den, b * den, -k * den);
    [
        P::gmad(n[0], c, P::gmad(p[0], b, P::gmad(q[0], a, n[0]))),
        P::gmad(n[1], c, P::gmad(p[1], b, P::gmad(q[1], a, n[1]))),
        P::gmad(n[2], c, P::gmad(p[2], b, P::gmad(q[2], a, n[2]))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scatter::normalize;
    use crate::test_data::data_dir;
    use warpdrive_core::RandomStream;

    /// The table's widths within 0.3 % of the formulas (σ relative to its largest value), and
    /// the fast deflection within 10⁻⁴ of the precise one for the same uniforms (spice_ftp-v3m).
    #[test]
    fn fast_deflection_follows_the_precise_one() {
        let d = data_dir().join("ice/spice_ftp-v3m");
        let cfg = crate::config::Config::read(&d.join("cfg.txt")).unwrap();
        let layers = crate::ice::Layers::read_dir(&d, None, None).unwrap();
        let b = Birefringence::new(&cfg, &layers, 1.0, 1.0).unwrap();
        let f = FastBfr::new(&b);
        let mut r = RandomStream::new(41, 0, 0);
        let top = (0..=1000)
            .map(|i| b.widths(i as f32 / 1000.0))
            .fold([0.0f32; 3], |m, w| [m[0].max(w[0]), m[1].max(w[1]), m[2].max(w[2])]);
        let mut worst = 0.0f32;
        for _ in 0..100_000 {
            let n = normalize([r.uniform() - 0.5, r.uniform() - 0.5, r.uniform() - 0.5]);
            let dot = b.axis[0] * n[0] + b.axis[1] * n[1];
            let (wf, we) = (f.widths(dot), b.widths(dot));
            for k in 0..3 {
                assert!((wf[k] - we[k]).abs() <= 3e-3 * top[k], "dot {dot}: {wf:?} vs {we:?}");
            }
            let (len, ra, rb) = (20.0 * r.uniform(), 20.0 * r.uniform(), 20.0 * r.uniform());
            let u = [r.uniform(), r.uniform(), r.uniform(), r.uniform()];
            let ((df, sf), (de, se)) = (f.deflect(n, len, ra, rb, u), b.deflect(n, len, ra, rb, u));
            for k in 0..3 {
                worst = worst.max((df[k] - de[k]).abs()).max((sf[k] - se[k]).abs() / len.max(1.0));
            }
        }
        eprintln!("fast deflection: worst difference {worst:.2e}");
        assert!(worst < 1e-3, "{worst}");
    }
}
