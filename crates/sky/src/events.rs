//! Event lists: right ascension, declination and an energy proxy per event.
//!
//! Every file is read once through the bounded reader, whose first bytes choose the format:
//! * Parquet (a file that starts with `PAR1`, whatever its name) — columns by name (numeric);
//! * text named `.csv` — comma-separated with a header line;
//! * other text — whitespace-separated with a header line, e.g. IceCube's public
//!   point-source releases (`MJD log10(E) ang_err RA Dec`, the IC86-2011 files in
//!   `shared/data/events`) and the TXS 0506+056 windows (`MJD Ra_deg Dec_deg Unc_deg log10(Ereco)`).
//!
//! Columns are found by name, case-insensitively, from the lists below or from the names the
//! user gives. Angles are in degrees. Every value is checked: a missing field, a non-number, a
//! NaN, or a declination outside ±90° is an error naming file, line and column.

use std::path::{Path, PathBuf};
use warpdrive_core::error::InputError;
use warpdrive_core::rng::RandomStream;
use warpdrive_core::table::{read_parquet_or_text, ParquetFile, ParquetOrText};

/// One event: where it came from on the sky and its energy proxy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// Right ascension [deg], in [0, 360).
    pub ra: f64,
    /// Declination [deg], in [−90, 90].
    pub dec: f64,
    /// Energy proxy (e.g. log10 of the reconstructed energy); only its order matters.
    pub energy: f64,
    /// Angular error [deg] (the 1σ of a circular 2-D Gaussian point-spread function, IceCube's
    /// `ang_err`/`AngErr`), read only when [`ColumnNames::ang_err`] asks for it (signal
    /// injection); `None` otherwise.
    pub ang_err: Option<f64>,
}

/// Which columns hold RA, Dec and energy (and, when asked for, the angular error). Each entry is
/// a list of accepted names.
#[derive(Clone, Debug)]
pub struct ColumnNames {
    pub ra: Vec<String>,
    pub dec: Vec<String>,
    pub energy: Vec<String>,
    /// The angular-error column: `None` (the autocorrelation) does not read one; `Some(names)`
    /// (signal injection) requires one of them.
    pub ang_err: Option<Vec<String>>,
}

/// Accepted names of the angular-error column [deg]: IceCube's IC86-2011 release (`ang_err`),
/// the 10-year release (`AngErr[deg]`) and the TXS 0506+056 windows (`Unc_deg`).
pub const ANG_ERR_NAMES: [&str; 5] = ["ang_err", "AngErr[deg]", "AngErr", "Unc_deg", "sigma_deg"];

impl Default for ColumnNames {
    fn default() -> Self {
        let v = |names: &[&str]| names.iter().map(|s| s.to_string()).collect();
        Self {
            ra: v(&["RA", "RA[deg]", "Ra_deg", "ra_deg", "ra"]),
            dec: v(&["Dec", "Dec[deg]", "Dec_deg", "dec_deg", "dec", "decl"]),
            energy: v(&["log10(E)", "log10(E/GeV)", "log10(Ereco)", "logE", "log10_energy", "energy"]),
            ang_err: None,
        }
    }
}

impl ColumnNames {
    /// Replace the accepted names of the columns the user named explicitly.
    #[must_use]
    pub fn with(mut self, ra: Option<&str>, dec: Option<&str>, energy: Option<&str>) -> Self {
        if let Some(n) = ra {
            self.ra = vec![n.to_string()];
        }
        if let Some(n) = dec {
            self.dec = vec![n.to_string()];
        }
        if let Some(n) = energy {
            self.energy = vec![n.to_string()];
        }
        self
    }

    /// Require an angular-error column: `name`, or one of [`ANG_ERR_NAMES`].
    #[must_use]
    pub fn with_ang_err(mut self, name: Option<&str>) -> Self {
        self.ang_err = Some(match name {
            Some(n) => vec![n.to_string()],
            None => ANG_ERR_NAMES.iter().map(|s| s.to_string()).collect(),
        });
        self
    }
}

/// Index of the first header entry matching one of `names` (case-insensitive).
fn find_column(path: &Path, header: &[String], names: &[String], what: &str) -> Result<usize, InputError> {
    names
        .iter()
        .find_map(|n| header.iter().position(|h| h.eq_ignore_ascii_case(n)))
        .ok_or_else(|| {
            InputError::new(
                path,
                1,
                format!(
                    "no {what} column: looked for {} among the columns {}",
                    names.join(", "),
                    header.join(", ")
                ),
            )
        })
}

/// Check one event's values; `line` names the row (text line, or row number for Parquet).
fn checked_event(path: &Path, line: usize, names: [&str; 3], ra: f64, dec: f64, energy: f64) -> Result<Event, InputError> {
    checked_event_err(path, line, (names, ""), [ra, dec, energy], None)
}

/// [`checked_event`] with an angular error [deg] (column `names.1`; `None`: none read), which
/// must lie in [0, 180].
fn checked_event_err(path: &Path, line: usize, names: ([&str; 3], &str), v: [f64; 3], ang_err: Option<f64>) -> Result<Event, InputError> {
    let (names, err_name) = names;
    let [ra, dec, energy] = v;
    let bad = |field: &str, msg: String| Err(InputError::new(path, line, msg).field(field));
    if !ra.is_finite() {
        return bad(names[0], format!("right ascension {ra} is not finite"));
    }
    if !dec.is_finite() || !(-90.0..=90.0).contains(&dec) {
        return bad(names[1], format!("declination {dec} is outside [-90, 90] degrees"));
    }
    if !energy.is_finite() {
        return bad(names[2], format!("energy {energy} is not finite"));
    }
    if let Some(s) = ang_err {
        if !(0.0..=180.0).contains(&s) {
            return bad(err_name, format!("angular error {s} is outside [0, 180] degrees"));
        }
    }
    Ok(Event {
        ra: ra.rem_euclid(360.0),
        dec,
        energy,
        ang_err,
    })
}

/// Events from arrays (RA, Dec [deg] and an energy proxy per event), with the checks of the file
/// readers; errors name `label`, the 1-based row and the array (`ra`, `dec`, `energy`).
pub fn from_arrays(label: &Path, ra: &[f64], dec: &[f64], energy: &[f64]) -> Result<Vec<Event>, InputError> {
    if dec.len() != ra.len() || energy.len() != ra.len() {
        return Err(InputError::file(
            label,
            format!("ra, dec and energy have {}, {} and {} entries", ra.len(), dec.len(), energy.len()),
        ));
    }
    (0..ra.len())
        .map(|i| checked_event(label, i + 1, ["ra", "dec", "energy"], ra[i], dec[i], energy[i]))
        .collect()
}

/// Give `events` (from [`from_arrays`]) the angular errors `ang_err` [deg], checked as a file's
/// column (finite, in [0, 180]); errors name `label`, the 1-based row and `ang_err`.
pub fn set_ang_err(label: &Path, events: &mut [Event], ang_err: &[f64]) -> Result<(), InputError> {
    if ang_err.len() != events.len() {
        return Err(InputError::file(
            label,
            format!("ang_err has {} entries for {} events", ang_err.len(), events.len()),
        ));
    }
    for (i, (e, &s)) in events.iter_mut().zip(ang_err).enumerate() {
        *e = checked_event_err(label, i + 1, (["ra", "dec", "energy"], "ang_err"), [e.ra, e.dec, e.energy], Some(s))?;
    }
    Ok(())
}

/// Read one event file (the format as the module documentation says).
pub fn read_events(path: &Path, names: &ColumnNames) -> Result<Vec<Event>, InputError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let events = match read_parquet_or_text(path)? {
        ParquetOrText::Parquet(file) => parquet_events(path, &file, names)?,
        ParquetOrText::Text(text) => text_events(path, &text, names, ext == "csv")?,
    };
    if events.is_empty() {
        return Err(InputError::file(path, "no events in the file"));
    }
    Ok(events)
}

fn text_events(path: &Path, text: &str, names: &ColumnNames, csv: bool) -> Result<Vec<Event>, InputError> {
    let split = |l: &str| -> Vec<String> {
        if csv {
            l.split(',').map(|t| t.trim().trim_matches('"').to_string()).collect()
        } else {
            l.split_whitespace().map(str::to_string).collect()
        }
    };
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let Some((hline, header)) = lines.next() else {
        return Err(InputError::file(path, "empty file (expected a header line naming the columns)"));
    };
    let header = split(header);
    let err_line = |e: InputError| InputError { line: hline + 1, ..e };
    let ci = [
        find_column(path, &header, &names.ra, "right-ascension").map_err(err_line)?,
        find_column(path, &header, &names.dec, "declination").map_err(err_line)?,
        find_column(path, &header, &names.energy, "energy").map_err(err_line)?,
    ];
    let ce = match &names.ang_err {
        Some(n) => Some(find_column(path, &header, n, "angular-error").map_err(err_line)?),
        None => None,
    };
    let cn = [header[ci[0]].as_str(), header[ci[1]].as_str(), header[ci[2]].as_str()];
    let en = ce.map_or("", |c| header[c].as_str());
    let mut out = Vec::new();
    for (i, l) in lines {
        let line = i + 1;
        let t = split(l);
        if t.len() != header.len() {
            return Err(InputError::new(
                path,
                line,
                format!("{} fields, the header has {}", t.len(), header.len()),
            ));
        }
        let number = |c: usize, name: &str| -> Result<f64, InputError> {
            let tok = t[c].as_str();
            tok.parse::<f64>()
                .map_err(|_| InputError::new(path, line, format!("'{tok}' is not a number")).field(name))
        };
        let mut v = [0.0; 3];
        for k in 0..3 {
            v[k] = number(ci[k], cn[k])?;
        }
        let err = match ce {
            Some(c) => Some(number(c, en)?),
            None => None,
        };
        out.push(checked_event_err(path, line, (cn, en), v, err)?);
    }
    Ok(out)
}

fn parquet_events(path: &Path, file: &ParquetFile, names: &ColumnNames) -> Result<Vec<Event>, InputError> {
    let header = file.names();
    let ci = [
        find_column(path, &header, &names.ra, "right-ascension")?,
        find_column(path, &header, &names.dec, "declination")?,
        find_column(path, &header, &names.energy, "energy")?,
    ];
    let ce = match &names.ang_err {
        Some(n) => Some(find_column(path, &header, n, "angular-error")?),
        None => None,
    };
    let mut want = ci.to_vec();
    want.extend(ce);
    let cols: Vec<Vec<f64>> = file.columns(&want)?.into_iter().map(|c| c.into_f64()).collect();
    let (ra, dec, e) = (&cols[0], &cols[1], &cols[2]);
    let cn = [header[ci[0]].as_str(), header[ci[1]].as_str(), header[ci[2]].as_str()];
    let en = ce.map_or("", |c| header[c].as_str());
    (0..ra.len())
        .map(|r| {
            let err = cols.get(3).map(|c| c[r]);
            checked_event_err(path, r + 1, (cn, en), [ra[r], dec[r], e[r]], err).map_err(|e| InputError {
                message: format!("row {}: {}", r + 1, e.message),
                line: 0,
                ..e
            })
        })
        .collect()
}

/// Read several files and concatenate them in the order given.
pub fn read_all(paths: &[PathBuf], names: &ColumnNames) -> Result<Vec<Event>, InputError> {
    let mut all = Vec::new();
    for p in paths {
        all.extend(read_events(p, names)?);
    }
    Ok(all)
}

/// The built-in sample used when no file is given: `n` events isotropic on the sky (uniform in
/// RA and sin δ) with a power-law energy proxy log10 E = 2 + Exp(1)/ln 10·1.7 (an E^-2.7-like
/// falling spectrum), drawn from the Philox stream of `seed`, and an angular error of
/// [`SYNTHETIC_ANG_ERR`] for every event (what signal injection displaces its events by).
#[must_use]
pub fn synthetic(n: usize, seed: u64) -> Vec<Event> {
    const TAG_SYNTHETIC: u32 = 0x5359_0001;
    (0..n)
        .map(|i| {
            let mut r = RandomStream::new(seed, TAG_SYNTHETIC, i as u64);
            let ra = 360.0 * (1.0 - r.uniform_f64());
            let dec = (2.0 * r.uniform_f64() - 1.0).asin().to_degrees();
            let energy = 2.0 + 1.7 * (-r.uniform_f64().ln()) / std::f64::consts::LN_10;
            Event {
                ra,
                dec,
                energy,
                ang_err: Some(SYNTHETIC_ANG_ERR),
            }
        })
        .collect()
}

/// The angular error [deg] of every event of the generated sky.
pub const SYNTHETIC_ANG_ERR: f64 = 1.0;

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("wd-sky-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn reads_icecube_text_and_csv() {
        let p = write(
            "a.txt",
            "MJD\tlog10(E)\tang_err\tRA\tDec\n 55694 3.0 1.0 275.1 39.1\n55695 2.9 0.5 -92.5 4.7\n",
        );
        let ev = read_events(&p, &ColumnNames::default()).unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!(
            ev[0],
            Event {
                ra: 275.1,
                dec: 39.1,
                energy: 3.0,
                ang_err: None
            }
        );
        assert!((ev[1].ra - 267.5).abs() < 1e-12, "RA wrapped into [0, 360)");
        let c = write("b.csv", "ra,dec,logE\n1,2,3\n");
        assert_eq!(
            read_events(&c, &ColumnNames::default()).unwrap()[0],
            Event {
                ra: 1.0,
                dec: 2.0,
                energy: 3.0,
                ang_err: None
            }
        );
    }

    #[test]
    fn bad_rows_name_line_and_column() {
        let names = ColumnNames::default();
        let cases = [
            ("MJD log10(E) RA Dec\n1 2 3 95\n", "line 2 Dec", ":2: field 'Dec': declination 95"),
            ("MJD log10(E) RA Dec\n1 2 nan 5\n", "NaN", ":2: field 'RA': right ascension NaN"),
            ("MJD log10(E) RA Dec\n1 2 x 5\n", "text", ":2: field 'RA': 'x' is not a number"),
            ("MJD log10(E) RA\n1 2 3\n", "no dec", ":1: no declination column"),
            ("MJD log10(E) RA Dec\n1 2 3\n", "short row", ":2: 3 fields, the header has 4"),
            ("MJD log10(E) RA Dec\n", "no rows", "no events in the file"),
        ];
        for (i, (text, what, expect)) in cases.iter().enumerate() {
            let p = write(&format!("bad{i}.txt"), text);
            let e = read_events(&p, &names).unwrap_err().to_string();
            assert!(e.contains(expect), "{what}: got '{e}'");
        }
    }

    #[test]
    fn synthetic_sample_is_isotropic() {
        let ev = synthetic(20_000, 7);
        let north = ev.iter().filter(|e| e.dec > 0.0).count() as f64 / 20_000.0;
        assert!((north - 0.5).abs() < 0.02, "{north}");
        assert!(ev.iter().all(|e| (0.0..360.0).contains(&e.ra) && e.energy >= 2.0));
    }
}
