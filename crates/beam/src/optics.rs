//! Linear optics along the line: the beam's second-moment matrix carried through the elements'
//! R matrices (Σ ← R Σ Rᵀ, sliced inside elements), and the PNG of beam sizes along the line
//! with the tracked sizes at the watch points on top.

use crate::lattice::{Kind, Lattice};
use crate::map::Element;
use std::path::Path;

/// (s [m], σx [m], σy [m]) along the line from the initial moments `sigma0` (first pass).
/// The slice map of each distinct element is computed once.
pub fn envelope(lattice: &Lattice, sigma0: &[[f64; 6]; 6], slices_per_metre: f64) -> Vec<(f64, f64, f64)> {
    let mut slice_maps: std::collections::HashMap<&str, [[f64; 6]; 6]> = Default::default();
    let mut sig = *sigma0;
    let mut s = 0.0;
    let mut out = vec![(0.0, sig[0][0].max(0.0).sqrt(), sig[2][2].max(0.0).sqrt())];
    for e in &lattice.elements {
        let (element, tilt) = match &e.kind {
            Kind::Map { element, tilt, .. } => (*element, *tilt),
            Kind::ExactDrift { l } => (Element::Drift { l: *l }, 0.0),
            Kind::Lsc(p) => (Element::Drift { l: p.l }, 0.0),
            Kind::Collimator { l, .. } => (Element::Drift { l: *l }, 0.0),
            _ => continue,
        };
        let l = element.length();
        if l == 0.0 {
            continue;
        }
        let sliceable = matches!(element, Element::Drift { .. } | Element::Quad { .. } | Element::Sext { .. });
        let n = if sliceable {
            ((l * slices_per_metre).ceil() as usize).max(1)
        } else {
            1
        };
        let piece = match element {
            Element::Drift { .. } => Element::Drift { l: l / n as f64 },
            Element::Quad { k1, .. } => Element::Quad { l: l / n as f64, k1 },
            Element::Sext { k2, .. } => Element::Sext { l: l / n as f64, k2 },
            other => other,
        };
        let r = *slice_maps.entry(e.name.as_str()).or_insert_with(|| piece.map2_with(tilt, 1).r);
        for _ in 0..n {
            sig = transport(&r, &sig);
            s += l / n as f64;
            out.push((s, sig[0][0].max(0.0).sqrt(), sig[2][2].max(0.0).sqrt()));
        }
    }
    out
}

fn transport(r: &[[f64; 6]; 6], sig: &[[f64; 6]; 6]) -> [[f64; 6]; 6] {
    let mut rs = [[0.0; 6]; 6];
    for i in 0..6 {
        for j in 0..6 {
            rs[i][j] = (0..6).map(|k| r[i][k] * sig[k][j]).sum();
        }
    }
    let mut out = [[0.0; 6]; 6];
    for i in 0..6 {
        for j in 0..6 {
            out[i][j] = (0..6).map(|k| rs[i][k] * r[j][k]).sum();
        }
    }
    out
}

/// A tracked beam size at a watch point: (s, σx, σy, label).
pub type WatchSize = (f64, f64, f64, String);

/// PNG of σx and σy along the line (linear envelope) with the tracked watch-point sizes.
pub fn plot_sizes(path: &Path, title: &str, env: &[(f64, f64, f64)], watches: &[WatchSize]) -> Result<(), warpdrive_core::plot::PlotError> {
    use warpdrive_core::plot::plotters::prelude::*;
    use warpdrive_core::plot::{colour, write_png, FONT};
    let smax = env.last().map_or(1.0, |e| e.0).max(1e-9);
    let ymax = env
        .iter()
        .flat_map(|e| [e.1, e.2])
        .chain(watches.iter().flat_map(|w| [w.1, w.2]))
        .fold(0.0f64, f64::max)
        .max(1e-12)
        * 1e3
        * 1.08;
    write_png(path, (1000, 560), |area| {
        let mut chart = ChartBuilder::on(area)
            .caption(title, (FONT, 22))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..smax, 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_desc("s along the line [m]")
            .y_desc("RMS beam size [mm]")
            .label_style((FONT, 15))
            .draw()?;
        for (k, (label, pick)) in [("σx (linear optics)", 0usize), ("σy (linear optics)", 1)].into_iter().enumerate() {
            let c = colour(k);
            chart
                .draw_series(LineSeries::new(
                    env.iter().map(|e| (e.0, 1e3 * if pick == 0 { e.1 } else { e.2 })),
                    c.stroke_width(2),
                ))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        }
        if !watches.is_empty() {
            for (k, label) in [(0usize, "σx tracked (watch)"), (1, "σy tracked (watch)")] {
                let c = colour(k);
                chart
                    .draw_series(
                        watches
                            .iter()
                            .map(|w| Circle::new((w.0, 1e3 * if k == 0 { w.1 } else { w.2 }), 5, c.filled())),
                    )?
                    .label(label)
                    .legend(move |(x, y)| Circle::new((x + 10, y), 5, c.filled()));
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 15))
            .draw()?;
        Ok(())
    })
}
