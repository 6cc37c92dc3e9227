//! The output discipline every command follows (DESIGN.md §6). Its rules, in the order a run
//! meets them:
//!
//! 1. **No output replaces or lives inside an input**, and no input lives inside an output
//!    directory: paths are compared after canonicalisation, and existing files by identity
//!    (device and inode), so symbolic and hard links are caught too ([`check_paths`]).
//! 2. **What may stand at an output's name.** Nothing, or — with `--force` only — a regular file
//!    (replaced by a file output), a directory (replaced as a whole by a directory output) or a
//!    symbolic link. **A symbolic link is never written through**: with `--force` the link itself
//!    is replaced by the output and what it points to stays as it was (an output whose link
//!    points at an input is refused by rule 1). **Device nodes, FIFOs and sockets**, and links
//!    to them (`/dev/stdout`), **are never replaced, even with `--force`**.
//! 3. **Fail before the work.** [`Outputs::check`] refuses all of the above, and output
//!    locations that cannot work — a name longer than the file system allows, a read-only or
//!    unwritable directory, a full file system — before anything is computed, without creating
//!    anything. Staging creates the output's temporary entry; new code stages every output up
//!    front ([`Staged`], or [`Outputs::file`]/[`Outputs::dir`] right after `check`), so that
//!    what only creating it can reveal also fails before the work.
//! 4. **Outputs appear whole or not at all.** Each output is written into a temporary sibling,
//!    `.NAME.tmp-PID` (a file or a directory; a name too long for that gets a shortened stem
//!    and a hash), and put under its name by [`Outputs::commit`] only when the whole run
//!    succeeded:
//!    * without `--force` by `renameat2(RENAME_NOREPLACE)`, which fails if the name exists: an
//!      output that appeared during the run (another run with the same `-o`) is reported as
//!      "exists" and nothing is replaced — of two runs started together exactly one wins;
//!    * with `--force`, a file by `rename(2)` (atomic replacement) and a directory by
//!      `renameat2(RENAME_EXCHANGE)`, which swaps the two in one step; the old result, now under
//!      the temporary name, is then removed.
//!
//!    So SIGKILL at any moment leaves under the name either the earlier output or the new one,
//!    whole. Where the file system does not have `renameat2` (`EINVAL`, `ENOSYS`), a file is
//!    committed by `link` + `unlink` (`link` fails if the name exists), and where hard links
//!    are missing too, or for a directory, the name is first reserved exclusively (`O_EXCL`,
//!    `mkdir`) and the output renamed over the empty reservation: still never a replacement
//!    without `--force` (a SIGKILL between the two steps leaves an empty entry). The forced
//!    directory swap there falls back to moving the old one aside (`.NAME.old-PID`) first.
//!    A run with several outputs that cannot place one of them takes back the ones it placed.
//! 5. **One staging level.** A writer given a staged path, or a path inside a staged
//!    directory, writes in place ([`is_staged`]); `table::write_parquet` and
//!    `table::write_atomic` stage (and rename) only when called on their own.
//! 6. **Temporaries vanish.** Uncommitted temporaries are removed when [`Outputs`] is dropped
//!    (errors, panics that unwind). On SIGINT/SIGTERM the signal thread installed by
//!    [`install_signal_cleanup`] raises the run's cancellation token, and the front end (or the
//!    thread itself after a grace period) ends the process with [`exit_interrupted`]: every
//!    registered temporary removed, exit 128 + signal (130 for SIGINT, 143 for SIGTERM). What
//!    SIGKILL leaves — `.NAME.tmp-PID` or `.NAME.old-PID` — is collected by the next run that
//!    stages the same output: an entry of exactly that pattern whose process is gone (the PID is
//!    not alive on this host, or is ours but not one of our entries) and whose lock is free
//!    (each run holds an `flock` on its staging entries while it lives, which tells a live run
//!    of another host or PID namespace from a dead one where the file system supports it).
//! 7. **A signal during the commit** lets the commit finish (the commit holds the registry the
//!    signal thread needs), and the message then names the outputs that were written completely.
//!
//! **Test hook** (not for users): with `WARPDRIVE_TEST_PAUSE_AT_COMMIT=MS` every step of a
//! commit prints `test pause: STEP DEST` on stderr and sleeps MS milliseconds — `commit` before
//! an output is put in place, `swapped` after a forced directory swap before the old output is
//! removed — so that tests can send SIGKILL or SIGINT at a known point
//! (`crates/cli/tests/output_safety.rs`).
//!
//! ```no_run
//! use warpdrive_core::output::Outputs;
//! # fn main() -> Result<(), warpdrive_core::output::OutputError> {
//! let mut outs = Outputs::new(false);
//! outs.check(&["events.txt".as_ref()], &["result".as_ref()])?;
//! let dir = outs.dir("result".as_ref())?; // created now: an unwritable location fails here …
//! // … the work …
//! std::fs::write(dir.join("summary.json"), "{}").unwrap();
//! outs.commit()?; // … and only now does `result/` appear (or replace the old one with --force)
//! # Ok(()) }
//! ```

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
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
    #[error("{output}: exists{}; pass --force to replace it (nothing was written)", if *.while_running { " (another run wrote it while this one was working)" } else { "" })]
    Exists {
        output: PathBuf,
        /// Found by the commit: the name was free when the run started.
        while_running: bool,
    },
    #[error("{output}: is an existing {found}, but this output is a {expected}; remove it or choose another path")]
    WrongKind {
        output: PathBuf,
        found: &'static str,
        expected: &'static str,
    },
    #[error("{output}: is a {found}; warpdrive never replaces device nodes, FIFOs or sockets, even with --force: choose another path (nothing was written)")]
    Special { output: PathBuf, found: String },
    #[error("{output}: names no file or directory; give the output a name (nothing was written)")]
    NoName { output: PathBuf },
    #[error(
        "{output}: the name is {len} bytes, longer than the {max} this file system allows; choose a shorter name (nothing was written)"
    )]
    NameTooLong { output: PathBuf, len: usize, max: usize },
    #[error("{output}: cannot write in {dir}: {source}; choose another location (nothing was written)")]
    Unwritable {
        output: PathBuf,
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{output}: the file system of {dir} is full; free some space or choose another location (nothing was written)")]
    Full { output: PathBuf, dir: PathBuf },
    #[error("{output}: {entry} is the staging entry of another run that is still alive; wait for it or choose another path (nothing was written)")]
    Busy { output: PathBuf, entry: PathBuf },
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
fn identity(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
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

/// What stands at an output's name now (a final symbolic link is not followed: rule 2).
#[derive(Debug, PartialEq, Eq)]
enum Found {
    File,
    Dir,
    Link,
    /// A device node, FIFO or socket, or a link to one: never replaced.
    Special(String),
}

/// The name of a file type that is neither a regular file, a directory nor a link.
fn special_kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else if t.is_fifo() {
        Some("FIFO")
    } else if t.is_socket() {
        Some("socket")
    } else if t.is_file() || t.is_dir() || t.is_symlink() {
        None
    } else {
        Some("special file")
    }
}

fn found(dest: &Path) -> Result<Option<Found>, OutputError> {
    let t = match std::fs::symlink_metadata(dest) {
        Ok(m) => m.file_type(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(dest)(e)),
    };
    if let Some(kind) = special_kind(t) {
        return Ok(Some(Found::Special(kind.to_string())));
    }
    if t.is_symlink() {
        // A link to a device (`/dev/stdout` → a terminal or pipe) is refused like the device.
        if let Some(kind) = std::fs::metadata(dest).ok().and_then(|m| special_kind(m.file_type())) {
            return Ok(Some(Found::Special(format!("symbolic link to a {kind}"))));
        }
        return Ok(Some(Found::Link));
    }
    Ok(Some(if t.is_dir() { Found::Dir } else { Found::File }))
}

/// Rule 2 for an output that is to be a `kind` (`None`: not known yet, at [`Outputs::check`]),
/// given what stands at its name.
fn judge(dest: &Path, found: Option<Found>, kind: Option<Kind>, force: bool) -> Result<(), OutputError> {
    let wrong = |found: Kind| OutputError::WrongKind {
        output: dest.to_path_buf(),
        found: found.name(),
        expected: kind.map_or("", Kind::name),
    };
    match found {
        None => Ok(()),
        Some(Found::Special(found)) => Err(OutputError::Special {
            output: dest.to_path_buf(),
            found,
        }),
        Some(_) if !force => Err(OutputError::Exists {
            output: dest.to_path_buf(),
            while_running: false,
        }),
        Some(Found::File) if kind == Some(Kind::Dir) => Err(wrong(Kind::File)),
        Some(Found::Dir) if kind == Some(Kind::File) => Err(wrong(Kind::Dir)),
        Some(_) => Ok(()),
    }
}

/// [`judge`] what stands at `dest` now.
fn refuse_existing(dest: &Path, kind: Option<Kind>, force: bool) -> Result<(), OutputError> {
    judge(dest, found(dest)?, kind, force)
}

/// The directory an output's entry goes in (`.` for a bare name).
fn parent_dir(dest: &Path) -> &Path {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The output's own name; an error for paths such as `..` or `/` that name none.
fn file_name(dest: &Path) -> Result<&OsStr, OutputError> {
    dest.file_name().ok_or_else(|| OutputError::NoName {
        output: dest.to_path_buf(),
    })
}

/// The longest file name the file system of `dir` takes (`NAME_MAX`, 255 on Linux's).
const DEFAULT_NAME_MAX: usize = 255;

/// The facts of the file system that holds `dir` that decide whether an output can go there.
struct Location {
    name_max: usize,
    read_only: bool,
    /// Blocks this process may still use (`None` when the file system does not say).
    free_blocks: Option<u64>,
}

fn location(dir: &Path) -> Option<Location> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `st` a properly sized, writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let free = if root { st.f_bfree } else { st.f_bavail };
    Some(Location {
        name_max: match st.f_namemax as usize {
            0 => DEFAULT_NAME_MAX,
            n => n,
        },
        read_only: st.f_flag & libc::ST_RDONLY != 0,
        free_blocks: (st.f_blocks > 0).then_some(free as u64),
    })
}

/// The nearest existing directory at or above the output's parent (the one its missing parent
/// directories would be made in).
fn existing_ancestor(dest: &Path) -> PathBuf {
    let mut dir = absolute(parent_dir(dest));
    while !dir.is_dir() && dir.pop() {}
    dir
}

/// Rule 3: can an entry named like `dest` be made where it goes? Its name fits the file system,
/// and the directory it goes in is writable and not full. Creates nothing.
fn check_location(dest: &Path) -> Result<(), OutputError> {
    let name = file_name(dest)?;
    let dir = existing_ancestor(dest);
    let Some(loc) = location(&dir) else { return Ok(()) };
    if name.len() > loc.name_max {
        return Err(OutputError::NameTooLong {
            output: dest.to_path_buf(),
            len: name.len(),
            max: loc.name_max,
        });
    }
    let unwritable = |source| OutputError::Unwritable {
        output: dest.to_path_buf(),
        dir: dir.clone(),
        source,
    };
    if loc.read_only {
        return Err(unwritable(std::io::Error::from_raw_os_error(libc::EROFS)));
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| io(dest)(e.into()))?;
    // SAFETY: `c` is a valid C string.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(unwritable(std::io::Error::last_os_error()));
    }
    if loc.free_blocks == Some(0) {
        return Err(OutputError::Full {
            output: dest.to_path_buf(),
            dir,
        });
    }
    Ok(())
}

/// An error met while making an output's entry, said as rule 3 says it where it can.
fn location_error(dest: &Path, dir: &Path, e: std::io::Error) -> OutputError {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => OutputError::Full {
            output: dest.to_path_buf(),
            dir: dir.to_path_buf(),
        },
        Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM) => OutputError::Unwritable {
            output: dest.to_path_buf(),
            dir: dir.to_path_buf(),
            source: e,
        },
        _ => io(dest)(e),
    }
}

/// The part of a staging entry's name that comes from the output's name: the name itself, or,
/// when `.NAME.tmp-PID` would be longer than the file system allows, its first bytes (cut at a
/// character boundary), `~` and a hash of the whole name, so that different long names still
/// get different entries.
fn stem(name: &OsStr, name_max: usize) -> OsString {
    // `.` + stem + `.tmp-` + up to 10 digits of a PID.
    let room = name_max.saturating_sub(16);
    let bytes = name.as_bytes();
    if bytes.len() <= room {
        return name.to_os_string();
    }
    let mut h = crate::hash::Fnv64::new();
    h.write(bytes);
    let tag = format!("~{:016x}", h.finish());
    let mut cut = room.saturating_sub(tag.len());
    while cut > 0 && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    let mut out = bytes[..cut].to_vec();
    out.extend_from_slice(tag.as_bytes());
    OsString::from_vec(out)
}

/// `.STEM.WHAT-PID` beside `dest`: WHAT is `tmp` (the output being written) or `old` (an
/// earlier output moved aside by the swap of file systems without `RENAME_EXCHANGE`).
fn staging_name(dest: &Path, what: &str, pid: u32) -> Result<PathBuf, OutputError> {
    let max = location(&existing_ancestor(dest)).map_or(DEFAULT_NAME_MAX, |l| l.name_max);
    let mut name = OsString::from(".");
    name.push(stem(file_name(dest)?, max));
    name.push(format!(".{what}-{pid}"));
    Ok(dest.with_file_name(name))
}

/// The PID of a staging entry of the output whose stem is `stem` (`.STEM.tmp-PID` or
/// `.STEM.old-PID`, nothing more or less), if `name` is one.
fn staging_pid(name: &[u8], stem: &[u8]) -> Option<u32> {
    let rest = name.strip_prefix(b".")?.strip_prefix(stem)?;
    let digits = rest.strip_prefix(b".tmp-").or_else(|| rest.strip_prefix(b".old-"))?;
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Whether a process with this PID exists on this host (one we may not signal exists too).
fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Open an entry without following a link or blocking on a FIFO (for `flock`).
fn open_entry(path: &Path) -> Option<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()
}

/// Take the lock a live run holds on each of its staging entries; `None` where the file system
/// has no `flock` for it (the PID test alone then decides).
fn lock(file: File) -> Option<File> {
    // SAFETY: `file` owns a valid descriptor.
    (unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0).then_some(file)
}

/// Whether some live run holds the lock on this entry.
fn lock_held(path: &Path) -> bool {
    let Some(f) = open_entry(path) else { return false };
    // SAFETY: `f` owns a valid descriptor; the lock, if taken, goes with it.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Rule 6: remove what dead runs left for this output — entries of exactly its staging pattern,
/// regular files or directories, whose PID is not alive (or is ours but not one of `ours`), and
/// whose lock nobody holds.
fn collect_stale(dest: &Path, ours: &[PathBuf]) {
    let dir = parent_dir(dest);
    let max = location(&existing_ancestor(dest)).map_or(DEFAULT_NAME_MAX, |l| l.name_max);
    let Ok(name) = file_name(dest) else { return };
    let stem = stem(name, max);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let me = std::process::id();
    for e in entries.flatten() {
        let Some(pid) = staging_pid(e.file_name().as_bytes(), stem.as_bytes()) else {
            continue;
        };
        let path = e.path();
        let plain = e.file_type().is_ok_and(|t| t.is_file() || t.is_dir());
        let gone = if pid == me {
            !ours.contains(&absolute(&path))
        } else {
            !pid_alive(pid)
        };
        if plain && gone && !lock_held(&path) {
            remove_any(&path);
        }
    }
}

struct Entry {
    dest: PathBuf,
    tmp: PathBuf,
    kind: Kind,
    /// The `flock` on the staging entry, held while this run lives.
    _lock: Option<File>,
}

/// Temporaries of every live [`Outputs`] in this process (absolute paths), for the signal
/// thread and [`is_staged`].
static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// The signal that arrived (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

fn lock_temporaries() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The destination of each staged temporary of this process (absolute temporary, the output as
/// it was named), for [`shown`].
static DESTINATIONS: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

fn lock_destinations() -> std::sync::MutexGuard<'static, Vec<(PathBuf, PathBuf)>> {
    DESTINATIONS.lock().unwrap_or_else(|e| e.into_inner())
}

fn forget(temps: &mut Vec<PathBuf>, tmp: &Path) {
    let abs = absolute(tmp);
    temps.retain(|t| *t != abs);
    lock_destinations().retain(|(t, _)| *t != abs);
}

/// How messages show `path`: a path inside a staged temporary of this process is shown inside
/// the output it becomes (`out/final.parquet`, not `.out.tmp-PID/final.parquet`), so a write
/// error (a full disk) names what the user asked for; any other path as it is.
pub fn shown(path: &Path) -> PathBuf {
    let abs = absolute(path);
    for (tmp, dest) in lock_destinations().iter() {
        if let Ok(rest) = abs.strip_prefix(tmp) {
            return if rest.as_os_str().is_empty() {
                dest.clone()
            } else {
                dest.join(rest)
            };
        }
    }
    path.to_path_buf()
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

/// Rule 5: whether `path` is a staged temporary of this process or lies inside one, so that a
/// writer writes there in place instead of staging again.
pub fn is_staged(path: &Path) -> bool {
    let abs = absolute(path);
    lock_temporaries().iter().any(|t| abs.starts_with(t))
}

/// True once SIGINT or SIGTERM arrived (long loops may stop early; the signal thread removes
/// the temporaries and exits shortly after in any case).
pub fn interrupted() -> bool {
    SIGNAL.load(Ordering::Relaxed) != 0
}

/// The signal number that interrupted the run, if any: a command that stops early because of it
/// ends with [`exit_interrupted`], as the signal thread does.
pub fn signal() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// How long the signal thread lets the run stop by itself (its loops poll the cancellation
/// token, so it returns `Cancelled` and drops its temporaries) before it ends the process.
const SIGNAL_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Outputs committed by this process (for the message of a signal that came too late to stop
/// the run).
static COMMITTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Install, once per process, a thread that on SIGINT/SIGTERM sets [`interrupted`] and raises
/// `cancel` (the run's token: its loops stop, it returns `Cancelled`, its temporaries are
/// dropped and the front end calls [`exit_interrupted`]). If the run has not ended after a
/// grace period, the thread calls [`exit_interrupted`] itself. The handler itself only flags
/// (signal-hook's self-pipe); the work happens on the thread.
///
/// Only the command line calls this: a library must not take SIGINT from its host (Python's
/// Ctrl-C reaches a run through its own watcher and the same token).
pub fn install_signal_cleanup(cancel: crate::engine::Cancel) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
            return;
        };
        let _ = std::thread::Builder::new().name("warpdrive-signals".into()).spawn(move || {
            if let Some(sig) = signals.forever().next() {
                SIGNAL.store(sig, Ordering::SeqCst);
                cancel.cancel();
                std::thread::sleep(SIGNAL_GRACE);
                exit_interrupted(sig);
            }
        });
    });
}

/// End the process after SIGINT/SIGTERM: remove every registered temporary, say on stderr what
/// was written completely (a signal during the final commit lets the commit finish: rule 7) and
/// exit with 128 + `sig`. The front end calls it when its run returns after the signal, the
/// signal thread after its grace period; whichever comes second waits for the first to exit.
/// A commit in progress holds the registry, so this waits for it to finish.
pub fn exit_interrupted(sig: i32) -> ! {
    static EXITING: Mutex<()> = Mutex::new(());
    let _only_once = EXITING.lock().unwrap_or_else(|e| e.into_inner());
    let temps = lock_temporaries();
    for t in temps.iter() {
        remove_any(t);
    }
    let name = match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    };
    // Written without panicking (stderr may be closed), as the process's last line: an open
    // progress bar line is ended first, and the stderr lock is kept until the exit, so no other
    // thread's output (a bar frame, a note) follows the message without a newline.
    let mut err = std::io::stderr().lock();
    crate::progress::end_bars(&mut err);
    let _ = writeln!(err, "interrupted ({name}): {}", interrupted_message());
    let _ = err.flush();
    std::process::exit(128 + sig)
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

/// The test hook of the module docs: `WARPDRIVE_TEST_PAUSE_AT_COMMIT=MS` pauses each commit
/// step after saying `test pause: STEP DEST` on stderr. Not for users.
fn test_pause(step: &str, dest: &Path) {
    let Some(ms) = std::env::var("WARPDRIVE_TEST_PAUSE_AT_COMMIT")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    let _ = writeln!(std::io::stderr(), "test pause: {step} {}", dest.display());
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

// The commit's primitives (rule 4).

/// `renameat2`'s flags (linux/fs.h).
const RENAME_NOREPLACE: libc::c_uint = 1;
const RENAME_EXCHANGE: libc::c_uint = 2;

fn c_path(p: &Path) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other)
}

/// `renameat2(2)` through the system call (older C libraries lack the wrapper).
#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    let (f, t) = (c_path(from)?, c_path(to)?);
    // SAFETY: both are valid C strings; AT_FDCWD resolves them like rename(2) does.
    let r = unsafe { libc::syscall(libc::SYS_renameat2, libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), flags) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn renameat2(_from: &Path, _to: &Path, _flags: libc::c_uint) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

/// `renameat2` is not there, or this file system does not do the flag.
fn unsupported(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP))
}

fn exists_error(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::AlreadyExists
}

/// Move `from` to the free name `to`; `AlreadyExists` (nothing moved) if `to` exists.
fn rename_noreplace(from: &Path, to: &Path, kind: Kind) -> std::io::Result<()> {
    match renameat2(from, to, RENAME_NOREPLACE) {
        Err(e) if unsupported(&e) => noreplace_fallback(from, to, kind),
        r => r,
    }
}

/// [`rename_noreplace`] without `renameat2`: a file by `link` (which fails if the name exists)
/// and `unlink`; without hard links too, or for a directory, [`reserve_then_rename`].
fn noreplace_fallback(from: &Path, to: &Path, kind: Kind) -> std::io::Result<()> {
    if kind == Kind::File {
        match std::fs::hard_link(from, to) {
            Ok(()) => {
                // If this fails the temporary stays registered and goes with the run's cleanup.
                let _ = std::fs::remove_file(from);
                return Ok(());
            }
            Err(e) if exists_error(&e) => return Err(e),
            Err(_) => {}
        }
    }
    reserve_then_rename(from, to, kind)
}

/// Claim the name `to` exclusively (a new empty file or directory; `AlreadyExists` if it is
/// taken), then rename `from` over that empty reservation.
fn reserve_then_rename(from: &Path, to: &Path, kind: Kind) -> std::io::Result<()> {
    match kind {
        Kind::File => drop(std::fs::OpenOptions::new().write(true).create_new(true).open(to)?),
        Kind::Dir => std::fs::create_dir(to)?,
    }
    std::fs::rename(from, to).inspect_err(|_| {
        let _ = match kind {
            Kind::File => std::fs::remove_file(to),
            Kind::Dir => std::fs::remove_dir(to),
        };
    })
}

impl Entry {
    /// Put this output under its name. `Ok(true)`: the name was free (a new output, which
    /// [`Outputs::commit`] may take back); `Ok(false)`: an earlier output was replaced.
    fn place(&self, force: bool, temps: &mut Vec<PathBuf>) -> Result<bool, OutputError> {
        let dest = &self.dest;
        if !force {
            return match rename_noreplace(&self.tmp, dest, self.kind) {
                Ok(()) => Ok(true),
                Err(e) if exists_error(&e) => Err(OutputError::Exists {
                    output: dest.clone(),
                    while_running: true,
                }),
                Err(e) => Err(io(dest)(e)),
            };
        }
        // What stands there now decides (it may have changed since staging); a name that
        // changes under us between the look and the move is looked at again.
        for _ in 0..3 {
            let now = found(dest)?;
            if now.is_none() {
                match rename_noreplace(&self.tmp, dest, self.kind) {
                    Ok(()) => return Ok(true),
                    Err(e) if exists_error(&e) => continue,
                    Err(e) => return Err(io(dest)(e)),
                }
            }
            judge(dest, now, Some(self.kind), true)?;
            match self.kind {
                Kind::File => {
                    std::fs::rename(&self.tmp, dest).map_err(io(dest))?;
                    return Ok(false);
                }
                Kind::Dir => match self.swap(temps) {
                    Err(OutputError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
                    r => return r.map(|()| false),
                },
            }
        }
        Err(io(dest)(std::io::Error::other(
            "changed repeatedly while this run put its output there",
        )))
    }

    /// Replace the directory (or link) at the name by the staged directory in one step, then
    /// remove the earlier output, which the swap left under the temporary name.
    fn swap(&self, temps: &mut Vec<PathBuf>) -> Result<(), OutputError> {
        match renameat2(&self.tmp, &self.dest, RENAME_EXCHANGE) {
            Ok(()) => {
                test_pause("swapped", &self.dest);
                remove_any(&self.tmp);
                Ok(())
            }
            Err(e) if unsupported(&e) => swap_by_moving_aside(&self.tmp, &self.dest, temps),
            Err(e) => Err(io(&self.dest)(e)),
        }
    }
}

/// The forced directory swap without `RENAME_EXCHANGE`: the earlier output is moved aside to
/// `.NAME.old-PID`, the new one renamed in, the old one removed. A SIGKILL between the two
/// renames leaves the earlier output under `.NAME.old-PID` and nothing under the name.
fn swap_by_moving_aside(tmp: &Path, dest: &Path, temps: &mut Vec<PathBuf>) -> Result<(), OutputError> {
    let old = staging_name(dest, "old", std::process::id())?;
    remove_any(&old);
    temps.push(absolute(&old));
    std::fs::rename(dest, &old).map_err(io(dest))?;
    test_pause("swapped", dest);
    if let Err(e) = std::fs::rename(tmp, dest) {
        let _ = std::fs::rename(&old, dest);
        forget(temps, &old);
        return Err(io(dest)(e));
    }
    remove_any(&old);
    forget(temps, &old);
    Ok(())
}

/// The outputs of one run, staged in temporaries and committed together.
pub struct Outputs {
    force: bool,
    /// Name committed outputs in the message of a later signal (a command's outputs; not the
    /// caches and standalone files of [`Outputs::replacing`]).
    report: bool,
    staged: Vec<Entry>,
}

impl Outputs {
    /// `force`: replace existing outputs (the CLI's `--force`).
    pub fn new(force: bool) -> Self {
        Self {
            force,
            report: true,
            staged: Vec::new(),
        }
    }

    /// For a file written on its own, outside a command's outputs (a table written by a
    /// library call, a cache entry): replaces what exists (rule 2 still applies) and is not
    /// named in the message of a signal.
    pub fn replacing() -> Self {
        Self {
            force: true,
            report: false,
            staged: Vec::new(),
        }
    }

    /// Check before any work (rules 1–3): [`check_paths`], what stands at each output's name,
    /// parents that are files, and whether the location can take the output (name length,
    /// read-only or unwritable, full). Creates nothing.
    pub fn check(&self, inputs: &[&Path], outputs: &[&Path]) -> Result<(), OutputError> {
        check_paths(inputs, outputs)?;
        for out in outputs.iter().filter(|p| p.as_os_str() != "-") {
            file_name(out)?;
            // A parent that exists as a file is an error now; a missing one is created when
            // the output is staged.
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
            check_location(out)?;
            refuse_existing(out, None, self.force)?;
        }
        Ok(())
    }

    /// Rules 2, 3 and 6 for one output, then its temporary entry: collect what dead runs left
    /// for this name, create `.NAME.tmp-PID` (registered first, so that a signal cannot come
    /// between the two) and hold its lock.
    fn stage(&mut self, dest: &Path, kind: Kind) -> Result<PathBuf, OutputError> {
        if self.staged.iter().any(|s| s.dest == dest) {
            return Err(OutputError::Duplicate {
                output: dest.to_path_buf(),
            });
        }
        check_location(dest)?;
        refuse_existing(dest, Some(kind), self.force)?;
        let parent = parent_dir(dest);
        std::fs::create_dir_all(parent).map_err(|e| location_error(dest, parent, e))?;
        let tmp = staging_name(dest, "tmp", std::process::id())?;
        let ours = lock_temporaries().clone();
        collect_stale(dest, &ours);
        if std::fs::symlink_metadata(&tmp).is_ok() {
            return Err(OutputError::Busy {
                output: dest.to_path_buf(),
                entry: tmp,
            });
        }
        lock_temporaries().push(absolute(&tmp));
        lock_destinations().push((absolute(&tmp), dest.to_path_buf()));
        let created = match kind {
            Kind::File => std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp).map(Some),
            Kind::Dir => std::fs::create_dir(&tmp).map(|()| File::open(&tmp).ok()),
        };
        let file = match created {
            Ok(f) => f,
            Err(e) => {
                forget(&mut lock_temporaries(), &tmp);
                return Err(location_error(dest, parent, e));
            }
        };
        self.staged.push(Entry {
            dest: dest.to_path_buf(),
            tmp: tmp.clone(),
            kind,
            _lock: file.and_then(lock),
        });
        Ok(tmp)
    }

    /// A file output: creates and returns the temporary file to write (renamed to `dest` on
    /// commit; a writer may replace it, e.g. by `File::create`).
    pub fn file(&mut self, dest: &Path) -> Result<PathBuf, OutputError> {
        self.stage(dest, Kind::File)
    }

    /// A directory output: creates and returns the temporary directory to fill.
    pub fn dir(&mut self, dest: &Path) -> Result<PathBuf, OutputError> {
        self.stage(dest, Kind::Dir)
    }

    /// Put every staged output under its name (rule 4). If one cannot be placed (it exists
    /// without `force`, or the move fails), the outputs this commit already placed under free
    /// names are taken back and every temporary removed: the run wrote nothing.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let mut temps = lock_temporaries();
        let staged = std::mem::take(&mut self.staged);
        let mut placed: Vec<(usize, bool)> = Vec::new();
        for (i, s) in staged.iter().enumerate() {
            if std::fs::symlink_metadata(&s.tmp).is_err() {
                // Nothing was written to this output (its writer removed it).
                continue;
            }
            test_pause("commit", &s.dest);
            match s.place(self.force, &mut temps) {
                Ok(fresh) => placed.push((i, fresh)),
                Err(e) => {
                    for &(j, fresh) in &placed {
                        let p = &staged[j];
                        if fresh {
                            let _ = rename_noreplace(&p.dest, &p.tmp, p.kind);
                        }
                    }
                    drop(temps);
                    self.staged = staged; // dropped with `self`: every temporary removed
                    return Err(e);
                }
            }
        }
        for s in &staged {
            forget(&mut temps, &s.tmp);
        }
        if self.report {
            let mut done = COMMITTED.lock().unwrap_or_else(|e| e.into_inner());
            done.extend(placed.iter().map(|&(i, _)| staged[i].dest.clone()));
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

    /// A file output written whole from `bytes` and committed (a report, a small file); a write
    /// error names the output, not its temporary.
    pub fn write(self, bytes: &[u8]) -> Result<(), OutputError> {
        std::fs::write(&self.tmp, bytes).map_err(io(&self.dest))?;
        self.commit()
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        let mut temps = lock_temporaries();
        for s in &self.staged {
            remove_any(&s.tmp);
            forget(&mut temps, &s.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::names;

    fn scratch(name: &str) -> std::path::PathBuf {
        crate::test_support::scratch("output", name)
    }

    /// A PID no process has: that of a child that exited and was reaped.
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
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
        let link = d.join("link.txt");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        assert!(matches!(check_paths(&[&input], &[&link]), Err(OutputError::SameAsInput { .. })));
        let hard = d.join("hard.txt");
        std::fs::hard_link(&input, &hard).unwrap();
        assert!(matches!(check_paths(&[&input], &[&hard]), Err(OutputError::SameAsInput { .. })));
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

    /// An output that appears while the run works (another run with the same name) is not
    /// replaced without force: the commit says "exists" and leaves nothing of its own.
    #[test]
    fn commit_never_replaces_without_force() {
        let d = scratch("noreplace");
        for kind in [Kind::File, Kind::Dir] {
            let out = d.join(format!("out-{}", kind.name()));
            let mut outs = Outputs::new(false);
            outs.check(&[], &[&out]).unwrap();
            let tmp = outs.stage(&out, kind).unwrap();
            if kind == Kind::File {
                std::fs::write(&tmp, "ours").unwrap();
                std::fs::write(&out, "theirs").unwrap();
            } else {
                std::fs::write(tmp.join("f"), "ours").unwrap();
                std::fs::create_dir(&out).unwrap();
                std::fs::write(out.join("f"), "theirs").unwrap();
            }
            let e = outs.commit().unwrap_err();
            assert!(matches!(e, OutputError::Exists { while_running: true, .. }), "{e}");
            assert!(e.to_string().contains("exists (another run wrote it while this one was working)"));
            let f = if kind == Kind::File { out.clone() } else { out.join("f") };
            assert_eq!(std::fs::read_to_string(f).unwrap(), "theirs");
        }
        assert_eq!(names(&d), ["out-directory", "out-file"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Several outputs: one that cannot be placed takes back those already placed.
    #[test]
    fn several_outputs_are_committed_all_or_none() {
        let d = scratch("several");
        let (a, b) = (d.join("a.parquet"), d.join("b.txt"));
        let mut outs = Outputs::new(false);
        outs.check(&[], &[&a, &b]).unwrap();
        std::fs::write(outs.file(&a).unwrap(), "a").unwrap();
        std::fs::write(outs.file(&b).unwrap(), "b").unwrap();
        std::fs::write(&b, "someone else's").unwrap();
        assert!(matches!(outs.commit(), Err(OutputError::Exists { .. })));
        assert_eq!(names(&d), ["b.txt"]);
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "someone else's");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// The commit of file systems without `renameat2` keeps "never replace without force".
    #[test]
    fn fallbacks_without_renameat2_never_replace() {
        let d = scratch("fallback");
        for kind in [Kind::File, Kind::Dir] {
            for (step, f) in [
                ("link", noreplace_fallback as fn(&Path, &Path, Kind) -> std::io::Result<()>),
                ("reserve", reserve_then_rename),
            ] {
                let (from, to) = (d.join(format!("from-{step}")), d.join(format!("to-{step}")));
                let make = |p: &Path, text: &str| match kind {
                    Kind::File => std::fs::write(p, text).unwrap(),
                    Kind::Dir => {
                        std::fs::create_dir(p).unwrap();
                        std::fs::write(p.join("f"), text).unwrap();
                    }
                };
                let read = |p: &Path| match kind {
                    Kind::File => std::fs::read_to_string(p).unwrap(),
                    Kind::Dir => std::fs::read_to_string(p.join("f")).unwrap(),
                };
                make(&from, "new");
                make(&to, "old");
                let e = f(&from, &to, kind).unwrap_err();
                assert!(exists_error(&e), "{step} {kind:?}: {e}");
                assert_eq!((read(&from), read(&to)), ("new".into(), "old".into()), "{step} {kind:?}");
                remove_any(&to);
                f(&from, &to, kind).unwrap();
                assert_eq!(read(&to), "new");
                assert!(std::fs::symlink_metadata(&from).is_err(), "{step} {kind:?}: the source is left");
                remove_any(&to);
            }
        }
        // The forced swap by moving aside.
        let (tmp, dest) = (d.join("tmp"), d.join("dest"));
        std::fs::create_dir(&tmp).unwrap();
        std::fs::write(tmp.join("new"), "").unwrap();
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("old"), "").unwrap();
        swap_by_moving_aside(&tmp, &dest, &mut Vec::new()).unwrap();
        assert_eq!(names(&d), ["dest"]);
        assert_eq!(names(&dest), ["new"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Rule 2: device nodes, FIFOs and sockets, and links to them, are never replaced; a link
    /// is replaced itself (with force), never written through.
    #[test]
    fn special_files_and_links() {
        let d = scratch("special");
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let to_fifo = d.join("to-fifo");
        std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
        for p in [&fifo, &to_fifo] {
            for force in [false, true] {
                let mut outs = Outputs::new(force);
                assert!(matches!(outs.check(&[], &[p]), Err(OutputError::Special { .. })), "{p:?}");
                assert!(matches!(outs.file(p), Err(OutputError::Special { .. })));
                assert!(matches!(outs.dir(p), Err(OutputError::Special { .. })));
            }
        }
        let target = d.join("target");
        std::fs::write(&target, "kept").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(Outputs::new(false).check(&[], &[&link]), Err(OutputError::Exists { .. })));
        let mut outs = Outputs::new(true);
        std::fs::write(outs.file(&link).unwrap(), "new").unwrap();
        outs.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        assert_eq!(names(&d), ["fifo", "link", "target", "to-fifo"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Rule 6: stale entries go when their process is gone and nobody holds their lock; entries
    /// of live runs and look-alikes stay.
    #[test]
    fn stale_entries_are_collected_only_when_dead_and_ours() {
        let d = scratch("stale");
        let out = d.join("out.parquet");
        let (dead, me) = (dead_pid(), std::process::id());
        let stale = [format!(".out.parquet.tmp-{dead}"), format!(".out.parquet.old-{dead}")];
        for s in &stale {
            std::fs::create_dir(d.join(s)).unwrap();
            std::fs::write(d.join(s).join("x"), "").unwrap();
        }
        // A dead-looking PID whose lock is held (a live run of another PID namespace).
        let locked = format!(".out.parquet.tmp-{}", dead_pid());
        std::fs::write(d.join(&locked), "").unwrap();
        let _held = lock(File::open(d.join(&locked)).unwrap()).expect("flock");
        let keep = [
            locked.clone(),
            format!(".out.parquet.tmp-{}", std::os::unix::process::parent_id()),
            format!(".other.tmp-{dead}"),
            format!("out.parquet.tmp-{dead}"),
            format!(".out.parquet.tmp-{dead}x"),
            ".out.parquet.tmp-".to_string(),
        ];
        for k in &keep[1..] {
            std::fs::write(d.join(k), "").unwrap();
        }
        // A leftover with our own PID that is not one of our entries (a dead namesake in a
        // container that reuses PIDs) goes too.
        std::fs::write(d.join(format!(".out.parquet.tmp-{me}")), "").unwrap();
        let mut outs = Outputs::new(false);
        let tmp = outs.file(&out).unwrap();
        let mut expect: Vec<String> = keep.to_vec();
        expect.push(tmp.file_name().unwrap().to_string_lossy().into_owned());
        expect.sort();
        assert_eq!(names(&d), expect);
        // Our own live entry is not taken by a second staging of the same name in this process.
        let mut other = Outputs::new(false);
        assert!(matches!(other.file(&out), Err(OutputError::Busy { .. })));
        assert!(tmp.exists());
        drop(outs);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn long_names_get_staging_names_that_fit() {
        let d = scratch("long");
        let a = d.join("a".repeat(250));
        let b = d.join(format!("{}b", "a".repeat(249)));
        let (ta, tb) = (staging_name(&a, "tmp", 4194304).unwrap(), staging_name(&b, "tmp", 4194304).unwrap());
        assert!(ta.file_name().unwrap().len() <= 255 && tb.file_name().unwrap().len() <= 255);
        assert_ne!(ta, tb);
        let stem_a = stem(a.file_name().unwrap(), 255);
        assert_eq!(staging_pid(ta.file_name().unwrap().as_bytes(), stem_a.as_bytes()), Some(4194304));
        assert_eq!(staging_pid(tb.file_name().unwrap().as_bytes(), stem_a.as_bytes()), None);
        // A multi-byte character is not cut in half.
        let c = d.join("é".repeat(127));
        let tc = staging_name(&c, "tmp", 1).unwrap();
        assert!(tc.file_name().unwrap().to_str().is_some());
        // Staged, written and committed under the long name; one too long is refused up front.
        let mut outs = Outputs::new(false);
        std::fs::write(outs.file(&a).unwrap(), "x").unwrap();
        outs.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "x");
        let too_long = d.join("x".repeat(256));
        assert!(matches!(
            Outputs::new(false).check(&[], &[&too_long]),
            Err(OutputError::NameTooLong { len: 256, max: 255, .. })
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn staged_paths_are_known() {
        let d = scratch("staged");
        let mut outs = Outputs::new(false);
        let dir = outs.dir(&d.join("out")).unwrap();
        let file = outs.file(&d.join("f.txt")).unwrap();
        assert!(is_staged(&dir) && is_staged(&dir.join("x.parquet")) && is_staged(&file));
        assert!(!is_staged(&d.join("out")) && !is_staged(&d));
        outs.commit().unwrap();
        assert!(!is_staged(&dir.join("x.parquet")));
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Messages name the output a staged path becomes, not its temporary.
    #[test]
    fn staged_paths_are_shown_as_their_outputs() {
        let d = scratch("shown");
        let dest = d.join("out");
        let mut outs = Outputs::new(false);
        let tmp = outs.dir(&dest).unwrap();
        assert_eq!(shown(&tmp.join("final.parquet")), dest.join("final.parquet"));
        assert_eq!(shown(&tmp), dest);
        assert_eq!(shown(&d.join("other")), d.join("other"));
        drop(outs);
        assert_eq!(shown(&tmp.join("final.parquet")), tmp.join("final.parquet"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
