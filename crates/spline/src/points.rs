//! Points to evaluate a table at, and their evaluation on the run's device: the work behind
//! `warpdrive spline eval` and Python's `Table.eval` (through [`crate::engine::Eval`]).
//!
//! Points files are CSV (an optional header; `#` comments) or Parquet, one column per
//! coordinate, read once through `warpdrive_core::table::read_parquet_or_text`. Evaluation goes in work items of
//! [`CPU_CHUNK`] points on the CPU and batches of [`GPU_CHUNK`] points on a GPU; after each the
//! progress counter advances and a raised cancellation token stops the rest (the caller then
//! returns `Cancelled`, so a partial result never reaches an output).

use crate::evaluator::Evaluator;
use crate::gpu::{self, EvalOptions};
use crate::SplineTable;
use std::path::Path;
use warpdrive_core::cuda::GpuError;
use warpdrive_core::engine::{Error, ParamError};
use warpdrive_core::progress::Progress;
use warpdrive_core::table::{read_parquet_or_text, Column, ParquetOrText};
use warpdrive_core::InputError;

/// Points per CPU work item (a few milliseconds of work on the 4-D timing table).
pub const CPU_CHUNK: usize = 4096;
/// Points per GPU batch (128 MiB of 4-D coordinates on the device).
pub const GPU_CHUNK: usize = 1 << 22;

/// Coordinates read from a file: the chosen columns' names and the points, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct PointsFile {
    pub names: Vec<String>,
    pub coords: Vec<f64>,
}

/// Bytes a point costs in a file evaluation besides its text: the file's `columns`, the
/// row-major copy (`ndim`), the results and the output's copies of coordinates and results.
fn bytes_per_point(columns: usize, ndim: usize) -> u64 {
    8 * (columns + 2 * ndim + 2 * (ndim + 1)) as u64
}

/// Read the points of a CSV or Parquet file for a `ndim`-D table: the columns named in
/// `columns` (in that order), or all columns when it is empty (then there must be `ndim`).
/// A Parquet file's chosen columns alone are budgeted and decoded.
pub fn read_points(path: &Path, ndim: usize, columns: &[String]) -> Result<PointsFile, Error> {
    if !columns.is_empty() && columns.len() != ndim {
        return Err(ParamError::new("columns", format!("names {} columns for a {ndim}-D table", columns.len())).into());
    }
    let (names, pick, cols) = match read_parquet_or_text(path)? {
        ParquetOrText::Parquet(f) => {
            let names = f.names();
            let pick = pick_columns(path, &names, ndim, columns)?;
            check_points(path, f.rows(), pick.len(), ndim)?;
            let cols: Vec<Vec<f64>> = f.columns(&pick)?.into_iter().map(Column::into_f64).collect();
            (names, pick, cols)
        }
        ParquetOrText::Text(text) => {
            let (names, mut all) = read_csv(path, &text, ndim)?;
            let pick = pick_columns(path, &names, ndim, columns)?;
            let cols = pick.iter().map(|&i| std::mem::take(&mut all[i])).collect();
            (names, pick, cols)
        }
    };
    let n = cols.first().map_or(0, Vec::len);
    let coords = (0..n).flat_map(|i| cols.iter().map(move |c| c[i])).collect();
    Ok(PointsFile {
        names: pick.iter().map(|&i| names[i].clone()).collect(),
        coords,
    })
}

/// The columns that hold the coordinates: those named (in that order), or all of them when
/// none is named (then there must be `ndim`).
fn pick_columns(path: &Path, names: &[String], ndim: usize, columns: &[String]) -> Result<Vec<usize>, InputError> {
    if columns.is_empty() {
        if names.len() != ndim {
            return Err(InputError::file(
                path,
                format!(
                    "{} columns ({}) for a {ndim}-D table; name the coordinates with --columns",
                    names.len(),
                    names.join(", ")
                ),
            ));
        }
        return Ok((0..ndim).collect());
    }
    columns
        .iter()
        .map(|c| {
            names
                .iter()
                .position(|n| n == c)
                .ok_or_else(|| InputError::file(path, format!("no column '{c}' (have {})", names.join(", "))))
        })
        .collect()
}

/// Budget `rows` points of a file with `columns` columns before they are decoded.
fn check_points(path: &Path, rows: u64, columns: usize, ndim: usize) -> Result<(), Error> {
    warpdrive_core::limits::check_alloc(
        &format!("{}: {rows} points", path.display()),
        rows,
        bytes_per_point(columns, ndim),
        "split the points file into smaller ones",
    )?;
    Ok(())
}

/// CSV points: a header when any field of the first data line is not a number (else the
/// columns are `x0, x1, …`), every line with as many fields as the first.
pub(crate) fn read_csv(path: &Path, text: &str, ndim: usize) -> Result<(Vec<String>, Vec<Vec<f64>>), Error> {
    let mut lines = warpdrive_core::error::data_lines(text).peekable();
    let first = lines.peek().map(|(_, l)| l.to_string()).unwrap_or_default();
    let header = first.split(',').any(|f| f.trim().parse::<f64>().is_err());
    let names: Vec<String> = if header {
        lines.next();
        first.split(',').map(|s| s.trim().to_string()).collect()
    } else {
        (0..first.split(',').count()).map(|i| format!("x{i}")).collect()
    };
    // Budget the columns before parsing: a short number ("0,") becomes 8 bytes.
    let rows = warpdrive_core::error::data_lines(text).count() as u64;
    check_points(path, rows, names.len(), ndim)?;
    let mut cols = vec![Vec::with_capacity(rows as usize); names.len()];
    for (i, l) in lines {
        let f: Vec<&str> = l.split(',').collect();
        if f.len() != names.len() {
            return Err(InputError::new(path, i, format!("{} fields, expected {}", f.len(), names.len())).into());
        }
        for (k, v) in f.iter().enumerate() {
            cols[k].push(warpdrive_core::error::parse_f64(path, i, &names[k], Some(v.trim()))?);
        }
    }
    Ok((names, cols))
}

/// Check that `n` points of a `ndim`-D table fit in memory with their results (`per` numbers
/// each) — for arrays handed in, whose coordinates already exist.
pub fn check_results(n: usize, per: usize) -> Result<(), Error> {
    warpdrive_core::limits::check_alloc("points", n as u64, 8 * per as u64, "evaluate fewer points per call")?;
    Ok(())
}

/// Where and how to evaluate.
#[derive(Clone, Debug)]
pub struct PointsOptions {
    /// Value and gradient (`ndim + 1` numbers per point) instead of the value alone.
    pub gradient: bool,
    /// GPU ordinals (`None`: the CPU path on the current rayon pool). Only the first is used.
    pub devices: Option<Vec<usize>>,
    /// GPU: the redundant window layout (default) instead of photospline's own.
    pub window: bool,
    /// GPU: IEEE arithmetic, no fast-math intrinsics.
    pub precise: bool,
}

/// Evaluate `t` at `points` (row-major, `ndim` coordinates per point). Returns one value per
/// point, or `ndim + 1` numbers per point (value, then ∂/∂x_d) with `gradient`, and a
/// description of the device ("cpu" or the GPU's name with "(float32)"). `progress` counts the
/// points done; once it says stop, the rest is skipped (the values are then incomplete: the
/// caller checks the token).
pub fn evaluate_points(t: &SplineTable, points: &[f64], opts: &PointsOptions, progress: &Progress) -> Result<(Vec<f64>, String), GpuError> {
    let nd = t.ndim();
    if nd == 0 || !points.len().is_multiple_of(nd) {
        return Err(GpuError::Other(format!("{} coordinates are not a multiple of {nd}", points.len())));
    }
    match &opts.devices {
        Some(devs) => {
            let ordinal = devs.first().copied().unwrap_or(0);
            let eo = EvalOptions {
                window: opts.window,
                gradient: opts.gradient,
                repeats: 1,
                precise: opts.precise,
            };
            let (v, st) = gpu::evaluate_chunked(t, points, ordinal, &eo, GPU_CHUNK, |m| {
                progress.add(m as u64);
                !progress.should_stop()
            })?;
            Ok((v.into_iter().map(f64::from).collect(), format!("{} (float32)", st.device)))
        }
        None => Ok((evaluate_cpu(t, points, opts.gradient, progress), "cpu".into())),
    }
}

/// The CPU path: work items of [`CPU_CHUNK`] points on the current rayon pool, each with its
/// own [`Evaluator`] writing its own slice of the result (value, or value and gradient, per
/// point).
///
/// The result is allocated uninitialised and each work item zeroes its own slice before writing
/// it: `vec![0.0; n]` would zero (and first touch) the whole result on the calling thread, a
/// serial part that costs a short many-thread call a tenth of its time (a 4·10⁵-point 1-D
/// gradient is 14 ms on one core, its 6.4 MB of zeroing ~1 ms).
pub fn evaluate_cpu(t: &SplineTable, points: &[f64], gradient: bool, progress: &Progress) -> Vec<f64> {
    use rayon::prelude::*;
    use std::mem::MaybeUninit;
    let nd = t.ndim();
    assert_eq!(points.len() % nd, 0, "points are not a multiple of {nd} coordinates");
    let per = if gradient { nd + 1 } else { 1 };
    let n = points.len() / nd * per;
    let mut out: Vec<f64> = Vec::with_capacity(n);
    points
        .par_chunks(nd * CPU_CHUNK)
        .zip(out.spare_capacity_mut()[..n].par_chunks_mut(per * CPU_CHUNK))
        .for_each(|(x, o)| {
            for v in o.iter_mut() {
                v.write(0.0);
            }
            // SAFETY: every element of `o` was written just above.
            let o = unsafe { &mut *(o as *mut [MaybeUninit<f64>] as *mut [f64]) };
            if progress.should_stop() {
                return;
            }
            let mut e = Evaluator::new(t);
            if gradient {
                e.gradients(x, o);
            } else {
                e.values(x, o);
            }
            progress.add((x.len() / nd) as u64);
        });
    // SAFETY: the chunks above cover the first n elements exactly once (the two parallel
    // iterators split `points` and the result into the same number of items), and each item
    // initialised its whole slice before anything else.
    unsafe { out.set_len(n) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> SplineTable {
        crate::table::small_2d()
    }

    #[test]
    fn chunks_equal_the_point_by_point_evaluation() {
        let t = table();
        let n = 3 * CPU_CHUNK + 17;
        let pts: Vec<f64> = (0..n)
            .flat_map(|i| [1.0 + (i % 97) as f64 / 97.0, 2.0 + (i % 89) as f64 / 89.0])
            .collect();
        let p = Progress::hidden();
        let v = evaluate_cpu(&t, &pts, false, &p);
        let g = evaluate_cpu(&t, &pts, true, &p);
        assert_eq!(p.done(), 2 * n as u64);
        for i in 0..n {
            let x = &pts[2 * i..2 * i + 2];
            assert_eq!(v[i], t.evaluate(x));
            let r = t.gradient(x);
            assert_eq!(&g[3 * i..3 * i + 3], &[r.value, r.grad[0], r.grad[1]]);
        }
    }

    #[test]
    fn csv_columns_by_name_and_errors_by_line() {
        let d = std::env::temp_dir().join(format!("wd-points-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("p.csv");
        std::fs::write(&p, "\u{feff}b,a,c\n1,2,3\n# comment\n4,5,6\n").unwrap();
        let r = read_points(&p, 2, &["a".into(), "c".into()]).unwrap();
        assert_eq!(r.names, ["a", "c"]);
        assert_eq!(r.coords, [2.0, 3.0, 5.0, 6.0]);
        let e = read_points(&p, 2, &[]).unwrap_err().to_string();
        assert!(
            e.ends_with("p.csv: 3 columns (b, a, c) for a 2-D table; name the coordinates with --columns"),
            "{e}"
        );
        let e = read_points(&p, 2, &["a".into()]).unwrap_err();
        assert_eq!(
            e.render(warpdrive_core::engine::Style::Cli),
            "--columns names 1 columns for a 2-D table"
        );
        std::fs::write(&p, "1,2\n3\n").unwrap();
        assert!(read_points(&p, 2, &[])
            .unwrap_err()
            .to_string()
            .ends_with("p.csv:2: 1 fields, expected 2"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
