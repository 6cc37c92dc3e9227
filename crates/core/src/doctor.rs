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
    /// The precise builds' switch sets where they differ from `variants` ([`Self::drop_in_precise`]:
    /// the switches precise runs leave out removed, each resulting set once); `None`: `variants`.
    pub precise_variants: Option<Vec<Vec<String>>>,
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
                precise_variants: None,
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
            precise_variants: None,
            fast: true,
            generated: true,
        }
    }

    /// Precise builds leave out `switches` (exact strings), as precise runs do (photon's
    /// fast-only switches, `kernel_defines`): the compile check then compiles the precise builds
    /// that runs can make — each once — and not precise builds with fast-only switches, which no
    /// run makes and which, once the switches are dropped, repeat another variant.
    pub fn drop_in_precise(&mut self, switches: &[&str]) {
        let mut kept: Vec<Vec<String>> = Vec::new();
        for v in &self.variants {
            let d: Vec<String> = v.iter().filter(|d| !switches.contains(&d.as_str())).cloned().collect();
            if !kept.contains(&d) {
                kept.push(d);
            }
        }
        self.precise_variants = Some(kept);
    }

    /// The switch sets built in one mode.
    fn variants_in(&self, precise: bool) -> &[Vec<String>] {
        match (&self.precise_variants, precise) {
            (Some(v), true) => v,
            _ => &self.variants,
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
        return Ok(compile_all(sets, None, lines)?.0);
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

/// The architecture of the compile check.
const CHECK_ARCH: &str = "sm_90";

/// What one NVRTC call of [`compile_all`] makes.
#[derive(Clone, Copy)]
enum Job<'a> {
    /// A build of the compile check (set, precise, switches): with line tables, as runs compile.
    Check(&'a KernelSet, bool, &'a Vec<String>),
    /// A build of the compile check that is also a prebuilt image: compiled once, without line
    /// tables (prebuilt images go without; the tables change no code), checked and written.
    Shared(&'a KernelSet, bool, &'a Vec<String>),
    /// A prebuilt image that no build of the check makes (another architecture or switch set).
    Image(&'a Build, &'a str),
}

/// Compile every variant of every set, fast and precise, for `sm_90` (NVRTC only), and with
/// `prebuilt = (builds, archs, dir)` also the prebuilt images of `builds` for `archs` into `dir`
/// (what [`prebuild`] writes, MANIFEST.txt included): an image whose build the check compiles
/// anyway (same source, arithmetic and switches, `sm_90`) comes from the check's NVRTC call,
/// so CI compiles no build twice. The calls are independent NVRTC programs, compiled on all
/// cores (CI's compile check is minutes of NVRTC on one); the lines come in the sets' order,
/// then the images' in the builds' order. Returns (check builds, images).
fn compile_all(sets: &[KernelSet], prebuilt: Option<(&[Build], &[String], &Path)>, lines: Lines) -> Result<(usize, usize)> {
    use rayon::prelude::*;
    let checks: Vec<(&KernelSet, bool, &Vec<String>)> = sets
        .iter()
        .flat_map(|set| {
            set.modes()
                .flat_map(move |precise| set.variants_in(precise).iter().map(move |d| (set, precise, d)))
        })
        .collect();
    let images: Vec<(&Build, &str)> = match prebuilt {
        Some((builds, archs, _)) => builds.iter().flat_map(|b| archs.iter().map(move |a| (b, a.as_str()))).collect(),
        None => Vec::new(),
    };
    let source = image_sources(&checks, &images);
    let mut jobs: Vec<Job> = checks
        .iter()
        .enumerate()
        .map(|(i, &(set, precise, d))| {
            if source.contains(&Some(i)) {
                Job::Shared(set, precise, d)
            } else {
                Job::Check(set, precise, d)
            }
        })
        .collect();
    jobs.extend(
        images
            .iter()
            .zip(&source)
            .filter(|(_, s)| s.is_none())
            .map(|(&(b, arch), _)| Job::Image(b, arch)),
    );
    let done: Vec<Result<kernels::Image>> = jobs
        .par_iter()
        .map(|&job| {
            // Always NVRTC (never a cached or prebuilt image): this is the compile check.
            let (file, src, opts, line_info) = match job {
                Job::Check(set, precise, d) | Job::Shared(set, precise, d) => (
                    &set.file,
                    &set.src,
                    KernelOptions {
                        arch: CHECK_ARCH.into(),
                        precise,
                        defines: d.clone(),
                        fast_arith: cuda::FastArith::default(),
                    },
                    matches!(job, Job::Check(..)),
                ),
                Job::Image(b, arch) => (&b.file, &b.src, b.options(arch), false),
            };
            Ok(kernels::nvrtc_compile(file, &cuda::expand_includes(src), &opts, line_info)?)
        })
        .collect();
    let mut done = done.into_iter();
    let mut made: Vec<kernels::Image> = Vec::with_capacity(checks.len());
    for (&(set, precise, defines), job) in checks.iter().zip(&jobs) {
        let img = done.next().expect("one result per job")?;
        let label: String = defines.iter().map(|d| format!(", -D{d}")).collect();
        let shared = if matches!(job, Job::Shared(..)) {
            " (no line tables: also the prebuilt image)"
        } else {
            ""
        };
        lines(&format!(
            "{} ({}{}, {CHECK_ARCH}{label}): compiled, {} bytes of {}{shared}",
            set.file,
            set.kind(),
            mode(precise),
            img.len(),
            img.kind()
        ));
        made.push(img);
    }
    let Some((_, _, dir)) = prebuilt else {
        return Ok((checks.len(), 0));
    };
    let (major, minor) = cuda::nvrtc_version()?;
    let mut manifest = String::from(MANIFEST_HEAD);
    for (&(b, arch), s) in images.iter().zip(&source) {
        let own;
        let img = match s {
            Some(i) => &made[*i],
            None => {
                own = done.next().expect("one result per job")?;
                &own
            }
        };
        let (file, size) = kernels::write_prebuilt(b, arch, dir, img)?;
        let line = format!("{file}\t{}\t{arch}\tNVRTC {major}.{minor}\t{size} bytes", b.label());
        lines(&line.replace('\t', "  "));
        manifest.push_str(&line);
        manifest.push('\n');
    }
    write_manifest(dir, &manifest)?;
    lines(&format!(
        "{} of the {} prebuilt images from the compile check's NVRTC calls",
        source.iter().filter(|s| s.is_some()).count(),
        images.len()
    ));
    Ok((checks.len(), images.len()))
}

/// For each image (build, architecture), the index of the check build that makes it, if one
/// does: the same file, source, arithmetic and switches (in any order), for the check's
/// architecture.
fn image_sources(checks: &[(&KernelSet, bool, &Vec<String>)], images: &[(&Build, &str)]) -> Vec<Option<usize>> {
    images
        .iter()
        .map(|&(b, arch)| {
            (arch == CHECK_ARCH)
                .then(|| {
                    checks.iter().position(|&(set, precise, d)| {
                        set.file == b.file && set.src == b.src && precise == b.precise && kernels::canonical_defines(d) == b.defines
                    })
                })
                .flatten()
        })
        .collect()
}

/// `warpdrive doctor --compile-only --prebuild DIR`: the compile check ([`run`] with
/// `compile_only`) and the prebuilt images of `builds` for `archs` in `dir` ([`prebuild`]),
/// the builds that are both compiled once (CI). Returns (check builds, images).
pub fn compile_and_prebuild(sets: &[KernelSet], builds: &[Build], archs: &[String], dir: &Path, lines: Lines) -> Result<(usize, usize)> {
    lines(&format!(
        "driver:  {}",
        if cuda::driver_present() { "libcuda loaded" } else { "not found" }
    ));
    let (major, minor) = cuda::nvrtc_version()?;
    lines(&format!("NVRTC:   {major}.{minor}"));
    std::fs::create_dir_all(dir).map_err(|e| Error::Failed(format!("{}: {e}", dir.display())))?;
    compile_all(sets, Some((builds, archs, dir)), lines)
}

const MANIFEST_HEAD: &str = "# warpdrive doctor --prebuild: file, build, architecture, compiler, size\n";

fn write_manifest(dir: &Path, manifest: &str) -> Result<()> {
    crate::table::write_atomic(&dir.join("MANIFEST.txt"), manifest.as_bytes())
        .map_err(|e| Error::Failed(format!("{}: {e}", dir.join("MANIFEST.txt").display())))
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
    let mut manifest = String::from(MANIFEST_HEAD);
    for line in done {
        let line = line?;
        lines(&line.replace('\t', "  "));
        manifest.push_str(&line);
        manifest.push('\n');
    }
    write_manifest(dir, &manifest)?;
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
    fn precise_builds_drop_the_fast_only_switches_and_repeat_no_set() {
        let mut set = KernelSet::fixed(&[("k.cu", "src", &["f"])], &["WD_A", "WD_F", "WD_B=2"], true).remove(0);
        set.variants.push(vec!["WD_A".into(), "WD_F".into()]);
        set.drop_in_precise(&["WD_F"]);
        let s = |v: &[&str]| v.iter().map(|d| (*d).to_string()).collect::<Vec<_>>();
        // fast: every set as listed; precise: WD_F left out, [] and [WD_A] once each.
        assert_eq!(
            set.variants_in(false),
            [s(&[]), s(&["WD_A"]), s(&["WD_F"]), s(&["WD_B=2"]), s(&["WD_A", "WD_F"])]
        );
        assert_eq!(set.variants_in(true), [s(&[]), s(&["WD_A"]), s(&["WD_B=2"])]);
    }

    #[test]
    fn fixed_sets_build_each_switch_alone() {
        let sets = KernelSet::fixed(&[("k.cu", "src", &["f", "g"])], &["WD_A", "WD_B=2"], false);
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0].variants, [vec![], vec!["WD_A".to_string()], vec!["WD_B=2".to_string()]]);
        assert_eq!(sets[0].modes().collect::<Vec<_>>(), [true], "precise only");
        let g = KernelSet::generated("m.cu".into(), "src".into(), vec!["run0".into()]);
        assert_eq!((g.modes().count(), g.kind()), (2, "generated, "));
    }

    #[test]
    fn images_come_from_the_check_build_with_their_source_arithmetic_and_switches() {
        let mut sets = KernelSet::fixed(&[("k.cu", "src", &["f"])], &["WD_A"], true);
        sets[0].variants.push(vec!["WD_B=2".into(), "WD_A".into()]);
        let checks: Vec<(&KernelSet, bool, &Vec<String>)> = sets
            .iter()
            .flat_map(|s| s.modes().flat_map(move |p| s.variants.iter().map(move |d| (s, p, d))))
            .collect();
        // fast: [], [A], [B=2, A]; then precise: the same.
        assert_eq!(checks.len(), 6);
        let ab = Build::new("k.cu", "src", false, vec!["WD_A".into(), "WD_B=2".into()]);
        let plain = Build::new("k.cu", "src", true, vec![]);
        let other_src = Build::new("k.cu", "other", true, vec![]);
        let other_switch = Build::new("k.cu", "src", true, vec!["WD_C".into()]);
        let images: Vec<(&Build, &str)> = vec![
            (&ab, "sm_90"),
            (&plain, "sm_90"),
            (&plain, "sm_80"),
            (&plain, "compute_80"),
            (&other_src, "sm_90"),
            (&other_switch, "sm_90"),
        ];
        assert_eq!(
            image_sources(&checks, &images),
            [Some(2), Some(3), None, None, None, None],
            "switch order is no difference; architecture, source and switches are"
        );
    }
}
