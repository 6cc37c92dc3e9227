//! PNG plots of run outputs. Drawing uses `plotters` with a font compiled into the binary
//! (Ubuntu Light from `epaint_default_fonts`), so plots render the same on a batch node without
//! system fonts. Files are written to a temporary name and renamed when complete.
//!
//! Axis ranges come from run outputs, which can be anything a user's options make them (a tally
//! bin of 1e308 cm, a profile that overflows to infinity). plotters spins forever or allocates
//! without bound on a non-finite axis, so every plotted range goes through [`axis`] or
//! [`log_axis`]: a range that is not finite (or empty) makes [`write_png`] return a
//! [`PlotError`] with `skipped` set — nothing written — and the caller goes on without the plot
//! and tells the user why.

use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

pub use plotters;

/// The font family name to use in `TextStyle`s (registered by [`write_png`]).
pub const FONT: &str = "sans-serif";

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font shipped by the crate; failure would be a build bug.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT);
    });
}

#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot draw plot: {message}")]
pub struct PlotError {
    pub path: String,
    pub message: String,
    /// The plot was not drawn because an axis range is not finite ([`axis`]): nothing was
    /// written, and the run's other outputs are still valid.
    pub skipped: bool,
}

/// An axis range that cannot be drawn (see the module documentation).
#[derive(Debug, thiserror::Error)]
#[error("the {axis} axis would run from {lo} to {hi}, not a finite range")]
pub struct NotFinite {
    pub axis: String,
    pub lo: f64,
    pub hi: f64,
}

/// `lo..hi` for a linear axis when both ends are finite and `lo < hi`.
pub fn axis(name: &str, lo: f64, hi: f64) -> Result<std::ops::Range<f64>, NotFinite> {
    if lo.is_finite() && hi.is_finite() && lo < hi {
        Ok(lo..hi)
    } else {
        Err(NotFinite {
            axis: name.to_string(),
            lo,
            hi,
        })
    }
}

/// `lo..hi` for a logarithmic axis: as [`axis`], and `lo > 0`.
pub fn log_axis(name: &str, lo: f64, hi: f64) -> Result<std::ops::Range<f64>, NotFinite> {
    if lo > 0.0 {
        axis(name, lo, hi)
    } else {
        Err(NotFinite {
            axis: name.to_string(),
            lo,
            hi,
        })
    }
}

/// The drawing area handed to a plot function.
pub type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// Draw a `width` × `height` PNG with `draw` and write it to `path` atomically.
pub fn write_png(
    path: &Path,
    (width, height): (u32, u32),
    draw: impl FnOnce(&Area) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<(), PlotError> {
    register_font();
    let err = |m: String, skipped: bool| PlotError {
        path: crate::output::shown(path).display().to_string(),
        message: m,
        skipped,
    };
    // The encoder picks the format from the extension, so the temporary keeps `.png`.
    let name = path.file_name().map_or_else(|| "plot".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}.png", std::process::id()));
    let result = (|| {
        let area = BitMapBackend::new(&tmp, (width, height)).into_drawing_area();
        area.fill(&WHITE).map_err(|e| (e.to_string(), false))?;
        // An axis that [`axis`] refused: the plot is skipped, not failed.
        draw(&area).map_err(|e| (e.to_string(), e.downcast_ref::<NotFinite>().is_some()))?;
        area.present().map_err(|e| (e.to_string(), false))?;
        Ok::<(), (String, bool)>(())
    })();
    match result.and_then(|()| std::fs::rename(&tmp, path).map_err(|e| (e.to_string(), false))) {
        Ok(()) => Ok(()),
        Err((m, skipped)) => {
            let _ = std::fs::remove_file(&tmp);
            Err(err(m, skipped))
        }
    }
}

/// A distinct colour for series `i` (colour-blind-friendly Okabe–Ito palette).
#[must_use]
pub fn colour(i: usize) -> RGBColor {
    const P: [(u8, u8, u8); 7] = [
        (0, 114, 178),
        (213, 94, 0),
        (0, 158, 115),
        (204, 121, 167),
        (230, 159, 0),
        (86, 180, 233),
        (0, 0, 0),
    ];
    let (r, g, b) = P[i % P.len()];
    RGBColor(r, g, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png_with_text() {
        let path = std::env::temp_dir().join(format!("wd-plot-{}.png", std::process::id()));
        write_png(&path, (320, 200), |area| {
            let mut chart = ChartBuilder::on(area)
                .caption("test", (FONT, 16))
                .x_label_area_size(30)
                .y_label_area_size(30)
                .build_cartesian_2d(0.0..1.0, 0.0..1.0)?;
            chart.configure_mesh().x_desc("x").draw()?;
            chart.draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], colour(0)))?;
            Ok(())
        })
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_non_finite_axis_skips_the_plot_and_writes_nothing() {
        let dir = std::env::temp_dir().join(format!("wd-plot-skip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.png");
        for (x, y) in [
            ((0.0, f64::INFINITY), (0.0, 1.0)),
            ((0.0, 1.0), (1e-7, f64::INFINITY)),
            ((f64::NAN, 1.0), (0.0, 1.0)),
            ((1.0, 1.0), (0.0, 1.0)),
        ] {
            let e = write_png(&path, (320, 200), |area| {
                let mut chart = ChartBuilder::on(area).build_cartesian_2d(axis("x", x.0, x.1)?, log_axis("y", y.0, y.1)?)?;
                chart.configure_mesh().draw()?;
                Ok(())
            })
            .unwrap_err();
            assert!(e.skipped, "{x:?} {y:?}: {e}");
            assert!(e.to_string().contains("not a finite range"), "{e}");
        }
        assert!(log_axis("y", 0.0, 1.0).is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "a skipped plot left a file");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
