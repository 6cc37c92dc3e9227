//! ELEGANT `.lte` lattice files, the subset of spec §4: `NAME: TYPE, PARAM=value, ...`
//! (case-insensitive), `!` comments, `&` continuation, quoted strings, beamlines
//! `NAME: LINE=(A, 2*B, -C, 3*(D, E))` with repetition, reversal and nesting, elements defined
//! from other elements (`Q2: Q1, K1=-1.2`), and `USE, NAME`. The line used is the one named by
//! `USE` or the caller, else the last line defined.
//!
//! Every error names the file and line, and the element and parameter where there is one.
//! Parameters this subset does not implement are errors, never silently ignored.

use crate::aperture::{Aperture, Shape};
use crate::map::Element;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use warpdrive_core::limits::LimitError;

/// Where a definition came from (the file name is shared by every element of the line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: Arc<str>,
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct LatticeError {
    pub origin: Origin,
    pub message: String,
    /// Set when the expanded line would not fit in the memory budget (the message is its text).
    pub limit: Option<Box<LimitError>>,
}

impl LatticeError {
    fn new(origin: Origin, message: String) -> Self {
        Self {
            origin,
            message,
            limit: None,
        }
    }
}

/// Parameters of an LSCDRIFT element (spec §3). Filter cutoffs are fractions of the Nyquist
/// frequency; negative means no filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LscParams {
    /// Length of the drift [m].
    pub l: f64,
    /// Length the impedance acts over [m] (LEFFECTIVE; L when zero).
    pub l_effective: f64,
    /// Number of time bins.
    pub bins: usize,
    /// Linear interpolation of the voltage between bin centres (else the bin's value).
    pub interpolate: bool,
    pub low_cutoff: (f64, f64),
    pub high_cutoff: (f64, f64),
    /// r_b = RADIUS_FACTOR · (σx + σy)/2.
    pub radius_factor: f64,
    /// LSC=0 turns the kick off (a plain drift).
    pub enabled: bool,
}

impl LscParams {
    /// Whether a kick acts: the element is on, the beam carries charge and its arrival times
    /// spread (otherwise there is no current profile to bin). Same test on CPU and GPU.
    pub fn acts_on(&self, tmin: f64, tmax: f64, charge: f64) -> bool {
        self.enabled && charge != 0.0 && tmax > tmin
    }

    /// The beam radius of the impedance, r_b = RADIUS_FACTOR · (σx + σy)/2.
    pub fn beam_radius(&self, sigma_x: f64, sigma_y: f64) -> f64 {
        self.radius_factor * 0.5 * (sigma_x + sigma_y)
    }

    pub fn kick_length(&self) -> f64 {
        if self.l_effective > 0.0 {
            self.l_effective
        } else {
            self.l
        }
    }
}

/// What an element of the expanded line does.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// A magnetic element rotated by `tilt` [rad] about the beam axis, tracked by its
    /// second-order map (`order` 1 drops T) or, with `integrate`, by its symplectic kick–drift
    /// integrator ([`Element::kick_drift`], N_KICKS and INTEGRATION_ORDER). ELEGANT's
    /// convention: CSBEND, KQUAD, KSEXT and KOCT integrate; SBEN, RBEN, QUAD, SEXT, MULT and
    /// the rest use maps. Twiss and the optics use the element's map either way.
    Map {
        element: Element,
        tilt: f64,
        order: u8,
        integrate: bool,
    },
    /// EDRIFT: the exact drift.
    ExactDrift {
        l: f64,
    },
    Marker,
    /// WATCH: write particle coordinates and beam moments every `interval` passes.
    Watch {
        filename: String,
        interval: u32,
    },
    Lsc(LscParams),
    /// CHARGE: total bunch charge [C] (magnitude used by collective elements).
    Charge {
        total: f64,
    },
    /// RFCA: an RF cavity (its kick needs the reference momentum, so it is no map element).
    Rf(crate::elements::rf::Cavity),
    /// MAXAMP: the aperture of this and every following element until the next MAXAMP.
    MaxAmp(Aperture),
    /// RCOL, ECOL: an exact drift of length `l` whose opening is checked at entrance and exit.
    Collimator {
        l: f64,
        aperture: Aperture,
    },
}

/// One element of the expanded line.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub name: String,
    pub kind: Kind,
    pub origin: Origin,
}

impl Placed {
    pub fn length(&self) -> f64 {
        match &self.kind {
            Kind::Map { element, .. } => element.length(),
            Kind::ExactDrift { l } => *l,
            Kind::Lsc(p) => p.l,
            Kind::Rf(c) => c.l,
            Kind::Collimator { l, .. } => *l,
            _ => 0.0,
        }
    }

    /// The ELEGANT type name of the element (canonical spelling).
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            Kind::Map { element, integrate, .. } => match element {
                Element::Drift { .. } => "DRIF",
                Element::Quad { .. } => "QUAD",
                Element::Sext { .. } => "SEXT",
                Element::Marker => "MARK",
                Element::Bend(_) if *integrate => "CSBEND",
                Element::Bend(_) => "SBEN",
                Element::Multipole(m) if *integrate => match m.order {
                    1 => "KQUAD",
                    2 => "KSEXT",
                    _ => "KOCT",
                },
                Element::Multipole(_) => "MULT",
                Element::Kicker(_) => "KICKER",
                Element::Solenoid(_) => "SOLE",
            },
            Kind::ExactDrift { .. } => "EDRIFT",
            Kind::Marker => "MARK",
            Kind::Watch { .. } => "WATCH",
            Kind::Lsc(_) => "LSCDRIFT",
            Kind::Charge { .. } => "CHARGE",
            Kind::Rf(_) => "RFCA",
            Kind::MaxAmp(_) => "MAXAMP",
            Kind::Collimator { aperture, .. } => match aperture.shape {
                Shape::Rectangular => "RCOL",
                Shape::Elliptical { .. } => "ECOL",
            },
        }
    }
}

/// The expanded beamline.
#[derive(Clone, Debug)]
pub struct Lattice {
    /// Name of the line used.
    pub line: String,
    pub elements: Vec<Placed>,
}

impl Lattice {
    /// Total length [m].
    pub fn length(&self) -> f64 {
        self.elements.iter().map(Placed::length).sum()
    }

    /// Read a `.lte` file through the bounded reader (a device such as `/dev/zero` or a file
    /// larger than the memory budget is refused, not read until the kernel kills the process)
    /// and expand `line` (else the `USE`d or last-defined line).
    pub fn read(path: &Path, line: Option<&str>) -> Result<Lattice, LatticeError> {
        let text = warpdrive_core::input::read_text(path).map_err(|e| {
            LatticeError::new(
                Origin {
                    file: path.display().to_string().into(),
                    line: e.line,
                },
                e.message,
            )
        })?;
        parse(&text, &path.display().to_string(), line)
    }
}

/// A parameter value as written.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Number(f64),
    Text(String),
}

#[derive(Clone, Debug)]
struct ElementDef {
    /// Canonical type name (DRIF, QUAD, ...).
    kind: &'static str,
    params: Vec<(String, Value)>,
    origin: Origin,
}

#[derive(Clone, Debug, PartialEq)]
enum Item {
    Name { name: String, reversed: bool, times: usize },
    Group { items: Vec<Item>, reversed: bool, times: usize },
}

#[derive(Clone, Debug)]
struct LineDef {
    items: Vec<Item>,
    origin: Origin,
}

/// Element types of the subset: accepted spellings → canonical name.
const TYPES: [(&str, &str); 34] = [
    ("MAXAMP", "MAXAMP"),
    ("RCOL", "RCOL"),
    ("RCOLLIMATOR", "RCOL"),
    ("ECOL", "ECOL"),
    ("ECOLLIMATOR", "ECOL"),
    ("DRIF", "DRIF"),
    ("DRIFT", "DRIF"),
    ("EDRIFT", "EDRIFT"),
    ("QUAD", "QUAD"),
    ("QUADRUPOLE", "QUAD"),
    ("SEXT", "SEXT"),
    ("SEXTUPOLE", "SEXT"),
    ("MARK", "MARK"),
    ("MARKER", "MARK"),
    ("WATCH", "WATCH"),
    ("LSCDRIFT", "LSCDRIFT"),
    ("LSCDRIF", "LSCDRIFT"),
    ("CHARGE", "CHARGE"),
    ("SBEN", "SBEN"),
    ("SBEND", "SBEN"),
    ("CSBEND", "CSBEND"),
    ("RBEN", "RBEN"),
    ("RBEND", "RBEN"),
    ("KQUAD", "KQUAD"),
    ("KSEXT", "KSEXT"),
    ("KOCT", "KOCT"),
    ("MULT", "MULT"),
    ("HKICK", "HKICK"),
    ("VKICK", "VKICK"),
    ("KICKER", "KICKER"),
    ("SOLE", "SOLE"),
    ("RFCA", "RFCA"),
    ("RFCAVITY", "RFCA"),
    ("SOLENOID", "SOLE"),
];

/// The parameters each type takes.
fn allowed(kind: &str) -> &'static [&'static str] {
    match kind {
        "DRIF" => &["L", "ORDER"],
        "EDRIFT" => &["L"],
        "QUAD" => &["L", "K1", "TILT", "ORDER"],
        "SEXT" => &["L", "K2", "TILT", "ORDER"],
        "MARK" => &["FITPOINT"],
        "WATCH" => &["FILENAME", "INTERVAL", "MODE"],
        "LSCDRIFT" => &[
            "L",
            "LEFFECTIVE",
            "BINS",
            "SMOOTHING",
            "INTERPOLATE",
            "LOW_FREQUENCY_CUTOFF0",
            "LOW_FREQUENCY_CUTOFF1",
            "HIGH_FREQUENCY_CUTOFF0",
            "HIGH_FREQUENCY_CUTOFF1",
            "RADIUS_FACTOR",
            "LSC",
        ],
        "CHARGE" => &["TOTAL", "PER_PARTICLE"],
        "SBEN" | "RBEN" => &["L", "ANGLE", "K1", "K2", "E1", "E2", "HGAP", "FINT", "TILT", "N_KICKS", "ORDER"],
        "CSBEND" => &[
            "L",
            "ANGLE",
            "K1",
            "K2",
            "E1",
            "E2",
            "HGAP",
            "FINT",
            "TILT",
            "N_KICKS",
            "INTEGRATION_ORDER",
            "ORDER",
        ],
        "KQUAD" => &["L", "K1", "TILT", "N_KICKS", "INTEGRATION_ORDER", "ORDER"],
        "KSEXT" => &["L", "K2", "TILT", "N_KICKS", "INTEGRATION_ORDER", "ORDER"],
        "KOCT" => &["L", "K3", "TILT", "N_KICKS", "INTEGRATION_ORDER"],
        "MULT" => &["L", "KNL", "ORDER", "TILT", "N_KICKS"],
        "HKICK" | "VKICK" => &["L", "KICK", "TILT"],
        "KICKER" => &["L", "HKICK", "VKICK", "TILT"],
        "SOLE" => &["L", "KS"],
        "RFCA" => &["L", "VOLT", "FREQ", "PHASE", "CHANGE_P0"],
        "MAXAMP" => &["X_MAX", "Y_MAX", "ELLIPTICAL", "EXPONENT", "YEXPONENT", "OPEN_SIDE"],
        "RCOL" => &["L", "X_MAX", "Y_MAX", "DX", "DY", "OPEN_SIDE", "INVERT"],
        "ECOL" => &["L", "X_MAX", "Y_MAX", "DX", "DY", "EXPONENT", "YEXPONENT", "OPEN_SIDE", "INVERT"],
        _ => &[],
    }
}

/// Statements of the file: (text with comments removed and continuations joined, first line).
fn statements(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        let mut line = String::new();
        let mut quoted = false;
        for ch in raw.chars() {
            match ch {
                '"' => {
                    quoted = !quoted;
                    line.push(ch);
                }
                '!' if !quoted => break,
                _ => line.push(ch),
            }
        }
        let trimmed = line.trim_end();
        if current.is_empty() {
            start = i + 1;
        }
        if let Some(body) = trimmed.strip_suffix('&') {
            current.push_str(body);
            current.push(' ');
            continue;
        }
        current.push_str(trimmed);
        if !current.trim().is_empty() {
            out.push((current.trim().to_string(), start));
        }
        current.clear();
    }
    if !current.trim().is_empty() {
        out.push((current.trim().to_string(), start));
    }
    out
}

/// Split at `sep` outside quotes and parentheses.
fn split_top(s: &str, sep: char) -> Vec<String> {
    let (mut parts, mut cur, mut depth, mut quoted) = (Vec::new(), String::new(), 0i32, false);
    for ch in s.chars() {
        match ch {
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            c if c == sep && !quoted && depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    parts.push(cur);
    parts.into_iter().map(|p| p.trim().to_string()).collect()
}

fn parse_value(v: &str) -> Value {
    let v = v.trim();
    if let Some(inner) = v.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return match parse_number(inner) {
            Some(x) => Value::Number(x),
            None => Value::Text(inner.to_string()),
        };
    }
    match parse_number(v) {
        Some(x) => Value::Number(x),
        None => Value::Text(v.to_string()),
    }
}

/// A decimal number, also with Fortran's `d` exponent.
fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    s.parse::<f64>().ok().or_else(|| s.replace(['d', 'D'], "e").parse().ok())
}

/// Parse the text of a `.lte` file (`file` names it in errors).
pub fn parse(text: &str, file: &str, use_line: Option<&str>) -> Result<Lattice, LatticeError> {
    let file: Arc<str> = file.into();
    let at = |line: usize| Origin {
        file: Arc::clone(&file),
        line,
    };
    let err = |line: usize, message: String| LatticeError::new(at(line), message);
    let mut elements: HashMap<String, ElementDef> = HashMap::new();
    let mut lines: HashMap<String, LineDef> = HashMap::new();
    let mut last_line: Option<String> = None;
    let mut used: Option<(String, usize)> = None;
    for (stmt, ln) in statements(text) {
        let upper_start = stmt.to_ascii_uppercase();
        if upper_start == "RETURN" {
            break;
        }
        if upper_start.starts_with("USE") && !stmt.contains(':') {
            let parts = split_top(&stmt, ',');
            let name = parts.get(1).map(|s| s.trim_matches('"').to_ascii_uppercase());
            match name {
                Some(n) if !n.is_empty() => used = Some((n, ln)),
                _ => return Err(err(ln, format!("USE needs a line name: '{stmt}'"))),
            }
            continue;
        }
        if stmt.starts_with('%') || stmt.starts_with('#') {
            return Err(err(
                ln,
                format!("'{stmt}': RPN definitions and include directives are not supported"),
            ));
        }
        let Some(colon) = find_colon(&stmt) else {
            return Err(err(ln, format!("expected 'NAME: TYPE, ...', found '{stmt}'")));
        };
        let name = stmt[..colon].trim().trim_matches('"').to_ascii_uppercase();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(err(ln, format!("bad element name '{}'", stmt[..colon].trim())));
        }
        if elements.contains_key(&name) || lines.contains_key(&name) {
            return Err(err(ln, format!("{name} is defined twice")));
        }
        let body = stmt[colon + 1..].trim();
        let fields = split_top(body, ',');
        let head = fields[0].to_ascii_uppercase();
        if head.starts_with("LINE") && head[4..].trim_start().starts_with('=') {
            let eq = fields[0].find('=').unwrap_or(0);
            let list = fields[0][eq + 1..].trim();
            if fields.len() > 1 {
                return Err(err(
                    ln,
                    format!("line {name}: unexpected text after the list: '{}'", fields[1..].join(", ")),
                ));
            }
            let items = parse_line_list(list).map_err(|m| err(ln, format!("line {name}: {m}")))?;
            lines.insert(name.clone(), LineDef { items, origin: at(ln) });
            last_line = Some(name);
            continue;
        }
        // Element: a type, or another element to copy and modify.
        let (kind, mut params) = if let Some(&(_, canon)) = TYPES.iter().find(|(t, _)| *t == head) {
            (canon, Vec::new())
        } else if let Some(base) = elements.get(&head) {
            (base.kind, base.params.clone())
        } else {
            return Err(err(
                ln,
                format!(
                    "element {name}: type '{}' is not supported (supported: DRIF, EDRIFT, QUAD, SEXT, MARK, WATCH, LSCDRIFT, CHARGE, SBEN, CSBEND, RBEN, KQUAD, KSEXT, KOCT, MULT, HKICK, VKICK, KICKER, SOLE, RFCA, MAXAMP, RCOL, ECOL, LINE)",
                    fields[0]
                ),
            ));
        };
        for f in &fields[1..] {
            if f.is_empty() {
                continue;
            }
            let Some(eq) = f.find('=') else {
                return Err(err(ln, format!("element {name}: expected PARAM=value, found '{f}'")));
            };
            let p = f[..eq].trim().to_ascii_uppercase();
            if !allowed(kind).contains(&p.as_str()) {
                return Err(err(
                    ln,
                    format!(
                        "element {name} ({kind}): parameter {p} is not supported (supported: {})",
                        allowed(kind).join(", ")
                    ),
                ));
            }
            let v = parse_value(&f[eq + 1..]);
            params.retain(|(q, _)| *q != p);
            params.push((p, v));
        }
        elements.insert(
            name,
            ElementDef {
                kind,
                params,
                origin: at(ln),
            },
        );
    }
    let chosen = match (use_line, &used) {
        (Some(n), _) => (n.to_ascii_uppercase(), 0),
        (None, Some((n, l))) => (n.clone(), *l),
        (None, None) => match last_line {
            Some(n) => (n, 0),
            None => return Err(err(0, "no beamline (NAME: LINE=(...)) is defined".into())),
        },
    };
    let Some(root) = lines.get(&chosen.0) else {
        return Err(err(chosen.1, format!("line {} is not defined", chosen.0)));
    };
    // Bound the expansion before it is materialised: `LINE=(1000000000*D)` must be an error
    // in microseconds, not gigabytes and minutes later. The advice names no option: the CLI
    // (`--passes`) and Python (`passes=`) read the same text.
    let mut memo = HashMap::new();
    let total = expanded_len(&root.items, &lines, &mut memo, &mut vec![chosen.0.clone()]);
    if total > MAX_EXPANDED_ELEMENTS {
        return Err(LatticeError::new(
            root.origin.clone(),
            format!(
                "line {} expands to {} elements, more than the limit of {MAX_EXPANDED_ELEMENTS}; use fewer repetitions in the line and more passes instead",
                chosen.0,
                if total == u128::MAX { "too many".to_string() } else { total.to_string() }
            ),
        ));
    }
    // Under the cap, an expanded element still costs a few hundred bytes (its placement, name
    // and compiled step): budget them before they are built, so a 38-byte `LINE=(9000000*D)`
    // is refused on a small machine instead of taking gigabytes.
    let longest = elements
        .iter()
        .flat_map(|(name, def)| {
            let texts = def.params.iter().map(|(_, v)| match v {
                Value::Text(t) => t.len(),
                Value::Number(_) => 0,
            });
            std::iter::once(name.len()).chain(texts)
        })
        .max()
        .unwrap_or(0);
    if let Err(mut e) = warpdrive_core::limits::check_alloc(
        "",
        total as u64,
        bytes_per_element(longest),
        "use fewer repetitions in the line and more passes ({passes}) instead",
    ) {
        e.what = format!("line {} expands to {total} elements", chosen.0);
        let message = e.render(warpdrive_core::engine::Style::Python);
        e.what = format!("{}: {}", root.origin, e.what);
        return Err(LatticeError {
            origin: root.origin.clone(),
            message,
            limit: Some(Box::new(e)),
        });
    }
    let mut names = Vec::new();
    let mut stack = vec![chosen.0.clone()];
    expand(&root.items, false, &lines, &elements, &mut stack, &mut names, &root.origin)?;
    let mut out = Vec::with_capacity(names.len());
    let mut built: HashMap<String, Placed> = HashMap::new();
    for n in names {
        if let Some(p) = built.get(&n) {
            out.push(p.clone());
            continue;
        }
        let def = &elements[&n];
        let kind = build(&n, def)?;
        let p = Placed {
            name: n.clone(),
            kind,
            origin: def.origin.clone(),
        };
        built.insert(n, p.clone());
        out.push(p);
    }
    Ok(Lattice {
        line: chosen.0,
        elements: out,
    })
}

/// Position of the label's colon (outside quotes; `:=` is not a label).
fn find_colon(s: &str) -> Option<usize> {
    let mut quoted = false;
    for (i, ch) in s.char_indices() {
        match ch {
            '"' => quoted = !quoted,
            ':' if !quoted && !s[i + 1..].starts_with('=') => return Some(i),
            _ => {}
        }
    }
    None
}

fn parse_line_list(s: &str) -> Result<Vec<Item>, String> {
    let inner = s
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a list in parentheses, found '{s}'"))?;
    let mut items = Vec::new();
    for part in split_top(inner, ',') {
        if part.is_empty() {
            return Err(format!("empty item in '{s}'"));
        }
        items.push(parse_item(&part)?);
    }
    Ok(items)
}

fn parse_item(s: &str) -> Result<Item, String> {
    let mut rest = s.trim();
    let mut reversed = false;
    let mut times = 1usize;
    if let Some(star) = rest.find('*') {
        if !rest[..star].contains('(') {
            let n = rest[..star].trim();
            times = n.parse().map_err(|_| format!("bad repetition count '{n}' in '{s}'"))?;
            rest = rest[star + 1..].trim();
        }
    }
    if let Some(r) = rest.strip_prefix('-') {
        reversed = true;
        rest = r.trim();
    }
    if rest.starts_with('(') {
        return Ok(Item::Group {
            items: parse_line_list(rest)?,
            reversed,
            times,
        });
    }
    if rest.is_empty() || rest.contains(|c: char| "()*,=".contains(c) || c.is_whitespace()) {
        return Err(format!("bad line item '{s}'"));
    }
    Ok(Item::Name {
        name: rest.trim_matches('"').to_ascii_uppercase(),
        reversed,
        times,
    })
}

/// The longest quadrupole or sextupole accepted [m].
pub const MAX_MAGNET_LENGTH: f64 = 100.0;
/// The longest drift or other element accepted [m].
pub const MAX_ELEMENT_LENGTH: f64 = 1e6;

/// The most elements a beamline may expand to (one pass; more turns are `--passes`).
pub const MAX_EXPANDED_ELEMENTS: u128 = 10_000_000;

/// Host memory of one expanded element from parsing to tracking, without its texts: its
/// [`Placed`] entry and the expansion's name list, and in the compiled [`crate::program::Program`]
/// its step, position and name (maps are shared between copies of an element), with the slack of
/// vectors grown by doubling. An upper bound measured with a counting allocator in
/// `tests/lattice_memory.rs`, which fails if it is not.
pub const BYTES_PER_ELEMENT: u64 = 560;

/// [`BYTES_PER_ELEMENT`] plus five copies of the element's longest text (its name, or a WATCH
/// file name) of `longest` bytes, each a heap block rounded up to 16 bytes.
pub fn bytes_per_element(longest: usize) -> u64 {
    BYTES_PER_ELEMENT + 5 * (longest as u64).div_ceil(16) * 16
}

/// The number of elements `items` expand to, saturating, computed per line once (memo) without
/// materialising anything. Unknown names count as one element and cycles as none: `expand`
/// reports both with their place.
fn expanded_len(items: &[Item], lines: &HashMap<String, LineDef>, memo: &mut HashMap<String, u128>, stack: &mut Vec<String>) -> u128 {
    let mut total: u128 = 0;
    for item in items {
        let (one, times) = match item {
            Item::Group { items, times, .. } => (expanded_len(items, lines, memo, stack), *times),
            Item::Name { name, times, .. } => {
                let one = match lines.get(name) {
                    Some(_) if stack.contains(name) => 0,
                    Some(l) => match memo.get(name) {
                        Some(&n) => n,
                        None => {
                            stack.push(name.clone());
                            let n = expanded_len(&l.items, lines, memo, stack);
                            stack.pop();
                            memo.insert(name.clone(), n);
                            n
                        }
                    },
                    None => 1,
                };
                (one, *times)
            }
        };
        total = total.saturating_add(one.saturating_mul(times as u128));
    }
    total
}

/// Expand items into element names (reversal reverses the order; the elements of this subset
/// are symmetric, so a reversed element is the element).
fn expand(
    items: &[Item],
    reversed: bool,
    lines: &HashMap<String, LineDef>,
    elements: &HashMap<String, ElementDef>,
    stack: &mut Vec<String>,
    out: &mut Vec<String>,
    origin: &Origin,
) -> Result<(), LatticeError> {
    let order: Vec<&Item> = if reversed {
        items.iter().rev().collect()
    } else {
        items.iter().collect()
    };
    for item in order {
        match item {
            Item::Group { items, reversed: r, times } => {
                for _ in 0..*times {
                    expand(items, reversed ^ r, lines, elements, stack, out, origin)?;
                }
            }
            Item::Name { name, reversed: r, times } => {
                for _ in 0..*times {
                    if let Some(l) = lines.get(name) {
                        if stack.contains(name) {
                            return Err(LatticeError::new(
                                l.origin.clone(),
                                format!("line {name} contains itself ({} → {name})", stack.join(" → ")),
                            ));
                        }
                        stack.push(name.clone());
                        expand(&l.items, reversed ^ r, lines, elements, stack, out, &l.origin)?;
                        stack.pop();
                    } else if elements.contains_key(name) {
                        out.push(name.clone());
                    } else {
                        return Err(LatticeError::new(
                            origin.clone(),
                            format!("line {}: {name} is neither an element nor a line", stack.last().map_or("", |s| s)),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Turn a definition into what the tracker runs, checking every parameter.
fn build(name: &str, def: &ElementDef) -> Result<Kind, LatticeError> {
    let err = |m: String| LatticeError::new(def.origin.clone(), format!("element {name} ({}): {m}", def.kind));
    let get = |p: &str| def.params.iter().find(|(q, _)| q == p).map(|(_, v)| v);
    let num = |p: &str, default: f64| -> Result<f64, LatticeError> {
        match get(p) {
            None => Ok(default),
            Some(Value::Number(x)) if x.is_finite() => Ok(*x),
            Some(Value::Number(x)) => Err(err(format!("parameter {p} = {x} is not finite"))),
            Some(Value::Text(t)) => Err(err(format!(
                "parameter {p}: '{t}' is not a number (RPN expressions are not supported)"
            ))),
        }
    };
    let length = |required: bool| -> Result<f64, LatticeError> {
        let l = num("L", 0.0)?;
        if l < 0.0 {
            return Err(err(format!("parameter L = {l}: negative length")));
        }
        // Thick magnets are integrated in 400 steps per metre (exact.rs): bound their length so
        // a typo cannot turn into hours of integration.
        let max = if required { MAX_MAGNET_LENGTH } else { MAX_ELEMENT_LENGTH };
        if l > max {
            return Err(err(format!("parameter L = {l}: longer than the limit of {max} m for this element")));
        }
        if required && l == 0.0 {
            return Err(err("parameter L: zero or missing length is not allowed for this element".into()));
        }
        Ok(l)
    };
    let order = || -> Result<u8, LatticeError> {
        match num("ORDER", 0.0)? {
            o if o == 0.0 || o == 2.0 => Ok(2),
            1.0 => Ok(1),
            o => Err(err(format!("parameter ORDER = {o}: only 1 and 2 are supported (0 = default, 2)"))),
        }
    };
    let kicks = |default: f64| -> Result<u32, LatticeError> {
        let n = num("N_KICKS", default)?;
        if n < 1.0 || n.fract() != 0.0 || n > MAX_KICKS {
            return Err(err(format!("parameter N_KICKS = {n}: must be an integer in 1..={MAX_KICKS}")));
        }
        Ok(n as u32)
    };
    let integration_order = || -> Result<u8, LatticeError> {
        let o = num("INTEGRATION_ORDER", 4.0)?;
        crate::elements::INTEGRATION_ORDERS
            .into_iter()
            .find(|&k| f64::from(k) == o)
            .ok_or_else(|| err(format!("parameter INTEGRATION_ORDER = {o}: must be 2, 4 or 6")))
    };
    // ELEGANT's kick elements are tracked by their integrators, its matrix elements by maps.
    let integrate = matches!(def.kind, "CSBEND" | "KQUAD" | "KSEXT" | "KOCT");
    Ok(match def.kind {
        "DRIF" => Kind::Map {
            element: Element::Drift { l: length(false)? },
            tilt: 0.0,
            order: order()?,
            integrate: false,
        },
        "EDRIFT" => Kind::ExactDrift { l: length(false)? },
        "QUAD" => Kind::Map {
            element: Element::Quad {
                l: length(true)?,
                k1: num("K1", 0.0)?,
            },
            tilt: num("TILT", 0.0)?,
            order: order()?,
            integrate: false,
        },
        "SEXT" => Kind::Map {
            element: Element::Sext {
                l: length(true)?,
                k2: num("K2", 0.0)?,
            },
            tilt: num("TILT", 0.0)?,
            order: order()?,
            integrate: false,
        },
        "MARK" => Kind::Marker,
        "WATCH" => {
            let filename = match get("FILENAME") {
                Some(Value::Text(t)) => t.clone(),
                Some(Value::Number(x)) => x.to_string(),
                None => return Err(err("parameter FILENAME is required".into())),
            };
            let interval = num("INTERVAL", 1.0)?;
            if interval < 1.0 || interval.fract() != 0.0 {
                return Err(err(format!("parameter INTERVAL = {interval}: must be a positive integer")));
            }
            if let Some(mode) = get("MODE") {
                let m = match mode {
                    Value::Text(t) => t.to_ascii_lowercase(),
                    Value::Number(x) => x.to_string(),
                };
                if ![
                    "coordinates",
                    "coordinate",
                    "coord",
                    "parameters",
                    "parameter",
                    "param",
                    "centroid",
                    "centroids",
                ]
                .contains(&m.as_str())
                {
                    return Err(err(format!("parameter MODE = '{m}': expected coordinates, parameters or centroid")));
                }
            }
            Kind::Watch {
                filename,
                interval: interval as u32,
            }
        }
        "LSCDRIFT" => {
            let l = length(false)?;
            let l_effective = num("LEFFECTIVE", 0.0)?;
            if l == 0.0 && l_effective <= 0.0 {
                return Err(err("parameter L: zero length needs LEFFECTIVE > 0".into()));
            }
            let bins = num("BINS", 256.0)?;
            if bins < 2.0 || bins.fract() != 0.0 || bins > 1048576.0 {
                return Err(err(format!("parameter BINS = {bins}: must be an integer in 2..=1048576")));
            }
            if num("SMOOTHING", 0.0)? != 0.0 {
                return Err(err("parameter SMOOTHING: histogram smoothing is not supported".into()));
            }
            let pair = |a: &str, b: &str| -> Result<(f64, f64), LatticeError> { Ok((num(a, -1.0)?, num(b, -1.0)?)) };
            let radius_factor = num("RADIUS_FACTOR", 1.7)?;
            if radius_factor <= 0.0 {
                return Err(err(format!("parameter RADIUS_FACTOR = {radius_factor}: must be positive")));
            }
            Kind::Lsc(LscParams {
                l,
                l_effective,
                bins: bins as usize,
                interpolate: num("INTERPOLATE", 1.0)? != 0.0,
                low_cutoff: pair("LOW_FREQUENCY_CUTOFF0", "LOW_FREQUENCY_CUTOFF1")?,
                high_cutoff: pair("HIGH_FREQUENCY_CUTOFF0", "HIGH_FREQUENCY_CUTOFF1")?,
                radius_factor,
                enabled: num("LSC", 1.0)? != 0.0,
            })
        }
        "CHARGE" => {
            if num("PER_PARTICLE", 0.0)? != 0.0 {
                return Err(err("parameter PER_PARTICLE is not supported; give TOTAL".into()));
            }
            Kind::Charge {
                total: num("TOTAL", 0.0)?.abs(),
            }
        }
        "SBEN" | "CSBEND" | "RBEN" => {
            let l = num("L", 0.0)?;
            let angle = num("ANGLE", 0.0)?;
            if l == 0.0 && angle != 0.0 {
                return Err(err(format!(
                    "parameter ANGLE = {angle}: a bend of zero length cannot bend (give L > 0, or use a thin MULT)"
                )));
            }
            let l = length(true)?;
            if angle.abs() >= std::f64::consts::PI {
                return Err(err(format!("parameter ANGLE = {angle}: must be less than π in magnitude")));
            }
            let (k1, k2) = (num("K1", 0.0)?, num("K2", 0.0)?);
            let rect = if def.kind == "RBEN" { 0.5 * angle } else { 0.0 };
            let (e1, e2) = (num("E1", 0.0)? + rect, num("E2", 0.0)? + rect);
            for (p, e) in [("E1", e1), ("E2", e2)] {
                if e.abs() >= 0.5 * std::f64::consts::PI - 1e-6 {
                    return Err(err(format!("parameter {p}: edge angle {e} rad must be less than π/2 in magnitude")));
                }
            }
            let (hgap, fint) = (num("HGAP", 0.0)?, num("FINT", 0.0)?);
            if hgap < 0.0 {
                return Err(err(format!("parameter HGAP = {hgap}: must not be negative")));
            }
            let n_kicks = kicks(4.0)?;
            let integration_order = integration_order()?;
            let element = if angle == 0.0 {
                if k2 != 0.0 && k1 != 0.0 {
                    return Err(err("parameters K1 and K2 together need ANGLE ≠ 0 (use a QUAD and a SEXT)".into()));
                }
                if integrate {
                    // A straight CSBEND: the kick-integrated quadrupole or sextupole.
                    let (order, k) = if k2 != 0.0 { (2, k2) } else { (1, k1) };
                    Element::Multipole(crate::elements::multipole::Multipole {
                        l,
                        order,
                        knl: k * l,
                        n_kicks,
                        integration_order,
                    })
                } else if k2 != 0.0 {
                    Element::Sext { l, k2 }
                } else {
                    Element::Quad { l, k1 }
                }
            } else {
                Element::Bend(crate::elements::bend::Bend {
                    l,
                    angle,
                    k1,
                    k2,
                    e1,
                    e2,
                    hgap,
                    fint,
                    n_kicks,
                    integration_order,
                })
            };
            Kind::Map {
                element,
                tilt: num("TILT", 0.0)?,
                order: order()?,
                integrate,
            }
        }
        "KQUAD" | "KSEXT" => {
            let n_kicks = kicks(4.0)?;
            let l = length(true)?;
            let (n, k) = if def.kind == "KQUAD" {
                (1, num("K1", 0.0)?)
            } else {
                (2, num("K2", 0.0)?)
            };
            Kind::Map {
                element: Element::Multipole(crate::elements::multipole::Multipole {
                    l,
                    order: n,
                    knl: k * l,
                    n_kicks,
                    integration_order: integration_order()?,
                }),
                tilt: num("TILT", 0.0)?,
                order: order()?,
                integrate,
            }
        }
        "KOCT" | "MULT" => {
            let (l, n, knl) = if def.kind == "KOCT" {
                let l = length(true)?;
                (l, 3.0, num("K3", 0.0)? * l)
            } else {
                (length(false)?, num("ORDER", 1.0)?, num("KNL", 0.0)?)
            };
            if !(0.0..=20.0).contains(&n) || n.fract() != 0.0 {
                return Err(err(format!(
                    "parameter ORDER = {n}: the multipole order must be an integer in 0..=20"
                )));
            }
            let n_kicks = kicks(if def.kind == "KOCT" { 4.0 } else { 1.0 })?;
            Kind::Map {
                element: Element::Multipole(crate::elements::multipole::Multipole {
                    l,
                    order: n as u8,
                    knl,
                    n_kicks,
                    integration_order: if def.kind == "KOCT" { integration_order()? } else { 4 },
                }),
                tilt: num("TILT", 0.0)?,
                order: 2,
                integrate,
            }
        }
        "HKICK" | "VKICK" | "KICKER" => {
            let (hkick, vkick) = match def.kind {
                "HKICK" => (num("KICK", 0.0)?, 0.0),
                "VKICK" => (0.0, num("KICK", 0.0)?),
                _ => (num("HKICK", 0.0)?, num("VKICK", 0.0)?),
            };
            Kind::Map {
                element: Element::Kicker(crate::elements::multipole::Kicker {
                    l: length(false)?,
                    hkick,
                    vkick,
                }),
                tilt: num("TILT", 0.0)?,
                order: 2,
                integrate: false,
            }
        }
        "SOLE" => Kind::Map {
            element: Element::Solenoid(crate::elements::solenoid::Solenoid {
                l: length(true)?,
                ks: num("KS", 0.0)?,
            }),
            tilt: 0.0,
            order: 2,
            integrate: false,
        },
        "RFCA" => {
            let freq = match get("FREQ") {
                None => return Err(err("parameter FREQ is required (the RF frequency in Hz)".into())),
                Some(_) => num("FREQ", 0.0)?,
            };
            if freq <= 0.0 {
                return Err(err(format!("parameter FREQ = {freq}: must be positive")));
            }
            let change = num("CHANGE_P0", 0.0)?;
            if change != 0.0 && change != 1.0 {
                return Err(err(format!("parameter CHANGE_P0 = {change}: must be 0 or 1")));
            }
            Kind::Rf(crate::elements::rf::Cavity {
                l: length(false)?,
                volt: num("VOLT", 0.0)?,
                freq,
                phase: num("PHASE", 0.0)?,
                change_p0: change == 1.0,
            })
        }
        "MAXAMP" | "RCOL" | "ECOL" => {
            let half = |p: &str| -> Result<f64, LatticeError> {
                let v = num(p, 0.0)?;
                if v < 0.0 {
                    return Err(err(format!(
                        "parameter {p} = {v}: a half-aperture must not be negative (0: unlimited)"
                    )));
                }
                Ok(v)
            };
            let (x_max, y_max) = (half("X_MAX")?, half("Y_MAX")?);
            let exponent = |p: &str, default: f64| -> Result<u32, LatticeError> {
                let e = num(p, default)?;
                if e < 2.0 || e.fract() != 0.0 || e % 2.0 != 0.0 || e > f64::from(crate::aperture::MAX_EXPONENT) {
                    return Err(err(format!(
                        "parameter {p} = {e}: must be an even integer in 2..={}",
                        crate::aperture::MAX_EXPONENT
                    )));
                }
                Ok(e as u32)
            };
            let elliptical = match def.kind {
                "ECOL" => true,
                "RCOL" => false,
                _ => match num("ELLIPTICAL", 0.0)? {
                    0.0 => false,
                    1.0 => true,
                    e => return Err(err(format!("parameter ELLIPTICAL = {e}: must be 0 or 1"))),
                },
            };
            let shape = if elliptical {
                let ex = exponent("EXPONENT", 2.0)?;
                // YEXPONENT = 0 (the default) means EXPONENT.
                let ey = if num("YEXPONENT", 0.0)? == 0.0 {
                    ex
                } else {
                    exponent("YEXPONENT", 0.0)?
                };
                Shape::Elliptical { ex, ey }
            } else {
                for p in ["EXPONENT", "YEXPONENT"] {
                    if get(p).is_some() {
                        return Err(err(format!("parameter {p}: only with ELLIPTICAL=1")));
                    }
                }
                Shape::Rectangular
            };
            let open_side = match get("OPEN_SIDE") {
                None => None,
                Some(Value::Text(t)) if t.trim().is_empty() => None,
                Some(Value::Text(t)) => Some(
                    crate::aperture::Side::parse(t)
                        .ok_or_else(|| err(format!("parameter OPEN_SIDE = \"{t}\": one of +x, -x, +y, -y (x, y: +x, +y)")))?,
                ),
                Some(Value::Number(x)) => {
                    return Err(err(format!(
                        "parameter OPEN_SIDE = {x}: a side in quotes, one of \"+x\", \"-x\", \"+y\", \"-y\""
                    )))
                }
            };
            if let Some(side) = open_side {
                let limited = match side {
                    crate::aperture::Side::PlusX | crate::aperture::Side::MinusX => x_max > 0.0,
                    _ => y_max > 0.0,
                };
                if !limited {
                    let p = if matches!(side, crate::aperture::Side::PlusX | crate::aperture::Side::MinusX) {
                        "X_MAX"
                    } else {
                        "Y_MAX"
                    };
                    return Err(err(format!(
                        "parameter OPEN_SIDE: the {p} plane is unlimited (0), so it has no side to open"
                    )));
                }
            }
            let invert = match num("INVERT", 0.0)? {
                0.0 => false,
                1.0 => true,
                v => return Err(err(format!("parameter INVERT = {v}: must be 0 or 1"))),
            };
            if invert && x_max == 0.0 && y_max == 0.0 {
                return Err(err(
                    "parameter INVERT: X_MAX and Y_MAX are 0 (no opening), so nothing would pass".into()
                ));
            }
            let aperture = Aperture {
                x_max,
                y_max,
                dx: num("DX", 0.0)?,
                dy: num("DY", 0.0)?,
                shape,
                open_side,
                invert,
            };
            if def.kind == "MAXAMP" {
                Kind::MaxAmp(aperture)
            } else {
                Kind::Collimator {
                    l: length(false)?,
                    aperture,
                }
            }
        }
        other => return Err(err(format!("internal: unhandled type {other}"))),
    })
}

/// The most integration steps an element may ask for (N_KICKS).
pub const MAX_KICKS: f64 = 100_000.0;

/// The benchmark line of the seed (spec §6, issue #5): 10 FODO cells of 20 quadrupoles
/// (L = 0.2 m, K1 = ±1.5 m⁻²) and 20 drifts of 0.8 m; with `lsc` the drifts are LSCDRIFT
/// elements with 256 bins.
pub fn bench_lte(lsc: bool) -> String {
    let drift = if lsc { "D: LSCDRIFT, L=0.8, BINS=256" } else { "D: DRIF, L=0.8" };
    format!(
        "! warpdrive bench beam: 10 FODO cells, 20 quadrupoles and 20 drifts\n\
         QF: QUAD, L=0.2, K1=1.5\nQD: QUAD, L=0.2, K1=-1.5\n{drift}\n\
         CELL: LINE=(QF, D, QD, D)\nBENCH: LINE=(10*CELL)\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(l: &Lattice) -> Vec<&str> {
        l.elements.iter().map(|e| e.name.as_str()).collect()
    }

    #[test]
    fn huge_expansions_are_refused_before_they_are_built() {
        let t0 = std::time::Instant::now();
        for line in [
            "L: LINE=(1000000000*D)",
            "L1: LINE=(10000*D)\nL: LINE=(10000*L1)",
            "L: LINE=(4294967296*(100000*(100000*D)))",
        ] {
            let text = format!("D: DRIF, L=1\n{line}\n");
            let e = parse(&text, "big.lte", None).unwrap_err().to_string();
            assert!(e.contains("expands to") && e.contains("big.lte"), "{e}");
        }
        assert!(t0.elapsed().as_secs() < 2);
        // At the limit itself it still parses (shared element definitions).
        assert!(parse("D: DRIF, L=1\nL: LINE=(1000*D)\n", "ok.lte", None).is_ok());
    }

    #[test]
    fn lines_repeat_reverse_and_nest() {
        let text = "! a comment\nD: DRIF, L=1.0\nQF: QUAD, L=0.3, K1=1.2 ! focusing\nQD: QF, K1=-1.2\nM: MARK\n\
                    CELL: LINE=(QF, D, QD, D)\nRING: LINE=(M, 2*CELL, -(QF, M, D), 2*(QD,M)) \n";
        let l = parse(text, "t.lte", None).unwrap();
        assert_eq!(l.line, "RING");
        assert_eq!(
            names(&l),
            ["M", "QF", "D", "QD", "D", "QF", "D", "QD", "D", "D", "M", "QF", "QD", "M", "QD", "M"]
        );
        assert_eq!(
            l.elements[3].kind,
            Kind::Map {
                element: Element::Quad { l: 0.3, k1: -1.2 },
                tilt: 0.0,
                order: 2,
                integrate: false
            },
            "QD copies QF and overrides K1"
        );
        let c = parse(text, "t.lte", Some("cell")).unwrap();
        assert_eq!(names(&c), ["QF", "D", "QD", "D"]);
        assert!((c.length() - 2.6).abs() < 1e-12);
    }

    #[test]
    fn continuation_quotes_and_use() {
        let text = "W1: WATCH, FILENAME=\"%s-w1.sdds\", &\n  INTERVAL=2\nD: DRIFT, L=0.5\nA: LINE=(D,W1)\nB: LINE=(W1)\nUSE, A\n";
        let l = parse(text, "t.lte", None).unwrap();
        assert_eq!(l.line, "A");
        assert_eq!(
            l.elements[1].kind,
            Kind::Watch {
                filename: "%s-w1.sdds".into(),
                interval: 2
            }
        );
    }

    #[test]
    fn errors_name_file_line_and_parameter() {
        let cases = [
            ("D: DRIF, L=1\nB: BEND, L=1\nL: LINE=(D)\n", "t.lte:2:", "BEND"),
            ("D: DRIF, L=1\nQ: QUAD, K1=1\nL: LINE=(D,Q)\n", "t.lte:2:", "zero or missing length"),
            ("Q: QUAD, L=0.2, K1=abc\nL: LINE=(Q)\n", "t.lte:1:", "K1: 'abc' is not a number"),
            (
                "Q: QUAD, L=0.2, FSE=0.1\nL: LINE=(Q)\n",
                "t.lte:1:",
                "parameter FSE is not supported",
            ),
            ("D: DRIF, L=1\nL: LINE=(D, X)\n", "t.lte:2:", "X is neither an element nor a line"),
            ("D: DRIF, L=1\nL: LINE=(D, (D)\n", "t.lte:2:", "line L"),
            ("D: DRIF, L=1\nL: LINE=(D, M)\nM: LINE=(L)\n", "t.lte:", "contains itself"),
            ("D: DRIF, L=-1\nL: LINE=(D)\n", "t.lte:1:", "negative length"),
            ("S: LSCDRIFT, L=1, SMOOTHING=1\nL: LINE=(S)\n", "t.lte:1:", "SMOOTHING"),
            ("D: DRIF, L=1\n", "t.lte:0:", "no beamline"),
            ("D: DRIF, L=1\nD: DRIF, L=2\nL: LINE=(D)\n", "t.lte:2:", "defined twice"),
        ];
        for (text, at, what) in cases {
            let e = parse(text, "t.lte", None).unwrap_err().to_string();
            assert!(e.starts_with(at) && e.contains(what), "{text:?} → {e}");
        }
    }
}
