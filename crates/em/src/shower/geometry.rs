//! A layered slab calorimeter: one period of layers (material, thickness) repeated along z,
//! with a square transverse cross-section centred on the z axis; vacuum outside. The front face
//! is at z = 0. Built in: TestEm3 (50 × [2.3 mm Pb + 5.7 mm lAr], 40 cm × 40 cm). From TOML
//! (`crates/em/examples/testem3.toml` is the built-in one written out):
//!
//! ```toml
//! name = "TestEm3"
//! repeat = 50
//! transverse = 40.0         # cm, full width
//! [[layers]]
//! material = "Lead"         # built-in name or material TOML file (relative to this file)
//! thickness = 0.23          # cm
//! [[layers]]
//! material = "liquidArgon"
//! thickness = 0.57
//! ```
//!
//! Navigation: a track carries its slab index. [`Calorimeter::distance_to_boundary`] gives the
//! distance along the direction to the nearest plane (the slab's two z planes and the four side
//! planes) and what lies behind it; [`Calorimeter::cross`] moves the point onto that boundary
//! plus a push of [`PUSH`] and hands over the next slab's index. The index is never re-derived
//! from the position after a crossing, so rounding on a plane cannot put a track into the wrong
//! slab or make it stick; distances are clamped at 0 for points a push past a plane.

use super::material::{toml_error, ShowerMaterial};
use std::path::Path;
use warpdrive_core::error::InputError;

/// Distance a crossing track is moved past the boundary [cm] (0.1 nm: far below any slab,
/// far above the rounding of coordinates of a few tens of cm).
pub const PUSH: f64 = 1e-8;

/// One layer of the period, as written in TOML.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerSpec {
    pub material: String,
    /// Thickness [cm].
    pub thickness: f64,
}

/// A calorimeter as written in TOML.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalorimeterSpec {
    #[serde(default)]
    pub name: Option<String>,
    /// How many times the period of layers is repeated.
    pub repeat: usize,
    /// Full transverse width [cm].
    pub transverse: f64,
    pub layers: Vec<LayerSpec>,
}

/// One layer of the period: index into [`Calorimeter::materials`] and thickness [cm].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layer {
    pub material: usize,
    pub thickness: f64,
}

/// What lies behind a boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Slab(usize),
    /// The track leaves the calorimeter (vacuum).
    Outside,
}

/// The nearest boundary along a direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Boundary {
    /// Distance along the direction [cm], ≥ 0 (infinite when the direction never reaches one).
    pub distance: f64,
    pub next: Next,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Calorimeter {
    pub name: String,
    /// The distinct materials, in order of first use.
    pub materials: Vec<ShowerMaterial>,
    /// One period.
    pub layers: Vec<Layer>,
    pub repeat: usize,
    /// Full transverse width [cm].
    pub transverse: f64,
    /// z of every slab boundary, slabs + 1 values from 0 to the total thickness [cm].
    planes: Vec<f64>,
}

/// Most slabs (layers × repeat) a calorimeter may have: 100 × TestEm3's 100. Each slab has its
/// own tally word per event, on the GPU for every event of a batch.
pub const MAX_SLABS: usize = 10_000;

impl Calorimeter {
    /// Build from a period of (material, thickness [cm]) layers.
    pub fn new(name: &str, period: Vec<(ShowerMaterial, f64)>, repeat: usize, transverse: f64) -> Result<Calorimeter, (String, String)> {
        if period.is_empty() {
            return Err(("layers".into(), "a calorimeter needs at least one layer".into()));
        }
        if repeat == 0 {
            return Err(("repeat".into(), "repeat must be at least 1".into()));
        }
        if !(transverse.is_finite() && transverse > 0.0) {
            return Err(("transverse".into(), format!("transverse size {transverse} cm must be positive")));
        }
        let mut materials: Vec<ShowerMaterial> = Vec::new();
        let mut layers = Vec::new();
        for (i, (m, t)) in period.into_iter().enumerate() {
            if !(t.is_finite() && t > 0.0) {
                return Err((format!("layers[{i}].thickness"), format!("thickness {t} cm must be positive")));
            }
            let idx = match materials.iter().position(|x| x.name == m.name) {
                Some(j) if materials[j] == m => j,
                Some(_) => {
                    return Err((
                        format!("layers[{i}].material"),
                        format!("two different materials are named '{}'", m.name),
                    ))
                }
                None => {
                    materials.push(m);
                    materials.len() - 1
                }
            };
            layers.push(Layer {
                material: idx,
                thickness: t,
            });
        }
        // Every slab has its own tally words per event (on the GPU for every event of a batch):
        // the count comes from the input, so it is bounded before anything is allocated.
        let slabs = repeat.checked_mul(layers.len()).filter(|&n| n <= MAX_SLABS);
        if slabs.is_none() {
            return Err((
                "repeat".into(),
                format!("{repeat} × {} layers is more than {MAX_SLABS} slabs", layers.len()),
            ));
        }
        // Offsets within a period, then k·period + offset: no rounding accumulates over periods.
        let mut offsets = vec![0.0];
        for l in &layers {
            offsets.push(offsets.last().unwrap() + l.thickness);
        }
        let period_len = *offsets.last().unwrap();
        let mut planes = Vec::with_capacity(repeat * layers.len() + 1);
        for k in 0..repeat {
            for off in &offsets[..layers.len()] {
                planes.push(k as f64 * period_len + off);
            }
        }
        planes.push(repeat as f64 * period_len);
        Ok(Calorimeter {
            name: name.into(),
            materials,
            layers,
            repeat,
            transverse,
            planes,
        })
    }

    /// Geant4 TestEm3's default calorimeter: 50 × [2.3 mm Lead + 5.7 mm liquidArgon], 40 cm.
    #[must_use]
    pub fn testem3() -> Calorimeter {
        Self::new(
            "TestEm3",
            vec![(ShowerMaterial::lead(), 0.23), (ShowerMaterial::liquid_argon(), 0.57)],
            50,
            40.0,
        )
        .expect("built-in calorimeter")
    }

    /// Read a calorimeter TOML file; material files are looked up relative to its folder.
    pub fn from_toml(path: &Path) -> Result<Calorimeter, InputError> {
        let text = warpdrive_core::error::read_text(path)?;
        Self::from_toml_str(&text, path)
    }

    /// Parse TOML text; `path` names the file in errors and locates relative material files.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<Calorimeter, InputError> {
        let spec: CalorimeterSpec = toml::from_str(text).map_err(|e| toml_error(text, path, &e))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let mut period = Vec::new();
        for (i, l) in spec.layers.iter().enumerate() {
            let local = dir.join(&l.material);
            let name = if local.is_file() {
                local.to_string_lossy().into_owned()
            } else {
                l.material.clone()
            };
            let m = ShowerMaterial::from_name_or_file(&name).map_err(|e| {
                if e.line == 0 && e.field.is_none() {
                    // An unknown name or an unreadable file: the fault is this file's field.
                    InputError::file(path, format!("'{}': {}", l.material, e.message)).field(format!("layers[{i}].material"))
                } else {
                    // A fault inside the material file: its own file, line and field.
                    e
                }
            })?;
            period.push((m, l.thickness));
        }
        let name = spec
            .name
            .unwrap_or_else(|| path.file_stem().map_or("calorimeter".into(), |s| s.to_string_lossy().into()));
        Self::new(&name, period, spec.repeat, spec.transverse).map_err(|(field, msg)| InputError::file(path, msg).field(field))
    }

    /// Number of slabs (layers × repeat).
    #[must_use]
    pub fn slabs(&self) -> usize {
        self.planes.len() - 1
    }

    /// Total thickness along z [cm].
    #[must_use]
    pub fn thickness(&self) -> f64 {
        *self.planes.last().unwrap()
    }

    /// z range [cm] of a slab.
    #[must_use]
    pub fn slab_z(&self, slab: usize) -> (f64, f64) {
        (self.planes[slab], self.planes[slab + 1])
    }

    /// Index into [`Self::materials`] of a slab's material.
    #[must_use]
    pub fn material_index(&self, slab: usize) -> usize {
        self.layers[slab % self.layers.len()].material
    }

    /// A slab's material.
    #[must_use]
    pub fn material(&self, slab: usize) -> &ShowerMaterial {
        &self.materials[self.material_index(slab)]
    }

    /// Position of a slab in the period (0 = first layer) and its period number.
    #[must_use]
    pub fn layer_of(&self, slab: usize) -> (usize, usize) {
        (slab % self.layers.len(), slab / self.layers.len())
    }

    /// Whether (x, y) is inside the transverse cross-section (edges included).
    #[must_use]
    pub fn inside_transverse(&self, pos: [f64; 3]) -> bool {
        let h = 0.5 * self.transverse;
        pos[0].abs() <= h && pos[1].abs() <= h
    }

    /// The slab containing z: planes[i] ≤ z < planes[i + 1]; `None` outside [0, thickness).
    #[must_use]
    pub fn slab_at_z(&self, z: f64) -> Option<usize> {
        if !(z >= 0.0 && z < self.thickness()) {
            return None;
        }
        // planes is sorted: the number of planes ≤ z, minus one.
        Some(self.planes.partition_point(|&p| p <= z) - 1)
    }

    /// The slab containing a point (`None` outside the calorimeter). On a z plane the slab
    /// behind it along +z is returned; use [`Self::locate_along`] to take the direction into
    /// account.
    #[must_use]
    pub fn locate(&self, pos: [f64; 3]) -> Option<usize> {
        if !self.inside_transverse(pos) {
            return None;
        }
        self.slab_at_z(pos[2])
    }

    /// As [`Self::locate`], but a point on a z plane belongs to the slab the direction enters.
    #[must_use]
    pub fn locate_along(&self, pos: [f64; 3], dir: [f64; 3]) -> Option<usize> {
        if !self.inside_transverse(pos) {
            return None;
        }
        let z = pos[2];
        if dir[2] < 0.0 {
            // planes[i] < z ≤ planes[i + 1].
            if !(z > 0.0 && z <= self.thickness()) {
                return None;
            }
            Some(self.planes.partition_point(|&p| p < z) - 1)
        } else {
            self.slab_at_z(z)
        }
    }

    /// The nearest boundary of `slab` from `pos` along the unit vector `dir`: the slab's z planes
    /// (behind them the neighbouring slab, or the outside past the first and last) and the four
    /// side planes (behind them the outside).
    #[must_use]
    pub fn distance_to_boundary(&self, pos: [f64; 3], dir: [f64; 3], slab: usize) -> Boundary {
        let (z_lo, z_hi) = self.slab_z(slab);
        let mut best = Boundary {
            distance: f64::INFINITY,
            next: Next::Outside,
        };
        if dir[2] > 0.0 {
            best.distance = ((z_hi - pos[2]) / dir[2]).max(0.0);
            best.next = if slab + 1 < self.slabs() {
                Next::Slab(slab + 1)
            } else {
                Next::Outside
            };
        } else if dir[2] < 0.0 {
            best.distance = ((pos[2] - z_lo) / -dir[2]).max(0.0);
            best.next = if slab > 0 { Next::Slab(slab - 1) } else { Next::Outside };
        }
        let h = 0.5 * self.transverse;
        for axis in 0..2 {
            let d = if dir[axis] > 0.0 {
                (h - pos[axis]) / dir[axis]
            } else if dir[axis] < 0.0 {
                (pos[axis] + h) / -dir[axis]
            } else {
                f64::INFINITY
            };
            let d = d.max(0.0);
            if d < best.distance {
                best = Boundary {
                    distance: d,
                    next: Next::Outside,
                };
            }
        }
        best
    }

    /// Move `pos` along `dir` onto the boundary `b` and [`PUSH`] past it; the track's new
    /// location is `b.next` (carried, not re-derived from the position).
    #[must_use]
    pub fn cross(&self, pos: [f64; 3], dir: [f64; 3], b: &Boundary) -> ([f64; 3], Next) {
        let s = b.distance + PUSH;
        ([pos[0] + s * dir[0], pos[1] + s * dir[1], pos[2] + s * dir[2]], b.next)
    }

    /// Isotropic safety: the distance from `pos` (inside `slab`) to the nearest of its planes,
    /// a step this short cannot leave the slab whatever the direction.
    #[must_use]
    pub fn safety(&self, pos: [f64; 3], slab: usize) -> f64 {
        let (z_lo, z_hi) = self.slab_z(slab);
        let h = 0.5 * self.transverse;
        (pos[2] - z_lo)
            .min(z_hi - pos[2])
            .min(h - pos[0].abs())
            .min(h - pos[1].abs())
            .max(0.0)
    }

    /// For a point outside: the distance along `dir` to where it enters the calorimeter and the
    /// slab it enters, or `None` if it misses (a ray–box intersection, slab method).
    #[must_use]
    pub fn distance_to_in(&self, pos: [f64; 3], dir: [f64; 3]) -> Option<(f64, usize)> {
        let h = 0.5 * self.transverse;
        let lo = [-h, -h, 0.0];
        let hi = [h, h, self.thickness()];
        let (mut t_in, mut t_out) = (0.0f64, f64::INFINITY);
        for a in 0..3 {
            if dir[a] == 0.0 {
                if pos[a] < lo[a] || pos[a] > hi[a] {
                    return None;
                }
                continue;
            }
            let (t1, t2) = ((lo[a] - pos[a]) / dir[a], (hi[a] - pos[a]) / dir[a]);
            t_in = t_in.max(t1.min(t2));
            t_out = t_out.min(t1.max(t2));
        }
        if t_in >= t_out {
            return None;
        }
        let p = [pos[0] + t_in * dir[0], pos[1] + t_in * dir[1], pos[2] + t_in * dir[2]];
        // On the entry face the slab is the one the direction enters; clamp rounding at the
        // faces into the box.
        let z = p[2].clamp(0.0, self.thickness());
        let slab = if dir[2] < 0.0 {
            self.planes.partition_point(|&q| q < z).max(1) - 1
        } else {
            self.planes.partition_point(|&q| q <= z).min(self.slabs()) - 1
        };
        Some((t_in, slab))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn testem3_layout() {
        let c = Calorimeter::testem3();
        assert_eq!(c.slabs(), 100);
        assert!((c.thickness() - 40.0).abs() < 1e-12);
        assert_eq!(c.materials.len(), 2);
        assert_eq!(c.material(0).name, "Lead");
        assert_eq!(c.material(1).name, "liquidArgon");
        assert_eq!(c.material(99).name, "liquidArgon");
        assert_eq!(c.layer_of(37), (1, 18));
        let (lo, hi) = c.slab_z(37);
        assert!((lo - (18.0 * 0.8 + 0.23)).abs() < 1e-12 && (hi - 19.0 * 0.8).abs() < 1e-12);
        // Locating: inside, on planes, outside.
        assert_eq!(c.locate([0.0, 0.0, 0.1]), Some(0));
        assert_eq!(c.locate([0.0, 0.0, 0.23]), Some(1));
        assert_eq!(c.locate([0.0, 0.0, c.slab_z(2).0]), Some(2));
        assert_eq!(c.locate([0.0, 0.0, 39.9]), Some(99));
        assert_eq!(c.locate([0.0, 0.0, 40.0]), None);
        assert_eq!(c.locate([0.0, 0.0, -1e-9]), None);
        assert_eq!(c.locate([20.1, 0.0, 1.0]), None);
        let z2 = c.slab_z(2).0; // 0.23 + 0.57 in floating point
        assert_eq!(c.locate_along([0.0, 0.0, z2], [0.0, 0.0, -1.0]), Some(1));
        assert_eq!(c.locate_along([0.0, 0.0, z2], [0.0, 0.0, 1.0]), Some(2));
        assert_eq!(c.locate_along([0.0, 0.0, 0.0], [0.0, 0.0, -1.0]), None);
        assert_eq!(c.locate_along([0.0, 0.0, 40.0], [0.0, 0.0, -1.0]), Some(99));
    }

    #[test]
    fn boundaries_and_crossing() {
        let c = Calorimeter::testem3();
        let b = c.distance_to_boundary([0.0, 0.0, 0.1], [0.0, 0.0, 1.0], 0);
        assert!((b.distance - 0.13).abs() < 1e-12 && b.next == Next::Slab(1));
        let b = c.distance_to_boundary([0.0, 0.0, 0.1], [0.0, 0.0, -1.0], 0);
        assert!((b.distance - 0.1).abs() < 1e-12 && b.next == Next::Outside);
        let s = std::f64::consts::FRAC_1_SQRT_2;
        let b = c.distance_to_boundary([0.0, 0.0, 0.5], [s, 0.0, -s], 1);
        assert!((b.distance - 0.27 / s).abs() < 1e-12 && b.next == Next::Slab(0));
        // Sideways: the side plane at x = 20 cm comes first.
        let b = c.distance_to_boundary([19.9, 0.0, 0.5], [1.0, 0.0, 0.0], 1);
        assert!((b.distance - 0.1).abs() < 1e-9 && b.next == Next::Outside);
        // A direction in the plane of a slab never reaches a z plane.
        let b = c.distance_to_boundary([0.0, 0.0, 0.5], [0.0, 1.0, 0.0], 1);
        assert!((b.distance - 20.0).abs() < 1e-12);
        // Crossing lands past the plane in the slab it reports.
        let (p, n) = c.cross(
            [0.0, 0.0, 0.1],
            [0.0, 0.0, 1.0],
            &c.distance_to_boundary([0.0, 0.0, 0.1], [0.0, 0.0, 1.0], 0),
        );
        assert_eq!(n, Next::Slab(1));
        assert_eq!(c.locate(p), Some(1));
        // Seen from the slab it just left, a point a push past the plane is at distance 0, not
        // negative.
        let b = c.distance_to_boundary(p, [0.0, 0.0, 1.0], 0);
        assert_eq!(b.distance, 0.0);
        let b = c.distance_to_boundary(p, [0.0, 0.0, -1.0], 1);
        assert!((b.distance - PUSH).abs() < 1e-12 && b.next == Next::Slab(0));
        assert!((c.safety([0.0, 0.0, 0.3], 1) - 0.07).abs() < 1e-12);
    }

    #[test]
    fn a_straight_track_crosses_every_slab_once() {
        // Walk a slanted ray through the whole stack by boundary crossings only.
        let c = Calorimeter::testem3();
        let dir = {
            let v = [0.01f64, -0.02, 1.0];
            let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            [v[0] / n, v[1] / n, v[2] / n]
        };
        let (d, mut slab) = c.distance_to_in([0.0, 0.0, -5.0], dir).unwrap();
        assert_eq!(slab, 0);
        let mut pos = [d * dir[0], d * dir[1], -5.0 + d * dir[2]];
        let mut visited = vec![slab];
        let mut lead_path = 0.0;
        loop {
            let b = c.distance_to_boundary(pos, dir, slab);
            if c.material_index(slab) == 0 {
                lead_path += b.distance;
            }
            let (p, next) = c.cross(pos, dir, &b);
            pos = p;
            match next {
                Next::Slab(s) => {
                    slab = s;
                    visited.push(s);
                }
                Next::Outside => break,
            }
        }
        assert_eq!(visited, (0..100).collect::<Vec<_>>());
        assert!((lead_path * dir[2] - 50.0 * 0.23).abs() < 1e-6, "{lead_path}");
        assert!(c.distance_to_in([0.0, 0.0, -5.0], [0.0, 0.0, -1.0]).is_none());
        assert!(c.distance_to_in([30.0, 0.0, -5.0], [0.0, 0.0, 1.0]).is_none());
        assert_eq!(c.distance_to_in([0.0, 0.0, 45.0], [0.0, 0.0, -1.0]).unwrap().1, 99);
    }

    #[test]
    fn toml_calorimeters_and_errors() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/testem3.toml");
        let c = Calorimeter::from_toml(&path).unwrap();
        assert_eq!(c, Calorimeter::testem3());

        let p = Path::new("calo.toml");
        let good = "repeat = 2\ntransverse = 10\n[[layers]]\nmaterial = \"Lead\"\nthickness = 0.5\n[[layers]]\nmaterial = \"lAr\"\nthickness = 1.0\n";
        let c = Calorimeter::from_toml_str(good, p).unwrap();
        assert_eq!((c.slabs(), c.name.as_str()), (4, "calo"));
        let err = |t: &str| Calorimeter::from_toml_str(t, p).unwrap_err().to_string();
        let e = err(&good.replace("\"lAr\"", "\"kryptonite\""));
        assert!(
            e.starts_with("calo.toml") && e.contains("field 'layers[1].material'") && e.contains("unknown"),
            "{e}"
        );
        let e = err(&good.replace("thickness = 1.0", "thickness = -1"));
        assert!(e.contains("field 'layers[1].thickness'"), "{e}");
        let e = err(&good.replace("repeat = 2", "repeat = 0"));
        assert!(e.contains("field 'repeat'"), "{e}");
        let e = err(&good.replace("transverse = 10\n", ""));
        assert!(e.contains("field 'transverse'"), "{e}");
        let e = err(&good.replace("thickness = 0.5", "thickness = \"thin\""));
        assert!(e.contains("calo.toml:5"), "{e}");

        // Material files relative to the calorimeter file; their own errors name them.
        let dir = std::env::temp_dir().join(format!("wd-em-calo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mat = "name = \"scint\"\ndensity = 1.032\nI_eV = 64.7\n[[elements]]\nZ = 6\nA = 12.011\nfraction = 0.915\n[[elements]]\nZ = 1\nA = 1.008\nfraction = 0.085\n";
        std::fs::write(dir.join("scint.toml"), mat).unwrap();
        let calo = dir.join("calo.toml");
        std::fs::write(&calo, good.replace("\"lAr\"", "\"scint.toml\"")).unwrap();
        let c = Calorimeter::from_toml(&calo).unwrap();
        assert_eq!(c.material(1).name, "scint");
        std::fs::write(dir.join("scint.toml"), mat.replace("I_eV = 64.7", "I_eV = 0")).unwrap();
        let e = Calorimeter::from_toml(&calo).unwrap_err().to_string();
        assert!(e.contains("scint.toml") && e.contains("field 'I_eV'"), "{e}");
        std::fs::write(&calo, good.replace("\"lAr\"", "\"missing.toml\"")).unwrap();
        let e = Calorimeter::from_toml(&calo).unwrap_err().to_string();
        assert!(
            e.contains("calo.toml") && e.contains("field 'layers[1].material'") && e.contains("missing.toml"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
