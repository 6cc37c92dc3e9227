//! Histogram files for `spline fit`: what [`crate::fit`] fits, read once and bounded.
//!
//! * **Parquet or CSV** (one row per bin): one column per axis holding the bin centre, in the
//!   file's column order, and the columns `value` and `weight`. The centres of each axis are
//!   the distinct values of its column (sorted); bins missing from the file are empty (weight 0);
//!   a bin given twice is refused.
//! * **NumPy `.npz`** ([`crate::npz`]): `counts` (N-D, the values), `weights` (same shape) and
//!   `edges_0 … edges_{N−1}` (m_d + 1 increasing bin edges per axis; the centres are their
//!   midpoints).

use crate::npz;
use std::path::Path;
use warpdrive_core::engine::Error;
use warpdrive_core::input::{read_sniffed, Format};
use warpdrive_core::table::{Column, ParquetFile};
use warpdrive_core::InputError;

/// A histogram on a grid (values and weights in C order over the centres).
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramFile {
    pub centers: Vec<Vec<f64>>,
    pub z: Vec<f64>,
    pub w: Vec<f64>,
    /// Names of the axes (columns, or `edges_d`), of the values and of the weights.
    pub axes: Vec<String>,
    pub value: String,
    pub weight: String,
    /// The file's key/value metadata (Parquet; empty for CSV and `.npz`): the tabulator's
    /// `NGROUP` and `GEOMETRY` travel through the fit into the table's header.
    pub meta: Vec<(String, String)>,
}

/// Read a histogram: Parquet, `.npz` or CSV, as its first bytes say.
pub fn read(path: &Path) -> Result<HistogramFile, Error> {
    let (bytes, format) = read_sniffed(path, 4, warpdrive_core::input::budget(), |head| {
        Ok(if head == b"PAR1" || head == npz::MAGIC {
            Format::Binary
        } else {
            Format::Text
        })
    })?;
    if bytes.starts_with(npz::MAGIC) {
        return read_npz(path, &bytes);
    }
    let mut meta = Vec::new();
    let (names, columns): (Vec<String>, Vec<Vec<f64>>) = if format == Format::Binary {
        let f = ParquetFile::from_bytes(path, bytes)?;
        meta = f.metadata();
        let names = f.names();
        let rows = f.rows();
        warpdrive_core::limits::check_alloc(
            &format!("{}: {rows} bins", path.display()),
            rows,
            8 * names.len() as u64 * 2,
            "use fewer bins",
        )?;
        let all: Vec<usize> = (0..names.len()).collect();
        (names, f.columns(&all)?.into_iter().map(Column::into_f64).collect())
    } else {
        let text = warpdrive_core::input::text_from_bytes(path, bytes)?;
        crate::points::read_csv(path, &text, 2)?
    };
    let mut h = long_form(path, names, columns)?;
    h.meta = meta;
    Ok(h)
}

/// The grid of a one-row-per-bin table.
fn long_form(path: &Path, names: Vec<String>, columns: Vec<Vec<f64>>) -> Result<HistogramFile, Error> {
    let need = |name: &str| {
        names.iter().position(|n| n == name).ok_or_else(|| {
            InputError::file(
                path,
                format!(
                    "no column '{name}' (have {}): a histogram has one column per axis (bin centres), 'value' and 'weight'",
                    names.join(", ")
                ),
            )
        })
    };
    let (vi, wi) = (need("value")?, need("weight")?);
    let axes: Vec<usize> = (0..names.len()).filter(|&i| i != vi && i != wi).collect();
    if axes.is_empty() {
        return Err(InputError::file(path, "no axis columns besides 'value' and 'weight'").into());
    }
    let rows = columns[vi].len();
    let mut centers = Vec::with_capacity(axes.len());
    for &a in &axes {
        if let Some(r) = columns[a].iter().position(|x| !x.is_finite()) {
            return Err(
                InputError::file(path, format!("row {}: the bin centre is {}", r + 1, columns[a][r]))
                    .field(names[a].clone())
                    .into(),
            );
        }
        let mut c = columns[a].clone();
        c.sort_by(f64::total_cmp);
        c.dedup();
        centers.push(c);
    }
    let cells = centers
        .iter()
        .try_fold(1u64, |s, c| s.checked_mul(c.len() as u64))
        .unwrap_or(u64::MAX);
    warpdrive_core::limits::check_alloc(
        &format!("{}: the grid of the bin centres", path.display()),
        cells,
        16,
        "the distinct centres of each axis make the grid: check that the axis columns hold bin centres",
    )?;
    let mut z = vec![0.0; cells as usize];
    let mut w = vec![0.0; cells as usize];
    let mut seen = vec![false; cells as usize];
    for r in 0..rows {
        let mut at = 0;
        for (d, &a) in axes.iter().enumerate() {
            let i = centers[d].binary_search_by(|c| c.total_cmp(&columns[a][r])).unwrap_or(0);
            at = at * centers[d].len() + i;
        }
        if seen[at] {
            let bin: Vec<String> = axes.iter().map(|&a| format!("{} = {}", names[a], columns[a][r])).collect();
            return Err(InputError::file(path, format!("row {}: the bin at {} is given twice", r + 1, bin.join(", "))).into());
        }
        seen[at] = true;
        z[at] = columns[vi][r];
        w[at] = columns[wi][r];
    }
    Ok(HistogramFile {
        centers,
        z,
        w,
        axes: axes.iter().map(|&a| names[a].clone()).collect(),
        value: "value".into(),
        weight: "weight".into(),
        meta: Vec::new(),
    })
}

/// `counts`, `weights`, `edges_d` of an `.npz`.
fn read_npz(path: &Path, bytes: &[u8]) -> Result<HistogramFile, Error> {
    let get = |name: &str| -> Result<npz::Array, Error> {
        npz::array(path, bytes, name)?.ok_or_else(|| {
            let have = npz::names(path, bytes).unwrap_or_default().join(", ");
            InputError::file(
                path,
                format!("no array '{name}' (have {have}): a histogram has counts, weights and edges_0 … edges_{{N-1}}"),
            )
            .into()
        })
    };
    let counts = get("counts")?;
    let weights = get("weights")?;
    if weights.shape != counts.shape {
        return Err(InputError::file(
            path,
            format!("weights have shape {:?}, counts {:?}: they must match", weights.shape, counts.shape),
        )
        .into());
    }
    let mut centers = Vec::new();
    let mut axes = Vec::new();
    for (d, &m) in counts.shape.iter().enumerate() {
        let name = format!("edges_{d}");
        let e = get(&name)?;
        if e.values.len() != m + 1 {
            return Err(InputError::file(
                path,
                format!(
                    "{name} has {} edges for {m} bins along axis {d} of counts: {} expected",
                    e.values.len(),
                    m + 1
                ),
            )
            .into());
        }
        if let Some(i) = e
            .values
            .windows(2)
            .position(|p| p[1].partial_cmp(&p[0]) != Some(std::cmp::Ordering::Greater))
        {
            return Err(InputError::file(
                path,
                format!(
                    "{name} do not increase at index {}: {} then {}",
                    i + 1,
                    e.values[i],
                    e.values[i + 1]
                ),
            )
            .into());
        }
        centers.push(e.values.windows(2).map(|p| 0.5 * (p[0] + p[1])).collect());
        axes.push(name);
    }
    Ok(HistogramFile {
        centers,
        z: counts.values,
        w: weights.values,
        axes,
        value: "counts".into(),
        weight: "weights".into(),
        meta: Vec::new(),
    })
}
