//! `warpdrive doctor` (GPUs, driver, NVRTC, kernel resources) and `warpdrive gpu-check`: the
//! domains' kernel sets and device checks gathered, their lines printed; the work lives in
//! `warpdrive_core::{doctor, check}` and the domains' `gpu_check` modules.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use warpdrive_core::check::{report_json, Suite};
use warpdrive_core::doctor::KernelSet;
use warpdrive_core::kernels::{self, Build, Scope};

/// `warpdrive doctor`: every domain's kernel builds, compiled (`--compile-only`) or loaded on
/// every GPU.
pub fn run(compile_only: bool) -> Result<()> {
    let n = warpdrive_core::doctor::run(&kernel_sets(), compile_only, &mut |l| println!("{l}"))?;
    println!("doctor: {n} kernel builds OK");
    Ok(())
}

/// Every domain's kernel sets (what `doctor` compiles or loads).
fn kernel_sets() -> Vec<KernelSet> {
    [
        warpdrive_photon::gpu::kernel_sets(),
        warpdrive_em::gpu::kernel_sets(),
        warpdrive_em::shower::gpu::kernel_sets(),
        warpdrive_sky::gpu::kernel_sets(),
        warpdrive_spline::gpu::kernel_sets(),
        warpdrive_beam::gpu::kernel_sets(),
    ]
    .concat()
}

/// `warpdrive doctor --compile-only --prebuild [DIR] [--arch …]`: the compile check and the
/// prebuilt images from one set of NVRTC calls (CI: the images whose build the check compiles
/// anyway are not compiled twice).
pub fn compile_and_prebuild(dir: Option<&Path>, arch: &[String]) -> Result<()> {
    let dir = prebuilt_dir(dir)?;
    let (n, m) =
        warpdrive_core::doctor::compile_and_prebuild(&kernel_sets(), &builds(Scope::Default), &archs_or_default(arch), &dir, &mut |l| {
            println!("{l}")
        })?;
    println!("doctor: {n} kernel builds OK, {m} prebuilt images in {}", dir.display());
    Ok(())
}

/// Every domain's kernel builds for `doctor --prebuild` (`Default`) or `--prepare` (`All`).
fn builds(scope: Scope) -> Vec<Build> {
    [
        warpdrive_photon::gpu::prebuilt_builds(scope),
        warpdrive_em::gpu::prebuilt_builds(),
        warpdrive_em::shower::gpu::prebuilt_builds(),
        warpdrive_sky::gpu::prebuilt_builds(),
        warpdrive_spline::gpu::prebuilt_builds(scope),
        warpdrive_beam::gpu::prebuilt_builds(),
    ]
    .concat()
}

/// The directory of prebuilt images: `dir`, or `warpdrive-kernels/` beside this executable.
fn prebuilt_dir(dir: Option<&Path>) -> Result<PathBuf> {
    if let Some(d) = dir {
        return Ok(d.to_path_buf());
    }
    let exe = std::env::current_exe()?;
    let parent = exe.parent().ok_or_else(|| anyhow::anyhow!("{}: no directory", exe.display()))?;
    Ok(parent.join(kernels::PREBUILT_DIR_NAME))
}

fn archs_or_default(arch: &[String]) -> Vec<String> {
    if arch.is_empty() {
        kernels::PREBUILT_ARCHS.iter().map(|a| a.to_string()).collect()
    } else {
        arch.to_vec()
    }
}

/// `warpdrive doctor --prebuild [DIR] [--arch …]`.
pub fn prebuild(dir: Option<&Path>, arch: &[String]) -> Result<()> {
    let dir = prebuilt_dir(dir)?;
    let n = warpdrive_core::doctor::prebuild(&builds(Scope::Default), &archs_or_default(arch), &dir, &mut |l| println!("{l}"))?;
    println!("doctor: {n} prebuilt images in {}", dir.display());
    Ok(())
}

/// `warpdrive doctor --check-prebuilt [DIR] [--arch …]`.
pub fn check_prebuilt(dir: Option<&Path>, arch: &[String]) -> Result<()> {
    let dir = prebuilt_dir(dir)?;
    warpdrive_core::doctor::check_prebuilt(&builds(Scope::Default), &archs_or_default(arch), &dir, &mut |l| println!("{l}"))?;
    Ok(())
}

/// `warpdrive doctor --prepare [--arch …]`.
pub fn prepare(arch: &[String]) -> Result<()> {
    warpdrive_core::doctor::prepare(&builds(Scope::All), arch, &mut |l| println!("{l}"))?;
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
