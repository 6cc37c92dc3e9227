//! Millipede unfolding recovers the energies injected into synthetic events drawn from the same
//! real EM-cascade tables (shared/data/splines/icetray_photospline_ems) on the IceCube geometry,
//! within the Fisher-matrix uncertainties, and never returns negative energies.

use std::path::PathBuf;
use warpdrive_core::stats::mean_std;
use warpdrive_photon::geometry::Geometry;
use warpdrive_spline::millipede::event::Binning;
use warpdrive_spline::millipede::model::{direction, response, Hypothesis, Model, Source};
use warpdrive_spline::millipede::solve::{unfold, SolveOptions, Solver};
use warpdrive_spline::millipede::synth::{generate, SynthOptions};
use warpdrive_spline::SplineTable;

fn setup() -> Option<(Model, Geometry)> {
    let d: PathBuf = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR"))?;
    let ems = d.join("splines/icetray_photospline_ems");
    let amp = SplineTable::read(&ems.join("ems_z0_a0.pt.abs.fits")).unwrap();
    let tim = SplineTable::read(&ems.join("ems_z0_a0.pt.prob.fits")).unwrap();
    let geo = Geometry::read(&d.join("geometry/icecube_geo-f2k")).unwrap();
    Some((Model::new(amp, Some(tim)).unwrap(), geo))
}

fn synth(seed: u64) -> SynthOptions {
    SynthOptions {
        window: [-1000.0, 9000.0],
        noise_rate_hz: 500.0,
        seed,
    }
}

/// Pulls (E_fit − E_true)/σ of every injected source over `events` synthetic events.
fn pulls(model: &Model, geo: &Geometry, h: &Hypothesis, energy: &[f64], events: u64, solver: Solver) -> (Vec<f64>, Vec<Vec<f64>>) {
    let sources: Vec<Source> = h.sources();
    let mut pulls = Vec::new();
    let mut fits = Vec::new();
    for ev in 0..events {
        let event = generate(model, geo, &sources, energy, &synth(2026), ev);
        let bins = event.bin(geo, &Binning::default()).unwrap();
        let l = response(model, &bins, &sources);
        let sol = unfold(
            &l,
            &bins.charge,
            &bins.noise,
            &SolveOptions {
                solver,
                ..Default::default()
            },
        );
        assert!(sol.converged, "event {ev} did not converge in {} iterations", sol.iterations);
        assert!(sol.energy.iter().all(|&e| e >= 0.0), "negative energy: {:?}", sol.energy);
        for (j, &e) in energy.iter().enumerate() {
            if e > 0.0 {
                pulls.push((sol.energy[j] - e) / sol.sigma[j]);
            }
        }
        fits.push(sol.energy);
    }
    (pulls, fits)
}

#[test]
fn single_cascade_energy_is_recovered_within_its_uncertainty() {
    let Some((model, geo)) = setup() else { return };
    let h = Hypothesis::Cascade(Source {
        pos: [40.0, -30.0, -150.0],
        dir: direction(0.7, 1.0),
        time: 0.0,
    });
    let (p, fits) = pulls(&model, &geo, &h, &[3000.0], 40, Solver::Pcg);
    let (m, s) = mean_std(&p);
    eprintln!("cascade pulls: mean {m:.3} std {s:.3}; first fits {:?}", &fits[..3]);
    // 40 pulls of a unit normal: mean within ±0.5 (3.2σ), std within [0.7, 1.35].
    assert!(m.abs() < 0.5 && (0.7..1.35).contains(&s), "mean {m} std {s}");
    assert!(p.iter().all(|x| x.abs() < 4.0), "{p:?}");
}

/// A track of eight 30 m segments with TeV-scale losses, two of them zero. Where a segment's
/// true loss is zero the non-negativity bound biases it and its neighbours slightly (see
/// docs/validation/spline.md); the pulls of the others and of the total are unit normal.
#[test]
fn track_segment_losses_are_recovered_and_never_negative() {
    let Some((model, geo)) = setup() else { return };
    let h = Hypothesis::Track {
        vertex: [-90.0, 20.0, -60.0],
        dir: direction(1.2, 0.4),
        time: 0.0,
        length: 240.0,
        spacing: 30.0,
    };
    let injected = [4000.0, 0.0, 9000.0, 2500.0, 15000.0, 0.0, 6000.0, 3000.0];
    let sources = h.sources();
    assert_eq!(sources.len(), injected.len());
    let (mut p, mut total_pulls) = (Vec::new(), Vec::new());
    for ev in 0..16 {
        let event = generate(&model, &geo, &sources, &injected, &synth(2027), ev);
        let bins = event.bin(&geo, &Binning::default()).unwrap();
        let l = response(&model, &bins, &sources);
        let sol = unfold(&l, &bins.charge, &bins.noise, &SolveOptions::default());
        assert!(sol.converged);
        // Millipede's PCG reaches the same maximum as the default projected Newton.
        let pcg = unfold(
            &l,
            &bins.charge,
            &bins.noise,
            &SolveOptions {
                solver: Solver::Pcg,
                ..Default::default()
            },
        );
        assert!(pcg.converged);
        for j in 0..injected.len() {
            let d = (sol.energy[j] - pcg.energy[j]).abs();
            assert!(
                d <= 1e-3 * sol.sigma[j],
                "event {ev} source {j}: newton {} pcg {}",
                sol.energy[j],
                pcg.energy[j]
            );
        }
        assert!(sol.energy.iter().all(|&e| e >= 0.0), "negative energy: {:?}", sol.energy);
        for (j, &e) in injected.iter().enumerate() {
            if e > 0.0 {
                p.push((sol.energy[j] - e) / sol.sigma[j]);
            }
        }
        let n = injected.len();
        let var_total: f64 = sol.covariance.iter().sum();
        let total: f64 = sol.energy.iter().sum();
        total_pulls.push((total - injected.iter().sum::<f64>()) / var_total.sqrt());
        assert_eq!(sol.covariance.len(), n * n);
    }
    let (m, s) = mean_std(&p);
    let (mt, st) = mean_std(&total_pulls);
    eprintln!(
        "segment pulls: mean {m:.3} std {s:.3} ({} pulls); total: mean {mt:.3} std {st:.3}",
        p.len()
    );
    // 96 pulls: mean within ±0.35 (3.4σ), std within [0.75, 1.3], at most 2 beyond 3σ.
    assert!(m.abs() < 0.35 && (0.75..1.3).contains(&s), "mean {m} std {s}");
    assert!(p.iter().filter(|x| x.abs() > 3.0).count() <= 2, "{p:?}");
    // 16 totals: mean within ±0.8 (3.2σ), std within [0.5, 1.6].
    assert!(mt.abs() < 0.8 && (0.5..1.6).contains(&st), "total pulls {total_pulls:?}");
}

/// A pure-noise event: nothing to unfold, and still no negative energies.
#[test]
fn noise_only_event_gives_zero_or_small_energies() {
    let Some((model, geo)) = setup() else { return };
    let h = Hypothesis::Cascade(Source {
        pos: [0.0, 0.0, 0.0],
        dir: direction(0.0, 0.0),
        time: 0.0,
    });
    let sources = h.sources();
    let event = generate(&model, &geo, &sources, &[0.0], &synth(5), 0);
    let bins = event.bin(&geo, &Binning::default()).unwrap();
    let l = response(&model, &bins, &sources);
    for solver in [Solver::Newton, Solver::Pcg, Solver::Nnls] {
        let sol = unfold(
            &l,
            &bins.charge,
            &bins.noise,
            &SolveOptions {
                solver,
                ..Default::default()
            },
        );
        assert!(sol.energy[0] >= 0.0);
        assert!(
            sol.energy[0] < 3.0 * sol.sigma[0].min(1e9) + 1.0,
            "{solver:?}: {} ± {}",
            sol.energy[0],
            sol.sigma[0]
        );
    }
}
