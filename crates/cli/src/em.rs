//! `warpdrive em`: argument parsing and output only; the run is
//! `warpdrive_em::engine::KleinNishina`.

use crate::{command_line, CommonArgs};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use warpdrive_core::progress::Bar;
use warpdrive_em::engine::{self, KleinNishina, KleinNishinaOptions, MaterialChoice};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EmArgs {
    /// EM showers in a calorimeter (without a subcommand: the Klein–Nishina mini-app).
    #[command(subcommand)]
    pub shower: Option<crate::em_shower::ShowerCommand>,
    /// Primary photon energy [MeV] (photons start at the origin along +z).
    #[arg(long, default_value_t = 100.0, allow_hyphen_values = true)]
    energy: f64,
    /// Number of primary photons.
    #[arg(long, default_value_t = 1 << 20)]
    tracks: u64,
    /// Random seed (track i draws from the Philox stream (seed, i)).
    #[arg(long, default_value_t = 12345)]
    seed: u64,
    /// Material: a built-in NIST name (G4_Al, G4_Pb, G4_lAr, G4_WATER, G4_AIR, … ; 'aluminium' is
    /// G4_Al; the list is in docs/em.md) or a TOML file.
    #[arg(long, default_value = "G4_Al")]
    material: std::ffi::OsString,
    /// Tally: lower edge of the first z bin [cm].
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    tally_front: f64,
    /// Tally: bin width [cm] (at least 1e-6).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    tally_width: f64,
    /// Tally: number of bins.
    #[arg(long, default_value_t = 2048)]
    tally_bins: u64,
    /// Track slots in flight at once.
    #[arg(long)]
    slots: Option<u64>,
    /// Capacity of the hit and secondary stacks per iteration (default: one per slot).
    #[arg(long)]
    stack_capacity: Option<u64>,
    /// Overlay a reference profile on the plot (one MeV/cm value per 1-cm bin per line, e.g.
    /// $WARPDRIVE_DATA/em/g4-edep-100MeV-60k-1.0cm.txt).
    #[arg(long)]
    compare: Option<PathBuf>,
    /// Output directory (edep.parquet, edep.png, summary.json, run.json).
    #[arg(long, short, default_value = "em-out")]
    output: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn em(a: &EmArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let opts = KleinNishinaOptions {
        energy: a.energy,
        tracks: a.tracks,
        seed: a.seed,
        material: MaterialChoice::parse(&a.material),
        tally_front: a.tally_front,
        tally_width: a.tally_width,
        tally_bins: a.tally_bins,
        slots: a.slots,
        stack_capacity: a.stack_capacity,
        compare: a.compare.clone(),
    };
    let req = KleinNishina::new(&opts)?;
    let out = engine::prepare_output(&a.output, force, req.inputs())?;
    let m = req.material();
    println!(
        "em: {} photons of {} MeV along +z in {} (ρ = {} g/cm³), Compton only, kill below 10 keV",
        a.tracks, a.energy, m.name, m.density
    );
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    for note in r.save(out, true, &command_line())? {
        eprintln!("warning: {note}");
    }
    let res = &r.result;
    println!(
        "steps:           {} ({:.3} per track); result checksum {}",
        res.steps,
        res.steps_per_track(),
        res.checksum()
    );
    // Geant4's numbers beside ours only when this is their case (100 MeV photons in aluminium).
    let g4 = r.geant4_reference();
    println!(
        "mean depth:      {:.2} cm{}",
        res.mean_depth(),
        g4.map_or(String::new(), |g| format!(" (Geant4 for 100 MeV in Al: {:.2} cm)", g.mean_depth_cm))
    );
    println!(
        "beyond 100/200/500 cm: {:.3} / {:.3} / {:.3} MeV per primary{}",
        r.energy_beyond(100.0),
        r.energy_beyond(200.0),
        r.energy_beyond(500.0),
        g4.map_or(String::new(), |g| {
            let [a, b, c] = g.beyond_mev.map(|(_, e)| e);
            format!(" (Geant4: {a:.2} / {b:.2} / {c:.2})")
        })
    );
    println!(
        "transport:       {:.2} s, {:.3e} track-steps/s on {}",
        r.seconds,
        r.track_steps_per_second(),
        r.device
    );
    println!(
        "output:          {}/{{edep.parquet, edep.png, summary.json, run.json}}",
        a.output.display()
    );
    Ok(())
}
