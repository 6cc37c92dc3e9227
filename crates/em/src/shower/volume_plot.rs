//! `volumes.png` of `warpdrive em run --plot`: the mean energy deposited per event in each volume
//! instance, a horizontal bar per volume (log scale), coloured by material, labelled with its
//! summary.json key ([`super::detector::DetectorPhysics::volume_keys`]).

use std::path::Path;
use warpdrive_core::plot::plotters::prelude::*;
use warpdrive_core::plot::{colour, log_axis, write_png, PlotError, FONT};

/// Most volumes drawn: the ones with the largest deposits, shown in slot (depth-first) order.
pub const MAX_BARS: usize = 40;

/// One bar: the volume's key, its material's name and its mean deposit per event [MeV].
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub key: String,
    pub material: String,
    pub mean_mev: f64,
}

/// The bars drawn: those with a deposit, at most [`MAX_BARS`] of the largest, in their given
/// (slot) order.
#[must_use]
pub fn chosen(bars: &[Bar]) -> Vec<&Bar> {
    let mut idx: Vec<usize> = (0..bars.len()).filter(|&i| bars[i].mean_mev > 0.0).collect();
    if idx.len() > MAX_BARS {
        idx.sort_by(|&a, &b| bars[b].mean_mev.total_cmp(&bars[a].mean_mev).then(a.cmp(&b)));
        idx.truncate(MAX_BARS);
        idx.sort_unstable();
    }
    idx.into_iter().map(|i| &bars[i]).collect()
}

/// Draw the bars into `path`; no volume with a deposit (a log axis of nothing) gives a
/// [`PlotError`] with `skipped` set and no file.
pub fn plot_volumes(path: &Path, title: &str, bars: &[Bar]) -> Result<(), PlotError> {
    let shown = chosen(bars);
    let n = shown.len();
    let height = 140 + 22 * n.max(4) as u32;
    let mut materials: Vec<&str> = Vec::new();
    for b in &shown {
        if !materials.contains(&b.material.as_str()) {
            materials.push(&b.material);
        }
    }
    write_png(path, (1000, height), |area| {
        let hi = shown.iter().map(|b| b.mean_mev).fold(0.0, f64::max) * 3.0;
        let lo = shown.iter().map(|b| b.mean_mev).fold(f64::INFINITY, f64::min) / 3.0;
        let x = log_axis("energy", lo, hi)?;
        let label_width = shown.iter().map(|b| b.key.chars().count()).max().unwrap_or(4) as u32 * 8 + 20;
        let mut ch = ChartBuilder::on(area)
            .caption(title, (FONT, 18))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(label_width.min(420))
            .build_cartesian_2d(x.log_scale(), (0..n as i32 - 1).into_segmented())?;
        // (0..=n − 1: n rows, the range being inclusive.)
        let label = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) if (*i as usize) < n => shown[n - 1 - *i as usize].key.clone(),
            _ => String::new(),
        };
        ch.configure_mesh()
            .x_desc("mean energy deposited per event [MeV]")
            .y_labels(n)
            .y_label_formatter(&label)
            .disable_y_mesh()
            .light_line_style(WHITE)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 15))
            .draw()?;
        for (m, name) in materials.iter().enumerate() {
            // The first volume at the top: row n − 1 − i.
            let rects = shown.iter().enumerate().filter(|(_, b)| b.material == *name).map(|(i, b)| {
                let row = (n - 1 - i) as i32;
                Rectangle::new(
                    [(lo, SegmentValue::Exact(row)), (b.mean_mev, SegmentValue::Exact(row + 1))],
                    colour(m).filled(),
                )
            });
            ch.draw_series(rects)?
                .label(name.to_string())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour(m).filled()));
        }
        ch.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(key: &str, mean: f64) -> Bar {
        Bar {
            key: key.into(),
            material: "M".into(),
            mean_mev: mean,
        }
    }

    /// Volumes without deposit are left out; of more than MAX_BARS the largest are kept, in
    /// their order.
    #[test]
    fn the_largest_deposits_are_drawn_in_slot_order() {
        let bars: Vec<Bar> = (0..100)
            .map(|i| bar(&format!("v{i}"), if i % 2 == 0 { 0.0 } else { f64::from(i) }))
            .collect();
        let keys: Vec<&str> = chosen(&bars).iter().map(|b| b.key.as_str()).collect();
        let want: Vec<String> = (20..100).filter(|i| i % 2 == 1).map(|i| format!("v{i}")).collect();
        assert_eq!(keys, want);
        let dir = std::env::temp_dir().join(format!("wd-volume-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("v.png");
        plot_volumes(&png, "t", &bars).unwrap();
        assert!(std::fs::metadata(&png).unwrap().len() > 1000);
        // Nothing deposited: skipped, no file.
        let e = plot_volumes(&dir.join("none.png"), "t", &[bar("a", 0.0)]).unwrap_err();
        assert!(e.skipped && !dir.join("none.png").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
