//! PNG plots of run outputs. Drawing uses `plotters` with a font compiled into the binary
//! (Ubuntu Light from `epaint_default_fonts`), so plots render the same on a batch node without
//! system fonts. Files are written to a temporary name and renamed when complete.

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
    let err = |m: String| PlotError {
        path: path.display().to_string(),
        message: m,
    };
    // The encoder picks the format from the extension, so the temporary keeps `.png`.
    let name = path.file_name().map_or_else(|| "plot".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}.png", std::process::id()));
    let result = (|| {
        let area = BitMapBackend::new(&tmp, (width, height)).into_drawing_area();
        area.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&area).map_err(|e| e.to_string())?;
        area.present().map_err(|e| e.to_string())?;
        Ok::<(), String>(())
    })();
    match result.and_then(|()| std::fs::rename(&tmp, path).map_err(|e| e.to_string())) {
        Ok(()) => Ok(()),
        Err(m) => {
            let _ = std::fs::remove_file(&tmp);
            Err(err(m))
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
}
