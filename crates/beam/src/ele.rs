//! ELEGANT run files (`.ele`, issue #30): the common subset of ELEGANT's namelist commands
//! (M. Borland, "User's Manual for elegant", the namelist command dictionary; implemented from
//! that text) run through the engine's library calls:
//!
//! * `run_setup`: lattice, use_beamline, p_central or p_central_mev, default_order (2),
//!   rootname, output (final particles, SDDS), final (final beam parameters, SDDS), losses (lost
//!   particles, SDDS); `%s` in a file name is the rootname (default: the run file's name
//!   without its extension);
//! * `run_control`: n_steps (each `track` repeated with a fresh beam; one SDDS page per step),
//!   n_passes;
//! * `twiss_output`: filename, matched (1: periodic; 0: from beta_x, alpha_x, eta_x, etap_x,
//!   beta_y, alpha_y);
//! * `bunched_beam`: n_particles_per_bunch, emit_x / emit_nx, emit_y / emit_ny, beta_x, alpha_x,
//!   beta_y, alpha_y, sigma_dp, sigma_s, distribution_type (gaussian), bunch (the initial
//!   particles, SDDS), and run_setup's random_number_seed as the seed;
//! * `sdds_beam`: input (a particle file: SDDS, Parquet or CSV);
//! * `matrix_output`: printout (text), printout_order, SDDS_output, SDDS_output_order,
//!   full_matrix_only ([`crate::matrix`]);
//! * `track`: tracks the beam, n_steps times; several per file (a later `run_setup` starts a new
//!   run); the Parquet files of the k-th track and step go to `trackK/`, `stepJ/`.
//!
//! Syntax: `&command key=value, key="text", … &end`, over several lines, `!` comments.
//! Anything else — another command, an unknown key, a command out of order (a `track` before
//! `run_setup`, `run_control` or a beam), a file named by two commands — is an error naming the
//! file, the line and the parameter. All files go into the run's output directory (names with a directory part are
//! refused), which appears whole or not at all.

use crate::engine::{BeamSource, GaussianOptions, Line, ReferenceOptions, Track, TrackOptions, TwissOptions};
use crate::watch::WatchMode;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use warpdrive_core::engine::{Control, Error, Result};
use warpdrive_core::error::InputError;
use warpdrive_core::output::Staged;

/// One namelist command as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    pub name: String,
    pub line: usize,
    /// (key in lower case, value text with quotes removed, quoted?, line).
    pub fields: Vec<Field>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub key: String,
    pub value: String,
    pub quoted: bool,
    pub line: usize,
}

/// Split a run file into commands. Errors name the file and line.
pub fn parse(text: &str, file: &Path) -> std::result::Result<Vec<Command>, InputError> {
    let err = |line: usize, m: String| InputError::new(file, line, m);
    // Characters with their line numbers, comments (`!` outside quotes, to the end of the line)
    // removed.
    let mut chars: Vec<(char, usize)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let mut in_quote = false;
        for c in l.chars() {
            if c == '"' {
                in_quote = !in_quote;
            }
            if c == '!' && !in_quote {
                break;
            }
            chars.push((c, i + 1));
        }
        if in_quote {
            return Err(err(i + 1, "unterminated quoted string (a string ends on its line)".into()));
        }
        chars.push(('\n', i + 1));
    }
    let mut out = Vec::new();
    let mut k = 0;
    let skip_ws = |k: &mut usize| {
        while *k < chars.len() && (chars[*k].0.is_whitespace() || chars[*k].0 == ',') {
            *k += 1;
        }
    };
    loop {
        skip_ws(&mut k);
        if k >= chars.len() {
            return Ok(out);
        }
        let (c, line) = chars[k];
        if c != '&' {
            let rest: String = chars[k..].iter().take_while(|(c, _)| *c != '\n').map(|(c, _)| *c).collect();
            return Err(err(line, format!("expected a command (&name … &end), found '{}'", rest.trim())));
        }
        k += 1;
        let mut name = String::new();
        while k < chars.len() && (chars[k].0.is_ascii_alphanumeric() || chars[k].0 == '_') {
            name.push(chars[k].0.to_ascii_lowercase());
            k += 1;
        }
        if name.is_empty() || name == "end" {
            return Err(err(line, "a command needs a name after '&'".into()));
        }
        let mut fields = Vec::new();
        loop {
            skip_ws(&mut k);
            if k >= chars.len() {
                return Err(err(line, format!("&{name} has no &end")));
            }
            let (c, fline) = chars[k];
            if c == '&' {
                let word: String = chars[k + 1..].iter().take(3).map(|(c, _)| c.to_ascii_lowercase()).collect();
                if word == "end" {
                    k += 4;
                    break;
                }
                return Err(err(fline, format!("&{name} has no &end before the next command")));
            }
            let mut key = String::new();
            while k < chars.len() && !matches!(chars[k].0, '=' | ',' | '&') && !chars[k].0.is_whitespace() {
                key.push(chars[k].0.to_ascii_lowercase());
                k += 1;
            }
            while k < chars.len() && chars[k].0.is_whitespace() {
                k += 1;
            }
            if k >= chars.len() || chars[k].0 != '=' {
                return Err(err(fline, format!("&{name}: '{key}' has no value (expected {key} = value)")).field(key));
            }
            k += 1;
            while k < chars.len() && chars[k].0.is_whitespace() {
                k += 1;
            }
            let mut value = String::new();
            let mut quoted = false;
            // An optional repeat count (ELEGANT's `3*"gaussian"` fills array elements).
            let start = k;
            while k < chars.len() && chars[k].0.is_ascii_digit() {
                k += 1;
            }
            if k < chars.len() && chars[k].0 == '*' && k > start && k + 1 < chars.len() && chars[k + 1].0 == '"' {
                k += 1;
            } else {
                k = start;
            }
            if k < chars.len() && chars[k].0 == '"' {
                quoted = true;
                k += 1;
                while k < chars.len() && chars[k].0 != '"' {
                    value.push(chars[k].0);
                    k += 1;
                }
                k += 1;
            } else {
                while k < chars.len() && !matches!(chars[k].0, ',' | '&') && !chars[k].0.is_whitespace() {
                    value.push(chars[k].0);
                    k += 1;
                }
            }
            if value.is_empty() && !quoted {
                return Err(err(fline, format!("&{name}: {key} has an empty value")).field(key));
            }
            fields.push(Field {
                key,
                value,
                quoted,
                line: fline,
            });
        }
        out.push(Command { name, line, fields });
    }
}

/// What a run of a `.ele` file produced.
#[derive(Debug)]
pub struct EleRun {
    /// The output directory.
    pub output: PathBuf,
    /// Files written into the output directory, in order.
    pub written: Vec<String>,
    /// The last twiss_output's optics.
    pub twiss: Option<crate::engine::Optics>,
    /// The last matrix_output's map of the whole line.
    pub matrix: Option<crate::matrix::MatrixRow>,
    /// Every tracking (each step of each `track`), in order.
    pub steps: Vec<StepSummary>,
    /// The last tracking's particles and statistics.
    pub tracked: Option<crate::engine::Tracked>,
    pub line: Option<Arc<Line>>,
}

/// One tracking of a run file: step `step` (1-based) of its `track` number `track` (1-based).
#[derive(Clone, Debug, PartialEq)]
pub struct StepSummary {
    pub track: usize,
    pub step: usize,
    /// The subdirectory of the output directory holding its Parquet files ("" for the first
    /// track of a one-step run; `stepK`, `trackT`, `trackT/stepK` otherwise).
    pub dir: String,
    pub particles: usize,
    pub lost: usize,
    pub device: String,
    /// RMS sizes of the survivors at the end [m].
    pub sigma_x: f64,
    pub sigma_y: f64,
    pub lost_by_pass: Vec<(u32, usize)>,
}

/// Options of a run file's run that the file itself cannot say.
#[derive(Clone, Debug, Default)]
pub struct EleOptions {
    /// Also write the tracking's final.sdds, lost.sdds and watch points as SDDS (as `beam
    /// track --sdds`) beside its Parquet files.
    pub sdds: bool,
    /// How the run was asked for (`run.json`); empty: `warpdrive beam run FILE`.
    pub command: String,
}

/// The typed values of one command's fields, each used once; leftovers are errors.
struct Fields<'a> {
    file: &'a Path,
    cmd: &'a Command,
    used: Vec<bool>,
}

impl<'a> Fields<'a> {
    fn new(file: &'a Path, cmd: &'a Command) -> Self {
        Self {
            file,
            cmd,
            used: vec![false; cmd.fields.len()],
        }
    }
    fn err(&self, line: usize, key: &str, m: String) -> Error {
        Error::Input(InputError::new(self.file, line, format!("&{}: {m}", self.cmd.name)).field(key.to_string()))
    }
    /// The field `key` (array keys `key[i]`: any index).
    fn raw(&mut self, key: &str) -> Option<&'a Field> {
        let mut found = None;
        for (i, f) in self.cmd.fields.iter().enumerate() {
            let base = f.key.split('[').next().unwrap_or("");
            if f.key == key || (base == key && f.key.ends_with(']')) {
                self.used[i] = true;
                found = Some(f);
            }
        }
        found
    }
    fn text(&mut self, key: &str) -> Option<(String, usize)> {
        self.raw(key).map(|f| (f.value.clone(), f.line))
    }
    fn number(&mut self, key: &str) -> Result<Option<f64>> {
        match self.raw(key) {
            None => Ok(None),
            Some(f) => match f.value.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && !f.quoted => Ok(Some(v)),
                _ => Err(self.err(f.line, key, format!("{key} = '{}' is not a finite number", f.value))),
            },
        }
    }
    fn all_values(&mut self, key: &str) -> Vec<&'a Field> {
        let mut out = Vec::new();
        for (i, f) in self.cmd.fields.iter().enumerate() {
            let base = f.key.split('[').next().unwrap_or("");
            if base == key {
                self.used[i] = true;
                out.push(f);
            }
        }
        out
    }
    /// Refuse every field not taken.
    fn done(&self, supported: &[&str]) -> Result<()> {
        if let Some((f, _)) = self.cmd.fields.iter().zip(&self.used).find(|(_, u)| !**u) {
            return Err(self.err(
                f.line,
                &f.key,
                format!("parameter {} is not supported (supported: {})", f.key, supported.join(", ")),
            ));
        }
        Ok(())
    }
}

const RUN_SETUP: &[&str] = &[
    "lattice",
    "use_beamline",
    "p_central",
    "p_central_mev",
    "default_order",
    "rootname",
    "output",
    "final",
    "losses",
    "random_number_seed",
];
const RUN_CONTROL: &[&str] = &["n_steps", "n_passes"];
const TWISS_OUTPUT: &[&str] = &["filename", "matched", "beta_x", "alpha_x", "eta_x", "etap_x", "beta_y", "alpha_y"];
const BUNCHED_BEAM: &[&str] = &[
    "n_particles_per_bunch",
    "emit_x",
    "emit_nx",
    "emit_y",
    "emit_ny",
    "beta_x",
    "alpha_x",
    "beta_y",
    "alpha_y",
    "sigma_dp",
    "sigma_s",
    "distribution_type",
    "bunch",
];
const SDDS_BEAM: &[&str] = &["input"];
const MATRIX_OUTPUT: &[&str] = &["printout", "printout_order", "sdds_output", "sdds_output_order", "full_matrix_only"];
/// The most steps of run_control (each tracks the whole beam).
pub const MAX_STEPS: f64 = 10_000.0;

/// A file name of the run: `%s` → rootname; no directory part (everything goes into the output
/// directory).
fn output_name(file: &Path, cmd: &str, key: &str, line: usize, value: &str, rootname: &str) -> Result<String> {
    let name = value.replace("%s", rootname);
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Error::Input(
            InputError::new(
                file,
                line,
                format!("&{cmd}: {key} = \"{value}\": a file name without a directory (files go into the output directory)"),
            )
            .field(key.to_string()),
        ));
    }
    Ok(name)
}

/// A run file read once (through the bounded reader) and split into commands.
#[derive(Clone, Debug)]
pub struct EleFile {
    pub path: PathBuf,
    pub commands: Vec<Command>,
}

impl EleFile {
    pub fn read(path: &Path) -> Result<Self> {
        let text = warpdrive_core::input::read_text(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            commands: parse(&text, path)?,
        })
    }

    /// The files the run reads (the lattice, an sdds_beam input): outputs must not replace or
    /// contain them, so they are named before the output directory is staged.
    pub fn inputs(&self) -> Vec<PathBuf> {
        let base = self.path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut out = vec![self.path.clone()];
        for c in &self.commands {
            for f in &c.fields {
                if (c.name == "run_setup" && f.key == "lattice") || (c.name == "sdds_beam" && f.key == "input") {
                    out.push(base.join(&f.value));
                }
            }
        }
        out
    }
}

/// The settings gathered from `run_setup` and `run_control`.
struct Setup {
    line: Arc<Line>,
    reference: ReferenceOptions,
    output: Option<String>,
    final_: Option<String>,
    losses: Option<String>,
    seed: u64,
    rootname: String,
    passes: Option<u64>,
    steps: usize,
    /// A track ran since this run_setup.
    tracked: bool,
}

/// A beam command: where the particles come from, its line, the file its bunch goes to.
struct BeamDef {
    source: BeamSource,
    line: usize,
    bunch_file: Option<String>,
    tracked: bool,
}

/// Read `path`, stage `output` (default [`default_output`]; `force`: replace an existing
/// one) and run it: the one library call of `warpdrive beam run` and Python's
/// `warpdrive.beam.run`.
pub fn run_file(path: &Path, output: Option<&Path>, force: bool, o: &EleOptions, ctl: &Control) -> Result<EleRun> {
    let ele = EleFile::read(path)?;
    let output = output.map_or_else(|| default_output(path), Path::to_path_buf);
    let out = crate::engine::prepare_output(&output, force, &ele.inputs())?;
    let mut r = run_with(&ele, o, ctl, out)?;
    r.output = output;
    Ok(r)
}

/// Run the `.ele` file (its lattice and input files are found relative to it),
/// writing every file it names into `out` (from [`crate::engine::prepare_output`]) and
/// committing it.
pub fn run(ele: &EleFile, ctl: &Control, out: Staged) -> Result<EleRun> {
    run_with(ele, &EleOptions::default(), ctl, out)
}

/// [`run`] with options.
pub fn run_with(ele: &EleFile, opts: &EleOptions, ctl: &Control, out: Staged) -> Result<EleRun> {
    let path = ele.path.as_path();
    let commands = &ele.commands;
    let dir = out.path().to_path_buf();
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let rootname_default = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let fail = |e: String| Error::Failed(format!("{}: {e}", warpdrive_core::output::shown(&dir).display()));
    let command = if opts.command.is_empty() {
        format!("warpdrive beam run {}", path.display())
    } else {
        opts.command.clone()
    };
    let mut setup: Option<Setup> = None;
    let mut beam: Option<BeamDef> = None;
    let mut tracks = 0usize;
    let mut result = EleRun {
        output: PathBuf::new(),
        written: Vec::new(),
        twiss: None,
        matrix: None,
        steps: Vec::new(),
        tracked: None,
        line: None,
    };
    // Files named by the run's commands, with the line that named them: two commands may not
    // write the same file.
    let mut claimed: Vec<(String, usize)> = Vec::new();
    let order_err = |c: &Command, m: &str| Error::Input(InputError::new(path, c.line, format!("&{}: {m}", c.name)));
    let claim = |claimed: &mut Vec<(String, usize)>, c: &Command, key: &str, name: &str| -> Result<()> {
        if let Some((_, l)) = claimed.iter().find(|(n, _)| n == name) {
            return Err(Error::Input(
                InputError::new(
                    path,
                    c.line,
                    format!(
                        "&{}: {key}: file \"{name}\" is written by the command at line {l} already (use another name or rootname)",
                        c.name
                    ),
                )
                .field(key.to_string()),
            ));
        }
        claimed.push((name.to_string(), c.line));
        Ok(())
    };
    for c in commands {
        let mut f = Fields::new(path, c);
        match c.name.as_str() {
            "run_setup" => {
                if setup.as_ref().is_some_and(|s| !s.tracked) {
                    return Err(order_err(c, "a second run_setup before a &track of the first is not supported"));
                }
                let (lattice, _) = f
                    .text("lattice")
                    .ok_or_else(|| f.err(c.line, "lattice", "parameter lattice is required".into()))?;
                let use_line = f.text("use_beamline").map(|(v, _)| v);
                let pc = f.number("p_central")?;
                let pmev = f.number("p_central_mev")?;
                if pc.is_some() && pmev.is_some() {
                    return Err(f.err(c.line, "p_central_mev", "give p_central or p_central_mev, not both".into()));
                }
                if pc.is_none() && pmev.is_none() {
                    return Err(f.err(
                        c.line,
                        "p_central",
                        "parameter p_central (β0γ0) or p_central_mev is required".into(),
                    ));
                }
                if let Some(o) = f.number("default_order")? {
                    if o != 2.0 {
                        return Err(f.err(
                            c.line,
                            "default_order",
                            format!("default_order = {o}: only 2 is supported (second-order maps)"),
                        ));
                    }
                }
                let rootname = f.text("rootname").map_or(rootname_default.clone(), |(v, _)| v);
                let mut name = |key: &str| -> Result<Option<String>> {
                    match f.text(key) {
                        None => Ok(None),
                        Some((v, l)) => Ok(Some(output_name(path, &c.name, key, l, &v, &rootname)?)),
                    }
                };
                let output = name("output")?;
                let final_ = name("final")?;
                let losses = name("losses")?;
                let seed = match f.number("random_number_seed")? {
                    None => 987_654_321,
                    Some(s) if s >= 0.0 && s.fract() == 0.0 && s < 9.007_199_254_740_992e15 => s as u64,
                    Some(s) => {
                        return Err(f.err(
                            c.line,
                            "random_number_seed",
                            format!("random_number_seed = {s}: a non-negative integer"),
                        ))
                    }
                };
                f.done(RUN_SETUP)?;
                for (key, n) in [("output", &output), ("final", &final_), ("losses", &losses)] {
                    if let Some(n) = n {
                        claim(&mut claimed, c, key, n)?;
                    }
                }
                let line = Line::read(&base.join(&lattice), use_line.as_deref())?;
                let reference = ReferenceOptions {
                    p_central: pc,
                    momentum: pmev,
                    ..Default::default()
                };
                reference.resolve().map_err(|e| ele_param(path, c, &e))?;
                let line = Arc::new(line);
                result.line = Some(Arc::clone(&line));
                // A new run: its beam and run_control come after it.
                beam = None;
                setup = Some(Setup {
                    line,
                    reference,
                    output,
                    final_,
                    losses,
                    seed,
                    rootname,
                    passes: None,
                    steps: 1,
                    tracked: false,
                });
            }
            "run_control" => {
                let s = setup.as_mut().ok_or_else(|| order_err(c, "comes before &run_setup"))?;
                let steps = f.number("n_steps")?.unwrap_or(1.0);
                if steps < 1.0 || steps.fract() != 0.0 || steps > MAX_STEPS {
                    return Err(f.err(
                        c.line,
                        "n_steps",
                        format!("n_steps = {steps}: a positive integer up to {MAX_STEPS}"),
                    ));
                }
                let passes = f.number("n_passes")?.unwrap_or(1.0);
                if passes < 1.0 || passes.fract() != 0.0 || passes > f64::from(u32::MAX) {
                    return Err(f.err(c.line, "n_passes", format!("n_passes = {passes}: a positive integer")));
                }
                f.done(RUN_CONTROL)?;
                s.passes = Some(passes as u64);
                s.steps = steps as usize;
            }
            "twiss_output" => {
                let s = setup.as_ref().ok_or_else(|| order_err(c, "comes before &run_setup"))?;
                let filename = match f.text("filename") {
                    Some((v, l)) => Some(output_name(path, &c.name, "filename", l, &v, &s.rootname)?),
                    None => None,
                };
                let matched = f.number("matched")?.unwrap_or(1.0);
                let initial = if matched == 1.0 {
                    for k in ["beta_x", "alpha_x", "eta_x", "etap_x", "beta_y", "alpha_y"] {
                        if let Some(v) = f.raw(k) {
                            return Err(f.err(v.line, k, format!("{k} is for matched = 0 (a transfer line)")));
                        }
                    }
                    None
                } else if matched == 0.0 {
                    let (bx, by) = (f.number("beta_x")?, f.number("beta_y")?);
                    let (Some(betx), Some(bety)) = (bx, by) else {
                        return Err(f.err(c.line, "beta_x", "matched = 0 needs beta_x and beta_y".into()));
                    };
                    Some(crate::twiss::Initial {
                        betx,
                        bety,
                        alfx: f.number("alpha_x")?.unwrap_or(0.0),
                        alfy: f.number("alpha_y")?.unwrap_or(0.0),
                        dx: f.number("eta_x")?.unwrap_or(0.0),
                        dpx: f.number("etap_x")?.unwrap_or(0.0),
                    })
                } else {
                    return Err(f.err(c.line, "matched", format!("matched = {matched}: 0 or 1")));
                };
                f.done(TWISS_OUTPUT)?;
                if let Some(name) = &filename {
                    claim(&mut claimed, c, "filename", name)?;
                }
                let o = TwissOptions {
                    initial,
                    plot: false,
                    sdds: false,
                    command: command.clone(),
                };
                let optics = s.line.twiss(&s.reference, &o, None)?;
                if let Some(name) = filename {
                    let sd = crate::sdds_out::twiss_file(&optics.rows, &optics.summary, &optics.reference);
                    crate::sdds::write(&dir.join(&name), &sd).map_err(fail)?;
                    result.written.push(name);
                }
                result.twiss = Some(optics);
            }
            "matrix_output" => {
                let s = setup.as_ref().ok_or_else(|| order_err(c, "comes before &run_setup"))?;
                let mut name = |key: &str| -> Result<Option<String>> {
                    match f.text(key) {
                        None => Ok(None),
                        Some((v, l)) => Ok(Some(output_name(path, &c.name, key, l, &v, &s.rootname)?)),
                    }
                };
                let printout = name("printout")?;
                let sdds_output = name("sdds_output")?;
                let mut order = |key: &str| -> Result<u8> {
                    match f.number(key)?.unwrap_or(1.0) {
                        1.0 => Ok(1),
                        2.0 => Ok(2),
                        v => Err(f.err(c.line, key, format!("{key} = {v}: 1 or 2"))),
                    }
                };
                let printout_order = order("printout_order")?;
                let sdds_order = order("sdds_output_order")?;
                let full_only = match f.number("full_matrix_only")?.unwrap_or(0.0) {
                    0.0 => false,
                    1.0 => true,
                    v => return Err(f.err(c.line, "full_matrix_only", format!("full_matrix_only = {v}: 0 or 1"))),
                };
                f.done(MATRIX_OUTPUT)?;
                if printout.is_none() && sdds_output.is_none() {
                    return Err(f.err(
                        c.line,
                        "printout",
                        "neither printout nor SDDS_output is given: nothing to write".into(),
                    ));
                }
                for (key, n) in [("printout", &printout), ("SDDS_output", &sdds_output)] {
                    if let Some(n) = n {
                        claim(&mut claimed, c, key, n)?;
                    }
                }
                let rows = crate::matrix::line_matrices(s.line.lattice());
                let Some(total) = rows.last().cloned() else {
                    return Err(order_err(c, "the line has no elements"));
                };
                let p_central = s.reference.resolve().map_err(|e| ele_param(path, c, &e))?.1.p_central;
                if let Some(name) = printout {
                    let text = crate::matrix::printout(&total, printout_order, s.line.line_name(), rows.len());
                    warpdrive_core::table::write_atomic(&dir.join(&name), text.as_bytes()).map_err(|e| fail(e.to_string()))?;
                    result.written.push(name);
                }
                if let Some(name) = sdds_output {
                    let kept = if full_only { &rows[rows.len() - 1..] } else { &rows[..] };
                    let sd = crate::matrix::sdds_file(kept, sdds_order, p_central);
                    crate::sdds::write(&dir.join(&name), &sd).map_err(fail)?;
                    result.written.push(name);
                }
                result.matrix = Some(total);
            }
            "bunched_beam" | "sdds_beam" => {
                let s = setup.as_ref().ok_or_else(|| order_err(c, "comes before &run_setup"))?;
                if beam.as_ref().is_some_and(|b| !b.tracked) {
                    return Err(order_err(
                        c,
                        "a second beam command (bunched_beam or sdds_beam) before a &track of the first is not supported",
                    ));
                }
                if c.name == "sdds_beam" {
                    let (input, _) = f
                        .text("input")
                        .ok_or_else(|| f.err(c.line, "input", "parameter input is required".into()))?;
                    f.done(SDDS_BEAM)?;
                    beam = Some(BeamDef {
                        source: BeamSource::File(base.join(input.replace("%s", &s.rootname))),
                        line: c.line,
                        bunch_file: None,
                        tracked: false,
                    });
                    continue;
                }
                let n = f.number("n_particles_per_bunch")?.unwrap_or(1.0);
                if n < 1.0 || n.fract() != 0.0 {
                    return Err(f.err(
                        c.line,
                        "n_particles_per_bunch",
                        format!("n_particles_per_bunch = {n}: a positive integer"),
                    ));
                }
                for d in f.all_values("distribution_type") {
                    if !d.value.eq_ignore_ascii_case("gaussian") {
                        return Err(f.err(
                            d.line,
                            "distribution_type",
                            format!("distribution_type = \"{}\": only gaussian is supported", d.value),
                        ));
                    }
                }
                let pair = |f: &mut Fields, g: &str, nn: &str| -> Result<(Option<f64>, Option<f64>)> {
                    let (a, b) = (f.number(g)?, f.number(nn)?);
                    if a.is_some() && b.is_some() {
                        return Err(f.err(c.line, nn, format!("give {g} or {nn}, not both")));
                    }
                    Ok((a, b))
                };
                let (emit_x, nemit_x) = pair(&mut f, "emit_x", "emit_nx")?;
                let (emit_y, nemit_y) = pair(&mut f, "emit_y", "emit_ny")?;
                let g = GaussianOptions {
                    particles: n as u64,
                    beta_x: f.number("beta_x")?.unwrap_or(1.0),
                    alpha_x: f.number("alpha_x")?.unwrap_or(0.0),
                    emit_x,
                    nemit_x,
                    beta_y: f.number("beta_y")?.unwrap_or(1.0),
                    alpha_y: f.number("alpha_y")?.unwrap_or(0.0),
                    emit_y,
                    nemit_y,
                    sigma_s: f.number("sigma_s")?.unwrap_or(0.0),
                    sigma_delta: f.number("sigma_dp")?.unwrap_or(0.0),
                    seed: s.seed,
                };
                let mut bunch_file = None;
                if let Some((v, l)) = f.text("bunch") {
                    bunch_file = Some(output_name(path, &c.name, "bunch", l, &v, &s.rootname)?);
                }
                f.done(BUNCHED_BEAM)?;
                if let Some(n) = &bunch_file {
                    claim(&mut claimed, c, "bunch", n)?;
                }
                beam = Some(BeamDef {
                    source: BeamSource::Gaussian(g),
                    line: c.line,
                    bunch_file,
                    tracked: false,
                });
            }
            "track" => {
                f.done(&[])?;
                let s = setup.as_mut().ok_or_else(|| order_err(c, "comes before &run_setup"))?;
                let passes = s.passes.ok_or_else(|| order_err(c, "comes before &run_control (n_passes)"))?;
                let b = beam
                    .as_mut()
                    .ok_or_else(|| order_err(c, "comes before a beam (&bunched_beam or &sdds_beam)"))?;
                for name in [&b.bunch_file, &s.output, &s.losses, &s.final_].into_iter().flatten() {
                    if result.written.contains(name) {
                        return Err(order_err(
                            c,
                            &format!("file \"{name}\" was written by an earlier &track of this run_setup; a second track needs a new &run_setup (other file names)"),
                        ));
                    }
                }
                tracks += 1;
                let beam_cmd = commands.iter().find(|q| q.line == b.line).unwrap_or(c);
                // The bunch charge: the last CHARGE element's (ELEGANT's only source of it in
                // these commands), else 0.
                let charge = s.line.program().steps.iter().fold(0.0, |c, st| match st {
                    crate::program::Step::Charge { total } => *total,
                    _ => c,
                });
                let mut pages: [Vec<crate::sdds::Page>; 4] = Default::default(); // bunch, output, losses, final
                for step in 1..=s.steps {
                    ctl.check()?;
                    // Fresh particles every step: the Gaussian beam's seed advances by one per
                    // step; a file beam is read again (the same particles).
                    let source = match &b.source {
                        BeamSource::Gaussian(g) => BeamSource::Gaussian(GaussianOptions {
                            seed: g.seed.wrapping_add(step as u64 - 1),
                            ..g.clone()
                        }),
                        other => other.clone(),
                    };
                    let sub = match (tracks, s.steps) {
                        (1, 1) => String::new(),
                        (1, _) => format!("step{step}"),
                        (t, 1) => format!("track{t}"),
                        (t, _) => format!("track{t}/step{step}"),
                    };
                    let step_dir = dir.join(&sub);
                    std::fs::create_dir_all(&step_dir).map_err(|e| fail(format!("creating {sub}: {e}")))?;
                    let o = TrackOptions {
                        passes,
                        watch: WatchMode::Files,
                        output: true,
                        plot: false,
                        sdds: opts.sdds,
                        command: command.clone(),
                        ..Default::default()
                    };
                    let t = Track::new(Arc::clone(&s.line), source, &s.reference, &o).map_err(|e| match e {
                        Error::Param(p) => ele_param(path, beam_cmd, &p),
                        other => other,
                    })?;
                    let with_step = |mut page: crate::sdds::Page| {
                        page.parameters.retain(|q| q.name != "Step");
                        page.parameters.insert(
                            0,
                            crate::sdds::Parameter {
                                name: "Step".into(),
                                units: String::new(),
                                value: crate::sdds::Value::Long(i32::try_from(step).unwrap_or(i32::MAX)),
                            },
                        );
                        page
                    };
                    if b.bunch_file.is_some() {
                        let bunch = t.bunch();
                        let rows: Vec<usize> = (0..bunch.len()).collect();
                        pages[0].push(with_step(crate::sdds_out::particles_page(
                            &bunch.particles,
                            &bunch.reference,
                            &rows,
                            0,
                            0,
                            charge,
                        )));
                    }
                    let tracked = t.run_in(ctl, &step_dir)?;
                    let program = s.line.program();
                    if s.output.is_some() {
                        let sd = crate::sdds_out::final_file(&tracked.particles, &tracked.reference, 0, t.passes(), charge);
                        pages[1].extend(sd.pages.into_iter().map(with_step));
                    }
                    if s.losses.is_some() {
                        let sd = crate::sdds_out::lost_file(&tracked.particles, &tracked.reference, program, 0);
                        pages[2].extend(sd.pages.into_iter().map(with_step));
                    }
                    if s.final_.is_some() {
                        let sd = crate::sdds_out::beam_parameters(&tracked.last, &tracked.reference, t.passes(), tracked.particles.len());
                        pages[3].extend(sd.pages.into_iter().map(with_step));
                    }
                    result.steps.push(StepSummary {
                        track: tracks,
                        step,
                        dir: sub,
                        particles: tracked.particles.len(),
                        lost: tracked.lost(),
                        device: tracked.device.clone(),
                        sigma_x: tracked.last.rms(0),
                        sigma_y: tracked.last.rms(2),
                        lost_by_pass: tracked.lost_by_pass.clone(),
                    });
                    result.tracked = Some(tracked);
                }
                let files = [
                    (&b.bunch_file, "warpdrive beam run: initial bunch", "bunched_beam"),
                    (&s.output, "warpdrive beam track: final particles", "final particle coordinates"),
                    (&s.losses, "warpdrive beam track: lost particles", "lost particle coordinates"),
                    (&s.final_, "warpdrive beam run: final beam parameters", "final beam parameters"),
                ];
                for ((name, description, contents), pages) in files.into_iter().zip(pages) {
                    let Some(name) = name else { continue };
                    let sd = crate::sdds::Sdds {
                        description: description.into(),
                        contents: contents.into(),
                        pages,
                    };
                    crate::sdds::write(&dir.join(name), &sd).map_err(fail)?;
                    result.written.push(name.clone());
                }
                b.tracked = true;
                s.tracked = true;
            }
            other => {
                return Err(Error::Input(InputError::new(
                    path,
                    c.line,
                    format!(
                        "&{other}: command not supported (supported: run_setup, run_control, twiss_output, matrix_output, bunched_beam, sdds_beam, track)"
                    ),
                )));
            }
        }
    }
    if setup.is_none() {
        return Err(Error::Input(InputError::new(path, 0, "no &run_setup: nothing to run")));
    }
    if let Some(b) = beam.filter(|b| !b.tracked) {
        return Err(Error::Input(InputError::new(
            path,
            b.line,
            "a beam is defined but no &track follows",
        )));
    }
    ctl.check()?;
    out.commit()?;
    Ok(result)
}

/// A request error of the engine, named as the `.ele` parameter it came from.
fn ele_param(path: &Path, c: &Command, e: &warpdrive_core::engine::ParamError) -> Error {
    let name = match e.param {
        "particles" => "n_particles_per_bunch",
        "sigma_delta" => "sigma_dp",
        "nemit_x" => "emit_nx",
        "nemit_y" => "emit_ny",
        "momentum" => "p_central_mev",
        "passes" => "n_passes",
        other => other,
    };
    let text = e.render(warpdrive_core::engine::Style::Python);
    let text = text.strip_prefix(e.param).unwrap_or(&text).trim_start_matches([':', ' ']);
    Error::Input(InputError::new(path, c.line, format!("&{}: {name}: {text}", c.name)).field(name.to_string()))
}

/// The directory a run file's outputs go to by default: `NAME-out` beside nothing (the
/// current directory).
pub fn default_output(path: &Path) -> PathBuf {
    PathBuf::from(format!(
        "{}-out",
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "ele".into())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namelists_parse_over_lines_with_comments_and_repeat_counts() {
        let text = "! a run\n&run_setup\n  lattice = \"ring.lte\", ! the lattice\n  p_central_mev = 3000,\n&end\n\
                    &bunched_beam distribution_type[0] = 3*\"gaussian\", emit_x=1e-9 &end\n&track &end\n";
        let c = parse(text, Path::new("r.ele")).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].name, "run_setup");
        assert_eq!(c[0].line, 2);
        assert_eq!(c[0].fields[0].key, "lattice");
        assert_eq!(c[0].fields[0].value, "ring.lte");
        assert_eq!(c[0].fields[1].line, 4);
        assert_eq!(c[1].fields[0].key, "distribution_type[0]");
        assert_eq!(c[1].fields[0].value, "gaussian");
        assert!(c[2].fields.is_empty());
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = |t: &str| parse(t, Path::new("r.ele")).unwrap_err().to_string();
        assert!(
            e("&run_setup lattice=\"a.lte\"\n").starts_with("r.ele:1: &run_setup has no &end"),
            "{}",
            e("&run_setup lattice=\"a.lte\"\n")
        );
        assert!(e("\n\nlattice=1\n").starts_with("r.ele:3: expected a command"));
        assert!(e("&run_setup lattice &end\n").contains("'lattice' has no value"));
        assert!(e("&run_setup lattice=\"a.lte\n&end").contains("r.ele:1: unterminated quoted string"));
        assert!(e("&run_setup lattice=\"a\" &track &end").contains("no &end before the next command"));
    }
}
