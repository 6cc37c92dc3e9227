//! Depth-aware Millipede end to end (issue #32): `photon tabulate` a cascade at three depths in
//! spice_3.2.1 → `spline fit` a table over (r, φ, cos θ, depth) → an event made by `warpdrive
//! photon`'s propagation (hits on the real IceCube geometry, same ice) at one of those depths
//! with a known energy → `spline unfold` with the depth-aware table, and with the public
//! single-depth table on the same event. Small and coarse so that it runs in release mode in
//! well under a minute on two shared cores; the numbers it prints are in
//! docs/validation/spline.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use warpdrive_core::engine::{Control, Device};
use warpdrive_photon::engine::{self, DetectorSpec, ParticleName, Propagate, PropagateOptions, SourceOptions, TypedSources};
use warpdrive_photon::tabulate::{Edges, Tabulate, TabulateOptions};
use warpdrive_spline::engine::{EventInput, FitOptions, FitTable, HistogramInput, Knots, ModelOptions, Unfold, UnfoldOptions};
use warpdrive_spline::millipede::model::SourceAxis;
use warpdrive_spline::millipede::unfold::{load, ModelFiles};

fn cpu() -> Control {
    Control::new().device(Device::Cpu).threads(Some(2))
}

/// The tabulated depths [m] (clear ice above the dust layer, the dust layer, clear ice below).
const DEPTHS: [f64; 3] = [1900.0, 2050.0, 2300.0];

/// Radial bins, finer near the source (the fluence falls as 1/r² there), out to 200 m: beyond,
/// the dust layer's bins hold no photons at this statistics and a fit is unconstrained there
/// (with 320 m and 40 000 photons per depth, the fitted table reached e^70 at r = 317 m in the
/// dust layer).
const RADIAL_EDGES: [f64; 14] = [0.0, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 55.0, 70.0, 90.0, 115.0, 140.0, 170.0, 200.0];
/// Quadratic: 13 coefficients, extents [0, 200] m.
const RADIAL_KNOTS: [f64; 16] = [
    -10.0, -5.0, 0.0, 5.0, 10.0, 20.0, 30.0, 45.0, 65.0, 90.0, 115.0, 140.0, 170.0, 200.0, 230.0, 260.0,
];

/// Tabulate the cascade at `DEPTHS` (amplitude only), write the histogram, fit it over
/// (r, φ, cos θ, depth), linear between the depths. Returns the table's path.
fn depth_table(ice: &Path, dir: &Path) -> PathBuf {
    let o = TabulateOptions {
        ice: Some(ice.to_path_buf()),
        depth: DEPTHS.to_vec(),
        zenith: vec![0.0],
        photons: 40_000,
        radial: Edges::List(RADIAL_EDGES.to_vec()),
        azimuth_bins: Edges::Linear {
            lo: 0.0,
            hi: 180.0,
            bins: 3,
        },
        polar: Some(Edges::Linear {
            lo: -1.0,
            hi: 1.0,
            bins: 8,
        }),
        delay: None,
        margin: 100.0,
        seed: 5,
        ..Default::default()
    };
    let t = Tabulate::new(&o).unwrap().run(&cpu()).unwrap();
    let hist = dir.join("amplitude.parquet");
    t.amplitude_table().write_parquet(&hist).unwrap();
    let d = DEPTHS;
    let fit = FitTable::new(
        HistogramInput::File(hist),
        &FitOptions {
            knots: vec![
                Knots::List(RADIAL_KNOTS.to_vec()),
                Knots::Uniform {
                    lo: 0.0,
                    hi: 180.0,
                    count: 3,
                },
                Knots::Uniform {
                    lo: -1.0,
                    hi: 1.0,
                    count: 6,
                },
                Knots::List(vec![d[0], d[0], d[1], d[2], d[2]]),
            ],
            order: vec![2, 2, 2, 1],
            smooth: vec![1e3, 1e3, 1e-2, 0.0],
            penalty_order: vec![2, 2, 2, 1],
            monodim: None,
        },
    )
    .unwrap();
    let r = fit.run(&cpu()).unwrap();
    let path = dir.join("amp-depth.fits");
    std::fs::write(&path, r.table.to_fits()).unwrap();
    path
}

/// An EM cascade of `energy` GeV at `pos`, moving down (zenith 0, the tables' orientation),
/// propagated by `warpdrive photon` (the CPU's fast mode, its default) onto the geometry's DOMs: its hits as pulses
/// of 1 PE.
fn photon_event(ice: &Path, geometry: &Path, pos: [f64; 3], energy: f64, seed: u64) -> EventInput {
    let det = engine::detector(&DetectorSpec {
        ice: Some(ice.to_path_buf()),
        geometry: Some(geometry.to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    let sources = SourceOptions {
        typed: TypedSources {
            particle: Some(vec![ParticleName::from("e")]),
            position: Some(pos.to_vec()),
            direction: Some(vec![0.0, 0.0]),
            energy: Some(vec![energy]),
            ..Default::default()
        },
        ..Default::default()
    };
    let req = Propagate::new(
        Arc::new(det),
        sources,
        &PropagateOptions {
            seed,
            ..Default::default()
        },
    )
    .unwrap();
    let hits = req.run(&cpu()).unwrap().sim.hits;
    EventInput::Pulses {
        string: hits.iter().map(|h| f64::from(h.string)).collect(),
        om: hits.iter().map(|h| f64::from(h.om)).collect(),
        time: hits.iter().map(|h| f64::from(h.time)).collect(),
        charge: vec![1.0; hits.len()],
        window: None,
    }
}

/// The unfolded energy and its σ of a cascade at `pos` (zenith 0) with an amplitude-only model.
fn unfold(event: &EventInput, amplitude: Option<PathBuf>, geometry: &Path, pos: [f64; 3]) -> (f64, f64, f64) {
    let opts = UnfoldOptions {
        model: ModelOptions {
            files: ModelFiles {
                amplitude,
                amplitude_only: true,
                geometry: Some(geometry.to_path_buf()),
                ..Default::default()
            },
            cascade: Some(vec![pos[0], pos[1], pos[2], 0.0, 0.0, 0.0]),
            ..Default::default()
        },
        ..Default::default()
    };
    let r = Unfold::new(event.clone(), &opts).unwrap().run(&cpu()).unwrap();
    let (e, s) = r.total();
    (e, s, r.charge_pe)
}

#[test]
fn depth_aware_tables_recover_a_cascade_simulated_by_photon() {
    let Some(d) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let ice = d.join("ice/spice_3.2.1");
    let geometry = d.join("geometry/icecube_geo-f2k");
    let dir = std::env::temp_dir().join(format!("wd-depth-aware-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t0 = std::time::Instant::now();
    let table = depth_table(&ice, &dir);
    eprintln!("tabulated and fitted in {:.1} s", t0.elapsed().as_secs_f64());

    // The fit carried the tabulator's column names: the model finds the depth axis itself.
    let (model, _, _) = load(&ModelFiles {
        amplitude: Some(table.clone()),
        amplitude_only: true,
        geometry: Some(geometry.clone()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(model.amplitude_axes, [SourceAxis::Depth]);
    assert!(model.n_group > 1.3 && model.n_group < 1.4, "NGROUP carried: {}", model.n_group);

    let mut worst_ours: f64 = 0.0;
    let mut public_errors = Vec::new();
    // In the dust layer (≈ 600 PE) and in clear ice below it (≈ 4 800 PE).
    for (k, (depth, energy)) in [(2050.0, 20_000.0), (2300.0, 5_000.0)].into_iter().enumerate() {
        // Between strings near the detector's centre (the tables' vertex is at x = y = 0).
        let pos = [20.0, -30.0, warpdrive_photon::ice::ZOFF - depth];
        let t1 = std::time::Instant::now();
        let event = photon_event(&ice, &geometry, pos, energy, 11 + k as u64);
        let (e_ours, s_ours, pe) = unfold(&event, Some(table.clone()), &geometry, pos);
        let (e_pub, s_pub, _) = unfold(&event, None, &geometry, pos);
        let (b_ours, b_pub) = (e_ours / energy - 1.0, e_pub / energy - 1.0);
        eprintln!(
            "depth {depth} m: {pe} PE; depth-aware table {e_ours:.0} ± {s_ours:.0} GeV (bias {:+.1} %), public table {e_pub:.0} ± {s_pub:.0} GeV (bias {:+.1} %) [{:.1} s]",
            100.0 * b_ours,
            100.0 * b_pub,
            t1.elapsed().as_secs_f64()
        );
        // Ours: within 4σ of the Poisson error plus 5 % (the model's ε = 0.99, the fit's
        // smoothing of the coarse bins, tilt between the tables' vertex and the event).
        assert!(
            b_ours.abs() < 4.0 * s_ours / energy + 0.05,
            "depth {depth}: {e_ours} ± {s_ours} GeV for {energy}"
        );
        worst_ours = worst_ours.max(b_ours.abs());
        public_errors.push(b_pub.abs());
    }
    // As well as or better than the public single-depth table (issue #32's criterion), judged
    // on the worse of the two events.
    let worst_public = public_errors.iter().copied().fold(0.0, f64::max);
    assert!(
        worst_ours <= worst_public,
        "depth-aware worst |bias| {worst_ours} vs public {worst_public}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("total {:.1} s", t0.elapsed().as_secs_f64());
}
