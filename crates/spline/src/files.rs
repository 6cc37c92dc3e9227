//! The spline domain's FITS input, read once and bounded (DESIGN.md §6, issue #36 items 6 and 9)
//! through [`warpdrive_core::input::read_sniffed`]: a photospline table must start with
//! `SIMPLE  =`, so anything else (`/dev/zero`, a text file) is refused after at most one 80-byte
//! card instead of after the whole memory budget. Points and events (Parquet or CSV) are read
//! with `warpdrive_core::table::{read_parquet_or_text, ParquetFile}`.

use std::path::Path;
use warpdrive_core::input::{read_sniffed, Format};
use warpdrive_core::InputError;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn dev_zero_is_refused_at_once() {
        let t0 = std::time::Instant::now();
        let e = read_fits(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "/dev/zero: not a FITS file (does not start with SIMPLE =)");
        let e = crate::points::read_points(Path::new("/dev/zero"), 3, &[])
            .err()
            .unwrap()
            .to_string();
        assert_eq!(e, "/dev/zero: binary data, not text (a NUL byte at offset 0)");
        let e = crate::millipede::event::Event::read(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "/dev/zero: not a Parquet file (does not start with PAR1)");
        assert!(t0.elapsed().as_secs_f64() < 1.0, "{:?}", t0.elapsed());
    }
}
