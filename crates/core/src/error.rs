//! Input errors that say where the problem is: file, line and field.

use std::fmt;
use std::path::{Path, PathBuf};

/// An error in user-supplied input. `Display` reads like a compiler message:
/// `path:line: field 'name': message`.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    pub path: PathBuf,
    /// 1-based line number; 0 when the error concerns the whole file.
    pub line: usize,
    /// The field (column name or option) at fault, if any.
    pub field: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(path: impl AsRef<Path>, line: usize, message: impl Into<String>) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            line,
            field: None,
            message: message.into(),
        }
    }

    #[must_use]
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// An error about a whole file (unreadable, missing, empty).
    pub fn file(path: impl AsRef<Path>, message: impl Into<String>) -> Self {
        Self::new(path, 0, message)
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field '{field}'")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

/// Parse one whitespace-separated token as a finite number, naming the field on failure.
pub fn parse_f64(path: &Path, line: usize, field: &str, token: Option<&str>) -> Result<f64, InputError> {
    let token = token.ok_or_else(|| InputError::new(path, line, "missing value").field(field))?;
    let v: f64 = token
        .parse()
        .map_err(|_| InputError::new(path, line, format!("'{token}' is not a number")).field(field))?;
    if !v.is_finite() {
        return Err(InputError::new(path, line, format!("'{token}' is not finite")).field(field));
    }
    Ok(v)
}

/// Parse one whitespace-separated token as an integer, naming the field on failure.
pub fn parse_i64(path: &Path, line: usize, field: &str, token: Option<&str>) -> Result<i64, InputError> {
    let token = token.ok_or_else(|| InputError::new(path, line, "missing value").field(field))?;
    token
        .parse()
        .map_err(|_| InputError::new(path, line, format!("'{token}' is not an integer")).field(field))
}

/// Read a whole text file through the bounded reader ([`crate::input::read_text`]: file type
/// and size checked, UTF-8, a byte-order mark removed), errors naming the file.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    crate::input::read_text(path)
}

/// The non-empty lines of a text file with `#` comments removed, as (1-based line number, text).
pub fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let l = l.split('#').next().unwrap_or("").trim();
        (!l.is_empty()).then_some((i + 1, l))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_file_line_and_field() {
        let e = InputError::new("ice/icemodel.dat", 12, "not increasing").field("depth");
        assert_eq!(e.to_string(), "ice/icemodel.dat:12: field 'depth': not increasing");
    }

    #[test]
    fn parse_rejects_nan_and_text() {
        let p = Path::new("f");
        assert!(parse_f64(p, 1, "x", Some("nan")).is_err());
        assert!(parse_f64(p, 1, "x", Some("abc")).unwrap_err().to_string().contains("'x'"));
        assert!(parse_f64(p, 1, "x", None).is_err());
        assert_eq!(parse_f64(p, 1, "x", Some("1e3")).unwrap(), 1000.0);
    }

    #[test]
    fn data_lines_skip_comments() {
        let v: Vec<_> = data_lines("# head\n5 # over\n\n0.9\n").collect();
        assert_eq!(v, vec![(2, "5"), (4, "0.9")]);
    }
}
