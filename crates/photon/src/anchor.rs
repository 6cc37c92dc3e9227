//! `warpdrive bench photon --against-ppc PATH` (issue #34): PPC's CPU build (`make cpu` in
//! icecube/ppc `gpu/`; docs/performance/photon.md says how to build it offline) and warpdrive's
//! PPC front end on the same f2k input and ice, one after the other, each on one core.
//!
//! PPC runs as a child (`PPCTABLESDIR=<ice> PATH <stream> < input`, the environment otherwise
//! inherited), warpdrive in this process through `ppc::run` with `<gpu>` 0 on a pool of one
//! thread (as `WARPDRIVE_DEVICE=cpu warpdrive ppc 0` does, HIT lines formatted and dropped).
//! Times are user CPU seconds (getrusage: the child's, and this process's around our run) and
//! wall seconds; run it under `taskset -c N` to put both on the same core (the child inherits
//! the affinity). The ratio is PPC's user time over ours; the HIT line counts are printed beside
//! (independent realisations: they agree within a few per cent, docs/validation/photon.md).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use warpdrive_core::bench::{BenchReport, Lines};
use warpdrive_core::engine::{Control, Error, ParamError, Result};

/// What to compare.
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorOptions {
    /// PPC's CPU binary.
    pub ppc: PathBuf,
    /// Ice directories (default: spice_3.2.1 and spice_ftp-v3m under `$WARPDRIVE_DATA/ice`).
    pub ice: Vec<PathBuf>,
    /// The f2k input (default: the 10 TeV reference cascade of
    /// `reference/ppc_cpu_cascade_10TeV_spice_3.2.1`).
    pub input: Option<PathBuf>,
    /// Runs per side and model (seeds 1 … runs: PPC's stream number, our WARPDRIVE_SEED).
    pub runs: usize,
    /// warpdrive's arithmetic: precise instead of the fast mode.
    pub precise: bool,
}

/// User CPU seconds of this process (`who` = RUSAGE_SELF) or its waited-for children.
fn user_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage writes one plain struct.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut r) };
    r.ru_utime.tv_sec as f64 + r.ru_utime.tv_usec as f64 * 1e-6
}

/// One timed run: user seconds, wall seconds, HIT lines.
struct Timed {
    user: f64,
    wall: f64,
    hits: usize,
}

fn run_ppc(ppc: &Path, ice: &Path, input: &Path, stream: usize) -> Result<Timed> {
    let stdin = std::fs::File::open(input).map_err(|e| Error::Failed(format!("{}: {e}", input.display())))?;
    let before = user_seconds(libc::RUSAGE_CHILDREN);
    let t = Instant::now();
    let out = Command::new(ppc)
        .arg(stream.to_string())
        .env("PPCTABLESDIR", ice)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| ParamError::new("against_ppc", format!(" {}: {e}", ppc.display())))?;
    let wall = t.elapsed().as_secs_f64();
    let user = user_seconds(libc::RUSAGE_CHILDREN) - before;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        return Err(Error::Failed(format!(
            "{} failed ({}): {}",
            ppc.display(),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )));
    }
    let hits = out.stdout.split(|&b| b == b'\n').filter(|l| l.starts_with(b"HIT ")).count();
    Ok(Timed { user, wall, hits })
}

fn run_ours(ice: &Path, input: &Path, seed: usize, precise: bool) -> Result<Timed> {
    let ice_s = ice.display().to_string();
    let get = |k: &str| match k {
        "PPCTABLESDIR" => Some(ice_s.clone()),
        "WARPDRIVE_DEVICE" => Some("cpu".to_string()),
        "WARPDRIVE_SEED" => Some(seed.to_string()),
        "WARPDRIVE_PRECISE" => Some(if precise { "1" } else { "0" }.to_string()),
        k => std::env::var(k).ok(),
    };
    let env = crate::ppc::PpcEnv::from_env(get).map_err(|e| Error::Failed(e.to_string()))?;
    let text = std::fs::read(input).map_err(|e| Error::Failed(format!("{}: {e}", input.display())))?;
    let ctl = Control::new().threads(Some(1));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let before = user_seconds(libc::RUSAGE_SELF);
    let t = Instant::now();
    crate::ppc::run(&["0".to_string()], &env, &mut &text[..], &mut out, &mut err, &ctl).map_err(|e| Error::Failed(e.to_string()))?;
    let wall = t.elapsed().as_secs_f64();
    let user = user_seconds(libc::RUSAGE_SELF) - before;
    let hits = out.split(|&b| b == b'\n').filter(|l| l.starts_with(b"HIT ")).count();
    Ok(Timed { user, wall, hits })
}

/// Run both sides for every model, printing a row per run to `lines`.
pub fn run(o: &AnchorOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    if !o.ppc.is_file() {
        return Err(ParamError::new(
            "against_ppc",
            format!(
                ": {} is not a file (build PPC's CPU version with `make cpu` in icecube/ppc gpu/: docs/performance/photon.md)",
                o.ppc.display()
            ),
        )
        .into());
    }
    let data = warpdrive_core::data::data_dir();
    let ice = if o.ice.is_empty() {
        vec![data.join("ice/spice_3.2.1"), data.join("ice/spice_ftp-v3m")]
    } else {
        o.ice.clone()
    };
    let input = o
        .input
        .clone()
        .unwrap_or_else(|| data.join("reference/ppc_cpu_cascade_10TeV_spice_3.2.1/input_cascade_10TeV.f2k"));
    let mode = if o.precise { "precise" } else { "fast mode" };
    lines(&format!(
        "warpdrive bench photon --against-ppc {}: {}, one thread each, warpdrive {mode}",
        o.ppc.display(),
        input.display()
    ));
    lines(&format!(
        "{:<16} {:>4} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>12}",
        "model", "run", "PPC user", "PPC wall", "PPC hits", "wd user", "wd wall", "wd hits", "PPC/wd user"
    ));
    let mut rows = Vec::new();
    for dir in &ice {
        let name = dir
            .file_name()
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
        for r in 1..=o.runs.max(1) {
            ctl.check()?;
            let p = run_ppc(&o.ppc, dir, &input, r)?;
            ctl.check()?;
            let w = run_ours(dir, &input, r, o.precise)?;
            let ratio = p.user / w.user;
            lines(&format!(
                "{name:<16} {r:>4} {:>9.2}s {:>9.2}s {:>9} {:>9.2}s {:>9.2}s {:>9} {ratio:>12.2}",
                p.user, p.wall, p.hits, w.user, w.wall, w.hits
            ));
            rows.push(format!(
                "{{\"model\":\"{name}\",\"run\":{r},\"ppc_user_s\":{:.3},\"ppc_wall_s\":{:.3},\"ppc_hits\":{},\"warpdrive_user_s\":{:.3},\"warpdrive_wall_s\":{:.3},\"warpdrive_hits\":{},\"ppc_over_warpdrive_user\":{ratio:.3}}}",
                p.user, p.wall, p.hits, w.user, w.wall, w.hits
            ));
        }
    }
    Ok(BenchReport {
        json: format!(
            "{{\"benchmark\":\"photon-cpu-against-ppc\",\"ppc\":\"{}\",\"input\":\"{}\",\"mode\":\"{mode}\",\"version\":\"{}\",\"runs\":[{}]}}\n",
            o.ppc.display(),
            input.display(),
            env!("CARGO_PKG_VERSION"),
            rows.join(",")
        ),
    })
}
