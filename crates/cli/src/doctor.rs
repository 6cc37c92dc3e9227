//! `warpdrive doctor` (GPUs, driver, NVRTC, kernel resources) and `warpdrive gpu-check`.

use anyhow::{bail, Result};
use std::path::Path;
use warpdrive_core::check::{report_json, Suite};
use warpdrive_core::cuda::{self, KernelOptions};

/// All kernel sources of all domains: (file, source, functions, feature switches), and whether
/// the domain also uses a fast-math build (sky is always precise: CPU and GPU counts must match).
type KernelSet = (&'static str, &'static str, &'static [&'static str], &'static [&'static str], bool);

fn kernels() -> Vec<KernelSet> {
    let mut k: Vec<KernelSet> = warpdrive_photon::gpu::KERNELS
        .iter()
        .map(|&(f, s, fs)| (f, s, fs, warpdrive_photon::gpu::SWITCHES, true))
        .collect();
    k.extend(
        warpdrive_em::gpu::KERNELS
            .iter()
            .map(|&(f, s, fs)| (f, s, fs, warpdrive_em::gpu::SWITCHES, false)),
    );
    k.extend(
        warpdrive_em::shower::gpu::KERNELS
            .iter()
            .map(|&(f, s, fs)| (f, s, fs, warpdrive_em::shower::gpu::SWITCHES, true)),
    );
    k.extend(
        warpdrive_sky::gpu::KERNELS
            .iter()
            .map(|&(f, s, fs)| (f, s, fs, warpdrive_sky::gpu::SWITCHES, false)),
    );
    k.extend(
        warpdrive_spline::gpu::KERNELS
            .iter()
            .map(|&(f, s, fs)| (f, s, fs, warpdrive_spline::gpu::SWITCHES, true)),
    );
    k.extend(
        warpdrive_beam::gpu::KERNELS
            .iter()
            .map(|&(f, s, fs)| (f, s, fs, warpdrive_beam::gpu::SWITCHES, true)),
    );
    k
}

pub fn run(compile_only: bool) -> Result<()> {
    println!("driver:  {}", if cuda::driver_present() { "libcuda loaded" } else { "not found" });
    match cuda::nvrtc_version() {
        Ok((a, b)) => println!("NVRTC:   {a}.{b}"),
        Err(e) => bail!("{e}"),
    }
    let gpus: Vec<cuda::Gpu> = if compile_only {
        Vec::new()
    } else {
        let n = cuda::device_count()?;
        (0..n).map(cuda::open).collect::<Result<_, _>>()?
    };
    for g in &gpus {
        println!(
            "cuda:{}  {}  sm_{}{}  {} SMs × {} threads  {:.1} GiB",
            g.ordinal,
            g.name,
            g.compute_capability.0,
            g.compute_capability.1,
            g.multiprocessors,
            g.max_threads_per_sm,
            g.total_memory as f64 / (1u64 << 30) as f64
        );
    }
    if !compile_only && gpus.is_empty() {
        bail!("no CUDA device visible (use --compile-only to check the kernels without one)");
    }
    let mut n = 0;
    for (file, src, functions, switches, has_fast) in kernels() {
        for precise in [false, true] {
            if !precise && !has_fast {
                continue;
            }
            let mode = if precise { "precise" } else { "fast" };
            if gpus.is_empty() {
                // No switches, each switch alone, and (photon) the default combination, alone and
                // with each switch it does not hold.
                let mut variants: Vec<Vec<&str>> = std::iter::once(Vec::new()).chain(switches.iter().map(|s| vec![*s])).collect();
                if file == warpdrive_photon::gpu::KERNEL_NAME {
                    let defaults = warpdrive_photon::gpu::DEFAULT_SWITCHES;
                    variants.push(defaults.to_vec());
                    let name = |d: &str| d.split('=').next().unwrap_or(d).to_string();
                    for extra in switches.iter().filter(|s| !defaults.iter().any(|d| name(d) == name(s))) {
                        variants.push(defaults.iter().copied().chain(std::iter::once(*extra)).collect());
                    }
                    for set in warpdrive_photon::gpu::COMBINED_SWITCHES {
                        variants.push(defaults.iter().chain(set.iter()).copied().collect());
                    }
                }
                for v in variants {
                    let defines: Vec<String> = v.iter().map(|d| d.to_string()).collect();
                    let ptx = cuda::compile(
                        file,
                        src,
                        &KernelOptions {
                            arch: "sm_90".into(),
                            precise,
                            defines,
                        },
                    )?;
                    let label: String = v.iter().map(|d| format!(", -D{d}")).collect();
                    println!("{file} ({mode}, sm_90{label}): compiled, {} bytes of PTX", ptx.to_src().len());
                    n += 1;
                }
            }
            for g in &gpus {
                for f in functions.iter() {
                    let (_m, func) = cuda::load(g, file, src, f, precise, &[])?;
                    let r = cuda::resources(&func)?;
                    println!(
                        "{file}:{f} ({mode}, {}): {} registers, {} B shared, {} B local (spills/stack), max {} threads/block",
                        g.arch(),
                        r.registers,
                        r.shared_bytes,
                        r.local_bytes,
                        r.max_threads_per_block
                    );
                    n += 1;
                }
            }
        }
    }
    // Beam map kernels are generated per lattice: compile those of the benchmark lines and of a
    // line with every element kind.
    for (file, src, functions) in warpdrive_beam::gpu::doctor_sources() {
        for precise in [false, true] {
            let mode = if precise { "precise" } else { "fast" };
            if gpus.is_empty() {
                let opts = KernelOptions {
                    arch: "sm_90".into(),
                    precise,
                    defines: vec![],
                };
                let ptx = cuda::compile(&file, &src, &opts)?;
                println!("{file} (generated, {mode}, sm_90): compiled, {} bytes of PTX", ptx.to_src().len());
                n += 1;
            }
            for g in &gpus {
                for f in &functions {
                    let (_m, func) = cuda::load(g, &file, &src, f, precise, &[])?;
                    let r = cuda::resources(&func)?;
                    println!(
                        "{file}:{f} (generated, {mode}, {}): {} registers, {} B shared, {} B local (spills/stack)",
                        g.arch(),
                        r.registers,
                        r.shared_bytes,
                        r.local_bytes
                    );
                    n += 1;
                }
            }
        }
    }
    println!("doctor: {n} kernel builds OK");
    Ok(())
}

/// `warpdrive gpu-check`: the device checks of the chosen domains, a line per check, the JSON
/// report (staged before the checks run), exit 1 if any failed.
pub fn gpu_check(device: usize, json: &Path, domain: &str, force: bool) -> Result<()> {
    let suite: Suite = domain.parse()?;
    let out = warpdrive_core::engine::prepare_file(json, force, &[])?;
    let data = warpdrive_core::data::data_dir();
    let domains = [
        warpdrive_photon::gpu_check::run_suite,
        warpdrive_em::gpu_check::run_suite,
        warpdrive_sky::gpu_check::run_suite,
        warpdrive_spline::gpu_check::run_suite,
        warpdrive_beam::gpu_check::run_suite,
    ];
    let mut checks = Vec::new();
    for run in domains {
        checks.extend(run(suite, &data, device, &mut |s| eprintln!("{s}"))?);
    }
    println!("{:<55} result", "check");
    for c in &checks {
        println!("{:<55} {}", c.name, if c.passed { "PASS" } else { "FAIL" });
        println!("    {}", c.detail.trim_end().replace('\n', "\n    "));
    }
    out.write(report_json(&checks).as_bytes())?;
    let failed = checks.iter().filter(|c| !c.passed).count();
    println!("gpu-check: {} passed, {failed} failed", checks.len() - failed);
    if failed > 0 {
        bail!("{failed} GPU check(s) failed");
    }
    Ok(())
}
