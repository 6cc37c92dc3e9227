//! `autocorr.png`: TS vs θ for every energy cut with the trials' ±1σ band, and below it the
//! background distribution of each cut at its most significant bin with the observed count.

use crate::analysis::BinResult;
use crate::output::RunInfo;
use crate::trials::Background;
use std::path::Path;
use warpdrive_core::plot::plotters::prelude::*;
use warpdrive_core::plot::{colour, write_png, PlotError, FONT};

/// Draw the run's plot into `path`.
pub fn draw(path: &Path, info: &RunInfo, rows: &[BinResult], bg: &Background) -> Result<(), PlotError> {
    let nc = info.cut_labels.len();
    let nb = info.edges_deg.len();
    write_png(path, (1200, 900), |root| {
        let (top, bottom) = root.split_vertically(470);
        let finite: Vec<&BinResult> = rows.iter().filter(|r| r.ts.is_finite()).collect();
        let band = |r: &BinResult| if r.bg_mean > 0.0 { r.bg_std / r.bg_mean } else { 0.0 };
        let (mut lo, mut hi) = (0.98f64, 1.02f64);
        for r in &finite {
            lo = lo.min(r.ts).min(1.0 - band(r)).max(0.0);
            hi = hi.max(r.ts).max((1.0 + band(r)).min(2.0 * r.ts.max(1.0)));
        }
        let pad = 0.05 * (hi - lo);
        let xmax = info.edges_deg[nb - 1] * 1.02;
        let mut chart = ChartBuilder::on(&top)
            .caption(
                format!("Two-point autocorrelation: {} events, {} trials", info.n_events, info.n_trials()),
                (FONT, 22),
            )
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..xmax, (lo - pad)..(hi + pad))?;
        chart
            .configure_mesh()
            .x_desc("θ [deg]  (cumulative: pairs with separation ≤ θ)")
            .y_desc("TS = N_obs / <N_bg>")
            .light_line_style(WHITE)
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .draw()?;
        chart.draw_series(LineSeries::new([(0.0, 1.0), (xmax, 1.0)], BLACK.mix(0.4)))?;
        for c in 0..nc {
            let col = colour(c);
            let cut: Vec<&BinResult> = finite.iter().copied().filter(|r| r.cut == c).collect();
            // ±1σ of the background, relative to its mean.
            let upper: Vec<(f64, f64)> = cut.iter().map(|r| (r.theta_deg, 1.0 + band(r))).collect();
            let lower: Vec<(f64, f64)> = cut.iter().rev().map(|r| (r.theta_deg, (1.0 - band(r)).max(0.0))).collect();
            chart.draw_series(std::iter::once(Polygon::new(
                upper.into_iter().chain(lower).collect::<Vec<_>>(),
                col.mix(0.12).filled(),
            )))?;
            chart
                .draw_series(LineSeries::new(cut.iter().map(|r| (r.theta_deg, r.ts)), col.stroke_width(2)))?
                .label(format!("{} ({} events)", info.cut_labels[c], info.cut_events[c]))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], col.stroke_width(2)));
            chart.draw_series(cut.iter().map(|r| Circle::new((r.theta_deg, r.ts), 3, col.filled())))?;
        }
        chart
            .configure_series_labels()
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;

        let panels = bottom.split_evenly((1, nc.max(1)));
        for (c, panel) in panels.iter().enumerate() {
            // The bin of this cut with the smallest trial p-value (largest TS on ties).
            let Some(r) = rows
                .iter()
                .filter(|r| r.cut == c && r.n_trials > 0)
                .min_by(|a, b| a.p_trials.total_cmp(&b.p_trials).then(b.ts.total_cmp(&a.ts)))
            else {
                continue;
            };
            let m = &bg.freq[c * nb + r.bin];
            let (Some((&cmin, _)), Some((&cmax, _))) = (m.first_key_value(), m.last_key_value()) else {
                continue;
            };
            let (xmin, xmax) = (cmin.min(r.n_obs) as f64, cmax.max(r.n_obs) as f64);
            let nbins = 40usize;
            let width = ((xmax - xmin) / nbins as f64).max(1.0);
            let mut h = vec![0u64; nbins + 1];
            for (&v, &n) in m {
                h[(((v as f64 - xmin) / width) as usize).min(nbins)] += n;
            }
            let ymax = *h.iter().max().unwrap_or(&1) as f64 * 1.15;
            let mut ch = ChartBuilder::on(panel)
                .caption(format!("{}, θ ≤ {}°", info.cut_labels[c], r.theta_deg), (FONT, 16))
                .margin(10)
                .x_label_area_size(40)
                .y_label_area_size(55)
                .build_cartesian_2d(xmin - width..xmax + 2.0 * width, 0.0..ymax.max(1.0))?;
            ch.configure_mesh()
                .x_labels(3)
                .y_labels(5)
                .light_line_style(WHITE)
                .x_label_formatter(&|v| format!("{v:.0}"))
                .y_label_formatter(&|v| format!("{v:.0}"))
                .x_desc("pairs in trial")
                .y_desc("trials")
                .label_style((FONT, 13))
                .axis_desc_style((FONT, 14))
                .draw()?;
            let col = colour(c);
            ch.draw_series(h.iter().enumerate().map(|(i, &n)| {
                let x0 = xmin + i as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width, n as f64)], col.mix(0.5).filled())
            }))?;
            let x = r.n_obs as f64;
            ch.draw_series(LineSeries::new([(x, 0.0), (x, ymax)], RED.stroke_width(2)))?;
            let p = if r.n_beyond == 0 {
                format!("p < 1/{}", r.n_trials)
            } else {
                format!("p = {:.3}", r.p_trials)
            };
            ch.draw_series(std::iter::once(Text::new(
                format!("observed {} ({p})", r.n_obs),
                (xmin, ymax * 0.97),
                (FONT, 13),
            )))?;
        }
        Ok(())
    })
}
