//! Ice tilt: depth shift of the ice layers as a function of position (spec §3.1).
//!
//! 1-D model (`tilt.par` + `tilt.dat`): shifts tabulated at given distances along the 225°
//! gradient direction and at depths every 10 m.
//!
//! 2-D model (`tilt.set` + `tilt.map`, spice_ftp-v3m): shifts on the nodes of a triangular
//! lattice. Each `tilt.set` line is `azimuth first step count cut` of one lattice axis ê₁ (9.3°),
//! ê₂ (129.3°, 120° from ê₁); node (i, j) sits at (first₁ + i·step₁)·ê₁ + (first₂ + j·step₂)·ê₂,
//! and the hexagon keeps the nodes with −cut₂ < i − j < cut₁. `tilt.map` rows are `depth` then
//! one shift per kept node, j outer and i inner. (This reading was checked against the data:
//! it gives exactly the 80 columns of the map, the nodes fall on IceCube strings — median
//! distance 2.4 m — and the node whose shift is 0 at every depth is string 36, the central
//! string.) Between nodes the shift is interpolated linearly on the lattice triangles
//! (barycentric), between depth rows linearly; outside the hexagon the lattice coordinates are
//! clamped to it.

use std::path::Path;
use warpdrive_core::error::{data_lines, parse_f64, parse_i64, read_text};
use warpdrive_core::InputError;

use crate::ice::ZOFF;

/// Direction of the tilt gradient, 225° (south-west) in IceCube coordinates.
pub(crate) const TILT_AZIMUTH_DEG: f64 = 225.0;

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

/// 2-D tilt map (`tilt.set` + `tilt.map`).
#[derive(Clone, Debug, PartialEq)]
pub struct Tilt2d {
    /// Per axis: azimuth [deg], first [m], step [m], count, cut.
    pub axes: [[f64; 5]; 2],
    pub depths: Vec<f64>,
    pub nodes: usize,
    /// Column of node (i, j) in a map row, `None` for nodes cut by the hexagon; index j·n₁ + i.
    pub(crate) column: Vec<Option<usize>>,
    /// shifts[row][column].
    pub(crate) shifts: Vec<Vec<f64>>,
}

impl Tilt2d {
    fn counts(&self) -> (usize, usize) {
        (self.axes[0][3] as usize, self.axes[1][3] as usize)
    }

    /// Fractional lattice coordinates (i, j) of (x, y): solve p = u·ê₁ + v·ê₂.
    #[must_use]
    pub fn lattice(&self, x: f64, y: f64) -> (f64, f64) {
        let (a1, a2) = (self.axes[0][0].to_radians(), self.axes[1][0].to_radians());
        let (e1, e2) = ([a1.cos(), a1.sin()], [a2.cos(), a2.sin()]);
        let det = e1[0] * e2[1] - e2[0] * e1[1];
        let u = (x * e2[1] - y * e2[0]) / det;
        let v = (e1[0] * y - e1[1] * x) / det;
        ((u - self.axes[0][1]) / self.axes[0][2], (v - self.axes[1][1]) / self.axes[1][2])
    }

    fn node(&self, row: usize, i: usize, j: usize) -> f64 {
        let (n1, _) = self.counts();
        self.column[j * n1 + i].map_or(0.0, |c| self.shifts[row][c])
    }

    /// Shift at lattice coordinates (fi, fj) for depth row `row`: barycentric interpolation on
    /// the triangle of the rhombus split along its short diagonal (i, j)–(i+1, j+1).
    fn at(&self, row: usize, fi: f64, fj: f64) -> f64 {
        let (n1, n2) = self.counts();
        let (cut1, cut2) = (self.axes[0][4], self.axes[1][4]);
        let (mut fi, mut fj) = (fi, fj);
        for _ in 0..3 {
            fi = fi.clamp(0.0, (n1 - 1) as f64);
            fj = fj.clamp(0.0, (n2 - 1) as f64);
            let d = fi - fj;
            if d > cut1 - 1.0 {
                let e = (d - (cut1 - 1.0)) / 2.0;
                fi -= e;
                fj += e;
            } else if d < 1.0 - cut2 {
                let e = ((1.0 - cut2) - d) / 2.0;
                fi += e;
                fj -= e;
            }
        }
        let i0 = (fi.floor() as usize).min(n1 - 2);
        let j0 = (fj.floor() as usize).min(n2 - 2);
        let (a, b) = (fi - i0 as f64, fj - j0 as f64);
        let s00 = self.node(row, i0, j0);
        let s11 = self.node(row, i0 + 1, j0 + 1);
        if a >= b {
            s00 * (1.0 - a) + self.node(row, i0 + 1, j0) * (a - b) + s11 * b
        } else {
            s00 * (1.0 - b) + self.node(row, i0, j0 + 1) * (b - a) + s11 * a
        }
    }

    #[must_use]
    pub fn zshift(&self, x: f64, y: f64, z: f64) -> f64 {
        let (k, f) = bracket(&self.depths, ZOFF - z);
        let (fi, fj) = self.lattice(x, y);
        self.at(k, fi, fj) * (1.0 - f) + self.at(k + 1, fi, fj) * f
    }
}

#[derive(Clone, Debug, PartialEq, Default)]
pub enum Tilt {
    #[default]
    None,
    OneD(Tilt1d),
    TwoD(Tilt2d),
}

impl Tilt {
    /// Read the tilt files of `dir`, if any: `tilt.par` + `tilt.dat` (1-D) or `tilt.set` +
    /// `tilt.map` (2-D). One file of a pair without the other is an error naming the missing
    /// file: it is a broken model, and running untilted would change every hit time silently
    /// (issue #36: 106 hits instead of 98). `string_xy` gives the mean (x, y) of a string.
    pub fn read_dir(dir: &Path, string_xy: impl Fn(i32) -> Option<[f64; 2]>) -> Result<Self, InputError> {
        let (par, dat) = (dir.join("tilt.par"), dir.join("tilt.dat"));
        let (set, map) = (dir.join("tilt.set"), dir.join("tilt.map"));
        let one_d = both_or_neither(&par, &dat, "1-D")?;
        let two_d = both_or_neither(&set, &map, "2-D")?;
        if one_d {
            return Ok(Tilt::OneD(read_1d(&par, &dat, string_xy)?));
        }
        if two_d {
            return Ok(Tilt::TwoD(read_2d(&set, &map)?));
        }
        Ok(Tilt::None)
    }

    /// The tilt model in words, for the detector description.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Tilt::None => "none".to_string(),
            Tilt::OneD(t) => format!(
                "1-D (tilt.par + tilt.dat: {} strings along 225°, {} depths)",
                t.strings.len(),
                t.depths.len()
            ),
            Tilt::TwoD(t) => format!("2-D (tilt.set + tilt.map: {} lattice nodes, {} depths)", t.nodes, t.depths.len()),
        }
    }

    /// Depth shift of the layers at IceCube position (x, y, z) [m]; the layer lookup uses
    /// z' = z − zshift (spec §3.5 step 2).
    #[must_use]
    pub fn zshift(&self, x: f64, y: f64, z: f64) -> f64 {
        match self {
            Tilt::OneD(t) => t.zshift(x, y, z),
            Tilt::TwoD(t) => t.zshift(x, y, z),
            Tilt::None => 0.0,
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

/// Whether a pair of tilt files is there: both (true), neither (false), or one without the other
/// (an error naming the missing one).
fn both_or_neither(a: &Path, b: &Path, model: &str) -> Result<bool, InputError> {
    let name = |p: &Path| p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    match (a.is_file(), b.is_file()) {
        (true, true) => Ok(true),
        (false, false) => Ok(false),
        (has_a, _) => {
            let (there, missing) = if has_a { (a, b) } else { (b, a) };
            Err(InputError::file(
                missing,
                format!(
                    "not found, but {} is there: the {model} tilt model needs both files (remove {} for untilted ice)",
                    name(there),
                    name(there)
                ),
            ))
        }
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

/// Rows of `depth shift_1 … shift_n` with increasing depths (tilt.dat, tilt.map).
fn read_depth_rows(path: &Path, n: usize, what: &str) -> Result<(Vec<f64>, Vec<Vec<f64>>), InputError> {
    let text = read_text(path)?;
    let mut depths: Vec<f64> = Vec::new();
    let mut shifts = Vec::new();
    for (line, l) in data_lines(&text) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() != n + 1 {
            return Err(InputError::new(
                path,
                line,
                format!("{} columns; expected depth + {n} shifts ({what})", t.len()),
            ));
        }
        let d = parse_f64(path, line, "depth", Some(t[0]))?;
        if depths.last().is_some_and(|&p| d <= p) {
            return Err(InputError::new(path, line, "depths must increase").field("depth"));
        }
        depths.push(d);
        let row = t[1..]
            .iter()
            .enumerate()
            .map(|(k, s)| parse_f64(path, line, &format!("shift {}", k + 1), Some(s)))
            .collect::<Result<Vec<_>, _>>()?;
        shifts.push(row);
    }
    if depths.len() < 2 {
        return Err(InputError::file(path, "needs at least two depths"));
    }
    Ok((depths, shifts))
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
    let (depths, shifts) = read_depth_rows(dat, distances.len(), "one per tilt.par line")?;
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
    for (k, a) in axes.iter().enumerate() {
        if a[2] <= 0.0 || a[3] < 2.0 || a[3].fract() != 0.0 || a[4] < 1.0 {
            return Err(InputError::new(set, k + 1, "step must be positive, count an integer ≥ 2, cut ≥ 1"));
        }
    }
    let (n1, n2) = (axes[0][3] as usize, axes[1][3] as usize);
    let (cut1, cut2) = (axes[0][4], axes[1][4]);
    let mut column = vec![None; n1 * n2];
    let mut nodes = 0;
    for j in 0..n2 {
        for i in 0..n1 {
            let d = i as f64 - j as f64;
            if -cut2 < d && d < cut1 {
                column[j * n1 + i] = Some(nodes);
                nodes += 1;
            }
        }
    }
    let (depths, shifts) = read_depth_rows(map, nodes, "one per lattice node of tilt.set")?;
    Ok(Tilt2d {
        axes: [axes[0], axes[1]],
        depths,
        nodes,
        column,
        shifts,
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

    /// 2-D map: at a node the shift is the node's value (node (5,4) is string 36, the reference,
    /// shift 0; node (0,0) is the first column); half-way along a lattice edge it is the mean;
    /// between depth rows it is linear.
    #[test]
    fn ftp_2d_shifts_at_given_points() {
        let Tilt::TwoD(m) = Tilt::read_dir(&data_dir().join("ice/spice_ftp-v3m"), s86).unwrap() else {
            panic!()
        };
        let pos = |fi: f64, fj: f64| {
            let (a1, a2) = (9.3f64.to_radians(), 129.3f64.to_radians());
            let (u, v) = (-609.975 + fi * 125.154, -549.188 + fj * 125.402);
            (u * a1.cos() + v * a2.cos(), u * a1.sin() + v * a2.sin())
        };
        let z0 = ZOFF - 1208.47;
        let (x, y) = pos(5.0, 4.0);
        assert!(m.zshift(x, y, z0).abs() < 1e-9 && m.zshift(x, y, ZOFF - 2000.0).abs() < 1e-9);
        let (x, y) = pos(0.0, 0.0);
        assert!((m.zshift(x, y, z0) - 4.46127).abs() < 1e-6);
        let (x, y) = pos(0.5, 0.0);
        assert!((m.zshift(x, y, z0) - 0.5 * (4.46127 + 3.29079)).abs() < 1e-6);
        let (x, y) = pos(0.0, 0.0);
        assert!((m.zshift(x, y, ZOFF - 1213.47) - 0.5 * (4.46127 + 4.46324)).abs() < 1e-6);
        let (x, y) = pos(3.25, 6.5);
        let (fi, fj) = m.lattice(x, y);
        assert!((fi - 3.25).abs() < 1e-9 && (fj - 6.5).abs() < 1e-9);
        assert!(m.zshift(5000.0, -5000.0, z0).is_finite());
        // String 36's real position (geo-f2k) is within a few metres of node (5,4): shift ≈ 0.
        assert!(m.zshift(46.29, -34.88, z0).abs() < 0.5, "{}", m.zshift(46.29, -34.88, z0));
    }

    /// Regression (issue #36 item 10): half of a tilt model is an error naming the missing file,
    /// not an untilted run.
    #[test]
    fn half_a_tilt_model_names_the_missing_file() {
        let d = scratch_dir("tilthalf1", &[("tilt.par", "1 -10\n2 10\n")]);
        let e = Tilt::read_dir(&d, s86).unwrap_err().to_string();
        assert!(
            e.contains("tilt.dat: not found, but tilt.par is there: the 1-D tilt model needs both"),
            "{e}"
        );
        let d = scratch_dir("tilthalf2", &[("tilt.dat", "1200 0 1\n1210 0 1\n")]);
        let e = Tilt::read_dir(&d, s86).unwrap_err().to_string();
        assert!(e.contains("tilt.par: not found, but tilt.dat is there"), "{e}");
        let d = scratch_dir("tilthalf3", &[("tilt.map", "1200 0\n")]);
        let e = Tilt::read_dir(&d, s86).unwrap_err().to_string();
        assert!(e.contains("tilt.set: not found, but tilt.map is there: the 2-D tilt model"), "{e}");
        let d = scratch_dir("tilthalf4", &[("tilt.set", "9.3 0 1 2 1\n129.3 0 1 2 1\n")]);
        assert!(Tilt::read_dir(&d, s86).unwrap_err().to_string().contains("tilt.map: not found"));
        let d = scratch_dir("tiltnone", &[("cfg.txt", "5\n")]);
        assert_eq!(Tilt::read_dir(&d, s86).unwrap(), Tilt::None);
        let one = Tilt::read_dir(&data_dir().join("ice/spice_3.2.1"), s86).unwrap();
        assert_eq!(one.describe(), "1-D (tilt.par + tilt.dat: 6 strings along 225°, 125 depths)");
    }

    #[test]
    fn wrong_column_count_is_reported() {
        let d = scratch_dir("tiltbad", &[("tilt.par", "1 -10\n2 10\n"), ("tilt.dat", "1200 0 1\n1210 0\n")]);
        let e = Tilt::read_dir(&d, s86).unwrap_err().to_string();
        assert!(e.contains("tilt.dat:2") && e.contains("2 columns"), "{e}");
    }
}
