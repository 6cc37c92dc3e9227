//! Ice tilt: depth shift of the ice layers as a function of position (spec §3.1).
//!
//! 1-D model (`tilt.par` + `tilt.dat`): shifts tabulated at given distances along the 225°
//! gradient direction and at depths every 10 m. 2-D model (`tilt.set` + `tilt.map`): shifts on a
//! triangular grid; it is read and validated, not yet applied (reported as unsupported).

use std::path::Path;
use warpdrive_core::error::{data_lines, parse_f64, parse_i64, read_text};
use warpdrive_core::InputError;

use crate::ice::ZOFF;

/// Direction of the tilt gradient, 225° (south-west) in IceCube coordinates.
const TILT_AZIMUTH_DEG: f64 = 225.0;

#[derive(Clone, Debug, PartialEq)]
pub struct Tilt1d {
    /// Strings of `tilt.par` and their distances along the gradient [m], increasing.
    pub strings: Vec<i32>,
    pub distances: Vec<f64>,
    /// Depths of `tilt.dat` rows [m], increasing and evenly spaced.
    pub depths: Vec<f64>,
    /// shifts[row][column] [m].
    pub shifts: Vec<Vec<f64>>,
    /// Origin of the distance axis: the position of the string at distance 0 (spec §3.1),
    /// or (0,0) when no string has distance 0.
    pub r0: [f64; 2],
}

/// 2-D tilt map (`tilt.set` + `tilt.map`), read but not applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Tilt2d {
    pub axes: [[f64; 5]; 2],
    pub depths: Vec<f64>,
    pub nodes: usize,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub enum Tilt {
    #[default]
    None,
    OneD(Tilt1d),
    TwoD(Tilt2d),
}

impl Tilt {
    /// Read the tilt files of `dir`, if any. `string_xy` gives the mean (x, y) of a string.
    pub fn read_dir(dir: &Path, string_xy: impl Fn(i32) -> Option<[f64; 2]>) -> Result<Self, InputError> {
        let (par, dat) = (dir.join("tilt.par"), dir.join("tilt.dat"));
        if par.is_file() && dat.is_file() {
            return Ok(Tilt::OneD(read_1d(&par, &dat, string_xy)?));
        }
        let (set, map) = (dir.join("tilt.set"), dir.join("tilt.map"));
        if set.is_file() && map.is_file() {
            return Ok(Tilt::TwoD(read_2d(&set, &map)?));
        }
        Ok(Tilt::None)
    }

    /// Depth shift of the layers at IceCube position (x, y, z) [m]; the layer lookup uses
    /// z' = z − zshift (spec §3.5 step 2).
    #[must_use]
    pub fn zshift(&self, x: f64, y: f64, z: f64) -> f64 {
        match self {
            Tilt::OneD(t) => t.zshift(x, y, z),
            _ => 0.0,
        }
    }
}

impl Tilt1d {
    /// Distance of (x, y) along the 225° gradient from r0.
    #[must_use]
    pub fn distance(&self, x: f64, y: f64) -> f64 {
        let a = TILT_AZIMUTH_DEG.to_radians();
        (x - self.r0[0]) * a.cos() + (y - self.r0[1]) * a.sin()
    }

    /// Bilinear interpolation of the table in depth and distance, clamped at the table edges.
    #[must_use]
    pub fn zshift(&self, x: f64, y: f64, z: f64) -> f64 {
        let depth = ZOFF - z;
        let (i, fi) = bracket(&self.depths, depth);
        let (j, fj) = bracket(&self.distances, self.distance(x, y));
        let row = |r: &Vec<f64>| r[j] * (1.0 - fj) + r[j + 1] * fj;
        row(&self.shifts[i]) * (1.0 - fi) + row(&self.shifts[i + 1]) * fi
    }
}

/// Index i and fraction f with v ≈ xs[i]·(1−f) + xs[i+1]·f, clamped to the table.
fn bracket(xs: &[f64], v: f64) -> (usize, f64) {
    if xs.len() < 2 {
        return (0, 0.0);
    }
    let k = xs.partition_point(|&x| x <= v).clamp(1, xs.len() - 1) - 1;
    let f = ((v - xs[k]) / (xs[k + 1] - xs[k])).clamp(0.0, 1.0);
    (k, f)
}

fn read_1d(par: &Path, dat: &Path, string_xy: impl Fn(i32) -> Option<[f64; 2]>) -> Result<Tilt1d, InputError> {
    let text = read_text(par)?;
    let mut strings = Vec::new();
    let mut distances: Vec<f64> = Vec::new();
    for (line, l) in data_lines(&text) {
        let mut t = l.split_whitespace();
        let s = parse_i64(par, line, "string", t.next())? as i32;
        let d = parse_f64(par, line, "distance", t.next())?;
        if distances.last().is_some_and(|&p| d <= p) {
            return Err(InputError::new(par, line, "distances must increase").field("distance"));
        }
        strings.push(s);
        distances.push(d);
    }
    if distances.len() < 2 {
        return Err(InputError::file(par, "needs at least two strings"));
    }
    let text = read_text(dat)?;
    let mut depths: Vec<f64> = Vec::new();
    let mut shifts = Vec::new();
    for (line, l) in data_lines(&text) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() != distances.len() + 1 {
            return Err(InputError::new(
                dat,
                line,
                format!(
                    "{} columns; expected depth + {} shifts (one per tilt.par line)",
                    t.len(),
                    distances.len()
                ),
            ));
        }
        let d = parse_f64(dat, line, "depth", Some(t[0]))?;
        if depths.last().is_some_and(|&p| d <= p) {
            return Err(InputError::new(dat, line, "depths must increase").field("depth"));
        }
        depths.push(d);
        let row = t[1..]
            .iter()
            .enumerate()
            .map(|(k, s)| parse_f64(dat, line, &format!("shift {}", k + 1), Some(s)))
            .collect::<Result<Vec<_>, _>>()?;
        shifts.push(row);
    }
    if depths.len() < 2 {
        return Err(InputError::file(dat, "needs at least two depths"));
    }
    let r0 = strings
        .iter()
        .zip(&distances)
        .find(|(_, &d)| d == 0.0)
        .and_then(|(&s, _)| string_xy(s))
        .unwrap_or([0.0, 0.0]);
    Ok(Tilt1d {
        strings,
        distances,
        depths,
        shifts,
        r0,
    })
}

fn read_2d(set: &Path, map: &Path) -> Result<Tilt2d, InputError> {
    let text = read_text(set)?;
    let mut axes = Vec::new();
    for (line, l) in data_lines(&text) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() != 5 {
            return Err(InputError::new(
                set,
                line,
                format!("{} columns; expected azimuth first step count cut", t.len()),
            ));
        }
        let names = ["azimuth", "first", "step", "count", "cut"];
        let mut a = [0.0; 5];
        for k in 0..5 {
            a[k] = parse_f64(set, line, names[k], Some(t[k]))?;
        }
        axes.push(a);
    }
    if axes.len() != 2 {
        return Err(InputError::file(set, format!("expected 2 axis lines, found {}", axes.len())));
    }
    let text = read_text(map)?;
    let mut depths = Vec::new();
    let mut nodes = None;
    for (line, l) in data_lines(&text) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if *nodes.get_or_insert(t.len() - 1) != t.len() - 1 {
            return Err(InputError::new(map, line, "node count differs from the first row"));
        }
        for (k, s) in t.iter().enumerate() {
            parse_f64(map, line, if k == 0 { "depth" } else { "shift" }, Some(s))?;
        }
        depths.push(parse_f64(map, line, "depth", Some(t[0]))?);
    }
    Ok(Tilt2d {
        axes: [axes[0], axes[1]],
        depths,
        nodes: nodes.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::{data_dir, scratch_dir};

    fn s86(s: i32) -> Option<[f64; 2]> {
        (s == 86).then_some([-10.97, 6.72])
    }

    /// Tilt shifts at given points (spec §3.1): at the reference string the shift is 0 at all
    /// depths; at string 50's distance and a tabulated depth it is the table value.
    #[test]
    fn spice_321_shifts_at_given_points() {
        let Tilt::OneD(t) = Tilt::read_dir(&data_dir().join("ice/spice_3.2.1"), s86).unwrap() else {
            panic!("no 1-D tilt")
        };
        assert_eq!(t.strings, vec![50, 66, 86, 52, 2, 14]);
        assert_eq!(t.depths.len(), 125);
        assert_eq!(t.r0, [-10.97, 6.72]);
        let z = ZOFF - 1208.47;
        assert!(t.zshift(-10.97, 6.72, z).abs() < 1e-12);
        // String 50 at (576.37, 170.92): distance −531.42 ≈ its tilt.par entry → −0.775051 m.
        let d = t.distance(576.37, 170.92);
        assert!((d + 531.419).abs() < 0.01, "{d}");
        assert!((t.zshift(576.37, 170.92, z) + 0.775051).abs() < 1e-3);
        // Half-way between two depth rows at string 14's distance: mean of 6.657 and 6.67851.
        let a = 225f64.to_radians();
        let (x, y) = (-10.97 + 520.77 * a.cos(), 6.72 + 520.77 * a.sin());
        let zmid = ZOFF - 1213.47;
        assert!((t.zshift(x, y, zmid) - 0.5 * (6.657 + 6.67851)).abs() < 1e-9);
    }

    #[test]
    fn lea_has_origin_reference_and_ftp_has_2d_map() {
        let Tilt::OneD(t) = Tilt::read_dir(&data_dir().join("ice/spice_lea"), s86).unwrap() else {
            panic!()
        };
        assert_eq!(t.r0, [0.0, 0.0]);
        let Tilt::TwoD(m) = Tilt::read_dir(&data_dir().join("ice/spice_ftp-v3m"), s86).unwrap() else {
            panic!()
        };
        assert_eq!((m.nodes, m.depths.len()), (80, 125));
    }

    #[test]
    fn wrong_column_count_is_reported() {
        let d = scratch_dir("tiltbad", &[("tilt.par", "1 -10\n2 10\n"), ("tilt.dat", "1200 0 1\n1210 0\n")]);
        let e = Tilt::read_dir(&d, s86).unwrap_err().to_string();
        assert!(e.contains("tilt.dat:2") && e.contains("2 columns"), "{e}");
    }
}
