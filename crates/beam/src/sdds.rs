//! SDDS files (issue #30): the Self Describing Data Sets format that ELEGANT and the SDDS
//! Toolkit read and write, implemented from its file-format documentation (M. Borland,
//! "A Self-Describing File Protocol for Simulation Integration and Shared Postprocessors",
//! PAC 1995, and the SDDS file-format pages of the APS manuals; no code of the toolkit's).
//!
//! A file is an ASCII header — the first line `SDDS1`, an optional `!# little-endian` /
//! `!# big-endian` line, namelists `&description … &end`, `&parameter name=…, type=…, units=…,
//! &end`, `&column …`, and `&data mode=binary|ascii, &end` — followed by pages of data. A binary
//! page is a 32-bit row count, the values of the parameters in header order, then the rows one
//! after another (row-major), each value in its type's width (double 8 bytes, long 4, short 2,
//! string: a 32-bit length and the bytes). An ASCII page is one line per parameter, a row
//! count line, and the rows as whitespace-separated tokens (strings may be quoted).
//!
//! [`write`] writes binary little-endian pages, as ELEGANT does on the usual machines.
//! [`read`] reads binary (either byte order, row- or column-major) and ASCII files with
//! parameters and columns; arrays, `&include`, several rows per line and fixed field lengths
//! are refused with a message naming the file, line and field. Every count read from a file is
//! checked against the bytes (or tokens) that remain before anything is allocated.

use std::io::Write as _;
use std::path::Path;
use warpdrive_core::error::InputError;

/// A parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Double(f64),
    Long(i32),
    Str(String),
}

/// The values of one column.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    Double(Vec<f64>),
    Long(Vec<i32>),
    Str(Vec<String>),
}

impl Data {
    pub fn len(&self) -> usize {
        match self {
            Data::Double(v) => v.len(),
            Data::Long(v) => v.len(),
            Data::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn type_name(&self) -> &'static str {
        match self {
            Data::Double(_) => "double",
            Data::Long(_) => "long",
            Data::Str(_) => "string",
        }
    }
    /// Numeric values as f64 (strings: `None`).
    pub fn to_f64(&self) -> Option<Vec<f64>> {
        match self {
            Data::Double(v) => Some(v.clone()),
            Data::Long(v) => Some(v.iter().map(|&x| f64::from(x)).collect()),
            Data::Str(_) => None,
        }
    }
}

impl Value {
    fn type_name(&self) -> &'static str {
        match self {
            Value::Double(_) => "double",
            Value::Long(_) => "long",
            Value::Str(_) => "string",
        }
    }
}

/// A named parameter of a page.
#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    pub name: String,
    pub units: String,
    pub value: Value,
}

/// A named column of a page.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnData {
    pub name: String,
    pub units: String,
    pub data: Data,
}

/// One page: parameters and columns of equal length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Page {
    pub parameters: Vec<Parameter>,
    pub columns: Vec<ColumnData>,
}

impl Page {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.data.len())
    }
    pub fn column(&self, name: &str) -> Option<&ColumnData> {
        self.columns.iter().find(|c| c.name == name)
    }
    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.parameters.iter().find(|p| p.name == name)
    }
}

/// A file: description text and contents, pages with the same parameters and columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sdds {
    pub description: String,
    pub contents: String,
    pub pages: Vec<Page>,
}

/// A namelist value: bare when it is a plain word (as the SDDS Toolkit writes names and units;
/// simple readers such as the PyPI `sdds` package keep quotes as part of a name), else in
/// double quotes with `"` and `\` escaped by a backslash.
fn quoted(s: &str) -> String {
    let plain = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_$/.-+:[]".contains(c));
    if plain {
        return s.to_string();
    }
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

/// `, units=…` when there are units.
fn units(u: &str) -> String {
    if u.is_empty() {
        String::new()
    } else {
        format!(" units={},", quoted(u))
    }
}

/// Do two pages have the same parameters and columns (names and types)?
fn same_layout(a: &Page, b: &Page) -> bool {
    a.parameters.len() == b.parameters.len()
        && a.parameters
            .iter()
            .zip(&b.parameters)
            .all(|(p, q)| p.name == q.name && p.value.type_name() == q.value.type_name())
        && a.columns.len() == b.columns.len()
        && a.columns
            .iter()
            .zip(&b.columns)
            .all(|(p, q)| p.name == q.name && p.data.type_name() == q.data.type_name())
}

/// The header of a file whose pages are laid out as `first`.
fn header_bytes(description: &str, contents: &str, first: &Page) -> Vec<u8> {
    let mut h = String::from("SDDS1\n!# little-endian\n");
    h += &format!("&description text={}, contents={}, &end\n", quoted(description), quoted(contents));
    for p in &first.parameters {
        h += &format!(
            "&parameter name={},{} type={}, &end\n",
            quoted(&p.name),
            units(&p.units),
            p.value.type_name()
        );
    }
    for c in &first.columns {
        h += &format!(
            "&column name={},{} type={}, &end\n",
            quoted(&c.name),
            units(&c.units),
            c.data.type_name()
        );
    }
    h += "&data mode=binary, &end\n";
    h.into_bytes()
}

/// One binary page: the row count, the parameters, the rows.
fn page_bytes(p: &Page, b: &mut Vec<u8>) -> Result<(), String> {
    let n = p.rows();
    if let Some(c) = p.columns.iter().find(|c| c.data.len() != n) {
        return Err(format!("column {} has {} rows, not {n}", c.name, c.data.len()));
    }
    let rows = i32::try_from(n).map_err(|_| format!("{n} rows are more than a 32-bit row count holds"))?;
    let string = |b: &mut Vec<u8>, s: &str| -> Result<(), String> {
        let len = i32::try_from(s.len()).map_err(|_| "a string longer than 2 GiB".to_string())?;
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(s.as_bytes());
        Ok(())
    };
    b.extend_from_slice(&rows.to_le_bytes());
    for q in &p.parameters {
        match &q.value {
            Value::Double(v) => b.extend_from_slice(&v.to_le_bytes()),
            Value::Long(v) => b.extend_from_slice(&v.to_le_bytes()),
            Value::Str(s) => string(b, s)?,
        }
    }
    for r in 0..n {
        for c in &p.columns {
            match &c.data {
                Data::Double(v) => b.extend_from_slice(&v[r].to_le_bytes()),
                Data::Long(v) => b.extend_from_slice(&v[r].to_le_bytes()),
                Data::Str(v) => string(b, &v[r])?,
            }
        }
    }
    Ok(())
}

/// The bytes of a binary little-endian SDDS file (row-major).
pub fn to_bytes(f: &Sdds) -> Result<Vec<u8>, String> {
    let first = f.pages.first().ok_or("an SDDS file needs at least one page")?;
    let mut b = header_bytes(&f.description, &f.contents, first);
    for (k, p) in f.pages.iter().enumerate() {
        if !same_layout(p, first) {
            return Err(format!("page {k} has other parameters or columns than page 0"));
        }
        page_bytes(p, &mut b).map_err(|e| format!("page {k}: {e}"))?;
    }
    Ok(b)
}

/// A file written a page at a time (a watch point's records: one page per pass, as ELEGANT's
/// watch files), inside a staged output directory.
pub struct Appender {
    file: std::fs::File,
    path: std::path::PathBuf,
    first: Page,
}

impl Appender {
    /// Create `path` with the header of `first` and write `first` as its first page.
    pub fn create(path: &Path, description: &str, contents: &str, first: &Page) -> Result<Self, String> {
        let mut b = header_bytes(description, contents, first);
        page_bytes(first, &mut b).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        file.write_all(&b).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            first: Page {
                parameters: first.parameters.clone(),
                columns: first
                    .columns
                    .iter()
                    .map(|c| ColumnData {
                        name: c.name.clone(),
                        units: c.units.clone(),
                        data: match c.data {
                            Data::Double(_) => Data::Double(Vec::new()),
                            Data::Long(_) => Data::Long(Vec::new()),
                            Data::Str(_) => Data::Str(Vec::new()),
                        },
                    })
                    .collect(),
            },
        })
    }

    /// Append a page laid out as the first.
    pub fn append(&mut self, p: &Page) -> Result<(), String> {
        if !same_layout(p, &self.first) {
            return Err(format!(
                "{}: a page with other parameters or columns than the first",
                self.path.display()
            ));
        }
        let mut b = Vec::new();
        page_bytes(p, &mut b).map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.file.write_all(&b).map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// Write `f` to `path` (binary, little-endian). Call it inside a staged output: the file is
/// written in one piece.
pub fn write(path: &Path, f: &Sdds) -> Result<(), String> {
    let bytes = to_bytes(f).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// Reading

/// Types a file may declare.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Type {
    Double,
    Float,
    Long64,
    ULong64,
    Long,
    ULong,
    Short,
    UShort,
    Character,
    Str,
}

impl Type {
    fn parse(s: &str) -> Option<Type> {
        Some(match s {
            "double" => Type::Double,
            "float" => Type::Float,
            "long64" => Type::Long64,
            "ulong64" => Type::ULong64,
            "long" => Type::Long,
            "ulong" => Type::ULong,
            "short" => Type::Short,
            "ushort" => Type::UShort,
            "character" => Type::Character,
            "string" => Type::Str,
            _ => return None,
        })
    }
    /// Bytes of one binary value (strings: at least their 4-byte length).
    fn width(self) -> usize {
        match self {
            Type::Double | Type::Long64 | Type::ULong64 => 8,
            Type::Float | Type::Long | Type::ULong | Type::Str => 4,
            Type::Short | Type::UShort => 2,
            Type::Character => 1,
        }
    }
}

#[derive(Clone, Debug)]
struct Def {
    name: String,
    units: String,
    ty: Type,
    fixed: Option<String>,
}

/// A namelist's fields: `&name key=value, key="quoted value", … &end`.
fn namelist_fields(body: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = body.chars().peekable();
    loop {
        while matches!(chars.peek(), Some(c) if c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() || c == ',' {
                break;
            }
            key.push(c);
            chars.next();
        }
        while matches!(chars.peek(), Some(c) if c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(format!("'{key}' has no value (expected {key}=value)"));
        }
        while matches!(chars.peek(), Some(c) if c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(format!("{key}: unterminated quoted value")),
                    Some('\\') => {
                        if let Some(c) = chars.next() {
                            value.push(c);
                        }
                    }
                    Some('"') => break,
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' || c.is_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key.to_ascii_lowercase(), value));
    }
}

/// The parsed header.
struct Header {
    parameters: Vec<Def>,
    columns: Vec<Def>,
    binary: bool,
    big_endian: bool,
    column_major: bool,
    no_row_counts: bool,
    description: String,
    contents: String,
    /// Byte offset where the data start, and the line number of the `&data` line.
    data_start: usize,
    data_line: usize,
}

fn header(path: &Path, bytes: &[u8]) -> Result<Header, InputError> {
    let err = |line: usize, m: String| InputError::new(path, line, m);
    let mut pos = 0usize;
    let next_line = |pos: &mut usize| -> Option<String> {
        if *pos >= bytes.len() {
            return None;
        }
        let end = bytes[*pos..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |e| *pos + e);
        let s = String::from_utf8_lossy(&bytes[*pos..end]).trim_end_matches('\r').to_string();
        *pos = (end + 1).min(bytes.len());
        Some(s)
    };
    let first = next_line(&mut pos).unwrap_or_default();
    let version = first.strip_prefix("SDDS").and_then(|v| v.trim().parse::<u32>().ok());
    if !matches!(version, Some(1..=5)) {
        return Err(err(
            1,
            format!(
                "not an SDDS file: the first line is '{}', expected SDDS1 … SDDS5",
                first.chars().take(40).collect::<String>()
            ),
        ));
    }
    let mut h = Header {
        parameters: Vec::new(),
        columns: Vec::new(),
        binary: false,
        big_endian: false,
        column_major: false,
        no_row_counts: false,
        description: String::new(),
        contents: String::new(),
        data_start: 0,
        data_line: 0,
    };
    let mut lines = 1usize;
    loop {
        let Some(l) = next_line(&mut pos) else {
            return Err(err(lines, "the header ends without a &data namelist".into()));
        };
        lines += 1;
        let start = lines;
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(meta) = t.strip_prefix("!#") {
            match meta.trim() {
                "little-endian" => h.big_endian = false,
                "big-endian" => h.big_endian = true,
                _ => {}
            }
            continue;
        }
        if t.starts_with('!') {
            continue;
        }
        if !t.starts_with('&') {
            return Err(err(
                start,
                format!(
                    "expected a namelist (&parameter, &column, &data …) in the header, found '{}'",
                    t.chars().take(40).collect::<String>()
                ),
            ));
        }
        // A namelist may continue over several lines up to its &end.
        let mut text = t.to_string();
        while !text.contains("&end") {
            match next_line(&mut pos) {
                Some(more) => {
                    lines += 1;
                    text.push(' ');
                    text += more.trim();
                }
                None => return Err(err(start, "a namelist without &end".into())),
            }
        }
        let end = text.find("&end").expect("checked");
        if end == 0 {
            return Err(err(start, "&end without a namelist".into()));
        }
        if !text[end + 4..].trim().is_empty() {
            return Err(err(start, "text after &end on the same line; one namelist per line".into()));
        }
        let (kind, body) = text[1..end].split_once(|c: char| c.is_whitespace()).unwrap_or((&text[1..end], ""));
        let fields = namelist_fields(body).map_err(|m| err(start, format!("&{kind}: {m}")))?;
        let get = |k: &str| fields.iter().find(|(q, _)| q == k).map(|(_, v)| v.clone());
        match kind {
            "description" => {
                h.description = get("text").unwrap_or_default();
                h.contents = get("contents").unwrap_or_default();
            }
            "parameter" | "column" => {
                let name = get("name")
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| err(start, format!("&{kind} without a name")))?;
                let ty = get("type").unwrap_or_default();
                let ty = Type::parse(&ty)
                    .ok_or_else(|| err(start, format!("&{kind} {name}: type '{ty}' is not an SDDS type")).field(name.clone()))?;
                for (k, v) in &fields {
                    let known = ["name", "type", "units", "symbol", "format_string", "description"];
                    let ok = known.contains(&k.as_str())
                        || (kind == "parameter" && k == "fixed_value")
                        || (kind == "column" && k == "field_length" && v.trim() == "0");
                    if !ok {
                        return Err(err(start, format!("&{kind} {name}: field {k}={v} is not supported")).field(name.clone()));
                    }
                }
                let def = Def {
                    units: get("units").unwrap_or_default(),
                    ty,
                    fixed: get("fixed_value"),
                    name,
                };
                let list = if kind == "parameter" { &mut h.parameters } else { &mut h.columns };
                if list.iter().any(|d| d.name == def.name) {
                    return Err(err(start, format!("&{kind} {}: defined twice", def.name)).field(def.name));
                }
                list.push(def);
            }
            "data" => {
                for (k, v) in &fields {
                    let v = v.trim();
                    match (k.as_str(), v) {
                        ("mode", "binary") => h.binary = true,
                        ("mode", "ascii") => h.binary = false,
                        ("lines_per_row", "1")
                        | ("additional_header_lines", "0")
                        | ("column_major_order", "0")
                        | ("no_row_counts", "0") => {}
                        ("column_major_order", "1") => h.column_major = true,
                        ("no_row_counts", "1") => h.no_row_counts = true,
                        ("endian", "big") => h.big_endian = true,
                        ("endian", "little") => {}
                        _ => return Err(err(start, format!("&data: {k}={v} is not supported"))),
                    }
                }
                if h.binary && h.no_row_counts {
                    return Err(err(start, "&data: no_row_counts=1 in binary mode is not supported".into()));
                }
                h.data_start = pos;
                h.data_line = lines;
                return Ok(h);
            }
            "array" => return Err(err(start, "&array: SDDS arrays are not supported".into())),
            "include" => return Err(err(start, "&include: included headers are not supported".into())),
            "associate" => return Err(err(start, "&associate: associates are not supported".into())),
            other => return Err(err(start, format!("&{other}: not an SDDS namelist"))),
        }
    }
}

/// A binary cursor over the data with the file's byte order.
struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
    big: bool,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], InputError> {
        if self.bytes.len() - self.pos < n {
            return Err(InputError::file(
                self.path,
                format!(
                    "truncated at byte {}: {what} needs {n} bytes, {} remain",
                    self.pos,
                    self.bytes.len() - self.pos
                ),
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn word<const N: usize>(&mut self, what: &str) -> Result<[u8; N], InputError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        if self.big {
            a.reverse();
        }
        Ok(a)
    }
    fn i32(&mut self, what: &str) -> Result<i32, InputError> {
        Ok(i32::from_le_bytes(self.word::<4>(what)?))
    }
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
    /// One value of type `ty`: a number, or a string.
    fn value(&mut self, ty: Type, what: &str) -> Result<Result<f64, String>, InputError> {
        Ok(Ok(match ty {
            Type::Double => f64::from_le_bytes(self.word::<8>(what)?),
            Type::Float => f64::from(f32::from_le_bytes(self.word::<4>(what)?)),
            Type::Long64 => i64::from_le_bytes(self.word::<8>(what)?) as f64,
            Type::ULong64 => u64::from_le_bytes(self.word::<8>(what)?) as f64,
            Type::Long => f64::from(i32::from_le_bytes(self.word::<4>(what)?)),
            Type::ULong => f64::from(u32::from_le_bytes(self.word::<4>(what)?)),
            Type::Short => f64::from(i16::from_le_bytes(self.word::<2>(what)?)),
            Type::UShort => f64::from(u16::from_le_bytes(self.word::<2>(what)?)),
            Type::Character => return Ok(Err((self.take(1, what)?[0] as char).to_string())),
            Type::Str => {
                let n = self.i32(what)?;
                let n = usize::try_from(n).map_err(|_| InputError::file(self.path, format!("{what}: string length {n} is negative")))?;
                let s = self.take(n, what)?;
                return Ok(Err(String::from_utf8_lossy(s).into_owned()));
            }
        }))
    }
}

/// Values of a column being read.
enum Building {
    Num(Vec<f64>),
    Str(Vec<String>),
}

fn finish(defs: &[Def], cols: Vec<Building>) -> Vec<ColumnData> {
    defs.iter()
        .zip(cols)
        .map(|(d, c)| ColumnData {
            name: d.name.clone(),
            units: d.units.clone(),
            data: match c {
                Building::Num(v) => Data::Double(v),
                Building::Str(v) => Data::Str(v),
            },
        })
        .collect()
}

fn parameter_value(d: &Def, v: Result<f64, String>) -> Parameter {
    Parameter {
        name: d.name.clone(),
        units: d.units.clone(),
        value: match v {
            Ok(x) => Value::Double(x),
            Err(s) => Value::Str(s),
        },
    }
}

fn fixed(path: &Path, line: usize, d: &Def, text: &str) -> Result<Result<f64, String>, InputError> {
    Ok(match d.ty {
        Type::Str | Type::Character => Err(text.to_string()),
        _ => Ok(text
            .trim()
            .parse::<f64>()
            .map_err(|_| InputError::new(path, line, format!("parameter {}: '{text}' is not a number", d.name)).field(d.name.clone()))?),
    })
}

/// Every page of a binary SDDS file (the pages a watch point appended), for checks.
pub fn read_binary_pages(path: &Path, bytes: &[u8]) -> Result<Vec<Page>, InputError> {
    let h = header(path, bytes)?;
    if !h.binary {
        return Err(InputError::file(path, "not a binary SDDS file"));
    }
    let mut pages = Vec::new();
    let mut pos = h.data_start;
    while pos < bytes.len() {
        let (page, used) = binary_page_at(path, &bytes[pos..], &h)?;
        pages.push(page);
        pos += used;
    }
    Ok(pages)
}

/// Read the first page of an SDDS file (binary or ASCII) from its bytes. More pages are an
/// error (a particle input is one page; say which).
pub fn read_first_page(path: &Path, bytes: &[u8]) -> Result<(Sdds, Page), InputError> {
    let h = header(path, bytes)?;
    let data = &bytes[h.data_start..];
    let page = if h.binary {
        binary_page(path, data, &h)?
    } else {
        ascii_page(path, data, &h)?
    };
    Ok((
        Sdds {
            description: h.description,
            contents: h.contents,
            pages: Vec::new(),
        },
        page,
    ))
}

fn binary_page(path: &Path, data: &[u8], h: &Header) -> Result<Page, InputError> {
    let (page, used) = binary_page_at(path, data, h)?;
    if used < data.len() {
        return Err(InputError::file(
            path,
            format!(
                "{} bytes follow the first page (more pages?); only one-page files are read",
                data.len() - used
            ),
        ));
    }
    Ok(page)
}

/// One binary page at the start of `data`, and the bytes it took.
fn binary_page_at(path: &Path, data: &[u8], h: &Header) -> Result<(Page, usize), InputError> {
    let mut c = Cursor {
        path,
        bytes: data,
        pos: 0,
        big: h.big_endian,
    };
    let rows = c.i32("the row count")?;
    let rows = usize::try_from(rows)
        .map_err(|_| InputError::file(path, format!("row count {rows} is negative (64-bit row counts are not supported)")))?;
    let mut parameters = Vec::new();
    for d in &h.parameters {
        let v = match &d.fixed {
            Some(t) => fixed(path, 0, d, t)?,
            None => c.value(d.ty, &format!("parameter {}", d.name))?,
        };
        parameters.push(parameter_value(d, v));
    }
    // Every row needs at least this many bytes: check the count before allocating.
    let row_bytes: usize = h.columns.iter().map(|d| d.ty.width()).sum();
    if rows.checked_mul(row_bytes).is_none_or(|b| b > c.remaining()) {
        return Err(InputError::file(
            path,
            format!(
                "row count {rows} needs at least {rows} × {row_bytes} bytes; the file has {} left",
                c.remaining()
            ),
        ));
    }
    let mut cols: Vec<Building> = h
        .columns
        .iter()
        .map(|d| match d.ty {
            Type::Str | Type::Character => Building::Str(Vec::with_capacity(rows)),
            _ => Building::Num(Vec::with_capacity(rows)),
        })
        .collect();
    let mut push = |k: usize, v: Result<f64, String>| match (&mut cols[k], v) {
        (Building::Num(a), Ok(x)) => a.push(x),
        (Building::Str(a), Err(s)) => a.push(s),
        _ => unreachable!("the column's type decides the value's"),
    };
    if h.column_major {
        for (k, d) in h.columns.iter().enumerate() {
            for r in 0..rows {
                push(k, c.value(d.ty, &format!("row {r}, column {}", d.name))?);
            }
        }
    } else {
        for r in 0..rows {
            for (k, d) in h.columns.iter().enumerate() {
                push(k, c.value(d.ty, &format!("row {r}, column {}", d.name))?);
            }
        }
    }
    Ok((
        Page {
            parameters,
            columns: finish(&h.columns, cols),
        },
        c.pos,
    ))
}

/// Tokens of ASCII data: whitespace-separated, `"quoted strings"` as one token; `!` comment
/// lines skipped. Each token with its line.
fn ascii_tokens(data: &str, first_line: usize) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, l) in data.lines().enumerate() {
        let line = first_line + 1 + i;
        if l.trim_start().starts_with('!') {
            continue;
        }
        let mut chars = l.chars().peekable();
        loop {
            while matches!(chars.peek(), Some(c) if c.is_whitespace()) {
                chars.next();
            }
            let Some(&c) = chars.peek() else { break };
            let mut t = String::new();
            if c == '"' {
                chars.next();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(n) = chars.next() {
                                t.push(n);
                            }
                        }
                        '"' => break,
                        c => t.push(c),
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() {
                        break;
                    }
                    t.push(c);
                    chars.next();
                }
            }
            out.push((t, line));
        }
    }
    out
}

fn ascii_page(path: &Path, data: &[u8], h: &Header) -> Result<Page, InputError> {
    let text = warpdrive_core::input::text_from_bytes(path, data.to_vec())?;
    // Parameters: one line each (a string parameter is the whole line).
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (h.data_line + 1 + i, l))
        .filter(|(_, l)| !l.trim_start().starts_with('!'));
    let mut parameters = Vec::new();
    let mut consumed_line = h.data_line;
    for d in &h.parameters {
        let v = match &d.fixed {
            Some(t) => fixed(path, h.data_line, d, t)?,
            None => {
                let (n, l) = lines.next().ok_or_else(|| {
                    InputError::new(path, consumed_line + 1, format!("parameter {}: missing", d.name)).field(d.name.clone())
                })?;
                consumed_line = n;
                let t = l.trim();
                let t = t.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(t);
                fixed(path, n, d, t)?
            }
        };
        parameters.push(parameter_value(d, v));
    }
    let rest: String = text.lines().skip(consumed_line - h.data_line).collect::<Vec<_>>().join("\n");
    let tokens = ascii_tokens(&rest, consumed_line);
    let mut it = tokens.into_iter();
    let ncol = h.columns.len();
    let rows = if h.no_row_counts {
        it.len().checked_div(ncol).unwrap_or(0)
    } else {
        let (t, line) = it
            .next()
            .ok_or_else(|| InputError::new(path, consumed_line + 1, "the row count is missing"))?;
        let rows: usize = t
            .parse()
            .map_err(|_| InputError::new(path, line, format!("row count '{t}' is not a non-negative integer")))?;
        if rows.checked_mul(ncol).is_none_or(|need| need > it.len()) {
            return Err(InputError::new(
                path,
                line,
                format!("row count {rows} × {ncol} columns needs more values than the file's {}", it.len()),
            ));
        }
        rows
    };
    let mut cols: Vec<Building> = h
        .columns
        .iter()
        .map(|d| match d.ty {
            Type::Str | Type::Character => Building::Str(Vec::with_capacity(rows)),
            _ => Building::Num(Vec::with_capacity(rows)),
        })
        .collect();
    for _ in 0..rows {
        for (k, d) in h.columns.iter().enumerate() {
            let (t, line) = it.next().expect("counted above");
            match &mut cols[k] {
                Building::Str(a) => a.push(t),
                Building::Num(a) => a.push(
                    t.parse::<f64>()
                        .map_err(|_| InputError::new(path, line, format!("'{t}' is not a number")).field(d.name.clone()))?,
                ),
            }
        }
    }
    if let Some((t, line)) = it.next() {
        return Err(InputError::new(
            path,
            line,
            format!("'{t}' follows the first page's rows (more pages?); only one-page files are read"),
        ));
    }
    Ok(Page {
        parameters,
        columns: finish(&h.columns, cols),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Page {
        Page {
            parameters: vec![
                Parameter {
                    name: "pCentral".into(),
                    units: "m$be$nc".into(),
                    value: Value::Double(1956.951),
                },
                Parameter {
                    name: "Pass".into(),
                    units: String::new(),
                    value: Value::Long(7),
                },
                Parameter {
                    name: "a label".into(),
                    units: String::new(),
                    value: Value::Str("a \"quoted\" label".into()),
                },
            ],
            columns: vec![
                ColumnData {
                    name: "x".into(),
                    units: "m".into(),
                    data: Data::Double(vec![1e-3, -2.5e-4, f64::MIN_POSITIVE, 0.1 + 0.2]),
                },
                ColumnData {
                    name: "particleID".into(),
                    units: String::new(),
                    data: Data::Long(vec![1, 2, 3, -4]),
                },
                ColumnData {
                    name: "ElementName".into(),
                    units: String::new(),
                    data: Data::Str(vec!["Q1".into(), String::new(), "a b".into(), "ÄÖ".into()]),
                },
            ],
        }
    }

    #[test]
    fn binary_round_trip_is_exact() {
        let f = Sdds {
            description: "test".into(),
            contents: "particles".into(),
            pages: vec![page()],
        };
        let bytes = to_bytes(&f).unwrap();
        assert!(bytes.starts_with(b"SDDS1\n!# little-endian\n"));
        let (d, p) = read_first_page(Path::new("t.sdds"), &bytes).unwrap();
        assert_eq!(d.description, "test");
        assert_eq!(p.parameter("pCentral").unwrap().value, Value::Double(1956.951));
        assert_eq!(p.parameter("Pass").unwrap().value, Value::Double(7.0));
        assert_eq!(p.parameter("a label").unwrap().value, Value::Str("a \"quoted\" label".into()));
        assert_eq!(p.column("x").unwrap().data, page().columns[0].data);
        assert_eq!(p.column("particleID").unwrap().data, Data::Double(vec![1.0, 2.0, 3.0, -4.0]));
        assert_eq!(p.column("ElementName").unwrap().data, page().columns[2].data);
    }

    #[test]
    fn the_binary_layout_is_the_documented_one() {
        // One double column, one long parameter, two rows: header, i32 row count, parameter,
        // then the rows in order, little-endian.
        let f = Sdds {
            description: String::new(),
            contents: String::new(),
            pages: vec![Page {
                parameters: vec![Parameter {
                    name: "Step".into(),
                    units: String::new(),
                    value: Value::Long(1),
                }],
                columns: vec![ColumnData {
                    name: "x".into(),
                    units: "m".into(),
                    data: Data::Double(vec![1.5, -2.0]),
                }],
            }],
        };
        let b = to_bytes(&f).unwrap();
        let head = "SDDS1\n!# little-endian\n&description text=\"\", contents=\"\", &end\n\
                    &parameter name=Step, type=long, &end\n&column name=x, units=m, type=double, &end\n\
                    &data mode=binary, &end\n";
        assert_eq!(&b[..head.len()], head.as_bytes());
        let mut want = Vec::new();
        want.extend_from_slice(&2i32.to_le_bytes());
        want.extend_from_slice(&1i32.to_le_bytes());
        want.extend_from_slice(&1.5f64.to_le_bytes());
        want.extend_from_slice(&(-2.0f64).to_le_bytes());
        assert_eq!(&b[head.len()..], want.as_slice());
    }

    #[test]
    fn ascii_and_big_endian_and_column_major_files_are_read() {
        let ascii = "SDDS1\n! a comment\n&description text=\"hand written\", &end\n&parameter name=pCentral, type=double, &end\n\
                     &parameter name=Tag, type=string, &end\n&parameter name=Fixed, type=long, fixed_value=3, &end\n\
                     &column name=x, type=double, units=m, &end\n&column name=name, type=string, &end\n&data mode=ascii, &end\n\
                     ! page 1\n100.5\n\"a tag\"\n2\n1e-3 \"Q 1\"\n-2e-3 D\n";
        let (_, p) = read_first_page(Path::new("a.sdds"), ascii.as_bytes()).unwrap();
        assert_eq!(p.parameter("pCentral").unwrap().value, Value::Double(100.5));
        assert_eq!(p.parameter("Tag").unwrap().value, Value::Str("a tag".into()));
        assert_eq!(p.parameter("Fixed").unwrap().value, Value::Double(3.0));
        assert_eq!(p.column("x").unwrap().data, Data::Double(vec![1e-3, -2e-3]));
        assert_eq!(p.column("name").unwrap().data, Data::Str(vec!["Q 1".into(), "D".into()]));

        let mut big = b"SDDS1\n!# big-endian\n&column name=x, type=double, &end\n&column name=n, type=short, &end\n&data mode=binary, column_major_order=1, &end\n".to_vec();
        big.extend_from_slice(&2i32.to_be_bytes());
        big.extend_from_slice(&0.25f64.to_be_bytes());
        big.extend_from_slice(&(-8.0f64).to_be_bytes());
        big.extend_from_slice(&5i16.to_be_bytes());
        big.extend_from_slice(&(-6i16).to_be_bytes());
        let (_, p) = read_first_page(Path::new("b.sdds"), &big).unwrap();
        assert_eq!(p.column("x").unwrap().data, Data::Double(vec![0.25, -8.0]));
        assert_eq!(p.column("n").unwrap().data, Data::Double(vec![5.0, -6.0]));
    }

    #[test]
    fn bad_files_are_named_with_line_and_field() {
        let e = |text: &[u8]| read_first_page(Path::new("bad.sdds"), text).unwrap_err().to_string();
        assert!(e(b"PAR1").contains("bad.sdds:1: not an SDDS file"), "{}", e(b"PAR1"));
        let m = e(b"SDDS1\n&column name=x, type=complex, &end\n&data mode=ascii, &end\n");
        assert!(m.contains("bad.sdds:2") && m.contains("type 'complex'"), "{m}");
        let m = e(b"SDDS1\n&array name=a, type=double, &end\n");
        assert!(m.contains("bad.sdds:2") && m.contains("arrays are not supported"), "{m}");
        let m = e(b"SDDS1\n&column name=x, type=double, &end\n&data mode=ascii, &end\n2\n1.0\nabc\n");
        assert!(m.contains("row count 2 × 1 columns") || m.contains("'abc' is not a number"), "{m}");
        let m = e(b"SDDS1\n&column name=x, type=double, &end\n&data mode=ascii, &end\n2\n1.0\nabc\n");
        assert!(m.contains("bad.sdds:6") && m.contains("'abc' is not a number"), "{m}");
        // A huge row count in a short binary file is refused before allocation.
        let mut b = b"SDDS1\n&column name=x, type=double, &end\n&data mode=binary, &end\n".to_vec();
        b.extend_from_slice(&i32::MAX.to_le_bytes());
        b.extend_from_slice(&1.0f64.to_le_bytes());
        let m = e(&b);
        assert!(m.contains("row count 2147483647 needs at least"), "{m}");
        // A second page is named, not ignored.
        let mut b = b"SDDS1\n&column name=x, type=double, &end\n&data mode=binary, &end\n".to_vec();
        for _ in 0..2 {
            b.extend_from_slice(&1i32.to_le_bytes());
            b.extend_from_slice(&1.0f64.to_le_bytes());
        }
        assert!(e(&b).contains("only one-page files are read"), "{}", e(&b));
        let m = e(b"SDDS1\n&column name=x, type=double, &end\n");
        assert!(m.contains("without a &data namelist"), "{m}");
        let m = e(b"SDDS1\n&end\n");
        assert!(m.contains("bad.sdds:2: &end without a namelist"), "{m}");
        let m = e(b"SDDS1\n&column name=x, type=double, field_length=8, &end\n&data mode=ascii, &end\n");
        assert!(m.contains("field_length=8 is not supported"), "{m}");
    }
}
