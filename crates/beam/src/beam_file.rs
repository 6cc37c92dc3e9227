//! Beam coordinates from files (Parquet or CSV) and arrays, checked row by row into
//! [`Particles`].
//!
//! Files are read once through the bounded reader (`warpdrive_core::input`: size and file type
//! checked, a stream such as `/dev/zero` cut at the memory budget, a UTF-8 byte-order mark
//! removed) and the format is sniffed from the same bytes: Parquet starts with `PAR1`, anything
//! else is CSV text with a header line. Columns are found by name: x, xp, y, yp, then `s` [m] or
//! `t` [s], and `delta` or `p` (β γ, ELEGANT's). A column that holds text, a null, a row with a
//! NaN or ∞, or a momentum p ≤ 0 is an error naming the file, the column and the row (CSV: the
//! line), never a silently empty or wrong beam.

use crate::beam::{beta_of, Particles, Reference, C_LIGHT};
use std::path::{Path, PathBuf};
use warpdrive_core::error::InputError;
use warpdrive_core::table::{Column, ParquetFile, ParquetOrText};

/// Path length [m] or arrival time [s] of each particle.
#[derive(Clone, Debug, PartialEq)]
pub enum Longitudinal {
    S(Vec<f64>),
    T(Vec<f64>),
}

/// Relative momentum deviation δ or momentum p = βγ of each particle.
#[derive(Clone, Debug, PartialEq)]
pub enum Momentum {
    Delta(Vec<f64>),
    P(Vec<f64>),
}

/// Where the rows of a beam come from, so that messages can name them.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A Parquet file: rows are named by their 0-based index.
    Parquet(PathBuf),
    /// A CSV file: the 1-based line of each row.
    Csv { path: PathBuf, lines: Vec<usize> },
    /// Arrays passed by a caller, named as the caller's argument (`particles`).
    Arrays(String),
}

impl Origin {
    /// An error about row `i`, column `field`.
    fn error(&self, i: usize, field: &str, what: String) -> InputError {
        match self {
            Origin::Parquet(p) => InputError::file(p, format!("row {i}: {what}")).field(field),
            Origin::Csv { path, lines } => InputError::new(path, lines.get(i).copied().unwrap_or(0), what).field(field),
            Origin::Arrays(name) => InputError::file(name, format!("row {i}: {what}")).field(field),
        }
    }

    fn label(&self) -> PathBuf {
        match self {
            Origin::Parquet(p) | Origin::Csv { path: p, .. } => p.clone(),
            Origin::Arrays(name) => PathBuf::from(name),
        }
    }
}

/// The six coordinates of a beam as given, not yet checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Coordinates {
    pub x: Vec<f64>,
    pub xp: Vec<f64>,
    pub y: Vec<f64>,
    pub yp: Vec<f64>,
    pub longitudinal: Longitudinal,
    pub momentum: Momentum,
    pub origin: Origin,
}

impl Coordinates {
    /// Rows (particles).
    pub fn len(&self) -> usize {
        self.x.len()
    }

    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// The columns with the names the files use.
    fn columns(&self) -> [(&'static str, &[f64]); 6] {
        let (ln, lv) = match &self.longitudinal {
            Longitudinal::S(v) => ("s", v.as_slice()),
            Longitudinal::T(v) => ("t", v.as_slice()),
        };
        let (mn, mv) = match &self.momentum {
            Momentum::Delta(v) => ("delta", v.as_slice()),
            Momentum::P(v) => ("p", v.as_slice()),
        };
        [
            ("x", &self.x),
            ("xp", &self.xp),
            ("y", &self.y),
            ("yp", &self.yp),
            (ln, lv),
            (mn, mv),
        ]
    }

    /// Check every row and convert to tracking coordinates (x, x', y, y', s, δ) with the
    /// reference: δ = p/p0 − 1 and s = t β c with the particle's own β. A row with a NaN or ∞,
    /// a momentum p ≤ 0 (δ ≤ −1), or one whose conversion overflows is an error naming it;
    /// an empty beam is an error too.
    pub fn into_particles(self, reference: &Reference) -> Result<Particles, InputError> {
        let n = self.len();
        let cols = self.columns();
        for (name, c) in &cols {
            if c.len() != n {
                return Err(InputError::file(
                    self.origin.label(),
                    format!("column '{name}' has {} rows, column 'x' has {n}", c.len()),
                ));
            }
        }
        if n == 0 {
            return Err(InputError::file(
                self.origin.label(),
                "no particles (zero rows): a beam needs at least one",
            ));
        }
        for i in 0..n {
            for (name, c) in &cols {
                if !c[i].is_finite() {
                    return Err(self.origin.error(i, name, format!("{} is not a finite coordinate", c[i])));
                }
            }
            let momentum_ok = match &self.momentum {
                Momentum::P(p) => p[i] > 0.0,
                Momentum::Delta(d) => 1.0 + d[i] > 0.0,
            };
            if !momentum_ok {
                let (name, v) = (cols[5].0, cols[5].1[i]);
                let why = if name == "p" { "p = β γ" } else { "δ ≤ −1 means p ≤ 0" };
                return Err(self.origin.error(
                    i,
                    name,
                    format!("{v}: the momentum must be positive ({why}; was this column filled?)"),
                ));
            }
        }
        let Coordinates {
            x,
            xp,
            y,
            yp,
            longitudinal,
            momentum,
            origin,
        } = self;
        let delta = match momentum {
            Momentum::Delta(d) => d,
            Momentum::P(p) => p.iter().map(|v| v / reference.p_central - 1.0).collect(),
        };
        let s = match longitudinal {
            Longitudinal::S(s) => s,
            Longitudinal::T(t) => t
                .iter()
                .zip(&delta)
                .map(|(t, d)| t * beta_of(reference.p_central, *d) * C_LIGHT)
                .collect(),
        };
        for i in 0..n {
            if !(s[i].is_finite() && delta[i].is_finite() && delta[i] > -1.0) {
                return Err(origin.error(
                    i,
                    "s",
                    format!("s = {}, δ = {} with the reference momentum: out of range", s[i], delta[i]),
                ));
            }
        }
        Ok(Particles {
            x,
            xp,
            y,
            yp,
            s,
            delta,
            lost_at: vec![0; n],
            lost_pass: vec![0; n],
        })
    }
}

/// The names a beam file's columns are looked up by.
const WANTED: [&str; 8] = ["x", "xp", "y", "yp", "s", "t", "delta", "p"];

/// The columns of an SDDS particle file's first page (ELEGANT's x, xp, y, yp, t, p, or any of
/// [`WANTED`]); a text column under a wanted name is an error naming it.
fn sdds_columns(path: &Path, bytes: &[u8]) -> Result<Found, InputError> {
    let (_, page) = crate::sdds::read_first_page(path, bytes)?;
    let found = page.columns.iter().map(|c| c.name.clone()).collect();
    let mut columns = Vec::with_capacity(WANTED.len());
    for w in WANTED {
        columns.push(match page.column(w) {
            None => None,
            Some(c) => Some(
                c.data
                    .to_f64()
                    .ok_or_else(|| InputError::file(path, format!("column '{w}' holds text; coordinates must be numbers")).field(w))?,
            ),
        });
    }
    Ok((found, columns))
}

/// Read a beam file (Parquet, SDDS binary or ASCII, or CSV; sniffed from the first bytes) into
/// unchecked coordinates.
pub fn read(path: &Path) -> Result<Coordinates, InputError> {
    use warpdrive_core::input::{budget, read_sniffed, Format};
    // One read of the input (a FIFO is never read twice): Parquet and SDDS as bytes, else text.
    let (bytes, format) = read_sniffed(path, 4, budget(), |head| {
        Ok(if head == b"PAR1" || head == b"SDDS" {
            Format::Binary
        } else {
            Format::Text
        })
    })?;
    let parsed = if bytes.starts_with(b"SDDS") {
        let (found, columns) = sdds_columns(path, &bytes)?;
        Err((found, columns))
    } else if format == Format::Binary {
        Ok(ParquetOrText::Parquet(ParquetFile::from_bytes(path, bytes)?))
    } else {
        Ok(ParquetOrText::Text(warpdrive_core::input::text_from_bytes(path, bytes)?))
    };
    let (found, columns, origin) = match parsed {
        Err((found, columns)) => (found, columns, Origin::Parquet(path.to_path_buf())),
        Ok(ParquetOrText::Parquet(file)) => {
            let (found, columns) = parquet_columns(path, &file)?;
            (found, columns, Origin::Parquet(path.to_path_buf()))
        }
        Ok(ParquetOrText::Text(text)) => {
            let (found, columns, lines) = csv_columns(path, &text)?;
            (
                found,
                columns,
                Origin::Csv {
                    path: path.to_path_buf(),
                    lines,
                },
            )
        }
    };
    let mut columns: Vec<Option<Vec<f64>>> = columns;
    let mut take = |name: &str| WANTED.iter().position(|w| *w == name).and_then(|k| columns[k].take());
    let missing = |name: &str| {
        InputError::file(
            path,
            format!(
                "column '{name}' is missing (need x, xp, y, yp, s or t, delta or p; the file has {})",
                if found.is_empty() {
                    "no columns".to_string()
                } else {
                    found.join(", ")
                }
            ),
        )
    };
    let x = take("x").ok_or_else(|| missing("x"))?;
    let xp = take("xp").ok_or_else(|| missing("xp"))?;
    let y = take("y").ok_or_else(|| missing("y"))?;
    let yp = take("yp").ok_or_else(|| missing("yp"))?;
    let longitudinal = match (take("s"), take("t")) {
        (Some(s), _) => Longitudinal::S(s),
        (None, Some(t)) => Longitudinal::T(t),
        (None, None) => return Err(missing("s' or 't")),
    };
    let momentum = match (take("delta"), take("p")) {
        (Some(d), _) => Momentum::Delta(d),
        (None, Some(p)) => Momentum::P(p),
        (None, None) => return Err(missing("delta' or 'p")),
    };
    Ok(Coordinates {
        x,
        xp,
        y,
        yp,
        longitudinal,
        momentum,
        origin,
    })
}

/// Budget the coordinates of `rows` particles before they are decoded.
fn check_rows(path: &Path, rows: u64) -> Result<(), InputError> {
    warpdrive_core::limits::check_alloc(
        &format!("{}: {rows} particles", path.display()),
        rows,
        // Six coordinates as read, the converted ones and the loss flags.
        2 * 6 * 8 + 8,
        "split the beam into several files and track them in separate runs",
    )
    .map_err(|e| InputError::file(path, e.to_string()))
}

/// (all column names, the wanted columns in [`WANTED`] order) of a Parquet file.
type Found = (Vec<String>, Vec<Option<Vec<f64>>>);

fn parquet_columns(path: &Path, file: &ParquetFile) -> Result<Found, InputError> {
    let names = file.names();
    let rows = file.rows();
    if rows == 0 {
        return Err(InputError::file(path, "no particles (zero rows): a beam needs at least one"));
    }
    check_rows(path, rows)?;
    let mut out: Vec<Option<Vec<f64>>> = vec![None; WANTED.len()];
    for (k, want) in WANTED.iter().enumerate() {
        if let Some(idx) = names.iter().position(|n| n == want) {
            let column = file.columns(&[idx]).map_err(with_coordinate_advice)?;
            out[k] = column.into_iter().next().map(Column::into_f64);
        }
    }
    Ok((names, out))
}

/// A null in a coordinate column says what a particle needs, as a missing CSV field does.
fn with_coordinate_advice(mut e: InputError) -> InputError {
    if e.message.ends_with("null (a missing value)") {
        e.message.push_str("; every particle needs all six coordinates");
    }
    e
}

/// (header names, the wanted columns in [`WANTED`] order, the line of each row) of CSV text.
type CsvFound = (Vec<String>, Vec<Option<Vec<f64>>>, Vec<usize>);

fn csv_columns(path: &Path, text: &str) -> Result<CsvFound, InputError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((_, header)) = lines.next() else {
        return Err(InputError::file(
            path,
            "empty: expected a header line (x,xp,y,yp,t,p) and one row per particle",
        ));
    };
    let names: Vec<String> = header.split(',').map(|h| h.trim().trim_matches('"').to_string()).collect();
    let index: Vec<Option<usize>> = WANTED.iter().map(|w| names.iter().position(|n| n == w)).collect();
    let data: Vec<(usize, &str)> = lines.collect();
    if data.is_empty() {
        return Err(InputError::file(path, "no particles (zero rows): a beam needs at least one"));
    }
    check_rows(path, data.len() as u64)?;
    let mut out: Vec<Option<Vec<f64>>> = index.iter().map(|i| i.map(|_| Vec::with_capacity(data.len()))).collect();
    let mut rows = Vec::with_capacity(data.len());
    for (line, l) in data {
        let fields: Vec<&str> = l.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(InputError::new(
                path,
                line,
                format!("{} fields, but the header has {}", fields.len(), names.len()),
            ));
        }
        for (k, i) in index.iter().enumerate() {
            let (Some(i), Some(col)) = (i, out[k].as_mut()) else { continue };
            let token = fields[*i].trim_matches('"');
            let field = || InputError::new(path, line, String::new()).field(WANTED[k]);
            if token.is_empty() {
                let mut e = field();
                e.message = "empty (a missing value); every particle needs all six coordinates".into();
                return Err(e);
            }
            match token.parse::<f64>() {
                Ok(v) => col.push(v),
                Err(_) => {
                    let mut e = field();
                    e.message = format!("'{token}' is not a number");
                    return Err(e);
                }
            }
        }
        rows.push(line);
    }
    Ok((names, out, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wd-beamfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn reference() -> Reference {
        Reference::new(&crate::species::Species::electron(), 1000.0)
    }

    #[test]
    fn csv_with_bom_and_elegant_columns() {
        let d = scratch("bom");
        let p = d.join("b.csv");
        std::fs::write(
            &p,
            b"\xEF\xBB\xBFx,xp,y,yp,t,p\n1e-3,0,0,0,0,1000\n\n# note\n0,1e-4,0,0,1e-12,1001\n",
        )
        .unwrap();
        let c = read(&p).unwrap();
        assert_eq!(c.x, vec![1e-3, 0.0], "the BOM is not part of the first column's name");
        let parts = c.into_particles(&reference()).unwrap();
        assert_eq!(parts.len(), 2);
        assert!((parts.delta[1] - 1e-3).abs() < 1e-15);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn csv_errors_name_file_line_and_column() {
        let d = scratch("csv");
        let p = d.join("b.csv");
        let cases: [(&[u8], &str); 7] = [
            (b"x,xp,y,yp,t,p\n0,0,0,0,0,abc\n", "b.csv:2: field 'p': 'abc' is not a number"),
            (b"x,xp,y,yp,t,p\n0,0,,0,0,1\n", "b.csv:2: field 'y': empty (a missing value)"),
            (b"x,xp,y,yp,t,p\n", "b.csv: no particles (zero rows)"),
            (b"x,xp,y,yp,t,p\n0,0,0,0,0\n", "b.csv:2: 5 fields, but the header has 6"),
            (
                b"x,xp,y,yp,t,p\n0,0,0,0,0,0\n",
                "b.csv:2: field 'p': 0: the momentum must be positive",
            ),
            (
                b"x,xp,y,yp,s,delta\n0,0,0,0,0,-1\n",
                "b.csv:2: field 'delta': -1: the momentum must be positive",
            ),
            (
                b"x,xp,y,yp,s,delta\n0,0,inf,0,0,0\n",
                "b.csv:2: field 'y': inf is not a finite coordinate",
            ),
        ];
        for (text, want) in cases {
            std::fs::write(&p, text).unwrap();
            let e = read(&p).and_then(|c| c.into_particles(&reference())).unwrap_err().to_string();
            assert!(e.contains(want), "{:?}: {e}", String::from_utf8_lossy(text));
        }
        std::fs::write(&p, b"a,b\n1,2\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("column 'x' is missing (need x, xp, y, yp, s or t, delta or p; the file has a, b)"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A Parquet file with a nullable double column `x` (one null), a text column `name` and
    /// the other coordinates, written with the parquet crate.
    fn write_parquet(path: &Path, rows: usize, null_at: Option<usize>, text_column: &str) {
        use parquet::data_type::{ByteArray, ByteArrayType, DoubleType};
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        use std::sync::Arc;
        let schema = format!(
            "message b {{ OPTIONAL DOUBLE x; REQUIRED BINARY {text_column} (UTF8); REQUIRED DOUBLE y; REQUIRED DOUBLE yp; REQUIRED DOUBLE s; REQUIRED DOUBLE delta; }}"
        );
        let schema = Arc::new(parquet::schema::parser::parse_message_type(&schema).unwrap());
        let file = std::fs::File::create(path).unwrap();
        let mut w = SerializedFileWriter::new(file, schema, Arc::new(WriterProperties::builder().build())).unwrap();
        let mut g = w.next_row_group().unwrap();
        let mut k = 0;
        while let Some(mut c) = g.next_column().unwrap() {
            if k == 0 {
                let defs: Vec<i16> = (0..rows).map(|i| i16::from(Some(i) != null_at)).collect();
                let vals: Vec<f64> = (0..rows).filter(|i| Some(*i) != null_at).map(|i| i as f64 * 1e-4).collect();
                c.typed::<DoubleType>().write_batch(&vals, Some(&defs), None).unwrap();
            } else if k == 1 {
                let vals: Vec<ByteArray> = (0..rows).map(|i| ByteArray::from(format!("p{i}").as_str())).collect();
                c.typed::<ByteArrayType>().write_batch(&vals, None, None).unwrap();
            } else {
                c.typed::<DoubleType>().write_batch(&vec![0.0; rows], None, None).unwrap();
            }
            c.close().unwrap();
            k += 1;
        }
        g.close().unwrap();
        w.close().unwrap();
    }

    #[test]
    fn parquet_text_columns_nulls_and_empty_files_are_errors() {
        let d = scratch("pq");
        let p = d.join("b.parquet");
        // xp holds text.
        write_parquet(&p, 5, None, "xp");
        assert_eq!(
            read(&p).unwrap_err().to_string(),
            format!("{}: field 'xp': holds text, not numbers", p.display())
        );
        // A null in x (xp present as numbers is not needed to see it: x is read first).
        write_parquet(&p, 5, Some(3), "name");
        let e = read(&p).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: field 'x': row 3: null (a missing value); every particle needs all six coordinates",
                p.display()
            )
        );
        // Zero rows.
        write_parquet(&p, 0, None, "name");
        let e = read(&p).unwrap_err().to_string();
        assert!(e.ends_with("no particles (zero rows): a beam needs at least one"), "{e}");
        // Garbage with the magic number.
        std::fs::write(&p, b"PAR1junkPAR1").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: not a readable Parquet file", p.display())), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn arrays_name_the_row_and_column() {
        let c = |p: f64| Coordinates {
            x: vec![0.0; 3],
            xp: vec![0.0; 3],
            y: vec![0.0; 3],
            yp: vec![0.0; 3],
            longitudinal: Longitudinal::T(vec![0.0; 3]),
            momentum: Momentum::P(vec![1000.0, p, 1000.0]),
            origin: Origin::Arrays("particles".into()),
        };
        let e = c(0.0).into_particles(&reference()).unwrap_err().to_string();
        assert!(
            e.starts_with("particles: field 'p': row 1: 0: the momentum must be positive"),
            "{e}"
        );
        let e = c(f64::NAN).into_particles(&reference()).unwrap_err().to_string();
        assert_eq!(e, "particles: field 'p': row 1: NaN is not a finite coordinate");
        assert!(c(999.0).into_particles(&reference()).is_ok());
    }
}
