//! The part of FITS (NASA/Science Office of Standards and Technology, "Definition of the Flexible
//! Image Transport System", version 4.0, 2016) that photospline tables use: a primary IMAGE and
//! IMAGE extensions, 2 880-byte blocks of 80-character header cards, big-endian data.
//!
//! Errors name the file and the card: the "line" of an [`InputError`] here is the 1-based number
//! of the 80-character card in the file (what `fold -w 80 file.fits | less -N` shows).

use std::path::Path;
use warpdrive_core::InputError;

const BLOCK: usize = 2880;
/// Bytes of one header card.
pub(crate) const CARD: usize = 80;

/// A header value as written on its card.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(String),
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Value {
    /// The value as text (strings without quotes), as photospline keeps auxiliary keys.
    pub fn text(&self) -> String {
        match self {
            Value::Str(s) => s.clone(),
            Value::Bool(b) => if *b { "T" } else { "F" }.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format!("{f:?}"),
        }
    }
}

/// One keyword card.
#[derive(Clone, Debug, PartialEq)]
pub struct Card {
    pub key: String,
    pub value: Value,
    /// 1-based card number in the file.
    pub card: usize,
}

/// Pixel data of an image HDU, converted to native numbers.
#[derive(Clone, Debug, PartialEq)]
pub enum Pixels {
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Integer images (BITPIX 8/16/32/64) are kept only to report them.
    Int {
        bitpix: i64,
        len: usize,
    },
}

/// One header-data unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Hdu {
    pub cards: Vec<Card>,
    /// NAXIS1..NAXISn as written (NAXIS1 varies fastest).
    pub axes: Vec<usize>,
    pub pixels: Pixels,
    /// 1-based card number of this HDU's first card.
    pub first_card: usize,
}

impl Hdu {
    pub fn get(&self, key: &str) -> Option<&Card> {
        self.cards.iter().find(|c| c.key == key)
    }

    /// `EXTNAME`, if any.
    pub fn name(&self) -> Option<&str> {
        match self.get("EXTNAME").map(|c| &c.value) {
            Some(Value::Str(s)) => Some(s.as_str()),
            _ => None,
        }
    }
}

/// Parse the value field of a card (after `= `): quoted string (`''` escapes a quote), logical,
/// integer or real (`D` exponents allowed); a `/` starts the comment.
fn parse_value(field: &str) -> Option<Value> {
    let f = field.trim_start();
    if let Some(rest) = f.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return Some(Value::Str(out.trim_end().to_string()));
                }
            } else {
                out.push(c);
            }
        }
        return None; // unterminated string
    }
    let token = f.split('/').next().unwrap_or("").trim();
    match token {
        "" => None,
        "T" => Some(Value::Bool(true)),
        "F" => Some(Value::Bool(false)),
        t => t
            .parse::<i64>()
            .map(Value::Int)
            .ok()
            .or_else(|| t.replace(['D', 'd'], "E").parse::<f64>().ok().map(Value::Float)),
    }
}

/// Split one card into keyword and value; `None` for commentary cards (COMMENT, HISTORY, blank,
/// CONTINUE). `HIERARCH A B = v` (ESO convention) gives the key `A B`.
fn parse_card(path: &Path, number: usize, raw: &[u8]) -> Result<Option<(String, Value)>, InputError> {
    let text = std::str::from_utf8(raw)
        .ok()
        .filter(|t| t.bytes().all(|b| (0x20..0x7f).contains(&b)))
        .ok_or_else(|| InputError::new(path, number, "header card is not printable ASCII (truncated or not a FITS file?)"))?;
    let (key, field) = if let Some(rest) = text.strip_prefix("HIERARCH ") {
        match rest.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), v),
            None => return Ok(None),
        }
    } else {
        let key = text[..8].trim_end().to_string();
        if &text[8..10] != "= " {
            return Ok(None);
        }
        (key, &text[10..])
    };
    match parse_value(field) {
        Some(v) => Ok(Some((key, v))),
        None => Err(InputError::new(path, number, format!("cannot read the value of {key}: '{}'", field.trim())).field(key)),
    }
}

fn int_key(path: &Path, cards: &[Card], key: &str, at: usize) -> Result<i64, InputError> {
    match cards.iter().find(|c| c.key == key) {
        Some(Card { value: Value::Int(i), .. }) => Ok(*i),
        Some(c) => Err(InputError::new(path, c.card, format!("{key} must be an integer, found '{}'", c.value.text())).field(key)),
        None => Err(InputError::new(path, at, format!("header has no {key}")).field(key)),
    }
}

/// Read every HDU of a FITS file, through the bounded reader ([`crate::files::read_fits`]:
/// read once, refused at its first card unless it is FITS, at most the memory budget).
pub fn read(path: &Path) -> Result<Vec<Hdu>, InputError> {
    let bytes = crate::files::read_fits(path)?;
    parse(path, &bytes)
}

/// Parse FITS bytes (`path` only names them in errors).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Hdu>, InputError> {
    if !bytes.starts_with(b"SIMPLE  =") {
        return Err(InputError::file(path, "not a FITS file (does not start with SIMPLE =)"));
    }
    let mut hdus = Vec::new();
    let mut pos = 0usize;
    while pos < bytes.len() {
        let first_card = pos / CARD + 1;
        // Header: cards up to END, padded to whole blocks.
        let mut cards = Vec::new();
        let mut at = pos;
        loop {
            if at + CARD > bytes.len() {
                return Err(InputError::new(
                    path,
                    at / CARD + 1,
                    format!("file ends inside the header of HDU {} (no END card): truncated", hdus.len() + 1),
                ));
            }
            let raw = &bytes[at..at + CARD];
            let number = at / CARD + 1;
            at += CARD;
            if raw.starts_with(b"END") && raw[3..].iter().all(|&b| b == b' ') {
                break;
            }
            if let Some((key, value)) = parse_card(path, number, raw)? {
                cards.push(Card { key, value, card: number });
            }
        }
        let data_start = at.div_ceil(BLOCK) * BLOCK;
        let bitpix = int_key(path, &cards, "BITPIX", first_card)?;
        let naxis = int_key(path, &cards, "NAXIS", first_card)?;
        if !(0..=999).contains(&naxis) {
            return Err(InputError::new(path, first_card, format!("NAXIS = {naxis} is out of range")).field("NAXIS"));
        }
        let mut axes = Vec::new();
        for k in 1..=naxis {
            let key = format!("NAXIS{k}");
            let n = int_key(path, &cards, &key, first_card)?;
            if n < 0 {
                return Err(InputError::new(path, first_card, format!("{key} = {n} is negative")).field(key));
            }
            axes.push(n as usize);
        }
        let count: usize = if axes.is_empty() { 0 } else { axes.iter().product() };
        let gcount = cards
            .iter()
            .find(|c| c.key == "GCOUNT")
            .map_or(Ok(1), |_| int_key(path, &cards, "GCOUNT", first_card))?;
        let pcount = cards
            .iter()
            .find(|c| c.key == "PCOUNT")
            .map_or(Ok(0), |_| int_key(path, &cards, "PCOUNT", first_card))?;
        let width = match bitpix {
            8 | 16 | 32 | 64 | -32 | -64 => bitpix.unsigned_abs() as usize / 8,
            b => return Err(InputError::new(path, first_card, format!("BITPIX = {b} is not a FITS data type")).field("BITPIX")),
        };
        let nbytes = width * (gcount.max(0) as usize) * (pcount.max(0) as usize + count);
        let data = bytes.get(data_start..data_start + nbytes).ok_or_else(|| {
            InputError::new(
                path,
                first_card,
                format!(
                    "HDU {} needs {nbytes} data bytes but the file ends after {}: truncated",
                    hdus.len() + 1,
                    bytes.len().saturating_sub(data_start)
                ),
            )
        })?;
        for scale in ["BSCALE", "BZERO"] {
            if let Some(c) = cards.iter().find(|c| c.key == scale) {
                let identity = if scale == "BSCALE" { 1.0 } else { 0.0 };
                let v = match c.value {
                    Value::Int(i) => i as f64,
                    Value::Float(f) => f,
                    _ => f64::NAN,
                };
                if v != identity {
                    return Err(InputError::new(
                        path,
                        c.card,
                        format!("{scale} = {} (scaled images) is not supported", c.value.text()),
                    )
                    .field(scale));
                }
            }
        }
        let data = &data[..width * count];
        let pixels = match bitpix {
            -32 => Pixels::F32(data.chunks_exact(4).map(|b| f32::from_be_bytes([b[0], b[1], b[2], b[3]])).collect()),
            -64 => Pixels::F64(
                data.chunks_exact(8)
                    .map(|b| f64::from_be_bytes(b.try_into().expect("8 bytes")))
                    .collect(),
            ),
            b => Pixels::Int { bitpix: b, len: count },
        };
        hdus.push(Hdu {
            cards,
            axes,
            pixels,
            first_card,
        });
        pos = (data_start + nbytes).div_ceil(BLOCK) * BLOCK;
        // Trailing zero padding after the last HDU is allowed.
        if bytes[pos.min(bytes.len())..].iter().all(|&b| b == 0 || b == b' ') {
            break;
        }
    }
    Ok(hdus)
}

/// Writes FITS files: cards, then big-endian data, each padded to whole blocks.
#[derive(Default)]
pub struct Writer {
    out: Vec<u8>,
}

/// A value to write on a card.
pub enum Put<'a> {
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Writer {
    fn card(&mut self, text: &str) {
        let mut c = text.as_bytes().to_vec();
        c.truncate(CARD);
        c.resize(CARD, b' ');
        self.out.extend_from_slice(&c);
    }

    /// One `KEY = value` card; keys longer than 8 characters are written as HIERARCH cards.
    pub fn key(&mut self, key: &str, value: Put) {
        let v = match value {
            Put::Str(s) => format!("'{:<8}'", s.replace('\'', "''")),
            Put::Bool(b) => format!("{:>20}", if b { "T" } else { "F" }),
            Put::Int(i) => format!("{i:>20}"),
            Put::Float(f) => format!("{:>20}", format!("{f:E}")),
        };
        if key.len() > 8 || key.contains(' ') {
            self.card(&format!("HIERARCH {key} = {}", v.trim_start()));
        } else {
            self.card(&format!("{key:<8}= {v}"));
        }
    }

    fn end_header(&mut self) {
        self.card("END");
        self.pad(b' ');
    }

    fn pad(&mut self, with: u8) {
        let n = self.out.len().div_ceil(BLOCK) * BLOCK;
        self.out.resize(n, with);
    }

    /// Start an image HDU (`primary` or an IMAGE extension) of `axes` (NAXIS1 first) and
    /// `bitpix`; the caller adds keys and then [`Writer::data_f32`]/[`Writer::data_f64`].
    pub fn image(&mut self, primary: bool, bitpix: i64, axes: &[usize]) {
        if primary {
            self.key("SIMPLE", Put::Bool(true));
        } else {
            self.key("XTENSION", Put::Str("IMAGE"));
        }
        self.key("BITPIX", Put::Int(bitpix));
        self.key("NAXIS", Put::Int(axes.len() as i64));
        for (k, &n) in axes.iter().enumerate() {
            self.key(&format!("NAXIS{}", k + 1), Put::Int(n as i64));
        }
        if primary {
            self.key("EXTEND", Put::Bool(true));
        } else {
            self.key("PCOUNT", Put::Int(0));
            self.key("GCOUNT", Put::Int(1));
        }
    }

    pub fn data_f32(&mut self, v: &[f32]) {
        self.end_header();
        for x in v {
            self.out.extend_from_slice(&x.to_be_bytes());
        }
        self.pad(0);
    }

    pub fn data_f64(&mut self, v: &[f64]) {
        self.end_header();
        for x in v {
            self.out.extend_from_slice(&x.to_be_bytes());
        }
        self.pad(0);
    }

    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_strings_hierarch_and_comments() {
        assert_eq!(parse_value(" 'It''s  '  / c"), Some(Value::Str("It's".into())));
        assert_eq!(parse_value("                   T"), Some(Value::Bool(true)));
        assert_eq!(parse_value("  -32 / bits"), Some(Value::Int(-32)));
        assert_eq!(parse_value(" 1.5D2"), Some(Value::Float(150.0)));
        assert_eq!(parse_value(" 'open"), None);
        let p = Path::new("x.fits");
        let card = format!("{:<80}", "HIERARCH TARGETMASS = 0.938 / GeV");
        assert_eq!(
            parse_card(p, 1, card.as_bytes()).unwrap(),
            Some(("TARGETMASS".into(), Value::Float(0.938)))
        );
        let card = format!("{:<80}", "COMMENT anything = goes");
        assert_eq!(parse_card(p, 1, card.as_bytes()).unwrap(), None);
    }

    #[test]
    fn write_then_read_round_trip() {
        let mut w = Writer::default();
        w.image(true, -32, &[3, 2]);
        w.key("TYPE", Put::Str("Spline Coefficient Table"));
        w.key("A LONG KEY NAME", Put::Float(2.5));
        w.data_f32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        w.image(false, -64, &[2]);
        w.key("EXTNAME", Put::Str("KNOTS0"));
        w.data_f64(&[0.5, -1.25]);
        let bytes = w.finish();
        assert_eq!(bytes.len() % BLOCK, 0);
        let hdus = parse(Path::new("mem.fits"), &bytes).unwrap();
        assert_eq!(hdus.len(), 2);
        assert_eq!(hdus[0].axes, vec![3, 2]);
        assert_eq!(hdus[0].pixels, Pixels::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        assert_eq!(hdus[0].get("A LONG KEY NAME").unwrap().value, Value::Float(2.5));
        assert_eq!(hdus[1].name(), Some("KNOTS0"));
        assert_eq!(hdus[1].pixels, Pixels::F64(vec![0.5, -1.25]));
        // Truncation inside the data is reported with the HDU.
        let e = parse(Path::new("cut.fits"), &bytes[..BLOCK + 10]).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }
}
