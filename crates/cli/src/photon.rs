//! `warpdrive photon` and `warpdrive ppc`: argument parsing and output only; the requests, their
//! checks and the propagation live in `warpdrive_photon::engine`.

use crate::merge::SplitArgs;
use crate::CommonArgs;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use warpdrive_core::progress::Bar;
use warpdrive_photon::engine::{
    self, DetectorSpec, ParticleName, Propagate, PropagateOptions, PropagateResult, SourceOptions, TypedSources,
};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PhotonArgs {
    /// `photon tabulate` (without a subcommand: propagate to the modules).
    #[command(subcommand)]
    pub what: Option<PhotonCommand>,
    /// PPC ice directory (cfg.txt, icemodel.dat, icemodel.par, wv.dat, as.dat, ...). Default: built-in homogeneous ice.
    #[arg(long)]
    ice: Option<PathBuf>,
    /// Geometry file (PPC geo-f2k or Prometheus .geo). Default: <ice>/geo-f2k, else a generated 86-string detector.
    #[arg(long)]
    geometry: Option<PathBuf>,
    /// Multi-PMT module files (om.conf, om.dirs, om.map, om.wv_*; PPC's NEXTGENDIR). Default: the ice directory.
    #[arg(long)]
    sensors: Option<PathBuf>,
    /// f2k input with TR lines. Default: the typed source of --particle, --position, --direction,
    /// --energy, --time, --length (one 100 TeV EM cascade at the detector centre, moving up).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Step file: `x y z t theta phi length beta photons` per line.
    #[arg(long)]
    steps: Option<PathBuf>,
    /// Particle of the typed sources, comma-separated (one for all or one per source): an f2k
    /// name (e, e+, hadr, amu, ph, ...) or a PDG name or code (e-, e+, gamma, mu-, mu+, pi+, pi-;
    /// 11, -11, 22, 13, -13, 211, -211; docs/photon.md). Default: e.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    particle: Option<Vec<String>>,
    /// Position of the typed sources [m]: x,y,z (one triple for all or one per source). Default: 0,0,0.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    position: Option<Vec<f64>>,
    /// Direction of the typed sources as f2k zenith,azimuth [deg] (where the particle comes
    /// from). Default: 180,0 (moving up).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    direction: Option<Vec<f64>>,
    /// Energy of the typed sources [GeV] (for `ph`: the photon count). Default: 100000.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    energy: Option<Vec<f64>>,
    /// Time of the typed sources [ns]. Default: 0.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    time: Option<Vec<f64>>,
    /// Length of the typed sources [m] (muon segments need one). Default: 0.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    length: Option<Vec<f64>>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Refuse to run if more than this many photons would be propagated.
    #[arg(long)]
    max_photons: Option<u64>,
    /// DOM oversize factor (overrides cfg.txt).
    #[arg(long)]
    oversize: Option<u64>,
    /// Output Parquet file.
    #[arg(long, short, default_value = "photon-hits.parquet")]
    output: PathBuf,
    /// Also write PPC `HIT` lines to this file.
    #[arg(long)]
    hit_lines: Option<PathBuf>,
    #[command(flatten)]
    split: SplitArgs,
    #[command(flatten)]
    common: CommonArgs,
}

/// `warpdrive photon`.
pub fn run(a: &PhotonArgs, force: bool) -> Result<()> {
    let start = Instant::now();
    let ctl = a.common.control()?;
    let split = a.split.split()?;
    let spec = DetectorSpec {
        ice: a.ice.clone(),
        geometry: a.geometry.clone(),
        sensors: a.sensors.clone(),
        oversize: a.oversize,
    };
    let sources = SourceOptions {
        input: a.input.clone(),
        f2k: None,
        steps: a.steps.clone(),
        typed: TypedSources {
            particle: a
                .particle
                .as_ref()
                .map(|p| p.iter().map(|n| ParticleName::from(n.as_str())).collect()),
            position: a.position.clone(),
            direction: a.direction.clone(),
            energy: a.energy.clone(),
            time: a.time.clone(),
            length: a.length.clone(),
        },
    };
    let mut inputs = spec.inputs();
    inputs.extend(sources.inputs());
    let outs = engine::prepare_outputs(Some(&a.output), a.hit_lines.as_deref(), force, &inputs)?;
    let det = engine::detector(&spec)?;
    for d in &det.description {
        eprintln!("{d}");
    }
    for u in &det.unsupported {
        eprintln!("warning: {u}");
    }
    let opts = PropagateOptions {
        seed: a.seed,
        max_photons: a.max_photons,
        split,
        command: crate::command_line(),
    };
    let req = Propagate::new(Arc::new(det), sources, &opts)?;
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    r.save(outs)?;
    print_summary(&r, a);
    println!("total time:     {:.2} s", start.elapsed().as_secs_f64());
    a.split.note();
    Ok(())
}

fn print_summary(r: &PropagateResult, a: &PhotonArgs) {
    let sim = &r.sim;
    println!("sources:        {}", sim.sources.len());
    println!("photons:        {}", sim.photons);
    println!("hits:           {} (before acceptance: {})", sim.hits.len(), sim.raw_hits);
    match &r.gpu {
        Some(g) => println!(
            "propagation:    {:.2} s ({:.3} s in kernels, {:.3} ns/photon) on {}",
            r.seconds,
            g.kernel_seconds,
            1e9 * g.kernel_seconds / sim.photons as f64,
            r.device
        ),
        None => println!(
            "propagation:    {:.2} s, {:.0} ns/photon, {:.3e} photons/s on {}",
            r.seconds,
            1e9 * r.seconds / sim.photons as f64,
            sim.photons as f64 / r.seconds,
            r.device
        ),
    }
    println!("output:         {}", a.output.display());
    if let Some(p) = &a.hit_lines {
        println!("HIT lines:      {}", p.display());
    }
}

/// `warpdrive ppc ARGS`: PPC's modes with its environment and standard streams, under the
/// process's cancellation token (SIGINT/SIGTERM stop a propagation before anything is printed).
pub fn ppc(args: &[String]) -> Result<()> {
    let env = warpdrive_photon::ppc::PpcEnv::from_env(|k| std::env::var(k).ok())?;
    let ctl = crate::process_control();
    let mut stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let _bar = Bar::show(&ctl.progress);
    warpdrive_photon::ppc::run(args, &env, &mut stdin, &mut out, &mut std::io::stderr(), &ctl)?;
    Ok(())
}

/// `warpdrive photon` subcommands.
#[derive(clap::Subcommand)]
pub enum PhotonCommand {
    /// Photon tables for Millipede (issue #32): propagate photons from one source at a depth and
    /// orientation through the ice (no modules) and record their track length per bin of the
    /// source frame (amplitude and arrival-time tables, docs/spline.md "Making tables"), as
    /// histograms for `warpdrive spline fit`.
    Tabulate(Box<TabulateArgs>),
}

#[derive(Args)]
pub struct TabulateArgs {
    /// PPC ice directory (cfg.txt, icemodel.dat, icemodel.par, wv.dat, as.dat, tilt files). Default: built-in homogeneous ice.
    #[arg(long)]
    ice: Option<PathBuf>,
    /// The source: cascade (spherical r, azimuth, cos θ; per GeV) or muon-segment (cylindrical ρ, azimuth, Δz; per metre).
    #[arg(long, default_value = "cascade")]
    source: String,
    /// Depths of the source vertex below the surface [m] (IceCube z = 1948.07 − depth), at
    /// x = y = 0, comma-separated and increasing: several make a `depth` axis.
    #[arg(long, value_delimiter = ',', default_value = "2000", allow_hyphen_values = true)]
    depth: Vec<f64>,
    /// Source zeniths [deg] (IceCube convention: where the particle comes from; 0 = moving down),
    /// comma-separated and increasing: several make a `zenith` axis.
    #[arg(long, value_delimiter = ',', default_value = "0", allow_hyphen_values = true)]
    zenith: Vec<f64>,
    /// Source azimuth [deg] (IceCube convention).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    azimuth: f64,
    /// Energy [GeV]: the cascade's longitudinal profile, the muon's light per metre.
    #[arg(long, default_value_t = 1000.0, allow_hyphen_values = true)]
    energy: f64,
    /// Muon segment length [m] (muon-segment only).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    length: f64,
    /// Photons to propagate per source (depth × zenith).
    #[arg(long, default_value_t = 100_000)]
    photons: u64,
    /// Radial edges [m] (r for cascades, ρ for muon segments): LO:HI:N (N equal bins) or e0,e1,….
    #[arg(long, default_value = "0:300:30", allow_hyphen_values = true)]
    radial_bins: String,
    /// Azimuth edges [deg], spanning 0 to 180 (folded): LO:HI:N or a list.
    #[arg(long, default_value = "0:180:9", allow_hyphen_values = true)]
    azimuth_bins: String,
    /// Polar edges: cos θ spanning -1 to 1 (cascade; default -1:1:20) or Δz [m] along the track
    /// (muon segment; default -200:200:40): LO:HI:N or a list.
    #[arg(long, allow_hyphen_values = true)]
    polar_bins: Option<String>,
    /// Delay edges [ns] after the direct time, for the arrival-time table: LO:HI:N or a list.
    #[arg(long, default_value = "-10:2000:40", allow_hyphen_values = true)]
    delay_bins: String,
    /// No arrival-time table (amplitude only).
    #[arg(long)]
    no_time: bool,
    /// Follow photons until absorbed or this far [m] beyond the table's outer edge (0: they end
    /// when they leave it).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    margin: f64,
    /// Switch the ice's tilt off.
    #[arg(long)]
    no_tilt: bool,
    /// Switch the ice's anisotropy off.
    #[arg(long)]
    no_anisotropy: bool,
    /// Switch the ice's birefringence off (its scattering stays in the ordinary scattering).
    #[arg(long)]
    no_birefringence: bool,
    /// The track-length estimator: exact (every segment cut at every bin boundary) or sampled
    /// (points every --sample-step metres along the path). Default: exact on the CPU, sampled
    /// with the adaptive step on GPUs (docs/spline.md "Estimators").
    #[arg(long)]
    estimator: Option<String>,
    /// The sampled estimator's step: `auto` (the default: each straight segment's step as large
    /// as the cells it crosses allow in its direction, half a bin over its fastest rate in each
    /// coordinate, from 1 m up to a whole bin; docs/spline.md "Estimators"), `auto:MIN` (the same
    /// from MIN metres: fewer points near the source, more noise there), a fixed step [m], or
    /// `segment` (one random point per straight segment).
    #[arg(long)]
    sample_step: Option<String>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory: amplitude.parquet, time.parquet, summary.json, run.json.
    #[arg(long, short, default_value = "photon-tables")]
    output: PathBuf,
    #[command(flatten)]
    common: CommonArgs,
}

/// `warpdrive photon tabulate`.
pub fn tabulate(a: &TabulateArgs, force: bool) -> Result<()> {
    use warpdrive_photon::tabulate::{self, Edges, SourceKind, TabulateOptions};
    let start = Instant::now();
    let ctl = a.common.control()?;
    let o = TabulateOptions {
        ice: a.ice.clone(),
        source: SourceKind::parse(&a.source)?,
        depth: a.depth.clone(),
        zenith: a.zenith.clone(),
        azimuth: a.azimuth,
        energy: a.energy,
        length: a.length,
        photons: a.photons,
        radial: Edges::parse("radial_bins", &a.radial_bins)?,
        azimuth_bins: Edges::parse("azimuth_bins", &a.azimuth_bins)?,
        polar: a.polar_bins.as_deref().map(|t| Edges::parse("polar_bins", t)).transpose()?,
        delay: if a.no_time {
            None
        } else {
            Some(Edges::parse("delay_bins", &a.delay_bins)?)
        },
        margin: a.margin,
        seed: a.seed,
        tilt: !a.no_tilt,
        anisotropy: !a.no_anisotropy,
        birefringence: !a.no_birefringence,
        estimator: tabulate::Estimator::parse(a.estimator.as_deref(), a.sample_step.as_deref())?,
        command: crate::command_line(),
    };
    let out = tabulate::prepare_output(&a.output, force, &o.ice.iter().cloned().collect::<Vec<_>>())?;
    let req = tabulate::Tabulate::new(&o)?;
    for d in &req.description {
        eprintln!("{d}");
    }
    let bar = Bar::show(&ctl.progress);
    let t = req.run(&ctl)?;
    drop(bar);
    t.save(out, &o.command)?;
    let h = &t.hist;
    let propagated = t.photons * t.sources.len() as u64;
    println!(
        "photons:        {propagated} propagated ({} sources), {} tabulated ({} absorbed, {} left the table)",
        t.sources.len(),
        h.tabulated,
        h.absorbed,
        h.escaped
    );
    println!("segments:       {}", h.segments);
    println!("estimator:      {}", t.estimator.describe());
    println!(
        "tabulation:     {:.2} s, {:.3e} photons/s on {}",
        t.seconds,
        propagated as f64 / t.seconds.max(1e-9),
        t.device
    );
    println!("output:         {}", a.output.display());
    println!("total time:     {:.2} s", start.elapsed().as_secs_f64());
    Ok(())
}
