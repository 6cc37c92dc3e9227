//! Every input file is read through one bounded reader (DESIGN.md §6, issue #36).
//!
//! * The file type is checked on the opened file: directories are refused, regular files are
//!   size-checked against the memory budget before a byte is read, and unseekable inputs (pipes,
//!   FIFOs, `<(…)`, character devices such as `/dev/zero`) are read through `take(budget)`, so
//!   no input can grow the process until the kernel kills it.
//! * Text inputs stop at the first NUL byte ("binary data, not text") and lose a leading UTF-8
//!   byte-order mark; the format sniffing of a caller works on the same buffer, so a stream is
//!   read exactly once (no lost bytes).

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

/// What kind of file an input is, from the opened file's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Regular,
    /// A pipe, FIFO, socket or character device: read as a stream, bounded.
    Stream,
}

fn kind_of(path: &Path, m: &std::fs::Metadata) -> Result<Kind, InputError> {
    if m.is_dir() {
        return Err(InputError::file(path, "is a directory, not a file"));
    }
    if m.is_file() {
        return Ok(Kind::Regular);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_block_device() {
            return Err(InputError::file(path, "is a block device, not a file"));
        }
    }
    Ok(Kind::Stream)
}

/// Read the whole input at `path` (at most `limit` bytes). `text` stops a stream at its first
/// NUL byte, so `/dev/zero` given as a text file fails at once.
fn read_bounded(path: &Path, limit: u64, text: bool) -> Result<(Vec<u8>, Kind), InputError> {
    let cannot = |e: std::io::Error| InputError::file(path, format!("cannot read: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    let kind = kind_of(path, &meta)?;
    let too_big = |what: String| {
        InputError::file(
            path,
            format!(
                "{what}, more than the {} an input may have here (memory budget; WARPDRIVE_MAX_MEMORY raises it)",
                crate::limits::human(limit as f64)
            ),
        )
    };
    let mut buf = Vec::new();
    match kind {
        Kind::Regular => {
            let len = meta.len();
            if len > limit {
                return Err(too_big(format!("{} ({len} bytes)", crate::limits::human(len as f64))));
            }
            buf.reserve_exact(len as usize);
            file.take(limit + 1).read_to_end(&mut buf).map_err(cannot)?;
        }
        Kind::Stream => {
            let mut r = file.take(limit + 1);
            let mut chunk = vec![0u8; 1 << 16];
            loop {
                let n = match r.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(cannot(e)),
                };
                if text {
                    if let Some(at) = chunk[..n].iter().position(|&b| b == 0) {
                        return Err(InputError::file(
                            path,
                            format!("binary data, not text (a NUL byte at offset {})", buf.len() + at),
                        ));
                    }
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
    if buf.len() as u64 > limit {
        return Err(too_big("more than that was read from it".to_string()));
    }
    Ok((buf, kind))
}

/// The bytes of an input file (binary formats: Parquet, FITS), bounded by [`budget`].
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, InputError> {
    read_bounded(path, budget(), false).map(|(b, _)| b)
}

/// The bytes of an input and whether it was a stream, for readers that sniff the format.
pub fn read_bytes_kind(path: &Path) -> Result<(Vec<u8>, Kind), InputError> {
    read_bounded(path, budget(), false)
}

/// The text of an input file: bounded by [`budget`], UTF-8, no NUL bytes, a leading byte-order
/// mark removed.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    let (bytes, _) = read_bounded(path, budget(), true)?;
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
        let d = std::env::temp_dir().join(format!("wd-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
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
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20, false).unwrap_err().to_string();
        assert!(e.contains("more than the 1.000 MiB an input may have"), "{e}");
        let d = scratch("big");
        let p = d.join("big.bin");
        std::fs::write(&p, vec![1u8; 4096]).unwrap();
        let e = read_bounded(&p, 1000, false).unwrap_err().to_string();
        assert!(e.contains("4.000 KiB (4096 bytes), more than"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
