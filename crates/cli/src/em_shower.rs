//! `warpdrive em testem3` and `warpdrive em calorimeter FILE`: EM showers in a layered
//! calorimeter (argument parsing and output only; the run is `warpdrive_em::engine::Shower`);
//! `warpdrive em run FILE.gdml` (alias `em detector`): in a GDML detector (`warpdrive_em::engine::DetectorShower`).

use crate::{command_line, CommonArgs};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use warpdrive_core::progress::Bar;
use warpdrive_em::engine::{self, CalorimeterChoice, DetectorOptions, DetectorShower, Shower, ShowerOptions};
use warpdrive_em::field::propagate::FieldAccuracy;
use warpdrive_em::shower::reference::UNBIASED;
use warpdrive_em::shower::transport::CREATORS;

#[derive(Subcommand)]
pub enum ShowerCommand {
    /// Geant4's TestEm3: 50 × [2.3 mm lead + 5.7 mm liquid argon], 40 cm wide (docs/em.md).
    Testem3(ShowerArgs),
    /// Any layered calorimeter described in a TOML file (docs/em.md).
    Calorimeter {
        /// Calorimeter TOML: name, repeat, transverse [cm], [[layers]] material + thickness [cm].
        file: PathBuf,
        #[command(flatten)]
        args: ShowerArgs,
    },
    /// Showers in a detector described in GDML: energy deposit per volume and material,
    /// optional uniform field or field map and hits in sensitive volumes (docs/em.md); on a GPU
    /// with --device cuda (the field, the map and the hits too: docs/em-geometry.md "Showers on
    /// the GPU").
    #[command(alias = "detector")]
    Run(DetectorArgs),
}

#[derive(Args)]
pub struct DetectorArgs {
    /// GDML file (the subset of docs/em-geometry.md; materials need a built-in G4_ name or <MEE>).
    file: PathBuf,
    /// Primary particle: e-, e+ or gamma.
    #[arg(long, default_value = "e-")]
    primary: String,
    /// Primary kinetic energy [MeV].
    #[arg(long, default_value_t = 1000.0, allow_hyphen_values = true)]
    energy: f64,
    /// Start point x,y,z in the world's frame [mm]; it must lie inside the world volume.
    #[arg(long, value_delimiter = ',', default_values_t = [0.0, 0.0, 0.0], allow_hyphen_values = true)]
    position: Vec<f64>,
    /// Direction dx,dy,dz (normalised).
    #[arg(long, value_delimiter = ',', default_values_t = [0.0, 0.0, 1.0], allow_hyphen_values = true)]
    direction: Vec<f64>,
    /// Uniform magnetic field bx,by,bz [T] in the world's frame (charged particles on helices).
    #[arg(long, value_delimiter = ',', default_values_t = [0.0, 0.0, 0.0], allow_hyphen_values = true)]
    field: Vec<f64>,
    /// Field map on an (r, z) grid, CSV or Parquet with columns r_mm, z_mm, br_T, bz_T
    /// (bilinear, Dormand–Prince integration); it must cover the world. Not with --field.
    #[arg(long)]
    field_map: Option<PathBuf>,
    /// Curved paths in a field: largest sagitta of the chords checked for boundaries [mm]
    /// (default 0.25, Geant4's).
    #[arg(long, value_name = "MM", allow_hyphen_values = true)]
    delta_chord: Option<f64>,
    /// Curved paths in a field: how far past a boundary a crossing may be found [mm]
    /// (default 1e-6; at most --delta-chord).
    #[arg(long, value_name = "MM", allow_hyphen_values = true)]
    delta_intersection: Option<f64>,
    /// Field maps: Dormand–Prince error per unit path length (default 1e-9; 1e-12 to 1e-2).
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    field_epsilon: Option<f64>,
    /// Logical volumes whose deposits are written as hits (hits.parquet), comma-separated;
    /// volumes with a GDML <auxiliary auxtype="SensDet"> are sensitive too.
    #[arg(long, value_delimiter = ',')]
    sensitive: Vec<String>,
    /// Number of events.
    #[arg(long, default_value_t = 1000)]
    events: u64,
    /// Random seed (every track draws from its own Philox stream keyed by the seed and its id).
    #[arg(long, default_value_t = 12345)]
    seed: u64,
    /// Production cut for γ, e⁻ and e⁺, as a range [mm].
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    cut_mm: f64,
    /// Also draw volumes.png: the mean energy deposit per event per volume (the 40 largest).
    #[arg(long)]
    plot: bool,
    /// Output directory (volumes.parquet, summary.json, run.json; hits.parquet with sensitive
    /// volumes; volumes.png with --plot).
    #[arg(long, short, default_value = "em-detector")]
    output: PathBuf,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
pub struct ShowerArgs {
    /// Primary particle: e-, e+ or gamma (starts on the axis in front of the calorimeter, along +z).
    #[arg(long, default_value = "e-")]
    primary: String,
    /// Primary kinetic energy [MeV].
    #[arg(long, default_value_t = 1000.0, allow_hyphen_values = true)]
    energy: f64,
    /// Number of events.
    #[arg(long, default_value_t = 1000)]
    events: u64,
    /// Random seed (every track draws from its own Philox stream keyed by the seed and its id).
    #[arg(long, default_value_t = 12345)]
    seed: u64,
    /// Production cut for γ, e⁻ and e⁺, as a range [mm] (Geant4's default 1 mm; converted to an
    /// energy threshold per material and particle).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    cut_mm: f64,
    /// Output directory (summary.json, run.json, profile.parquet, events.parquet, profile.png).
    #[arg(long, short, default_value = "em-shower")]
    output: PathBuf,
    #[command(flatten)]
    split: crate::merge::SplitArgs,
    #[command(flatten)]
    common: CommonArgs,
}

pub fn run_command(cmd: &ShowerCommand, force: bool) -> Result<()> {
    match cmd {
        ShowerCommand::Testem3(a) => shower(a, CalorimeterChoice::Testem3, force),
        ShowerCommand::Calorimeter { file, args } => shower(args, CalorimeterChoice::File(file.clone()), force),
        ShowerCommand::Run(a) => detector(a, force),
    }
}

fn detector(a: &DetectorArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let opts = DetectorOptions {
        primary: a.primary.parse()?,
        energy: a.energy,
        position_mm: engine::three("position", &a.position)?,
        direction: engine::three("direction", &a.direction)?,
        events: a.events,
        seed: a.seed,
        cut_mm: a.cut_mm,
        field_t: engine::three("field", &a.field)?,
        field_map: a.field_map.clone(),
        sensitive: a.sensitive.clone(),
        accuracy: FieldAccuracy::with(a.delta_chord, a.delta_intersection, a.field_epsilon),
    };
    let req = DetectorShower::new(&a.file, &opts)?;
    req.check_device(&ctl)?;
    let out = engine::prepare_output(&a.output, force, req.inputs())?;
    println!(
        "em run: {} events of {} MeV {} from {} mm along {} into {} ({} volume instances), cuts {} mm, field {} T",
        a.events,
        a.energy,
        opts.primary.name(),
        fmt3(opts.position_mm),
        fmt3(opts.direction),
        a.file.display(),
        req.volumes(),
        a.cut_mm,
        fmt3(opts.field_t)
    );
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    for note in r.save(out, a.plot, &command_line())? {
        eprintln!("warning: {note}");
    }
    for (name, vacuum, _, mean, err) in r.per_material() {
        if vacuum {
            println!("  {name:<14} vacuum");
        } else {
            println!("  {name:<14} {mean:>9.3} ± {err:.3} MeV per event");
        }
    }
    println!(
        "  escaped {:.3} MeV per event; transport {:.2} s on {}: {:.3e} track-steps/s; energy balance worst {:.1e}",
        r.run.escaped_mean(),
        r.transport_seconds,
        r.device,
        r.track_steps_per_second(),
        r.run.worst_balance
    );
    for (name, n, e) in r.hits_per_volume() {
        println!("  hits in {name}: {n} ({e:.3} MeV in all)");
    }
    println!(
        "  output: {}/{{volumes.parquet, {}summary.json, run.json{}}}",
        a.output.display(),
        if r.physics.any_sensitive() { "hits.parquet, " } else { "" },
        if a.plot && a.output.join("volumes.png").is_file() {
            ", volumes.png"
        } else {
            ""
        }
    );
    Ok(())
}

fn fmt3(v: [f64; 3]) -> String {
    format!("{},{},{}", v[0], v[1], v[2])
}

fn shower(a: &ShowerArgs, calorimeter: CalorimeterChoice, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let opts = ShowerOptions {
        primary: a.primary.parse()?,
        energy: a.energy,
        events: a.events,
        seed: a.seed,
        cut_mm: a.cut_mm,
        split: a.split.split()?,
        command: command_line(),
    };
    let kind = match calorimeter {
        CalorimeterChoice::Testem3 => "testem3",
        CalorimeterChoice::File(_) => "calorimeter",
    };
    let req = Shower::new(calorimeter, &opts)?;
    let out = engine::prepare_output(&a.output, force, req.inputs())?;
    let cal = req.calorimeter();
    println!(
        "em {kind}: {} events of {} MeV {} into {} ({} × {} layers, {} cm wide), cuts {} mm",
        a.events,
        a.energy,
        opts.primary.name(),
        cal.name,
        cal.repeat,
        cal.layers.len(),
        cal.transverse,
        a.cut_mm
    );
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    for m in &r.physics.materials {
        println!(
            "  {:<14} thresholds γ {:.5} keV, e- {:.5} keV, e+ {:.5} keV",
            m.material.name,
            m.cuts.gamma * 1e3,
            m.cuts.electron * 1e3,
            m.cuts.positron * 1e3
        );
    }
    for note in r.save(out, true, &command_line())? {
        eprintln!("warning: {note}");
    }
    print_result(&r, &a.output);
    a.split.note();
    Ok(())
}

/// `warpdrive merge` of shower jobs: the unsplit run's directory.
pub fn merge(jobs: &[PathBuf], output: &std::path::Path, plot: bool, force: bool) -> Result<()> {
    let ctl = crate::process_control();
    let out = engine::prepare_output(output, force, jobs)?;
    let r = engine::merge_showers(jobs, &ctl)?;
    println!("merged: {} em shower jobs, {} events", jobs.len(), r.run.events.len());
    for note in r.save(out, plot, &command_line())? {
        eprintln!("warning: {note}");
    }
    print_result(&r, output);
    Ok(())
}

/// The result lines (Geant4 10.3's numbers beside ours for its set-up).
fn print_result(r: &warpdrive_em::engine::ShowerResult, output: &std::path::Path) {
    let reference = r.is_testem3_reference();
    for m in r.per_material() {
        let g4 = r
            .geant4(&m.name)
            .map(|[(mean, rms), (b_mean, _)]| format!("   (Geant4 10.3: {mean} MeV, RMS {rms} MeV; biased run {b_mean})"))
            .unwrap_or_default();
        println!(
            "  {:<14} {:>9.3} ± {:.3} MeV per event, RMS {:.3} MeV{g4}",
            m.name, m.edep_mean_mev, m.edep_mean_error_mev, m.edep_rms_mev
        );
    }
    let created = r.run.created();
    println!(
        "  created per event: {:.1} γ, {:.1} e-, {:.2} e+{}",
        created[0],
        created[1],
        created[2],
        if reference {
            let [g, e, p] = UNBIASED.created;
            format!("   (Geant4 10.3: {g} γ, {e} e-, {p} e+)")
        } else {
            String::new()
        }
    );
    let by: Vec<String> = CREATORS
        .iter()
        .zip(r.run.created_by())
        .map(|(k, v)| format!("{k} {v:.1}"))
        .collect();
    println!("  created by: {}", by.join(", "));
    let tl: Vec<String> = r
        .physics
        .calorimeter
        .materials
        .iter()
        .zip(r.run.track_length())
        .map(|(m, v)| format!("{} {v:.2} cm", m.name))
        .collect();
    println!(
        "  charged track length per event: {}{}",
        tl.join(", "),
        if reference {
            "   (Geant4 10.3: Lead 52.2 cm, liquidArgon 100 cm)"
        } else {
            ""
        }
    );
    let (charged, neutral) = r.run.steps();
    println!(
        "  steps per event: {charged:.1} charged, {neutral:.1} neutral; escaped {:.3} MeV per event",
        r.run.escaped()
    );
    println!(
        "  tables {:.2} s{}; transport {:.2} s on {}: {:.1} events/s, {:.3e} track-steps/s; energy balance worst {:.1e}",
        r.tables_seconds,
        if r.tables_cached { " (cached)" } else { "" },
        r.transport_seconds,
        r.device,
        r.events_per_second(),
        r.track_steps_per_second(),
        r.run.worst_balance()
    );
    println!(
        "  output: {}/{{summary.json, run.json, profile.parquet, events.parquet, profile.png}}",
        output.display()
    );
}
