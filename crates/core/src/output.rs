//! The output discipline every command follows (DESIGN.md §6):
//!
//! 1. **No output replaces or lives inside an input**, and no input lives inside an output
//!    directory: paths are compared after canonicalisation, and existing files by identity
//!    (device and inode), so symbolic and hard links are caught too ([`check_paths`]).
//! 2. **An existing output is refused** unless the user passes `--force`.
//! 3. **Outputs appear whole or not at all.** Each output is written into a temporary sibling
//!    (`.NAME.tmp-PID`, a file or a directory) and renamed into place by [`Outputs::commit`] only
//!    when the whole run succeeded; a replaced directory is swapped as a whole, so no file of an
//!    earlier run survives beside the new ones.
//! 4. **Temporaries vanish on error and on SIGINT/SIGTERM.** Uncommitted temporaries are removed
//!    when [`Outputs`] is dropped (errors, panics that unwind); a signal thread installed by
//!    [`install_signal_cleanup`] removes every registered temporary and exits with 128 + signal
//!    (130 for SIGINT, 143 for SIGTERM). Long loops may poll [`interrupted`] to stop early.
//!
//! ```no_run
//! use warpdrive_core::output::Outputs;
//! # fn main() -> Result<(), warpdrive_core::output::OutputError> {
//! let mut outs = Outputs::new(false);
//! outs.check(&["events.txt".as_ref()], &["result".as_ref()])?;
//! let dir = outs.dir("result".as_ref())?; // write everything under `dir` …
//! std::fs::write(dir.join("summary.json"), "{}").unwrap();
//! outs.commit()?; // … and only now does `result/` appear (or replace the old one with --force)
//! # Ok(()) }
//! ```

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, Once};

/// Why an output cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{output}: the output is the input {input}; choose another output path (nothing was written)")]
    SameAsInput { output: PathBuf, input: PathBuf },
    #[error("{output}: the output would lie inside the input {input}; choose a path outside it (nothing was written)")]
    InsideInput { output: PathBuf, input: PathBuf },
    #[error("{output}: the input {input} lies inside this output directory, which would replace it; choose another output path (nothing was written)")]
    ContainsInput { output: PathBuf, input: PathBuf },
    #[error("{output}: exists; pass --force to replace it (nothing was written)")]
    Exists { output: PathBuf },
    #[error("{output}: is an existing {found}, but this output is a {expected}; remove it or choose another path")]
    WrongKind {
        output: PathBuf,
        found: &'static str,
        expected: &'static str,
    },
    #[error("{output}: {parent} is not a directory")]
    NoParent { output: PathBuf, parent: PathBuf },
    #[error("{output}: the same output is named twice")]
    Duplicate { output: PathBuf },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Lexically normalised absolute form of `p` (no file system access): `.` and `..` resolved.
fn absolute(p: &Path) -> PathBuf {
    let base = if p.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir().unwrap_or_default()
    };
    let mut out = PathBuf::new();
    for c in base.join(p).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The canonical form of a path that may not exist yet: the longest existing ancestor is
/// canonicalised (symbolic links resolved) and the rest appended.
pub fn canonical(p: &Path) -> PathBuf {
    let abs = absolute(p);
    let mut existing = abs.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.file_name().map(|s| s.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return abs,
        }
    }
}

/// (device, inode) of an existing path, following links.
#[cfg(unix)]
fn identity(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_p: &Path) -> Option<(u64, u64)> {
    None
}

/// Refuse outputs that are, or lie inside, an input, and directory outputs that contain an
/// input (replacing the directory would delete it). `-` (standard output) is never checked.
pub fn check_paths(inputs: &[&Path], outputs: &[&Path]) -> Result<(), OutputError> {
    // (as given, canonical, identity)
    type Input = (PathBuf, PathBuf, Option<(u64, u64)>);
    let ins: Vec<Input> = inputs
        .iter()
        .filter(|p| p.as_os_str() != "-")
        .map(|p| (p.to_path_buf(), canonical(p), identity(p)))
        .collect();
    let mut seen: Vec<PathBuf> = Vec::new();
    for out in outputs.iter().filter(|p| p.as_os_str() != "-") {
        let oc = canonical(out);
        if seen.contains(&oc) {
            return Err(OutputError::Duplicate { output: out.to_path_buf() });
        }
        let oid = identity(out);
        for (input, ic, iid) in &ins {
            let same = oc == *ic || (oid.is_some() && oid == *iid);
            if same {
                return Err(OutputError::SameAsInput {
                    output: out.to_path_buf(),
                    input: input.clone(),
                });
            }
            if oc.starts_with(ic) {
                return Err(OutputError::InsideInput {
                    output: out.to_path_buf(),
                    input: input.clone(),
                });
            }
            if ic.starts_with(&oc) {
                return Err(OutputError::ContainsInput {
                    output: out.to_path_buf(),
                    input: input.clone(),
                });
            }
        }
        seen.push(oc);
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "directory",
        }
    }
}

struct Entry {
    dest: PathBuf,
    tmp: PathBuf,
    kind: Kind,
}

/// Temporaries of every live [`Outputs`] in this process, for the signal thread.
static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// The signal that arrived (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

fn lock_temporaries() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

fn remove_any(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(p);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(p);
        }
        Err(_) => {}
    }
}

/// True once SIGINT or SIGTERM arrived (long loops may stop early; the signal thread removes
/// the temporaries and exits shortly after in any case).
pub fn interrupted() -> bool {
    SIGNAL.load(Ordering::Relaxed) != 0
}

/// The signal number that interrupted the run, if any: a command that stops early because of it
/// exits with 128 + this number, as the signal thread does.
pub fn signal() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// How long the signal thread lets the run stop by itself (its loops poll the cancellation
/// token, so it returns `Cancelled` and drops its temporaries) before it removes them and exits.
const SIGNAL_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Outputs committed by this process (for the message of a signal that came too late to stop
/// the run).
static COMMITTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Install, once per process, a thread that on SIGINT/SIGTERM sets [`interrupted`] and raises
/// `cancel` (the run's token: its loops stop, it returns `Cancelled`, its temporaries are
/// dropped and the front end exits with 128 + signal). If the run has not ended after a grace
/// period, the thread removes every registered temporary itself and exits with 128 + signal.
/// The handler itself only flags (signal-hook's self-pipe); the work happens on the thread.
/// Temporaries are removed under the registry lock, so a commit in progress finishes first, and
/// the message then names what it committed.
///
/// Only the command line calls this: a library must not take SIGINT from its host (Python's
/// Ctrl-C reaches a run through its own watcher and the same token).
pub fn install_signal_cleanup(cancel: crate::engine::Cancel) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(unix)]
        {
            use signal_hook::consts::{SIGINT, SIGTERM};
            let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
                return;
            };
            let _ = std::thread::Builder::new().name("warpdrive-signals".into()).spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    SIGNAL.store(sig, Ordering::SeqCst);
                    cancel.cancel();
                    std::thread::sleep(SIGNAL_GRACE);
                    let temps = lock_temporaries();
                    for t in temps.iter() {
                        remove_any(t);
                    }
                    let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
                    eprintln!("interrupted ({name}): {}", interrupted_message());
                    std::process::exit(128 + sig);
                }
            });
        }
        #[cfg(not(unix))]
        let _ = cancel;
    });
}

/// What an interrupted process left: the outputs it committed before the signal stopped it (a
/// signal during the final commit lets the commit finish), else nothing.
pub fn interrupted_message() -> String {
    let done = COMMITTED.lock().unwrap_or_else(|e| e.into_inner());
    if done.is_empty() {
        "temporary outputs removed, nothing written".to_string()
    } else {
        let names: Vec<String> = done.iter().map(|p| p.display().to_string()).collect();
        format!(
            "{} written completely before the signal; temporary outputs removed",
            names.join(", ")
        )
    }
}

/// The outputs of one run, staged in temporaries and committed together.
pub struct Outputs {
    force: bool,
    staged: Vec<Entry>,
}

impl Outputs {
    /// `force`: replace existing outputs (the CLI's `--force`).
    pub fn new(force: bool) -> Self {
        Self { force, staged: Vec::new() }
    }

    /// Check before any work: [`check_paths`], existing outputs without `force`, missing parent
    /// directories.
    pub fn check(&self, inputs: &[&Path], outputs: &[&Path]) -> Result<(), OutputError> {
        check_paths(inputs, outputs)?;
        for out in outputs.iter().filter(|p| p.as_os_str() != "-") {
            if std::fs::symlink_metadata(out).is_ok() && !self.force {
                return Err(OutputError::Exists { output: out.to_path_buf() });
            }
            // A missing parent directory is created when the output is staged; one that exists
            // as a file is an error now, before any work.
            let mut ancestor = absolute(out);
            while ancestor.pop() {
                if let Ok(m) = std::fs::metadata(&ancestor) {
                    if !m.is_dir() {
                        return Err(OutputError::NoParent {
                            output: out.to_path_buf(),
                            parent: ancestor,
                        });
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    fn stage(&mut self, dest: &Path, kind: Kind) -> Result<PathBuf, OutputError> {
        if let Ok(m) = std::fs::metadata(dest) {
            if !self.force {
                return Err(OutputError::Exists {
                    output: dest.to_path_buf(),
                });
            }
            let found = if m.is_dir() { Kind::Dir } else { Kind::File };
            if found != kind {
                return Err(OutputError::WrongKind {
                    output: dest.to_path_buf(),
                    found: found.name(),
                    expected: kind.name(),
                });
            }
        }
        if self.staged.iter().any(|s| s.dest == dest) {
            return Err(OutputError::Duplicate {
                output: dest.to_path_buf(),
            });
        }
        let name = dest
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let tmp = dest.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        if let Some(parent) = tmp.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        remove_any(&tmp);
        lock_temporaries().push(tmp.clone());
        if kind == Kind::Dir {
            std::fs::create_dir(&tmp).map_err(io(&tmp))?;
        }
        self.staged.push(Entry {
            dest: dest.to_path_buf(),
            tmp: tmp.clone(),
            kind,
        });
        Ok(tmp)
    }

    /// A file output: returns the temporary path to write to (renamed to `dest` on commit).
    pub fn file(&mut self, dest: &Path) -> Result<PathBuf, OutputError> {
        self.stage(dest, Kind::File)
    }

    /// A directory output: creates and returns the temporary directory to fill.
    pub fn dir(&mut self, dest: &Path) -> Result<PathBuf, OutputError> {
        self.stage(dest, Kind::Dir)
    }

    /// Move every staged output into place. A replaced directory is first moved aside, the new
    /// one renamed in, then the old one deleted: the destination holds either the old or the
    /// new output as a whole.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let mut temps = lock_temporaries();
        for s in std::mem::take(&mut self.staged) {
            if !s.tmp.exists() {
                // Nothing was written to this output (e.g. an optional file the run did not need).
                temps.retain(|t| t != &s.tmp);
                continue;
            }
            if s.kind == Kind::Dir && s.dest.exists() {
                let name = s.dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let old = s.dest.with_file_name(format!(".{name}.old-{}", std::process::id()));
                remove_any(&old);
                temps.push(old.clone());
                std::fs::rename(&s.dest, &old).map_err(io(&s.dest))?;
                if let Err(e) = std::fs::rename(&s.tmp, &s.dest) {
                    let _ = std::fs::rename(&old, &s.dest);
                    return Err(io(&s.dest)(e));
                }
                remove_any(&old);
                temps.retain(|t| t != &old);
            } else {
                std::fs::rename(&s.tmp, &s.dest).map_err(io(&s.dest))?;
            }
            temps.retain(|t| t != &s.tmp);
            COMMITTED.lock().unwrap_or_else(|e| e.into_inner()).push(s.dest.clone());
        }
        Ok(())
    }
}

/// One output prepared before the work: checked against the inputs and `force`, its temporary
/// created now (so an unwritable location fails before any computing), filled by the run and
/// made visible by [`Staged::commit`]; dropped uncommitted, it leaves nothing.
pub struct Staged {
    outs: Outputs,
    tmp: PathBuf,
    dest: PathBuf,
}

impl Staged {
    fn new(dest: &Path, force: bool, inputs: &[&Path], kind: Kind) -> Result<Self, OutputError> {
        let mut outs = Outputs::new(force);
        outs.check(inputs, &[dest])?;
        let tmp = outs.stage(dest, kind)?;
        Ok(Self {
            outs,
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    /// A directory output (replaced as a whole with `force`).
    pub fn dir(dest: &Path, force: bool, inputs: &[&Path]) -> Result<Self, OutputError> {
        Self::new(dest, force, inputs, Kind::Dir)
    }

    /// A file output.
    pub fn file(dest: &Path, force: bool, inputs: &[&Path]) -> Result<Self, OutputError> {
        Self::new(dest, force, inputs, Kind::File)
    }

    /// Where to write now (the temporary).
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Where the output appears on commit.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Make the output visible, whole.
    pub fn commit(self) -> Result<(), OutputError> {
        self.outs.commit()
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        let mut temps = lock_temporaries();
        for s in &self.staged {
            remove_any(&s.tmp);
            temps.retain(|t| t != &s.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wd-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn refuses_output_equal_to_inside_or_containing_an_input() {
        let d = scratch("paths");
        let input = d.join("in.txt");
        std::fs::write(&input, "x").unwrap();
        assert!(matches!(check_paths(&[&input], &[&input]), Err(OutputError::SameAsInput { .. })));
        // a different spelling of the same path
        let dotted = d.join(".").join("in.txt");
        assert!(matches!(check_paths(&[&input], &[&dotted]), Err(OutputError::SameAsInput { .. })));
        assert!(matches!(
            check_paths(&[&d], &[&d.join("sub/out")]),
            Err(OutputError::InsideInput { .. })
        ));
        assert!(matches!(check_paths(&[&input], &[&d]), Err(OutputError::ContainsInput { .. })));
        assert!(check_paths(&[&input], &[&d.join("out.txt")]).is_ok());
        #[cfg(unix)]
        {
            let link = d.join("link.txt");
            std::os::unix::fs::symlink(&input, &link).unwrap();
            assert!(matches!(check_paths(&[&input], &[&link]), Err(OutputError::SameAsInput { .. })));
            let hard = d.join("hard.txt");
            std::fs::hard_link(&input, &hard).unwrap();
            assert!(matches!(check_paths(&[&input], &[&hard]), Err(OutputError::SameAsInput { .. })));
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn directory_replaced_whole_only_on_commit_and_with_force() {
        let d = scratch("dir");
        let out = d.join("result");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("stale.png"), "old").unwrap();
        // Without force: refused, untouched.
        let outs = Outputs::new(false);
        assert!(matches!(outs.check(&[], &[&out]), Err(OutputError::Exists { .. })));
        drop(outs);
        // With force, but the run fails (dropped before commit): old output untouched, no temporaries.
        let mut outs = Outputs::new(true);
        let tmp = outs.dir(&out).unwrap();
        std::fs::write(tmp.join("new.txt"), "new").unwrap();
        drop(outs);
        assert!(out.join("stale.png").exists());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "temporaries left behind");
        // With force and success: replaced as a whole.
        let mut outs = Outputs::new(true);
        let tmp = outs.dir(&out).unwrap();
        std::fs::write(tmp.join("new.txt"), "new").unwrap();
        outs.commit().unwrap();
        assert!(!out.join("stale.png").exists());
        assert_eq!(std::fs::read_to_string(out.join("new.txt")).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn file_appears_only_on_commit() {
        let d = scratch("file");
        let out = d.join("hits.parquet");
        let mut outs = Outputs::new(false);
        outs.check(&[], &[&out]).unwrap();
        let tmp = outs.file(&out).unwrap();
        std::fs::write(&tmp, "data").unwrap();
        assert!(!out.exists());
        outs.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "data");
        // Kind mismatch with force: a directory where a file is expected.
        let mut outs = Outputs::new(true);
        assert!(matches!(outs.file(&d), Err(OutputError::WrongKind { .. })));
        assert!(Outputs::new(false).check(&[], &[&d.join("missing/x")]).is_ok());
        assert!(matches!(
            Outputs::new(false).check(&[], &[&out.join("x")]),
            Err(OutputError::NoParent { .. })
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
