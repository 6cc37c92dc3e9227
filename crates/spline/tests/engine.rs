//! The spline requests of `warpdrive_spline::engine` on the real tables and geometry
//! (shared/data): cancellation within a second in every long phase (response matrix, solver,
//! drawing, evaluation), a hypothesis no DOM sees refused, an all-zero unfolding without a fake
//! "± 0", amplitude-only events that carry light, and data independent of the thread count.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use warpdrive_core::engine::{Control, Device, Error, Style};
use warpdrive_spline::engine::{
    read_table, Eval, EvalOptions, EventInput, ModelOptions, Points, Simulate, SimulateOptions, Unfold, UnfoldOptions,
};
use warpdrive_spline::millipede::unfold::ModelFiles;

fn data() -> Option<PathBuf> {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR"))
}

fn files(d: &std::path::Path, amplitude_only: bool) -> ModelFiles {
    let ems = d.join("splines/icetray_photospline_ems");
    ModelFiles {
        amplitude: Some(ems.join("ems_z0_a0.pt.abs.fits")),
        timing: (!amplitude_only).then(|| ems.join("ems_z0_a0.pt.prob.fits")),
        source_axes: None,
        amplitude_only,
        geometry: Some(d.join("geometry/icecube_geo-f2k")),
    }
}

fn cascade(d: &std::path::Path, at: [f64; 3], amplitude_only: bool) -> ModelOptions {
    ModelOptions {
        files: files(d, amplitude_only),
        cascade: Some(vec![at[0], at[1], at[2], 60.0, 30.0, 0.0]),
        ..Default::default()
    }
}

/// A 1 km horizontal track through the middle of the detector.
const TRACK: [f64; 7] = [-500.0, 0.0, -250.0, 90.0, 180.0, 0.0, 1000.0];

fn cpu(threads: usize) -> Control {
    Control::new().device(Device::Cpu).threads(Some(threads))
}

/// Raise `ctl`'s token `after` the run entered `phase`; returns when it did.
fn cancel_in_phase(ctl: &Control, phase: &'static str, after: Duration) -> std::thread::JoinHandle<Option<Instant>> {
    let (progress, token) = (ctl.progress.clone(), ctl.cancel.clone());
    std::thread::spawn(move || {
        let t0 = Instant::now();
        while progress.phase().0 != phase {
            if t0.elapsed() > Duration::from_secs(300) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(after);
        token.cancel();
        Some(Instant::now())
    })
}

/// Run `work` under a control cancelled in `phase`; assert it stopped with `Cancelled` within
/// a second of the token.
fn assert_cancelled_in<T: std::fmt::Debug>(phase: &'static str, threads: usize, work: impl FnOnce(&Control) -> Result<T, Error>) {
    let ctl = cpu(threads);
    let watcher = cancel_in_phase(&ctl, phase, Duration::from_millis(300));
    let r = work(&ctl);
    let end = Instant::now();
    let raised = watcher
        .join()
        .unwrap()
        .unwrap_or_else(|| panic!("the run never entered phase '{phase}'"));
    assert!(matches!(r, Err(Error::Cancelled(_))), "{phase}: {r:?}");
    let latency = end.saturating_duration_since(raised);
    assert!(latency < Duration::from_secs(1), "{phase}: stopped {latency:?} after the token");
}

#[test]
fn amplitude_only_events_carry_light_and_unfold() {
    let Some(d) = data() else { return };
    let o = SimulateOptions {
        model: cascade(&d, [10.0, 20.0, -300.0], true),
        energy: vec![5000.0],
        seed: 3,
        ..Default::default()
    };
    let ev = Simulate::new(&o).unwrap().run(&cpu(2)).unwrap();
    // Dark noise alone is 5160 DOMs × 500 Hz × 10 µs ≈ 26 PE; a 5 TeV cascade gives thousands.
    let q = ev.event.total_charge();
    assert!(q > 1000.0, "{q} PE: only noise");
    let u = Unfold::new(
        EventInput::File(write_event(&ev, "amp-only")),
        &UnfoldOptions {
            model: cascade(&d, [10.0, 20.0, -300.0], true),
            ..Default::default()
        },
    )
    .unwrap()
    .run(&cpu(2))
    .unwrap();
    let (e, s) = u.total();
    assert!((e - 5000.0).abs() < 5.0 * s, "{e} ± {s}");
}

fn write_event(r: &warpdrive_spline::engine::SimulateResult, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wd-spline-engine-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("event.parquet");
    r.table().write_parquet(&p).unwrap();
    p
}

fn no_pulses() -> EventInput {
    EventInput::Pulses {
        string: vec![],
        om: vec![],
        time: vec![],
        charge: vec![],
        window: Some([-1000.0, 9000.0]),
    }
}

#[test]
fn a_hypothesis_no_dom_sees_is_an_error_not_zero() {
    let Some(d) = data() else { return };
    let o = UnfoldOptions {
        model: cascade(&d, [1e5, 0.0, 0.0], false),
        ..Default::default()
    };
    let e = Unfold::new(no_pulses(), &o).unwrap().run(&cpu(2)).unwrap_err();
    assert!(matches!(e, Error::Param(_)), "{e:?}");
    assert!(
        e.render(Style::Cli)
            .starts_with("--cascade is seen by no DOM: it expects < 1 PE per PeV"),
        "{}",
        e.render(Style::Cli)
    );
}

#[test]
fn an_unfolding_with_every_source_at_zero_has_no_total_sigma() {
    let Some(d) = data() else { return };
    let o = UnfoldOptions {
        model: cascade(&d, [10.0, 20.0, -300.0], false),
        ..Default::default()
    };
    let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = notes.clone();
    let ctl = cpu(2).on_note(std::sync::Arc::new(move |m: &str| sink.lock().unwrap().push(m.to_string())));
    let u = Unfold::new(no_pulses(), &o).unwrap().run(&ctl).unwrap();
    assert_eq!(u.solution.energy, [0.0]);
    let (total, sigma) = u.total();
    assert_eq!(total, 0.0);
    assert!(sigma.is_nan(), "a seen cascade with no light reported ± {sigma}");
    assert!(u.summary()["total_energy_sigma_gev"].is_null());
    assert!(notes.lock().unwrap().iter().any(|n| n.contains("unfolded to E = 0")), "{notes:?}");
}

#[test]
fn unfolding_is_cancelled_while_building_and_while_solving() {
    let Some(d) = data() else { return };
    let model = |spacing: f64| ModelOptions {
        files: files(&d, true),
        track: Some(TRACK.to_vec()),
        spacing,
        ..Default::default()
    };
    let ev = Simulate::new(&SimulateOptions {
        model: model(10.0),
        energy: vec![1000.0],
        ..Default::default()
    })
    .unwrap()
    .run(&cpu(2))
    .unwrap();
    let req = Unfold::new(
        EventInput::File(write_event(&ev, "cancel")),
        &UnfoldOptions {
            model: model(2.0),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(req.shape().1, 500);
    assert_cancelled_in("response matrix", 1, |ctl| req.run(ctl));
    assert_cancelled_in("solving", 2, |ctl| req.run(ctl));
}

#[test]
fn simulation_is_cancelled_while_drawing() {
    let Some(d) = data() else { return };
    // A PeV cascade: about 10⁶ photo-electrons, each time drawn by inverting the timing CDF.
    let req = Simulate::new(&SimulateOptions {
        model: cascade(&d, [10.0, 20.0, -300.0], false),
        energy: vec![1e6],
        ..Default::default()
    })
    .unwrap();
    assert_cancelled_in("drawing", 2, |ctl| req.run(ctl));
}

#[test]
fn evaluation_is_cancelled_mid_run() {
    let Some(d) = data() else { return };
    let t = read_table(&d.join("splines/icetray_photospline_ems/ems_z0_a0.pt.prob.fits")).unwrap();
    let n = 4_000_000;
    let pts: Vec<f64> = (0..n).flat_map(|i| [100.0 + (i % 400) as f64, 90.0, 0.5, 100.0]).collect();
    let req = Eval::new(
        &t,
        None,
        Points::Rows {
            values: &pts,
            shape: [n, 4],
        },
        EvalOptions::default(),
    )
    .unwrap();
    assert_cancelled_in("evaluating", 1, |ctl| req.run(ctl));
}

#[test]
fn simulation_and_unfolding_do_not_depend_on_threads() {
    let Some(d) = data() else { return };
    let o = SimulateOptions {
        model: ModelOptions {
            files: files(&d, false),
            track: Some(TRACK.to_vec()),
            spacing: 100.0,
            ..Default::default()
        },
        energy: vec![2000.0],
        seed: 5,
        ..Default::default()
    };
    let req = Simulate::new(&o).unwrap();
    let (a, b) = (req.run(&cpu(1)).unwrap(), req.run(&cpu(2)).unwrap());
    assert_eq!(a.event, b.event);
    let path = write_event(&a, "threads");
    let u = Unfold::new(
        EventInput::File(path),
        &UnfoldOptions {
            model: o.model.clone(),
            ..Default::default()
        },
    )
    .unwrap();
    let (x, y) = (u.run(&cpu(1)).unwrap(), u.run(&cpu(2)).unwrap());
    assert_eq!(x.summary(), y.summary());
    assert_eq!(x.solution, y.solution);
}
