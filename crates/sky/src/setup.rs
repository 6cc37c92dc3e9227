//! From user options to [`crate::Settings`]: region, bins, energy cuts and the RA grid, shared by
//! `warpdrive sky autocorr` and the Python package's `warpdrive.sky.autocorr`.

use crate::bins::AngularBins;
use crate::cuts::{EnergyCut, Region};
use crate::events::Event;

/// `--hemisphere` narrowed by `--dec-min`/`--dec-max` [deg].
pub fn region(hemisphere: &str, dec_min: Option<f64>, dec_max: Option<f64>) -> Result<Region, String> {
    let mut r = Region::hemisphere(hemisphere)?;
    if let Some(v) = dec_min {
        r.dec_min = r.dec_min.max(v);
    }
    if let Some(v) = dec_max {
        r.dec_max = r.dec_max.min(v);
    }
    if r.dec_min.is_nan() || r.dec_max.is_nan() || r.dec_min > r.dec_max {
        return Err(format!("empty declination range {}° to {}°", r.dec_min, r.dec_max));
    }
    Ok(r)
}

/// Explicit `edges` [deg], else `n` uniform bins of `width` degrees.
pub fn bins(edges: &[f64], n: usize, width: f64) -> Result<AngularBins, String> {
    if edges.is_empty() {
        if width.is_nan() || width <= 0.0 || n == 0 {
            return Err("--bins must be at least 1 and --bin-width positive".into());
        }
        AngularBins::uniform(n, width)
    } else {
        AngularBins::new(edges.to_vec())
    }
}

/// `--cuts` entries (blank ones skipped).
pub fn cuts(specs: &[String]) -> Result<Vec<EnergyCut>, String> {
    specs.iter().filter(|c| !c.trim().is_empty()).map(|c| EnergyCut::parse(c)).collect()
}

/// `--ra-grid`: `off` (continuous), `auto` (detected from the selected events' right
/// ascensions; `detected` tells the caller to say so) or a positive step in degrees.
pub fn ra_grid(spec: &str, events: &[Event], region: &Region) -> Result<(Option<f64>, bool), String> {
    match spec {
        "off" => Ok((None, false)),
        "auto" => {
            let ra: Vec<f64> = events.iter().filter(|e| region.contains(e)).map(|e| e.ra).collect();
            let g = crate::sample::detect_ra_grid(&ra);
            Ok((g, g.is_some()))
        }
        v => v
            .parse::<f64>()
            .ok()
            .filter(|q| *q > 0.0)
            .map(|q| (Some(q), false))
            .ok_or_else(|| format!("--ra-grid {v}: expected auto, off or a positive step in degrees")),
    }
}
