//! `warpdrive bench photon` as a library call: the spec's CPU benchmark (100 TeV EM cascade at
//! (0,0,−400) in spice_3.2.1, oversize 5) timed per thread count, and on a GPU the balanced
//! (PPC's 20 × 100 TeV cascades) and shuffled workloads for the steps of the optimisation
//! history and the launch configurations (docs/performance/photon.md cites both reports).

use crate::detector::{Detector, DetectorOptions};
use crate::gpu::{GpuOptions, DEFAULT_SWITCHES, FAST_ONLY};
use crate::source::{Particle, Primary, Source, SourceSpec};
use std::path::PathBuf;
use warpdrive_core::bench::{self, BenchReport, Lines};
use warpdrive_core::cuda::FastArith;
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::jobs::Share;

/// What to time; `Default` is the command line's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    /// PPC ice directory (default: `$WARPDRIVE_DATA/ice/spice_3.2.1`).
    pub ice: Option<PathBuf>,
    /// Cascade energy of the CPU benchmark [GeV].
    pub energy: f64,
    /// CPU thread counts (empty: 1 and all cores).
    pub threads: Vec<usize>,
    pub seed: u64,
    /// GPU: the balanced workload's f2k file (default: PPC's 20 × 100 TeV cascades).
    pub input: Option<PathBuf>,
    /// GPU: cascades of the shuffled workload.
    pub shuffled_sources: usize,
    /// GPU: configurations to time instead of the built-in table ([`parse_config`]).
    pub configs: Vec<String>,
    /// GPU: workloads (`balanced`, `shuffled`).
    pub workloads: Vec<String>,
    /// Time `photon tabulate` against the propagation of the same photons instead
    /// ([`tabulation_rate`]; issue #32 asks the GPU's tabulation for ≥ 50 % of the photon rate).
    pub tabulate: bool,
    /// The sampled estimator `tabulate` times (`None`: the default, the adaptive step from
    /// [`crate::tabulate::DEFAULT_SAMPLE_STEP`]).
    pub sampled: Option<crate::tabulate::Estimator>,
    /// The depth of `tabulate`'s cascade [m] ([`TABULATE_DEPTH`]: in the dust layer).
    pub tabulate_depth: f64,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            ice: None,
            energy: 1e5,
            threads: Vec::new(),
            seed: 1,
            input: None,
            shuffled_sources: 400,
            configs: Vec::new(),
            workloads: vec!["balanced".into(), "shuffled".into()],
            tabulate: false,
            sampled: None,
            tabulate_depth: TABULATE_DEPTH,
        }
    }
}

impl BenchOptions {
    /// The files the benchmark may read (its report must not replace them).
    pub fn inputs(&self) -> Vec<PathBuf> {
        self.ice.iter().chain(&self.input).cloned().collect()
    }
}

/// A GPU workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    /// PPC's benchmark input: sources of equal size.
    Balanced,
    /// Cascades of log-uniform energies at random places and directions, in random order.
    Shuffled,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Balanced => "balanced",
            Workload::Shuffled => "shuffled",
        }
    }
}

fn workload(w: &str) -> Result<Workload, ParamError> {
    match w {
        "balanced" => Ok(Workload::Balanced),
        "shuffled" => Ok(Workload::Shuffled),
        _ => Err(ParamError::new(
            "workloads",
            format!(": unknown workload {w:?} (expected balanced, shuffled)"),
        )),
    }
}

/// A `config` string as GPU options on top of `base`: comma-separated kernel switches (`WD_…`,
/// see propagate.cu), `default` for the default switches, `-WD_…` to drop one given before,
/// `block=N` and `per-sm=N` for the launch shape, `batch=K` for 2^K photons per launch,
/// `precise` for the precise build. Measurement only, in a precise build (what each difference
/// from fast mode costs): `keep:WD_…` keeps that switch of [`FAST_ONLY`] (and adds it), which
/// precise mode otherwise drops; `nvrtc:fmad`, `nvrtc:ftz`, `nvrtc:fast-div`, `nvrtc:fast-sqrt`
/// and `nvrtc:fast-math` turn that one NVRTC option to its fast-mode value (`--fmad=true`,
/// `--ftz=true`, `--prec-div=false`, `--prec-sqrt=false`, `--use_fast_math`); `-nvrtc:NAME`
/// turns it back.
pub fn parse_config(text: &str, base: &GpuOptions) -> Result<GpuOptions, ParamError> {
    let mut o = GpuOptions {
        defines: Vec::new(),
        ..base.clone()
    };
    let err = |what: String| ParamError::new("config", format!("{text:?}: {what}"));
    for item in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let number = |v: &str| -> Result<u32, ParamError> {
            v.parse()
                .map_err(|_| ParamError::new("config", format!("{text:?}: {item:?} needs a whole number")))
        };
        match item.split_once('=') {
            _ if item == "default" => o.defines.extend(DEFAULT_SWITCHES.iter().map(|d| d.to_string())),
            _ if item == "precise" => o.precise = true,
            // The precise build that twins the CPU's `fast::twin` (what `--precise` runs, gpu.rs
            // `precise_twin`).
            _ if item == "twin" => crate::gpu::precise_twin(&mut o),
            Some(("block", v)) => o.block = number(v)?,
            Some(("per-sm", v)) => o.blocks_per_sm = number(v)?,
            Some(("batch", v)) => o.batch = 1u64 << number(v)?.min(40),
            _ if item.starts_with("keep:") => {
                let name = &item["keep:".len()..];
                if !FAST_ONLY.contains(&name) {
                    return Err(err(format!("{item:?}: keep: names a fast-only switch ({})", FAST_ONLY.join(", "))));
                }
                o.keep_fast_only.push(name.to_string());
                if !o.defines.iter().any(|d| d == name) {
                    o.defines.push(name.to_string());
                }
            }
            _ if item.starts_with("nvrtc:") || item.starts_with("-nvrtc:") => {
                let (name, on) = match item.strip_prefix('-') {
                    Some(rest) => (&rest["nvrtc:".len()..], false),
                    None => (&item["nvrtc:".len()..], true),
                };
                if !o.fast_arith.set_to(name, on) {
                    return Err(err(format!(
                        "{item:?}: unknown NVRTC option (expected nvrtc:{})",
                        FastArith::NAMES.join(", nvrtc:")
                    )));
                }
            }
            _ if item.starts_with("WD_") => o.defines.push(item.to_string()),
            _ if item.starts_with("-WD_") => {
                let name = &item[1..];
                o.defines.retain(|d| d.split('=').next() != Some(name));
            }
            _ => {
                return Err(err(format!(
                    "unknown item {item:?} (expected WD_… or -WD_… switches, default, precise, twin, block=N, \
                     per-sm=N, batch=K, keep:WD_… or [-]nvrtc:OPTION with precise)"
                )))
            }
        }
    }
    if !o.precise && (!o.keep_fast_only.is_empty() || o.fast_arith != FastArith::default()) {
        return Err(err("keep:WD_… and nvrtc:OPTION change only a precise build: add precise".into()));
    }
    Ok(o)
}

/// A checked benchmark: the detector built, the options parsed.
pub struct Bench {
    det: Detector,
    ice: PathBuf,
    opts: BenchOptions,
    /// The CPU benchmark's cascade.
    cascade: Vec<SourceSpec>,
    /// `None`: the built-in table of GPU configurations.
    configs: Option<Vec<(String, GpuOptions)>>,
    workloads: Vec<Workload>,
}

impl Bench {
    /// Check every option and build the detector; nothing is timed yet.
    pub fn new(o: &BenchOptions) -> Result<Self> {
        bench::thread_counts(&o.threads)?;
        let workloads = o.workloads.iter().map(|w| workload(w)).collect::<Result<Vec<_>, _>>()?;
        let configs = if o.configs.is_empty() {
            None
        } else {
            Some(
                o.configs
                    .iter()
                    .map(|c| Ok((c.clone(), parse_config(c, &GpuOptions::default())?)))
                    .collect::<Result<Vec<_>, ParamError>>()?,
            )
        };
        warpdrive_core::limits::check_alloc(
            "shuffled_sources",
            o.shuffled_sources as u64,
            2 * std::mem::size_of::<Source>() as u64,
            "time fewer cascades",
        )?;
        let ice = o
            .ice
            .clone()
            .unwrap_or_else(|| warpdrive_core::data::data_dir().join("ice/spice_3.2.1"));
        let det = Detector::build(&DetectorOptions {
            ice_dir: Some(ice.clone()),
            ..Default::default()
        })
        .map_err(|e| {
            Error::Failed(format!(
                "the benchmark needs the spice_3.2.1 ice directory (set WARPDRIVE_DATA or give the ice directory): {e}"
            ))
        })?;
        let primary = Primary::cascade(Particle::Electron, [0.0, 0.0, -400.0], [180.0, 0.0], o.energy, 0.0);
        let spec = SourceSpec::new(&primary, 0, &det.yield_).map_err(|e| ParamError::new("energy", format!(": {}", e.message)))?;
        Ok(Self {
            det,
            ice,
            opts: o.clone(),
            cascade: vec![spec],
            configs,
            workloads,
        })
    }

    /// Time the benchmark on the control's device (`auto`: the first GPU if CUDA works, else
    /// the CPU), printing each row to `lines` as it is measured.
    pub fn run(&self, ctl: &Control, lines: Lines) -> Result<BenchReport> {
        if self.opts.tabulate {
            let devices = bench::gpus(ctl)?;
            let sampled = self.opts.sampled.unwrap_or(crate::tabulate::Estimator::adaptive());
            // The sampled kernel's launch shapes and switches to compare (`--config`), else its default.
            let shapes = match &devices {
                Some(_) if !self.opts.configs.is_empty() => {
                    let t = crate::tabulate::gpu::TabGpuOptions::default();
                    let base = GpuOptions {
                        block: t.block,
                        blocks_per_sm: t.blocks_per_sm,
                        batch: t.batch,
                        ..Default::default()
                    };
                    let parsed = self
                        .opts
                        .configs
                        .iter()
                        .map(|c| Ok((c.clone(), tab_options(&parse_config(c, &base)?))));
                    parsed.collect::<Result<Vec<_>, ParamError>>()?
                }
                _ => vec![(String::new(), crate::tabulate::gpu::TabGpuOptions::default())],
            };
            let mut json = Vec::new();
            for (label, topts) in shapes {
                // A --config of another kernel loop than the warp queue has no adaptive comb: the
                // fixed one from the same step unless a step was given (the report names it).
                let est = match sampled {
                    crate::tabulate::Estimator::Sampled { step, adaptive: true }
                        if self.opts.sampled.is_none() && !crate::tabulate::gpu::sampled_adaptive_build(&topts.defines) =>
                    {
                        crate::tabulate::Estimator::sampled(step)
                    }
                    e => e,
                };
                let request = tabulation_request(&self.ice, self.opts.tabulate_depth, TABULATE_PHOTONS, self.opts.seed);
                let mut r = tabulation_rate(&request, devices.as_deref(), est, &topts, ctl)?;
                r.config.clone_from(&label);
                if !label.is_empty() {
                    lines(&format!("config {label:?}:"));
                }
                lines(&r.report());
                json.push(r.json());
            }
            let json = if json.len() == 1 {
                json.remove(0)
            } else {
                format!("[{}]\n", json.join(","))
            };
            return Ok(BenchReport { json });
        }
        match bench::gpus(ctl)? {
            None => self.cpu(ctl, lines),
            Some(devices) => self.gpu(&devices, ctl, lines),
        }
    }

    fn cpu(&self, ctl: &Control, lines: Lines) -> Result<BenchReport> {
        let (o, det) = (&self.opts, &self.det);
        let mode = if ctl.precise { "precise" } else { "fast mode" };
        lines(&format!(
            "warpdrive bench photon: {} GeV EM cascade at (0,0,-400), {}, oversize {}, {mode}",
            o.energy,
            self.ice.display(),
            det.cfg.oversize
        ));
        lines(&format!(
            "{:>8} {:>12} {:>12} {:>14} {:>16} {:>10}",
            "threads", "photons", "seconds", "ns/photon", "ns/photon/core", "photons/s"
        ));
        let mut rows = Vec::new();
        for n in bench::thread_counts(&o.threads)? {
            let backend = crate::Backend::Cpu { precise: ctl.precise };
            let (sim, s) = bench::timed(ctl, n, || {
                crate::engine::simulate(det, &self.cascade, o.seed, Share::WHOLE, &backend, ctl)
            })?;
            let (sim, _) = sim?;
            ctl.check()?;
            let ns = 1e9 * s / sim.photons as f64;
            lines(&format!(
                "{n:>8} {:>12} {s:>12.2} {ns:>14.1} {:>16.1} {:>10.3e}",
                sim.photons,
                ns * n as f64,
                sim.photons as f64 / s
            ));
            rows.push(format!(
                "{{\"threads\":{n},\"photons\":{},\"hits\":{},\"seconds\":{s:.4},\"ns_per_photon\":{ns:.2},\"ns_per_photon_core\":{:.2},\"photons_per_s\":{:.4e}}}",
                sim.photons,
                sim.hits.len(),
                ns * n as f64,
                sim.photons as f64 / s
            ));
        }
        lines("PPC CPU build reference: 7460 ns/photon on one Xeon core (spec §5.1).");
        Ok(BenchReport {
            json: format!(
                "{{\"benchmark\":\"photon-cpu\",\"mode\":\"{mode}\",\"energy_gev\":{},\"ice\":\"{}\",\"version\":\"{}\",\"ppc_cpu_ns_per_photon_one_xeon_core\":7460,\"runs\":[{}]}}\n",
                o.energy,
                self.ice.display(),
                env!("CARGO_PKG_VERSION"),
                rows.join(",")
            ),
        })
    }

    /// The shuffled workload: cascades with log-uniform energies 10 GeV – 100 TeV at random
    /// places and directions inside the detector, in random order (sources of very different
    /// photon counts).
    fn shuffled(&self) -> Result<Vec<SourceSpec>> {
        let mut r = warpdrive_core::RandomStream::new(self.opts.seed, 99, 0);
        (0..self.opts.shuffled_sources)
            .map(|_| {
                let e = 10f64 * 1e4f64.powf(r.uniform_f64());
                let (x, y, z) = (
                    1000.0 * r.uniform_f64() - 500.0,
                    1000.0 * r.uniform_f64() - 500.0,
                    1000.0 * r.uniform_f64() - 500.0,
                );
                let (zen, azi) = ((2.0 * r.uniform_f64() - 1.0).acos().to_degrees(), 360.0 * r.uniform_f64());
                let cascade = Primary::cascade(Particle::Electron, [x, y, z], [zen, azi], e, 0.0);
                SourceSpec::new(&cascade, 0, &self.det.yield_).map_err(|e| Error::Failed(format!("shuffled source: {}", e.message)))
            })
            .collect()
    }

    /// The sources of each workload, drawn from the seed.
    fn workloads(&self) -> Result<Vec<(&'static str, Vec<Source>)>> {
        let seed = self.opts.seed;
        let mut out = Vec::new();
        for &w in &self.workloads {
            let specs = match w {
                Workload::Balanced => {
                    let input =
                        self.opts.input.clone().unwrap_or_else(|| {
                            warpdrive_core::data::data_dir().join("reference/ppc_h100_2026/input_cascades_20x100TeV.f2k")
                        });
                    let text = warpdrive_core::input::read_text(&input)?;
                    crate::f2k::parse_f2k(&input, &text, &self.det.yield_)?.specs
                }
                Workload::Shuffled => self.shuffled()?,
            };
            out.push((w.name(), crate::source::realise(&specs, seed)));
        }
        Ok(out)
    }

    /// Each step of the optimisation history (docs/performance/photon.md), then the default and
    /// its launch shapes, then the precise build; or the configurations asked for.
    fn configs(&self, devices: &[usize]) -> Vec<(String, GpuOptions)> {
        let base = GpuOptions {
            devices: devices.to_vec(),
            ..Default::default()
        };
        let mut configs = match &self.configs {
            Some(asked) => asked
                .iter()
                .map(|(label, o)| {
                    (
                        label.clone(),
                        GpuOptions {
                            devices: devices.to_vec(),
                            ..o.clone()
                        },
                    )
                })
                .collect(),
            None => history(&base),
        };
        if devices.len() > 1 {
            configs.push((
                "fast, first GPU only".into(),
                GpuOptions {
                    devices: vec![devices[0]],
                    ..base
                },
            ));
        }
        configs
    }

    /// GPU benchmarks: time = kernel time (launch to synchronize, like PPC's "device time");
    /// photons counted as PPC counts them.
    fn gpu(&self, devices: &[usize], ctl: &Control, lines: Lines) -> Result<BenchReport> {
        let (o, det) = (&self.opts, &self.det);
        let workloads = self.workloads()?;
        let configs = self.configs(devices);
        if let crate::tilt::Tilt::OneD(t) = &det.medium.tilt {
            if let Some(e) = crate::gpu::tilt_lut_error(t, 100_000) {
                lines(&format!(
                    "tilt LUT ({} distances): largest |Δ zshift| over 1e5 random points = {e:.2e} m",
                    crate::gpu::TILT_LUT_DIST
                ));
            }
        }
        if let crate::tilt::Tilt::TwoD(t) = &det.medium.tilt {
            if let Some(e) = crate::gpu::tilt2_lut_error(t, 100_000) {
                lines(&format!(
                    "2-D tilt LUT ({} m grid): largest |Δ zshift| over 1e5 random points = {e:.2e} m",
                    crate::gpu::TILT2_LUT_STEP
                ));
            }
        }
        let device: Vec<String> = devices.iter().map(|d| format!("cuda:{d}")).collect();
        lines(&format!(
            "warpdrive bench photon --device {}: {}, oversize {}",
            device.join(","),
            self.ice.display(),
            det.cfg.oversize
        ));
        lines(&format!(
            "{:<10} {:<22} {:>12} {:>10} {:>10} {:>11} {:>11} {:>5} {:>6}",
            "workload", "switches", "photons", "kernel s", "wall s", "ns/photon", "photons/s", "regs", "local"
        ));
        let mut rows = Vec::new();
        for (name, sources) in &workloads {
            let photons: u64 = sources.iter().map(|s| s.photons).sum();
            for (label, opts) in &configs {
                ctl.check()?;
                // Warm-up (compilation, module load) outside the timing.
                let warm: Vec<Source> = sources
                    .iter()
                    .take(1)
                    .cloned()
                    .map(|mut s| {
                        s.photons = s.photons.min(1 << 16);
                        s
                    })
                    .collect();
                crate::gpu::run(&det.medium, &det.index, &warm, o.seed, opts)?;
                let (hits, st) = crate::gpu::run(&det.medium, &det.index, sources, o.seed, opts)?;
                let ns = 1e9 * st.kernel_seconds / photons as f64;
                lines(&format!(
                    "{name:<10} {label:<32} {photons:>12} {:>10.4} {:>10.3} {ns:>11.3} {:>11.3e} {:>5} {:>6}",
                    st.kernel_seconds,
                    st.wall_seconds,
                    photons as f64 / st.kernel_seconds,
                    st.registers,
                    st.local_bytes
                ));
                rows.push(format!(
                    "{{\"workload\":\"{name}\",\"switches\":\"{label}\",\"photons\":{photons},\"raw_hits\":{},\"kernel_seconds\":{:.6},\"wall_seconds\":{:.6},\"ns_per_photon\":{ns:.4},\"registers\":{},\"local_bytes\":{},\"devices\":{:?}}}",
                    hits.len(),
                    st.kernel_seconds,
                    st.wall_seconds,
                    st.registers,
                    st.local_bytes,
                    st.devices
                ));
            }
        }
        lines("PPC on one H100 (spec §5.1): 0.97 ns/photon, 1.03e9 photons/s on the balanced workload; target 0.5 ns/photon.");
        Ok(BenchReport {
            json: format!("[{}]\n", rows.join(",\n")),
        })
    }
}

/// The built-in GPU configurations: the optimisation history, the default and its variants.
fn history(base: &GpuOptions) -> Vec<(String, GpuOptions)> {
    let with = |d: &[&str], o: &GpuOptions| GpuOptions {
        defines: d.iter().map(|x| (*x).to_string()).collect(),
        ..o.clone()
    };
    let q = ["WD_JOBQUEUE", "WD_TILT_LUT", "WD_MIN_BLOCKS=4", "WD_FACTORED_ICE"];
    let q_clear = [&q[..], &["WD_CLEARANCE"]].concat();
    let q_select = [&q_clear[..], &["WD_SELECT_SCATTER"]].concat();
    let q_dynamic = [&q_select[..], &["WD_DYNAMIC"]].concat();
    let q_walk = [&q_dynamic[..], &["WD_BRANCHLESS_WALK"]].concat();
    fn default_with(min_blocks: &'static str) -> Vec<&'static str> {
        DEFAULT_SWITCHES
            .iter()
            .map(|&d| if d.starts_with("WD_MIN_BLOCKS=") { min_blocks } else { d })
            .collect()
    }
    vec![
        ("fast, no switches".into(), with(&[], base)),
        ("≤64 regs".into(), with(&["WD_MIN_BLOCKS=4"], base)),
        ("≤64 regs + LUT".into(), with(&["WD_MIN_BLOCKS=4", "WD_TILT_LUT"], base)),
        ("job queue".into(), with(&["WD_JOBQUEUE"], base)),
        ("job queue + LUT".into(), with(&["WD_JOBQUEUE", "WD_TILT_LUT"], base)),
        ("queue+LUT+≤64".into(), with(&q[..3], base)),
        ("queue+LUT+≤64+factored".into(), with(&q, base)),
        ("… + clearance".into(), with(&q_clear, base)),
        ("… + select scatter".into(), with(&q_select, base)),
        ("… + dynamic".into(), with(&q_dynamic, base)),
        ("… + branchless walk".into(), with(&q_walk, base)),
        ("default (… + fast arithmetic, ≤48 regs)".into(), base.clone()),
        (
            "default, Philox per segment".into(),
            with(
                &DEFAULT_SWITCHES.iter().copied().filter(|d| *d != "WD_FAST_RNG").collect::<Vec<_>>(),
                base,
            ),
        ),
        (
            "default, 2^26 per launch".into(),
            GpuOptions {
                batch: 1 << 26,
                ..base.clone()
            },
        ),
        (
            "default + shared tables".into(),
            with(&[DEFAULT_SWITCHES, &["WD_SHARED_TABLES"]].concat(), base),
        ),
        (
            "default + warp RNG (stats!)".into(),
            with(&[DEFAULT_SWITCHES, &["WD_RNG_WARP"]].concat(), base),
        ),
        ("default, ≤64 regs".into(), with(&default_with("WD_MIN_BLOCKS=4"), base)),
        ("default, ≤40 regs".into(), with(&default_with("WD_MIN_BLOCKS=6"), base)),
        (
            "default, 128×16/SM".into(),
            GpuOptions {
                block: 128,
                ..with(&default_with("WD_MIN_BLOCKS=10"), base)
            },
        ),
        ("precise (--precise: the twin of the CPU's)".into(), {
            let mut o = base.clone();
            crate::gpu::precise_twin(&mut o);
            o
        }),
        (
            "precise, exact tables (the device check's)".into(),
            GpuOptions {
                precise: true,
                ..base.clone()
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::Style;

    #[test]
    fn options_are_checked_before_the_work() {
        let bad = |o: BenchOptions| Bench::new(&o).err().map(|e| e.render(Style::Cli)).unwrap_or_default();
        let e = bad(BenchOptions {
            threads: vec![2, 0],
            ..Default::default()
        });
        assert_eq!(e, "--threads: every thread count must be at least 1");
        let e = bad(BenchOptions {
            workloads: vec!["uniform".into()],
            ..Default::default()
        });
        assert_eq!(e, "--workloads: unknown workload \"uniform\" (expected balanced, shuffled)");
        let e = bad(BenchOptions {
            configs: vec!["block=x".into()],
            ..Default::default()
        });
        assert_eq!(e, "--config \"block=x\": \"block=x\" needs a whole number");
        let e = bad(BenchOptions {
            shuffled_sources: usize::MAX,
            ..Default::default()
        });
        assert!(e.starts_with("--shuffled-sources: "), "{e}");
    }

    #[test]
    fn configs_are_switch_sets() {
        let base = GpuOptions::default();
        let o = parse_config("default,-WD_FAST_RNG,block=128,batch=20,precise", &base).unwrap();
        assert!(o.precise && o.block == 128 && o.batch == 1 << 20);
        assert!(!o.defines.iter().any(|d| d == "WD_FAST_RNG"));
        assert_eq!(o.defines.len(), DEFAULT_SWITCHES.len() - 1);
    }

    #[test]
    fn configs_keep_fast_only_switches_and_turn_nvrtc_options() {
        use crate::gpu::{kernel_defines, KernelFeatures};
        let base = GpuOptions::default();
        let plain = parse_config("default,precise", &base).unwrap();
        assert!(plain.keep_fast_only.is_empty() && plain.fast_arith == FastArith::default());
        let o = parse_config("default,precise,keep:WD_TILT_LUT,keep:WD_FAST_RNG", &base).unwrap();
        assert_eq!(o.keep_fast_only, ["WD_TILT_LUT", "WD_FAST_RNG"]);
        assert_eq!(o.defines, plain.defines, "already among the defaults: not added twice");
        let f = KernelFeatures::default();
        let (d_plain, d) = (kernel_defines(&plain, f), kernel_defines(&o, f));
        assert!(!d_plain.iter().any(|s| FAST_ONLY.contains(&s.as_str())));
        let extra: Vec<&String> = d.iter().filter(|s| !d_plain.contains(s)).collect();
        assert_eq!(extra, ["WD_TILT_LUT", "WD_FAST_RNG"], "the kept ones survive precise mode");
        let alone = parse_config("precise,keep:WD_BFR_TABLE", &base).unwrap();
        assert_eq!(alone.defines, ["WD_BFR_TABLE"], "keep: adds the switch");
        assert!(kernel_defines(&alone, f).iter().any(|s| s == "WD_BFR_TABLE"));

        let n = parse_config("default,precise,nvrtc:fmad,nvrtc:fast-sqrt", &base).unwrap();
        let expect = FastArith {
            fmad: true,
            sqrt: true,
            ..FastArith::default()
        };
        assert_eq!((n.fast_arith, n.defines.clone()), (expect, plain.defines.clone()));
        for (name, get) in [
            ("fmad", (|a: FastArith| a.fmad) as fn(FastArith) -> bool),
            ("ftz", |a| a.ftz),
            ("fast-div", |a| a.div),
            ("fast-sqrt", |a| a.sqrt),
            ("fast-math", |a| a.math),
        ] {
            let a = parse_config(&format!("precise,nvrtc:{name}"), &base).unwrap().fast_arith;
            assert!(get(a) && a.label() == name, "{name}: {a:?}");
        }
        // The twin does not contract (its FMAs are written out); nvrtc:fmad turns contraction on.
        let t = parse_config("default,twin", &base).unwrap();
        assert!(t.precise && !t.fast_arith.fmad, "the twin contracts: {:?}", t.fast_arith);
        assert!(parse_config("default,twin,nvrtc:fmad", &base).unwrap().fast_arith.fmad);

        let err = |c: &str| parse_config(c, &base).unwrap_err().to_string();
        assert!(err("default,keep:WD_TILT_LUT").contains("add precise"));
        assert!(err("default,nvrtc:fmad").contains("add precise"));
        assert!(err("precise,keep:WD_JOBQUEUE").contains("fast-only switch"));
        assert!(err("precise,nvrtc:fma").contains("nvrtc:fmad, nvrtc:ftz"));
        assert!(err("default,twin,-nvrtc:fma").contains("unknown NVRTC option"));
        assert!(err("precise,bogus").contains("keep:WD_… or [-]nvrtc:OPTION"));
    }
}

/// Photons of [`tabulation_rate`]'s runs on a GPU (a tenth of them on the CPU).
pub const TABULATE_PHOTONS: u64 = 1 << 24;

/// The depth of [`tabulation_rate`]'s cascade by default [m]: 2000 m, in the dust layer, where
/// the photons stay near the source (`bench photon --tabulate --depth` for others).
pub const TABULATE_DEPTH: f64 = 2000.0;

/// [`tabulation_rate`]'s request: `photons` of a 1 TeV cascade at `depth` [m], zenith 0, in the
/// ice model `ice`, `photon tabulate`'s default bins.
#[must_use]
pub fn tabulation_request(ice: &std::path::Path, depth: f64, photons: u64, seed: u64) -> crate::tabulate::TabulateOptions {
    crate::tabulate::TabulateOptions {
        ice: Some(ice.to_path_buf()),
        depth: vec![depth],
        photons,
        seed,
        ..Default::default()
    }
}

/// The tabulation's photon rate against the propagation's, on the same device, ice and photons.
#[derive(Clone, Debug)]
pub struct TabulationRate {
    pub device: String,
    pub photons: u64,
    /// The cascade's depth [m].
    pub depth: f64,
    /// Photons per second: tabulation (GPU: kernel time; CPU: wall time), propagation to the
    /// modules in the default (fast) and in the precise arithmetic (`bench photon`'s rate).
    pub tabulate: f64,
    /// The same with the exact estimator (the sampled one is `tabulate`).
    pub tabulate_exact: f64,
    /// The sampled estimator `tabulate` used.
    pub estimator: String,
    pub fast: f64,
    pub precise: f64,
    /// Photons the host tabulated for the GPU (overflowed the kernel's scratch).
    pub overflowed: u64,
    /// The sampled run's points (in the grid) and straight segments a photon: what its time is
    /// spent on (docs/spline.md "The directional step, session 37").
    pub points_per_photon: f64,
    pub segments_per_photon: f64,
    /// The `--config` this rate was measured with (empty: the default build).
    pub config: String,
}

impl TabulationRate {
    /// The (sampled) tabulation's rate over the fast propagation's (issue #32: ≥ 0.5 on the GPU).
    #[must_use]
    pub fn ratio(&self) -> f64 {
        self.tabulate / self.fast
    }

    #[must_use]
    pub fn report(&self) -> String {
        format!(
            "warpdrive bench photon --tabulate on {}: {} photons of a 1 TeV cascade at {} m (photon tabulate's default bins): \
             tabulation {:.3e} photons/s with the {} estimator, {:.3e} with the exact one; \
             propagation to the modules {:.3e} photons/s (fast), {:.3e} (precise); \
             tabulation / fast = {:.3} (exact {:.4}), / precise = {:.3}; {} photons tabulated by the host (exact); \
             {:.1} points and {:.1} segments a photon (sampled)",
            self.device,
            self.photons,
            self.depth,
            self.tabulate,
            self.estimator,
            self.tabulate_exact,
            self.fast,
            self.precise,
            self.ratio(),
            self.tabulate_exact / self.fast,
            self.tabulate / self.precise,
            self.overflowed,
            self.points_per_photon,
            self.segments_per_photon
        )
    }

    #[must_use]
    pub fn json(&self) -> String {
        serde_json::json!({
            "benchmark": "photon-tabulate",
            "device": self.device,
            "photons": self.photons,
            "depth_m": self.depth,
            "tabulate_photons_per_s": self.tabulate,
            "tabulate_estimator": self.estimator,
            "tabulate_exact_photons_per_s": self.tabulate_exact,
            "propagate_fast_photons_per_s": self.fast,
            "propagate_precise_photons_per_s": self.precise,
            "tabulate_over_fast": self.ratio(),
            "overflowed": self.overflowed,
            "points_per_photon": self.points_per_photon,
            "segments_per_photon": self.segments_per_photon,
            "config": self.config,
        })
        .to_string()
            + "\n"
    }
}

/// The sampled tabulation kernel's launch options from a `--config`'s GPU options: its block,
/// blocks per multiprocessor, batch and extra switches (the sampled build adds the defaults).
fn tab_options(o: &GpuOptions) -> crate::tabulate::gpu::TabGpuOptions {
    crate::tabulate::gpu::TabGpuOptions {
        block: o.block,
        blocks_per_sm: o.blocks_per_sm,
        batch: o.batch,
        defines: o.defines.clone(),
        ..Default::default()
    }
}

/// Time `photon tabulate` of `request` ([`tabulation_request`]: a cascade, the command line's
/// default bins) and the propagation of the same source's photons to the modules of the ice's
/// detector, fast and precise, on `devices` (the first GPU; `None`: the CPU, a tenth of the
/// photons, wall time). GPU times are kernel times; each GPU run is preceded by a small warm-up
/// run (compilation). The sampled estimator is `sampled`.
pub fn tabulation_rate(
    request: &crate::tabulate::TabulateOptions,
    devices: Option<&[usize]>,
    sampled: crate::tabulate::Estimator,
    shape: &crate::tabulate::gpu::TabGpuOptions,
    ctl: &Control,
) -> Result<TabulationRate> {
    use crate::tabulate::{gpu::TabGpuOptions, Estimator, Tabulate, TabulateOptions};
    let photons = if devices.is_some() {
        request.photons
    } else {
        (request.photons / 10).max(1)
    };
    let o = TabulateOptions {
        photons,
        ..request.clone()
    };
    let (seed, depth) = (o.seed, o.depth.first().copied().unwrap_or(f64::NAN));
    let t = Tabulate::new(&o)?.with_estimator(sampled)?;
    let exact = Tabulate::new(&o)?.with_estimator(Estimator::Exact)?;
    let det = Detector::build(&DetectorOptions {
        ice_dir: o.ice.clone(),
        ..Default::default()
    })?;
    let mut src = t.source(0);
    src.photons = photons;
    let sources = vec![src];
    match devices {
        Some(d) => {
            let dev = vec![d.first().copied().unwrap_or(0)];
            let topts = TabGpuOptions {
                devices: dev.clone(),
                ..shape.clone()
            };
            // The exact estimator's kernel keeps its own launch shape (`shape` is the sampled one's).
            let eopts = TabGpuOptions {
                devices: dev.clone(),
                ..Default::default()
            };
            let warm = Tabulate::new(&TabulateOptions {
                photons: 1 << 16,
                ..o.clone()
            })?;
            warm.clone().with_estimator(sampled)?.run_gpu(&topts, ctl)?;
            warm.with_estimator(Estimator::Exact)?.run_gpu(&eopts, ctl)?;
            let r = t.run_gpu(&topts, ctl)?;
            let e = exact.run_gpu(&eopts, ctl)?;
            let rate = |precise: bool| -> Result<f64> {
                let opts = GpuOptions {
                    devices: dev.clone(),
                    precise,
                    ..Default::default()
                };
                let mut w = sources.clone();
                w[0].photons = 1 << 16;
                crate::gpu::run(&det.medium, &det.index, &w, seed, &opts)?;
                let (_, st) = crate::gpu::run(&det.medium, &det.index, &sources, seed, &opts)?;
                Ok(photons as f64 / st.kernel_seconds.max(1e-12))
            };
            Ok(TabulationRate {
                device: r.device.clone(),
                photons,
                depth,
                tabulate: photons as f64 / r.kernel_seconds.max(1e-12),
                tabulate_exact: photons as f64 / e.kernel_seconds.max(1e-12),
                estimator: sampled.describe(),
                fast: rate(false)?,
                precise: rate(true)?,
                overflowed: e.overflowed,
                points_per_photon: r.hist.points as f64 / photons as f64,
                segments_per_photon: r.hist.segments as f64 / photons as f64,
                config: String::new(),
            })
        }
        None => {
            let r = t.run_cpu(ctl)?;
            let e = exact.run_cpu(ctl)?;
            let progress = warpdrive_core::progress::Progress::hidden();
            let rate = |precise: bool| -> Result<f64> {
                let t0 = std::time::Instant::now();
                ctl.install(|| {
                    if precise {
                        crate::propagate::run(&det.medium, &det.index, &sources, seed, &progress);
                    } else {
                        crate::fast::run(&det.medium, &det.index, &sources, seed, &progress);
                    }
                })?;
                Ok(photons as f64 / t0.elapsed().as_secs_f64().max(1e-12))
            };
            Ok(TabulationRate {
                device: r.device.clone(),
                photons,
                depth,
                tabulate: photons as f64 / r.seconds.max(1e-12),
                tabulate_exact: photons as f64 / e.seconds.max(1e-12),
                estimator: sampled.describe(),
                fast: rate(false)?,
                precise: rate(true)?,
                overflowed: 0,
                points_per_photon: r.hist.points as f64 / photons as f64,
                segments_per_photon: r.hist.segments as f64 / photons as f64,
                config: String::new(),
            })
        }
    }
}

/// The sampled tabulation's photon rate alone (kernel time, photons/s) of [`tabulation_rate`]'s
/// request on device `device` with launch options `shape` (e.g. a structural alternative's
/// switches: gpu-check prints them beside the default's rate), after a warm-up run.
pub fn sampled_tabulation_rate(
    request: &crate::tabulate::TabulateOptions,
    device: usize,
    sampled: crate::tabulate::Estimator,
    shape: &crate::tabulate::gpu::TabGpuOptions,
    ctl: &Control,
) -> Result<f64> {
    use crate::tabulate::{gpu::TabGpuOptions, Tabulate, TabulateOptions};
    let topts = TabGpuOptions {
        devices: vec![device],
        ..shape.clone()
    };
    Tabulate::new(&TabulateOptions {
        photons: 1 << 16,
        ..request.clone()
    })?
    .with_estimator(sampled)?
    .run_gpu(&topts, ctl)?;
    let r = Tabulate::new(request)?.with_estimator(sampled)?.run_gpu(&topts, ctl)?;
    Ok(request.photons as f64 / r.kernel_seconds.max(1e-12))
}
