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
