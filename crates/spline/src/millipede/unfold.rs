//! What a Millipede request is made of besides its event: the model's files (given, or the
//! defaults in the data directory) and the hypothesis from the user's numbers, checked with the
//! request's parameter names (spec §2). `crate::engine::{Simulate, Unfold}` build on these.

use super::model::{direction, source_axes_of, Hypothesis, Model, Source, SourceAxis, AMPLITUDE_FRAME, TIMING_FRAME};
use crate::SplineTable;
use std::path::{Path, PathBuf};
use warpdrive_core::engine::{Error, ParamError};
use warpdrive_core::InputError;
use warpdrive_photon::geometry::Geometry;

/// The most track segments of a hypothesis (IceCube unfoldings use hundreds; Λ holds
/// DOMs × segments).
pub const MAX_SEGMENTS: u64 = 100_000;

/// The default tables and geometry, relative to the data directory (`WARPDRIVE_DATA`): the
/// public EM cascade tables of icetray's photospline examples and IceCube's geo-f2k.
pub const DEFAULT_AMPLITUDE: &str = "splines/icetray_photospline_ems/ems_z0_a0.pt.abs.fits";
pub const DEFAULT_TIMING: &str = "splines/icetray_photospline_ems/ems_z0_a0.pt.prob.fits";
pub const DEFAULT_GEOMETRY: &str = "geometry/icecube_geo-f2k";

/// The model's files: `None` takes the default in the data directory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelFiles {
    /// Amplitude table (r, φ, cos θ and the source axes; ln PE per photon).
    pub amplitude: Option<PathBuf>,
    /// Timing table (r, φ, cos θ, delay and the source axes; cumulative).
    pub timing: Option<PathBuf>,
    /// The tables' axes after the frame's (source zenith and/or depth, in the tables' order),
    /// for tables whose header does not name them (`AXISd`, written by `spline fit` from the
    /// tabulator's columns); `None`: as the header says, else none.
    pub source_axes: Option<Vec<SourceAxis>>,
    /// Fit amplitudes only (one bin per DOM, no timing table).
    pub amplitude_only: bool,
    /// Geometry (PPC geo-f2k or Prometheus .geo).
    pub geometry: Option<PathBuf>,
}

/// The `source_axes` option's words (`zenith`, `depth`), the error naming the option.
pub fn parse_source_axes<S: AsRef<str>>(words: &[S]) -> Result<Vec<SourceAxis>, ParamError> {
    words
        .iter()
        .map(|w| w.as_ref().parse().map_err(|m: String| ParamError::new("source_axes", m)))
        .collect()
}

/// A model file: the given path, or the default under the data directory (whose absence gets
/// the data directory's hint in the error).
fn resolve(given: Option<&Path>, default: &str) -> (PathBuf, bool) {
    match given {
        Some(p) => (p.to_path_buf(), false),
        None => (warpdrive_core::data::data_dir().join(default), true),
    }
}

fn with_hint(e: InputError, default: bool) -> InputError {
    if default && e.message.starts_with("cannot read") {
        let mut e = e;
        e.message = format!("{} (a default data file; {})", e.message, warpdrive_core::data::missing_hint());
        e
    } else {
        e
    }
}

impl ModelFiles {
    /// The files a model of these options reads (defaults resolved): the inputs no output may
    /// replace, known before anything is read.
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut out = vec![resolve(self.amplitude.as_deref(), DEFAULT_AMPLITUDE).0];
        if !self.amplitude_only {
            out.push(resolve(self.timing.as_deref(), DEFAULT_TIMING).0);
        }
        out.push(resolve(self.geometry.as_deref(), DEFAULT_GEOMETRY).0);
        out
    }
}

/// The tables (checked as a model: an amplitude table over r, φ, cos θ and a timing table over
/// r, φ, cos θ, t, each followed by its source axes — zenith, depth — when the header names them
/// or `source_axes` says so) and the geometry, and the files read (inputs no output may replace).
pub fn load(files: &ModelFiles) -> Result<(Model, Geometry, Vec<PathBuf>), Error> {
    if files.amplitude_only && files.timing.is_some() {
        return Err(ParamError::new("amplitude_only", "cannot be given together with {timing}").into());
    }
    if let Some(a) = &files.source_axes {
        if a.is_empty() || a.len() > 2 || (a.len() == 2 && a[0] == a[1]) {
            let names: Vec<&str> = a.iter().map(|x| x.name()).collect();
            return Err(ParamError::new(
                "source_axes",
                format!(
                    "'{}': one or two different axes of zenith, depth (in the tables' order)",
                    names.join(",")
                ),
            )
            .into());
        }
    }
    let mut inputs = Vec::new();
    let explicit = files.source_axes.as_deref();
    let mut table = |given: Option<&Path>, default: &str, frame: &[&str]| -> Result<(SplineTable, Vec<SourceAxis>), Error> {
        let (path, is_default) = resolve(given, default);
        let t = SplineTable::read(&path).map_err(|e| with_hint(e, is_default))?;
        let axes = source_axes_of(&t, frame, explicit).map_err(|m| InputError::file(&path, m))?;
        inputs.push(path);
        Ok((t, axes))
    };
    let (amp, amp_axes) = table(files.amplitude.as_deref(), DEFAULT_AMPLITUDE, &AMPLITUDE_FRAME)?;
    let (tim, tim_axes) = if files.amplitude_only {
        (None, Vec::new())
    } else {
        let (t, a) = table(files.timing.as_deref(), DEFAULT_TIMING, &TIMING_FRAME)?;
        (Some(t), a)
    };
    let model = Model::with_axes(amp, tim, amp_axes, tim_axes).map_err(Error::Failed)?;
    let (path, is_default) = resolve(files.geometry.as_deref(), DEFAULT_GEOMETRY);
    let geo = Geometry::read(&path).map_err(|e| with_hint(e, is_default))?;
    // Synthetic events key a DOM's random stream by its index in 20 bits (synth.rs).
    if geo.doms.len() > 1 << 20 {
        return Err(InputError::file(&path, format!("{} modules; at most {} are supported", geo.doms.len(), 1 << 20)).into());
    }
    inputs.push(path);
    Ok((model, geo, inputs))
}

/// The parameter a hypothesis was given by (`cascade` or `track`), for messages.
pub fn hypothesis_param(h: &Hypothesis) -> &'static str {
    match h {
        Hypothesis::Cascade(_) => "cascade",
        Hypothesis::Track { .. } => "track",
    }
}

fn all_finite(param: &'static str, v: &[f64], what: &str) -> Result<(), ParamError> {
    match v.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(ParamError::new(
            param,
            format!("takes {} finite numbers ({what}); number {} is {}", v.len(), i + 1, v[i]),
        )),
        None => Ok(()),
    }
}

impl Hypothesis {
    /// The hypothesis of `cascade = x,y,z,zenith,azimuth,t` or `track =
    /// x,y,z,zenith,azimuth,t,length` with `spacing` (positions in m, angles in degrees, times in
    /// ns); exactly one of the two is given.
    pub fn from_numbers(cascade: Option<&[f64]>, track: Option<&[f64]>, spacing: f64) -> Result<Self, ParamError> {
        const CASCADE: &str = "x,y,z,zenith,azimuth,t";
        const TRACK: &str = "x,y,z,zenith,azimuth,t,length";
        match (cascade, track) {
            (Some(_), Some(_)) => Err(ParamError::new("cascade", "cannot be given together with {track}")),
            (None, None) => Err(ParamError::new(
                "cascade",
                format!("({CASCADE}) or {{track}} ({TRACK}) is needed: the hypothesis to simulate or unfold"),
            )),
            (Some(c), None) => {
                if c.len() != 6 {
                    return Err(ParamError::new(
                        "cascade",
                        format!("takes 6 finite numbers ({CASCADE}), got {}", c.len()),
                    ));
                }
                all_finite("cascade", c, CASCADE)?;
                Ok(Hypothesis::Cascade(Source {
                    pos: [c[0], c[1], c[2]],
                    dir: direction(c[3].to_radians(), c[4].to_radians()),
                    time: c[5],
                }))
            }
            (None, Some(t)) => {
                if t.len() != 7 {
                    return Err(ParamError::new(
                        "track",
                        format!("takes 7 finite numbers ({TRACK}), got {}", t.len()),
                    ));
                }
                all_finite("track", t, TRACK)?;
                if t[6] <= 0.0 {
                    return Err(ParamError::new("track", format!("length {} m must be positive", t[6])));
                }
                if !(spacing > 0.0 && spacing.is_finite()) {
                    return Err(ParamError::new(
                        "spacing",
                        format!("{spacing} m must be a positive number of metres"),
                    ));
                }
                let segments = (t[6] / spacing).round();
                if segments > MAX_SEGMENTS as f64 {
                    return Err(ParamError::new(
                        "track",
                        format!(
                            "length {} m / {{spacing}} {spacing} m = {segments:e} segments, more than the limit of {MAX_SEGMENTS} (the response matrix holds DOMs × segments); use a larger {{spacing}}",
                            t[6]
                        ),
                    ));
                }
                Ok(Hypothesis::Track {
                    vertex: [t[0], t[1], t[2]],
                    dir: direction(t[3].to_radians(), t[4].to_radians()),
                    time: t[5],
                    length: t[6],
                    spacing,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::Style;

    #[test]
    fn hypothesis_errors_name_the_parameters() {
        let cli = |e: ParamError| e.render(Style::Cli);
        let c = [0.0; 6];
        let t = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 100.0];
        // Both given: named as both, not as a count error of one (issue #28).
        let e = Hypothesis::from_numbers(Some(&c), Some(&t), 10.0).unwrap_err();
        assert_eq!(e.to_string(), "cascade cannot be given together with track");
        assert_eq!(cli(e), "--cascade cannot be given together with --track");
        let e = Hypothesis::from_numbers(Some(&[0.0, 0.0, f64::NAN, 0.0, 0.0, 0.0]), None, 1.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cascade takes 6 finite numbers (x,y,z,zenith,azimuth,t); number 3 is NaN"
        );
        let e = Hypothesis::from_numbers(None, Some(&t[..6]), 1.0).unwrap_err();
        assert_eq!(cli(e), "--track takes 7 finite numbers (x,y,z,zenith,azimuth,t,length), got 6");
        let e = Hypothesis::from_numbers(None, Some(&t), 0.0).unwrap_err();
        assert_eq!(e.to_string(), "spacing 0 m must be a positive number of metres");
        let e = Hypothesis::from_numbers(None, None, 1.0).unwrap_err();
        assert!(cli(e).starts_with("--cascade (x,y,z,zenith,azimuth,t) or --track (x,y,z,zenith,azimuth,t,length) is needed"));
        assert_eq!(Hypothesis::from_numbers(None, Some(&t), 10.0).unwrap().sources().len(), 10);
    }
}
