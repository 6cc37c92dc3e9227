//! The fast mode's layer walk and birefringence path integrals (precise twins:
//! `propagate::layer_walk`, `Birefringence::path_integrals`): the same arithmetic, with the
//! layer index rounded by truncating z + ½ (round-half-up; `f32::round` is a libm call on
//! baseline x86-64 and sits on every segment's critical path), and inlined into the loop.

use super::math::{Plain, Poly};
use crate::birefringence::Birefringence;
use crate::medium::Medium;
use crate::propagate::Segment;

/// The layer of tilt-corrected height `zp`, clamped to the table (`Medium::layer_of`).
#[inline(always)]
#[must_use]
pub fn layer_of(m: &Medium, zp: f32) -> usize {
    let v = (zp - m.hmin) * (1.0 / m.dh) + 0.5;
    if v >= 1.0 {
        (v as usize).min(m.n_layers - 1)
    } else {
        0
    }
}

/// `propagate::layer_walk` (same operations; see there).
#[inline(always)]
#[must_use]
pub fn layer_walk(m: &Medium, slice: u32, zp: f32, nz: f32, sca_depth: f32, tot: f32, abs_factor: f32) -> Segment {
    let base = slice as usize * m.n_layers;
    let sca = &m.sca[base..base + m.n_layers];
    let abs = &m.abs[base..base + m.n_layers];
    layer_walk_with::<Plain>(m, zp, nz, sca_depth, tot, |j| (sca[j], abs[j] * abs_factor), |_, _| {})
}

/// [`layer_walk`] with the coefficients (scattering, absorption × its factor) of layer j from
/// `coef`, calling `crossed(j, l)` with the path length in each layer it crosses, the last one's
/// too (the precise twin's factored coefficients and birefringence integrals, `fast::twin`).
#[inline(always)]
#[must_use]
pub fn layer_walk_with<P: Poly>(
    m: &Medium,
    zp: f32,
    nz: f32,
    mut sca_depth: f32,
    mut tot: f32,
    coef: impl Fn(usize) -> (f32, f32),
    mut crossed: impl FnMut(usize, f32),
) -> Segment {
    let mut j = layer_of(m, zp);
    let (last, half) = if nz > 0.0 { (m.n_layers - 1, 0.5f32) } else { (0, -0.5f32) };
    let inv_nz = 1.0 / nz;
    let mut dl = if nz == 0.0 || j == last {
        f32::INFINITY
    } else {
        ((P::gmad(j as f32 + half, m.dh, m.hmin) - zp) * inv_nz).max(0.0)
    };
    let dl_layer = m.dh * inv_nz.abs();
    let mut length = 0.0f32;
    loop {
        let (s, a) = coef(j);
        let (sd, ad) = (s * dl, a * dl);
        if sca_depth <= sd || tot <= ad {
            let absorbed = tot * s <= sca_depth * a;
            let l = if absorbed { tot / a } else { sca_depth / s };
            crossed(j, l);
            return Segment {
                length: length + l,
                // tot − a·l through `Poly::gmad` (the twin's WD_TWIN_FMA_GEOM fuses it).
                tot: if absorbed { 0.0 } else { P::gmad(-a, l, tot) },
                bfr: None,
            };
        }
        crossed(j, dl);
        length += dl;
        sca_depth -= sd;
        tot -= ad;
        if half > 0.0 {
            j += 1;
        } else {
            j -= 1;
        }
        dl = if j == last { f32::INFINITY } else { dl_layer };
    }
}

/// `Birefringence::path_integrals` (same operations; see there).
#[inline(always)]
#[must_use]
pub fn path_integrals(b: &Birefringence, hmin: f32, dh: f32, zp: f32, nz: f32, len: f32) -> (f32, f32) {
    let n = b.ra.len();
    let layer = |z: f32| {
        let v = (z - hmin) * (1.0 / dh) + 0.5;
        if v >= 1.0 {
            (v as usize).min(n - 1)
        } else {
            0
        }
    };
    let (i, j) = (layer(zp), layer(zp + nz * len));
    let (mut ra, mut rb);
    if i == j {
        ra = len * b.ra[i];
        rb = len * b.rb[i];
    } else {
        let up = j > i;
        let (zi, zj) = ((zp - hmin) / dh, (zp + nz * len - hmin) / dh);
        let h = if up { i as f32 + 0.5 - zi } else { zi - (i as f32 - 0.5) };
        let g = if up { zj - (j as f32 - 0.5) } else { j as f32 + 0.5 - zj };
        ra = h * b.ra[i] + g * b.ra[j];
        rb = h * b.rb[i] + g * b.rb[j];
        let (lo, hi) = if up { (i + 1, j) } else { (j + 1, i) };
        for k in lo..hi {
            ra += b.ra[k];
            rb += b.rb[k];
        }
        let f = dh / nz.abs();
        ra *= f;
        rb *= f;
    }
    (ra.max(0.0), rb.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::data_dir;
    use warpdrive_core::RandomStream;

    /// The fast walk follows the precise one (the same layers but at exact half-way points).
    #[test]
    fn fast_walk_follows_the_precise_one() {
        let det = crate::detector::Detector::build(&crate::detector::DetectorOptions {
            ice_dir: Some(data_dir().join("ice/spice_ftp-v3m")),
            ..Default::default()
        })
        .unwrap();
        let (m, b) = (&det.medium, det.medium.bfr.as_ref().unwrap());
        let mut r = RandomStream::new(61, 0, 0);
        for _ in 0..200_000 {
            let zp = m.hmin + (m.n_layers as f32 + 4.0) * m.dh * r.uniform() - 2.0 * m.dh;
            let nz = 2.0 * r.uniform() - 1.0;
            let (s, t, slice) = (r.exponential(), r.exponential(), r.next_u32() % 512);
            let (f, e) = (
                layer_walk(m, slice, zp, nz, s, t, 1.1),
                crate::propagate::layer_walk(m, slice, zp, nz, s, t, 1.1),
            );
            assert!(
                (f.length - e.length).abs() <= 1e-5 * e.length.max(1.0) && (f.tot - e.tot).abs() <= 1e-5,
                "{f:?} {e:?}"
            );
            let len = 50.0 * r.uniform();
            let (fa, ea) = (
                path_integrals(b, m.hmin, m.dh, zp, nz, len),
                b.path_integrals(m.hmin, m.dh, zp, nz, len),
            );
            assert!(
                (fa.0 - ea.0).abs() <= 1e-4 * ea.0.max(1.0) && (fa.1 - ea.1).abs() <= 1e-4 * ea.1.max(1.0),
                "{fa:?} {ea:?}"
            );
        }
    }
}
