//! `warpdrive doctor` as a library call: the driver, NVRTC and the visible GPUs, and every
//! kernel build of every domain — compiled to PTX for `sm_90` without a GPU (`compile_only`,
//! what CI runs), or loaded on each GPU with its registers, shared and local memory. Each domain
//! lists its kernels as [`KernelSet`]s; the front end gathers them and prints the lines.

use crate::bench::Lines;
use crate::cuda::{self, KernelOptions};
use crate::engine::{Error, Result};

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
            let ptx = cuda::compile(&set.file, &set.src, &opts)?;
            let label: String = defines.iter().map(|d| format!(", -D{d}")).collect();
            Ok(format!(
                "{} ({}{}, sm_90{label}): compiled, {} bytes of PTX",
                set.file,
                set.kind(),
                mode(precise),
                ptx.to_src().len()
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
