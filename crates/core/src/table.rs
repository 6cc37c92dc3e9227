//! Column tables written as Apache Parquet with run metadata (DESIGN.md §6).
//!
//! A table is written whole or not at all, with one staging level (rule 5 of
//! [`crate::output`]): a path that is a command's staged output, or lies inside a staged output
//! directory, is written in place — the command commits it; any other path is staged here
//! (`.NAME.tmp-PID` beside it, registered for the signal thread) and renamed over the name when
//! complete, so a failed write never leaves a partial file under the requested name.

use crate::output::{is_staged, OutputError, Outputs};
use parquet::basic::Compression;
use parquet::data_type::{DoubleType, FloatType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
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
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::I32(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::F32(v) => v.len(),
            Column::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values as f64, whatever the stored type.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Column::F64(v) => v.clone(),
            Column::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Column::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Column::I64(v) => v.iter().map(|&x| x as f64).collect(),
        }
    }

    fn parquet_type(&self) -> &'static str {
        match self {
            Column::I32(_) => "INT32",
            Column::I64(_) => "INT64",
            Column::F32(_) => "FLOAT",
            Column::F64(_) => "DOUBLE",
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
    #[error("{path}: corrupt Parquet file (its pages cannot be decoded)")]
    Corrupt { path: PathBuf },
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
        let pq = |source| TableError::Parquet {
            path: tmp.to_path_buf(),
            source,
        };
        let fields: String = self
            .columns
            .iter()
            .map(|(n, c)| format!("REQUIRED {} {n};", c.parquet_type()))
            .collect();
        let schema = Arc::new(parse_message_type(&format!("message table {{ {fields} }}")).map_err(pq)?);
        let kv = self.metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect();
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_key_value_metadata(Some(kv))
                .build(),
        );
        let file = std::fs::File::create(tmp).map_err(|source| TableError::Io {
            path: tmp.to_path_buf(),
            source,
        })?;
        let mut writer = SerializedFileWriter::new(file, schema, props).map_err(pq)?;
        let mut start = 0;
        loop {
            let end = (start + ROW_GROUP).min(rows);
            let mut group = writer.next_row_group().map_err(pq)?;
            let mut i = 0;
            while let Some(mut col) = group.next_column().map_err(pq)? {
                let r = start..end;
                match &self.columns[i].1 {
                    Column::I32(v) => col.typed::<Int32Type>().write_batch(&v[r], None, None),
                    Column::I64(v) => col.typed::<Int64Type>().write_batch(&v[r], None, None),
                    Column::F32(v) => col.typed::<FloatType>().write_batch(&v[r], None, None),
                    Column::F64(v) => col.typed::<DoubleType>().write_batch(&v[r], None, None),
                }
                .map_err(pq)?;
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

/// Read back a Parquet file as columns (used by tests and `warpdrive` tools that merge files).
pub fn read_parquet(path: &Path) -> Result<Table, TableError> {
    // The parquet crate can panic on corrupted files (index out of bounds in its RLE decoder,
    // found by the parsers' property tests): such a file is an input error, not a crash. The
    // default panic message is held back while reading so the user sees one clean error.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(|| read_parquet_unguarded(path));
    std::panic::set_hook(hook);
    result.unwrap_or_else(|_| Err(TableError::Corrupt { path: path.to_path_buf() }))
}

fn read_parquet_unguarded(path: &Path) -> Result<Table, TableError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let pq = |source| TableError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(|source| TableError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = SerializedFileReader::new(file).map_err(pq)?;
    let meta = reader.metadata().file_metadata();
    let mut table = Table::default();
    if let Some(kv) = meta.key_value_metadata() {
        for e in kv {
            table.meta(&e.key, e.value.clone().unwrap_or_default());
        }
    }
    for f in meta.schema_descr().columns() {
        let col = match f.physical_type() {
            parquet::basic::Type::INT32 => Column::I32(vec![]),
            parquet::basic::Type::INT64 => Column::I64(vec![]),
            parquet::basic::Type::FLOAT => Column::F32(vec![]),
            _ => Column::F64(vec![]),
        };
        table.push(f.name(), col);
    }
    for row in reader.get_row_iter(None).map_err(pq)? {
        let row = row.map_err(pq)?;
        for (i, (_, field)) in row.get_column_iter().enumerate() {
            match (&mut table.columns[i].1, field) {
                (Column::I32(v), Field::Int(x)) => v.push(*x),
                (Column::I64(v), Field::Long(x)) => v.push(*x),
                (Column::F32(v), Field::Float(x)) => v.push(*x),
                (Column::F64(v), Field::Double(x)) => v.push(*x),
                _ => {}
            }
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wd-table-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
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
}
