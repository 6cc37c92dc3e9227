//! Outputs of a shower run: the longitudinal profile per slab (Parquet) and per layer (PNG).

use super::run::ShowerRun;
use super::transport::{EventTally, ShowerPhysics};
use warpdrive_core::plot::plotters::prelude::*;
use warpdrive_core::plot::{axis, colour, write_png, PlotError, FONT};
use warpdrive_core::table::{Column, Table};

/// `profile.parquet`: one row per slab — slab, layer (period) number, position in the period,
/// material index (names in the metadata `em.materials`), z range [cm], mean and RMS of the
/// energy deposited per event [MeV].
#[must_use]
pub fn profile_table(run: &ShowerRun, phys: &ShowerPhysics, meta: &[(String, String)]) -> Table {
    let cal = &phys.calorimeter;
    let n = cal.slabs();
    let mean = run.profile();
    let events = run.events.len().max(1) as f64;
    let rms: Vec<f64> = (0..n)
        .map(|s| {
            let v = run.events.iter().map(|e| (e.edep_mev(s) - mean[s]).powi(2)).sum::<f64>() / events;
            v.sqrt()
        })
        .collect();
    let mut t = Table::default();
    t.push("slab", Column::I32((0..n as i32).collect()));
    t.push("layer", Column::I32((0..n).map(|s| cal.layer_of(s).1 as i32).collect()));
    t.push("position_in_layer", Column::I32((0..n).map(|s| cal.layer_of(s).0 as i32).collect()));
    t.push("material", Column::I32((0..n).map(|s| cal.material_index(s) as i32).collect()));
    t.push("z_low_cm", Column::F64((0..n).map(|s| cal.slab_z(s).0).collect()));
    t.push("z_high_cm", Column::F64((0..n).map(|s| cal.slab_z(s).1).collect()));
    t.push("edep_mean_mev", Column::F64(mean));
    t.push("edep_rms_mev", Column::F64(rms));
    let names: Vec<&str> = cal.materials.iter().map(|m| m.name.as_str()).collect();
    t.meta("em.materials", names.join(","));
    for (k, v) in meta {
        t.meta(k, v.clone());
    }
    t
}

/// `events.parquet`: one row per event — the event number, energy deposited in each material
/// (`edep_<name>_mev`), kinetic energy that left the calorimeter, created γ/e⁻/e⁺ and steps.
#[must_use]
pub fn events_table(run: &ShowerRun, phys: &ShowerPhysics, meta: &[(String, String)]) -> Table {
    let cal = &phys.calorimeter;
    let mut t = Table::default();
    let first = run.first as i64;
    t.push("event", Column::I64((first..first + run.events.len() as i64).collect()));
    for (m, mat) in cal.materials.iter().enumerate() {
        let v = run.events.iter().map(|e| super::run::edep_in_material(e, cal, m)).collect();
        t.push(&format!("edep_{}_mev", mat.name), Column::F64(v));
    }
    t.push("escaped_mev", Column::F64(run.events.iter().map(EventTally::escaped_mev).collect()));
    for (k, name) in ["gamma", "electrons", "positrons"].iter().enumerate() {
        t.push(
            &format!("created_{name}"),
            Column::I64(run.events.iter().map(|e| e.created[k] as i64).collect()),
        );
    }
    t.push(
        "charged_steps",
        Column::I64(run.events.iter().map(|e| e.charged_steps as i64).collect()),
    );
    t.push(
        "neutral_steps",
        Column::I64(run.events.iter().map(|e| e.neutral_steps as i64).collect()),
    );
    for (k, v) in meta {
        t.meta(k, v.clone());
    }
    t
}

/// `profile.png`: mean energy per event deposited in each layer (period), one line per material
/// and their sum, against the layer number; `reference` adds per-material points (label, values
/// per layer) when given.
pub fn plot_profile(path: &std::path::Path, run: &ShowerRun, phys: &ShowerPhysics, title: &str) -> Result<(), PlotError> {
    let cal = &phys.calorimeter;
    let mean = run.profile();
    let layers = cal.repeat;
    let nm = cal.materials.len();
    let mut per = vec![vec![0.0; layers]; nm + 1];
    for (s, v) in mean.iter().enumerate() {
        let layer = cal.layer_of(s).1;
        per[cal.material_index(s)][layer] += v;
        per[nm][layer] += v;
    }
    write_png(path, (1000, 620), |area| {
        let ymax = per[nm].iter().copied().fold(1e-9, f64::max) * 1.1;
        let (x, y) = (axis("layer", 0.0, layers as f64)?, axis("energy", 0.0, ymax)?);
        let mut ch = ChartBuilder::on(area)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(x, y)?;
        ch.configure_mesh()
            .x_desc("layer")
            .y_desc("energy deposited per event [MeV]")
            .light_line_style(WHITE)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()?;
        for (k, values) in per.iter().enumerate() {
            let label = if k < nm { cal.materials[k].name.clone() } else { "sum".to_string() };
            let c = colour(k);
            let pts = values.iter().enumerate().map(|(l, &v)| (l as f64 + 0.5, v));
            ch.draw_series(LineSeries::new(pts, c.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(2)));
        }
        ch.configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()?;
        Ok(())
    })
}
