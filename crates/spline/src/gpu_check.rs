//! Device checks of the spline domain (`warpdrive gpu-check --domain spline`): GPU evaluation
//! (both coefficient layouts, value and gradient) equals the CPU's on every table of
//! shared/data/splines to float32 rounding, and the GPU response matrix equals the CPU's.
//!
//! "Float32 rounding" is stated as a bound relative to the size of the terms summed: for values
//! |f_gpu − f_cpu| ≤ 1e-5 · Σ|c·ΠB| (≈ 85 float32 ulps of the largest possible partial sum),
//! for gradients the same relative to Σ|c·ΠB| with B'_d replaced by the size of the two terms
//! of the de Boor derivative formula (`SplineTable::gradient_magnitude`).

use crate::gpu::{evaluate, response, EvalOptions};
use crate::millipede::event::Binning;
use crate::millipede::model::{direction, response as response_cpu, Hypothesis, Model, Source};
use crate::millipede::solve::{unfold, SolveOptions};
use crate::millipede::synth::{generate, SynthOptions};
use crate::SplineTable;
use std::path::{Path, PathBuf};
use warpdrive_core::check::{Check, Suite};
use warpdrive_photon::geometry::Geometry;

const VALUE_TOL: f64 = 1e-5;

fn tables(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for sub in rd.flatten() {
            if let Ok(files) = std::fs::read_dir(sub.path()) {
                out.extend(
                    files
                        .flatten()
                        .map(|f| f.path())
                        .filter(|p| p.extension().is_some_and(|e| e == "fits")),
                );
            }
        }
    }
    out.sort();
    out
}

/// Random points inside the extents, plus a few outside the knots and a NaN.
/// Random points inside the extents, the first one below the first knot, the second NaN.
fn points(t: &SplineTable, n: usize, seed: u64) -> Vec<f64> {
    let nd = t.ndim();
    let mut p = crate::eval::uniform_points(t, n, seed);
    for d in 0..nd {
        p[d] = t.knots[d][0] - 1.0;
    }
    p[nd] = f64::NAN;
    p
}

/// The spline checks of a `gpu-check` suite ([`run_all`] when the suite holds them).
pub fn run_suite(suite: Suite, data: &Path, device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, warpdrive_core::engine::Error> {
    warpdrive_core::check::part(suite, Suite::Spline, || run_all(data, device, log))
}

pub fn run_all(data: &Path, device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    let mut checks = Vec::new();
    let files = tables(&data.join("splines"));
    if files.is_empty() {
        return Err(format!("no spline tables under {}", data.join("splines").display()));
    }
    for window in [false, true] {
        for gradient in [false, true] {
            log(&format!("spline: GPU vs CPU evaluation, window {window}, gradient {gradient}"));
            let mut detail = String::new();
            let mut passed = true;
            for f in &files {
                let t = SplineTable::read(f).map_err(|e| e.to_string())?;
                let nd = t.ndim();
                let n = 20_000;
                let x = points(&t, n, 3);
                let opts = EvalOptions {
                    window,
                    gradient,
                    repeats: 1,
                    precise: false,
                };
                let (g, st) = evaluate(&t, &x, device, &opts).map_err(|e| e.to_string())?;
                let per = if gradient { nd + 1 } else { 1 };
                let (mut worst, mut worst_grad) = (0.0f64, 0.0f64);
                for i in 0..n {
                    let p = &x[i * nd..(i + 1) * nd];
                    let (v, grad) = if gradient {
                        let c = t.gradient(p);
                        (c.value, c.grad)
                    } else {
                        (t.evaluate(p), [0.0; 8])
                    };
                    let gv = f64::from(g[i * per]);
                    if v.is_nan() || gv.is_nan() {
                        if v.is_nan() != gv.is_nan() {
                            passed = false;
                            detail += &format!("{}: point {i}: NaN on one side only ({v} vs {gv})\n", f.display());
                        }
                        continue;
                    }
                    let scale = t.gradient_magnitude(p);
                    worst = worst.max((gv - v).abs() / scale.value.max(1e-30));
                    if gradient {
                        for d in 0..nd {
                            let e = (f64::from(g[i * per + 1 + d]) - grad[d]).abs() / scale.grad[d].max(1e-30);
                            worst_grad = worst_grad.max(e);
                        }
                    }
                }
                let ok = worst <= VALUE_TOL && worst_grad <= VALUE_TOL;
                passed &= ok;
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                detail += &format!(
                    "{name:<34} {nd}-D: max |Δf|/Σ|cB| = {worst:.2e}{} ({} regs, {} B local){}\n",
                    if gradient {
                        format!(", gradient {worst_grad:.2e}")
                    } else {
                        String::new()
                    },
                    st.registers,
                    st.local_bytes,
                    if ok { "" } else { "  FAIL" }
                );
            }
            checks.push(Check {
                name: format!(
                    "spline: GPU = CPU to float32 ({}, {})",
                    if window { "window layout" } else { "standard layout" },
                    if gradient { "value+gradient" } else { "value" }
                ),
                passed,
                detail: format!("20 000 points per table (one outside the knots, one NaN), bound {VALUE_TOL:e}\n{detail}"),
            });
        }
    }

    // Batches: a run evaluates in batches of GPU_CHUNK points (bounded device memory, a
    // cancellation point after each); every point must come out as in one batch, bit for bit.
    log("spline: GPU evaluation in batches vs one batch");
    {
        let t = SplineTable::read(&data.join("splines/icetray_photospline_ems/ems_z0_a0.pt.prob.fits")).map_err(|e| e.to_string())?;
        let x = points(&t, 50_000, 5);
        let opts = EvalOptions {
            window: true,
            gradient: true,
            repeats: 1,
            precise: false,
        };
        let (one, _) = evaluate(&t, &x, device, &opts).map_err(|e| e.to_string())?;
        let mut batches = 0;
        let (many, _) = crate::gpu::evaluate_chunked(&t, &x, device, &opts, 7_000, |_| {
            batches += 1;
            true
        })
        .map_err(|e| e.to_string())?;
        let same = one.len() == many.len() && one.iter().zip(&many).all(|(a, b)| a.to_bits() == b.to_bits());
        checks.push(Check {
            name: "spline: GPU evaluation in batches = one batch (bit for bit)".into(),
            passed: same && batches == 8,
            detail: format!("50 000 points of the 4-D timing table with gradients, {batches} batches of at most 7 000"),
        });
    }

    // Response matrix and unfolding with the GPU's Λ.
    log("spline: Millipede response matrix on GPU vs CPU");
    let ems = data.join("splines/icetray_photospline_ems");
    let amp = SplineTable::read(&ems.join("ems_z0_a0.pt.abs.fits")).map_err(|e| e.to_string())?;
    let tim = SplineTable::read(&ems.join("ems_z0_a0.pt.prob.fits")).map_err(|e| e.to_string())?;
    let geo = Geometry::read(&data.join("geometry/icecube_geo-f2k")).map_err(|e| e.to_string())?;
    let model = Model::new(amp, Some(tim))?;
    let h = Hypothesis::Track {
        vertex: [-90.0, 20.0, -60.0],
        dir: direction(1.2, 0.4),
        time: 0.0,
        length: 240.0,
        spacing: 30.0,
    };
    let sources: Vec<Source> = h.sources();
    let injected = [4000.0, 0.0, 9000.0, 2500.0, 15000.0, 0.0, 6000.0, 3000.0];
    let ev = generate(
        &model,
        &geo,
        &sources,
        &injected,
        &SynthOptions {
            seed: 2027,
            ..Default::default()
        },
        0,
    );
    let bins = ev.bin(&geo, &Binning::default())?;
    checks.extend(response_checks(&model, &bins, &sources, device, "")?);
    // Tables with source axes (depth-aware Millipede, issue #32): the same pair extended by a
    // zenith and a depth axis on which the values change linearly, so a wrong axis value shows.
    log("spline: Millipede response matrix with source zenith/depth axes on GPU vs CPU");
    use crate::millipede::model::SourceAxis;
    let axes = vec![SourceAxis::Zenith, SourceAxis::Depth];
    let with_axes = Model::with_axes(
        with_source_axes(&model.amplitude, 0.4, -0.6),
        model.timing.as_ref().map(|t| with_source_axes(t, 0.01, -0.02)),
        axes.clone(),
        axes,
    )?;
    checks.extend(response_checks(
        &with_axes,
        &bins,
        &sources,
        device,
        ", tables with zenith and depth axes",
    )?);
    checks.extend(fit_checks(device, log)?);
    Ok(checks)
}

/// The GPU fitter against the CPU's: the same coefficients bit for bit on synthetic problems of
/// 2, 3 and 4 axes (196 to 4 096 coefficients, so every phase of the blocked factor runs, with
/// empty bins), and the same singular coefficient named where the data do not pin the fit.
fn fit_checks(device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    use crate::fit::{gpu, synthetic, Problem};
    use warpdrive_core::progress::Progress;
    let mut checks = Vec::new();
    for (nd, bins, coefs, smooth, hole) in [(2, 60, 14, 1e-3, 7), (3, 24, 12, 1e-2, 0), (4, 16, 8, 1e-2, 11)] {
        log(&format!("spline: GLAM fit on GPU vs CPU, {nd}-D, {coefs}^{nd} coefficients"));
        let s = synthetic::problem(nd, bins, coefs, smooth, hole, 7 + nd as u64);
        let p = Problem::new(s.histogram(), &s.spec).map_err(|e| e.to_string())?;
        let t0 = std::time::Instant::now();
        let cpu = p.solve(&Progress::hidden()).map_err(|e| e.to_string())?;
        let cpu_s = t0.elapsed().as_secs_f64();
        let (g, st) = gpu::solve(&p, device, &Progress::hidden()).map_err(|e| e.to_string())?;
        let scale = cpu.coefficients.iter().fold(0.0f64, |a, c| a.max(c.abs()));
        let worst = cpu
            .coefficients
            .iter()
            .zip(&g.coefficients)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f64, f64::max);
        let identical = cpu.coefficients.len() == g.coefficients.len()
            && cpu
                .coefficients
                .iter()
                .zip(&g.coefficients)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        checks.push(Check {
            name: format!("spline: GLAM fit on GPU = CPU bit for bit ({nd}-D, {} coefficients)", cpu.coefficients.len()),
            passed: identical && g.chi2.to_bits() == cpu.chi2.to_bits(),
            detail: format!(
                "{} bins: max |Δc| = {worst:.3e} of max |c| {scale:.3e}; χ² CPU {:.6e} GPU {:.6e}; CPU (all threads) {cpu_s:.3} s, GPU assemble {:.4} s, factor {:.4} s, solve {:.4} s (load {:.3} s)",
                s.z.len(),
                cpu.chi2,
                g.chi2,
                st.assemble_s,
                st.factor_s,
                st.solve_s,
                st.load_s
            ),
        });
    }
    // A singular system: one bin, a second-derivative penalty everywhere (linear functions free).
    let mut s = synthetic::problem(2, 20, 10, 1.0, 0, 3);
    s.w.iter_mut().for_each(|w| *w = 0.0);
    s.w[57] = 1.0;
    let p = Problem::new(s.histogram(), &s.spec).map_err(|e| e.to_string())?;
    let cpu = p.solve(&Progress::hidden()).err().map(|e| e.to_string());
    let g = gpu::solve(&p, device, &Progress::hidden()).err().map(|e| e.to_string());
    checks.push(Check {
        name: "spline: GLAM fit on GPU names the singular coefficient the CPU names".into(),
        passed: cpu.is_some() && cpu == g,
        detail: format!("CPU: {cpu:?}\nGPU: {g:?}"),
    });
    Ok(checks)
}

/// The source axes a depth-aware table set adds: zenith [0°, 180°] and depth [1400, 2600] m, each
/// linear (order 1, two coefficients); `t`'s coefficients shifted by `dz` per zenith coefficient
/// and `dd` per depth coefficient, so the value is t's plus a plane in (zenith, depth).
fn with_source_axes(t: &SplineTable, dz: f32, dd: f32) -> SplineTable {
    let mut order = t.order.clone();
    order.extend([1, 1]);
    let mut knots = t.knots.clone();
    knots.extend([vec![0.0, 0.0, 180.0, 180.0], vec![1400.0, 1400.0, 2600.0, 2600.0]]);
    let mut naxes = t.naxes.clone();
    naxes.extend([2, 2]);
    let coefficients: Vec<f32> = t.coefficients.iter().flat_map(|&c| [c, c + dd, c + dz, c + dz + dd]).collect();
    let mut out = SplineTable::new(order, knots, naxes, coefficients).expect("a valid extension");
    out.extents = t.extents.clone();
    out.extents.extend([[0.0, 180.0], [1400.0, 2600.0]]);
    out.aux = t.aux.clone();
    out
}

/// Λ of `model` on the GPU (standard and window layouts) against the CPU's, and the energies
/// unfolded from each.
fn response_checks(
    model: &Model,
    bins: &crate::millipede::model::Bins,
    sources: &[Source],
    device: usize,
    what: &str,
) -> Result<Vec<Check>, String> {
    let mut checks = Vec::new();
    let l_cpu = response_cpu(model, bins, sources);
    for window in [false, true] {
        let (l_gpu, st) = response(
            model,
            bins,
            sources,
            device,
            &EvalOptions {
                window,
                repeats: 3,
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())?;
        // Bound per element: 1e-4 of the DOM's total expectation from that source (float32 basis,
        // exp of a float32 log-amplitude, differences of float32 CDFs).
        let mut worst = 0.0f64;
        for d in &bins.doms {
            for j in 0..sources.len() {
                let total: f64 = (0..d.rows).map(|q| l_cpu.at(d.first_row + q, j)).sum();
                for q in 0..d.rows {
                    let r = d.first_row + q;
                    let diff = (l_gpu.at(r, j) - l_cpu.at(r, j)).abs();
                    if diff > 0.0 {
                        worst = worst.max(diff / total.max(1e-300));
                    }
                }
            }
        }
        let s_cpu = unfold(&l_cpu, &bins.charge, &bins.noise, &SolveOptions::default());
        let s_gpu = unfold(&l_gpu, &bins.charge, &bins.noise, &SolveOptions::default());
        let de = s_cpu
            .energy
            .iter()
            .zip(&s_gpu.energy)
            .zip(&s_cpu.sigma)
            .map(|((a, b), s)| (a - b).abs() / s)
            .fold(0.0f64, f64::max);
        checks.push(Check {
            name: format!("spline: Millipede Λ on GPU = CPU ({} layout{what})", if window { "window" } else { "standard" }),
            passed: worst <= 1e-4 && de <= 1e-3,
            detail: format!(
                "{} rows × {} sources: max |ΔΛ| / (DOM-source total) = {worst:.2e} (bound 1e-4); energies unfolded from either Λ differ by at most {de:.2e} σ (bound 1e-3)\nCPU: {:?}\nGPU: {:?}\nkernel {:.3} ms, {} registers, {} B local",
                l_cpu.rows,
                l_cpu.cols,
                s_cpu.energy.iter().map(|e| e.round()).collect::<Vec<_>>(),
                s_gpu.energy.iter().map(|e| e.round()).collect::<Vec<_>>(),
                1e3 * st.kernel_s,
                st.registers,
                st.local_bytes
            ),
        });
    }
    Ok(checks)
}
