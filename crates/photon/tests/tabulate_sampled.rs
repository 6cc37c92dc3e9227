//! The sampled track-length estimator (`--estimator sampled`, docs/spline.md "Estimators")
//! against the exact one: the same photons (same paths: the sample offset has its own stream),
//! no loss, unbiased totals, cell-by-cell agreement within the stated variances. Fixed seeds;
//! thresholds stated per test.

mod step_bins;

use warpdrive_core::engine::{Control, Device};
use warpdrive_photon::config::Config;
use warpdrive_photon::ice::Layers;
use warpdrive_photon::medium::Medium;
use warpdrive_photon::tabulate::agreement::{independent, CHI2_INDEPENDENT_LIMIT};
use warpdrive_photon::tabulate::{Acceptance, Edges, Estimator, Tables, Tabulate, TabulateOptions, DEFAULT_SAMPLE_STEP};
use warpdrive_photon::tilt::Tilt;

fn cpu() -> Control {
    Control::new().device(Device::Cpu).threads(Some(2))
}

fn request(seed: u64) -> TabulateOptions {
    TabulateOptions {
        ice: warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")).map(|d| d.join("ice/spice_3.2.1")),
        zenith: vec![40.0],
        azimuth: 30.0,
        photons: 20_000,
        radial: Edges::Linear {
            lo: 0.0,
            hi: 150.0,
            bins: 15,
        },
        azimuth_bins: Edges::Linear {
            lo: 0.0,
            hi: 180.0,
            bins: 6,
        },
        delay: Some(Edges::Linear {
            lo: -10.0,
            hi: 1000.0,
            bins: 25,
        }),
        margin: 20.0,
        seed,
        ..Default::default()
    }
}

fn run(o: &TabulateOptions, e: Estimator) -> Tables {
    Tabulate::new(o).unwrap().with_estimator(e).unwrap().run(&cpu()).unwrap()
}

const STEPS: [f64; 3] = [1.0, 5.0, f64::INFINITY];

/// The sampled estimators the agreement tests run: the fixed steps of [`STEPS`] and the adaptive
/// comb (the GPU's default), with their names.
fn samplers() -> Vec<(String, Estimator)> {
    STEPS
        .iter()
        .map(|&s| (format!("step {s} m"), Estimator::sampled(s)))
        .chain([("adaptive step".to_string(), Estimator::adaptive())])
        .collect()
}

/// The same photons: the paths are the exact estimator's (segments, absorbed, escaped the same
/// integers), every photon absorbed or escaped (no loss), and each sampled table agrees with
/// the exact one — χ²/ndf ≤ CHI2_INDEPENDENT_LIMIT with the variances Σx² of both and the totals
/// within 1 % (shared photons correlate the two, so χ²/ndf comes out below the independent
/// runs' ≈ 1). A table of another source direction (zenith 100°) fails the same comparison.
#[test]
fn sampled_and_exact_agree_on_the_same_photons() {
    let o = request(1);
    let exact = run(&o, Estimator::Exact);
    let n = o.photons;
    assert_eq!(exact.hist.absorbed + exact.hist.escaped, n);
    for (step, e) in samplers() {
        let s = run(&o, e);
        let (he, hs) = (&exact.hist, &s.hist);
        assert_eq!(
            (hs.segments, hs.absorbed, hs.escaped),
            (he.segments, he.absorbed, he.escaped),
            "step {step}"
        );
        assert!(hs.points > 0 && hs.entries <= hs.points, "{} {}", hs.entries, hs.points);
        let a = independent(&exact, &s);
        eprintln!(
            "{step}: {:.2} points, {:.2} runs, {:.2} segments per photon; {}",
            hs.points as f64 / n as f64,
            hs.entries as f64 / n as f64,
            hs.segments as f64 / n as f64,
            a.report()
        );
        assert!(a.passes(), "{step}: {}", a.report());
    }
    let other = run(
        &TabulateOptions {
            zenith: vec![100.0],
            ..o.clone()
        },
        Estimator::sampled(1.0),
    );
    let a = independent(&exact, &other);
    assert!(!a.passes() && a.chi2 / a.ndf as f64 > CHI2_INDEPENDENT_LIMIT, "{}", a.report());
}

/// Independent photons (seeds 1 and 2): sampled against exact and sampled against sampled give
/// χ²/ndf within [0.7, CHI2_INDEPENDENT_LIMIT] — near 1 when the variances Σx² are honest; the
/// run-merged Σx² of the sampled estimator misses a photon's returns to a cell, which this
/// measures (printed, docs/spline.md) — and totals within 1 %.
#[test]
fn independent_runs_agree_within_statistics() {
    let (o1, o2) = (request(1), request(2));
    let exact2 = run(&o2, Estimator::Exact);
    let exact1 = run(&o1, Estimator::Exact);
    let a = independent(&exact1, &exact2);
    eprintln!("exact vs exact: {}", a.report());
    for (step, e) in samplers() {
        let s1 = run(&o1, e);
        let s2 = run(&o2, e);
        for (what, a) in [
            ("sampled vs exact", independent(&exact2, &s1)),
            ("sampled vs sampled", independent(&s2, &s1)),
        ] {
            let per = a.chi2 / a.ndf as f64;
            eprintln!("{step}, {what}: {}", a.report());
            assert!(
                a.passes() && (0.7..=CHI2_INDEPENDENT_LIMIT).contains(&per),
                "{step} {what}: {}",
                a.report()
            );
        }
    }
}

/// Unbiased totals, unit weights in a homogeneous ice (b_e 0.05 /m, a 0.01 /m, g 0.9: the
/// geometric scattering length λ = 2 m), a cascade at the centre of a 60 m sphere, margin 0:
/// each photon's path inside the table is one interval (it starts inside and ends at the first
/// segment end outside), so the exact total is the length inside and the sampled total differs
/// by independent per-photon errors: with a step Δ, points × Δ − length ∈ (−Δ, Δ), variance
/// ≤ Δ²/4; with one point per segment, only the segment crossing the sphere errs, ℓ·(B − p),
/// variance ≤ E[ℓ²]/4 ≤ 6λ²/4 (the crossing segment's length is length-biased: E[ℓ³]/E[ℓ] =
/// 6λ² for exponential lengths). Threshold: |sampled − exact| ≤ 5 σ, σ = that bound × √N.
#[test]
fn sampled_totals_are_unbiased_in_homogeneous_ice() {
    let layers = Layers::homogeneous(0.05, 0.01);
    let medium = Medium::monochromatic(&layers, &Config::default(), 400.0, Tilt::None);
    let lambda = 1.0 / f64::from(medium.sca[0]);
    let o = TabulateOptions {
        photons: 40_000,
        radial: Edges::Linear {
            lo: 0.0,
            hi: 60.0,
            bins: 6,
        },
        delay: None,
        margin: 0.0,
        ..Default::default()
    };
    let req = || {
        Tabulate::new(&o)
            .unwrap()
            .with_medium(medium.clone())
            .with_acceptance(Acceptance::unit())
    };
    let exact = req().with_estimator(Estimator::Exact).unwrap().run(&cpu()).unwrap();
    let inside = exact.hist.inside_length();
    assert!((exact.hist.total_length() - inside).abs() <= exact.hist.rounding_bound(o.photons));
    for step in [0.5, 3.0, 20.0, f64::INFINITY] {
        let s = req().with_estimator(Estimator::sampled(step)).unwrap().run(&cpu()).unwrap();
        let per_photon = if step.is_finite() { step / 2.0 } else { 6f64.sqrt() * lambda / 2.0 };
        let sigma = per_photon * (o.photons as f64).sqrt();
        let d = s.hist.total_length() - inside;
        eprintln!(
            "step {step}: sampled {:.2} m, exact {inside:.2} m, Δ = {d:.2} m = {:.2} σ (σ bound {sigma:.2} m)",
            s.hist.total_length(),
            d / sigma
        );
        assert!(
            d.abs() <= 5.0 * sigma + s.hist.rounding_bound(o.photons),
            "step {step}: Δ {d} m, σ {sigma} m"
        );
        assert_eq!(s.hist.absorbed + s.hist.escaped, o.photons);
    }
    // The adaptive comb (0.1·r from 1 m up to 5 m here: the default polar bins' narrowest θ,
    // 0.1 rad, and half the 10 m radial bins): unbiased as the fixed one (module doc of
    // `tabulate::sampled`); a photon's error has a point's weight (≤ Δ_max) at each end of its
    // path and the changes of Δ between its segments in between, so σ per photon is bounded here
    // by Δ_max/2 + (Δ_max − Δ)/2 (the steps rise and fall along the path).
    let s = req().with_estimator(Estimator::adaptive()).unwrap().run(&cpu()).unwrap();
    let sigma = (5.0 / 2.0 + 4.0 / 2.0) * (o.photons as f64).sqrt();
    let d = s.hist.total_length() - inside;
    eprintln!(
        "adaptive: sampled {:.2} m, exact {inside:.2} m, Δ = {d:.2} m = {:.2} σ (σ bound {sigma:.2} m), {:.1} points a photon",
        s.hist.total_length(),
        d / sigma,
        s.hist.points as f64 / o.photons as f64
    );
    assert!(
        d.abs() <= 5.0 * sigma + s.hist.rounding_bound(o.photons),
        "adaptive: Δ {d} m, σ {sigma} m"
    );
}

/// The adaptive comb's rule from the bins: the narrowest angular bin (here cos θ in fifths:
/// the middle bins, 0 to ±0.2, 0.2014 rad) and half the narrowest radial bin or delay bin in
/// path length (50 ns at twice n_g/c); no room above the step (fine near-source bins) is the
/// fixed comb; cylinders count their axial bins as lengths.
#[test]
fn adaptive_step_from_the_bins() {
    use warpdrive_photon::tabulate::bins::{Binning, Frame, Shape};
    use warpdrive_photon::tabulate::sampled::AdaptiveStep;
    let f = Frame::new([0.0; 3], [0.0, 0.0, 1.0], 1.35, 1.32);
    let lin = |lo: f64, hi: f64, n: usize| (0..=n).map(|i| lo + (hi - lo) * i as f64 / n as f64).collect::<Vec<_>>();
    let b = Binning {
        shape: Shape::Spherical,
        radial: lin(0.0, 300.0, 30),
        azimuth: lin(0.0, 180.0, 9),
        polar: lin(-1.0, 1.0, 10),
        delay: lin(-10.0, 2000.0, 40),
    };
    let a = AdaptiveStep::for_bins(&b, &f, 1.0).expect("room above 1 m");
    let theta = std::f64::consts::FRAC_PI_2 - 0.2f64.acos();
    assert!((a.slope - theta).abs() < 1e-12, "{a:?}");
    let time = 50.25 / (2.0 * f.ng_over_c);
    assert!((a.max - 0.5 * time.min(10.0)).abs() < 1e-9, "{a:?}");
    // Radial edges 0.15·i² m: the first bin is 0.15 m wide, no room above 1 m.
    let fine = Binning {
        radial: (0..=40).map(|i| 0.15 * f64::from(i * i)).collect(),
        ..b.clone()
    };
    assert_eq!(AdaptiveStep::for_bins(&fine, &f, 1.0), None);
    // A cylinder with 2 m axial bins: Δ_max ≤ 1 m, the fixed comb; with 20 m bins, room again.
    let cyl = |dz: f64| Binning {
        shape: Shape::Cylindrical,
        polar: lin(-100.0, 100.0, (200.0 / dz) as usize),
        ..b.clone()
    };
    assert_eq!(AdaptiveStep::for_bins(&cyl(2.0), &f, 1.0), None);
    let c = AdaptiveStep::for_bins(&cyl(20.0), &f, 1.0).expect("room above 1 m");
    assert!((c.slope - 20f64.to_radians()).abs() < 1e-12, "{c:?}");
    assert_eq!((c.half_radial, c.half_axial, c.half_delay), (5.0, 10.0, 25.125));
    assert_eq!((a.half_radial, a.half_axial, a.half_delay), (5.0, f64::INFINITY, 25.125));
}

/// The directional step (`AdaptiveStep::segment_step`) against the rates measured along the
/// segment: on random segments (spheres and cylinders, near and far from the source, photons
/// slower and faster than the frame's direct light) the step times the fastest rate of r (ρ),
/// z, the delay and the direction seen from the source, each found by walking the segment in
/// 2 000 pieces, stays within half a bin (k for the angle), unless the step is the smallest
/// one; and it is as large as that allows: one of the bounds is reached, or the largest step
/// (a whole bin). A radial segment far out takes half a radial bin.
#[test]
fn directional_step_bounds_every_coordinate() {
    use warpdrive_core::RandomStream;
    use warpdrive_photon::tabulate::bins::{Frame, Shape};
    use warpdrive_photon::tabulate::sampled::AdaptiveStep;
    let axis = {
        let a = [0.3f64, -0.4, 0.866];
        let n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
        a.map(|x| x / n)
    };
    let f = Frame::new([5.0, -3.0, 40.0], axis, 1.35, 1.32);
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let mut rng = RandomStream::new(7, 0, 0);
    let mut u = || f64::from(rng.uniform());
    for shape in [Shape::Spherical, Shape::Cylindrical] {
        let b = step_bins::step_bins(shape);
        let a = AdaptiveStep::for_bins(&b, &f, 1.0).expect("room above 1 m");
        // (r or ρ, z along the axis, delay) at distance s along the segment.
        let coords = |x: [f64; 3], t: f64| {
            let p = [x[0] - f.origin[0], x[1] - f.origin[1], x[2] - f.origin[2]];
            let z = dot(p, f.axis);
            match shape {
                Shape::Spherical => {
                    let r = dot(p, p).sqrt();
                    (r, z, t - f.ng_over_c * r, p)
                }
                Shape::Cylindrical => {
                    let q = [p[0] - z * f.axis[0], p[1] - z * f.axis[1], p[2] - z * f.axis[2]];
                    let rho = dot(q, q).sqrt();
                    (rho, z, t - z * f.inv_c - rho * f.cone, q)
                }
            }
        };
        let (mut reached, mut largest, mut smallest) = (0, 0, 0);
        let n = 400;
        for i in 0..n {
            // Starts from 0.5 to 250 m out, directions isotropic, lengths up to 60 m.
            let (ct, ph) = (2.0 * u() - 1.0, std::f64::consts::TAU * u());
            let st = (1.0 - ct * ct).sqrt();
            let dir = [st * ph.cos(), st * ph.sin(), ct];
            let (ct0, ph0, r0) = (2.0 * u() - 1.0, std::f64::consts::TAU * u(), 0.5 + 250.0 * u() * u());
            let st0 = (1.0 - ct0 * ct0).sqrt();
            let x0 = [
                f.origin[0] + r0 * st0 * ph0.cos(),
                f.origin[1] + r0 * st0 * ph0.sin(),
                f.origin[2] + r0 * ct0,
            ];
            let len = 60.0 * u() + 0.01;
            let ocm = f.ng_over_c * (0.97 + 0.06 * u());
            let step = a.segment_step(&f, shape, x0, dir, len, ocm);
            let m = 2000;
            let (mut vr, mut vz, mut vt, mut va) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
            let at = |s: f64| coords([x0[0] + s * dir[0], x0[1] + s * dir[1], x0[2] + s * dir[2]], s * ocm);
            let mut prev = at(0.0);
            for k in 1..=m {
                let s = len * f64::from(k) / f64::from(m);
                let c = at(s);
                let ds = len / f64::from(m);
                vr = vr.max((c.0 - prev.0).abs() / ds);
                vz = vz.max((c.1 - prev.1).abs() / ds);
                vt = vt.max((c.2 - prev.2).abs() / ds);
                // The angle between the two points' directions from the source (the axis).
                let cos = (dot(c.3, prev.3) / (dot(c.3, c.3) * dot(prev.3, prev.3)).sqrt()).clamp(-1.0, 1.0);
                va = va.max(cos.acos() / ds);
                prev = c;
            }
            let half_axial = if shape == Shape::Spherical { f64::INFINITY } else { a.half_axial };
            // The measured rates are averages over pieces: never above the largest, and within a
            // few per cent of it (a sharp peak of the angular rate near the axis is lower in them).
            let bounds = [(vr, a.half_radial), (vz, half_axial), (vt, a.half_delay), (va, a.slope)];
            let over = bounds.iter().map(|&(v, h)| step * v / h).fold(0.0, f64::max);
            if step > a.min {
                assert!(
                    over <= 1.01,
                    "{shape:?} segment {i}: step {step} m goes {over} of the tightest bound (rates {bounds:?})"
                );
            } else {
                smallest += 1;
            }
            if over >= 0.95 {
                reached += 1;
            } else if (step - 2.0 * a.max).abs() < 1e-12 {
                largest += 1;
            } else {
                assert!(step == a.min, "{shape:?} segment {i}: step {step} m reaches {over} of a bound only");
            }
        }
        eprintln!("{shape:?}: {n} segments, {reached} at a bound, {largest} at the largest step, {smallest} at the smallest");
        assert!(reached > n / 4 && largest > 0, "{reached} {largest}");
        // Radially outward, far out: half a radial bin (the delay and the angle hardly change),
        // unless that is above the largest step (cylinders here: 2.31 m of delay bin at the
        // fastest rate, n_g/c + 1/c + cone).
        let x0 = [f.origin[0] + 150.0 * axis[1], f.origin[1] - 150.0 * axis[0], f.origin[2]];
        let out = {
            let v = [x0[0] - f.origin[0], x0[1] - f.origin[1], x0[2] - f.origin[2]];
            let n = dot(v, v).sqrt();
            v.map(|x| x / n)
        };
        let s = a.segment_step(&f, shape, x0, out, 20.0, f.ng_over_c);
        assert!((s - a.half_radial.min(2.0 * a.max)).abs() < 1e-9, "{shape:?}: {s} ({a:?})");
    }
}

/// Bad steps are refused naming the option; `segment` is one point per segment.
#[test]
fn estimator_options_parse_and_check() {
    assert_eq!(Estimator::parse(None, None).unwrap(), None);
    assert_eq!(Estimator::parse(Some("exact"), None).unwrap(), Some(Estimator::Exact));
    assert_eq!(
        Estimator::parse(Some("sampled"), Some("segment")).unwrap(),
        Some(Estimator::sampled(f64::INFINITY))
    );
    assert_eq!(Estimator::parse(None, Some("2.5")).unwrap(), Some(Estimator::sampled(2.5)));
    assert_eq!(Estimator::parse(None, Some("auto")).unwrap(), Some(Estimator::adaptive()));
    assert_eq!(Estimator::parse(Some("sampled"), None).unwrap(), Some(Estimator::adaptive()));
    // auto:MIN: the adaptive comb from MIN metres.
    assert_eq!(
        Estimator::parse(None, Some("auto:1.5")).unwrap(),
        Some(Estimator::Sampled { step: 1.5, adaptive: true })
    );
    assert_eq!(Estimator::parse(None, Some("auto:1")).unwrap(), Some(Estimator::adaptive()));
    assert_eq!(
        Estimator::parse(None, Some("auto:1.5")).unwrap().unwrap().describe(),
        "sampled (adaptive step from 1.5 m)"
    );
    assert_eq!(Estimator::default_for(true), Estimator::adaptive());
    for (name, step, field) in [
        (Some("exact"), Some("1"), "sample_step"),
        (Some("other"), None, "estimator"),
        (Some("sampled"), Some("x"), "sample_step"),
        (None, Some("auto:"), "auto:MIN"),
        (None, Some("auto:x"), "auto:MIN"),
        (Some("exact"), Some("auto:2"), "sample_step"),
    ] {
        let e = Estimator::parse(name, step).unwrap_err().to_string();
        assert!(e.contains(field), "{e}");
    }
    for step in [0.0, -1.0, 0.001, f64::NAN] {
        let o = TabulateOptions {
            estimator: Some(Estimator::sampled(step)),
            ..Default::default()
        };
        let e = Tabulate::new(&o).unwrap_err().to_string();
        assert!(e.contains("sample_step"), "{step}: {e}");
    }
    // The adaptive comb needs a finite smallest step.
    let o = TabulateOptions {
        estimator: Some(Estimator::Sampled {
            step: f64::INFINITY,
            adaptive: true,
        }),
        ..Default::default()
    };
    let e = Tabulate::new(&o).unwrap_err().to_string();
    assert!(e.contains("sample_step") && e.contains("adaptive"), "{e}");
    // … and one of at least MIN_STEP, as the fixed comb.
    for step in ["auto:0", "auto:-1", "auto:0.001", "auto:NaN", "auto:inf"] {
        let o = TabulateOptions {
            estimator: Estimator::parse(None, Some(step)).unwrap(),
            ..Default::default()
        };
        let e = Tabulate::new(&o).unwrap_err().to_string();
        assert!(e.contains("sample_step"), "{step}: {e}");
    }
    assert_eq!(Estimator::default_for(false), Estimator::Exact);
}

/// The lead's estimate (run with --ignored): per photon segments, points, runs, and per cell the
/// sampled N_eff against the exact one on the same photons, and the CPU seconds (1 thread), for
/// the `bench photon --tabulate` request (1 TeV cascade at 2000 m in spice_3.2.1, the default
/// bins), 20 000 photons.
#[test]
#[ignore]
fn measure_estimators() {
    let Some(d) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let o = TabulateOptions {
        ice: Some(d.join("ice/spice_3.2.1")),
        photons: 20_000,
        ..Default::default()
    };
    let one = Control::new().device(Device::Cpu).threads(Some(1));
    let go = |e: Estimator| Tabulate::new(&o).unwrap().with_estimator(e).unwrap().run(&one).unwrap();
    let exact = go(Estimator::Exact);
    let n = o.photons as f64;
    let ce = exact.cells();
    eprintln!(
        "exact: {:.3} s, {:.1} segments/photon, {:.1} cells added/photon",
        exact.seconds,
        exact.hist.segments as f64 / n,
        exact.hist.entries as f64 / n
    );
    for step in [0.25, 0.5, 1.0, 2.0, 5.0, f64::INFINITY] {
        let s = go(Estimator::sampled(step));
        let cs = s.cells();
        let mut ratio: Vec<f64> = ce
            .iter()
            .zip(&cs)
            .filter(|(a, b)| a.n_eff >= 20.0 && b.n_eff > 0.0)
            .map(|(a, b)| b.n_eff / a.n_eff)
            .collect();
        ratio.sort_by(f64::total_cmp);
        let q = |p: f64| ratio[((ratio.len() - 1) as f64 * p) as usize];
        // σ² × time per cell, sampled over exact: (T_s / N_eff,s) / (T_e / N_eff,e).
        let eff = |r: f64| s.seconds / exact.seconds / r;
        eprintln!(
            "step {step}: {:.3} s; {:.1} points, {:.1} runs/photon; N_eff sampled/exact over {} cells (N_eff ≥ 20): 10 % {:.3}, median {:.3}, 90 % {:.3}; σ²·T sampled/exact at the median {:.2}",
            s.seconds,
            s.hist.points as f64 / n,
            s.hist.entries as f64 / n,
            ratio.len(),
            q(0.1),
            q(0.5),
            q(0.9),
            eff(q(0.5))
        );
    }
}

/// Issue #32: how much variance the comb adds at each step, per cell, for the `bench photon
/// --tabulate` request (1 TeV cascade at 2000 m in spice_3.2.1; `FINE=1`: finer bins near the
/// source; `DEPTH=…` another depth; `MUON=1` a muon segment), the fixed steps and the adaptive
/// one (`ADAPT_ONLY=1`: the adaptive one alone; `ADAPT_MIN=1,1.5,2`: from each of these smallest
/// steps, default 1 m). Not a test (`--ignored`, prints). The comb's
/// phase has its own stream, so on one seed
/// the sampled and exact estimators follow the same paths, and E[S_Δ | paths] = S_exact: per
/// cell, Σ_seeds (S_Δ − S_exact)² estimates the comb's variance and the exact estimator's
/// per-photon squares the photons' variance. R = 1 + comb / photons is the factor by which the
/// comb multiplies a cell's variance; R·T (T the GPU time per photon at that step) compares the
/// steps per unit of variance and time.
#[test]
#[ignore]
fn measure_comb_noise() {
    use warpdrive_photon::tabulate::{SQ_UNIT, SUM_UNIT};
    let Some(d) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let seeds: u64 = std::env::var("SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let photons: u64 = std::env::var("PHOTONS").ok().and_then(|s| s.parse().ok()).unwrap_or(50_000);
    let fine = std::env::var("FINE").is_ok_and(|v| v == "1");
    let depth: f64 = std::env::var("DEPTH").ok().and_then(|s| s.parse().ok()).unwrap_or(2000.0);
    // MUON=1: a 20 m muon segment at 60° zenith (gpu-check's second case, in spice_3.2.1).
    let muon = std::env::var("MUON").is_ok_and(|v| v == "1");
    let mut o = TabulateOptions {
        ice: Some(d.join("ice/spice_3.2.1")),
        photons,
        depth: vec![depth],
        ..Default::default()
    };
    if muon {
        o.source = warpdrive_photon::tabulate::SourceKind::MuonSegment;
        o.length = 20.0;
        o.zenith = vec![60.0];
    }
    if fine {
        o.radial = Edges::List((0..=40).map(|i| 0.15 * f64::from(i * i)).collect());
        o.azimuth_bins = Edges::Linear {
            lo: 0.0,
            hi: 180.0,
            bins: 18,
        };
        o.polar = Some(Edges::Linear {
            lo: -1.0,
            hi: 1.0,
            bins: 10,
        });
        o.delay = Some(Edges::List((0..=30).map(|i| -10.0 + 2.0 * f64::from(i * i)).collect()));
    }
    let go = |seed: u64, e: Estimator| {
        let o = TabulateOptions { seed, ..o.clone() };
        Tabulate::new(&o).unwrap().with_estimator(e).unwrap().run(&cpu()).unwrap()
    };
    // Per table and seed, at both levels (time cells, spatial cells): the sums and the
    // per-photon squares.
    let level = |t: &Tables, spatial: bool| -> (Vec<f64>, Vec<f64>) {
        let h = &t.hist;
        if !spatial {
            return (
                h.sum.iter().map(|&v| v as f64 / SUM_UNIT).collect(),
                h.sumsq.iter().map(|&v| v as f64 / SQ_UNIT).collect(),
            );
        }
        let tc = t.binning.time_cells() as usize;
        (
            h.sum.chunks(tc).map(|c| c.iter().sum::<u64>() as f64 / SUM_UNIT).collect(),
            h.spatial_sumsq.iter().map(|&v| v as f64 / SQ_UNIT).collect(),
        )
    };
    let exact: Vec<Tables> = (1..=seeds).map(|s| go(s, Estimator::Exact)).collect();
    eprintln!(
        "{} bins: {} spatial cells, {} cells; {seeds} seeds × {photons} photons; exact {:.1} s a seed",
        if fine { "fine" } else { "default" },
        exact[0].hist.spatial_sumsq.len(),
        exact[0].hist.sum.len(),
        exact[0].seconds
    );
    // R = 1 + comb / photons over the cells with exact N_eff ≥ 20: quantiles, and the mean
    // weighted by N_eff (the cells that carry the table's information).
    // The exact tables' levels, once for every step: [time cells, spatial cells].
    let exact_levels: [Vec<(Vec<f64>, Vec<f64>)>; 2] = [false, true].map(|sp| exact.iter().map(|t| level(t, sp)).collect());
    // (the text, the N_eff-weighted mean)
    let r_of = |samp: &[Tables], spatial: bool| -> (String, f64) {
        let e = &exact_levels[usize::from(spatial)];
        let s: Vec<_> = samp.iter().map(|t| level(t, spatial).0).collect();
        let mut r: Vec<(f64, f64)> = (0..e[0].0.len())
            .filter_map(|c| {
                let tot: f64 = e.iter().map(|x| x.0[c]).sum();
                let ph: f64 = e.iter().map(|x| x.1[c]).sum();
                let comb: f64 = e.iter().zip(&s).map(|(x, y)| (y[c] - x.0[c]).powi(2)).sum();
                let neff = if ph > 0.0 { tot * tot / ph } else { 0.0 };
                (neff >= 20.0).then_some((1.0 + comb / ph, neff))
            })
            .collect();
        r.sort_by(|a, b| a.0.total_cmp(&b.0));
        let q = |p: f64| r[((r.len() - 1) as f64 * p) as usize].0;
        let mean = r.iter().map(|x| x.0 * x.1).sum::<f64>() / r.iter().map(|x| x.1).sum::<f64>();
        let text = format!(
            "{} cells: R 10 % {:.3}, median {:.3}, 90 % {:.3}, 99 % {:.3}, N_eff-weighted mean {:.3}",
            r.len(),
            q(0.1),
            q(0.5),
            q(0.9),
            q(0.99),
            mean
        );
        (text, mean)
    };
    // CSV=path: one row per estimator appended (scripts/tabulate-fom.py joins it with the GPU's
    // rates from `bench photon --tabulate --json`).
    let csv = std::env::var("CSV").ok();
    let case = if muon {
        "muon"
    } else if fine {
        "fine"
    } else {
        "cascade"
    };
    // ADAPT_MIN=1,1.5,2: the adaptive comb from each of these smallest steps (default 1 m).
    let adaptive_min: Vec<f64> = std::env::var("ADAPT_MIN")
        .map(|v| v.split(',').map(|m| m.trim().parse().expect("ADAPT_MIN: metres")).collect())
        .unwrap_or_else(|_| vec![DEFAULT_SAMPLE_STEP]);
    let estimators = [1.0, 2.0, 3.0, 5.0, f64::INFINITY]
        .map(|s| (format!("step {s}"), Estimator::sampled(s)))
        .into_iter()
        .chain(
            adaptive_min
                .iter()
                .map(|&m| (format!("adaptive step from {m} m"), Estimator::Sampled { step: m, adaptive: true })),
        );
    let only = std::env::var("ADAPT_ONLY").is_ok();
    for (name, e) in estimators.filter(|(n, _)| !only || n.starts_with("adaptive")) {
        let samp: Vec<Tables> = (1..=seeds).map(|s| go(s, e)).collect();
        let points = samp.iter().map(|t| t.hist.points).sum::<u64>() as f64 / (seeds * photons) as f64;
        let (spatial, time) = (r_of(&samp, true), r_of(&samp, false));
        eprintln!(
            "{name}: {points:.1} points/photon, {:.2} s a seed; spatial {}; time cells {}",
            samp[0].seconds, spatial.0, time.0
        );
        if let Some(path) = &csv {
            use std::io::Write;
            let new = !std::path::Path::new(path).exists();
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
            if new {
                writeln!(f, "case,depth_m,estimator,seeds,photons,points_per_photon,r_spatial,r_time").unwrap();
            }
            writeln!(
                f,
                "{case},{depth},\"{}\",{seeds},{photons},{points:.3},{:.4},{:.4}",
                e.describe(),
                spatial.1,
                time.1
            )
            .unwrap();
        }
    }
}
