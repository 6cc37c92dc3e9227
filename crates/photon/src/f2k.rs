//! Input files: f2k (AMANDA) events with `TR` lines (spec §2.3), CLSim-style step lists, and
//! the flasher set-up of PPC's `ppc str om num gpu` mode (spec §3.6).

use std::path::Path;
use warpdrive_core::error::{data_lines, parse_f64};
use warpdrive_core::InputError;

use crate::detector::Detector;
use crate::source::{track_to_spec, Emission, Led, SourceSpec, Yield, DPPM, MAX_COORD};

/// One piece of the f2k text to echo, followed by the hits of `event` if set (PPC prints hits
/// after an event's `TR` lines, before its `EE`).
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    pub text: String,
    pub event: Option<i32>,
}

/// A parsed f2k file: the sources and how to interleave the echoed text with hits.
#[derive(Clone, Debug, PartialEq)]
pub struct F2k {
    pub specs: Vec<SourceSpec>,
    pub chunks: Vec<Chunk>,
    /// The event number of each block's `EM` line (−1 for `TR` lines outside any block), indexed
    /// by the block ordinal that `SourceSpec::event` and the hits carry.
    pub event_numbers: Vec<i32>,
}

/// Parse f2k text. Events open with `EM` and close with `EE`; as in PPC, every `EM … EE` block is
/// its own event whatever number its `EM` line carries (PPC's benchmark file numbers all 20 blocks
/// `EM 1 1`), so sources are keyed by the block's ordinal in the file (0, 1, …) and each block's
/// hits follow that block's own lines (photon-ppc-phase2.md §9). `TR` lines outside blocks form a
/// block of their own. `event_numbers` keeps the `EM` numbers per block. Other lines are echoed.
pub fn parse_f2k(path: &Path, text: &str, y: &Yield) -> Result<F2k, InputError> {
    let mut specs = Vec::new();
    let mut chunks = Vec::new();
    let mut pending = String::new();
    let mut event: Option<i32> = None;
    let mut event_numbers: Vec<i32> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t: Vec<&str> = raw.split_whitespace().collect();
        match t.first().copied() {
            Some("EM") => {
                let n = t
                    .get(1)
                    .and_then(|s| s.parse::<i32>().ok())
                    .ok_or_else(|| InputError::new(path, line, "EM line needs an integer event number").field("event"))?;
                event = Some(event_numbers.len() as i32);
                event_numbers.push(n);
            }
            Some("EE") if event.is_some() => {
                chunks.push(Chunk {
                    text: std::mem::take(&mut pending),
                    event: event.take(),
                });
            }
            Some("TR") => {
                let ev = *event.get_or_insert_with(|| {
                    event_numbers.push(-1);
                    event_numbers.len() as i32 - 1
                });
                specs.push(track_to_spec(path, line, ev, &t, y)?);
            }
            _ => {}
        }
        pending.push_str(raw);
        pending.push('\n');
    }
    chunks.push(Chunk { text: pending, event });
    if specs.is_empty() {
        return Err(InputError::file(path, "no TR lines: nothing to propagate (zero photons)"));
    }
    Ok(F2k {
        specs,
        chunks,
        event_numbers,
    })
}

/// Read a step file: one step per line, `x y z t theta phi length beta photons` (m, ns, rad,
/// photon count used verbatim; length 0 = point emitter). `#` starts a comment.
pub fn parse_steps(path: &Path, text: &str) -> Result<Vec<SourceSpec>, InputError> {
    let names = ["x", "y", "z", "t", "theta", "phi", "length", "beta", "photons"];
    let mut specs = Vec::new();
    for (line, l) in data_lines(text) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() != names.len() {
            return Err(InputError::new(
                path,
                line,
                format!("{} columns; expected {} ({})", t.len(), names.len(), names.join(" ")),
            ));
        }
        let mut v = [0.0; 9];
        for k in 0..9 {
            v[k] = parse_f64(path, line, names[k], Some(t[k]))?;
        }
        for k in 0..3 {
            if v[k].abs() > MAX_COORD {
                return Err(InputError::new(path, line, format!("{} m is out of range", v[k])).field(names[k]));
            }
        }
        if v[6] < 0.0 {
            return Err(InputError::new(path, line, "must not be negative").field("length"));
        }
        if !(v[7] > 0.0 && v[7] <= 1.0) {
            return Err(InputError::new(path, line, "must be in (0, 1]").field("beta"));
        }
        if v[8] < 1.0 || v[8].fract() != 0.0 {
            return Err(InputError::new(path, line, format!("{}: must be a positive integer (zero photons)", v[8])).field("photons"));
        }
        crate::source::check_photons(v[8]).map_err(|m| InputError::new(path, line, m).field("photons"))?;
        let dir = [v[4].sin() * v[5].cos(), v[4].sin() * v[5].sin(), v[4].cos()];
        specs.push(SourceSpec {
            event: 0,
            pos: [v[0], v[1], v[2]],
            dir,
            time: v[3],
            emission: Emission::Track {
                length: v[6],
                beta: v[7],
                f_direct: 1.0,
            },
            mean_photons: v[8],
            exact: true,
            yield_sigma: 0.0,
            yield_cap: f64::INFINITY,
            own_dom: None,
        });
    }
    if specs.is_empty() {
        return Err(InputError::file(path, "no steps (zero photons)"));
    }
    Ok(specs)
}

/// Flasher options (PPC environment FLDR, FWID, OFLA, FZCR, ELEV, FTLT; photon.md §2.2 and §3.6,
/// photon-ppc-phase2.md §6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlasherOptions {
    /// FLDR: x + (n − 1)·360 = n LEDs starting at azimuth x [deg]; negative = azimuthally symmetric.
    pub fldr: f64,
    /// FWID: beam width [deg]; −1 isotropic, other negative values a linear cone, 0 the bare LED
    /// axis; above 999 the lab-measured profile with the DOM's own geometry (above 1050 with the
    /// cable at azimuth FWID − 1080°).
    pub fwid: f64,
    /// OFLA=0: the flasher's own DOM is an ordinary (oversized) DOM that records hits; otherwise
    /// it keeps its real size and absorbs the photons that come back to it (PPC `ofla`).
    pub own_dom_records: bool,
    /// FZCR: added to the LED elevation [deg].
    pub fzcr: f64,
    /// ELEV: the LED elevation [deg], replacing the LED type's.
    pub elev: Option<f64>,
    /// FTLT: the flasher DOM's axis (lab profile, one LED); None: its cx.dat axis, else vertical.
    pub ftlt: Option<[f64; 3]>,
}

impl Default for FlasherOptions {
    fn default() -> Self {
        Self {
            fldr: -1.0,
            fwid: 9.7,
            own_dom_records: false,
            fzcr: 0.0,
            elev: None,
            ftlt: None,
        }
    }
}

/// The rotation that takes the vertical (0, 0, 1) to the unit vector `m` (Rodrigues' formula
/// about the axis z × m), applied to `v`: how PPC tilts a flasher DOM (`flshift`).
#[must_use]
pub fn tilt_from_vertical(m: [f64; 3], v: [f64; 3]) -> [f64; 3] {
    let k = [-m[1], m[0], 0.0]; // z × m
    let s = (k[0] * k[0] + k[1] * k[1]).sqrt(); // sin of the tilt
    if s == 0.0 {
        return if m[2] < 0.0 { [v[0], -v[1], -v[2]] } else { v };
    }
    let k = [k[0] / s, k[1] / s, 0.0];
    let c = m[2];
    let kv = k[0] * v[0] + k[1] * v[1];
    let kxv = [k[1] * v[2], -k[0] * v[2], k[0] * v[1] - k[1] * v[0]];
    [0, 1, 2].map(|i| v[i] * c + kxv[i] * s + k[i] * kv * (1.0 - c))
}

/// The sources of PPC's flasher mode `ppc str om num`: `num` photons emitted by the LEDs of
/// module (|str|, om), tilted LEDs (48.1° elevation) when `str` < 0, horizontal (−0.2°) otherwise
/// (photon.md §3.6, photon-ppc-phase2.md §6). The propagated count is num·ppm/dppm/xR² (spec
/// §3.4); one source, each photon taking one LED of the pattern.
pub fn flasher(det: &Detector, string: i32, om: i32, num: f64, opts: &FlasherOptions) -> Result<Vec<SourceSpec>, InputError> {
    let arg = Path::new("<command line>");
    if string == 0 {
        return Err(InputError::file(arg, "standard candles (string 0) are not supported").field("str"));
    }
    if num.is_nan() || num <= 0.0 {
        return Err(InputError::file(arg, format!("{num}: zero photons")).field("num"));
    }
    let dom = det
        .geometry
        .find(string.abs(), om)
        .ok_or_else(|| InputError::file(arg, format!("no module {}-{om} in {}", string.abs(), det.geometry.source)).field("str om"))?;
    let c = det.geometry.doms[dom].pos;
    let tilted = string < 0;
    let up = opts.elev.unwrap_or(if tilted { 48.1 } else { -0.2 } + opts.fzcr).to_radians();
    let ka = if opts.fwid > 999.0 {
        opts.fwid
    } else if opts.fwid > 0.0 {
        opts.fwid.to_radians().powi(2)
    } else {
        opts.fwid
    };
    let photons = num * det.yield_.per_metre() / DPPM;
    crate::source::check_photons(photons).map_err(|m| InputError::file(arg, m).field("num"))?;
    let mut led = Led {
        ka,
        fldr: opts.fldr,
        up,
        tilted,
        fixed: None,
    };
    let mut dir = [0.0, 0.0, 1.0];
    // One LED of a lab-profile flasher: the DOM's tilt (FTLT, else its cx.dat axis, else none)
    // turns the LED and its position on the DOM (PPC applies no harness cut then).
    if led.lab() && (0.0..360.0).contains(&opts.fldr) {
        let m = opts.ftlt.or(det.geometry.doms[dom].axis).unwrap_or([0.0, 0.0, 1.0]);
        let norm = (m[0] * m[0] + m[1] * m[1] + m[2] * m[2]).sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return Err(InputError::file(arg, format!("tilt axis ({}, {}, {}) has no direction", m[0], m[1], m[2])).field("FTLT"));
        }
        let m = m.map(|x| x / norm);
        let (sa, ca) = opts.fldr.to_radians().sin_cos();
        let (su, cu) = up.sin_cos();
        let (flr, flz) = (f64::from(crate::source::FLR), f64::from(crate::source::FLZ));
        led.fixed = Some(tilt_from_vertical(m, [flr * ca, flr * sa, flz]));
        dir = tilt_from_vertical(m, [cu * ca, cu * sa, su]);
    }
    Ok(vec![SourceSpec {
        event: 0,
        pos: c,
        dir,
        time: 0.0,
        emission: Emission::Flasher(led),
        mean_photons: photons,
        exact: false,
        yield_sigma: 0.0,
        yield_cap: f64::INFINITY,
        own_dom: (!opts.own_dom_records).then_some(dom as u32),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue #14 fix 2): blocks that repeat an event number (PPC's own benchmark file
    /// numbers all its 20 blocks `EM 1 1`) stay separate events, each with its own sources.
    #[test]
    fn repeated_event_numbers_stay_separate_blocks() {
        let y = Yield {
            ppm: 1543.0,
            oversize: 5.0,
        };
        let block = "EM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 100 0\nEE\n";
        let f = parse_f2k(Path::new("x.f2k"), &block.repeat(4), &y).unwrap();
        assert_eq!(f.specs.iter().map(|s| s.event).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(f.event_numbers, vec![1, 1, 1, 1]);
        let chunk_events: Vec<_> = f.chunks.iter().filter_map(|c| c.event).collect();
        assert_eq!(chunk_events, vec![0, 1, 2, 3]);
    }

    #[test]
    fn f2k_events_and_echo() {
        let y = Yield {
            ppm: 1543.0,
            oversize: 5.0,
        };
        let text = "V 2000.1.2\nEM 7 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 10000 0\nEE\nEM 8 1 1970 0 0 0\nTR 1 0 e+ 0 0 0 0 0 0 100 5\nTR 2 0 hadr 0 0 0 0 0 0 100 5\nEE\nEND\n";
        let f = parse_f2k(Path::new("x.f2k"), text, &y).unwrap();
        assert_eq!(f.specs.len(), 3);
        assert_eq!(f.specs.iter().map(|s| s.event).collect::<Vec<_>>(), vec![0, 1, 1]);
        assert_eq!(f.event_numbers, vec![7, 8]);
        assert_eq!(f.chunks.len(), 3);
        assert_eq!(f.chunks[0].event, Some(0));
        assert!(f.chunks[0].text.ends_with("TR 1 0 e 0 0 -400 180 0 0 10000 0\n"));
        assert!(f.chunks[1].text.starts_with("EE\nEM 8"));
        assert_eq!(
            f.chunks[2],
            Chunk {
                text: "EE\nEND\n".into(),
                event: None
            }
        );
        let echoed: String = f.chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(echoed, text);
        assert!(parse_f2k(Path::new("e.f2k"), "V 1\nEND\n", &y)
            .unwrap_err()
            .to_string()
            .contains("zero photons"));
    }

    #[test]
    fn step_files() {
        let s = parse_steps(
            Path::new("s.txt"),
            "# x y z t th ph len beta n\n0 0 0 0 0 0 0 1 1000\n1 2 3 4 1.5 0 2 0.9 10\n",
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].mean_photons, 10.0);
        let e = parse_steps(Path::new("s.txt"), "0 0 0 0 0 0 0 1 0\n").unwrap_err().to_string();
        assert!(e.contains("s.txt:1: field 'photons'"), "{e}");
        assert!(parse_steps(Path::new("s.txt"), "0 0 0 0 0 0 0 1\n")
            .unwrap_err()
            .to_string()
            .contains("8 columns"));
    }
}
