//! Every input file is read through one bounded reader (DESIGN.md §6, issue #36).
//!
//! * The file type is checked on the opened file: directories are refused, regular files are
//!   size-checked against the memory budget before a byte is read, and unseekable inputs (pipes,
//!   FIFOs, `<(…)`, character devices such as `/dev/zero`) are read through `take(budget)`, so
//!   no input can grow the process until the kernel kills it.
//! * Every input is opened once and read through one handle ([`read_sniffed`]): its first bytes
//!   decide the format before the rest is read, so a FIFO or a `<(…)` is never read twice (a
//!   second open of a pipe sees only what the first left — a `PAR1` sniff once swallowed a CSV
//!   header's first four bytes that way), and an input of the wrong kind is refused at its first
//!   bytes instead of after the whole memory budget.
//! * Text inputs stop at the first NUL byte ("binary data, not text", at once for `/dev/zero`)
//!   and lose a leading UTF-8 byte-order mark ([`text_from_bytes`]).

use crate::error::InputError;
use std::io::Read;
use std::path::Path;

/// The largest input read whole into memory, unless the memory budget is smaller: larger inputs
/// are refused with a message (none of the formats warpdrive reads needs more).
pub const MAX_INPUT_BYTES: u64 = 16 << 30;

/// The bytes an input may have: the memory budget's half, at most [`MAX_INPUT_BYTES`].
pub fn budget() -> u64 {
    (crate::limits::memory_budget() / 2).min(MAX_INPUT_BYTES)
}

/// How the first bytes of an input classify it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Binary data (read whole, bounded).
    Binary,
    /// Text: a NUL byte ends the read with an error.
    Text,
}

fn cannot(path: &Path) -> impl Fn(std::io::Error) -> InputError + '_ {
    move |e| InputError::file(path, format!("cannot read: {e}"))
}

fn too_big(path: &Path, limit: u64, what: String) -> InputError {
    InputError::file(
        path,
        format!(
            "{what}, more than the {} an input may have here (memory budget; WARPDRIVE_MAX_MEMORY raises it)",
            crate::limits::human(limit as f64)
        ),
    )
}

/// Refuse what is not a file one can read: directories and block devices. Regular files and
/// streams (pipes, FIFOs, sockets, character devices) are read.
fn check_kind(path: &Path, m: &std::fs::Metadata) -> Result<(), InputError> {
    if m.is_dir() {
        return Err(InputError::file(path, "is a directory, not a file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if m.file_type().is_block_device() {
            return Err(InputError::file(path, "is a block device, not a file"));
        }
    }
    Ok(())
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

fn check_no_nul(path: &Path, bytes: &[u8], offset: usize) -> Result<(), InputError> {
    match bytes.iter().position(|&b| b == 0) {
        Some(at) => Err(InputError::file(
            path,
            format!("binary data, not text (a NUL byte at offset {})", offset + at),
        )),
        None => Ok(()),
    }
}

/// Read the input at `path` once: its first `head` bytes go to `classify`, which returns the
/// format or refuses the input (its message follows the path); then the rest, bounded by
/// `limit` bytes in all. A regular file larger than `limit` is refused before a byte is read.
pub fn read_sniffed(
    path: &Path,
    head: usize,
    limit: u64,
    classify: impl FnOnce(&[u8]) -> Result<Format, String>,
) -> Result<(Vec<u8>, Format), InputError> {
    let mut file = std::fs::File::open(path).map_err(cannot(path))?;
    let meta = file.metadata().map_err(cannot(path))?;
    check_kind(path, &meta)?;
    if meta.is_file() && meta.len() > limit {
        let len = meta.len();
        return Err(too_big(path, limit, format!("{} ({len} bytes)", crate::limits::human(len as f64))));
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
    let mut rest = file.take((limit + 1).saturating_sub(got as u64));
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

/// The bytes of an input file (binary formats: Parquet, FITS), bounded by [`budget`].
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, InputError> {
    read_sniffed(path, 0, budget(), |_| Ok(Format::Binary)).map(|(b, _)| b)
}

/// The text of an input file: bounded by [`budget`], UTF-8, no NUL bytes, a leading byte-order
/// mark removed.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    let (bytes, _) = read_sniffed(path, 0, budget(), |_| Ok(Format::Text))?;
    text_from_bytes(path, bytes)
}

/// Bytes already read (e.g. after sniffing a format) as text, with the checks of [`read_text`].
pub fn text_from_bytes(path: &Path, mut bytes: Vec<u8>) -> Result<String, InputError> {
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(InputError::file(path, format!("binary data, not text (a NUL byte at offset {at})")));
    }
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
        InputError::new(path, line, format!("not UTF-8 text (byte offset {at})"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        crate::test_support::scratch("input", name)
    }

    #[test]
    fn text_loses_its_bom_and_refuses_nul_and_bad_utf8() {
        let d = scratch("text");
        let p = d.join("a.csv");
        std::fs::write(&p, b"\xEF\xBB\xBFradius,phi\n1,2\n").unwrap();
        assert_eq!(read_text(&p).unwrap(), "radius,phi\n1,2\n");
        std::fs::write(&p, b"a\nb\0c").unwrap();
        assert!(read_text(&p)
            .unwrap_err()
            .to_string()
            .contains("binary data, not text (a NUL byte at offset 3)"));
        std::fs::write(&p, b"a\nb\xffc").unwrap();
        let e = read_text(&p).unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (2, "not UTF-8 text (byte offset 3)"));
        assert!(read_text(&d).unwrap_err().to_string().contains("is a directory"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn endless_streams_are_bounded() {
        // A text input from /dev/zero stops at its first byte; a binary one at the limit.
        let e = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("binary data, not text (a NUL byte at offset 0)"), "{e}");
        let e = read_sniffed(Path::new("/dev/zero"), 0, 1 << 20, |_| Ok(Format::Binary))
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than the 1.000 MiB an input may have"), "{e}");
        let d = scratch("big");
        let p = d.join("big.bin");
        std::fs::write(&p, vec![1u8; 4096]).unwrap();
        let e = read_sniffed(&p, 0, 1000, |_| Ok(Format::Binary)).unwrap_err().to_string();
        assert!(e.contains("4.000 KiB (4096 bytes), more than"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn sniffed_reads_are_bounded_and_refuse_at_the_first_bytes() {
        let d = scratch("sniff");
        let p = d.join("big.csv");
        std::fs::write(&p, "x\n".repeat(1000)).unwrap();
        let e = read_sniffed(&p, 4, 100, |_| Ok(Format::Text)).unwrap_err().to_string();
        assert!(e.contains("(2000 bytes), more than the 100 B an input may have"), "{e}");
        let (b, f) = read_sniffed(&p, 4, 2000, |_| Ok(Format::Text)).unwrap();
        assert_eq!((b.len(), f), (2000, Format::Text));
        let e = read_sniffed(&p, 4, 2000, |head| Err(format!("not a format ({head:?})"))).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: not a format ([120, 10, 120, 10])", p.display()));
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
        let (bytes, format) = read_sniffed(&p, 4, 1 << 20, |head| {
            Ok(if head == b"PAR1" { Format::Binary } else { Format::Text })
        })
        .unwrap();
        writer.join().unwrap();
        assert_eq!((bytes.as_slice(), format), (&b"radius,phi\n1,2\n"[..], Format::Text));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
