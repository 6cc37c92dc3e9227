//! Column tables written as Apache Parquet with run metadata (DESIGN.md §6).
//!
//! A table is written whole or not at all, with one staging level (rule 5 of
//! [`crate::output`]): a path that is a command's staged output, or lies inside a staged output
//! directory, is written in place — the command commits it; any other path is staged here
//! (`.NAME.tmp-PID` beside it, registered for the signal thread) and renamed over the name when
//! complete, so a failed write never leaves a partial file under the requested name.

use crate::error::InputError;
use crate::input::{read_sniffed, Format};
use crate::output::{is_staged, shown, OutputError, Outputs};
use parquet::basic::Compression;
use parquet::data_type::{DoubleType, FloatType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::format::KeyValue;
use parquet::schema::parser::parse_message_type;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One column of values (all columns of a table have the same length).
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// UTF-8 text (Parquet `BYTE_ARRAY (UTF8)`), e.g. the element names of beam's
    /// `lost.parquet`. Numeric inputs refuse it ([`ParquetFile::columns`]).
    Str(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::I32(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::F32(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values as f64, whatever the stored type (text: NaN, it is no number).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Column::Str(v) => vec![f64::NAN; v.len()],
            Column::F64(v) => v.clone(),
            Column::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Column::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Column::I64(v) => v.iter().map(|&x| x as f64).collect(),
        }
    }

    /// The values as f64, without a copy when they are f64 already.
    pub fn into_f64(self) -> Vec<f64> {
        match self {
            Column::F64(v) => v,
            other => other.to_f64(),
        }
    }

    /// Append `other`'s values; false (and nothing appended) when its type differs.
    pub fn append(&mut self, other: Column) -> bool {
        match (self, other) {
            (Column::I32(a), Column::I32(b)) => a.extend(b),
            (Column::I64(a), Column::I64(b)) => a.extend(b),
            (Column::F32(a), Column::F32(b)) => a.extend(b),
            (Column::F64(a), Column::F64(b)) => a.extend(b),
            (Column::Str(a), Column::Str(b)) => a.extend(b),
            _ => return false,
        }
        true
    }

    /// The Parquet type of the column in a schema (`INT32`, …, `BYTE_ARRAY … (UTF8)`): the
    /// schema field is `REQUIRED {type}` with `{}` the column's name.
    pub fn parquet_field(&self, name: &str) -> String {
        match self {
            Column::I32(_) => format!("REQUIRED INT32 {name};"),
            Column::I64(_) => format!("REQUIRED INT64 {name};"),
            Column::F32(_) => format!("REQUIRED FLOAT {name};"),
            Column::F64(_) => format!("REQUIRED DOUBLE {name};"),
            Column::Str(_) => format!("REQUIRED BYTE_ARRAY {name} (UTF8);"),
        }
    }

    /// Write the rows `r` of the column to a Parquet column writer of its type.
    pub fn write_rows(
        &self,
        col: &mut parquet::file::writer::SerializedColumnWriter<'_>,
        r: std::ops::Range<usize>,
    ) -> parquet::errors::Result<usize> {
        use parquet::data_type::{ByteArray, ByteArrayType};
        match self {
            Column::I32(v) => col.typed::<Int32Type>().write_batch(&v[r], None, None),
            Column::I64(v) => col.typed::<Int64Type>().write_batch(&v[r], None, None),
            Column::F32(v) => col.typed::<FloatType>().write_batch(&v[r], None, None),
            Column::F64(v) => col.typed::<DoubleType>().write_batch(&v[r], None, None),
            Column::Str(v) => {
                let b: Vec<ByteArray> = v[r].iter().map(|s| ByteArray::from(s.as_str())).collect();
                col.typed::<ByteArrayType>().write_batch(&b, None, None)
            }
        }
    }
}

/// A named set of equal-length columns plus key/value metadata (version, command, seed…).
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
    pub metadata: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: parquet: {source}")]
    Parquet {
        path: PathBuf,
        source: parquet::errors::ParquetError,
    },
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("column '{name}' has {len} rows, expected {expected}")]
    Ragged { name: String, len: usize, expected: usize },
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// Rows per Parquet row group.
const ROW_GROUP: usize = 1 << 20;

impl Table {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    pub fn push(&mut self, name: &str, column: Column) {
        self.columns.push((name.to_string(), column));
    }

    /// The column called `name`, if any.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// The metadata value of `key`, if any.
    pub fn meta_value(&self, key: &str) -> Option<&str> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn meta(&mut self, key: &str, value: impl Into<String>) {
        self.metadata.push((key.to_string(), value.into()));
    }

    /// Write the table to `path` whole: in place when `path` is (inside) a staged output, else
    /// through a temporary renamed over `path` (an existing file is replaced).
    pub fn write_parquet(&self, path: &Path) -> Result<(), TableError> {
        let rows = self.rows();
        for (name, c) in &self.columns {
            if c.len() != rows {
                return Err(TableError::Ragged {
                    name: name.clone(),
                    len: c.len(),
                    expected: rows,
                });
            }
        }
        if is_staged(path) {
            return self.write_to(path, rows);
        }
        let mut out = Outputs::replacing();
        let tmp = out.file(path)?;
        self.write_to(&tmp, rows)?;
        Ok(out.commit()?)
    }

    fn write_to(&self, tmp: &Path, rows: usize) -> Result<(), TableError> {
        let pq = |source| TableError::Parquet { path: shown(tmp), source };
        let fields: String = self.columns.iter().map(|(n, c)| c.parquet_field(n)).collect();
        let schema = Arc::new(parse_message_type(&format!("message table {{ {fields} }}")).map_err(pq)?);
        let kv = self.metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect();
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_key_value_metadata(Some(kv))
                .build(),
        );
        let file = std::fs::File::create(tmp).map_err(|source| TableError::Io { path: shown(tmp), source })?;
        let mut writer = SerializedFileWriter::new(file, schema, props).map_err(pq)?;
        let mut start = 0;
        loop {
            let end = (start + ROW_GROUP).min(rows);
            let mut group = writer.next_row_group().map_err(pq)?;
            let mut i = 0;
            while let Some(mut col) = group.next_column().map_err(pq)? {
                self.columns[i].1.write_rows(&mut col, start..end).map_err(pq)?;
                col.close().map_err(pq)?;
                i += 1;
            }
            group.close().map_err(pq)?;
            start = end;
            if start >= rows {
                break;
            }
        }
        writer.close().map_err(pq)?;
        Ok(())
    }
}

/// Write a file whole, like [`Table::write_parquet`]: in place when `path` is (inside) a
/// staged output, else through a temporary renamed over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if is_staged(path) {
        return std::fs::write(path, bytes);
    }
    let mut out = Outputs::replacing();
    let tmp = out.file(path).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, bytes)?;
    out.commit().map_err(std::io::Error::other)
}

// ---------------------------------------------------------------------------------------------
// Reading: every Parquet input goes through the bounded reader and is decoded from its bytes.
// ---------------------------------------------------------------------------------------------

/// Run a decoding step of the parquet crate, which can panic on corrupt pages (index out of
/// bounds in its RLE decoder, found by the parsers' property tests): such input is an error
/// naming the file, not a crash. The default panic message is held back meanwhile, so the user
/// sees one clean error.
fn guarded<R>(path: &Path, step: impl FnOnce() -> Result<R, InputError>) -> Result<R, InputError> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(step));
    std::panic::set_hook(hook);
    result.unwrap_or_else(|_| Err(InputError::file(path, "corrupt Parquet file (its pages cannot be decoded)")))
}

fn unreadable(path: &Path) -> impl Fn(parquet::errors::ParquetError) -> InputError + '_ {
    move |e| InputError::file(path, format!("not a readable Parquet file: {e}"))
}

/// A Parquet input with its footer decoded; its columns are decoded on demand
/// ([`ParquetFile::columns`]), so a reader budgets and decodes only what it uses. Read whole
/// (bounded, [`ParquetFile::read`]) or left on disk ([`ParquetFile::open`]: only the footer
/// in memory, column chunks read as they are decoded).
pub struct ParquetFile {
    path: PathBuf,
    reader: Box<dyn FileReader>,
}

impl ParquetFile {
    /// Read `path` once through the bounded reader; anything that does not start with `PAR1`
    /// is refused at its first four bytes.
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let (bytes, _) = read_sniffed(path, 4, crate::input::budget(), |head| {
            if head == b"PAR1" {
                Ok(Format::Binary)
            } else {
                Err("not a Parquet file (does not start with PAR1)".to_string())
            }
        })?;
        Self::from_bytes(path, bytes)
    }

    /// Decode the footer of Parquet `bytes` read from `path` (which errors name).
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Self, InputError> {
        let reader = guarded(path, || {
            SerializedFileReader::new(bytes::Bytes::from(bytes)).map_err(unreadable(path))
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            reader: Box::new(reader),
        })
    }

    /// Open `path` and decode its footer only (large outputs merged a file at a time: batch
    /// jobs' hits); anything that does not start with `PAR1` is refused at its first four bytes.
    pub fn open(path: &Path) -> Result<Self, InputError> {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(|e| InputError::file(path, format!("cannot read: {e}")))?;
        if f.metadata().is_ok_and(|m| !m.is_file()) {
            return Err(InputError::file(path, "is not a regular file (a Parquet file is read in place)"));
        }
        let mut head = [0u8; 4];
        if f.read_exact(&mut head).is_err() || &head != b"PAR1" {
            return Err(InputError::file(path, "not a Parquet file (does not start with PAR1)"));
        }
        let reader = guarded(path, || SerializedFileReader::new(f).map_err(unreadable(path)))?;
        Ok(Self {
            path: path.to_path_buf(),
            reader: Box::new(reader),
        })
    }

    /// The names of the columns, in file order.
    pub fn names(&self) -> Vec<String> {
        let schema = self.reader.metadata().file_metadata().schema_descr();
        (0..schema.num_columns()).map(|i| schema.column(i).path().string()).collect()
    }

    /// The rows the footer announces.
    pub fn rows(&self) -> u64 {
        u64::try_from(self.reader.metadata().file_metadata().num_rows()).unwrap_or(0)
    }

    /// The key/value metadata.
    pub fn metadata(&self) -> Vec<(String, String)> {
        let meta = self.reader.metadata().file_metadata();
        meta.key_value_metadata()
            .map(|kv| kv.iter().map(|e| (e.key.clone(), e.value.clone().unwrap_or_default())).collect())
            .unwrap_or_default()
    }

    /// Decode the columns at `which` (indices into [`ParquetFile::names`]): budgeted before
    /// anything is decoded; a column that holds text or lists, or a null, is an error naming
    /// the column (and the row).
    pub fn columns(&self, which: &[usize]) -> Result<Vec<Column>, InputError> {
        self.decode(which, false)
    }

    /// As [`ParquetFile::columns`], text columns read as [`Column::Str`] (for tables the
    /// project wrote, e.g. merging jobs' `lost.parquet`).
    pub fn columns_with_text(&self, which: &[usize]) -> Result<Vec<Column>, InputError> {
        self.decode(which, true)
    }

    fn decode(&self, which: &[usize], text: bool) -> Result<Vec<Column>, InputError> {
        let path = self.path.as_path();
        let rows = self.rows();
        crate::limits::check_alloc(
            &format!("{}: {} columns × {rows} rows", path.display(), which.len()),
            rows.saturating_mul(which.len() as u64),
            8,
            "split the file",
        )
        .map_err(|e| InputError::file(path, e.to_string()))?;
        which.iter().map(|&i| guarded(path, || self.column(i, text))).collect()
    }

    /// Every column and the metadata as a [`Table`].
    pub fn table(&self) -> Result<Table, InputError> {
        let names = self.names();
        let columns = self.columns_with_text(&(0..names.len()).collect::<Vec<_>>())?;
        Ok(Table {
            columns: names.into_iter().zip(columns).collect(),
            metadata: self.metadata(),
        })
    }

    fn column(&self, idx: usize, text: bool) -> Result<Column, InputError> {
        use parquet::basic::Type;
        let path = self.path.as_path();
        let meta = self.reader.metadata();
        let desc = meta.file_metadata().schema_descr().column(idx);
        let field = |m: String| InputError::file(path, m).field(desc.path().string());
        if desc.max_rep_level() > 0 {
            return Err(field("is a list column; expected one number per row".into()));
        }
        let rows = usize::try_from(self.rows()).unwrap_or(usize::MAX);
        let mut col = match desc.physical_type() {
            Type::INT32 => Column::I32(Vec::with_capacity(rows)),
            Type::INT64 => Column::I64(Vec::with_capacity(rows)),
            Type::FLOAT => Column::F32(Vec::with_capacity(rows)),
            Type::DOUBLE => Column::F64(Vec::with_capacity(rows)),
            Type::BYTE_ARRAY if text => Column::Str(Vec::with_capacity(rows)),
            Type::BYTE_ARRAY => return Err(field("holds text, not numbers".into())),
            other => return Err(field(format!("holds {other} values, not numbers"))),
        };
        let max_def = desc.max_def_level();
        for g in 0..meta.num_row_groups() {
            let group = self.reader.get_row_group(g).map_err(unreadable(path))?;
            let n = usize::try_from(group.metadata().num_rows()).unwrap_or(0);
            let first = col.len();
            let reader = group.get_column_reader(idx).map_err(unreadable(path))?;
            if let Some(at) = read_chunk(reader, n, max_def, &mut col).map_err(unreadable(path))? {
                return Err(field(format!("row {}: null (a missing value)", first + at)));
            }
        }
        if col.len() != rows {
            return Err(field(format!("has {} values for {rows} rows", col.len())));
        }
        Ok(col)
    }
}

/// Read the `rows` values of one column chunk onto `out` (of the chunk's type); `Ok(Some(i))`
/// at the first null (row `i` of this chunk).
fn read_chunk(
    reader: parquet::column::reader::ColumnReader,
    rows: usize,
    max_def: i16,
    out: &mut Column,
) -> parquet::errors::Result<Option<usize>> {
    use parquet::column::reader::ColumnReader as R;
    match (reader, out) {
        (R::Int32ColumnReader(mut r), Column::I32(v)) => read_values(&mut r, rows, max_def, v),
        (R::Int64ColumnReader(mut r), Column::I64(v)) => read_values(&mut r, rows, max_def, v),
        (R::FloatColumnReader(mut r), Column::F32(v)) => read_values(&mut r, rows, max_def, v),
        (R::DoubleColumnReader(mut r), Column::F64(v)) => read_values(&mut r, rows, max_def, v),
        (R::ByteArrayColumnReader(mut r), Column::Str(v)) => {
            let mut bytes = Vec::new();
            let null = read_values(&mut r, rows, max_def, &mut bytes)?;
            for b in bytes {
                let s = b
                    .as_utf8()
                    .map_err(|_| parquet::errors::ParquetError::General("a text value is not UTF-8".into()))?;
                v.push(s.to_string());
            }
            Ok(null)
        }
        _ => Err(parquet::errors::ParquetError::General(
            "a column chunk's type differs from its schema".into(),
        )),
    }
}

fn read_values<T: parquet::data_type::DataType>(
    r: &mut parquet::column::reader::ColumnReaderImpl<T>,
    rows: usize,
    max_def: i16,
    out: &mut Vec<T::T>,
) -> parquet::errors::Result<Option<usize>> {
    const BATCH: usize = 1 << 16;
    let mut defs = Vec::with_capacity(BATCH.min(rows));
    let mut done = 0;
    while done < rows {
        defs.clear();
        let before = out.len();
        let want = BATCH.min(rows - done);
        let (records, _, _) = r.read_records(want, (max_def > 0).then_some(&mut defs), None, out)?;
        if records == 0 {
            break;
        }
        if max_def > 0 {
            if let Some(k) = defs.iter().position(|&d| d < max_def) {
                out.truncate(before);
                return Ok(Some(done + k));
            }
        }
        done += records;
    }
    Ok(None)
}

/// A Parquet file or text, as the first bytes of an input say: inputs that take either (CSV
/// points, beam files) are read once through [`read_parquet_or_text`].
pub enum ParquetOrText {
    Parquet(ParquetFile),
    Text(String),
}

/// Read `path` once and decode it as Parquet when it starts with `PAR1`, else as text
/// ([`crate::input::text_from_bytes`]: UTF-8, no NUL bytes, the byte-order mark removed).
pub fn read_parquet_or_text(path: &Path) -> Result<ParquetOrText, InputError> {
    let (bytes, format) = read_sniffed(path, 4, crate::input::budget(), |head| {
        Ok(if head == b"PAR1" { Format::Binary } else { Format::Text })
    })?;
    match format {
        Format::Binary => Ok(ParquetOrText::Parquet(ParquetFile::from_bytes(path, bytes)?)),
        Format::Text => Ok(ParquetOrText::Text(crate::input::text_from_bytes(path, bytes)?)),
    }
}

/// Read a Parquet file whole as a [`Table`] through the bounded reader (reading back outputs,
/// merging job directories).
pub fn read_parquet(path: &Path) -> Result<Table, InputError> {
    ParquetFile::read(path)?.table()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::names;

    fn scratch(name: &str) -> std::path::PathBuf {
        crate::test_support::scratch("table", name)
    }

    fn table() -> Table {
        let mut t = Table::default();
        t.push("a", Column::I32(vec![1, 2, 3]));
        t.push("b", Column::F64(vec![0.5, 1.5, -2.0]));
        t.push("c", Column::F32(vec![1.0, 2.0, 3.0]));
        t.push("d", Column::I64(vec![7, 8, 1 << 40]));
        t.meta("seed", "42");
        t
    }

    #[test]
    fn round_trip_with_metadata() {
        let dir = scratch("round");
        let path = dir.join("t.parquet");
        let t = table();
        t.write_parquet(&path).unwrap();
        let back = read_parquet(&path).unwrap();
        assert_eq!(back.columns, t.columns);
        assert!(back.metadata.contains(&("seed".into(), "42".into())));
        // Written on its own: atomic replacement, no temporary left.
        std::fs::write(&path, "an earlier file").unwrap();
        t.write_parquet(&path).unwrap();
        assert_eq!(read_parquet(&path).unwrap().columns, t.columns);
        write_atomic(&dir.join("x.json"), b"{}").unwrap();
        assert_eq!(names(&dir), ["t.parquet", "x.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// One staging level: a staged output (here with a name so long that a second
    /// `.NAME.tmp-PID` around its temporary could not exist) is written in place.
    #[test]
    fn staged_outputs_are_written_in_place() {
        let dir = scratch("staged");
        let dest = dir.join(format!("{}.parquet", "h".repeat(228)));
        let mut outs = Outputs::new(false);
        let tmp = outs.file(&dest).unwrap();
        let inner = outs.dir(&dir.join("out")).unwrap();
        let entries = names(&dir);
        table().write_parquet(&tmp).unwrap();
        table().write_parquet(&inner.join("t.parquet")).unwrap();
        write_atomic(&inner.join("s.json"), b"{}").unwrap();
        assert_eq!(names(&dir), entries, "a second staging level");
        assert_eq!(names(&inner), ["s.json", "t.parquet"]);
        outs.commit().unwrap();
        assert_eq!(read_parquet(&dest).unwrap().columns, table().columns);
        assert!(dir.join("out/t.parquet").is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ragged_table_is_rejected_and_leaves_no_file() {
        let dir = scratch("ragged");
        let path = dir.join("r.parquet");
        let mut t = Table::default();
        t.push("a", Column::I32(vec![1, 2]));
        t.push("b", Column::I32(vec![1]));
        assert!(matches!(t.write_parquet(&path), Err(TableError::Ragged { .. })));
        assert!(names(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file with a nullable double column `x` (a null at `null_at`) and a text column `name`.
    fn nullable_and_text(path: &Path, rows: usize, null_at: Option<usize>) {
        use parquet::data_type::{ByteArray, ByteArrayType};
        let schema = "message t { OPTIONAL DOUBLE x; REQUIRED BINARY name (UTF8); }";
        let schema = Arc::new(parse_message_type(schema).unwrap());
        let props = Arc::new(WriterProperties::builder().build());
        let mut w = SerializedFileWriter::new(std::fs::File::create(path).unwrap(), schema, props).unwrap();
        let mut g = w.next_row_group().unwrap();
        let mut x = g.next_column().unwrap().unwrap();
        let defs: Vec<i16> = (0..rows).map(|i| i16::from(Some(i) != null_at)).collect();
        let vals: Vec<f64> = (0..rows).filter(|i| Some(*i) != null_at).map(|i| i as f64).collect();
        x.typed::<DoubleType>().write_batch(&vals, Some(&defs), None).unwrap();
        x.close().unwrap();
        let mut name = g.next_column().unwrap().unwrap();
        let text: Vec<ByteArray> = (0..rows).map(|i| ByteArray::from(format!("p{i}").as_str())).collect();
        name.typed::<ByteArrayType>().write_batch(&text, None, None).unwrap();
        name.close().unwrap();
        g.close().unwrap();
        w.close().unwrap();
    }

    /// Columns are decoded on demand: a null or a text column is an error naming the column
    /// (and the row) when that column is asked for, not before.
    #[test]
    fn nulls_and_text_columns_are_named() {
        let dir = scratch("nulls");
        let p = dir.join("t.parquet");
        nullable_and_text(&p, 5, None);
        let f = ParquetFile::read(&p).unwrap();
        assert_eq!((f.names(), f.rows()), (vec!["x".to_string(), "name".to_string()], 5));
        assert_eq!(f.columns(&[0]).unwrap(), [Column::F64(vec![0.0, 1.0, 2.0, 3.0, 4.0])]);
        let e = f.columns(&[1]).unwrap_err().to_string();
        assert_eq!(e, format!("{}: field 'name': holds text, not numbers", p.display()));
        nullable_and_text(&p, 5, Some(3));
        let e = ParquetFile::read(&p).unwrap().columns(&[0]).unwrap_err().to_string();
        assert_eq!(e, format!("{}: field 'x': row 3: null (a missing value)", p.display()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Text columns are written as UTF-8 byte arrays and read back whole by `table()` (and
    /// `columns_with_text`), appended like numbers, while numeric reads still refuse them.
    #[test]
    fn text_columns_round_trip() {
        let dir = scratch("text");
        let p = dir.join("t.parquet");
        let mut t = Table::default();
        t.push("element", Column::I64(vec![3, 0, 7]));
        t.push("element_name", Column::Str(vec!["QF".into(), "".into(), "Ω-col".into()]));
        t.write_parquet(&p).unwrap();
        let back = read_parquet(&p).unwrap();
        assert_eq!(back.columns, t.columns);
        let f = ParquetFile::read(&p).unwrap();
        assert!(f
            .columns(&[1])
            .unwrap_err()
            .to_string()
            .ends_with("field 'element_name': holds text, not numbers"));
        let mut c = f.columns_with_text(&[1]).unwrap().remove(0);
        assert!(c.append(Column::Str(vec!["D".into()])) && !c.append(Column::I64(vec![1])));
        assert_eq!(c.len(), 4);
        assert!(c.to_f64().iter().all(|v| v.is_nan()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Parquet inputs go through the bounded reader: what is not Parquet is refused at its
    /// first bytes, garbage with the magic number is an error, and a FIFO named `x.parquet`
    /// is read like a file (it used to fail with a seek error).
    #[test]
    fn parquet_inputs_are_read_once_and_bounded() {
        let dir = scratch("bounded");
        let p = dir.join("t.parquet");
        std::fs::write(&p, "a,b\n1,2\n").unwrap();
        let e = read_parquet(&p).unwrap_err().to_string();
        assert_eq!(e, format!("{}: not a Parquet file (does not start with PAR1)", p.display()));
        std::fs::write(&p, b"PAR1junkPAR1").unwrap();
        let e = read_parquet(&p).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: not a readable Parquet file: ", p.display())), "{e}");
        let written = dir.join("w.parquet");
        table().write_parquet(&written).unwrap();
        let bytes = std::fs::read(&written).unwrap();
        let fifo = dir.join("x.parquet");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(&fifo, bytes).unwrap())
        };
        let back = read_parquet(&fifo).unwrap();
        writer.join().unwrap();
        assert_eq!(back.columns, table().columns);
        match read_parquet_or_text(&written).unwrap() {
            ParquetOrText::Parquet(f) => assert_eq!(f.table().unwrap().columns, table().columns),
            ParquetOrText::Text(_) => panic!("read as text"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
