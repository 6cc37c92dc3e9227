//! Reading the spline domain's input files once, bounded (DESIGN.md §6, issue #36 items 6 and 9).
//!
//! Every input is opened once and read through one handle, so a FIFO or a `<(…)` process
//! substitution is never read twice (a second open of a pipe sees only what the first left —
//! the `PAR1` sniff used to swallow a CSV header's first four bytes that way). The first bytes
//! decide the format before the rest is read:
//!
//! * FITS must start with `SIMPLE  =`: anything else (`/dev/zero`, a text file) is refused after
//!   at most one 80-byte card instead of after the whole memory budget;
//! * points and events are Parquet when they start with `PAR1`, else text, which stops at its
//!   first NUL byte ("binary data, not text") — again at once for `/dev/zero`.
//!
//! Regular files are size-checked against [`warpdrive_core::input::budget`] before a byte is
//! read; streams are read through `take(budget)`. Text goes through
//! [`warpdrive_core::input::text_from_bytes`] (UTF-8, byte-order mark removed), and Parquet is
//! decoded from the bytes already read ([`parquet_from_bytes`]).
//!
//! `warpdrive_core::input::read_bytes_kind` reads the whole stream before a caller can look at
//! it; this module adds the look at the first bytes (a candidate for warpdrive-core).

use std::io::Read;
use std::path::Path;
use warpdrive_core::table::{Column, Table};
use warpdrive_core::InputError;

/// How the first bytes of an input classify it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Binary data (read whole, bounded).
    Binary,
    /// Text (a NUL byte ends the read with an error).
    Text,
}

fn cannot(path: &Path) -> impl Fn(std::io::Error) -> InputError + '_ {
    move |e| InputError::file(path, format!("cannot read: {e}"))
}

/// Fill `buf` from `r` until it is full or the input ends; returns the bytes read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn too_big(path: &Path, limit: u64, what: String) -> InputError {
    InputError::file(
        path,
        format!(
            "{what}, more than the {} an input may have here (memory budget; WARPDRIVE_MAX_MEMORY raises it)",
            warpdrive_core::limits::human(limit as f64)
        ),
    )
}

/// Read the input at `path` once: its first `head` bytes go to `classify`, which returns the
/// format or refuses the input; then the rest, bounded by `limit` bytes in all.
pub fn read_sniffed(
    path: &Path,
    head: usize,
    limit: u64,
    classify: impl FnOnce(&[u8]) -> Result<Format, String>,
) -> Result<(Vec<u8>, Format), InputError> {
    let mut file = std::fs::File::open(path).map_err(cannot(path))?;
    let meta = file.metadata().map_err(cannot(path))?;
    if meta.is_dir() {
        return Err(InputError::file(path, "is a directory, not a file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if meta.file_type().is_block_device() {
            return Err(InputError::file(path, "is a block device, not a file"));
        }
    }
    if meta.is_file() && meta.len() > limit {
        let len = meta.len();
        return Err(too_big(
            path,
            limit,
            format!("{} ({len} bytes)", warpdrive_core::limits::human(len as f64)),
        ));
    }
    let mut buf = vec![0u8; head];
    let got = read_up_to(&mut file, &mut buf).map_err(cannot(path))?;
    buf.truncate(got);
    let format = classify(&buf).map_err(|m| InputError::file(path, m))?;
    if format == Format::Text {
        check_no_nul(path, &buf, 0)?;
    }
    if meta.is_file() {
        buf.reserve_exact((meta.len() as usize).saturating_sub(got));
    }
    let mut rest = file.take(limit + 1 - (got as u64).min(limit + 1));
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = read_up_to(&mut rest, &mut chunk).map_err(cannot(path))?;
        if n == 0 {
            break;
        }
        if format == Format::Text {
            check_no_nul(path, &chunk[..n], buf.len())?;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    if buf.len() as u64 > limit {
        return Err(too_big(path, limit, "more than that was read from it".to_string()));
    }
    Ok((buf, format))
}

fn check_no_nul(path: &Path, bytes: &[u8], offset: usize) -> Result<(), InputError> {
    match bytes.iter().position(|&b| b == 0) {
        Some(at) => Err(InputError::file(
            path,
            format!("binary data, not text (a NUL byte at offset {})", offset + at),
        )),
        None => Ok(()),
    }
}

/// The bytes of a FITS file (photospline table), refused at once unless it starts with
/// `SIMPLE  =` (FITS 4.0 §4.4.1.1: the first keyword of every primary header).
pub fn read_fits(path: &Path) -> Result<Vec<u8>, InputError> {
    let (bytes, _) = read_sniffed(path, crate::fits::CARD, warpdrive_core::input::budget(), |head| {
        if head.starts_with(b"SIMPLE  =") {
            Ok(Format::Binary)
        } else {
            Err("not a FITS file (does not start with SIMPLE =)".to_string())
        }
    })?;
    Ok(bytes)
}

/// A file that is either Parquet or text, read once.
pub enum TableOrText {
    Parquet(Table),
    Text(String),
}

/// Read `path` once and decode it as Parquet when it starts with `PAR1`, else as text.
pub fn read_parquet_or_text(path: &Path) -> Result<TableOrText, InputError> {
    let (bytes, format) = read_sniffed(path, 4, warpdrive_core::input::budget(), |head| {
        Ok(if head == b"PAR1" { Format::Binary } else { Format::Text })
    })?;
    match format {
        Format::Binary => Ok(TableOrText::Parquet(parquet_from_bytes(path, bytes)?)),
        Format::Text => Ok(TableOrText::Text(warpdrive_core::input::text_from_bytes(path, bytes)?)),
    }
}

/// Read a Parquet file once (bounded) and decode it; anything else is refused at its first
/// four bytes.
pub fn read_parquet(path: &Path) -> Result<Table, InputError> {
    let (bytes, _) = read_sniffed(path, 4, warpdrive_core::input::budget(), |head| {
        if head == b"PAR1" {
            Ok(Format::Binary)
        } else {
            Err("not a Parquet file (does not start with PAR1)".to_string())
        }
    })?;
    parquet_from_bytes(path, bytes)
}

/// Decode Parquet bytes into columns (INT32, INT64, FLOAT, DOUBLE; other types read as empty
/// DOUBLE columns, which the callers' column checks then report). The parquet crate can panic
/// on corrupt pages (found by the parsers' property tests): such input is an error naming the
/// file, not a crash.
pub fn parquet_from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Table, InputError> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(move || decode_parquet(path, bytes));
    std::panic::set_hook(hook);
    result.unwrap_or_else(|_| Err(InputError::file(path, "corrupt Parquet file (its pages cannot be decoded)")))
}

fn decode_parquet(path: &Path, bytes: Vec<u8>) -> Result<Table, InputError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let pq = |e: parquet::errors::ParquetError| InputError::file(path, format!("parquet: {e}"));
    let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).map_err(pq)?;
    let meta = reader.metadata().file_metadata();
    let mut table = Table::default();
    if let Some(kv) = meta.key_value_metadata() {
        for e in kv {
            table.meta(&e.key, e.value.clone().unwrap_or_default());
        }
    }
    let rows = usize::try_from(meta.num_rows().max(0)).unwrap_or(usize::MAX);
    let columns = meta.schema_descr().num_columns();
    warpdrive_core::limits::check_alloc(
        &format!("{}: {columns} columns × {rows} rows", path.display()),
        (rows as u64).saturating_mul(columns as u64),
        8,
        "split the file",
    )
    .map_err(|e| InputError::file(path, e.to_string()))?;
    for f in meta.schema_descr().columns() {
        let col = match f.physical_type() {
            parquet::basic::Type::INT32 => Column::I32(Vec::with_capacity(rows)),
            parquet::basic::Type::INT64 => Column::I64(Vec::with_capacity(rows)),
            parquet::basic::Type::FLOAT => Column::F32(Vec::with_capacity(rows)),
            _ => Column::F64(Vec::new()),
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

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("wd-spline-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn dev_zero_is_refused_at_once() {
        let t0 = std::time::Instant::now();
        let e = read_fits(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "/dev/zero: not a FITS file (does not start with SIMPLE =)");
        let e = read_parquet_or_text(Path::new("/dev/zero")).err().unwrap().to_string();
        assert_eq!(e, "/dev/zero: binary data, not text (a NUL byte at offset 0)");
        let e = read_parquet(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "/dev/zero: not a Parquet file (does not start with PAR1)");
        assert!(t0.elapsed().as_secs_f64() < 1.0, "{:?}", t0.elapsed());
    }

    #[test]
    fn streams_and_files_are_bounded() {
        let d = scratch("bound");
        let p = d.join("big.csv");
        std::fs::write(&p, "x\n".repeat(1000)).unwrap();
        let e = read_sniffed(&p, 4, 100, |_| Ok(Format::Text)).unwrap_err().to_string();
        assert!(e.contains("(2000 bytes), more than the 100 B an input may have"), "{e}");
        let (b, f) = read_sniffed(&p, 4, 2000, |_| Ok(Format::Text)).unwrap();
        assert_eq!((b.len(), f), (2000, Format::Text));
        assert!(read_sniffed(&d, 4, 100, |_| Ok(Format::Text))
            .unwrap_err()
            .to_string()
            .contains("is a directory"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A FIFO is opened once: the bytes the format sniff reads stay part of the text
    /// (issue #36 item 9: a header `radius,phi` used to arrive as `us,phi`).
    #[cfg(unix)]
    #[test]
    fn a_fifo_keeps_its_first_bytes() {
        let d = scratch("fifo");
        let p = d.join("points.csv");
        let status = std::process::Command::new("mkfifo").arg(&p).status().unwrap();
        assert!(status.success());
        let writer = {
            let p = p.clone();
            std::thread::spawn(move || std::fs::write(&p, "radius,phi\n1,2\n").unwrap())
        };
        let got = read_parquet_or_text(&p).unwrap();
        writer.join().unwrap();
        match got {
            TableOrText::Text(t) => assert_eq!(t, "radius,phi\n1,2\n"),
            TableOrText::Parquet(_) => panic!("read as Parquet"),
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn parquet_round_trip_from_bytes() {
        let d = scratch("pq");
        let p = d.join("t.parquet");
        let mut t = Table::default();
        t.push("a", Column::I32(vec![1, 2]));
        t.push("b", Column::F64(vec![0.5, -1.0]));
        t.meta("k", "v");
        t.write_parquet(&p).unwrap();
        let back = read_parquet(&p).unwrap();
        assert_eq!(back.columns, t.columns);
        assert_eq!(back.meta_value("k"), Some("v"));
        let e = parquet_from_bytes(&p, b"PAR1garbagePAR1".to_vec()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: parquet: ", p.display())), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
