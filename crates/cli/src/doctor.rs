//! `warpdrive doctor` (GPUs, driver, NVRTC, kernel resources) and `warpdrive gpu-check`: the
//! domains' kernel sets and device checks gathered, their lines printed; the work lives in
//! `warpdrive_core::{doctor, check}` and the domains' `gpu_check` modules.

use anyhow::{bail, Result};
use std::path::Path;
use warpdrive_core::check::{report_json, Suite};

/// `warpdrive doctor`: every domain's kernel builds, compiled (`--compile-only`) or loaded on
/// every GPU.
pub fn run(compile_only: bool) -> Result<()> {
    let sets = [
        warpdrive_photon::gpu::kernel_sets(),
        warpdrive_em::gpu::kernel_sets(),
        warpdrive_em::shower::gpu::kernel_sets(),
        warpdrive_sky::gpu::kernel_sets(),
        warpdrive_spline::gpu::kernel_sets(),
        warpdrive_beam::gpu::kernel_sets(),
    ]
    .concat();
    let n = warpdrive_core::doctor::run(&sets, compile_only, &mut |l| println!("{l}"))?;
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
