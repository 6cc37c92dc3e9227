//! A photospline "Spline Coefficient Table" (spec §1.1): tensor-product B-spline knots, degrees
//! ("orders" in photospline's words), extents, periods, float32 coefficients in C order
//! (dimension 0 slowest) and the auxiliary header keys; read from and written to FITS.

use crate::fits::{self, Hdu, Pixels, Put, Value};
use std::path::Path;
use warpdrive_core::InputError;

/// Dimensions photospline supports (`PHOTOSPLINE_MAXDIM`).
pub const MAX_DIM: usize = 8;
/// Highest degree the evaluators accept (photospline tables in the wild use 1–5).
pub const MAX_ORDER: u32 = 7;

#[derive(Clone, Debug, PartialEq)]
pub struct SplineTable {
    /// B-spline degree per dimension (photospline's ORDERi: 2 = quadratic).
    pub order: Vec<u32>,
    /// Knot vectors, `naxes[d] + order[d] + 1` each (not padded).
    pub knots: Vec<Vec<f64>>,
    /// Region where the table is meant to be evaluated, `[lo, hi]` per dimension.
    pub extents: Vec<[f64; 2]>,
    /// PERIODi (0 = not periodic; photospline stores but does not use it).
    pub periods: Vec<f64>,
    /// Coefficients per dimension, dimension 0 slowest.
    pub naxes: Vec<usize>,
    pub strides: Vec<usize>,
    pub coefficients: Vec<f32>,
    /// Auxiliary header keys in file order (GEOMETRY, NGROUP, HIERARCH TARGETMASS, …).
    pub aux: Vec<(String, Value)>,
    /// Whether EXTENTS came from the file (false: defaulted from the knots).
    pub extents_in_file: bool,
}

/// Keys that are part of the format, not auxiliary data (prefix match, as photospline does).
const RESERVED: &[&str] = &["BITPIX", "SIMPLE", "TYPE", "ORDER", "NAXIS", "PERIOD", "EXTEND", "COMMENT"];

fn c_strides(naxes: &[usize]) -> Vec<usize> {
    let mut s = vec![1; naxes.len()];
    for d in (0..naxes.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * naxes[d + 1];
    }
    s
}

impl SplineTable {
    pub fn ndim(&self) -> usize {
        self.order.len()
    }

    /// Build a table from its parts, checking the shapes (used by the reader, the synthetic
    /// benchmark tables and tests).
    pub fn new(order: Vec<u32>, knots: Vec<Vec<f64>>, naxes: Vec<usize>, coefficients: Vec<f32>) -> Result<Self, String> {
        let nd = order.len();
        if nd == 0 || nd > MAX_DIM {
            return Err(format!("{nd} dimensions; 1 to {MAX_DIM} are supported"));
        }
        if knots.len() != nd || naxes.len() != nd {
            return Err(format!(
                "{nd} orders but {} knot vectors and {} coefficient axes",
                knots.len(),
                naxes.len()
            ));
        }
        for d in 0..nd {
            if order[d] > MAX_ORDER {
                return Err(format!("ORDER{d} = {} is above the supported {MAX_ORDER}", order[d]));
            }
            let want = naxes[d] + order[d] as usize + 1;
            if knots[d].len() != want {
                return Err(format!(
                    "KNOTS{d} has {} knots but axis {d} has {} coefficients of order {}: expected {want}",
                    knots[d].len(),
                    naxes[d],
                    order[d]
                ));
            }
            if naxes[d] <= order[d] as usize {
                return Err(format!(
                    "axis {d} has {} coefficients, fewer than order + 1 = {}",
                    naxes[d],
                    order[d] + 1
                ));
            }
            if let Some(i) = knots[d].iter().position(|k| !k.is_finite()) {
                return Err(format!("KNOTS{d}[{i}] is not finite"));
            }
            if knots[d][0] == knots[d][knots[d].len() - 1] {
                return Err(format!("KNOTS{d} are all {}: the axis spans no interval", knots[d][0]));
            }
            if let Some(i) = knots[d].windows(2).position(|w| w[1] < w[0]) {
                return Err(format!(
                    "KNOTS{d} decreases at index {}: {} then {}",
                    i + 1,
                    knots[d][i],
                    knots[d][i + 1]
                ));
            }
        }
        let total: usize = naxes.iter().product();
        if coefficients.len() != total {
            return Err(format!("{} coefficients for axes {naxes:?} (= {total})", coefficients.len()));
        }
        let extents = (0..nd)
            .map(|d| {
                let k = order[d] as usize;
                [knots[d][k], knots[d][naxes[d]]]
            })
            .collect();
        Ok(Self {
            strides: c_strides(&naxes),
            periods: vec![0.0; nd],
            order,
            knots,
            extents,
            naxes,
            coefficients,
            aux: Vec::new(),
            extents_in_file: false,
        })
    }

    /// Read a photospline FITS table.
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let hdus = fits::read(path)?;
        Self::from_hdus(path, &hdus)
    }

    /// Parse from FITS bytes (`path` names them in errors).
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Self, InputError> {
        Self::from_hdus(path, &fits::parse(path, bytes)?)
    }

    fn from_hdus(path: &Path, hdus: &[Hdu]) -> Result<Self, InputError> {
        let primary = &hdus[0];
        let at = primary.first_card;
        let coefficients = match &primary.pixels {
            Pixels::F32(v) => v.clone(),
            Pixels::F64(_) => {
                return Err(InputError::new(
                    path,
                    at,
                    "coefficients are float64 (BITPIX = -64); photospline tables store float32 (BITPIX = -32)",
                )
                .field("BITPIX"))
            }
            Pixels::Int { bitpix, .. } => {
                return Err(InputError::new(
                    path,
                    at,
                    format!("coefficients have BITPIX = {bitpix} (integers); photospline tables store float32 (BITPIX = -32)"),
                )
                .field("BITPIX"))
            }
        };
        if let Some(c) = primary.get("TYPE") {
            if c.value != Value::Str("Spline Coefficient Table".into()) {
                return Err(
                    InputError::new(path, c.card, format!("TYPE = '{}', not 'Spline Coefficient Table'", c.value.text())).field("TYPE"),
                );
            }
        }
        let nd = primary.axes.len();
        if nd == 0 {
            return Err(InputError::new(path, at, "the primary image has no axes (NAXIS = 0): no coefficients").field("NAXIS"));
        }
        // FITS lists NAXIS1 (fastest) first; photospline's naxes are C order (spec §1.1).
        let naxes: Vec<usize> = primary.axes.iter().rev().copied().collect();
        let int_of = |key: &str| -> Result<Option<i64>, InputError> {
            match primary.get(key) {
                None => Ok(None),
                Some(c) => match c.value {
                    Value::Int(i) => Ok(Some(i)),
                    Value::Float(f) if f.fract() == 0.0 => Ok(Some(f as i64)),
                    _ => Err(InputError::new(path, c.card, format!("{key} must be an integer, found '{}'", c.value.text())).field(key)),
                },
            }
        };
        let mut order = Vec::with_capacity(nd);
        let common = int_of("ORDER")?;
        for d in 0..nd {
            let key = format!("ORDER{d}");
            let o = match common {
                Some(o) => o,
                None => int_of(&key)?.ok_or_else(|| InputError::new(path, at, format!("no ORDER or {key} key")).field(key.clone()))?,
            };
            if !(0..=i64::from(MAX_ORDER)).contains(&o) {
                return Err(InputError::new(path, at, format!("order {o} is outside 0..={MAX_ORDER}")).field(key));
            }
            order.push(o as u32);
        }
        let mut periods = vec![0.0; nd];
        for (d, p) in periods.iter_mut().enumerate() {
            if let Some(c) = primary.get(&format!("PERIOD{d}")) {
                *p = match c.value {
                    Value::Int(i) => i as f64,
                    Value::Float(f) => f,
                    _ => return Err(InputError::new(path, c.card, "PERIOD must be a number").field(c.key.clone())),
                };
            }
        }
        let image = |name: &str| hdus.iter().skip(1).find(|h| h.name() == Some(name));
        let as_f64 = |h: &Hdu, name: &str| -> Result<Vec<f64>, InputError> {
            match &h.pixels {
                Pixels::F64(v) => Ok(v.clone()),
                Pixels::F32(v) => Ok(v.iter().map(|&x| f64::from(x)).collect()),
                Pixels::Int { bitpix, .. } => Err(InputError::new(
                    path,
                    h.first_card,
                    format!("{name} has BITPIX = {bitpix}; knots are float64 (BITPIX = -64)"),
                )
                .field("BITPIX")),
            }
        };
        let mut knots = Vec::with_capacity(nd);
        for d in 0..nd {
            let name = format!("KNOTS{d}");
            let h = image(&name).ok_or_else(|| InputError::file(path, format!("no {name} image extension ({nd}-D table)")))?;
            knots.push(as_f64(h, &name)?);
        }
        let mut table = Self::new(order, knots, naxes, coefficients).map_err(|m| InputError::file(path, m))?;
        table.periods = periods;
        if let Some(h) = image("EXTENTS") {
            let e = as_f64(h, "EXTENTS")?;
            // photospline falls back to the knots when EXTENTS has the wrong length.
            if e.len() == 2 * nd {
                table.extents = e.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
                table.extents_in_file = true;
            }
        }
        table.aux = primary
            .cards
            .iter()
            .filter(|c| !RESERVED.iter().any(|r| c.key.starts_with(r)))
            .map(|c| (c.key.clone(), c.value.clone()))
            .collect();
        Ok(table)
    }

    /// An auxiliary key's value, e.g. `aux_value("NGROUP")`.
    pub fn aux_value(&self, key: &str) -> Option<&Value> {
        self.aux.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn aux_f64(&self, key: &str) -> Option<f64> {
        match self.aux_value(key)? {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Str(s) => s.trim().parse().ok(),
            Value::Bool(_) => None,
        }
    }

    /// The table as FITS bytes, in photospline's layout (primary image, KNOTSi, EXTENTS).
    pub fn to_fits(&self) -> Vec<u8> {
        let mut w = fits::Writer::default();
        let axes: Vec<usize> = self.naxes.iter().rev().copied().collect();
        w.image(true, -32, &axes);
        w.key("TYPE", Put::Str("Spline Coefficient Table"));
        for (d, o) in self.order.iter().enumerate() {
            w.key(&format!("ORDER{d}"), Put::Int(i64::from(*o)));
        }
        for (d, p) in self.periods.iter().enumerate() {
            w.key(&format!("PERIOD{d}"), Put::Float(*p));
        }
        for (k, v) in &self.aux {
            if k == "EXTNAME" {
                continue;
            }
            let put = match v {
                Value::Str(s) => Put::Str(s),
                Value::Bool(b) => Put::Bool(*b),
                Value::Int(i) => Put::Int(*i),
                Value::Float(f) => Put::Float(*f),
            };
            w.key(k, put);
        }
        w.data_f32(&self.coefficients);
        for (d, k) in self.knots.iter().enumerate() {
            w.image(false, -64, &[k.len()]);
            w.key("EXTNAME", Put::Str(&format!("KNOTS{d}")));
            w.data_f64(k);
        }
        let ext: Vec<f64> = self.extents.iter().flat_map(|e| [e[0], e[1]]).collect();
        w.image(false, -64, &[ext.len()]);
        w.key("EXTNAME", Put::Str("EXTENTS"));
        w.data_f64(&ext);
        w.finish()
    }

    /// Write the table to `path` (atomically).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        warpdrive_core::table::write_atomic(path, &self.to_fits())
    }

    /// Coefficients that are NaN or infinite (a table to warn about).
    pub fn non_finite_coefficients(&self) -> usize {
        self.coefficients.iter().filter(|c| !c.is_finite()).count()
    }

    /// Coefficients touched by one evaluation: Π (order+1).
    pub fn support_size(&self) -> usize {
        self.order.iter().map(|&o| o as usize + 1).product()
    }

    /// Bytes of the table in memory (coefficients, knots, extents).
    pub fn memory_bytes(&self) -> usize {
        4 * self.coefficients.len() + 8 * self.knots.iter().map(Vec::len).sum::<usize>() + 16 * self.ndim()
    }
}

/// A small 2-D table (orders 1 and 2, 2 × 3 coefficients) for the crate's unit tests.
#[cfg(test)]
pub(crate) fn small_2d() -> SplineTable {
    SplineTable::new(
        vec![1, 2],
        vec![vec![0.0, 1.0, 2.0, 3.0], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]],
        vec![2, 3],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    )
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_errors_name_the_axis() {
        let e = SplineTable::new(vec![2], vec![vec![0.0, 1.0, 2.0, 3.0]], vec![2], vec![0.0; 2]).unwrap_err();
        assert!(e.contains("KNOTS0 has 4 knots") && e.contains("expected 5"), "{e}");
        let e = SplineTable::new(vec![1], vec![vec![0.0, 2.0, 1.0, 3.0]], vec![2], vec![0.0; 2]).unwrap_err();
        assert!(e.contains("decreases"), "{e}");
        let e = SplineTable::new(vec![1], vec![vec![2.0; 4]], vec![2], vec![0.0; 2]).unwrap_err();
        assert!(e.contains("KNOTS0 are all 2") && e.contains("no interval"), "{e}");
        let t = SplineTable::new(
            vec![1, 2],
            vec![vec![0.0, 1.0, 2.0, 3.0], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]],
            vec![2, 3],
            vec![0.0; 6],
        )
        .unwrap();
        assert_eq!(t.strides, vec![3, 1]);
        assert_eq!(t.extents, vec![[1.0, 2.0], [2.0, 3.0]]);
    }
}
