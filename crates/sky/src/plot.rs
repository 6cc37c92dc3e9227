//! `autocorr.png` ([`draw`]) and `inject.png` ([`draw_injection`]). `autocorr.png`: TS vs θ for every energy cut with the trials' ±1σ band, and below it the
//! background distribution of each cut at its most significant bin with the observed count.

use crate::analysis::BinResult;
use crate::output::RunInfo;
use crate::trials::Background;
use std::collections::BTreeMap;
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

/// One value of a row of an injection run.
type RowValue = fn(&crate::sensitivity::Row) -> f64;

/// The cell an injection plot shows: the best 5σ discovery cell of the scan, else the cell with
/// the largest fraction beyond 5σ at the strongest injection (lowest index on ties).
#[must_use]
pub fn injection_cell(rows: &[crate::sensitivity::Row], scan: &crate::sensitivity::Scan, cells: usize, strengths: usize) -> usize {
    if let Some(c) = scan.best_discovery_5sigma {
        return c.cell;
    }
    let last = &rows[(strengths - 1) * cells..strengths * cells];
    last.iter()
        .enumerate()
        .max_by(|a, b| a.1.frac_5sigma.total_cmp(&b.1.frac_5sigma).then(b.0.cmp(&a.0)))
        .map_or(0, |(k, _)| k)
}

/// `inject.png` in the style of the seed's Fig. 3: the distributions of TS = N/⟨N_bg⟩ of the
/// background and of every injected strength in one (cut, bin), with the background's median
/// and 5σ threshold, and beside it the fractions of signal trials above the median and beyond
/// 3σ and 5σ against the number of sources (the sensitivity curve).
pub fn draw_injection(
    path: &Path,
    r: &crate::engine::InjectResult,
    rows: &[crate::sensitivity::Row],
    scan: &crate::sensitivity::Scan,
) -> Result<(), PlotError> {
    use warpdrive_core::plot::{axis, log_axis};
    let nb = r.info.edges_deg.len();
    let cells = r.info.cut_labels.len() * nb;
    let k = injection_cell(rows, scan, cells, r.sources.len());
    let row0 = &rows[k];
    let mean = row0.bg_mean;
    write_png(path, (1400, 600), |root| {
        let (left, right) = root.split_horizontally(820);
        let mut dists: Vec<(String, &BTreeMap<u64, u64>, u64)> = vec![("background".to_string(), &r.bg.freq[k], r.bg.trials)];
        for (i, &n) in r.sources.iter().enumerate() {
            dists.push((format!("{n} × {} events", r.per_source), &r.signal[i].freq[k], r.signal[i].trials));
        }
        let lo = dists.iter().filter_map(|d| d.1.keys().next()).min().copied().unwrap_or(0) as f64;
        let hi = dists.iter().filter_map(|d| d.1.keys().next_back()).max().copied().unwrap_or(0) as f64;
        let hi = hi.max(row0.threshold_5sigma.count);
        let nbins = 60usize;
        let width = ((hi - lo) / nbins as f64).max(1.0);
        let tmax = dists.iter().map(|d| d.2).max().unwrap_or(1).max(1) as f64;
        let xr = axis("TS", (lo - width) / mean, (hi + 2.0 * width) / mean)?;
        let yr = log_axis("fraction of trials", 0.5 / tmax, 1.5)?;
        let mut ch = ChartBuilder::on(&left)
            .caption(
                format!(
                    "TS distributions, {}, θ ≤ {}° ({} background trials)",
                    r.info.cut_labels[k / nb],
                    r.info.edges_deg[k % nb],
                    r.bg.trials
                ),
                (FONT, 19),
            )
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(xr, yr.log_scale())?;
        ch.configure_mesh()
            .light_line_style(WHITE)
            .x_desc("TS = N(≤θ) / <N_bg>")
            .y_desc("fraction of trials")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()?;
        for (i, (label, m, t)) in dists.iter().enumerate() {
            let col = if i == 0 { BLACK } else { colour(i - 1) };
            let mut h = vec![0u64; nbins + 2];
            for (&v, &n) in *m {
                h[(((v as f64 - lo) / width) as usize).min(nbins + 1)] += n;
            }
            // A step line; empty bins sit on the axis' floor (the log scale has no zero).
            let floor = 0.5 / tmax;
            let pts: Vec<(f64, f64)> = h
                .iter()
                .enumerate()
                .flat_map(|(j, &n)| {
                    let x0 = (lo + j as f64 * width) / mean;
                    let f = if n > 0 { n as f64 / *t as f64 } else { floor };
                    [(x0, f), (x0 + width / mean, f)]
                })
                .collect();
            ch.draw_series(LineSeries::new(pts, col.stroke_width(2)))?
                .label(label.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], col.stroke_width(2)));
        }
        for (x, label) in [
            (row0.bg_median as f64, "background median"),
            (row0.threshold_5sigma.count, "background 5σ"),
        ] {
            ch.draw_series(LineSeries::new(
                [(x / mean, 0.5 / tmax), (x / mean, 1.5)],
                BLACK.mix(0.5).stroke_width(1),
            ))?;
            ch.draw_series(std::iter::once(Text::new(label.to_string(), (x / mean, 0.9), (FONT, 12))))?;
        }
        ch.configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;

        let smax = *r.sources.last().unwrap_or(&1) as f64;
        let mut ch = ChartBuilder::on(&right)
            .caption("fraction of injected trials vs sources", (FONT, 19))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(axis("sources", 0.0, smax * 1.05)?, 0.0..1.05)?;
        ch.configure_mesh()
            .light_line_style(WHITE)
            .x_desc(format!("sources N ({} events each)", r.per_source))
            .y_desc("fraction of trials")
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()?;
        for (t, label) in [(0.9, "90 %"), (0.5, "50 %")] {
            ch.draw_series(LineSeries::new([(0.0, t), (smax * 1.05, t)], BLACK.mix(0.3)))?;
            ch.draw_series(std::iter::once(Text::new(label.to_string(), (0.0, t + 0.01), (FONT, 12))))?;
        }
        let series: [(&str, RowValue); 3] = [
            ("> background median", |x| x.frac_median),
            ("≥ background 3σ", |x| x.frac_3sigma),
            ("≥ background 5σ", |x| x.frac_5sigma),
        ];
        for (j, (label, g)) in series.into_iter().enumerate() {
            let col = colour(j + 3);
            let pts: Vec<(f64, f64)> = (0..r.sources.len())
                .map(|i| (r.sources[i] as f64, g(&rows[i * cells + k])))
                .collect();
            ch.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], col.stroke_width(2)));
            ch.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, col.filled())))?;
        }
        ch.configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::LowerRight)
            .draw()?;
        Ok(())
    })
}
