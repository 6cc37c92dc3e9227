//! Tests of the kick–drift integrators that `beam track` uses for CSBEND, KQUAD, KSEXT and
//! KOCT (issue #30): symplecticity at every INTEGRATION_ORDER, the thin-lens limit, the
//! convergence order in N_KICKS, agreement with the second-order map at small amplitude, and
//! the GPU constants ([`crate::program::KickItem::constants`]) read back by a transliteration of
//! kernels/bend.cu and kernels/multipole.cu.

use super::bend::Bend;
use super::multipole::Multipole;
use super::symplectic::{defect, jacobian};
use crate::map::Element;

fn csbend(n_kicks: u32, integration_order: u8) -> Bend {
    Bend {
        l: 1.6,
        angle: 0.2617993877991494,
        k1: -0.3,
        k2: 2.0,
        e1: 0.03,
        e2: -0.02,
        hgap: 0.02,
        fint: 0.5,
        n_kicks,
        integration_order,
    }
}

fn kquad(l: f64, k1: f64, n_kicks: u32, integration_order: u8) -> Multipole {
    Multipole {
        l,
        order: 1,
        knl: k1 * l,
        n_kicks,
        integration_order,
    }
}

fn elements(n: u32, order: u8) -> Vec<Element> {
    vec![
        Element::Bend(csbend(n, order)),
        Element::Multipole(kquad(0.25, 3.25, n, order)),
        // KSEXT K2 = 106.7 and KOCT K3 = 500 over 0.2 m.
        Element::Multipole(Multipole {
            l: 0.2,
            order: 2,
            knl: 106.7 * 0.2,
            n_kicks: n,
            integration_order: order,
        }),
        Element::Multipole(Multipole {
            l: 0.2,
            order: 3,
            knl: 500.0 * 0.2,
            n_kicks: n,
            integration_order: order,
        }),
    ]
}

#[test]
fn every_order_is_symplectic() {
    let at = [1e-3, -2e-4, 5e-4, 3e-4, 0.0, 2e-3];
    for order in [2, 4, 6] {
        for n in [1, 3, 10] {
            for e in elements(n, order) {
                let (worst, det) = defect(&jacobian(at, |z| e.kick_drift(z)));
                assert!(worst < 1e-12 && det < 1e-12, "{e:?}: MᵀJM − J {worst:e}, det − 1 {det:e}");
            }
        }
    }
}

/// Largest |Δ| of x, x', y, y', s after the integrator with `n` kicks against the exact body.
fn error(e: &Element, z0: [f64; 6]) -> f64 {
    let mut exact = z0;
    e.exact(&mut exact);
    let mut z = z0;
    e.kick_drift(&mut z);
    (0..5).map(|i| (z[i] - exact[i]).abs()).fold(0.0, f64::max)
}

/// Doubling N_KICKS divides the error by 2^order: in the last doubling whose error is still
/// far above rounding and the exact body's own error (1e-11 m for the bend, 1e-14 m for the
/// multipoles), the ratio is within 30 % of 2^order for INTEGRATION_ORDER 2
/// and 4, and above 30 for 6. Amplitudes of 2 cm in the multipoles, whose integration error at
/// millimetres is at rounding with a single kick.
#[test]
fn convergence_order_in_n_kicks() {
    for order in [2u8, 4, 6] {
        for k in 0..4 {
            let scale = if k == 0 { 1.0 } else { 10.0 };
            // The bend's exact body (sixth order, 100 steps/m) is itself good to ~1e-13 m.
            let floor = if k == 0 { 1e-11 } else { 1e-14 };
            let z0 = [2e-3 * scale, 1e-4 * scale, -1e-3 * scale, 2e-4 * scale, 0.0, 1e-3];
            let errors: Vec<f64> = [1, 2, 4, 8, 16, 32].iter().map(|&n| error(&elements(n, order)[k], z0)).collect();
            let last = errors
                .windows(2)
                .rfind(|w| w[1] > floor)
                .unwrap_or_else(|| panic!("element {k}, order {order}: no error above rounding {errors:?}"));
            let ratio = last[0] / last[1];
            let want = 2f64.powi(i32::from(order));
            let ok = if order == 6 {
                ratio > 30.0
            } else {
                (ratio / want - 1.0).abs() < 0.3
            };
            assert!(ok, "element {k}, order {order}: errors {errors:?}, ratio {ratio} (want {want})");
        }
    }
}

/// A KQUAD of length L → 0 at fixed K1 L is the thin quadrupole kick (MULT ORDER=1): R21 differs
/// by the thick lens's K1²L³/6 (the kick–drift split with one step has the same O(L) term).
#[test]
fn thin_lens_limit() {
    let k1l = 0.3;
    let thin = Multipole {
        l: 0.0,
        order: 1,
        knl: k1l,
        n_kicks: 1,
        integration_order: 4,
    };
    let z0 = [1e-3, 0.0, -2e-3, 0.0, 0.0, 0.0];
    let mut zt = z0;
    thin.kick_drift(&mut zt);
    for l in [1e-2, 1e-3, 1e-4] {
        let mut z = z0;
        kquad(l, k1l / l, 4, 4).kick_drift(&mut z);
        // x' → −K1L x (thin), the thick lens differs by O(L): K1L² L x/6 and the drift L x'/2.
        let err = (z[1] - zt[1]).abs();
        assert!(err < 2.0 * k1l * k1l * l * 1e-3, "L {l}: Δx' {err:e}");
        assert!((z[0] - z0[0]).abs() < 2.0 * k1l * l * 1e-3, "L {l}: Δx {:e}", z[0] - z0[0]);
    }
    // The thin kick itself: Δp_x = −K1L x, Δp_y = +K1L y, as slopes p/p_s.
    let (px, py) = (-k1l * 1e-3, k1l * -2e-3);
    let ps = (1.0 - px * px - py * py).sqrt();
    assert!((zt[1] - px / ps).abs() < 1e-18 && (zt[3] - py / ps).abs() < 1e-18, "{zt:?}");
}

/// At amplitude A the integrator (converged, N_KICKS = 200) and the element's second-order map
/// differ by third-order terms: the difference falls as A³ (÷ 8 per halving, within 25 %), and
/// is below 1e-12 m at A = 1e-5.
#[test]
fn agrees_with_the_second_order_map_at_small_amplitude() {
    for e in elements(200, 4) {
        let m = e.map2();
        let diff = |a: f64| {
            let z0 = [a, 0.3 * a, -0.7 * a, 0.2 * a, 0.0, 0.5 * a];
            let mut z = z0;
            e.kick_drift(&mut z);
            let mut w = z0;
            m.apply(&mut w);
            (0..4).map(|i| (z[i] - w[i]).abs()).fold(0.0, f64::max)
        };
        let (d1, d2) = (diff(2e-3), diff(1e-3));
        assert!((d1 / d2 / 8.0 - 1.0).abs() < 0.25, "{e:?}: {d1:e} → {d2:e}");
        assert!(diff(1e-5) < 1e-12, "{e:?}: {:e}", diff(1e-5));
    }
}

/// The GPU constants of each integrator, read by a line-by-line transliteration of
/// kernels/bend.cu and kernels/multipole.cu (`track`), give the CPU's result bit for bit: the
/// layout of `track_constants` is what the kernels read.
#[test]
fn gpu_constants_reproduce_the_cpu_integrators() {
    use crate::program::KickItem;
    let z0 = [1.3e-3, -2e-4, 7e-4, 3e-4, 0.1, 2e-3];
    for order in [2, 4, 6] {
        for (tilt, e) in elements(5, order).into_iter().enumerate() {
            let item = KickItem {
                element: e,
                tilt: 0.05 * tilt as f64,
            };
            let mut want = z0;
            item.track(&mut want);
            let (kind, k) = item.constants().unwrap();
            let mut z = z0;
            cuda_kick_item(kind, &k, &mut z);
            assert_eq!(z, want, "{kind} order {order}");
        }
    }
}

// The transliteration of the CUDA twins (kernels/*.cu) used by the test above.
fn cuda_kick_item(kind: &str, k: &[f64], z: &mut [f64; 6]) {
    let rotate = |z: &mut [f64; 6], c: f64, s: f64| {
        let (x, y) = (z[0], z[2]);
        z[0] = c * x + s * y;
        z[2] = c * y - s * x;
        let (xp, yp) = (z[1], z[3]);
        z[1] = c * xp + s * yp;
        z[3] = c * yp - s * xp;
    };
    if k[0] != 0.0 {
        rotate(z, k[1], k[2]);
    }
    let q = &k[5..];
    let f = (1.0 + z[5]) / (1.0 + z[1] * z[1] + z[3] * z[3]).sqrt();
    let (mut px, mut py) = (z[1] * f, z[3] * f);
    let dipole = |z: &mut [f64; 6], px: &mut f64, py: f64, a: &[f64]| {
        let d1 = 1.0 + z[5];
        let pperp2 = d1 * d1 - py * py;
        let ps = (pperp2 - *px * *px).sqrt();
        let x = z[0];
        let px1 = *px * a[2] + (ps - 1.0 - a[4] * x) * a[1];
        let ps1 = (pperp2 - px1 * px1).sqrt();
        let x1 = x * a[2] + (ps1 - ps * a[2] + *px * a[1] - a[3]) * a[5];
        let pperp = pperp2.sqrt();
        let alpha = a[0] + (*px / pperp).asin() - (px1 / pperp).asin();
        z[0] = x1;
        z[2] += alpha * py * a[5];
        z[4] += alpha * d1 * a[5];
        *px = px1;
    };
    let longitudinal = |d: f64, px: f64, py: f64| ((1.0 + d) * (1.0 + d) - px * px - py * py).sqrt();
    if kind == "bend" {
        let fringe = |z: &mut [f64; 6], px: f64, py: &mut f64, a: f64, b: f64| {
            let y = z[2];
            z[0] += a * y * y;
            *py -= b * y * px;
        };
        let edge = |z: &[f64; 6], px: &mut f64, py: &mut f64, a: f64, b: f64| {
            *px += a * z[0];
            *py -= b * z[2];
        };
        let rotate_frame = |z: &mut [f64; 6], px: &mut f64, py: f64, c: f64, s: f64| {
            let d1 = 1.0 + z[5];
            let ps = (d1 * d1 - *px * *px - py * py).sqrt();
            let den = ps * c - *px * s;
            let tau = z[0] * s / den;
            z[0] = z[0] * ps / den;
            z[2] += tau * py;
            z[4] += tau * d1;
            *px = *px * c + ps * s;
        };
        let wedge = |z: &mut [f64; 6], px: &mut f64, py: f64, w: &[f64]| {
            let d1 = 1.0 + z[5];
            let pperp2 = d1 * d1 - py * py;
            let ps = (pperp2 - *px * *px).sqrt();
            let x = z[0];
            let px1 = *px * w[1] + (ps - w[5] * x) * w[2];
            let ps1 = (pperp2 - px1 * px1).sqrt();
            let num = x * *px * w[3] + w[4] * (2.0 * x * ps - w[5] * x * x);
            let x1 = x * w[1] + num / (ps1 + ps * w[1] - *px * w[2]);
            let pperp = pperp2.sqrt();
            let alpha = w[0] + (*px / pperp).asin() - (px1 / pperp).asin();
            z[0] = x1;
            z[2] += alpha * py * w[6];
            z[4] += alpha * d1 * w[6];
            *px = px1;
        };
        let edge_fringe = |z: &mut [f64; 6], px: f64, py: &mut f64, t: f64, a: f64, b: f64| {
            let d1 = 1.0 + z[5];
            let pz = (d1 * d1 - px * px).sqrt();
            let u = px / pz;
            let g = (u - t) / (1.0 + u * t);
            let gg = 1.0 + g * g;
            let y = z[2];
            let q = a * y * y * gg / pz;
            z[0] += q;
            z[4] += q * px / d1;
            *py -= b * y * g;
        };
        let wedge_edge = |z: &mut [f64; 6], px: &mut f64, py: &mut f64, w: &[f64], entrance: bool| {
            if entrance {
                rotate_frame(z, px, *py, w[0], w[1]);
                edge_fringe(z, *px, py, w[9], w[10], w[11]);
                wedge(z, px, *py, &w[2..9]);
            } else {
                wedge(z, px, *py, &w[2..9]);
                edge_fringe(z, *px, py, w[9], w[10], w[11]);
                rotate_frame(z, px, *py, w[0], w[1]);
            }
        };
        let we = &q[24 + 7 * q[13] as usize..];
        if we[0] != 0.0 {
            wedge_edge(z, &mut px, &mut py, &we[1..13], true);
        } else {
            if q[4] != 0.0 {
                fringe(z, px, &mut py, q[0], q[1]);
            }
            if q[5] != 0.0 {
                edge(z, &mut px, &mut py, q[6], q[7]);
            }
        }
        if q[11] == 0.0 {
            dipole(z, &mut px, py, &q[18..24]);
        } else {
            for _ in 0..q[12] as usize {
                for w in 0..q[13] as usize {
                    let a = &q[24 + 7 * w..31 + 7 * w];
                    dipole(z, &mut px, py, a);
                    let (x, y, m, t) = (z[0], z[2], &q[14..18], a[6]);
                    px -= t * (m[0] * x + m[1] * (x * x - y * y) + m[2] * (x * x - 0.5 * y * y));
                    py += t * (m[0] * y + m[3] * x * y);
                    dipole(z, &mut px, py, a);
                }
            }
        }
        if we[13] != 0.0 {
            wedge_edge(z, &mut px, &mut py, &we[14..26], false);
        } else {
            if q[8] != 0.0 {
                edge(z, &mut px, &mut py, q[9], q[10]);
            }
            if q[4] != 0.0 {
                fringe(z, px, &mut py, q[2], q[3]);
            }
        }
    } else {
        let n = q[1] as usize;
        let kick = |x: f64, y: f64, f: f64| {
            let (mut re, mut im) = (1.0, 0.0);
            for _ in 0..n {
                let r = re * x - im * y;
                im = re * y + im * x;
                re = r;
            }
            (-(f * re), f * im)
        };
        let drift = |z: &mut [f64; 6], px: f64, py: f64, t: f64| {
            let ps = longitudinal(z[5], px, py);
            z[0] += t * px / ps;
            z[2] += t * py / ps;
            z[4] += t * (1.0 + z[5]) / ps;
        };
        if q[0] != 0.0 {
            let (dx, dy) = kick(z[0], z[2], q[4]);
            px += dx;
            py += dy;
        } else {
            for _ in 0..q[2] as usize {
                for w in 0..q[3] as usize {
                    let a = &q[5 + 2 * w..7 + 2 * w];
                    drift(z, px, py, a[0]);
                    let (dx, dy) = kick(z[0], z[2], a[1]);
                    px += dx;
                    py += dy;
                    drift(z, px, py, a[0]);
                }
            }
        }
    }
    let ps = longitudinal(z[5], px, py);
    z[1] = px / ps;
    z[3] = py / ps;
    if k[0] != 0.0 {
        rotate(z, k[3], k[4]);
    }
}
