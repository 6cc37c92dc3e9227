//! `warpdrive gpu-check`: the device-side validation of the CUDA back end (run on a GPU machine
//! by scripts/gpu-check; CI has no GPU). Each check compares the device with its Rust twin:
//! Philox streams bit for bit, the physics device functions on random inputs, whole photons in
//! precise mode, and the statistics of fast mode against the CPU path and PPC.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use std::path::Path;
use warpdrive_core::cuda;
use warpdrive_core::progress::Progress;
use warpdrive_core::RandomStream;

use crate::collision::DomIndex;
use crate::detector::{Detector, DetectorOptions};
use crate::f2k::parse_f2k;
use crate::gpu::{self, GpuError, GpuOptions, KERNEL_NAME, KERNEL_SRC};
use crate::medium::Medium;
use crate::propagate::{layer_walk, RawHit};
use crate::scatter::{henyey_greenstein, normalize, scatter, scattering_cosine, simplified_liu};
use crate::source::{cascade_xi, realise};
use crate::validate::{compare, ppc_reference_runs, timed_hits};

/// One line of the check report.
pub use warpdrive_core::check::{Check, Suite};

fn check(name: &str, passed: bool, detail: String) -> Check {
    Check {
        name: name.to_string(),
        passed,
        detail,
    }
}

/// The Rust side of the kernel's `twin_physics`: same inputs, same functions, same outputs.
#[must_use]
pub fn twin_physics(m: &Medium, idx: &DomIndex, q: &[f32; 8]) -> [f32; 16] {
    let dir = normalize([q[0], q[1], q[2]]);
    let cos_t = scattering_cosine(m.g, m.f_sl, q[3], q[4]);
    let s = scatter(dir, cos_t, q[5], m.anisotropy.as_ref());
    let nr = m.anisotropy.as_ref().map_or(1.0, |a| a.absorption_factor(dir));
    let seg = layer_walk(m, (q[3] * 511.0) as u32, q[6], dir[2], q[7], 3.0 * q[4], nr);
    let zs = m
        .tilt
        .zshift(600.0 * f64::from(q[0]), 600.0 * f64::from(q[1]), 500.0 * f64::from(q[2]));
    let r = [600.0 * q[0], 600.0 * q[1], 500.0 * q[2]];
    let c = idx.first_hit(r, dir, 20.0 * q[5], None, None);
    let (dom, h, imp) = c.map_or((-1.0, 0.0, [0.0; 3]), |c| (c.dom as f32, c.h, c.impact));
    [
        cos_t,
        s[0],
        s[1],
        s[2],
        seg.length,
        seg.tot,
        zs as f32,
        nr,
        dom,
        h,
        imp[0],
        imp[1],
        imp[2],
        cascade_xi(q[3]),
        henyey_greenstein(m.g, q[4]),
        simplified_liu(m.g, q[4]),
    ]
}

fn rel_close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0) || (a.is_infinite() && a == b)
}

/// Struct layouts: field offsets on the device equal Rust's.
pub fn check_layout(gpu: &cuda::Gpu) -> Result<Check, GpuError> {
    let (_m, f) = cuda::load(gpu, KERNEL_NAME, KERNEL_SRC, "layout", true, &[])?;
    let s = &gpu.stream;
    let mut out = s.alloc_zeros::<u64>(gpu::LAYOUT.len())?;
    let mut l = s.launch_builder(&f);
    l.arg(&mut out);
    // SAFETY: one thread writes LAYOUT.len() values.
    unsafe { l.launch(LaunchConfig::for_num_elems(1)) }?;
    let dev: Vec<usize> = s.clone_dtoh(&out)?.iter().map(|&v| v as usize).collect();
    Ok(check(
        "struct layouts (PhotonParams, GpuHit)",
        dev == gpu::LAYOUT,
        format!("device {dev:?}, host {:?}", gpu::LAYOUT),
    ))
}

/// Philox twin: `n` streams, one draw of each kind from each, then one whole block.
pub fn check_philox(gpu: &cuda::Gpu, n: usize) -> Result<Check, GpuError> {
    let (_m, f) = cuda::load(gpu, KERNEL_NAME, KERNEL_SRC, "twin_rng", true, &[])?;
    let s = &gpu.stream;
    let (seed, tag, a) = (0x1234_5678_9abc_def0u64, 7u32, 7.84f64);
    let mut u32s = s.alloc_zeros::<u32>(5 * n)?;
    let mut uf = s.alloc_zeros::<f32>(n)?;
    let mut ud = s.alloc_zeros::<f64>(n)?;
    let mut ex = s.alloc_zeros::<f32>(n)?;
    let mut ga = s.alloc_zeros::<f64>(n)?;
    let ni = n as i32;
    let mut l = s.launch_builder(&f);
    l.arg(&seed)
        .arg(&tag)
        .arg(&ni)
        .arg(&mut u32s)
        .arg(&mut uf)
        .arg(&mut ud)
        .arg(&mut ex)
        .arg(&mut ga)
        .arg(&a);
    // SAFETY: five output arrays of n elements, kernel guards i < n.
    unsafe { l.launch(LaunchConfig::for_num_elems(n as u32)) }?;
    let (g_u32, g_uf, g_ud, g_ex, g_ga) = (
        s.clone_dtoh(&u32s)?,
        s.clone_dtoh(&uf)?,
        s.clone_dtoh(&ud)?,
        s.clone_dtoh(&ex)?,
        s.clone_dtoh(&ga)?,
    );
    let (mut bits, mut expo, mut gam) = (0usize, 0usize, 0usize);
    let mut max_ga = 0.0f64;
    for i in 0..n {
        let mut r = RandomStream::new(seed, tag, i as u64);
        let (a1, a2, a3, a4, a5) = (r.next_u32(), r.uniform(), r.uniform_f64(), r.exponential(), r.gamma(a));
        let b = r.block4();
        if a1 != g_u32[5 * i]
            || b[..] != g_u32[5 * i + 1..5 * i + 5]
            || a2.to_bits() != g_uf[i].to_bits()
            || a3.to_bits() != g_ud[i].to_bits()
        {
            bits += 1;
        }
        if !rel_close(f64::from(a4), f64::from(g_ex[i]), 4e-7) {
            expo += 1;
        }
        max_ga = max_ga.max((a5 - g_ga[i]).abs() / a5);
        if !rel_close(a5, g_ga[i], 1e-12) {
            gam += 1;
        }
    }
    Ok(check(
        "philox twin",
        bits == 0 && expo == 0 && gam == 0,
        format!("{n} streams: {bits} bit mismatches in u32/uniform/uniform_f64/block4, {expo} exponentials beyond 4e-7, {gam} gamma draws beyond 1e-12 (max rel {max_ga:.1e})"),
    ))
}

/// Physics device functions against their Rust twins on `n` random inputs.
pub fn check_physics(gpu: &cuda::Gpu, det: &Detector, label: &str, n: usize) -> Result<Check, GpuError> {
    let (_m, f) = cuda::load(gpu, KERNEL_NAME, KERNEL_SRC, "twin_physics", true, &[])?;
    let s = &gpu.stream;
    let (tables, _hits, _count) = gpu::upload(s, &det.medium, &det.index, &[], 1)?;
    let mut rng = RandomStream::new(99, 0, 0);
    let m = &det.medium;
    let inputs: Vec<[f32; 8]> = (0..n)
        .map(|_| {
            let zp = m.hmin + (rng.uniform() * m.n_layers as f32 - 0.5) * m.dh;
            [
                rng.uniform() - 0.5,
                rng.uniform() - 0.5,
                rng.uniform() - 0.5,
                rng.uniform(),
                rng.uniform(),
                rng.uniform(),
                zp,
                3.0 * rng.exponential(),
            ]
        })
        .collect();
    let flat: Vec<f32> = inputs.concat();
    let din = s.clone_htod(&flat)?;
    let mut dout = s.alloc_zeros::<f32>(16 * n)?;
    let ni = n as i32;
    let mut l = s.launch_builder(&f);
    l.arg(&tables.params).arg(&ni).arg(&din).arg(&mut dout);
    // SAFETY: n inputs of 8 and outputs of 16 floats; the kernel guards i < n.
    unsafe { l.launch(LaunchConfig::for_num_elems(n as u32)) }?;
    let out = s.clone_dtoh(&dout)?;
    let mut bad = 0usize;
    let mut worst = [0.0f64; 16];
    for (i, q) in inputs.iter().enumerate() {
        let want = twin_physics(m, &det.index, q);
        let got = &out[16 * i..16 * i + 16];
        let mut ok = true;
        for k in 0..16 {
            let (a, b) = (f64::from(want[k]), f64::from(got[k]));
            let d = (a - b).abs() / a.abs().max(1.0);
            if d.is_finite() {
                worst[k] = worst[k].max(d);
            }
            ok &= rel_close(a, b, 1e-4);
        }
        bad += usize::from(!ok);
    }
    let names = [
        "cos", "sx", "sy", "sz", "walk", "tot", "zshift", "absf", "dom", "h", "ix", "iy", "iz", "xi", "hg", "sl",
    ];
    let detail = names
        .iter()
        .zip(worst)
        .map(|(n, w)| format!("{n} {w:.0e}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(check(
        &format!("device functions ({label})"),
        (bad as f64) <= 1e-3 * n as f64,
        format!("{n} inputs, {bad} differ beyond 1e-4; max rel diff: {detail}"),
    ))
}

/// Group raw hits by photon, each photon's in hit order.
fn by_photon(h: &[RawHit]) -> std::collections::BTreeMap<u64, Vec<RawHit>> {
    let mut m: std::collections::BTreeMap<u64, Vec<RawHit>> = Default::default();
    for x in h {
        m.entry(x.photon).or_default().push(*x);
    }
    m
}

/// One photon's hits on two sides are the same: the same DOMs in the same order, times within
/// 0.01 ns, the same wavelength slice (the hit's printed wavelength is drawn on the host from the
/// slice: issue #29).
fn same_hits(a: &[RawHit], b: &[RawHit]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| p.dom == q.dom && (p.time - q.time).abs() < 0.01 && p.slice == q.slice)
}

/// Raw hits whose wavelength slice is the one the CPU's emission (`source::emit` on the photon's
/// Philox stream) gives their photon, and the number of raw hits: a device hit of another slice
/// would print another wavelength (issue #29). Fast and precise modes emit alike, so this holds
/// for both.
#[must_use]
pub fn emitted_slices_match(m: &Medium, sources: &[crate::source::Source], seed: u64, raw: &[RawHit]) -> (usize, usize) {
    use crate::source::{emit, tags};
    let same = raw
        .iter()
        .filter(|h| {
            let src = &sources[h.source as usize];
            emit(src, m, &mut RandomStream::new(seed, tags::PHOTON, h.photon)).slice == h.slice
        })
        .count();
    (same, raw.len())
}

/// Fraction of photons (with hits on either side) whose hits are the same ([`same_hits`]).
#[must_use]
pub fn photon_agreement(a: &[RawHit], b: &[RawHit]) -> (usize, usize) {
    let (ma, mb) = (by_photon(a), by_photon(b));
    let keys: std::collections::BTreeSet<u64> = ma.keys().chain(mb.keys()).copied().collect();
    let same = keys
        .iter()
        .filter(|k| match (ma.get(k), mb.get(k)) {
            (Some(x), Some(y)) => same_hits(x, y),
            _ => false,
        })
        .count();
    (same, keys.len())
}

/// For diagnosing a precise comparison (`WARPDRIVE_CHECK_DUMP=DIR`): the hits of every photon
/// that [`photon_agreement`] counts as different, both sides (DOM, time, direction, impact), to
/// DIR/<name>.txt. Best effort: a diagnostic must not fail the check it explains.
fn dump_differences(dir: &Path, name: &str, cpu: &[RawHit], gpu: &[RawHit]) {
    use std::fmt::Write as _;
    let (a, b) = (by_photon(cpu), by_photon(gpu));
    let keys: std::collections::BTreeSet<u64> = a.keys().chain(b.keys()).copied().collect();
    let none = Vec::new();
    let mut text = String::new();
    for k in keys {
        let (x, y) = (a.get(&k).unwrap_or(&none), b.get(&k).unwrap_or(&none));
        if x.is_empty() || y.is_empty() || !same_hits(x, y) {
            let _ = writeln!(text, "photon {k}");
            for (side, hits) in [("cpu", x), ("gpu", y)] {
                for h in hits {
                    let _ = writeln!(
                        text,
                        "  {side} seq {} dom {} t {:.4} dir {:?} impact {:?}",
                        h.seq, h.dom, h.time, h.dir, h.impact
                    );
                }
            }
        }
    }
    let file: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let _ = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(dir.join(format!("{file}.txt")), text));
}

/// The photon checks of a `gpu-check` suite: the whole domain's ([`run_all`]), or only the
/// hole-ice or flasher precise comparison (steps of their own in `scripts/gpu-check photon`).
pub fn run_suite(
    suite: Suite,
    data: &Path,
    ordinal: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Check>, warpdrive_core::engine::Error> {
    let mut checks = Vec::new();
    if suite.runs(Suite::Photon) {
        checks.extend(run_all(data, ordinal, log)?);
        checks.extend(check_tabulate(data, ordinal, log)?);
    }
    if suite.runs(Suite::PhotonHole) {
        checks.extend(check_hole_ice(data, ordinal, log)?);
    }
    if suite.runs(Suite::PhotonFlasher) {
        checks.extend(check_flashers(data, ordinal, log)?);
    }
    if suite.runs(Suite::PhotonTwin) {
        checks.extend(check_twin(data, ordinal, log)?);
    }
    Ok(checks)
}

/// Run every check on device `ordinal` with the shared data in `data`. Returns the report lines.
pub fn run_all(data: &Path, ordinal: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, GpuError> {
    let gpu = cuda::open(ordinal)?;
    log(&format!(
        "device cuda:{ordinal}: {} (sm_{}{}, {} SMs), NVRTC {:?}",
        gpu.name,
        gpu.compute_capability.0,
        gpu.compute_capability.1,
        gpu.multiprocessors,
        cuda::nvrtc_version()?
    ));
    let mut out = vec![check_layout(&gpu)?, check_philox(&gpu, 1 << 18)?];
    log(&format!("{:?}", out.last()));
    let ice = |m: &str| {
        Detector::build(&DetectorOptions {
            ice_dir: Some(data.join("ice").join(m)),
            ..Default::default()
        })
        .map_err(|e| GpuError::Other(e.to_string()))
    };
    let spice = ice("spice_3.2.1")?;
    out.push(check_physics(&gpu, &spice, "spice_3.2.1: 1-D tilt, old anisotropy", 1 << 17)?);
    log(&format!("{:?}", out.last()));
    let ftp = ice("spice_ftp-v3m")?;
    out.push(check_physics(
        &gpu,
        &ftp,
        "spice_ftp-v3m: 2-D tilt, new absorption anisotropy",
        1 << 17,
    )?);
    log(&format!("{:?}", out.last()));

    // Whole photons: the 10 TeV reference cascade.
    let input = data.join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
    let text = std::fs::read_to_string(&input).map_err(|e| GpuError::Other(format!("{}: {e}", input.display())))?;
    let specs = parse_f2k(&input, &text, &spice.yield_)
        .map_err(|e| GpuError::Other(e.to_string()))?
        .specs;
    let seed = 20261122;
    let sources = realise(&specs, seed);
    // Precise mode (`--precise`, the twin) and the exact build, each against its CPU twin, in a
    // model without and one with birefringence (spice_ftp-v3m: diffusion, 2-D tilt, new
    // absorption anisotropy, DOM-type envelope: an extra block of words per segment on both
    // sides).
    let precise = precise_on(ordinal);
    let exact = exact_on(ordinal);
    let fspecs = parse_f2k(&input, &text, &ftp.yield_)
        .map_err(|e| GpuError::Other(e.to_string()))?
        .specs;
    let fsources = realise(&fspecs, seed);
    for (det, srcs, what) in [(&spice, &sources, ""), (&ftp, &fsources, ", birefringence (spice_ftp-v3m)")] {
        for (o, mode) in [(&precise, "precise"), (&exact, "exact precise build")] {
            out.push(precise_agreement(det, srcs, seed, o, &format!("{mode}{what}"))?);
            log(&format!("{:?}", out.last()));
        }
    }
    // The structural checks below on the exact build (no contraction: bit for bit).
    let exact = exact.gpu;
    let (gp, _) = gpu::run(&spice.medium, &spice.index, &sources, seed, &exact)?;

    // Loop structure does not change the physics: the job-queue kernel gives the same hits.
    let seg = GpuOptions {
        defines: Vec::new(),
        ..exact.clone()
    };
    let (gs, _) = gpu::run(&spice.medium, &spice.index, &sources, seed, &seg)?;
    out.push(check(
        "exact precise build: default (job queue) = plain segment loop",
        gs == gp,
        format!("{} vs {} raw hits, identical: {}", gp.len(), gs.len(), gs == gp),
    ));
    log(&format!("{:?}", out.last()));

    // Several GPUs: the output equals one GPU's (photon ranges split, hits merged and sorted).
    let all = warpdrive_core::cuda::device_count()?;
    if all > 1 {
        let multi = GpuOptions {
            devices: (0..all).collect(),
            ..exact.clone()
        };
        let (gm, sm) = gpu::run(&spice.medium, &spice.index, &sources, seed, &multi)?;
        out.push(check(
            &format!("cuda:all ({all} GPUs) = one GPU"),
            gm == gp,
            format!("{:?}: identical = {}", sm.devices, gm == gp),
        ));
    } else {
        out.push(check("cuda:all = one GPU", true, "skipped: one GPU visible".into()));
    }
    log(&format!("{:?}", out.last()));

    // No hit dropped: a tiny hit buffer forces re-runs in halves; the hits must be identical.
    let tiny = GpuOptions {
        hit_capacity: 512,
        batch: 1 << 18,
        ..exact.clone()
    };
    let (gt, st) = gpu::run(&spice.medium, &spice.index, &sources, seed, &tiny)?;
    out.push(check(
        "hit-buffer overflow re-runs",
        gt == gp && st.reruns > 0,
        format!("{} re-runs, {} launches, hits identical: {}", st.reruns, st.launches, gt == gp),
    ));
    log(&format!("{:?}", out.last()));

    // Fast mode: statistics against the CPU path (same seed, different numerics) and PPC.
    let fast = GpuOptions {
        devices: vec![ordinal],
        ..Default::default()
    };
    let (gf, sf) = gpu::run(&spice.medium, &spice.index, &sources, seed, &fast)?;
    let (gf2, _) = gpu::run(
        &spice.medium,
        &spice.index,
        &sources,
        seed,
        &GpuOptions {
            batch: 1 << 20,
            ..fast.clone()
        },
    )?;
    out.push(check(
        "fast: same output for any batch size",
        gf == gf2,
        format!(
            "batch 2^{} (default) vs 2^20: identical = {}",
            fast.batch.trailing_zeros(),
            gf == gf2
        ),
    ));
    let hf = crate::hits::accept(&spice, &gf, &sources, seed);
    let tf = timed_hits(&hf);
    // Wavelengths (issue #29): every precise device hit carries the slice the CPU emits for its
    // photon; fast mode draws the emission from its own streams (WD_FAST_RNG), so its hits'
    // slices are a sample of the same distribution (two-sample KS against the precise hits,
    // p > 0.001); the printed wavelengths are continuous (PPC prints its hits' wavelengths
    // uniformly within their slice: no two alike but by float coincidence).
    let (sp_same, sp_n) = emitted_slices_match(&spice.medium, &sources, seed, &gp);
    let slices = |raw: &[RawHit]| raw.iter().map(|h| f64::from(h.slice)).collect::<Vec<f64>>();
    let ks = warpdrive_core::stats::ks_two_sample(&slices(&gp), &slices(&gf));
    let distinct = hf
        .iter()
        .map(|h| h.wavelength.to_bits())
        .collect::<std::collections::HashSet<u32>>()
        .len();
    out.push(check(
        "wavelengths: GPU slices = CPU emission, printed values continuous",
        sp_same == sp_n && ks.p_value > 1e-3 && distinct as f64 >= 0.99 * hf.len() as f64,
        format!(
            "precise {sp_same} of {sp_n} raw hits in their photon's CPU slice; fast slices vs precise: KS D = {:.4}, \
             p = {:.3}; {distinct} distinct wavelengths among {} fast hits",
            ks.statistic,
            ks.p_value,
            hf.len()
        ),
    ));
    log(&format!("{:?}", out.last()));
    // Fast mode draws its own random numbers (WD_FAST_RNG: per-photon MWC64X streams), so fast
    // and precise runs are independent samples; one 10 TeV cascade (≈ 20 000 hits) against one
    // would be a weak two-sample test that fails by chance in ~6 % of calls (six tests at 1 %).
    // Sixteen seeds pooled on each side (the same seeds; the exact precise build = the CPU's exact
    // path photon by photon, above: the reference without the fast tables), in the model without
    // and the one with birefringence, test the same criteria with 16× the hits: a fast-mode bias
    // of a few per cent in a DOM's count or a time distribution shows.
    for (label, det, fspecs) in [("spice_3.2.1", &spice, &specs), ("spice_ftp-v3m", &ftp, &fspecs)] {
        let (mut fast_hits, mut precise_hits) = (Vec::new(), Vec::new());
        for k in 0..16u64 {
            let s = seed + 100 + k;
            let src = realise(fspecs, s);
            for (opts, into) in [(&fast, &mut fast_hits), (&exact, &mut precise_hits)] {
                let (raw, _) = gpu::run(&det.medium, &det.index, &src, s, opts)?;
                into.extend(timed_hits(&crate::hits::accept(det, &raw, &src, s)));
            }
        }
        let c = compare(&fast_hits, &[precise_hits], 3.0, 0.02, 20, 5);
        out.push(check(
            &format!("fast GPU vs exact precise build ({label}, 16 seeds pooled)"),
            c.passes(0.01),
            c.report(),
        ));
        log(&format!("{:?}", out.last()));
    }
    let ppc = ppc_reference_runs(data).map_err(|e| GpuError::Other(e.to_string()))?;
    let vs_ppc = compare(&tf, &ppc, 0.0, 0.02, 20, 5);
    out.push(check(
        "fast GPU vs PPC (total within 2 %, χ², KS)",
        vs_ppc.passes(0.01),
        vs_ppc.report(),
    ));
    log(&format!("{:?}", out.last()));
    // The birefringent models against PPC's eight H100 runs each (the CI criteria of
    // tests/ppc_reference.rs: total within 3 σ + 2 %, χ² over 20 DOMs, KS at 5).
    for model in ["spice_bfr-v2", "spice_ftp-v3m"] {
        let det = ice(model)?;
        let input = data.join("reference/ppc_bfr_h100_2026/input_cascade_10TeV.f2k");
        let text = std::fs::read_to_string(&input).map_err(|e| GpuError::Other(format!("{}: {e}", input.display())))?;
        let specs = parse_f2k(&input, &text, &det.yield_)
            .map_err(|e| GpuError::Other(e.to_string()))?
            .specs;
        let src = realise(&specs, seed + 1);
        let (raw, _) = gpu::run(&det.medium, &det.index, &src, seed + 1, &fast)?;
        let hits = timed_hits(&crate::hits::accept(&det, &raw, &src, seed + 1));
        let runs = crate::validate::ppc_bfr_reference_runs(data, model, "e10").map_err(|e| GpuError::Other(e.to_string()))?;
        let c = compare(&hits, &runs, 3.0, 0.02, 20, 5);
        out.push(check(
            &format!("fast GPU vs PPC ({model}, birefringence)"),
            c.passes(0.01),
            c.report(),
        ));
        log(&format!("{:?}", out.last()));
    }
    log(&format!(
        "fast kernel: {:.4} s for {} photons ({:.3} ns/photon), {} registers, {} B local",
        sf.kernel_seconds,
        sources.iter().map(|s| s.photons).sum::<u64>(),
        1e9 * sf.kernel_seconds / sources.iter().map(|s| s.photons).sum::<u64>() as f64,
        sf.registers,
        sf.local_bytes
    ));
    Ok(out)
}

/// A copy of the shared ice model `model` in a fresh temporary directory with its cfg.txt
/// rewritten by `edit` (hole-ice checks: the shared models have no hole-ice column).
fn ice_with_cfg(data: &Path, model: &str, edit: impl Fn(&str) -> String) -> Result<std::path::PathBuf, GpuError> {
    let io = |e: std::io::Error| GpuError::Other(format!("hole-ice model from {model}: {e}"));
    let dir = std::env::temp_dir().join(format!("warpdrive-gpu-check-hole-{}-{model}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(io)?;
    for e in std::fs::read_dir(data.join("ice").join(model)).map_err(io)? {
        let p = e.map_err(io)?.path();
        if let (true, Some(name)) = (p.is_file(), p.file_name()) {
            std::fs::copy(&p, dir.join(name)).map_err(io)?;
        }
    }
    let cfg = std::fs::read_to_string(dir.join("cfg.txt")).map_err(io)?;
    std::fs::write(dir.join("cfg.txt"), edit(&cfg)).map_err(io)?;
    Ok(dir)
}

/// The two hole-ice models of [`check_hole_ice`], in temporary directories.
pub fn hole_models(data: &Path) -> Result<[std::path::PathBuf; 2], GpuError> {
    let spice = ice_with_cfg(data, "spice_3.2.1", |c| {
        format!("{c}\n2 # hole ice radius [DOM radii]\n0.5\n20\n0.3\n0.5\n")
    })?;
    let ftp = ice_with_cfg(data, "spice_ftp-v3m", |c| {
        let mut t: String = c
            .lines()
            .map(|l| {
                if l.contains("hole ice radius") {
                    l.replacen("0.0", "1.0", 1)
                } else if l.contains("hole ice effective scattering length") {
                    l.replacen("0.03", "0.3", 1)
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        t.push('\n');
        t
    })?;
    Ok([spice, ftp])
}

/// A CPU path as `fast::twin::run` and `propagate::run` take it.
type CpuRun = fn(&crate::medium::Medium, &crate::collision::DomIndex, &[crate::source::Source], u64, &Progress) -> Vec<RawHit>;

/// A precise GPU build and the CPU path it follows photon by photon.
struct PreciseBuild {
    gpu: GpuOptions,
    cpu: CpuRun,
    /// Every photon's hits bit for bit the same (the twin, whose two sides compute the same
    /// operations), rather than ≥ 99 % within 0.01 ns (the exact build: CUDA's libm is not Rust's).
    bitwise: bool,
}

/// Precise mode on GPU `ordinal` as `--precise` runs it (`gpu::precise_options`), with the CPU's
/// precise mode (`fast::twin`): bit for bit.
fn precise_on(ordinal: usize) -> PreciseBuild {
    PreciseBuild {
        gpu: gpu::precise_options(vec![ordinal]),
        cpu: crate::fast::twin::run,
        bitwise: true,
    }
}

/// The exact precise build on GPU `ordinal`: IEEE arithmetic without the fast-only tables, with
/// the CPU's exact path (`propagate::run`: the tilt model evaluated exactly, the (slice × layer)
/// ice tables, libm). No contraction, so code structure alone (loop shape, devices, re-runs)
/// leaves its hits bit for bit the same.
fn exact_on(ordinal: usize) -> PreciseBuild {
    PreciseBuild {
        gpu: GpuOptions {
            devices: vec![ordinal],
            precise: true,
            ..Default::default()
        },
        cpu: crate::propagate::run,
        bitwise: false,
    }
}

/// The precise comparisons' criterion: of `total` photons with hits on either side, `same` with
/// the same hits (`photon_agreement`) and `bits` bit for bit; all of them bit for bit when
/// `bitwise` (two sides computing the same operations), else ≥ 99 % the same.
fn agrees(same: usize, bits: usize, total: usize, bitwise: bool) -> bool {
    total > 0
        && if bitwise {
            bits == total && same == total
        } else {
            same as f64 / total as f64 >= 0.99
        }
}

/// A precise build follows its CPU path photon by photon: ≥ 99 % of the photons with hits have
/// the same hits (`photon_agreement`), or for a `bitwise` build every photon's hits are bit for
/// bit the same ([`bit_identical_photons`]). The check named "`name`: photon-by-photon CPU = GPU".
fn precise_agreement(
    det: &Detector,
    sources: &[crate::source::Source],
    seed: u64,
    precise: &PreciseBuild,
    name: &str,
) -> Result<Check, GpuError> {
    let cpu = (precise.cpu)(&det.medium, &det.index, sources, seed, &Progress::hidden());
    let (gp, sp) = gpu::run(&det.medium, &det.index, sources, seed, &precise.gpu)?;
    let (same, total) = photon_agreement(&cpu, &gp);
    let bits = bit_identical_photons(&cpu, &gp);
    let frac = same as f64 / total.max(1) as f64;
    if let Some(dir) = std::env::var_os("WARPDRIVE_CHECK_DUMP") {
        dump_differences(Path::new(&dir), name, &cpu, &gp);
    }
    Ok(check(
        &format!("{name}: photon-by-photon CPU = GPU"),
        agrees(same, bits, total, precise.bitwise),
        format!(
            "{same} of {total} photons with hits identical ({:.3} %), {bits} bit for bit (required: {}); CPU {} raw hits, GPU {}; \
             {} photons, kernel {:.3} s",
            100.0 * frac,
            if precise.bitwise { "all" } else { "99 % within 0.01 ns" },
            cpu.len(),
            gp.len(),
            sources.iter().map(|s| s.photons).sum::<u64>(),
            sp.kernel_seconds
        ),
    ))
}

/// Hole ice on the device (`scripts/gpu-check` photon step `photon-hole`, `gpu-check --domain
/// photon-hole`): precise mode must follow the CPU path photon by photon (every photon's hits bit
/// for bit, `precise_agreement`), as for birefringence, on two models: spice_3.2.1 with columns of
/// 2 DOM radii (effective scattering 0.5 m, g 0.5, f_SL 0.3, absorption 20 m appended as cfg
/// lines 8–12), and spice_ftp-v3m (birefringence, 2-D tilt, DOM types) with its own hole-ice
/// lines turned on (radius 1 DOM radius, effective scattering 0.3 m instead of 0.03 m so photons
/// do not make thousands of steps inside). The 10 TeV reference cascade, seed 20261122.
pub fn check_hole_ice(data: &Path, ordinal: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, GpuError> {
    let [spice, ftp] = hole_models(data)?;
    let input = data.join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
    let text = std::fs::read_to_string(&input).map_err(|e| GpuError::Other(format!("{}: {e}", input.display())))?;
    let seed = 20261122;
    let precise = precise_on(ordinal);
    let mut out = Vec::new();
    for (label, dir) in [
        ("spice_3.2.1 + columns of 2 DOM radii", &spice),
        ("spice_ftp-v3m + columns of 1 DOM radius, birefringence", &ftp),
    ] {
        let det = Detector::build(&DetectorOptions {
            ice_dir: Some(dir.clone()),
            ..Default::default()
        })
        .map_err(|e| GpuError::Other(e.to_string()))?;
        let Some(h) = det.medium.hole else {
            return Err(GpuError::Other(format!("{label}: hole ice not on (cfg.txt of {})", dir.display())));
        };
        log(&format!("{label}: {h:?}"));
        let specs = parse_f2k(&input, &text, &det.yield_)
            .map_err(|e| GpuError::Other(e.to_string()))?
            .specs;
        let sources = realise(&specs, seed);
        out.push(precise_agreement(
            &det,
            &sources,
            seed,
            &precise,
            &format!("precise, hole ice ({label})"),
        )?);
        log(&format!("{:?}", out.last()));
    }
    let _ = std::fs::remove_dir_all(&spice);
    let _ = std::fs::remove_dir_all(&ftp);
    Ok(out)
}

/// The flasher configurations of [`check_flashers`]: (label, ice model, `str`, options).
#[must_use]
pub fn flasher_cases() -> Vec<(&'static str, &'static str, i32, crate::f2k::FlasherOptions)> {
    use crate::f2k::FlasherOptions;
    vec![
        ("default beam, any azimuth", "spice_3.2.1", 63, FlasherOptions::default()),
        (
            "lab profile, LED ring, cable at 20 deg (FWID 1100)",
            "spice_ftp-v3m",
            63,
            FlasherOptions {
                fwid: 1100.0,
                ..Default::default()
            },
        ),
        (
            "lab profile, tilted LEDs, 4-fold pattern, FZCR -6.1",
            "spice_ftp-v3m",
            -63,
            FlasherOptions {
                fwid: 1000.0,
                fldr: 1110.0,
                fzcr: -6.1,
                ..Default::default()
            },
        ),
        (
            "lab profile, one LED of a tilted DOM (FTLT), own DOM records (OFLA=0)",
            "spice_bfr-v2",
            63,
            FlasherOptions {
                fwid: 2000.0,
                fldr: 30.0,
                ftlt: Some([0.1, 0.05, 1.0]),
                own_dom_records: true,
                ..Default::default()
            },
        ),
    ]
}

/// Flashers on the device (`gpu-check --domain photon-flasher`, a step of scripts/gpu-check
/// photon): precise mode follows the CPU path photon by photon (every photon's hits bit for bit,
/// `precise_agreement`) for the default beam and the lab profile with the DOM's own geometry (band,
/// harness, cable), LED patterns, FZCR and a tilted DOM; 1e8 LED photons each, seed 20261125.
pub fn check_flashers(data: &Path, ordinal: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, GpuError> {
    let seed = 20261125;
    let precise = precise_on(ordinal);
    let mut out = Vec::new();
    for (label, model, string, opts) in flasher_cases() {
        let det = Detector::build(&DetectorOptions {
            ice_dir: Some(data.join("ice").join(model)),
            ..Default::default()
        })
        .map_err(|e| GpuError::Other(e.to_string()))?;
        let specs = crate::f2k::flasher(&det, string, 20, 1e8, &opts).map_err(|e| GpuError::Other(e.to_string()))?;
        let sources = realise(&specs, seed);
        out.push(precise_agreement(
            &det,
            &sources,
            seed,
            &precise,
            &format!("precise, flasher {string}-20 in {model} ({label})"),
        )?);
        log(&format!("{:?}", out.last()));
    }
    // Fast mode (its own random streams and arithmetic) against PPC's flasher runs: `ppc 63 20
    // 4e8 <gpu>` in both birefringent models, default FWID and WFLA=405, issue #14's criterion
    // as the CPU test tests/ppc_reference.rs applies it.
    for model in ["spice_bfr-v2", "spice_ftp-v3m"] {
        for (kind, wfla) in [("fla", None), ("fla405", Some("405"))] {
            let (ok, report) = crate::validate::ppc_flasher_vs_reference(data, model, kind, wfla, None, &ordinal.to_string(), seed)
                .map_err(GpuError::Other)?;
            out.push(check(&format!("fast, flasher 63-20 in {model} ({kind}) vs PPC"), ok, report));
            log(&format!("{:?}", out.last()));
        }
    }
    Ok(out)
}

/// The tabulation kernel's struct layout: `TabParams` offsets on the device equal Rust's.
pub fn check_tabulate_layout(gpu: &cuda::Gpu) -> Result<Check, GpuError> {
    use crate::tabulate::gpu as tg;
    let (_m, f) = cuda::load(
        gpu,
        tg::KERNEL_NAME,
        tg::KERNEL_SRC,
        "tabulate_layout",
        true,
        &tg::SWITCHES.iter().map(|d| (*d).to_string()).collect::<Vec<_>>(),
    )?;
    let s = &gpu.stream;
    let mut out = s.alloc_zeros::<u64>(tg::LAYOUT.len())?;
    let mut l = s.launch_builder(&f);
    l.arg(&mut out);
    // SAFETY: one thread writes LAYOUT.len() values.
    unsafe { l.launch(LaunchConfig::for_num_elems(1)) }?;
    let dev: Vec<usize> = s.clone_dtoh(&out)?.iter().map(|&v| v as usize).collect();
    Ok(check(
        "photon tabulate: struct layout (TabParams)",
        dev == tg::LAYOUT,
        format!("device {dev:?}, host {:?}", tg::LAYOUT),
    ))
}

/// The sampled tabulation kernel's struct layout: `SampParams` offsets on the device equal Rust's.
pub fn check_sampled_layout(gpu: &cuda::Gpu) -> Result<Check, GpuError> {
    use crate::tabulate::gpu as tg;
    // What one thread of layout kernel `function` writes (`len` values).
    let layout = |function: &str, len: usize| -> Result<Vec<usize>, GpuError> {
        let (_m, f) = cuda::load(gpu, tg::SAMPLED_NAME, tg::SAMPLED_SRC, function, false, &tg::sampled_switches())?;
        let s = &gpu.stream;
        let mut out = s.alloc_zeros::<u64>(len)?;
        let mut l = s.launch_builder(&f);
        l.arg(&mut out);
        // SAFETY: one thread writes `len` values.
        unsafe { l.launch(LaunchConfig::for_num_elems(1)) }?;
        Ok(s.clone_dtoh(&out)?.iter().map(|&v| v as usize).collect())
    };
    let dev = layout("sampled_layout", tg::SAMPLED_LAYOUT.len())?;
    // The two-kernel estimator's parameters and records (sampled_split.cu, WD_SAMP_SPLIT).
    let split = layout("sampled_split_layout", tg::SPLIT_LAYOUT.len())?;
    Ok(check(
        "photon tabulate sampled: struct layout (SampParams, SampSplit and its records)",
        dev == tg::SAMPLED_LAYOUT && split == tg::SPLIT_LAYOUT,
        format!(
            "device {dev:?}, host {:?}; split: device {split:?}, host {:?}",
            tg::SAMPLED_LAYOUT,
            tg::SPLIT_LAYOUT
        ),
    ))
}

/// A sampled tabulation's counters per source, to compare two runs of the same photons: photons
/// tabulated, absorbed and escaped, segments, points, and (`entries`) the entries, which only
/// builds of the same variance count alike (the runs' build counts runs, batch means points).
fn sampled_counts(t: &crate::tabulate::Tables, entries: bool) -> Vec<(u64, u64, u64, u64, u64, Option<u64>)> {
    t.per_source
        .iter()
        .map(|h| {
            (
                h.tabulated,
                h.absorbed,
                h.escaped,
                h.segments,
                h.points,
                entries.then_some(h.entries),
            )
        })
        .collect()
}

/// The sampled kernel's warp compaction of the points (sampled.cu WD_SAMP_COMPACT, the default)
/// against its lane-at-a-time path (WD_SAMP_COMPACT=0) on the same photons: the same integers
/// in every cell (sums, squares, spatial squares) and the same counters (tabulated, absorbed,
/// escaped, segments, runs, points) — the float runs are merged in each photon's order on both
/// and the integer atomics do not depend on the order. `g` is the default build's run of `t`
/// with the default step; also one point per segment (Δ = ∞) both ways, and the compaction
/// in blocks of 80 threads (a warp of 16 lanes: the queue's width is the warp's). The
/// lane-at-a-time reference is the earlier code (WD_SAMP_NODIV=0, WD_SAMP_EDGES=0: the merge's
/// division, the edges loaded), so the default's exact speed-ups (WD_SAMP_NODIV, _EDGES, _SLOTS,
/// _DEFER) are checked with it; also the compaction without the deferred queue (WD_SAMP_DEFER=0).
/// gpu-check passes the runs' build (`WD_SAMP_REP=0`) as `g` and in `on`: the default's batch
/// means have no runs ([`check_sampled_batch_means`] compares the two).
pub fn check_sampled_compaction(
    t: &crate::tabulate::Tabulate,
    g: &crate::tabulate::Tables,
    on: &dyn Fn(&[&str], u64) -> crate::tabulate::gpu::TabGpuOptions,
    gpu_ctl: &warpdrive_core::engine::Control,
) -> Result<Check, warpdrive_core::engine::Error> {
    use crate::tabulate::{Estimator, Tables, DEFAULT_SAMPLE_STEP};
    let same = |a: &Tables, b: &Tables| {
        let a_ = crate::tabulate::agreement::agreement(a, b);
        (
            a_.identical && sampled_counts(a, true) == sampled_counts(b, true),
            a_.identical_cells,
            a_.cells,
        )
    };
    let batch = crate::tabulate::gpu::BATCH;
    let earlier = ["WD_SAMP_COMPACT=0", "WD_SAMP_NODIV=0", "WD_SAMP_EDGES=0"];
    let stepped = t.clone().with_estimator(Estimator::sampled(DEFAULT_SAMPLE_STEP))?;
    let lane = stepped.run_gpu(&on(&earlier, batch), gpu_ctl)?;
    let undeferred = stepped.run_gpu(&on(&["WD_SAMP_DEFER=0"], batch), gpu_ctl)?;
    let per_segment = t.clone().with_estimator(Estimator::sampled(f64::INFINITY))?;
    let seg_warp = per_segment.run_gpu(&on(&[], batch), gpu_ctl)?;
    let seg_lane = per_segment.run_gpu(&on(&earlier, batch), gpu_ctl)?;
    let narrow = crate::tabulate::gpu::TabGpuOptions {
        block: 80,
        ..on(&[], batch)
    };
    let small = t
        .clone()
        .with_estimator(Estimator::sampled(DEFAULT_SAMPLE_STEP))?
        .run_gpu(&narrow, gpu_ctl)?;
    let (d, s, w) = (same(&lane, g), same(&seg_lane, &seg_warp), same(&lane, &small));
    let u = same(&lane, &undeferred);
    Ok(check(
        "photon tabulate sampled: warp compaction = lane at a time (the same integers)",
        d.0 && s.0 && w.0 && u.0 && g.hist.points > 0 && seg_warp.hist.points > 0,
        format!(
            "Δ = {DEFAULT_SAMPLE_STEP} m: {} ({} of {} cells; {} points, {} runs; kernels {:.3} s compacted, {:.3} s lane at a time); \
             one point per segment: {} ({} of {} cells; kernels {:.3} s, {:.3} s); blocks of 80 threads: {} ({} of {} cells); \
             WD_SAMP_DEFER=0: {} ({} of {} cells; kernels {:.3} s)",
            d.0,
            d.1,
            d.2,
            g.hist.points,
            g.hist.entries,
            g.kernel_seconds,
            lane.kernel_seconds,
            s.0,
            s.1,
            s.2,
            seg_warp.kernel_seconds,
            seg_lane.kernel_seconds,
            w.0,
            w.1,
            w.2,
            u.0,
            u.1,
            u.2,
            undeferred.kernel_seconds
        ),
    ))
}

/// The sampled kernel's structural alternatives (sampled.cu `WD_SAMP_JOBQ`: the per-warp job
/// queue fed from a counter; `WD_SAMP_RED`: the squares as fire-and-forget digit adds folded into
/// u128 after every launch; docs/spline.md "Job queue and fire-and-forget squares";
/// `WD_SAMP_ANGC`: the acceptance polynomial from the parameter block), on by default,
/// against builds with each turned off and with all off and the earlier 4 rounds (the earlier
/// default, `SAMPLED_EARLIER`), on the same photons at Δ = 1 m (`g`, the default's run of `t`); and the default with
/// one point per segment (against the earlier default), in blocks of 80 threads (a warp of 16
/// lanes) and in launches of 2¹² photons (the job counter restarts and the digits are folded every
/// launch). Expected: the same integers in every cell (sums, squares, spatial squares) and the
/// same counters. The fast build's float contractions are NVVM's choice and may differ between
/// builds whose code around them differs (the `WD_BFR` build already orders one `a² + b²`
/// differently from the commit before these switches), which would part a few photons in their
/// last bits; so a comparison that is not identical still passes with the shared-photon criterion
/// of [`crate::tabulate::agreement::Agreement::passes`] (L1 ≤ 0.02, χ²/ndf ≤ 1 with both
/// variances, counts within 1 %), and the detail says which it was. As for
/// [`check_sampled_compaction`], `g` and `on` are the runs' build (`WD_SAMP_REP=0`).
pub fn check_sampled_alternatives(
    t: &crate::tabulate::Tabulate,
    g: &crate::tabulate::Tables,
    on: &dyn Fn(&[&str], u64) -> crate::tabulate::gpu::TabGpuOptions,
    gpu_ctl: &warpdrive_core::engine::Control,
) -> Result<Check, warpdrive_core::engine::Error> {
    use crate::tabulate::{agreement::agreement, Estimator, Tables, DEFAULT_SAMPLE_STEP};
    // (passes, in words): identical integers and counters, else the shared-photon agreement.
    let compare = |a: &Tables, b: &Tables| {
        let r = agreement(a, b);
        if r.identical && sampled_counts(a, true) == sampled_counts(b, true) {
            (true, format!("the same integers ({} cells)", r.cells))
        } else {
            (
                r.passes(),
                format!("not identical, shared-photon agreement {}: {}", r.passes(), r.report()),
            )
        }
    };
    let batch = crate::tabulate::gpu::BATCH;
    let earlier = crate::tabulate::gpu::SAMPLED_EARLIER;
    let stepped = t.clone().with_estimator(Estimator::sampled(DEFAULT_SAMPLE_STEP))?;
    let mut rows = Vec::new();
    let mut ok = g.hist.points > 0;
    for (label, d) in [
        ("WD_SAMP_JOBQ=0", &["WD_SAMP_JOBQ=0"][..]),
        ("WD_SAMP_RED=0", &["WD_SAMP_RED=0"][..]),
        ("WD_SAMP_ANGC=0", &["WD_SAMP_ANGC=0"][..]),
        ("the earlier default (all three 0, 4 rounds)", earlier),
        ("WD_SAMP_LEAN=0 (the lookup axis by axis)", &["WD_SAMP_LEAN=0"][..]),
        ("WD_SAMP_STEPWISE=1 (one point per lane and step)", STEPWISE),
        (
            "WD_SAMP_STEPWISE=1 without the job queue",
            &["WD_SAMP_STEPWISE=1", "WD_SAMP_JOBQ=0"][..],
        ),
        ("WD_SAMP_SPLIT=1 (two kernels a round)", SPLIT),
        ("WD_SAMP_SPLIT=2 (the rounds overlapped on two streams)", &["WD_SAMP_SPLIT=2"][..]),
        (
            "WD_SAMP_SPLIT=2 with paths of 5 segments and rounds of 2^12 jobs",
            &["WD_SAMP_SPLIT=2", "WD_SAMP_PATH=5", "WD_SAMP_ROUND_JOBS=4096"][..],
        ),
        (
            "WD_SAMP_SPLIT=1 with paths of 5 segments (most photons paused, resumed over rounds)",
            &["WD_SAMP_SPLIT=1", "WD_SAMP_PATH=5"][..],
        ),
    ] {
        let r = stepped.run_gpu(&on(d, batch), gpu_ctl)?;
        let (s, words) = compare(g, &r);
        ok &= s;
        rows.push(format!("{label}: {words} (kernels {:.4} s)", r.kernel_seconds));
    }
    let per_segment = t.clone().with_estimator(Estimator::sampled(f64::INFINITY))?;
    let seg_default = per_segment.run_gpu(&on(&[], batch), gpu_ctl)?;
    let seg_earlier = per_segment.run_gpu(&on(earlier, batch), gpu_ctl)?;
    let (s, words) = compare(&seg_default, &seg_earlier);
    ok &= s && seg_default.hist.points > 0;
    rows.push(format!("one point per segment, default against the earlier default: {words}"));
    let (s, words) = compare(&seg_default, &per_segment.run_gpu(&on(STEPWISE, batch), gpu_ctl)?);
    ok &= s;
    rows.push(format!("one point per segment, default against WD_SAMP_STEPWISE=1: {words}"));
    let (s, words) = compare(&seg_default, &per_segment.run_gpu(&on(SPLIT, batch), gpu_ctl)?);
    ok &= s;
    rows.push(format!("one point per segment, default against WD_SAMP_SPLIT=1: {words}"));
    let small_split = stepped.run_gpu(&on(SPLIT, 1 << 12), gpu_ctl)?;
    let (s, words) = compare(g, &small_split);
    ok &= s;
    rows.push(format!("WD_SAMP_SPLIT=1 with a batch of 2^12 (rounds of 2^12 jobs): {words}"));
    // The warp scans against their lane-at-a-time reference (expected: the same integers), and
    // against the default (expected: not identical, the shared-photon criterion).
    let scan = stepped.run_gpu(&on(SCAN, batch), gpu_ctl)?;
    let reference = stepped.run_gpu(&on(QPOINT_REFERENCE, batch), gpu_ctl)?;
    // The azimuth by atan2f (the default before WD_SAMP_ATAN): cells differ only for points
    // within ~1e-5 degrees of an azimuth edge, so the shared-photon criterion.
    let atan2f = stepped.run_gpu(&on(&["WD_SAMP_ATAN=0"], batch), gpu_ctl)?;
    for (label, a, b) in [
        ("WD_SAMP_SCAN=1 against WD_SAMP_STEPWISE=1,WD_SAMP_QPOINT=1", &reference, &scan),
        ("WD_SAMP_SCAN=1 against the default (float runs)", g, &scan),
        ("WD_SAMP_ATAN=0 (atan2f) against the default (polynomial azimuth)", g, &atan2f),
    ] {
        let (s, words) = compare(a, b);
        ok &= s;
        rows.push(format!("{label}: {words} (kernels {:.4} s)", b.kernel_seconds));
    }
    let narrow = |d: &[&str]| crate::tabulate::gpu::TabGpuOptions { block: 80, ..on(d, batch) };
    for (label, request, reference, scan) in [
        ("one point per segment", &per_segment, on(QPOINT_REFERENCE, batch), on(SCAN, batch)),
        ("blocks of 80 threads", &stepped, narrow(QPOINT_REFERENCE), narrow(SCAN)),
    ] {
        let (s, words) = compare(&request.run_gpu(&reference, gpu_ctl)?, &request.run_gpu(&scan, gpu_ctl)?);
        ok &= s;
        rows.push(format!("WD_SAMP_SCAN=1 against its reference, {label}: {words}"));
    }
    let narrow = crate::tabulate::gpu::TabGpuOptions {
        block: 80,
        ..on(&[], batch)
    };
    let (s, words) = compare(g, &stepped.run_gpu(&narrow, gpu_ctl)?);
    ok &= s;
    rows.push(format!("blocks of 80 threads: {words}"));
    let small = stepped.run_gpu(&on(&[], 1 << 12), gpu_ctl)?;
    let (s, words) = compare(g, &small);
    ok &= s && small.photons > 1 << 12;
    rows.push(format!("launches of 2^12 photons: {words}"));
    Ok(check(
        "photon tabulate sampled: job queue and split squares = without them (the same integers)",
        ok,
        format!(
            "Δ = {DEFAULT_SAMPLE_STEP} m, {} points, {} runs, default kernels {:.4} s; {}",
            g.hist.points,
            g.hist.entries,
            g.kernel_seconds,
            rows.join("; ")
        ),
    ))
}

/// Variances of the spatial cells of `b` against `a`'s over the cells where `a` has N_eff ≥ 20:
/// (Σ V_b / Σ V_a, the median cell's V_b / V_a, cells).
fn spatial_variance_ratio(a: &crate::tabulate::Tables, b: &crate::tabulate::Tables) -> (f64, f64, usize) {
    use crate::tabulate::{SQ_UNIT, SUM_UNIT};
    let tc = a.binning.time_cells() as usize;
    let (mut sa, mut sb, mut ratios) = (0.0, 0.0, Vec::new());
    for (ha, hb) in a.per_source.iter().zip(&b.per_source) {
        for sp in 0..ha.spatial_sumsq.len().min(hb.spatial_sumsq.len()) {
            let x: u64 = ha.sum[sp * tc..(sp + 1) * tc].iter().sum();
            let (va, vb) = (ha.spatial_sumsq[sp] as f64 / SQ_UNIT, hb.spatial_sumsq[sp] as f64 / SQ_UNIT);
            let x = x as f64 / SUM_UNIT;
            if va > 0.0 && x * x / va >= 20.0 {
                sa += va;
                sb += vb;
                ratios.push(vb / va);
            }
        }
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN);
    (if sa > 0.0 { sb / sa } else { f64::NAN }, median, ratios.len())
}

/// The spatial cells' variance by batch means (sampled.cu `WD_SAMP_REP`, the default: each
/// point to its cell's sum and to replica id mod R of its spatial cell, V = R/(R − 1)·Σ (S_r −
/// S̄)² per launch) against the runs' squares (`g_runs`, `WD_SAMP_REP=0`) on the same photons:
/// * the sums differ only in their rounding (each point's instead of each run's): the
///   shared-photon criterion of [`crate::tabulate::agreement::Agreement::passes`], and the same
///   photon, segment and point counts;
/// * the variances agree: over the spatial cells with N_eff ≥ 20, Σ V_batch / Σ V_runs in
///   [0.97, 1.15] (the runs miss a photon's returns to a cell, 1–4 % on the CPU, and 256
///   replicas leave ~9 % noise per cell and launch, far less in the sum) and the median cell's
///   ratio in [0.85, 1.2];
/// * without the job queue the same integers (the replicas follow the photon ids, not the lanes),
///   and the same with end markers in the queue (`WD_SAMP_ENDBITS=0`), per-thread counters and 8
///   photons a refill (`WD_SAMP_LEAN_SMEM=0`), both (session 35's default), and the queue as six
///   arrays (`WD_SAMP_AOS=0`, session 37's default);
/// * in launches of 2¹² photons the same sums and Σ V within [0.9, 1.1] of the default's (the
///   variances are formed per launch from fewer photons each).
pub fn check_sampled_batch_means(
    t: &crate::tabulate::Tabulate,
    g: &crate::tabulate::Tables,
    g_runs: &crate::tabulate::Tables,
    on: &dyn Fn(&[&str], u64) -> crate::tabulate::gpu::TabGpuOptions,
    gpu_ctl: &warpdrive_core::engine::Control,
) -> Result<Check, warpdrive_core::engine::Error> {
    use crate::tabulate::{agreement::agreement, Estimator, Tables, DEFAULT_SAMPLE_STEP};
    let batch = crate::tabulate::gpu::BATCH;
    let stepped = t.clone().with_estimator(Estimator::sampled(DEFAULT_SAMPLE_STEP))?;
    // Without the entries: the runs' build counts runs, batch means count points.
    let counts = |t: &Tables| sampled_counts(t, false);
    let shared = agreement(g_runs, g);
    let same_counts = counts(g_runs) == counts(g);
    let (sum_ratio, median, n) = spatial_variance_ratio(g_runs, g);
    let variances = (0.97..=1.15).contains(&sum_ratio) && (0.85..=1.2).contains(&median) && n > 0;
    // The same integers and counts without the job queue (the replicas follow the photon ids),
    // with end markers in the queue instead of the photons' last points' signs (WD_SAMP_ENDBITS=0),
    // with per-thread counters, the runs' arrays and 8 photons a refill (WD_SAMP_LEAN_SMEM=0), with
    // both (session 35's default), and with the queue's entries as six arrays (WD_SAMP_AOS=0).
    let mut same_builds = true;
    let mut builds = Vec::new();
    // The cells' agreement reported: the first build that differs, else the last one's.
    let mut shown = None;
    for extra in [
        &["WD_SAMP_JOBQ=0"][..],
        &["WD_SAMP_ENDBITS=0"],
        &["WD_SAMP_LEAN_SMEM=0"],
        &["WD_SAMP_ENDBITS=0", "WD_SAMP_LEAN_SMEM=0"],
        // Session 37's queue of six arrays (docs/spline.md "The queue as vectors").
        &["WD_SAMP_AOS=0"],
    ] {
        let alt = stepped.run_gpu(&on(extra, batch), gpu_ctl)?;
        let a = agreement(g, &alt);
        let same = a.identical && counts(g) == counts(&alt);
        builds.push(format!("{}: {}", extra.join(","), if same { "same" } else { "DIFFERENT" }));
        if same_builds || shown.is_none() {
            shown = Some(a);
        }
        same_builds &= same;
    }
    let j = shown.expect("five builds compared");
    let small = stepped.run_gpu(&on(&[], 1 << 12), gpu_ctl)?;
    let same_sums = g.per_source.iter().zip(&small.per_source).all(|(a, b)| a.sum == b.sum) && counts(g) == counts(&small);
    let (small_ratio, small_median, _) = spatial_variance_ratio(g, &small);
    let small_ok = same_sums && (0.9..=1.1).contains(&small_ratio);
    Ok(check(
        "photon tabulate sampled: batch means = the runs' squares (the same photons)",
        shared.passes() && same_counts && variances && same_builds && small_ok && g.hist.points > 0 && !g.hist.cell_squares,
        format!(
            "against WD_SAMP_REP=0: {}; counts the same: {same_counts}; spatial variances over {n} cells with N_eff ≥ 20: \
             Σ ratio {sum_ratio:.4} (0.97–1.15), median {median:.4} (0.85–1.2); other builds: {} ({}; {} of {} cells identical); \
             launches of 2^12 photons: sums the same {same_sums}, Σ V ratio {small_ratio:.4} (0.9–1.1), median {small_median:.4}; \
             kernels {:.4} s (runs {:.4} s)",
            shared.report(),
            if same_builds {
                "the same integers"
            } else {
                "NOT the same integers"
            },
            builds.join("; "),
            j.identical_cells,
            j.cells,
            g.kernel_seconds,
            g_runs.kernel_seconds
        ),
    ))
}

/// The sampled kernel's loop with one point per lane and step (sampled.cu `WD_SAMP_STEPWISE`,
/// docs/spline.md "One point per step"): compared with the default and timed beside it.
const STEPWISE: &[&str] = &["WD_SAMP_STEPWISE=1"];
/// The warp scans of the points (sampled.cu `WD_SAMP_SCAN`, docs/spline.md "Warp scans of the
/// points") and their reference, one lane at a time with the same per-point integer amounts
/// (`WD_SAMP_QPOINT`): the same integers; against the default (float runs), the shared-photon
/// criterion.
const SCAN: &[&str] = &["WD_SAMP_SCAN=1"];
/// The two kernels a round (sampled_split.cu, docs/spline.md "Two kernels"): the same integers
/// as the default.
const SPLIT: &[&str] = &["WD_SAMP_SPLIT=1"];
const QPOINT_REFERENCE: &[&str] = &["WD_SAMP_STEPWISE=1", "WD_SAMP_QPOINT=1"];

/// The tabulation requests the checks run: a cascade in spice_3.2.1 (1-D tilt, the old
/// anisotropy) off the vertical, and two muon-segment depths in spice_ftp-v3m (birefringence,
/// 2-D tilt, the new absorption anisotropy), with time tables and a margin.
#[must_use]
pub fn tabulate_cases(data: &Path) -> Vec<(&'static str, crate::tabulate::TabulateOptions)> {
    use crate::tabulate::{Edges, SourceKind, TabulateOptions};
    let lin = |lo: f64, hi: f64, bins: u64| Edges::Linear { lo, hi, bins };
    vec![
        (
            "cascade, spice_3.2.1: 1-D tilt, anisotropy",
            TabulateOptions {
                ice: Some(data.join("ice/spice_3.2.1")),
                source: SourceKind::Cascade,
                depth: vec![2000.0],
                zenith: vec![40.0],
                azimuth: 30.0,
                photons: 200_000,
                radial: lin(0.0, 150.0, 15),
                azimuth_bins: lin(0.0, 180.0, 6),
                delay: Some(lin(-10.0, 1000.0, 25)),
                margin: 20.0,
                seed: 7,
                ..Default::default()
            },
        ),
        (
            "muon-segment, spice_ftp-v3m: birefringence, 2-D tilt, absorption anisotropy",
            TabulateOptions {
                ice: Some(data.join("ice/spice_ftp-v3m")),
                source: SourceKind::MuonSegment,
                depth: vec![1900.0, 2100.0],
                zenith: vec![60.0],
                azimuth: 100.0,
                length: 20.0,
                photons: 100_000,
                radial: lin(0.0, 120.0, 12),
                azimuth_bins: lin(0.0, 180.0, 6),
                polar: Some(lin(-100.0, 100.0, 20)),
                delay: Some(lin(-10.0, 800.0, 20)),
                margin: 10.0,
                seed: 8,
                ..Default::default()
            },
        ),
    ]
}

/// `photon tabulate --device cuda` against the CPU tabulator (issue #32; `gpu-check --domain
/// photon`): the TabParams layout; "photon tabulate GPU = CPU (…)" for each of
/// [`tabulate_cases`] (same request and seed on both; [`crate::tabulate::agreement`]: the same
/// integers, or L1 ≤ 0.02 and χ²/ndf ≤ 1 and the photon counts within 1 %); "photon tabulate
/// GPU: no loss" (every photon absorbed or escaped, the cells' total = the length inside the
/// table within the fixed point's rounding, launches of 2¹² photons give the same integers as
/// the default, and with a kernel scratch of 8 cells the photons the host takes over still add up
/// and agree with the CPU) — these with the exact estimator on both; "photon tabulate sampled:
/// struct layout (SampParams)"; "photon tabulate sampled: warp compaction = lane at a time"
/// ([`check_sampled_compaction`], the first case); "photon tabulate sampled: job queue and split
/// squares = default" ([`check_sampled_alternatives`], the first case); "photon tabulate sampled GPU = sampled CPU (…)" and "… = exact
/// CPU (…)" for each case (the GPU's fast build against the CPU, independent photons:
/// [`crate::tabulate::agreement::independent`], χ²/ndf ≤ 1.5 with both variances, totals within
/// 1 %, every photon absorbed or escaped on both, absorbed and escaped within 1 %); and "photon
/// tabulate GPU rate" (bench photon --tabulate: the sampled estimator's photons/s in kernels
/// ≥ 50 % of the fast propagation's on the same ice and photons; the exact one's printed, and
/// the structural alternatives' sampled rates).
pub fn check_tabulate(data: &Path, ordinal: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, warpdrive_core::engine::Error> {
    use crate::tabulate::{agreement::agreement, gpu::TabGpuOptions, Tables, Tabulate};
    use warpdrive_core::engine::{Control, Device};
    let gpu = cuda::open(ordinal)?;
    let mut out = vec![check_tabulate_layout(&gpu)?];
    log(&format!("{:?}", out.last()));
    out.push(check_sampled_layout(&gpu)?);
    log(&format!("{:?}", out.last()));
    drop(gpu);
    let cpu_ctl = Control::new().device(Device::Cpu);
    let gpu_ctl = Control::new().device(Device::Cuda(vec![ordinal]));
    let on = |extra: &[&str], batch: u64| TabGpuOptions {
        devices: vec![ordinal],
        batch,
        defines: extra.iter().map(|d| (*d).to_string()).collect(),
        ..Default::default()
    };
    // Every photon ended absorbed or outside; the cells add up to the length inside the grid.
    let accounted = |t: &Tables| {
        let h = &t.hist;
        let propagated = t.photons * t.sources.len() as u64;
        let ok = h.absorbed + h.escaped == propagated
            && (h.total_length() - h.inside_length()).abs() <= h.rounding_bound(propagated)
            && h.worst_photon < 1e-9;
        (
            ok,
            format!(
                "{propagated} propagated = {} absorbed + {} escaped: {}; tabulated {}; cells {:.6} m vs inside {:.6} m (bound {:.2e}); worst photon {:.2e} m; {} by the host",
                h.absorbed,
                h.escaped,
                h.absorbed + h.escaped == propagated,
                h.tabulated,
                h.total_length(),
                h.inside_length(),
                h.rounding_bound(propagated),
                h.worst_photon,
                t.overflowed
            ),
        )
    };
    for (i, (label, o)) in tabulate_cases(data).into_iter().enumerate() {
        // The exact estimator on both (the GPU's default is the sampled one, checked below).
        let t = Tabulate::new(&o)?.with_estimator(crate::tabulate::Estimator::Exact)?;
        let cpu = t.run_cpu(&cpu_ctl)?;
        let g = t.run_gpu(&on(&[], crate::tabulate::gpu::BATCH), &gpu_ctl)?;
        let a = agreement(&cpu, &g);
        out.push(check(
            &format!("photon tabulate GPU = CPU ({label})"),
            a.passes(),
            format!(
                "{}; CPU {:.2} s on {}, GPU {:.3} s in kernels on {}",
                a.report(),
                cpu.seconds,
                cpu.device,
                g.kernel_seconds,
                g.device
            ),
        ));
        log(&format!("{:?}", out.last()));
        if i == 0 {
            let (ok_default, d_default) = accounted(&g);
            let small = t.run_gpu(&on(&[], 1 << 12), &gpu_ctl)?;
            let same_batches = agreement(&g, &small).identical;
            let forced = t.run_gpu(&on(&["WD_TAB_CELLS=8"], crate::tabulate::gpu::BATCH), &gpu_ctl)?;
            let (ok_forced, d_forced) = accounted(&forced);
            let vs_cpu = agreement(&cpu, &forced);
            out.push(check(
                "photon tabulate GPU: no loss (total photons tabulated = propagated)",
                ok_default && same_batches && ok_forced && forced.overflowed > 0 && vs_cpu.passes(),
                format!(
                    "default: {d_default}; launches of 2^12 photons give the same integers: {same_batches}; \
                     scratch of 8 cells: {d_forced}; it vs CPU: {}",
                    vs_cpu.report()
                ),
            ));
            log(&format!("{:?}", out.last()));
        }
    }
    // The sampled estimator (GPU: the fast build, its own photons): against the CPU's sampled
    // estimator and against the CPU's exact one, both independent runs
    // (`agreement::independent`: χ²/ndf with both variances, totals within 1 %, no loss). The
    // default, the adaptive comb; the fixed 1 m comb (the builds' comparisons below run it: the
    // other loops have no adaptive comb).
    let adaptive = crate::tabulate::Estimator::adaptive();
    let fixed = crate::tabulate::Estimator::sampled(crate::tabulate::DEFAULT_SAMPLE_STEP);
    for (i, (label, o)) in tabulate_cases(data).into_iter().enumerate() {
        let t = Tabulate::new(&o)?;
        let exact_cpu = t.clone().with_estimator(crate::tabulate::Estimator::Exact)?.run_cpu(&cpu_ctl)?;
        let ta = t.clone().with_estimator(adaptive)?;
        let cpu_a = ta.run_cpu(&cpu_ctl)?;
        let g_a = ta.run_gpu(&on(&[], crate::tabulate::gpu::BATCH), &gpu_ctl)?;
        let ts = t.clone().with_estimator(fixed)?;
        let cpu = ts.run_cpu(&cpu_ctl)?;
        // The default build: the warp compaction of the points (sampled.cu WD_SAMP_COMPACT).
        let g = ts.run_gpu(&on(&[], crate::tabulate::gpu::BATCH), &gpu_ctl)?;
        // The runs' machinery (WD_SAMP_REP=0: the spatial variance from the runs' squares, and
        // the cells' squares): its structural alternatives, the default's batch means against
        // it, and beside the default against the CPU (the cells' χ² with their own squares).
        let runs_on = |extra: &[&str], batch: u64| {
            let mut o = on(extra, batch);
            o.defines.push("WD_SAMP_REP=0".into());
            o
        };
        let g_runs = ts.run_gpu(&runs_on(&[], crate::tabulate::gpu::BATCH), &gpu_ctl)?;
        if i == 0 {
            out.push(check_sampled_compaction(&t, &g_runs, &runs_on, &gpu_ctl)?);
            log(&format!("{:?}", out.last()));
            out.push(check_sampled_alternatives(&t, &g_runs, &runs_on, &gpu_ctl)?);
            log(&format!("{:?}", out.last()));
            out.push(check_sampled_batch_means(&t, &g, &g_runs, &on, &gpu_ctl)?);
            log(&format!("{:?}", out.last()));
        }
        for (what, reference, reference_a) in [("sampled CPU", &cpu, &cpu_a), ("exact CPU", &exact_cpu, &exact_cpu)] {
            // The default (the adaptive comb, batch means: the cells' variances from the
            // spatial cells'), the fixed 1 m comb, and its runs' build (the cells' own squares;
            // its sums are the default's to the rounding, check_sampled_batch_means), all
            // independent of the CPU's photons.
            let d = crate::tabulate::agreement::independent(reference_a, &g_a);
            let a = crate::tabulate::agreement::independent(reference, &g);
            let r = crate::tabulate::agreement::independent(reference, &g_runs);
            out.push(check(
                &format!("photon tabulate sampled GPU = {what} ({label})"),
                d.passes() && a.passes() && r.passes(),
                format!(
                    "adaptive step (the default; {:.1} points a photon against {:.1} at 1 m): {}; fixed 1 m: {}; \
                     fixed 1 m, WD_SAMP_REP=0: {}; {} {:.2} s on {}, GPU {:.3} s in kernels on {}",
                    g_a.hist.points as f64 / (g_a.hist.absorbed + g_a.hist.escaped).max(1) as f64,
                    g.hist.points as f64 / (g.hist.absorbed + g.hist.escaped).max(1) as f64,
                    d.report(),
                    a.report(),
                    r.report(),
                    what,
                    reference.seconds,
                    reference.device,
                    g_a.kernel_seconds,
                    g_a.device
                ),
            ));
            log(&format!("{:?}", out.last()));
        }
    }
    let ice = data.join("ice/spice_3.2.1");
    let request = crate::bench::tabulation_request(&ice, crate::bench::TABULATE_DEPTH, crate::bench::TABULATE_PHOTONS, 1);
    let r = crate::bench::tabulation_rate(
        &request,
        Some(&[ordinal]),
        adaptive,
        &crate::tabulate::gpu::TabGpuOptions::default(),
        &gpu_ctl,
    )?;
    // The fixed 1 m comb's rate beside it (information; the alternatives below run it too).
    let fixed_rate =
        crate::bench::sampled_tabulation_rate(&request, ordinal, fixed, &crate::tabulate::gpu::TabGpuOptions::default(), &gpu_ctl)?;
    // The structural alternatives turned off: their rates beside the default's (information: the verdict is the
    // default build's, which is what a tabulation runs).
    let mut alternatives = Vec::new();
    // (switches, blocks of 128 threads per multiprocessor: 8 = 64 registers, 6 = 80)
    for (d, per_sm) in [
        (&["WD_SAMP_JOBQ=0"][..], 8),
        (&["WD_SAMP_RED=0"][..], 8),
        (&["WD_SAMP_ANGC=0"][..], 8),
        (crate::tabulate::gpu::SAMPLED_EARLIER, 8),
        (STEPWISE, 8),
        (SCAN, 8),
        (&["WD_SAMP_ATAN=0"][..], 8),
        (&["WD_SAMP_LEAN=0"][..], 8),
        // Session 35's default: end markers, per-thread counters, 8 photons a refill.
        (&["WD_SAMP_ENDBITS=0", "WD_SAMP_LEAN_SMEM=0"][..], 8),
        (SPLIT, 8),
        (&["WD_SAMP_SPLIT=2"][..], 8),
    ] {
        let shape = crate::tabulate::gpu::TabGpuOptions {
            defines: d.iter().map(|s| (*s).to_string()).collect(),
            blocks_per_sm: per_sm,
            ..Default::default()
        };
        let rate = crate::bench::sampled_tabulation_rate(&request, ordinal, fixed, &shape, &gpu_ctl)?;
        alternatives.push(format!(
            "{}, per-sm={per_sm}: {rate:.3e} photons/s ({:.3} of fast, {:.2}x the fixed 1 m default build)",
            d.join(","),
            rate / r.fast,
            rate / fixed_rate
        ));
    }
    out.push(check(
        "photon tabulate GPU rate >= 50 % of bench photon (sampled estimator, spice_3.2.1)",
        // Kernel time only: the photons the host takes over (overflowing the kernel's scratch)
        // must stay below 1 % for it to be the rate.
        r.ratio() >= 0.5,
        format!(
            "{}; the fixed 1 m comb: {fixed_rate:.3e} photons/s ({:.3} of fast); structural alternatives at 1 m: {}",
            r.report(),
            fixed_rate / r.fast,
            alternatives.join("; ")
        ),
    ));
    log(&format!("{:?}", out.last()));
    Ok(out)
}

/// The GPU builds [`check_twin`] compares with the CPU twin by default (`bench photon --config`
/// strings; `WARPDRIVE_TWIN_CONFIGS` replaces them, separated by `;`): precise mode as
/// `--precise` runs it (`gpu::precise_options`).
pub const TWIN_CONFIGS: &[&str] = &["default,twin"];

/// Issue #29 (`gpu-check --domain photon-twin`, a step of scripts/gpu-check photon): how closely
/// GPU builds follow the CPU's precise twin (`fast::twin`) photon by photon, in all three models
/// (docs/performance/photon.md, "precise mode as the twin of the CPU's"). The 10 TeV reference cascade in
/// spice_3.2.1, spice_ftp-v3m and spice_bfr-v2, seed 20261122, and the precise flasher case
/// nearest its threshold (the lab-profile LED ring with its cable); per build the photons with the
/// same hits ([`photon_agreement`]) and with bit-identical hits against the CPU twin, and for
/// scale the same hits against the CPU fast mode. A build without contraction (`--precise`'s)
/// passes when every photon's hits are bit for bit the twin's; one with contraction
/// (`nvrtc:fmad`, measurement) at ≥ 99 % within 0.01 ns. Each build is compared with the CPU twin of its rounding
/// (`fast::twin::Rounding::of` its switches: WD_TWIN_FMA, WD_TWIN_FMA_GEOM or neither).
pub fn check_twin(data: &Path, ordinal: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, GpuError> {
    let configs: Vec<String> = match std::env::var("WARPDRIVE_TWIN_CONFIGS") {
        Ok(v) => v.split(';').map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect(),
        Err(_) => TWIN_CONFIGS.iter().map(|c| (*c).to_string()).collect(),
    };
    let base = GpuOptions {
        devices: vec![ordinal],
        ..Default::default()
    };
    let opts: Vec<GpuOptions> = configs
        .iter()
        .map(|c| crate::bench::parse_config(c, &base).map_err(|e| GpuError::Other(e.to_string())))
        .collect::<Result<_, _>>()?;
    let detector = |model: &str| {
        Detector::build(&DetectorOptions {
            ice_dir: Some(data.join("ice").join(model)),
            ..Default::default()
        })
        .map_err(|e| GpuError::Other(e.to_string()))
    };
    let input = data.join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
    let text = std::fs::read_to_string(&input).map_err(|e| GpuError::Other(format!("{}: {e}", input.display())))?;
    let mut out = Vec::new();
    for model in ["spice_3.2.1", "spice_ftp-v3m", "spice_bfr-v2"] {
        let det = detector(model)?;
        let specs = parse_f2k(&input, &text, &det.yield_)
            .map_err(|e| GpuError::Other(e.to_string()))?
            .specs;
        let seed = 20261122;
        twin_case(&det, &realise(&specs, seed), seed, model, &configs, &opts, &mut out, log)?;
    }
    // The precise flasher check closest to its threshold (photon-flasher: the lab-profile LED ring
    // with its cable in spice_ftp-v3m, 1e8 LED photons, seed 20261125; 98.991 % in session 29).
    for (label, model, string, fopts) in flasher_cases().into_iter().filter(|c| c.0.contains("cable")) {
        let det = detector(model)?;
        let specs = crate::f2k::flasher(&det, string, 20, 1e8, &fopts).map_err(|e| GpuError::Other(e.to_string()))?;
        let seed = 20261125;
        let name = format!("flasher {string}-20 in {model} ({label})");
        twin_case(&det, &realise(&specs, seed), seed, &name, &configs, &opts, &mut out, log)?;
    }
    Ok(out)
}

/// One case of [`check_twin`]: every build in `opts` against the CPU twin of its rounding (each
/// rounding run once) and, for scale, against the CPU fast mode.
#[allow(clippy::too_many_arguments)]
fn twin_case(
    det: &Detector,
    sources: &[crate::source::Source],
    seed: u64,
    case: &str,
    configs: &[String],
    opts: &[GpuOptions],
    out: &mut Vec<Check>,
    log: &mut dyn FnMut(&str),
) -> Result<(), GpuError> {
    use crate::fast::twin::{run_rounded, Rounding};
    let (m, idx, hidden) = (&det.medium, &det.index, Progress::hidden());
    let mut twins: [Option<Vec<RawHit>>; 3] = Default::default();
    let fast = crate::fast::run(m, idx, sources, seed, &hidden);
    for (config, o) in configs.iter().zip(opts) {
        let r = Rounding::of(&o.defines);
        let twin = &*twins[r as usize].get_or_insert_with(|| run_rounded(r, m, idx, sources, seed, 0..u64::MAX, &hidden));
        let (g, s) = gpu::run(m, idx, sources, seed, o)?;
        let (same, total) = photon_agreement(twin, &g);
        let exact = bit_identical_photons(twin, &g);
        let (same_f, total_f) = photon_agreement(&fast, &g);
        let frac = same as f64 / total.max(1) as f64;
        if let Some(dir) = std::env::var_os("WARPDRIVE_CHECK_DUMP") {
            dump_differences(Path::new(&dir), &format!("twin {case} {config}"), twin, &g);
        }
        // Without contraction the two sides compute the same operations: bit for bit.
        out.push(check(
            &format!("twin {case} [{config}]: photon-by-photon CPU twin = GPU"),
            agrees(same, exact, total, !o.fast_arith.fmad),
            format!(
                "vs CPU twin: {same} of {total} photons with hits the same ({:.3} %), {exact} bit for bit; \
                 vs CPU fast: {same_f} of {total_f} ({:.3} %); raw hits CPU twin {}, fast {}, GPU {}; kernel {:.3} s",
                100.0 * frac,
                100.0 * same_f as f64 / total_f.max(1) as f64,
                twin.len(),
                fast.len(),
                g.len(),
                s.kernel_seconds
            ),
        ));
        log(&format!("{:?}", out.last()));
    }
    Ok(())
}

/// Photons whose hits are identical bit for bit on both sides (every field of every hit).
#[must_use]
pub fn bit_identical_photons(a: &[RawHit], b: &[RawHit]) -> usize {
    let (ma, mb) = (by_photon(a), by_photon(b));
    ma.iter().filter(|(k, x)| mb.get(k) == Some(x)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The device check's wavelength rule holds on the CPU in both modes (their raw hits carry
    /// the slice `emit` gives the photon), and a hit of another slice is caught.
    #[test]
    fn cpu_hits_carry_their_photons_emitted_slice() {
        let data = crate::test_data::data_dir();
        let det = Detector::build(&DetectorOptions {
            ice_dir: Some(data.join("ice/spice_3.2.1")),
            ..Default::default()
        })
        .unwrap();
        let text = "EM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 300 0\nEE\n";
        let specs = parse_f2k(Path::new("cascade.f2k"), text, &det.yield_).unwrap().specs;
        let sources = realise(&specs, 7);
        let precise = crate::propagate::run(&det.medium, &det.index, &sources, 7, &Progress::hidden());
        let mut fast = crate::fast::run(&det.medium, &det.index, &sources, 7, &Progress::hidden());
        assert!(precise.len() > 100 && fast.len() > 100, "{} {}", precise.len(), fast.len());
        assert_eq!(
            emitted_slices_match(&det.medium, &sources, 7, &precise),
            (precise.len(), precise.len())
        );
        assert_eq!(emitted_slices_match(&det.medium, &sources, 7, &fast), (fast.len(), fast.len()));
        fast[0].slice = (fast[0].slice + 1) % 512;
        assert_eq!(emitted_slices_match(&det.medium, &sources, 7, &fast).0, fast.len() - 1);
    }

    /// The models of the device check have hole ice on (and spice_ftp-v3m keeps birefringence).
    #[test]
    fn hole_models_have_columns() {
        let [a, b] = hole_models(&crate::test_data::data_dir()).unwrap();
        for (dir, radius, bfr) in [(&a, 2.0 * 0.1651, false), (&b, 0.1651, true)] {
            let det = Detector::build(&DetectorOptions {
                ice_dir: Some(dir.clone()),
                ..Default::default()
            })
            .unwrap();
            let h = det.medium.hole.expect("hole ice on");
            assert!((f64::from(h.radius) - radius).abs() < 1e-6, "{h:?}");
            assert_eq!(det.medium.bfr.is_some(), bfr);
            assert!(det.unsupported.is_empty(), "{:?}", det.unsupported);
        }
        // ftp: 0.3 m effective scattering with g 0.9 → 1/(0.3·0.1) /m.
        let det = Detector::build(&DetectorOptions {
            ice_dir: Some(b.clone()),
            ..Default::default()
        })
        .unwrap();
        assert!((det.medium.hole.unwrap().sca - 1.0 / 0.03).abs() < 1e-3);
        let _ = std::fs::remove_dir_all(&a);
        let _ = std::fs::remove_dir_all(&b);
    }

    /// The tabulation checks' requests are valid (the ice models read, the bins accepted) and
    /// the cascade case exercises tilt and anisotropy, the muon case birefringence.
    #[test]
    fn tabulate_cases_are_valid_requests() {
        let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
            return;
        };
        let cases = tabulate_cases(&data);
        assert_eq!(cases.len(), 2);
        for (label, o) in &cases {
            let t = crate::tabulate::Tabulate::new(o).unwrap_or_else(|e| panic!("{label}: {e}"));
            let d = t.description.join("; ");
            assert!(d.contains("tilt"), "{label}: {d}");
        }
        let bfr = crate::tabulate::Tabulate::new(&cases[1].1).unwrap();
        assert!(
            bfr.description.iter().any(|d| d.starts_with("birefringence")),
            "{:?}",
            bfr.description
        );
    }
}
