//! An output held as bytes: what a result's `save` writes, captured once and written again later
//! with the same output discipline (issue #28, "results picklable").
//!
//! Some results (an EM shower run, an unfolding) cannot be rebuilt from plain data without
//! redoing slow work, so a front end that must move them between processes (Python's pickle)
//! captures every file their `save` writes — plots included — into a [`Snapshot`]. Writing the
//! snapshot goes through [`Staged`] like the original: refused when the output exists without
//! `force`, never over an input, whole or not at all. So it writes byte for byte what the
//! original result would have written.

use crate::engine::Error;
use crate::output::{OutputError, Staged};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The files of one output: a directory's files by name, or one file (one entry, name empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub dir: bool,
    pub files: Vec<(String, Vec<u8>)>,
}

/// A scratch directory of this process, removed when dropped (also on error).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Self, OutputError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("warpdrive-snapshot-{}-{n}", std::process::id()));
        std::fs::create_dir(&p).map_err(|source| OutputError::Io { path: p.clone(), source })?;
        Ok(Self(p))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The files of a flat directory, sorted by name.
fn read_files(dir: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        files.push((entry.file_name().to_string_lossy().into_owned(), std::fs::read(entry.path())?));
    }
    files.sort();
    Ok(files)
}

impl Snapshot {
    /// Run `save` into a scratch location (removed afterwards) and keep what it wrote: a
    /// directory output with `dir`, else one file. Returns the snapshot and `save`'s notes.
    pub fn capture(dir: bool, save: impl FnOnce(Staged) -> Result<Vec<String>, Error>) -> Result<(Self, Vec<String>), Error> {
        let scratch = Scratch::new()?;
        let dest = scratch.0.join("output");
        let staged = if dir {
            Staged::dir(&dest, false, &[])?
        } else {
            Staged::file(&dest, false, &[])?
        };
        let notes = save(staged)?;
        let files = if dir {
            read_files(&dest)
        } else {
            std::fs::read(&dest).map(|b| vec![(String::new(), b)])
        }
        .map_err(|source| OutputError::Io {
            path: dest.clone(),
            source,
        })?;
        Ok((Self { dir, files }, notes))
    }

    /// Write the captured files at `path` with the output rules of the original `save`
    /// (`force`, the run's `inputs`), leaving out the files `keep` refuses (a plot not asked for).
    pub fn write(&self, path: &Path, force: bool, inputs: &[&Path], keep: impl Fn(&str) -> bool) -> Result<(), Error> {
        let out = if self.dir {
            Staged::dir(path, force, inputs)?
        } else {
            Staged::file(path, force, inputs)?
        };
        for (name, bytes) in self.files.iter().filter(|(n, _)| keep(n)) {
            let at = if self.dir {
                out.path().join(name)
            } else {
                out.path().to_path_buf()
            };
            std::fs::write(&at, bytes).map_err(|source| OutputError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        }
        out.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save_two(out: Staged) -> Result<Vec<String>, Error> {
        std::fs::write(out.path().join("a.txt"), b"alpha").unwrap();
        std::fs::write(out.path().join("b.png"), b"plot").unwrap();
        out.commit()?;
        Ok(vec!["note".into()])
    }

    #[test]
    fn a_captured_directory_is_written_again_byte_for_byte_under_the_output_rules() {
        let (snap, notes) = Snapshot::capture(true, save_two).unwrap();
        assert_eq!(notes, ["note"]);
        assert_eq!(
            snap.files,
            [("a.txt".into(), b"alpha".to_vec()), ("b.png".into(), b"plot".to_vec())]
        );
        let dir = crate::test_support::scratch("snapshot", "rewrite");
        let out = dir.join("again");
        snap.write(&out, false, &[], |n| !n.ends_with(".png")).unwrap();
        assert_eq!(std::fs::read(out.join("a.txt")).unwrap(), b"alpha");
        assert!(!out.join("b.png").exists(), "the plot was not asked for");
        // Existing output without force: refused, nothing replaced.
        let e = snap.write(&out, false, &[], |_| true).unwrap_err();
        assert!(e.to_string().contains("exists"), "{e}");
        assert!(!out.join("b.png").exists());
        snap.write(&out, true, &[], |_| true).unwrap();
        assert_eq!(std::fs::read(out.join("b.png")).unwrap(), b"plot");
        // Never over an input.
        let input = dir.join("input.txt");
        std::fs::write(&input, b"keep").unwrap();
        let one = Snapshot {
            dir: false,
            files: vec![(String::new(), b"x".to_vec())],
        };
        assert!(one.write(&input, true, &[input.as_path()], |_| true).is_err());
        assert_eq!(std::fs::read(&input).unwrap(), b"keep");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
