//! Analytic checks of the propagation (fixed seeds, thresholds stated per test).

use warpdrive_core::progress::Progress;
use warpdrive_core::stats::ks_one_sample;
use warpdrive_core::RandomStream;
use warpdrive_photon::collision::DomIndex;
use warpdrive_photon::config::Config;
use warpdrive_photon::geometry::{Dom, Geometry, DOM_RADIUS};
use warpdrive_photon::ice::Layers;
use warpdrive_photon::medium::Medium;
use warpdrive_photon::propagate::{layer_walk, run};
use warpdrive_photon::source::{realise, Emission, SourceSpec};
use warpdrive_photon::tilt::Tilt;

/// A medium with practically no scattering (b_e = 1e-9 /m) and absorption `a` at 400 nm.
fn absorber(a: f64) -> Medium {
    let l = Layers::homogeneous(1e-9, a);
    Medium::monochromatic(&l, &Config::default(), 400.0, Tilt::None)
}

/// Absorption-only medium: path lengths to absorption follow survival e^(−a·x). Two layers with
/// different absorption: the walk must give survival exp(−∫a dl) across the boundary. KS against
/// the analytic CDF, 50 000 photons, reject at p < 0.01.
#[test]
fn absorption_only_gives_exponential_survival() {
    let mut l = Layers::homogeneous(1e-9, 0.02);
    l.rows.push(l.rows[0]);
    l.rows[0].depth = 1000.0;
    l.rows[1].depth = 1010.0;
    l.rows[1].adust400 *= 4.0;
    l.dh = 10.0;
    let m = Medium::monochromatic(&l, &Config::default(), 400.0, Tilt::None);
    let (a_low, a_high) = (f64::from(m.abs[0]), f64::from(m.abs[1]));
    // Start 3 m below the boundary between layer 0 (lower) and layer 1, moving up at cos 0.6.
    let (z0, nz) = (m.hmin + 2.0, 0.6f32);
    let to_boundary = 3.0 / 0.6;
    let mut rng = RandomStream::new(77, 0, 0);
    let xs: Vec<f64> = (0..50_000)
        .map(|_| f64::from(layer_walk(&m, 0, z0, nz, 1e30, rng.exponential(), 1.0).length))
        .collect();
    let cdf = |x: f64| {
        let depth = if x < to_boundary {
            a_low * x
        } else {
            a_low * to_boundary + a_high * (x - to_boundary)
        };
        1.0 - (-depth).exp()
    };
    let t = ks_one_sample(&xs, cdf);
    assert!(t.p_value > 0.01, "{t:?}");
}

/// `n` photons from an isotropic point source at the origin (exact count).
fn isotropic(n: f64) -> SourceSpec {
    SourceSpec {
        event: 0,
        pos: [0.0; 3],
        dir: [0.0, 0.0, 1.0],
        time: 0.0,
        emission: Emission::Isotropic,
        mean_photons: n,
        exact: true,
        yield_sigma: 0.0,
        yield_cap: f64::INFINITY,
        own_dom: None,
    }
}

/// A geometry of one DOM at (d, 0, 0).
fn one_dom(d: f64) -> Geometry {
    Geometry {
        doms: vec![Dom {
            string: 1,
            om: 1,
            pos: [d, 0.0, 0.0],
            rde: 1.0,
            high_qe: false,
            cable_deg: None,
            axis: None,
        }],
        source: "one DOM".into(),
    }
}

/// Isotropic point source at distance D from one DOM in a non-scattering absorbing medium,
/// oversize 1 (photon killed on hit): the hit fraction is
/// ½ ∫_{cos α}^{1} e^(−a·s(θ)) dcos θ with sin α = R/D and s(θ) = D cos θ − √(R² − D² sin²θ).
/// 4 × 10⁶ photons; the count must lie within 4 Poisson standard deviations.
#[test]
fn isotropic_source_hits_one_sphere_at_the_expected_rate() {
    let (d, a) = (2.0f64, 0.05f64);
    let m = absorber(a);
    let geo = one_dom(d);
    let idx = DomIndex::new(&geo, 1.0);
    let spec = isotropic(4e6);
    let sources = realise(&[spec], 5);
    let hits = run(&m, &idx, &sources, 5, &Progress::hidden());
    let r = DOM_RADIUS;
    let cos_a = (1.0 - (r / d).powi(2)).sqrt();
    let n = 20_000;
    let mut integral = 0.0;
    for i in 0..n {
        let c = cos_a + (1.0 - cos_a) * (i as f64 + 0.5) / n as f64;
        let s = d * c - (r * r - d * d * (1.0 - c * c)).max(0.0).sqrt();
        integral += (-a * s).exp() * (1.0 - cos_a) / n as f64;
    }
    let expected = 4e6 * 0.5 * integral;
    let got = hits.len() as f64;
    assert!(
        (got - expected).abs() < 4.0 * expected.sqrt(),
        "hits {got} vs expected {expected:.1}"
    );
    // Every hit is on the near side of the sphere and at the right time: t = s·n_g/c.
    for h in &hits {
        assert!(h.impact[0] < 0.0);
        let s = f64::from(h.time) / f64::from(m.slices[0].ocm);
        assert!(s > d - r - 1e-3 && s < d + 1e-3, "{s}");
    }
}

/// Oversize xR: the pancake keeps the cross-section ×xR² (hit rate ×xR²) while a photon that
/// hits continues. In the same set-up with xR = 5 the rate is ≈ 25× that of xR = 1 (the
/// oversized sphere subtends a slightly larger solid angle than xR² times; exact ratio computed).
#[test]
fn oversize_scales_hit_rate_by_its_square() {
    let (d, a) = (5.0f64, 0.05f64);
    let m = absorber(a);
    let geo = one_dom(d);
    let spec = isotropic(1e6);
    let sources = realise(&[spec], 6);
    let n1 = run(&m, &DomIndex::new(&geo, 1.0), &sources, 6, &Progress::hidden()).len() as f64;
    let n5 = run(&m, &DomIndex::new(&geo, 5.0), &sources, 6, &Progress::hidden()).len() as f64;
    let frac = |r: f64| 0.5 * (1.0 - (1.0 - (r / d).powi(2)).sqrt());
    let want = frac(5.0 * DOM_RADIUS) / frac(DOM_RADIUS);
    let ratio = n5 / n1;
    let se = ratio * (1.0 / n1 + 1.0 / n5).sqrt();
    assert!((ratio - want).abs() < 4.0 * se, "ratio {ratio} vs {want} ± {se}");
}

/// Continue after hit (PPC `pro.cu`): a hit ends PPC's segment at the hit and the photon goes on
/// from there, so a DOM behind another one on the same straight path is hit too. Two DOMs at 3 m
/// and 6 m on the x axis, oversize 5 (radius R' = 0.8255 m), a non-scattering medium absorbing
/// with a = 0.05 /m, 10⁶ isotropic photons from the origin. The far DOM's cone (half-angle
/// asin(R'/6) = 7.9°) lies inside the near one's (15.97°): before this rule it got no hit at all.
/// Expected far-DOM hits: N·½ ∫_{cos α}^{1} e^(−a·h(θ)) dcos θ, h(θ) = D cos θ − √(R'² − D² sin²θ)/xR
/// (the pancake entry); within 4 Poisson σ. Every photon that hits the far DOM hit the near one
/// first (hit ordinal 1).
#[test]
fn a_photon_goes_on_after_a_hit_and_hits_the_dom_behind() {
    let (d1, d2, a, xr) = (3.0f64, 6.0f64, 0.05f64, 5.0f64);
    let m = absorber(a);
    let mut geo = one_dom(d1);
    let mut far = geo.doms[0].clone();
    far.om = 2;
    far.pos = [d2, 0.0, 0.0];
    geo.doms.push(far);
    let idx = DomIndex::new(&geo, xr);
    let n_photons = 1e6;
    let sources = realise(&[isotropic(n_photons)], 8);
    let hits = run(&m, &idx, &sources, 8, &Progress::hidden());
    let far_hits: Vec<_> = hits.iter().filter(|h| h.dom == 1).collect();
    let r = xr * DOM_RADIUS;
    let cos_a = (1.0 - (r / d2).powi(2)).sqrt();
    let n = 20_000;
    let mut integral = 0.0;
    for i in 0..n {
        let c = cos_a + (1.0 - cos_a) * (i as f64 + 0.5) / n as f64;
        let h = d2 * c - (r * r - d2 * d2 * (1.0 - c * c)).max(0.0).sqrt() / xr;
        integral += (-a * h).exp() * (1.0 - cos_a) / n as f64;
    }
    let expected = n_photons * 0.5 * integral;
    let got = far_hits.len() as f64;
    assert!(
        (got - expected).abs() < 4.0 * expected.sqrt(),
        "far-DOM hits {got} vs expected {expected:.1}"
    );
    assert!(far_hits.iter().all(|h| h.seq == 1), "the far DOM is always the second hit");
}

/// A flasher's own DOM (PPC `ofla`): not oversized, and a photon that comes back to it is
/// absorbed without a hit; with OFLA=0 (no own DOM) the same photon is a hit on the oversized
/// DOM and goes on (to its absorption 10 m out). One DOM at (3, 0, 0), a photon from the origin
/// along +x.
#[test]
fn a_flasher_photon_coming_back_to_its_own_dom_is_absorbed() {
    use warpdrive_photon::propagate::{step, PhotonState, SegmentEnd};
    use warpdrive_photon::source::Photon;
    let m = absorber(0.001);
    let idx = DomIndex::new(&one_dom(3.0), 5.0);
    for (own, impact_y, want) in [
        (Some(0), 0.10f32, SegmentEnd::Killed),
        (Some(0), 0.30, SegmentEnd::Absorbed), // outside R, inside R': passes, then absorbed
        (None, 0.30, SegmentEnd::Absorbed),
    ] {
        let mut spec = isotropic(1.0);
        spec.own_dom = own;
        let src = realise(&[spec], 1).remove(0);
        let photon = Photon {
            pos: [0.0, impact_y, 0.0],
            dir: [1.0, 0.0, 0.0],
            time: 0.0,
            slice: 0,
            killed: false,
        };
        let mut rng = RandomStream::new(1, 0, 0);
        let mut st = PhotonState::start(photon, &mut rng);
        // Absorbed after 10 m (a = 0.001 /m), no scattering (b_e = 1e-9 /m): the DOM comes first.
        (st.tot, st.sca_depth) = (0.01, 1.0);
        let mut out = Vec::new();
        let end = step(&m, &idx, &src, 0, 0, &mut st, &mut rng, &mut out);
        assert_eq!(end, want, "own {own:?}, impact parameter {impact_y}");
        assert_eq!(out.len(), usize::from(own.is_none()), "hits for own {own:?}");
    }
}

/// Multi-PMT module shapes (PPC's Rr, Rz; photon-ppc-phase2.md §7): an isotropic point source 1 m
/// from one module, oversize 1, no scattering, 2 × 10⁶ photons. The hit fraction must equal the
/// solid angle the module subtends / 4π, computed independently in f64 on a 1500 × 1500 grid of
/// directions in the cone around the module (ray against the quadric: spheroid
/// (x² + y²)/R² + z²/(F·R)² ≤ 1, or the cylinder's side |z| < |F|·R), within 4 Poisson σ: a
/// prolate spheroid (R 0.2 m, Rz 0.3 m) seen side-on and end-on, and a cylinder (R 0.2 m,
/// half-height 0.4 m) side-on; end-on the cylinder (no caps) gets no hit at all.
#[test]
fn shaped_modules_are_hit_at_their_solid_angle() {
    let m = absorber(1e-6);
    for (shape, centre) in [
        ([0.2f64, 1.5], [1.0f64, 0.0, 0.0]),
        ([0.2, 1.5], [0.0, 0.0, 1.0]),
        ([0.2, -2.0], [1.0, 0.0, 0.0]),
        ([0.2, -2.0], [0.0, 0.0, 1.0]),
    ] {
        let mut geo = one_dom(0.0);
        geo.doms[0].pos = centre;
        let idx = DomIndex::build(&geo, 1.0, 0.0, Some(&[shape]));
        let n_photons = 2e6;
        let sources = realise(&[isotropic(n_photons)], 9);
        let got = run(&m, &idx, &sources, 9, &Progress::hidden()).len() as f64;
        let omega = solid_angle(shape, centre);
        let expected = n_photons * omega / (4.0 * std::f64::consts::PI);
        eprintln!("shape {shape:?} at {centre:?}: {got} hits, solid angle gives {expected:.1}");
        assert!(
            (got - expected).abs() <= 4.0 * expected.sqrt().max(1.0),
            "shape {shape:?} at {centre:?}: {got} hits vs {expected:.1}"
        );
    }
}

/// Solid angle [sr] of a module of shape [R, F] centred at `c` (|c| = 1) seen from the origin.
fn solid_angle(shape: [f64; 2], c: [f64; 3]) -> f64 {
    let [r, f] = shape;
    // The cone around c that holds the module's bounding sphere.
    let reach = if f > 0.0 { r * f.max(1.0) } else { r * (1.0 + f * f).sqrt() };
    let cos_max = (1.0 - reach * reach).sqrt();
    // Orthonormal frame (c, u, v).
    let u = if c[2].abs() < 0.9 { [c[1], -c[0], 0.0] } else { [0.0, c[2], -c[1]] };
    let un = (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt();
    let u = u.map(|x| x / un);
    let v = [c[1] * u[2] - c[2] * u[1], c[2] * u[0] - c[0] * u[2], c[0] * u[1] - c[1] * u[0]];
    let hits = |n: [f64; 3]| {
        // Ray t·n against the quadric about c.
        let (ff, cyl) = if f > 0.0 { (1.0 / (f * f), false) } else { (0.0, true) };
        let a = n[0] * n[0] + n[1] * n[1] + ff * n[2] * n[2];
        if a <= 0.0 {
            return false;
        }
        let b = n[0] * c[0] + n[1] * c[1] + ff * n[2] * c[2];
        let cc = c[0] * c[0] + c[1] * c[1] + ff * c[2] * c[2] - r * r;
        let disc = b * b - a * cc;
        if disc < 0.0 {
            return false;
        }
        let t = (b - disc.sqrt()) / a;
        t > 0.0 && (!cyl || (t * n[2] - c[2]).abs() < f.abs() * r)
    };
    let k = 1500;
    let mut sum = 0.0;
    for i in 0..k {
        let ct = cos_max + (1.0 - cos_max) * (i as f64 + 0.5) / k as f64;
        let st = (1.0 - ct * ct).sqrt();
        for j in 0..k {
            let ph = std::f64::consts::TAU * (j as f64 + 0.5) / k as f64;
            let (sp, cp) = ph.sin_cos();
            let n = [0, 1, 2].map(|q| ct * c[q] + st * (cp * u[q] + sp * v[q]));
            if hits(n) {
                sum += 1.0;
            }
        }
    }
    sum / (k * k) as f64 * std::f64::consts::TAU * (1.0 - cos_max)
}

/// Continue after hit must end even when DOMs coincide (a malformed geometry with a module listed
/// twice at one position): the photon, advanced to one module's entry point, finds the other's
/// entry at distance 0 ahead, and back, without moving. Each segment records at most
/// `propagate::MAX_HITS_PER_SEGMENT` hits (the kernel's WD_MAX_SEGMENT_HITS) and the run ends.
/// Two modules at (3, 0, 0), oversize 5, 10⁵ isotropic photons in a non-scattering absorber.
#[test]
fn coincident_doms_do_not_trap_a_photon() {
    let m = absorber(0.05);
    let mut geo = one_dom(3.0);
    let mut twin = geo.doms[0].clone();
    twin.om = 2;
    geo.doms.push(twin);
    let idx = DomIndex::new(&geo, 5.0);
    let sources = realise(&[isotropic(1e5)], 9);
    let hits = run(&m, &idx, &sources, 9, &Progress::hidden());
    assert!(!hits.is_empty());
    let mut per_photon: std::collections::HashMap<u64, u32> = Default::default();
    for h in &hits {
        *per_photon.entry(h.photon).or_default() += 1;
    }
    let most = per_photon.values().copied().max().unwrap_or(0);
    eprintln!(
        "{} hits, {} photons with hits, at most {most} per photon",
        hits.len(),
        per_photon.len()
    );
    assert!(
        most <= warpdrive_photon::propagate::MAX_HITS_PER_SEGMENT,
        "{most} hits on one photon"
    );
}
