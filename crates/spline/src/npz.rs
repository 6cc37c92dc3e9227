//! A minimal reader of NumPy `.npz` archives (`np.savez`, `np.savez_compressed`): the ZIP
//! container (PKWARE APPNOTE 6.3: end of central directory, central directory, local headers;
//! ZIP64 sizes and offsets; methods 0 = stored and 8 = deflate) holding `.npy` arrays (NumPy's
//! format 1.0–3.0, `numpy/lib/format.py` docs: magic `\x93NUMPY`, version, header length,
//! a Python dict literal with `descr`, `fortran_order`, `shape`, then the raw data).
//!
//! Numeric little-endian (or byte-sized) dtypes are read as f64: `<f8 <f4 <i8 <i4 <i2 |i1 <u8
//! <u4 <u2 |u1 |b1`. Fortran-order arrays are returned in C order. Every size from the file is
//! checked against the bytes present and the memory budget before allocation.

use std::io::Read;
use std::path::Path;
use warpdrive_core::engine::Error;
use warpdrive_core::InputError;

/// One array of an archive: shape and values in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
}

/// The start of every ZIP local header (and so of an `.npz`).
pub const MAGIC: &[u8] = b"PK\x03\x04";

fn u16le(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?)))
}
fn u32le(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?)))
}
fn u64le(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A member of the archive as the central directory describes it.
struct Entry {
    name: String,
    method: u64,
    compressed: u64,
    size: u64,
    offset: u64,
}

/// The members listed in the central directory.
fn entries(path: &Path, b: &[u8]) -> Result<Vec<Entry>, InputError> {
    let bad = |m: &str| InputError::file(path, format!("not a readable .npz (ZIP) archive: {m}"));
    // End of central directory: the last "PK\x05\x06" within 64 KiB + 22 of the end.
    let lo = b.len().saturating_sub(22 + 65535);
    let eocd = (lo..b.len().saturating_sub(21))
        .rev()
        .find(|&i| &b[i..i + 4] == b"PK\x05\x06")
        .ok_or_else(|| bad("no end of central directory record (truncated?)"))?;
    let mut count = u16le(b, eocd + 10).unwrap_or(0);
    let mut cd = u32le(b, eocd + 16).unwrap_or(0);
    if count == 0xFFFF || cd == 0xFFFF_FFFF {
        // ZIP64 end of central directory locator just before, pointing at the ZIP64 record.
        let loc = eocd
            .checked_sub(20)
            .filter(|&l| &b[l..l + 4] == b"PK\x06\x07")
            .ok_or_else(|| bad("ZIP64 locator missing"))?;
        let rec = u64le(b, loc + 8).ok_or_else(|| bad("ZIP64 locator truncated"))? as usize;
        if b.get(rec..rec + 4) != Some(b"PK\x06\x06") {
            return Err(bad("ZIP64 end of central directory missing"));
        }
        count = u64le(b, rec + 32).ok_or_else(|| bad("ZIP64 record truncated"))?;
        cd = u64le(b, rec + 48).ok_or_else(|| bad("ZIP64 record truncated"))?;
    }
    let mut out = Vec::new();
    let mut at = usize::try_from(cd).map_err(|_| bad("central directory offset too large"))?;
    for _ in 0..count {
        if b.get(at..at + 4) != Some(b"PK\x01\x02") {
            return Err(bad(&format!("central directory entry missing at offset {at}")));
        }
        let field = |o: usize, n: usize| if n == 2 { u16le(b, at + o) } else { u32le(b, at + o) };
        let (method, mut compressed, mut size) = (field(10, 2), field(20, 4), field(24, 4));
        let (name_len, extra_len, comment_len) = (field(28, 2), field(30, 2), field(32, 2));
        let mut offset = field(42, 4);
        let (Some(method), Some(name_len), Some(extra_len), Some(comment_len)) = (method, name_len, extra_len, comment_len) else {
            return Err(bad("central directory truncated"));
        };
        let name_at = at + 46;
        let name = b
            .get(name_at..name_at + name_len as usize)
            .ok_or_else(|| bad("central directory truncated"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        // ZIP64 extra field (id 1): the 64-bit values of the fields set to 0xFFFFFFFF, in order.
        let mut e = name_at + name_len as usize;
        let extra_end = e + extra_len as usize;
        while e + 4 <= extra_end {
            let (id, len) = (u16le(b, e).unwrap_or(0), u16le(b, e + 2).unwrap_or(0) as usize);
            if id == 1 {
                let mut p = e + 4;
                for v in [&mut size, &mut compressed, &mut offset] {
                    if *v == Some(0xFFFF_FFFF) && p + 8 <= e + 4 + len {
                        *v = u64le(b, p);
                        p += 8;
                    }
                }
            }
            e += 4 + len;
        }
        let (Some(compressed), Some(size), Some(offset)) = (compressed, size, offset) else {
            return Err(bad("central directory truncated"));
        };
        out.push(Entry {
            name,
            method,
            compressed,
            size,
            offset,
        });
        at = extra_end + comment_len as usize;
    }
    Ok(out)
}

/// The names of the arrays in an archive (without `.npy`).
pub fn names(path: &Path, bytes: &[u8]) -> Result<Vec<String>, InputError> {
    Ok(entries(path, bytes)?
        .into_iter()
        .map(|e| e.name.trim_end_matches(".npy").to_string())
        .collect())
}

/// Array `name` of the archive, `None` when there is no such member.
pub fn array(path: &Path, bytes: &[u8], name: &str) -> Result<Option<Array>, Error> {
    let Some(e) = entries(path, bytes)?
        .into_iter()
        .find(|e| e.name == format!("{name}.npy") || e.name == name)
    else {
        return Ok(None);
    };
    let bad = |m: String| InputError::file(path, format!("array '{name}': {m}"));
    let at = e.offset as usize;
    if bytes.get(at..at + 4) != Some(MAGIC) {
        return Err(bad("local header missing".into()).into());
    }
    let data_at = at + 30 + u16le(bytes, at + 26).unwrap_or(0) as usize + u16le(bytes, at + 28).unwrap_or(0) as usize;
    let raw = bytes
        .get(data_at..data_at.saturating_add(e.compressed as usize))
        .ok_or_else(|| bad(format!("{} bytes of data past the end of the file (truncated)", e.compressed)))?;
    let npy = match e.method {
        0 => raw.to_vec(),
        8 => {
            warpdrive_core::limits::check_alloc(&format!("{}: array '{name}'", path.display()), e.size, 1, "use a smaller histogram")?;
            let mut out = Vec::with_capacity(e.size as usize);
            flate2::read::DeflateDecoder::new(raw)
                .take(e.size + 1)
                .read_to_end(&mut out)
                .map_err(|err| bad(format!("deflate data is corrupt: {err}")))?;
            if out.len() as u64 != e.size {
                return Err(bad(format!("inflates to {} bytes, the directory says {}", out.len(), e.size)).into());
            }
            out
        }
        m => return Err(bad(format!("compression method {m}; only stored (0) and deflate (8) are read")).into()),
    };
    Ok(Some(parse_npy(&npy).map_err(bad)?))
}

/// A `.npy` file's array.
pub fn parse_npy(b: &[u8]) -> Result<Array, String> {
    if !b.starts_with(b"\x93NUMPY") || b.len() < 10 {
        return Err("not a .npy array (no \\x93NUMPY magic)".into());
    }
    let (header_len, start) = match b[6] {
        1 => (u16le(b, 8).unwrap_or(0) as usize, 10),
        2 | 3 => (u32le(b, 8).ok_or("truncated header")? as usize, 12),
        v => return Err(format!(".npy format version {v} (1 to 3 are read)")),
    };
    let header = b.get(start..start + header_len).ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "header is not text")?;
    let value = |key: &str| -> Result<&str, String> {
        let k = header.find(&format!("'{key}'")).ok_or(format!("header has no '{key}': {header}"))?;
        let rest = header[k + key.len() + 2..]
            .trim_start()
            .strip_prefix(':')
            .ok_or("malformed header")?;
        Ok(rest.trim_start())
    };
    let descr = value("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or("malformed descr")?;
    let fortran = value("fortran_order")?.starts_with("True");
    let shape_text = value("shape")?;
    let shape_text = shape_text
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or("malformed shape")?;
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse::<usize>()
                .map_err(|_| format!("shape entry '{s}' is not a size"))
        })
        .collect::<Result<_, _>>()?;
    let count = shape.iter().try_fold(1usize, |a, &m| a.checked_mul(m)).ok_or("shape overflows")?;
    let (size, read): (usize, fn(&[u8]) -> f64) = match descr {
        "<f8" => (8, |c| f64::from_le_bytes(c.try_into().unwrap())),
        "<f4" => (4, |c| f64::from(f32::from_le_bytes(c.try_into().unwrap()))),
        "<i8" => (8, |c| i64::from_le_bytes(c.try_into().unwrap()) as f64),
        "<i4" => (4, |c| f64::from(i32::from_le_bytes(c.try_into().unwrap()))),
        "<i2" => (2, |c| f64::from(i16::from_le_bytes(c.try_into().unwrap()))),
        "|i1" => (1, |c| f64::from(c[0] as i8)),
        "<u8" => (8, |c| u64::from_le_bytes(c.try_into().unwrap()) as f64),
        "<u4" => (4, |c| f64::from(u32::from_le_bytes(c.try_into().unwrap()))),
        "<u2" => (2, |c| f64::from(u16::from_le_bytes(c.try_into().unwrap()))),
        "|u1" | "|b1" => (1, |c| f64::from(c[0])),
        d => {
            return Err(format!(
                "dtype '{d}' is not read (little-endian numbers: <f8, <f4, <i8, <i4, <u8, …)"
            ))
        }
    };
    let data = &b[start + header_len..];
    if data.len() / size < count {
        return Err(format!("{} bytes of data for shape {shape:?} of {descr} (truncated)", data.len()));
    }
    let flat: Vec<f64> = data.chunks_exact(size).take(count).map(read).collect();
    let values = if fortran && shape.len() > 1 {
        // C-order element i sits at the Fortran offset of its multi-index.
        (0..count)
            .map(|i| {
                let (mut rem, mut off, mut stride) = (i, 0, 1);
                let mut idx = vec![0; shape.len()];
                for d in (0..shape.len()).rev() {
                    idx[d] = rem % shape[d];
                    rem /= shape[d];
                }
                for d in 0..shape.len() {
                    off += idx[d] * stride;
                    stride *= shape[d];
                }
                flat[off]
            })
            .collect()
    } else {
        flat
    };
    Ok(Array { shape, values })
}

/// `.npy` bytes of a float64 array (C order): for tests and for writing fixtures.
pub fn npy_bytes(shape: &[usize], values: &[f64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape_text}, }}");
    // Pad so that the data starts on a 64-byte boundary, ending with a newline (format.py).
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// An uncompressed `.npz` of `arrays` as `np.savez` writes it (ZIP64 extra fields in the local
/// headers, as NumPy's `force_zip64`): for tests and fixtures.
pub fn npz_bytes(arrays: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in arrays {
        let name = format!("{name}.npy");
        let offset = out.len() as u32;
        let crc = crc32(data);
        let mut local = MAGIC.to_vec();
        local.extend_from_slice(&[45, 0, 0, 0, 0, 0, 0, 0, 0x21, 0x21]); // version, flags, method 0, time, date
        local.extend_from_slice(&crc.to_le_bytes());
        local.extend_from_slice(&u32::MAX.to_le_bytes());
        local.extend_from_slice(&u32::MAX.to_le_bytes());
        local.extend_from_slice(&(name.len() as u16).to_le_bytes());
        local.extend_from_slice(&20u16.to_le_bytes());
        local.extend_from_slice(name.as_bytes());
        local.extend_from_slice(&1u16.to_le_bytes());
        local.extend_from_slice(&16u16.to_le_bytes());
        local.extend_from_slice(&(data.len() as u64).to_le_bytes());
        local.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(&local);
        out.extend_from_slice(data);
        let mut c = b"PK\x01\x02".to_vec();
        c.extend_from_slice(&[45, 3, 45, 0, 0, 0, 0, 0, 0, 0x21, 0x21, 0]);
        c.extend_from_slice(&crc.to_le_bytes());
        c.extend_from_slice(&(data.len() as u32).to_le_bytes());
        c.extend_from_slice(&(data.len() as u32).to_le_bytes());
        c.extend_from_slice(&(name.len() as u16).to_le_bytes());
        c.extend_from_slice(&[0; 12]); // extra, comment, disk, attributes
        c.extend_from_slice(&offset.to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        central.push(c);
    }
    let cd_at = out.len() as u32;
    let cd: Vec<u8> = central.concat();
    out.extend_from_slice(&cd);
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    out.extend_from_slice(&(arrays.len() as u16).to_le_bytes());
    out.extend_from_slice(&(arrays.len() as u16).to_le_bytes());
    out.extend_from_slice(&(cd.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_at.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

/// CRC-32 (IEEE 802.3, reflected 0xEDB88320), as ZIP stores it.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_fortran_order() {
        let p = Path::new("h.npz");
        let a = npy_bytes(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = npy_bytes(&[4], &[0.5, 1.5, 2.5, 3.5]);
        let z = npz_bytes(&[("counts", a), ("edges_0", b)]);
        assert_eq!(names(p, &z).unwrap(), vec!["counts", "edges_0"]);
        let c = array(p, &z, "counts").unwrap().unwrap();
        assert_eq!(c.shape, vec![2, 3]);
        assert_eq!(c.values, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(array(p, &z, "edges_0").unwrap().unwrap().values, vec![0.5, 1.5, 2.5, 3.5]);
        assert!(array(p, &z, "weights").unwrap().is_none());
        // Fortran order: memory 1,4,2,5,3,6 is the C array [[1,2,3],[4,5,6]].
        let mut f = npy_bytes(&[2, 3], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let at = f.windows(5).position(|w| w == b"False").unwrap();
        f[at..at + 5].copy_from_slice(b"True ");
        assert_eq!(parse_npy(&f).unwrap().values, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // Known CRC of "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn damaged_archives_are_refused() {
        let p = Path::new("h.npz");
        let z = npz_bytes(&[("counts", npy_bytes(&[3], &[1.0, 2.0, 3.0]))]);
        let e = array(p, &z[..z.len() - 30], "counts").unwrap_err().to_string();
        assert!(e.contains("no end of central directory"), "{e}");
        let mut t = z.clone();
        let at = t.windows(3).position(|w| w == b"<f8").unwrap();
        t[at..at + 3].copy_from_slice(b">f8");
        let e = array(p, &t, "counts").unwrap_err().to_string();
        assert!(e.contains("array 'counts': dtype '>f8' is not read"), "{e}");
        assert!(parse_npy(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'}")
            .unwrap_err()
            .contains("fortran_order"));
    }
}
