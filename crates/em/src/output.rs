//! Outputs of `warpdrive em`: the energy-deposition profile (Parquet and PNG) and a JSON summary.

use crate::transport::{RunResult, TallyGrid};
use std::path::Path;
use warpdrive_core::plot::plotters::prelude::*;
use warpdrive_core::plot::{axis, colour, log_axis, write_png, PlotError, FONT};
use warpdrive_core::table::{Column, Table};

/// A reference profile: one value per line (e.g. Geant4's MeV/cm per 1-cm bin), `#` comments
/// allowed; a bad value is an error naming file and line.
pub fn read_profile(path: &Path) -> Result<Vec<f64>, warpdrive_core::InputError> {
    use warpdrive_core::error::{data_lines, parse_f64, read_text};
    let text = read_text(path)?;
    data_lines(&text).map(|(line, l)| parse_f64(path, line, "edep", Some(l))).collect()
}

/// `edep.parquet`: bin, z range [cm], energy per primary [MeV] and per cm [MeV/cm].
pub fn write_profile(path: &Path, grid: &TallyGrid, r: &RunResult, meta: &[(String, String)]) -> Result<(), String> {
    profile_table(grid, r, meta).write_parquet(path).map_err(|e| e.to_string())
}

/// The table `write_profile` writes (bin, z_low_cm, z_high_cm, edep_mev, edep_mev_per_cm).
#[must_use]
pub fn profile_table(grid: &TallyGrid, r: &RunResult, meta: &[(String, String)]) -> Table {
    let p = r.profile();
    let mut t = Table::default();
    t.push("bin", Column::I32((0..grid.size as i32).collect()));
    t.push(
        "z_low_cm",
        Column::F64((0..grid.size).map(|b| grid.front + b as f64 * grid.delta).collect()),
    );
    t.push(
        "z_high_cm",
        Column::F64((0..grid.size).map(|b| grid.front + (b + 1) as f64 * grid.delta).collect()),
    );
    t.push("edep_mev", Column::F64(p.clone()));
    t.push("edep_mev_per_cm", Column::F64(p.iter().map(|e| e / grid.delta).collect()));
    for (k, v) in meta {
        t.meta(k, v.clone());
    }
    t
}

/// `edep.png`: MeV/cm per primary vs z (log scale), with an optional reference profile
/// (label, MeV/cm per 1-cm bin from z = 0, e.g. Geant4's). An axis that would not be finite
/// gives a [`PlotError`] with `skipped` set and no file.
pub fn plot_profile(path: &Path, grid: &TallyGrid, r: &RunResult, title: &str, reference: Option<(&str, &[f64])>) -> Result<(), PlotError> {
    let p: Vec<f64> = r.profile().iter().map(|e| e / grid.delta).collect();
    write_png(path, (1000, 620), |area| {
        let xmax = grid.front + grid.size as f64 * grid.delta;
        let ymax = p.iter().copied().fold(1e-6, f64::max) * 2.0;
        let ymin = (ymax * 1e-6).max(1e-7);
        // Ranges from the user's tally options: not finite (a 1e308 cm bin) → the plot is skipped.
        let x = axis("z", grid.front, xmax)?;
        let y = log_axis("energy", ymin, ymax)?;
        let mut ch = ChartBuilder::on(area)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(x, y.log_scale())?;
        ch.configure_mesh()
            .x_desc("z [cm]")
            .y_desc("energy deposited [MeV/cm per primary]")
            .light_line_style(WHITE)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()?;
        let pts = p
            .iter()
            .enumerate()
            .filter(|(_, &v)| v > ymin)
            .map(|(b, &v)| (grid.front + (b as f64 + 0.5) * grid.delta, v));
        ch.draw_series(LineSeries::new(pts, colour(0).stroke_width(2)))?
            .label(format!("warpdrive ({} tracks)", r.tracks))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], colour(0).stroke_width(2)));
        if let Some((label, refp)) = reference {
            let pts = refp
                .iter()
                .enumerate()
                .filter(|(_, &v)| v > ymin)
                .map(|(b, &v)| (b as f64 + 0.5, v));
            ch.draw_series(LineSeries::new(pts, colour(1).stroke_width(1)))?
                .label(label.to_string())
                .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], colour(1).stroke_width(1)));
        }
        ch.configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()?;
        Ok(())
    })
}
