//! Optical-module geometry: PPC `geo-f2k`, Prometheus `.geo`, a generated IceCube-like default,
//! and per-DOM efficiencies from `eff-f2k` (spec §3.1).

use std::path::Path;
use warpdrive_core::error::{data_lines, parse_f64, parse_i64, read_text};
use warpdrive_core::InputError;

use crate::ice::ZOFF;

/// IceCube DOM radius [m] (spec §1.2, PPC and CLSim).
pub const DOM_RADIUS: f64 = 0.16510;

#[derive(Clone, Debug, PartialEq)]
pub struct Dom {
    pub string: i32,
    pub om: i32,
    /// Centre in IceCube coordinates [m] (z = 0 at the detector centre, up positive).
    pub pos: [f64; 3],
    /// Relative DOM efficiency (eff-f2k RDE; 1 by default).
    pub rde: f64,
    /// eff-f2k type 1: apply the wv.rde wavelength ratio.
    pub high_qe: bool,
    /// Azimuth of the DOM's cable [deg] (`dx.dat`); None: no cable shadow.
    pub cable_deg: Option<f64>,
    /// The module's axis for the angular acceptance (`cx.dat`); None: (0, 0, 1), PPC's default.
    pub axis: Option<[f64; 3]>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Geometry {
    pub doms: Vec<Dom>,
    pub source: String,
}

/// The largest module coordinate accepted [m] (IceCube-Gen2 spans about 8 km).
pub const MAX_COORDINATE_M: f64 = 1e5;

/// One module line: `skip` leading columns, then `x y z string om` with depth-like z.
fn parse_module(path: &Path, line: usize, l: &str, skip: usize, columns: &str) -> Result<Dom, InputError> {
    let t: Vec<&str> = l.split_whitespace().collect();
    if t.len() != skip + 5 {
        return Err(InputError::new(
            path,
            line,
            format!("{} columns; expected {} ({columns})", t.len(), skip + 5),
        ));
    }
    let f = |k: usize, name: &str| parse_f64(path, line, name, Some(t[skip + k]));
    let (x, y, z) = (f(0, "x")?, f(1, "y")?, f(2, "z")?);
    // The collision grids span the detector: a module 10^30 m away would make them endless.
    for (v, name) in [(x, "x"), (y, "y"), (z, "z")] {
        if v.abs() > MAX_COORDINATE_M {
            return Err(InputError::new(path, line, format!("{v} m is beyond ±{MAX_COORDINATE_M} m")).field(name));
        }
    }
    let int = |k: usize, name: &str| -> Result<i32, InputError> {
        let v = parse_i64(path, line, name, Some(t[skip + k]))?;
        i32::try_from(v).map_err(|_| InputError::new(path, line, format!("{v} is out of range")).field(name))
    };
    let (string, om) = (int(3, "string")?, int(4, "om")?);
    Ok(Dom {
        string,
        om,
        pos: [x, y, z + ZOFF],
        rde: 1.0,
        high_qe: false,
        cable_deg: None,
        axis: None,
    })
}

impl Geometry {
    /// Read a geometry file, choosing the format from its content: Prometheus `.geo` files start
    /// with a `### Metadata ###` header, everything else is read as PPC `geo-f2k`.
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let text = read_text(path)?;
        if text.trim_start().starts_with("###") {
            Self::parse_prometheus(path, &text)
        } else {
            Self::parse_f2k(path, &text)
        }
    }

    /// `geo-f2k`: `name mainboard x y z string om`, z depth-like (IceCube z = z + 1948.07).
    /// Keeps in-ice modules: `string > 86 || (string > 0 && 1 ≤ om ≤ 60)` (spec §3.1).
    fn parse_f2k(path: &Path, text: &str) -> Result<Self, InputError> {
        let mut doms = Vec::new();
        for (line, l) in data_lines(text) {
            let d = parse_module(path, line, l, 2, "name mainboard x y z string om")?;
            if d.string > 86 || (d.string > 0 && (1..=60).contains(&d.om)) {
                doms.push(d);
            }
        }
        Self::finish(path, doms)
    }

    /// Prometheus `.geo`: metadata header, then `x y z string om` with depth-like z.
    fn parse_prometheus(path: &Path, text: &str) -> Result<Self, InputError> {
        let mut doms = Vec::new();
        let mut in_modules = false;
        for (line, l) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
            if l.starts_with("###") {
                in_modules = l.contains("Modules");
            } else if in_modules && !l.is_empty() {
                doms.push(parse_module(path, line, l, 0, "x y z string om")?);
            }
        }
        Self::finish(path, doms)
    }

    fn finish(path: &Path, doms: Vec<Dom>) -> Result<Self, InputError> {
        if doms.is_empty() {
            return Err(InputError::file(path, "no in-ice optical modules"));
        }
        let mut seen = std::collections::HashSet::new();
        for d in &doms {
            if !seen.insert((d.string, d.om)) {
                return Err(InputError::file(path, format!("module {}-{} appears twice", d.string, d.om)));
            }
        }
        Ok(Self {
            doms,
            source: path.display().to_string(),
        })
    }

    /// Generated IceCube-like detector: 86 strings, 60 DOMs each. 70 strings on a hexagonal grid
    /// of 125 m spacing, 8 on an outer ring, and 8 denser "DeepCore" strings 72 m from the centre; DOMs every 17 m from z = +500 m down (DeepCore strings: 7 m below z = −150 m).
    pub fn icecube_like() -> Self {
        let mut xy = Vec::new();
        let spacing = 125.0;
        let row_h = spacing * 3f64.sqrt() / 2.0;
        // Hexagonal patch of 70 strings (rows of 6..10), then 8 strings on an outer ring.
        for row in -4i32..=4 {
            let n = 10 - row.unsigned_abs() as i32;
            for k in 0..n {
                let x = (f64::from(k) - f64::from(n - 1) / 2.0) * spacing;
                let y = f64::from(row) * row_h;
                xy.push([x, y]);
            }
        }
        let mut ring = 0;
        while xy.len() < 78 {
            let a = std::f64::consts::TAU * f64::from(ring) / 8.0;
            xy.push([700.0 * a.cos(), 600.0 * a.sin()]);
            ring += 1;
        }
        let mut doms = Vec::new();
        for (s, p) in xy.iter().enumerate() {
            for om in 1..=60 {
                let z = 500.0 - 17.0 * f64::from(om - 1);
                doms.push(Dom {
                    string: s as i32 + 1,
                    om,
                    pos: [p[0], p[1], z],
                    rde: 1.0,
                    high_qe: false,
                    cable_deg: None,
                    axis: None,
                });
            }
        }
        for k in 0..8 {
            let a = std::f64::consts::TAU * f64::from(k) / 8.0;
            let (x, y) = (72.0 * a.cos(), 72.0 * a.sin());
            for om in 1..=60 {
                let z = if om <= 10 {
                    190.0 - 10.0 * f64::from(om - 1)
                } else {
                    -150.0 - 7.0 * f64::from(om - 11)
                };
                doms.push(Dom {
                    string: 79 + k,
                    om,
                    pos: [x, y, z],
                    rde: 1.0,
                    high_qe: false,
                    cable_deg: None,
                    axis: None,
                });
            }
        }
        Self {
            doms,
            source: "<built-in IceCube-like 86-string geometry>".into(),
        }
    }

    /// Apply `eff-f2k`: `string om RDE [type]`; modules not listed keep RDE 1.
    pub fn apply_efficiencies(&mut self, path: &Path) -> Result<(), InputError> {
        let text = read_text(path)?;
        let index: std::collections::HashMap<(i32, i32), usize> =
            self.doms.iter().enumerate().map(|(i, d)| ((d.string, d.om), i)).collect();
        for (line, l) in data_lines(&text) {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() != 3 && t.len() != 4 {
                return Err(InputError::new(
                    path,
                    line,
                    format!("{} columns; expected string om RDE [type]", t.len()),
                ));
            }
            let s = parse_i64(path, line, "string", Some(t[0]))? as i32;
            let om = parse_i64(path, line, "om", Some(t[1]))? as i32;
            let rde = parse_f64(path, line, "RDE", Some(t[2]))?;
            if rde < 0.0 {
                return Err(InputError::new(path, line, "must not be negative").field("RDE"));
            }
            if rde > crate::spectrum::MAX_RDE {
                return Err(InputError::new(path, line, format!("{rde} is above {}", crate::spectrum::MAX_RDE)).field("RDE"));
            }
            let ty = if t.len() == 4 {
                parse_i64(path, line, "type", Some(t[3]))?
            } else {
                0
            };
            if let Some(&i) = index.get(&(s, om)) {
                self.doms[i].rde = rde;
                self.doms[i].high_qe = ty == 1;
            }
        }
        Ok(())
    }

    /// Apply `dx.dat`: `string om azimuth spread` per line, the cable's azimuth [deg] at the
    /// module (negative values are taken modulo 360, as PPC does); modules not listed have no
    /// cable. Returns the number of modules that got one.
    pub fn apply_cables(&mut self, path: &Path) -> Result<usize, InputError> {
        let text = read_text(path)?;
        let index: std::collections::HashMap<(i32, i32), usize> =
            self.doms.iter().enumerate().map(|(i, d)| ((d.string, d.om), i)).collect();
        let mut n = 0;
        for (line, l) in data_lines(&text) {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() != 4 {
                return Err(InputError::new(
                    path,
                    line,
                    format!("{} columns; expected string om azimuth spread", t.len()),
                ));
            }
            let s = parse_i64(path, line, "string", Some(t[0]))? as i32;
            let om = parse_i64(path, line, "om", Some(t[1]))? as i32;
            let az = parse_f64(path, line, "azimuth", Some(t[2]))?;
            parse_f64(path, line, "spread", Some(t[3]))?;
            if let Some(&i) = index.get(&(s, om)) {
                self.doms[i].cable_deg = Some(if az < 0.0 { az.rem_euclid(360.0) } else { az });
                n += 1;
            }
        }
        if n == 0 {
            return Err(InputError::file(path, "no cable position matches a module of the geometry"));
        }
        Ok(n)
    }

    /// Apply `cx.dat`: `string om nx ny nz spread` per line, the module's axis (PPC reads it as
    /// given; a zero vector is refused). Returns the number of modules that got one.
    pub fn apply_orientations(&mut self, path: &Path) -> Result<usize, InputError> {
        let text = read_text(path)?;
        let index: std::collections::HashMap<(i32, i32), usize> =
            self.doms.iter().enumerate().map(|(i, d)| ((d.string, d.om), i)).collect();
        let mut n = 0;
        for (line, l) in data_lines(&text) {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() != 6 {
                return Err(InputError::new(
                    path,
                    line,
                    format!("{} columns; expected string om nx ny nz spread", t.len()),
                ));
            }
            let s = parse_i64(path, line, "string", Some(t[0]))? as i32;
            let om = parse_i64(path, line, "om", Some(t[1]))? as i32;
            let mut a = [0.0; 3];
            for (k, name) in ["nx", "ny", "nz"].iter().enumerate() {
                a[k] = parse_f64(path, line, name, Some(t[2 + k]))?;
            }
            parse_f64(path, line, "spread", Some(t[5]))?;
            if a.iter().all(|v| *v == 0.0) {
                return Err(InputError::new(path, line, "zero axis").field("nx"));
            }
            if let Some(&i) = index.get(&(s, om)) {
                self.doms[i].axis = Some(a);
                n += 1;
            }
        }
        if n == 0 {
            return Err(InputError::file(path, "no orientation matches a module of the geometry"));
        }
        Ok(n)
    }

    /// Mean (x, y) of a string's modules.
    pub fn string_xy(&self, string: i32) -> Option<[f64; 2]> {
        let (mut n, mut x, mut y) = (0.0, 0.0, 0.0);
        for d in self.doms.iter().filter(|d| d.string == string) {
            n += 1.0;
            x += d.pos[0];
            y += d.pos[1];
        }
        (n > 0.0).then(|| [x / n, y / n])
    }

    /// Index of module (string, om).
    pub fn find(&self, string: i32, om: i32) -> Option<usize> {
        self.doms.iter().position(|d| d.string == string && d.om == om)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::{data_dir, scratch};

    /// spec §4: 5160 in-ice DOMs, x ∈ [−570.9, 576.4], IceCube z ∈ [−512.8, 524.6]; string 1
    /// OM 1 at f2k z = −1452.04 → IceCube z = 496.03. Prometheus file has identical positions.
    #[test]
    fn icecube_geometries_agree() {
        let g = Geometry::read(&data_dir().join("geometry/icecube_geo-f2k")).unwrap();
        assert_eq!(g.doms.len(), 5160);
        let d = &g.doms[g.find(1, 1).unwrap()];
        assert!((d.pos[2] - 496.03).abs() < 1e-9);
        let zmin = g.doms.iter().map(|d| d.pos[2]).fold(f64::MAX, f64::min);
        let zmax = g.doms.iter().map(|d| d.pos[2]).fold(f64::MIN, f64::max);
        assert!((zmin + 512.8).abs() < 0.1 && (zmax - 524.6).abs() < 0.1, "{zmin} {zmax}");
        let p = Geometry::read(&data_dir().join("geometry/prometheus_icecube.geo")).unwrap();
        assert_eq!(p.doms.len(), 5160);
        for d in &p.doms {
            let e = &g.doms[g.find(d.string, d.om).unwrap()];
            assert!((0..3).all(|k| (d.pos[k] - e.pos[k]).abs() < 1e-9));
        }
        let u = Geometry::read(&data_dir().join("geometry/prometheus_upgrade.geo")).unwrap();
        assert!(!u.doms.is_empty());
    }

    #[test]
    fn efficiencies_from_eff_f2k() {
        let mut g = Geometry::read(&data_dir().join("ice/spice_bfr-v2/geo-f2k")).unwrap();
        g.apply_efficiencies(&data_dir().join("ice/spice_bfr-v2/eff-f2k")).unwrap();
        assert_eq!(g.doms[g.find(36, 44).unwrap()].rde, 1.35);
        let mut g2 = g.clone();
        g2.apply_efficiencies(&data_dir().join("ice/spice_ftp-v3m/eff-f2k")).unwrap();
        assert!(g2.doms[g2.find(36, 44).unwrap()].high_qe);
        // cx.dat: module axes; dx.dat: cable azimuths (negative taken modulo 360).
        let cx = scratch("cx-test.dat", "36 44 0 0 -1 0\n36 46 0.1 0 0.995 0\n99 1 0 0 1 0\n");
        assert_eq!(g2.apply_orientations(&cx).unwrap(), 2);
        assert_eq!(g2.doms[g2.find(36, 44).unwrap()].axis, Some([0.0, 0.0, -1.0]));
        let zero = scratch("cx-zero.dat", "36 44 0 0 0 0\n");
        assert!(g2.apply_orientations(&zero).unwrap_err().to_string().contains("zero axis"));
        let dx = scratch("dx-test.dat", "36 44 -90 5\n");
        assert_eq!(g2.apply_cables(&dx).unwrap(), 1);
        assert_eq!(g2.doms[g2.find(36, 44).unwrap()].cable_deg, Some(270.0));
    }

    #[test]
    fn generated_default_has_86_strings() {
        let g = Geometry::icecube_like();
        assert_eq!(g.doms.len(), 86 * 60);
        let strings: std::collections::HashSet<i32> = g.doms.iter().map(|d| d.string).collect();
        assert_eq!(strings.len(), 86);
    }

    #[test]
    fn malformed_geometry_is_reported() {
        let p = scratch("geo-bad", "A 0x1 1 2 3 1 1\nB 0x2 1 2 1 2\n");
        assert!(Geometry::read(&p).unwrap_err().to_string().contains("geo-bad:2: 6 columns"));
        let p = scratch("geo-nan", "A 0x1 1 nan 3 1 1\n");
        assert!(Geometry::read(&p).unwrap_err().to_string().contains("field 'y'"));
    }
}
