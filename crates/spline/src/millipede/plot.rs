//! `energies.png` of an unfolding: the energy of every source with its 1σ bar against the
//! distance along the track.

use std::path::Path;
use warpdrive_core::plot::plotters::prelude::*;
use warpdrive_core::plot::{colour, write_png, FONT};

/// Draw the energies `e` ± `s` [GeV] at distances `along` [m] into `path`. Infinite σ (a source
/// no DOM sees) draws no bar.
pub fn energies(path: &Path, along: &[f64], e: &[f64], s: &[f64]) -> Result<(), String> {
    let top = e
        .iter()
        .zip(s)
        .map(|(a, b)| a + if b.is_finite() { *b } else { 0.0 })
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.1;
    let (lo, hi) = (
        along.first().copied().unwrap_or(0.0) - 10.0,
        along.last().copied().unwrap_or(0.0) + 10.0,
    );
    write_png(path, (900, 500), |area| {
        let mut ch = ChartBuilder::on(area)
            .caption("Millipede unfolding: energy per source", (FONT, 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(lo..hi, 0.0..top)?;
        ch.configure_mesh()
            .x_desc("distance along the track [m]")
            .y_desc("energy [GeV]")
            .label_style((FONT, 14))
            .draw()?;
        let c = colour(0);
        ch.draw_series(along.iter().zip(e).zip(s).map(|((x, y), sg)| {
            let sg = if sg.is_finite() { *sg } else { 0.0 };
            PathElement::new(vec![(*x, (y - sg).max(0.0)), (*x, y + sg)], c.stroke_width(2))
        }))?;
        ch.draw_series(along.iter().zip(e).map(|(x, y)| Circle::new((*x, *y), 4, c.filled())))?;
        Ok(())
    })
    .map_err(|e| e.to_string())
}
