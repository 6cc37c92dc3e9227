//! A cylindrically symmetric field map on an (r, z) grid: B(x) = (B_r x/r, B_r y/r, B_z) with
//! B_r and B_z interpolated bilinearly between the grid's nodes (a solenoid's field, as
//! Geant4 users and Celeritas' `RZMapField` give it).
//!
//! File (CSV with a header, or Parquet), one row per node, in any order: `r_mm`, `z_mm`, `br_T`,
//! `bz_T`. The nodes must form a full rectangular grid (every r with every z), r ≥ 0, at least
//! two values of each; the spacing may vary. Bilinear interpolation in the cell
//! [r_i, r_i+1] × [z_j, z_j+1] (Press et al., Numerical Recipes §3.6):
//!
//!   B(r, z) = (1 − t)(1 − u) B_ij + t (1 − u) B_i+1,j + (1 − t) u B_i,j+1 + t u B_i+1,j+1,
//!   t = (r − r_i)/(r_i+1 − r_i), u = (z − z_j)/(z_j+1 − z_j).
//!
//! On the axis (r < 1e-12 mm) the transverse part is 0 (B_r is odd in r). A map must cover the
//! world ([`FieldMap::check_covers`]); points outside the grid by rounding take the nearest
//! edge's value.

use crate::geo::Vec3;
use std::path::{Path, PathBuf};
use warpdrive_core::error::InputError;
use warpdrive_core::table::{read_parquet_or_text, ParquetOrText};

/// Most grid nodes a map may have (16 bytes each; 10⁷ nodes are 160 MB).
pub const MAX_NODES: usize = 10_000_000;
/// Strongest field a map may hold [T] (as the uniform field's limit).
pub const MAX_MAP_FIELD_T: f64 = 100.0;

#[derive(Clone, Debug, PartialEq)]
pub struct FieldMap {
    pub path: PathBuf,
    /// Increasing node coordinates [mm].
    pub r: Vec<f64>,
    pub z: Vec<f64>,
    /// Per node, index `i * z.len() + j`: (B_r, B_z) [T].
    pub b: Vec<[f64; 2]>,
    /// The largest |B| at a node [T].
    pub b_max: f64,
}

const COLUMNS: [&str; 4] = ["r_mm", "z_mm", "br_T", "bz_T"];

impl FieldMap {
    /// Read a CSV or Parquet map; errors name the file (and the CSV line).
    pub fn read(path: &Path) -> Result<FieldMap, InputError> {
        let rows: Vec<[f64; 4]> = match read_parquet_or_text(path)? {
            ParquetOrText::Text(text) => parse_csv(path, &text)?,
            ParquetOrText::Parquet(f) => {
                let names = f.names();
                let mut which = Vec::new();
                for c in COLUMNS {
                    let i = names.iter().position(|n| n == c).ok_or_else(|| {
                        InputError::file(path, format!("no column '{c}' (a field map has columns {})", COLUMNS.join(", ")))
                    })?;
                    which.push(i);
                }
                if f.rows() > MAX_NODES as u64 {
                    return Err(InputError::file(
                        path,
                        format!("{} rows: a field map has at most {MAX_NODES} nodes", f.rows()),
                    ));
                }
                let cols: Vec<Vec<f64>> = f
                    .columns(&which)?
                    .into_iter()
                    .map(warpdrive_core::table::Column::into_f64)
                    .collect();
                (0..cols[0].len())
                    .map(|k| [cols[0][k], cols[1][k], cols[2][k], cols[3][k]])
                    .collect()
            }
        };
        Self::from_rows(path, &rows)
    }

    /// Build from (r, z, B_r, B_z) rows.
    pub fn from_rows(path: &Path, rows: &[[f64; 4]]) -> Result<FieldMap, InputError> {
        let bad = |m: String| InputError::file(path, m);
        if rows.len() > MAX_NODES {
            return Err(bad(format!("{} rows: a field map has at most {MAX_NODES} nodes", rows.len())));
        }
        for (k, row) in rows.iter().enumerate() {
            if !row.iter().all(|x| x.is_finite()) {
                return Err(bad(format!("row {}: values must be finite: {row:?}", k + 1)).field(COLUMNS.join(",")));
            }
            if row[0] < 0.0 {
                return Err(bad(format!("row {}: r_mm = {} is negative", k + 1, row[0])).field("r_mm"));
            }
            if row[2].hypot(row[3]) > MAX_MAP_FIELD_T {
                return Err(bad(format!(
                    "row {}: |B| = {} T is more than {MAX_MAP_FIELD_T} T",
                    k + 1,
                    row[2].hypot(row[3])
                )));
            }
        }
        let mut r: Vec<f64> = rows.iter().map(|x| x[0]).collect();
        let mut z: Vec<f64> = rows.iter().map(|x| x[1]).collect();
        for v in [&mut r, &mut z] {
            v.sort_by(f64::total_cmp);
            v.dedup();
        }
        if r.len() < 2 || z.len() < 2 {
            return Err(bad(format!(
                "{} values of r and {} of z: a field map needs a grid of at least 2 × 2 nodes",
                r.len(),
                z.len()
            )));
        }
        if r.len().saturating_mul(z.len()) != rows.len() {
            return Err(bad(format!(
                "{} rows for {} values of r × {} of z: the nodes must form a full grid, each once",
                rows.len(),
                r.len(),
                z.len()
            )));
        }
        let mut b = vec![[f64::NAN; 2]; rows.len()];
        for row in rows {
            let i = r.partition_point(|&x| x < row[0]);
            let j = z.partition_point(|&x| x < row[1]);
            let slot = &mut b[i * z.len() + j];
            if !slot[0].is_nan() {
                return Err(bad(format!("the node r = {} mm, z = {} mm is given twice", row[0], row[1])));
            }
            *slot = [row[2], row[3]];
        }
        let b_max = b.iter().map(|v| v[0].hypot(v[1])).fold(0.0, f64::max);
        Ok(FieldMap {
            path: path.to_path_buf(),
            r,
            z,
            b,
            b_max,
        })
    }

    /// A map equal to a uniform field along z of `bz` [T] on r ∈ [0, r_max], z ∈ [z_min, z_max]
    /// (for tests and comparisons with the helix).
    #[must_use]
    pub fn uniform_z(bz: f64, r_max: f64, z_min: f64, z_max: f64) -> FieldMap {
        let rows: Vec<[f64; 4]> = [0.0, r_max].iter().flat_map(|&r| [z_min, z_max].map(|z| [r, z, 0.0, bz])).collect();
        Self::from_rows(Path::new("uniform"), &rows).expect("a valid grid")
    }

    /// (B_r, B_z) [T] at (r, z), bilinear; clamped to the grid.
    #[must_use]
    pub fn brz(&self, r: f64, z: f64) -> [f64; 2] {
        let (i, t) = cell(&self.r, r);
        let (j, u) = cell(&self.z, z);
        let nz = self.z.len();
        let at = |a: usize, c: usize| self.b[a * nz + c];
        let (b00, b10, b01, b11) = (at(i, j), at(i + 1, j), at(i, j + 1), at(i + 1, j + 1));
        let mix = |k: usize| (1.0 - t) * (1.0 - u) * b00[k] + t * (1.0 - u) * b10[k] + (1.0 - t) * u * b01[k] + t * u * b11[k];
        [mix(0), mix(1)]
    }

    /// B [T] at a point [mm] in the world's frame. r = √(x² + y²) as written (not `hypot`,
    /// whose last bit is the platform libm's): the GPU twin (`kernels/field/map.cuh`
    /// `field_map_at`) computes the same bits.
    #[must_use]
    pub fn at(&self, p: Vec3) -> Vec3 {
        let r = (p.x * p.x + p.y * p.y).sqrt();
        let [br, bz] = self.brz(r, p.z);
        if r < 1e-12 {
            return Vec3::new(0.0, 0.0, bz);
        }
        Vec3::new(br * p.x / r, br * p.y / r, bz)
    }

    /// Refuse a map that does not cover the world's bounding box (its corners' largest r and
    /// its z range), naming the map and the world.
    pub fn check_covers(&self, world: &crate::geo::Aabb, world_name: &str) -> Result<(), InputError> {
        let rx = world.min.x.abs().max(world.max.x.abs());
        let ry = world.min.y.abs().max(world.max.y.abs());
        let r_need = rx.hypot(ry);
        let (r_max, z_lo, z_hi) = (*self.r.last().unwrap(), self.z[0], *self.z.last().unwrap());
        if r_need > r_max || world.min.z < z_lo || world.max.z > z_hi {
            return Err(InputError::file(
                &self.path,
                format!(
                    "the field map covers r ≤ {r_max} mm, z ∈ [{z_lo}, {z_hi}] mm, but the world '{world_name}' reaches r = {} mm, z ∈ [{}, {}] mm: extend the map to cover the world",
                    fmt(r_need),
                    fmt(world.min.z),
                    fmt(world.max.z)
                ),
            ));
        }
        Ok(())
    }
}

fn fmt(x: f64) -> String {
    format!("{}", (x * 1e6).round() / 1e6)
}

/// The cell [v_i, v_i+1] holding x (clamped) and x's fraction t in it.
fn cell(v: &[f64], x: f64) -> (usize, f64) {
    let n = v.len();
    let i = v.partition_point(|&a| a <= x).saturating_sub(1).min(n - 2);
    let t = ((x - v[i]) / (v[i + 1] - v[i])).clamp(0.0, 1.0);
    (i, t)
}

/// CSV rows (a header naming the four columns in any order; `#` comments and blank lines
/// skipped); errors name the line.
fn parse_csv(path: &Path, text: &str) -> Result<Vec<[f64; 4]>, InputError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let (hl, header) = lines
        .next()
        .ok_or_else(|| InputError::file(path, format!("empty: a field map has a header {}", COLUMNS.join(","))))?;
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut which = [0usize; 4];
    for (w, c) in which.iter_mut().zip(COLUMNS) {
        *w = names.iter().position(|n| *n == c).ok_or_else(|| {
            InputError::new(
                path,
                hl,
                format!("no column '{c}' in the header (a field map has columns {})", COLUMNS.join(",")),
            )
        })?;
    }
    let mut rows = Vec::new();
    for (ln, l) in lines {
        if rows.len() >= MAX_NODES {
            return Err(InputError::new(
                path,
                ln,
                format!("more than {MAX_NODES} rows: a field map has at most {MAX_NODES} nodes"),
            ));
        }
        let cells: Vec<&str> = l.split(',').map(str::trim).collect();
        if cells.len() != names.len() {
            return Err(InputError::new(
                path,
                ln,
                format!("{} values, the header has {}", cells.len(), names.len()),
            ));
        }
        let mut row = [0.0; 4];
        for (k, &w) in which.iter().enumerate() {
            row[k] = cells[w]
                .parse()
                .map_err(|_| InputError::new(path, ln, format!("expected a number, found \"{}\"", cells[w])).field(COLUMNS[k]))?;
        }
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bilinear_interpolation_and_the_axis() {
        // B_z = 1 + r/100 + z/1000 and B_r = r/10 are bilinear: reproduced exactly.
        let mut rows = Vec::new();
        for r in [0.0, 50.0, 200.0] {
            for z in [-100.0, 0.0, 30.0, 100.0] {
                rows.push([r, z, r / 10.0, 1.0 + r / 100.0 + z / 1000.0]);
            }
        }
        let m = FieldMap::from_rows(Path::new("m.csv"), &rows).unwrap();
        for (r, z) in [(10.0, -50.0), (120.0, 20.0), (199.0, 99.0), (0.0, 0.0)] {
            let [br, bz] = m.brz(r, z);
            assert!((br - r / 10.0).abs() < 1e-12 && (bz - 1.0 - r / 100.0 - z / 1000.0).abs() < 1e-12);
        }
        let b = m.at(Vec3::new(30.0, 40.0, 0.0));
        assert!((b.x - 5.0 * 0.6).abs() < 1e-12 && (b.y - 5.0 * 0.8).abs() < 1e-12);
        assert_eq!(m.at(Vec3::new(0.0, 0.0, 10.0)).x, 0.0);
    }

    #[test]
    fn bad_maps_are_refused() {
        let p = Path::new("m.csv");
        let e = parse_csv(p, "r_mm,z_mm,br_T\n").unwrap_err().to_string();
        assert!(e.contains("no column 'bz_T'"), "{e}");
        let e = parse_csv(p, "r_mm,z_mm,br_T,bz_T\n0,0,0,x\n").unwrap_err().to_string();
        assert!(e.contains("m.csv:2") && e.contains("\"x\""), "{e}");
        let e = FieldMap::from_rows(p, &[[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0]])
            .unwrap_err()
            .to_string();
        assert!(e.contains("full grid"), "{e}");
        let e = FieldMap::from_rows(p, &[[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]])
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 × 2"), "{e}");
    }
}
