//! A bare-muon track (`amu` in f2k) as PPC's rules make it (specs photon.md §3.4–3.5,
//! photon-ppc-phase2.md §8), checked photon by photon on the emission (issue #14: "a muon track
//! against your own reasoning about PPC's rules, compare with hadr and amu in the spec"):
//!
//! * light: L·(1 + extra) metres of bare-track equivalent, extra = max(0, 0.1880 + 0.0206 ln E)·0.910/0.9216,
//!   times ppm/xR² photons per metre, Poisson-drawn;
//! * position uniform along the segment, time t₀ + s/c (the muon moves at c, β = 1);
//! * direction: with probability f = 1/(1 + extra) on the Cherenkov cone of the muon axis
//!   (cos θ = 1/n_phase of the photon's wavelength), else on the cone of a secondary's direction
//!   drawn from the cascade angular distribution (a = 0.39, b = 2.61) — as a `hadr` or `e` cascade
//!   does for all its light (f = 0), but spread uniformly along the track instead of a Γ profile.
//!
//! Statistical thresholds are stated per check (fixed seeds).

use std::path::Path;
use warpdrive_core::stats::ks_one_sample;
use warpdrive_core::RandomStream;
use warpdrive_photon::config::Config;
use warpdrive_photon::ice::Layers;
use warpdrive_photon::medium::Medium;
use warpdrive_photon::source::{emit, realise, track_to_spec, Emission, Yield};
use warpdrive_photon::tilt::Tilt;

const C: f64 = 0.299_792_458; // m/ns

fn medium() -> Medium {
    Medium::monochromatic(&Layers::homogeneous(0.02, 0.01), &Config::default(), 400.0, Tilt::None)
}

fn spec(line: &str, y: &Yield) -> warpdrive_photon::source::SourceSpec {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    track_to_spec(Path::new("muon.f2k"), 1, 1, &tokens, y).expect("valid TR line")
}

#[test]
fn amu_light_yield_and_emission_follow_ppc_rules() {
    let y = Yield {
        ppm: 2450.08,
        oversize: 5.0,
    };
    // 200 m of a 1 TeV muon from (10, −20, 30) m, zenith 60°, azimuth 45°, t₀ = 100 ns.
    let s = spec("TR 1 0 amu 10 -20 30 60 45 200 1000 100", &y);
    let extra = (0.1880 + 0.0206 * 1000f64.ln()) * 0.910 / 0.9216;
    let want_mean = 2450.08 / 25.0 * 200.0 * (1.0 + extra);
    assert!(
        (s.mean_photons / want_mean - 1.0).abs() < 1e-12,
        "{} vs {want_mean}",
        s.mean_photons
    );
    let Emission::Track { length, beta, f_direct } = s.emission else {
        panic!("amu must be a track: {:?}", s.emission)
    };
    assert_eq!((length, beta), (200.0, 1.0));
    assert!((f_direct - 1.0 / (1.0 + extra)).abs() < 1e-12);
    // A 1 GeV muon: 0.1880 + 0.0206·0 > 0, so extra = 0.1880·0.987 (light of secondaries is never negative).
    let low = spec("TR 1 0 amu 0 0 0 0 0 10 1 0", &y);
    assert!((low.mean_photons / (2450.08 / 25.0 * 10.0 * (1.0 + 0.1880 * 0.910 / 0.9216)) - 1.0).abs() < 1e-12);

    let src = &realise(std::slice::from_ref(&s), 3)[0];
    // Poisson draw: within 5σ of the mean.
    assert!(
        (src.photons as f64 - want_mean).abs() < 5.0 * want_mean.sqrt(),
        "{} photons",
        src.photons
    );

    let m = medium();
    let axis = s.dir;
    let n = 100_000;
    let mut on_cone = 0usize;
    let mut along: Vec<f64> = Vec::with_capacity(n);
    let mut worst_time = 0f64;
    let mut worst_perp = 0f64;
    for k in 0..n {
        let mut rng = RandomStream::new(11, 7, k as u64);
        let p = emit(src, &m, &mut rng);
        let d = [0, 1, 2].map(|i| f64::from(p.pos[i]) - s.pos[i]);
        let l = d[0] * axis[0] + d[1] * axis[1] + d[2] * axis[2];
        let perp = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] - l * l).max(0.0).sqrt();
        worst_perp = worst_perp.max(perp);
        along.push(l / 200.0);
        worst_time = worst_time.max((f64::from(p.time) - (100.0 + l / C)).abs());
        let cos = (0..3).map(|i| f64::from(p.dir[i]) * axis[i]).sum::<f64>();
        let n_phase = f64::from(m.slices[p.slice as usize].n_phase);
        if (cos - 1.0 / n_phase).abs() < 2e-5 {
            on_cone += 1;
        }
    }
    // Emission points lie on the segment (f32 positions: 1e-4 m) and are uniform along it
    // (KS against U(0, 1), reject at p < 0.01).
    assert!(worst_perp < 1e-3, "off the track by {worst_perp} m");
    let p_ks = ks_one_sample(&along, |x| x.clamp(0.0, 1.0)).p_value;
    assert!(p_ks > 0.01, "positions not uniform along the track: KS p = {p_ks}");
    // Times: t₀ + s/c to f32 precision (100 ns + 667 ns: 1e-4 ns).
    assert!(worst_time < 2e-4, "time off by {worst_time} ns");
    // Cherenkov photons of the bare muon: fraction f (binomial, 5σ). Photons from secondaries
    // land exactly on the muon's cone with probability ~0 (their ξ is continuous).
    let frac = on_cone as f64 / n as f64;
    let f = 1.0 / (1.0 + extra);
    let sigma = (f * (1.0 - f) / n as f64).sqrt();
    assert!((frac - f).abs() < 5.0 * sigma, "on-cone fraction {frac} vs f = {f} ± {sigma}");
}

#[test]
fn a_hadronic_cascade_has_no_direct_cone_and_its_light_is_scaled() {
    // The same line as a cascade: `hadr` puts all light on secondaries' cones (f = 0), with the
    // π⁺ yield fraction F(E) = 1 − (E/E0)^(−m)(1 − f0) of an EM cascade's 5.321·0.910/0.9216·E metres.
    let y = Yield {
        ppm: 2450.08,
        oversize: 1.0,
    };
    let h = spec("TR 1 0 hadr 0 0 0 0 0 0 1000 0", &y);
    let e = spec("TR 1 0 e 0 0 0 0 0 0 1000 0", &y);
    let (f, _) = warpdrive_photon::source::hadron_fraction(1000.0);
    let want_f = 1.0 - (1000.0f64 / 0.18791678).powf(-0.16267529) * (1.0 - 0.30974123);
    assert!((f - want_f).abs() < 1e-12);
    assert!(
        (h.mean_photons / e.mean_photons - f).abs() < 1e-12,
        "{} / {}",
        h.mean_photons,
        e.mean_photons
    );
    assert!((e.mean_photons - 2450.08 * 5.321 * 0.910 / 0.9216 * 1000.0).abs() < 1e-6 * e.mean_photons);
    assert!(matches!(h.emission, Emission::Cascade { .. }));
}
