//! Device checks of the sky domain (run by `warpdrive gpu-check` on a GPU machine): the
//! device twins of the RA scramble and the unit vectors are bit-identical to the Rust ones, and
//! trials give the same integer counts on the GPU as on the CPU, on the real IC86-2011 sample.

use crate::bins::AngularBins;
use crate::cuts::{default_cuts, Region};
use crate::events::{read_all, ColumnNames};
use crate::gpu::SkyGpu;
use crate::sphere::unit_vector_turn;
use crate::trials::{quantize_turn, trial_counts, trial_turn, Background};
use crate::{prepare, Settings};
use std::path::Path;
use warpdrive_core::progress::Progress;
use warpdrive_core::Philox4x32;

pub use warpdrive_core::check::{Check, Suite};

/// Seed of the checks.
pub const SEED: u64 = 20_261_122;

/// The sky checks of a `gpu-check` suite ([`run_all`] when the suite holds them).
pub fn run_suite(suite: Suite, data: &Path, device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, warpdrive_core::engine::Error> {
    warpdrive_core::check::part(suite, Suite::Sky, || run_all(data, device, log))
}

pub fn run_all(data: &Path, device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    let dir = data.join("events/ic86_2011_ps_release");
    let files = [dir.join("upgoing_events.txt"), dir.join("downgoing_events.txt")];
    let events = read_all(&files, &ColumnNames::default()).map_err(|e| e.to_string())?;
    let st = Settings {
        region: Region::ALL,
        cuts: default_cuts(),
        bins: AngularBins::uniform(20, 0.25)?,
        seed: SEED,
        total_trials: 0,
        trials: 0..0,
        description: "IC86-2011 up + down".into(),
        ra_grid_deg: Some(0.1),
    };
    let (s, _) = prepare(&events, &st)?;
    let mut g = SkyGpu::new(device, &s).map_err(|e| e.to_string())?;
    let mut checks = Vec::new();

    // 1. Scramble + unit vectors, bit for bit, for three trials (one with a high counter word).
    log("sky: scramble twin");
    let gen = Philox4x32::new(SEED);
    let mut mismatched = 0usize;
    let trials_checked = [0u64, 1, (1 << 33) + 5];
    for &k in &trials_checked {
        let v = g.trial_vectors(SEED, k).map_err(|e| e.to_string())?;
        for p in 0..s.len() {
            let t = quantize_turn(trial_turn(&gen, k, s.order[p]), s.ra_grid);
            let u = unit_vector_turn(t, s.sin_dec[p], s.cos_dec[p]);
            let d = &v[4 * p..4 * p + 4];
            if d[0].to_bits() != u[0].to_bits()
                || d[1].to_bits() != u[1].to_bits()
                || d[2].to_bits() != u[2].to_bits()
                || d[3] != f64::from(s.level[p])
            {
                mismatched += 1;
            }
        }
    }
    checks.push(Check {
        name: "sky: RA scramble + unit vectors bit-identical to Rust".into(),
        passed: mismatched == 0,
        detail: format!("{} events × trials {trials_checked:?}: {mismatched} vectors differ", s.len()),
    });

    // 2. Trials: identical integer counts on both devices, with scrambled RAs on the data's 0.1°
    //    grid and continuous.
    for grid in [Some(0.1), None] {
        let st = Settings {
            ra_grid_deg: grid,
            ..st.clone()
        };
        let (s, _) = prepare(&events, &st)?;
        let mut g = SkyGpu::new(device, &s).map_err(|e| e.to_string())?;
        checks.push(trials_identical(&s, &mut g, grid, log)?);
    }

    // 3. Injected trials (issue #35): identical counts on both devices, on the up-going sample
    //    (the Fig. 3 setting's K = 15 with 20 and 100 sources).
    checks.push(injected_identical(&files[0], device, log)?);
    Ok(checks)
}

fn injected_identical(file: &Path, device: usize, log: &mut dyn FnMut(&str)) -> Result<Check, String> {
    use crate::inject::{DecBand, Injection, Selection, Tail};
    use rayon::prelude::*;
    let events = read_all(&[file.to_path_buf()], &ColumnNames::default().with_ang_err(None)).map_err(|e| e.to_string())?;
    let st = Settings {
        region: Region::ALL,
        cuts: default_cuts(),
        bins: AngularBins::uniform(20, 0.25)?,
        seed: SEED,
        total_trials: 0,
        trials: 0..0,
        description: "IC86-2011 up".into(),
        ra_grid_deg: Some(0.1),
    };
    let (s, _) = prepare(&events, &st)?;
    let sel = Selection::new(&events, &s);
    let thr = crate::cuts::resolve(&events, &[crate::cuts::EnergyCut::TopFraction(0.5)])?.thresholds[0];
    let inj = Injection {
        per_source: 15,
        band: DecBand { lo: -5.0, hi: 90.0 },
        gamma: -2.0,
        tail: Tail::new(&events, thr).ok_or("no tail events")?,
        dec_grid: crate::sample::detect_ra_grid(&events.iter().map(|e| e.dec).collect::<Vec<_>>()),
    };
    let mut g = SkyGpu::new(device, &s).map_err(|e| e.to_string())?;
    let pool = rayon::ThreadPoolBuilder::new().build().map_err(|e| e.to_string())?;
    let n_trials = 48u64;
    let (mut differing, mut compared) = (0usize, 0usize);
    let mut means = Vec::new();
    for n_sources in [20u64, 100] {
        log(&format!("sky: {n_trials} injected trials ({n_sources} × 15 events) on GPU and CPU"));
        let mut gpu_counts = Vec::new();
        g.injected_counts(&sel, &inj, SEED, n_sources, 0..n_trials, &pool, &Progress::hidden(), |c| {
            gpu_counts.push(c)
        })
        .map_err(|e| e.to_string())?;
        let cpu_counts: Vec<Vec<u64>> = (0..n_trials)
            .into_par_iter()
            .map(|k| crate::inject::trial_counts(&sel, &inj, SEED, k, n_sources))
            .collect::<Result<_, _>>()?;
        differing += gpu_counts.iter().zip(&cpu_counts).filter(|(a, b)| a != b).count();
        compared += gpu_counts.len().min(cpu_counts.len());
        differing += gpu_counts.len().abs_diff(cpu_counts.len());
        let nb = s.bins.len();
        let top = (s.cuts.levels() - 1) * nb + 3; // the highest cut, θ ≤ 1°
        means.push(format!(
            "{n_sources}×15: highest cut N(≤1°) mean {:.1}",
            cpu_counts.iter().map(|c| c[top] as f64).sum::<f64>() / n_trials as f64
        ));
    }
    Ok(Check {
        name: "sky: injected trials identical on GPU and CPU (up-going sample, K = 15)".into(),
        passed: differing == 0 && compared == 2 * n_trials as usize,
        detail: format!(
            "{} events, {compared} trials compared: {differing} differ; {}",
            s.len(),
            means.join(", ")
        ),
    })
}

fn trials_identical(s: &crate::sample::Sample, g: &mut SkyGpu, grid: Option<f64>, log: &mut dyn FnMut(&str)) -> Result<Check, String> {
    let n_trials = 64u64;
    let grid = grid.map_or("continuous RA".to_string(), |q| format!("RA on a {q}° grid"));
    log(&format!("sky: 64 trials on GPU and CPU, {grid}"));
    let t0 = std::time::Instant::now();
    let gpu_counts = g.trial_counts(SEED, 0..n_trials, &Progress::hidden()).map_err(|e| e.to_string())?;
    let gpu_s = t0.elapsed().as_secs_f64();
    let t0 = std::time::Instant::now();
    let cpu_counts: Vec<Vec<u64>> = {
        use rayon::prelude::*;
        (0..n_trials)
            .into_par_iter()
            .map_init(|| (Default::default(), Vec::new()), |(ws, t), k| trial_counts(s, SEED, k, ws, t))
            .collect()
    };
    let cpu_s = t0.elapsed().as_secs_f64();
    let differing = gpu_counts.iter().zip(&cpu_counts).filter(|(a, b)| a != b).count();
    let mut bg = Background::new(s.hist_len());
    cpu_counts.iter().for_each(|c| bg.add(c));
    let nb = s.bins.len();
    let (m, sd) = bg.mean_std(nb - 1);
    Ok(Check {
        name: format!("sky: trials identical on GPU and CPU ({grid})"),
        passed: differing == 0 && gpu_counts.len() == cpu_counts.len(),
        detail: format!(
            "{} events, {n_trials} trials × {} cells: {differing} trials differ; all-events N(≤5°) = {m:.1} ± {sd:.1}; \
             GPU {:.3} s (with first-batch set-up), CPU {:.3} s on {} threads",
            s.len(),
            s.hist_len(),
            gpu_s,
            cpu_s,
            rayon::current_num_threads()
        ),
    })
}
