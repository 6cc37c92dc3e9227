//! Multi-PMT modules ("nextgen sensors", photon-ppc-phase2.md §7): PPC's `om.conf`, `om.map`,
//! `om.dirs` and `om.wv_<module>.<pmt type>` files, the per-PMT angular response, and the choice
//! of the PMT that records a photon.
//!
//! The model is PPC's plane-wave approximation: a module of type m holds PMTs pointing along unit
//! vectors m_k, each with the response f(β, x) to a photon travelling along −x·m_k (x = 1 head-on),
//! and a photon reaching the module is recorded by PMT k with a probability proportional to
//! f(β, −n·m_k) — its landing point does not matter. f is the projected area of the visible part
//! of a spherical cap of height (1 − β)·R seen from the photon's direction, relative to the
//! head-on value π R²(1 − β²): β = 1 is a flat cathode (f = max(x, 0)), β = 0 a half sphere
//! (f = (1 + x)/2); β < −1 selects a cylindrical cathode (f = √(1 − x²)).
//!
//! Shape and normalisation (PPC `ini.cxx`/`pro.cu`/`f2k.cxx`). Photons collide with each module's
//! own surface (`collision::shaped_entry`): a spheroid of equatorial radius Rr and polar radius Rz,
//! or for Rz < 0 the side of a vertical cylinder of radius Rr and half-height |Rz|, oversized like
//! the DOMs. With F(n) = Σ_k f(β, −n·m_k), A(n) the module's cross-section seen from n
//! (`cross_section`) and fx the largest F/A, a photon that reaches the module is kept with
//! probability F(n)/(fx·A(n)) and assigned to PMT k with probability f_k/F(n): the expected count
//! from a plane wave of direction n is ∝ A(n)·F/(fx·A) ∝ F(n). The direction-averaged effective
//! area of `om.wv` sets the photon budget of the type: photons per metre ∝ EA(λ) · (Frank–Tamm
//! density) · area · fx / ⟨F⟩, ⟨F⟩ the mean of F over the directions of `om.dirs` (PPC's `fraq`),
//! so that the module records, averaged over directions, EA(λ) × the photon fluence. The hit's
//! impact point on the surface sets its HIT-line angles and the cable's shadow (PPC's R·r).
//!
//! Differences from PPC: fx is the maximum over `om.dirs` and the reversed PMT axes (PPC:
//! `om.dirs` only); the WOM (β = −2) transit-time model, `om.conf` type −1 (redefining the nominal
//! DOM) and WFLA together with multi-PMT types are not simulated (the last is refused).

use std::path::{Path, PathBuf};
use warpdrive_core::error::{data_lines, parse_f64, parse_i64, read_text};
use warpdrive_core::InputError;

use crate::geometry::{Geometry, DOM_RADIUS};

/// Most PMTs in one module type (IceCube-Gen2 designs have 16–18, the mDOM 24).
pub const MAX_PMTS: usize = 1024;
/// Most directions in `om.dirs` (PPC's file has 642).
pub const MAX_DIRS: usize = 1 << 20;
/// Most module types in `om.conf`.
pub const MAX_TYPES: usize = 256;

/// Response of a PMT whose cathode is a cap of height (1 − β)R of a sphere, to a photon seen at
/// cosine `x` from the cap's axis (x = 1: head-on): the projected area of the cap's visible
/// surface, ∫_cap max(0, p·v) dA, over its head-on value π R²(1 − β²). For β < −1, a cylinder
/// (√(1 − x²)).
#[must_use]
pub fn cap_response(beta: f64, x: f64) -> f64 {
    let x = x.clamp(-1.0, 1.0);
    let s = (1.0 - x * x).sqrt();
    if beta < -1.0 {
        return s;
    }
    // The base disk's projection, seen from the front.
    let mut area = x.max(0.0);
    // Seen at angle θ with sin θ > β (cap tilted enough), part of the curved surface shows beyond
    // the disk's rim: the area of the circular segment cut off by the rim's projected ellipse.
    // With t = β / sin θ and c = 1 − β², segment(u) = acos(u) − sin(2 acos u)/2:
    // extra = (segment(t)/c − |x|·segment(t·|x|/√c)) / π.
    if beta < 1.0 && s > beta {
        let t = if s > 0.0 { beta / s } else { 0.0 };
        let c = 1.0 - beta * beta;
        let segment = |u: f64| {
            let a = u.clamp(-1.0, 1.0).acos();
            a - (2.0 * a).sin() / 2.0
        };
        area += (segment(t) / c - segment(t * x.abs() / c.sqrt()) * x.abs()) / std::f64::consts::PI;
    }
    area
}

/// One module type of `om.conf`.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleType {
    /// The type number (`om.map`'s third column) and name.
    pub id: i32,
    pub name: String,
    /// Overall efficiency scale, PMT shape β, spheroid radii Rr, Rz [m] (Rz < 0: cylinder).
    pub area: f64,
    pub beta: f64,
    pub rr: f64,
    pub rz: f64,
    /// PMT pointing directions (unit vectors) in the module frame.
    pub pmts: Vec<[f64; 3]>,
    /// Azimuth of the cable in the module frame [deg] (turned to dx.dat's azimuth).
    pub cable_deg: f64,
    /// max over directions of F(n)/A(n) [1/m²] (PPC's `fx`, A the module's projected area) and
    /// the mean of F(n) (set by `normalise`).
    pub fx: f64,
    pub f_mean: f64,
    /// Per PMT type (eff-f2k type 0, 1): largest RDE of this type's modules, and the share of the
    /// photon envelope kept per wavelength slice (set by the detector).
    pub rde_max: [f64; 2],
    pub share: [Vec<f64>; 2],
}

impl ModuleType {
    /// f_k for a photon travelling along `n` (module frame).
    fn pmt_response(&self, k: usize, n: [f64; 3]) -> f64 {
        let m = self.pmts[k];
        cap_response(self.beta, -(n[0] * m[0] + n[1] * m[1] + n[2] * m[2]))
    }

    /// F(n) = Σ_k f(β, −n·m_k).
    #[must_use]
    pub fn response(&self, n: [f64; 3]) -> f64 {
        (0..self.pmts.len()).map(|k| self.pmt_response(k, n)).sum()
    }

    /// The module's cross-section [m²] seen by a photon with direction cosine `nz` to its axis
    /// (PPC's `xarea`): π Rr √(Rz² sin²θ + Rr² cos²θ) for the spheroid, 2Rr · 2|Rz| · sin θ for the
    /// cylinder (its side; the ends are not part of the collision surface).
    #[must_use]
    pub fn cross_section(&self, nz: f64) -> f64 {
        let c2 = (nz * nz).min(1.0);
        if self.rz > 0.0 {
            std::f64::consts::PI * self.rr * (self.rz * self.rz * (1.0 - c2) + self.rr * self.rr * c2).sqrt()
        } else {
            4.0 * self.rr * self.rz.abs() * (1.0 - c2).sqrt()
        }
    }

    /// F/A at direction `n` (0 where the cross-section vanishes).
    fn per_area(&self, n: [f64; 3]) -> f64 {
        let a = self.cross_section(n[2]);
        if a > 0.0 {
            self.response(n) / a
        } else {
            0.0
        }
    }

    /// fx = max F/A and ⟨F⟩ over `dirs` (fx also over the reversed PMT axes, where F usually peaks).
    pub fn normalise(&mut self, dirs: &[[f64; 3]]) {
        let mut max = 0.0f64;
        let mut sum = 0.0;
        for d in dirs {
            max = max.max(self.per_area(*d));
            sum += self.response(*d);
        }
        for m in &self.pmts {
            max = max.max(self.per_area([-m[0], -m[1], -m[2]]));
        }
        self.fx = max;
        self.f_mean = sum / dirs.len().max(1) as f64;
    }

    /// The photon budget's factor [1/m²]: area · fx / ⟨F⟩ (PPC `fraq`: rde = area·fr_flat/sum_ave).
    #[must_use]
    pub fn emission_scale(&self) -> f64 {
        if self.f_mean > 0.0 {
            self.area * self.fx / self.f_mean
        } else {
            0.0
        }
    }

    /// Probability that a hit on a module of this type (`rde`, PMT type) in `slice` passes the
    /// wavelength/efficiency step.
    #[must_use]
    pub fn keep(&self, high_qe: bool, rde: f64, slice: usize) -> f64 {
        let t = usize::from(high_qe);
        if self.rde_max[t] > 0.0 {
            self.share[t].get(slice).copied().unwrap_or(0.0) * rde / self.rde_max[t]
        } else {
            0.0
        }
    }

    /// The PMT that records a photon of direction `dir` (detector frame) that reached the module's
    /// surface, or None (lost): with `u` uniform in (0, 1], the first k whose cumulative
    /// Σ_{j≤k} f_j / (fx·A(n)) reaches `u` (PPC `getPMT`). With a cable azimuth φ (dx.dat) the
    /// module is turned by φ − `cable_deg` about z.
    #[must_use]
    pub fn choose(&self, dir: [f32; 3], cable_azimuth_deg: Option<f64>, u: f64) -> Option<usize> {
        let mut n = [f64::from(dir[0]), f64::from(dir[1]), f64::from(dir[2])];
        if let Some(phi) = cable_azimuth_deg {
            // The photon in the module frame: rotated by −(φ − cable).
            let (s, c) = (phi - self.cable_deg).to_radians().sin_cos();
            n = [n[0] * c + n[1] * s, n[1] * c - n[0] * s, n[2]];
        }
        let norm = self.fx * self.cross_section(n[2]);
        if norm <= 0.0 {
            return None;
        }
        let mut total = 0.0;
        for k in 0..self.pmts.len() {
            total += self.pmt_response(k, n) / norm;
            if total >= u {
                return Some(k);
            }
        }
        None
    }
}

fn unit_from_angles(theta_deg: f64, phi_deg: f64) -> [f64; 3] {
    let (st, ct) = theta_deg.to_radians().sin_cos();
    let (sp, cp) = phi_deg.to_radians().sin_cos();
    [st * cp, st * sp, ct]
}

/// `om.conf`: `name type area beta Rr Rz num θ φ [cable]`, then `num − 1` lines `θ φ` (the other
/// PMTs' zenith and azimuth [deg]). `#` starts a comment. Type −1 (PPC's redefinition of the
/// nominal DOM) is skipped with a note; as.dat and wv.dat describe the nominal DOM here.
pub fn read_conf(path: &Path) -> Result<(Vec<ModuleType>, Vec<String>), InputError> {
    let text = read_text(path)?;
    let mut lines = data_lines(&text);
    let mut types: Vec<ModuleType> = Vec::new();
    let mut notes = Vec::new();
    while let Some((line, l)) = lines.next() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() < 9 || t.len() > 10 {
            return Err(InputError::new(
                path,
                line,
                format!(
                    "{} columns; expected 9 or 10 (name type area beta Rr Rz num theta phi [cable])",
                    t.len()
                ),
            ));
        }
        let f = |k: usize, name: &str| parse_f64(path, line, name, Some(t[k]));
        let id = parse_i64(path, line, "type", Some(t[1]))?;
        let id = i32::try_from(id).map_err(|_| InputError::new(path, line, "out of range").field("type"))?;
        let (area, beta, rr, rz) = (f(2, "area")?, f(3, "beta")?, f(4, "Rr")?, f(5, "Rz")?);
        let num = parse_i64(path, line, "num", Some(t[6]))?;
        if num < 1 || num as usize > MAX_PMTS {
            return Err(InputError::new(path, line, format!("{num} PMTs; expected 1 to {MAX_PMTS}")).field("num"));
        }
        if !(area >= 0.0 && area.is_finite()) {
            return Err(InputError::new(path, line, "must be finite and ≥ 0").field("area"));
        }
        if !beta.is_finite() || beta > 1.0 {
            return Err(InputError::new(path, line, "must be at most 1").field("beta"));
        }
        if !(rr > 0.0 && rr < 10.0 && rz.abs() > 0.0 && rz.abs() < 10.0) {
            return Err(InputError::new(path, line, "module radii must be non-zero and below 10 m").field("Rr/Rz"));
        }
        let cable_deg = if t.len() == 10 { f(9, "cable")? } else { 0.0 };
        let mut pmts = Vec::with_capacity(num as usize);
        pmts.push(unit_from_angles(f(7, "theta")?, f(8, "phi")?));
        for k in 1..num {
            let Some((pl, pline)) = lines.next() else {
                return Err(InputError::new(path, line, format!("type {id} declares {num} PMTs, the file ends after {k}")).field("num"));
            };
            let p: Vec<&str> = pline.split_whitespace().collect();
            if p.len() != 2 {
                return Err(InputError::new(
                    path,
                    pl,
                    format!("{} columns; expected 2 (theta phi of PMT {k} of type {id})", p.len()),
                ));
            }
            let th = parse_f64(path, pl, "theta", Some(p[0]))?;
            let ph = parse_f64(path, pl, "phi", Some(p[1]))?;
            pmts.push(unit_from_angles(th, ph));
        }
        if id < 0 {
            notes.push(format!(
                "{}:{line}: om.conf type {id} (redefining the nominal DOM) is not simulated; as.dat and wv.dat describe it",
                path.display()
            ));
            continue;
        }
        if types.iter().any(|m| m.id == id) {
            return Err(InputError::new(path, line, format!("type {id} defined twice")).field("type"));
        }
        // β < −1 is PPC's cylindrical cathode; −2 also selects its WOM transit-time model.
        if beta == -2.0 {
            notes.push(format!(
                "{}:{line}: type {id}: the WOM transit-time model (beta = -2) is not simulated; a cylindrical response is used",
                path.display()
            ));
        }
        if types.len() == MAX_TYPES {
            return Err(InputError::new(path, line, format!("more than {MAX_TYPES} module types")));
        }
        types.push(ModuleType {
            id,
            name: t[0].to_string(),
            area,
            beta,
            rr,
            rz,
            pmts,
            cable_deg,
            fx: 0.0,
            f_mean: 0.0,
            rde_max: [0.0, 0.0],
            share: [Vec::new(), Vec::new()],
        });
    }
    Ok((types, notes))
}

/// `om.dirs`: `index x y z` per line, unit vectors roughly uniform on the sphere.
pub fn read_dirs(path: &Path) -> Result<Vec<[f64; 3]>, InputError> {
    let text = read_text(path)?;
    let mut dirs = Vec::new();
    for (line, l) in data_lines(&text) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() != 4 {
            return Err(InputError::new(
                path,
                line,
                format!("{} columns; expected 4 (index x y z)", t.len()),
            ));
        }
        if dirs.len() == MAX_DIRS {
            return Err(InputError::new(path, line, format!("more than {MAX_DIRS} directions")));
        }
        let v = [
            parse_f64(path, line, "x", Some(t[1]))?,
            parse_f64(path, line, "y", Some(t[2]))?,
            parse_f64(path, line, "z", Some(t[3]))?,
        ];
        let norm = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        if (norm - 1.0).abs() > 1e-3 {
            return Err(InputError::new(path, line, format!("length {norm}; expected a unit vector")).field("x y z"));
        }
        dirs.push(v);
    }
    if dirs.is_empty() {
        return Err(InputError::file(path, "no directions"));
    }
    Ok(dirs)
}

/// `om.map`: `string om type` per line.
pub fn read_map(path: &Path) -> Result<Vec<(usize, i32, i32, i32)>, InputError> {
    let text = read_text(path)?;
    let mut rows = Vec::new();
    for (line, l) in data_lines(&text) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() != 3 {
            return Err(InputError::new(
                path,
                line,
                format!("{} columns; expected 3 (string om type)", t.len()),
            ));
        }
        let int = |k: usize, name: &str| -> Result<i32, InputError> {
            let v = parse_i64(path, line, name, Some(t[k]))?;
            i32::try_from(v).map_err(|_| InputError::new(path, line, format!("{v} is out of range")).field(name))
        };
        rows.push((line, int(0, "string")?, int(1, "om")?, int(2, "type")?));
    }
    Ok(rows)
}

/// `om.wv_<type>.<pmt type>`: `wavelength [nm]  direction-averaged effective area [cm²]` per line,
/// wavelengths increasing (PPC reads the columns in this order).
#[derive(Clone, Debug, PartialEq)]
pub struct EffectiveArea {
    pub wavelength: Vec<f64>,
    pub area_cm2: Vec<f64>,
}

impl EffectiveArea {
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let text = read_text(path)?;
        let (mut wavelength, mut area_cm2) = (Vec::new(), Vec::new());
        for (line, l) in data_lines(&text) {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() != 2 {
                return Err(InputError::new(
                    path,
                    line,
                    format!("{} columns; expected 2 (wavelength area)", t.len()),
                ));
            }
            let w = parse_f64(path, line, "wavelength", Some(t[0]))?;
            let a = parse_f64(path, line, "area", Some(t[1]))?;
            if !(100.0..=2000.0).contains(&w) {
                return Err(InputError::new(path, line, format!("{w} nm is outside 100-2000 nm")).field("wavelength"));
            }
            if wavelength.last().is_some_and(|&p| w <= p) {
                return Err(InputError::new(path, line, "wavelengths must increase").field("wavelength"));
            }
            if !(a >= 0.0 && a.is_finite()) {
                return Err(InputError::new(path, line, "must be finite and ≥ 0").field("area"));
            }
            if wavelength.len() == 100_000 {
                return Err(InputError::new(path, line, "more than 100000 rows"));
            }
            wavelength.push(w);
            area_cm2.push(a);
        }
        if wavelength.len() < 2 {
            return Err(InputError::file(path, "needs at least two rows"));
        }
        Ok(Self { wavelength, area_cm2 })
    }

    /// EA(λ) × the Frank–Tamm density 2πα(1 − 1/n_p²)/λ² [photons per m of track per nm per cm²
    /// of area, ×10⁻⁴ m²/cm²], linear between the rows and down to 0 one row spacing beyond the
    /// first and last, at the centres of `grid`'s bins (PPC's `irde::read`).
    #[must_use]
    pub fn photons_on(&self, grid: &crate::envelope::Grid) -> Vec<f64> {
        let ft = |w: f64| {
            let um = w * 1e-3;
            let n = crate::optics::n_phase(um);
            // 2πα/λ² [1/µm²] × 10⁻³ µm/nm × 10⁶ /m → per m per nm, × 10⁻⁴ m²/cm².
            2.0 * std::f64::consts::PI / 137.035_999_11 * (1.0 - 1.0 / (n * n)) / (um * um) * 1e-1
        };
        let (w, a) = (&self.wavelength, &self.area_cm2);
        let n = w.len();
        let mut xs = Vec::with_capacity(n + 2);
        let mut ys = Vec::with_capacity(n + 2);
        xs.push(w[0] - (w[1] - w[0]));
        ys.push(0.0);
        for i in 0..n {
            xs.push(w[i]);
            ys.push(a[i] * ft(w[i]));
        }
        xs.push(w[n - 1] + (w[n - 1] - w[n - 2]));
        ys.push(0.0);
        (0..grid.n)
            .map(|k| {
                let c = grid.wmin + grid.bin * (k as f64 + 0.5);
                if !(xs[0] < c && c < xs[n + 1]) {
                    return 0.0;
                }
                let j = xs.partition_point(|&z| z < c).clamp(1, n + 1);
                ys[j - 1] + (ys[j] - ys[j - 1]) * (c - xs[j - 1]) / (xs[j] - xs[j - 1])
            })
            .collect()
    }
}

/// The multi-PMT configuration of a detector.
#[derive(Clone, Debug, PartialEq)]
pub struct Sensors {
    pub dir: PathBuf,
    pub types: Vec<ModuleType>,
    /// Per module of the geometry: index into `types`, or None (a single-PMT IceCube DOM).
    pub module_type: Vec<Option<u16>>,
    /// What was read, in words.
    pub notes: Vec<String>,
}

impl Sensors {
    /// Read `om.conf`, `om.dirs` and `om.map` from `dir`. None when `dir` has no `om.conf` or it
    /// defines no type ≥ 0. `om.map` rows for modules not in the geometry are counted in a note;
    /// a row naming an undefined type is an error.
    pub fn load(dir: &Path, geometry: &Geometry) -> Result<Option<Self>, InputError> {
        let conf = dir.join("om.conf");
        if !conf.is_file() {
            return Ok(None);
        }
        let (mut types, mut notes) = read_conf(&conf)?;
        if types.is_empty() {
            return Ok(None);
        }
        let dirs = read_dirs(&dir.join("om.dirs"))?;
        for t in &mut types {
            t.normalise(&dirs);
        }
        let map_path = dir.join("om.map");
        let mut module_type = vec![None; geometry.doms.len()];
        let mut missing = 0usize;
        if map_path.is_file() {
            for (line, s, om, m) in read_map(&map_path)? {
                let Some(ti) = types.iter().position(|t| t.id == m) else {
                    return Err(InputError::new(&map_path, line, format!("type {m} is not in om.conf")).field("type"));
                };
                match geometry.find(s, om) {
                    Some(i) => module_type[i] = Some(ti as u16),
                    None => missing += 1,
                }
            }
        }
        if missing > 0 {
            notes.push(format!("om.map: {missing} rows name modules not in the geometry (ignored)"));
        }
        Ok(Some(Self {
            dir: dir.to_path_buf(),
            types,
            module_type,
            notes,
        }))
    }

    #[must_use]
    pub fn module_of(&self, dom: usize) -> Option<&ModuleType> {
        self.module_type.get(dom).copied().flatten().map(|i| &self.types[i as usize])
    }

    /// Per module of the geometry its collision shape [R, F] (PPC: R = Rr, F = Rz/Rr), the
    /// nominal DOM's sphere [R₀, 1] for single-PMT DOMs (`collision::DomIndex::build`).
    #[must_use]
    pub fn shapes(&self) -> Vec<[f64; 2]> {
        (0..self.module_type.len())
            .map(|i| self.module_of(i).map_or([DOM_RADIUS, 1.0], |m| [m.rr, m.rz / m.rr]))
            .collect()
    }
}

/// Roughly uniform unit vectors (a Fibonacci lattice of `n` points) for `om.dirs`-like uses.
#[must_use]
pub fn fibonacci_directions(n: usize) -> Vec<[f64; 3]> {
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    (0..n)
        .map(|i| {
            let z = 1.0 - (2 * i + 1) as f64 / n as f64;
            let r = (1.0 - z * z).sqrt();
            let (s, c) = (golden * i as f64).sin_cos();
            [r * c, r * s, z]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::RandomStream;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wd-sensors-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// f(β, x) is the projected visible area of a spherical cap over its head-on value: compare
    /// with a Monte Carlo integral ∫_cap max(0, p·v) dA / (π(1 − β²)) over 400 000 points of the
    /// sphere (statistical error ≲ 0.004); threshold 0.01.
    #[test]
    fn cap_response_is_the_caps_projected_area() {
        assert!((cap_response(0.0, 0.3) - 0.65).abs() < 1e-12, "half sphere: (1 + x)/2");
        assert!(
            (cap_response(1.0, 0.3) - 0.3).abs() < 1e-12 && cap_response(1.0, -0.3) == 0.0,
            "flat"
        );
        assert!((cap_response(-2.0, 0.6) - 0.8).abs() < 1e-12, "cylinder");
        let mut rng = RandomStream::new(5, 0, 0);
        let pts: Vec<[f64; 3]> = (0..400_000)
            .map(|_| {
                let z = 2.0 * rng.uniform_f64() - 1.0;
                let phi = 2.0 * std::f64::consts::PI * rng.uniform_f64();
                let r = (1.0 - z * z).sqrt();
                [r * phi.cos(), r * phi.sin(), z]
            })
            .collect();
        for beta in [0.0, 0.49, 0.9] {
            for x in [1.0, 0.7, 0.3, 0.0, -0.3, -0.7] {
                let v = [(1.0f64 - x * x).sqrt(), 0.0, x];
                let sum: f64 = pts
                    .iter()
                    .filter(|p| p[2] >= beta)
                    .map(|p| (p[0] * v[0] + p[2] * v[2]).max(0.0))
                    .sum();
                let mc = 4.0 * std::f64::consts::PI * sum / pts.len() as f64 / (std::f64::consts::PI * (1.0 - beta * beta));
                let f = cap_response(beta, x);
                assert!((f - mc).abs() < 0.01, "beta {beta} x {x}: {f} vs {mc}");
            }
        }
    }

    const DEGG: &str = "# name type area beta Rr Rz num theta phi cable\n\
        Default -1 1 0.49 0.1651 0.1651 1 180 0 90\n\
        DEgg 2 1 0.5 0.150 0.267 2 180 0\n\
        0 0\n";

    #[test]
    fn om_conf_parses_and_bad_files_name_line_and_field() {
        let d = tmp("conf");
        let p = write(&d, "om.conf", DEGG);
        let (types, notes) = read_conf(&p).unwrap();
        assert_eq!(types.len(), 1);
        assert_eq!(notes.len(), 1, "type -1 skipped with a note");
        let t = &types[0];
        assert_eq!((t.id, t.name.as_str(), t.pmts.len()), (2, "DEgg", 2));
        assert!((t.pmts[0][2] + 1.0).abs() < 1e-12 && (t.pmts[1][2] - 1.0).abs() < 1e-12);
        for (text, want) in [
            ("X 1 1 0.5 0.15 0.2 2 180 0\n", "type 1 declares 2 PMTs"),
            ("X 1 1 0.5 0.15 0.2 2 180 0\n0\n", ":2: 1 columns; expected 2"),
            ("X 1 1 0.5 0.15 0.2 99999999 180 0\n", "field 'num'"),
            ("X 1 1 zero 0.15 0.2 1 180 0\n", ":1: field 'beta'"),
            ("X 1 1 0.5 0 0.2 1 180 0\n", "field 'Rr/Rz'"),
            ("X 1 1 0.5 0.15 0.2 1 180\n", "8 columns"),
            (
                "X 1 1 0.5 0.15 0.2 1 180 0\nY 1 1 0.5 0.15 0.2 1 180 0\n",
                ":2: field 'type': type 1 defined twice",
            ),
        ] {
            let p = write(&d, "bad.conf", text);
            let e = read_conf(&p).unwrap_err().to_string();
            assert!(e.contains("bad.conf") && e.contains(want), "{text:?}: {e}");
        }
        let p = write(&d, "om.dirs", "1 0 0 1\n2 0 0 2\n");
        assert!(read_dirs(&p).unwrap_err().to_string().contains("om.dirs:2: field 'x y z'"));
        let p = write(&d, "om.map", "1 1 2\n1 2\n");
        assert!(read_map(&p).unwrap_err().to_string().contains("om.map:2: 2 columns"));
        let p = write(&d, "om.wv_2.0", "300 1\n400 2\n390 3\n");
        assert!(EffectiveArea::read(&p)
            .unwrap_err()
            .to_string()
            .contains("om.wv_2.0:3: field 'wavelength'"));
        let p = write(&d, "om.wv_2.0", "300 1\n400 -2\n");
        assert!(EffectiveArea::read(&p).unwrap_err().to_string().contains(":2: field 'area'"));
        std::fs::remove_dir_all(&d).ok();
    }

    fn mdom() -> ModuleType {
        let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/photon/upgrade-sensors/om.conf");
        let (types, _) = read_conf(&d).unwrap();
        let mut t = types.into_iter().find(|t| t.pmts.len() == 24).expect("mDOM type");
        t.normalise(&fibonacci_directions(642));
        t
    }

    /// A photon travelling against PMT k's axis (head-on) is assigned to PMT k more often than to
    /// any other (20 000 draws of u), for every PMT of the mDOM and the D-Egg; the D-Egg's PMTs
    /// (β = 0.5, up and down) see nothing of each other's head-on photons, so there it is 100 %.
    /// With a cable azimuth (dx.dat) the module turns with it: the turned photon reaches the same PMT.
    #[test]
    fn photon_along_a_pmt_axis_goes_to_that_pmt() {
        let mut degg = read_conf(&write(&tmp("axis"), "om.conf", DEGG)).unwrap().0.remove(0);
        degg.normalise(&fibonacci_directions(642));
        let mut rng = RandomStream::new(3, 0, 0);
        for t in [mdom(), degg] {
            for (k, m) in t.pmts.iter().enumerate() {
                let n = [-m[0], -m[1], -m[2]];
                let (s, c) = (40f64 - t.cable_deg).to_radians().sin_cos();
                let turned = [(n[0] * c - n[1] * s) as f32, (n[0] * s + n[1] * c) as f32, n[2] as f32];
                let dir = [n[0] as f32, n[1] as f32, n[2] as f32];
                let mut counts = vec![0u32; t.pmts.len()];
                for _ in 0..20_000 {
                    let u = rng.uniform_f64();
                    let a = t.choose(dir, None, u);
                    assert_eq!(a, t.choose(turned, Some(40.0), u), "{} PMT {k}: the cable turns the module", t.name);
                    if let Some(j) = a {
                        counts[j] += 1;
                    }
                }
                let best = (0..counts.len()).max_by_key(|&j| counts[j]).unwrap();
                assert_eq!(best, k, "{} PMT {k}: {counts:?}", t.name);
                if t.pmts.len() == 2 {
                    assert_eq!(counts[k], 20_000, "D-Egg head-on: always PMT {k}");
                }
            }
        }
    }

    /// Photons of uniformly drawn directions on the module's surface: the fraction kept by each
    /// PMT equals the solid-angle mean ⟨f_k/(fx·A)⟩ (computed on a 20 000-point Fibonacci
    /// lattice). 10⁶ photons; each fraction (≈ 0.01–0.02 for the mDOM) is checked within 5σ of its
    /// binomial error, and the total within 5σ. The lattice mean of F agrees with om.dirs' ⟨F⟩.
    #[test]
    fn isotropic_photons_split_over_pmts_as_the_acceptance_integral() {
        let t = mdom();
        let lattice = fibonacci_directions(20_000);
        let expect: Vec<f64> = (0..t.pmts.len())
            .map(|k| {
                lattice
                    .iter()
                    .map(|n| t.pmt_response(k, *n) / (t.fx * t.cross_section(n[2])))
                    .sum::<f64>()
                    / lattice.len() as f64
            })
            .collect();
        let n = 1_000_000;
        let mut counts = vec![0u64; t.pmts.len()];
        let mut rng = RandomStream::new(17, 0, 0);
        for _ in 0..n {
            let z = 2.0 * rng.uniform_f64() - 1.0;
            let phi = 2.0 * std::f64::consts::PI * rng.uniform_f64();
            let r = (1.0 - z * z).sqrt();
            let dir = [(r * phi.cos()) as f32, (r * phi.sin()) as f32, z as f32];
            if let Some(k) = t.choose(dir, None, rng.uniform_f64()) {
                counts[k] += 1;
            }
        }
        for (k, (&c, &p)) in counts.iter().zip(&expect).enumerate() {
            let sigma = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((c as f64 - n as f64 * p).abs() < 5.0 * sigma, "PMT {k}: {c} vs {}", n as f64 * p);
        }
        let total: u64 = counts.iter().sum();
        let p: f64 = expect.iter().sum();
        let f_lattice = lattice.iter().map(|n| t.response(*n)).sum::<f64>() / lattice.len() as f64;
        assert!((f_lattice - t.f_mean).abs() < 2e-3 * t.f_mean, "lattice vs om.dirs mean");
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        assert!((total as f64 - n as f64 * p).abs() < 5.0 * sigma, "{total} vs {}", n as f64 * p);
    }
}
