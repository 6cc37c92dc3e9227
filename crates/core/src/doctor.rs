//! `warpdrive doctor` as a library call: the driver, NVRTC and the visible GPUs, and every
//! kernel build of every domain — compiled for `sm_90` without a GPU (`compile_only`,
//! what CI runs), or loaded on each GPU with its registers, shared and local memory. Each domain
//! lists its kernels as [`KernelSet`]s; the front end gathers them and prints the lines.

use crate::bench::Lines;
use crate::cuda::{self, KernelOptions};
use crate::engine::{Error, Result};
use crate::kernels::{self, Build};
use std::path::Path;

/// A kernel source and the builds of it that are checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSet {
    pub file: String,
    pub src: String,
    /// The functions loaded (and their resources printed) on a GPU.
    pub functions: Vec<String>,
    /// Switch sets (`-D` definitions) compiled without a GPU, the empty set first.
    pub variants: Vec<Vec<String>>,
    /// Also built in fast mode (a domain whose CPU and GPU counts must match is always precise).
    pub fast: bool,
    /// Generated from a lattice (beam's map kernels), said so in the lines.
    pub generated: bool,
}

impl KernelSet {
    /// A domain's fixed kernels (file, source, functions), built with no switches and with each
    /// switch alone.
    pub fn fixed(kernels: &[(&str, &str, &[&str])], switches: &[&str], fast: bool) -> Vec<Self> {
        kernels
            .iter()
            .map(|&(file, src, functions)| Self {
                file: file.to_string(),
                src: src.to_string(),
                functions: functions.iter().map(|f| f.to_string()).collect(),
                variants: std::iter::once(Vec::new())
                    .chain(switches.iter().map(|s| vec![s.to_string()]))
                    .collect(),
                fast,
                generated: false,
            })
            .collect()
    }

    /// A generated source, built as it is (fast and precise).
    pub fn generated(file: String, src: String, functions: Vec<String>) -> Self {
        Self {
            file,
            src,
            functions,
            variants: vec![Vec::new()],
            fast: true,
            generated: true,
        }
    }

    /// The modes this set is built in.
    fn modes(&self) -> impl Iterator<Item = bool> {
        let fast = self.fast;
        [false, true].into_iter().filter(move |&precise| precise || fast)
    }

    /// `generated, ` for generated sources (the lines' label).
    fn kind(&self) -> &'static str {
        if self.generated {
            "generated, "
        } else {
            ""
        }
    }
}

/// Print the driver, NVRTC and GPUs, then build every set: compiled without a GPU when
/// `compile_only`, else loaded on every GPU. Returns the number of builds.
pub fn run(sets: &[KernelSet], compile_only: bool, lines: Lines) -> Result<usize> {
    lines(&format!(
        "driver:  {}",
        if cuda::driver_present() { "libcuda loaded" } else { "not found" }
    ));
    let (major, minor) = cuda::nvrtc_version()?;
    lines(&format!("NVRTC:   {major}.{minor}"));
    let gpus: Vec<cuda::Gpu> = if compile_only {
        Vec::new()
    } else {
        (0..cuda::device_count()?).map(cuda::open).collect::<Result<_, _>>()?
    };
    for g in &gpus {
        lines(&format!(
            "cuda:{}  {}  sm_{}{}  {} SMs × {} threads  {:.1} GiB",
            g.ordinal,
            g.name,
            g.compute_capability.0,
            g.compute_capability.1,
            g.multiprocessors,
            g.max_threads_per_sm,
            g.total_memory as f64 / (1u64 << 30) as f64
        ));
    }
    if !compile_only && gpus.is_empty() {
        return Err(Error::Failed(
            "no CUDA device visible (`warpdrive doctor --compile-only` checks the kernels without one)".into(),
        ));
    }
    if gpus.is_empty() {
        return compile_all(sets, lines);
    }
    let mut n = 0;
    for set in sets {
        for precise in set.modes() {
            n += load(set, precise, &gpus, lines)?;
        }
    }
    Ok(n)
}

fn mode(precise: bool) -> &'static str {
    if precise {
        "precise"
    } else {
        "fast"
    }
}

/// Compile every variant of every set, fast and precise, for `sm_90` (NVRTC only). The builds
/// are independent NVRTC programs, compiled on all cores (CI's compile check is minutes of NVRTC
/// on one); the lines come in the sets' order.
fn compile_all(sets: &[KernelSet], lines: Lines) -> Result<usize> {
    use rayon::prelude::*;
    let builds: Vec<(&KernelSet, bool, &Vec<String>)> = sets
        .iter()
        .flat_map(|set| {
            set.modes()
                .flat_map(move |precise| set.variants.iter().map(move |d| (set, precise, d)))
        })
        .collect();
    let done: Vec<Result<String>> = builds
        .par_iter()
        .map(|&(set, precise, defines)| {
            let opts = KernelOptions {
                arch: "sm_90".into(),
                precise,
                defines: defines.clone(),
            };
            // Always NVRTC (never a cached or prebuilt image): this is the compile check.
            let img = kernels::nvrtc_compile(&set.file, &cuda::expand_includes(&set.src), &opts, true)?;
            let label: String = defines.iter().map(|d| format!(", -D{d}")).collect();
            Ok(format!(
                "{} ({}{}, sm_90{label}): compiled, {} bytes of {}",
                set.file,
                set.kind(),
                mode(precise),
                img.len(),
                img.kind()
            ))
        })
        .collect();
    for line in done {
        lines(&line?);
    }
    Ok(builds.len())
}

/// Load every function of `set` on every GPU and print its resources.
fn load(set: &KernelSet, precise: bool, gpus: &[cuda::Gpu], lines: Lines) -> Result<usize> {
    let mut n = 0;
    for g in gpus {
        for f in &set.functions {
            let (_module, func) = cuda::load(g, &set.file, &set.src, f, precise, &[])?;
            let r = cuda::resources(&func)?;
            let threads = if set.generated {
                String::new()
            } else {
                format!(", max {} threads/block", r.max_threads_per_block)
            };
            lines(&format!(
                "{}:{f} ({}{}, {}): {} registers, {} B shared, {} B local (spills/stack){threads}",
                set.file,
                set.kind(),
                mode(precise),
                g.arch(),
                r.registers,
                r.shared_bytes,
                r.local_bytes
            ));
            n += 1;
        }
    }
    Ok(n)
}

/// `warpdrive doctor --prebuild DIR`: compile `builds` for every architecture of `archs`
/// (`sm_XY`: cubins, `compute_XY`: PTX) with NVRTC into `dir`, under the names the GPU paths
/// look for (`kernels.rs`), and write `dir/MANIFEST.txt` (one line per image: file, build,
/// architecture, NVRTC version). Builds run on all cores. Returns the number of images.
pub fn prebuild(builds: &[Build], archs: &[String], dir: &Path, lines: Lines) -> Result<usize> {
    use rayon::prelude::*;
    let (major, minor) = cuda::nvrtc_version()?;
    lines(&format!("NVRTC:   {major}.{minor}"));
    std::fs::create_dir_all(dir).map_err(|e| Error::Failed(format!("{}: {e}", dir.display())))?;
    let jobs: Vec<(&Build, &String)> = builds.iter().flat_map(|b| archs.iter().map(move |a| (b, a))).collect();
    let done: Vec<Result<String>> = jobs
        .par_iter()
        .map(|&(b, arch)| {
            let (file, size) = kernels::prebuild(b, arch, dir)?;
            Ok(format!("{file}\t{}\t{arch}\tNVRTC {major}.{minor}\t{size} bytes", b.label()))
        })
        .collect();
    let mut manifest = String::from("# warpdrive doctor --prebuild: file, build, architecture, compiler, size\n");
    for line in done {
        let line = line?;
        lines(&line.replace('\t', "  "));
        manifest.push_str(&line);
        manifest.push('\n');
    }
    crate::table::write_atomic(&dir.join("MANIFEST.txt"), manifest.as_bytes())
        .map_err(|e| Error::Failed(format!("{}: {e}", dir.join("MANIFEST.txt").display())))?;
    Ok(jobs.len())
}

/// `warpdrive doctor --check-prebuilt DIR`: every build of `builds` has its image in `dir` for
/// every architecture of `archs` — the images were made from this binary's kernel sources.
/// Lists what is missing; an error if anything is.
pub fn check_prebuilt(builds: &[Build], archs: &[String], dir: &Path, lines: Lines) -> Result<usize> {
    let mut missing = Vec::new();
    for b in builds {
        for arch in archs {
            if !kernels::has_prebuilt(b, arch, dir) {
                missing.push(format!("{} for {arch}", b.label()));
            }
        }
    }
    let n = builds.len() * archs.len();
    if missing.is_empty() {
        lines(&format!(
            "{}: all {n} prebuilt images match the kernel sources of this binary",
            dir.display()
        ));
        return Ok(n);
    }
    for m in &missing {
        lines(&format!("missing or made from other sources: {m}"));
    }
    Err(Error::Failed(format!(
        "{}: {} of {n} prebuilt images missing or stale (run `warpdrive doctor --prebuild {}` with NVRTC 13.0)",
        dir.display(),
        missing.len(),
        dir.display()
    )))
}

/// `warpdrive doctor --prepare`: make every build of `builds` ready on this node — for the
/// architecture of every visible GPU (or `archs` when given), each build that has no prebuilt
/// image is compiled into the disk cache. Returns (ready from before, compiled now).
pub fn prepare(builds: &[Build], archs: &[String], lines: Lines) -> Result<(usize, usize)> {
    use rayon::prelude::*;
    let mut targets: Vec<String> = archs.to_vec();
    if targets.is_empty() {
        for k in 0..cuda::device_count()? {
            targets.push(cuda::open(k)?.arch());
        }
        targets.sort();
        targets.dedup();
    }
    if kernels::disk_cache_dir().is_none() {
        return Err(Error::Failed(
            "the kernel cache is off (WARPDRIVE_KERNEL_CACHE=off): nothing to prepare".into(),
        ));
    }
    let jobs: Vec<(&Build, &String)> = builds.iter().flat_map(|b| targets.iter().map(move |a| (b, a))).collect();
    let done: Vec<Result<kernels::Origin>> = jobs
        .par_iter()
        .map(|&(b, arch)| Ok(cuda::compile_from(&b.file, &b.src, &b.options(arch), false)?.1))
        .collect();
    let (mut ready, mut compiled) = (0, 0);
    for r in done {
        if r? == kernels::Origin::Nvrtc {
            compiled += 1;
        } else {
            ready += 1;
        }
    }
    lines(&format!(
        "prepare: {} builds for {}: {ready} ready before, {compiled} compiled into {}",
        jobs.len(),
        targets.join(", "),
        kernels::disk_cache_dir().map(|d| d.display().to_string()).unwrap_or_default()
    ));
    Ok((ready, compiled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_sets_build_each_switch_alone() {
        let sets = KernelSet::fixed(&[("k.cu", "src", &["f", "g"])], &["WD_A", "WD_B=2"], false);
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0].variants, [vec![], vec!["WD_A".to_string()], vec!["WD_B=2".to_string()]]);
        assert_eq!(sets[0].modes().collect::<Vec<_>>(), [true], "precise only");
        let g = KernelSet::generated("m.cu".into(), "src".into(), vec!["run0".into()]);
        assert_eq!((g.modes().count(), g.kind()), (2, "generated, "));
    }
}
