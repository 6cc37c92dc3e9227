//! PPC-compatible front end (spec §2.1–2.2): the same command-line modes, environment
//! variables, f2k on standard input and `HIT` lines on standard output, so scripts that call
//! `ppc` (Prometheus, DirectFit) can switch binaries.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use warpdrive_core::engine::{Control, Error as EngineError};
use warpdrive_core::InputError;

use crate::detector::{Detector, DetectorOptions};
use crate::f2k::{flasher, parse_f2k, FlasherOptions};
use crate::hits::{hit_lines, HIT_LINE_WINDOW};

/// PPC variables that change physics this version does not simulate: reported, never ignored silently.
pub const UNSUPPORTED_ENV: [&str; 8] = ["TILTMODELDIR", "FLWL", "VTHK", "HIFL", "GECO", "HQUO", "BADMP", "NPHO"];

/// The PPC settings read from the environment.
#[derive(Clone, Debug, Default)]
pub struct PpcEnv {
    pub detector: DetectorOptions,
    pub flasher: FlasherOptions,
    pub seed: Option<u64>,
    /// WARPDRIVE_DEVICE: `cpu`, or `auto` (default: GPU number `<gpu>` when CUDA works, else CPU).
    pub device: Option<String>,
    /// WARPDRIVE_PRECISE=1: the precise arithmetic on the CPU and the GPU (default: fast mode).
    pub precise: bool,
    /// Unsupported variables that were set.
    pub ignored: Vec<String>,
}

impl PpcEnv {
    /// Read the settings from `get` (the process environment in the binary, a map in tests).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, InputError> {
        let num = |name: &str| -> Result<Option<f64>, InputError> {
            get(name)
                .map(|v| {
                    v.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| InputError::file("environment", format!("'{v}' is not a number")).field(name))
                })
                .transpose()
        };
        let dir = get("PPCTABLESDIR").or_else(|| get("ICEMODELDIR")).map(PathBuf::from);
        let mut env = PpcEnv::default();
        env.detector.ice_dir = dir;
        env.detector.wavelength = num("WFLA")?;
        if let Some(w) = env.detector.wavelength {
            if !(200.0..=800.0).contains(&w) {
                return Err(InputError::file("environment", format!("{w} nm is outside 200-800 nm")).field("WFLA"));
            }
        }
        env.detector.oversize = num("OVSZ")?.map(|v| v.round().max(0.0) as u32);
        env.detector.bfrm = num("BFRM")?.map(|v| v as u8);
        for (k, name) in ["BFRA", "BFRB"].iter().enumerate() {
            if let Some(v) = num(name)? {
                if v < 0.0 {
                    return Err(InputError::file("environment", format!("{v} must be ≥ 0")).field(*name));
                }
                env.detector.bfr_scales[k] = v;
            }
        }
        env.detector.absm = num("ABSM")?.map(|v| v != 0.0);
        env.detector.angular = get("PPCHOLEICE").map(PathBuf::from);
        env.detector.sensors = get("NEXTGENDIR").map(PathBuf::from);
        if let Some(v) = num("FLDR")? {
            env.flasher.fldr = v;
        }
        if let Some(v) = num("FWID")? {
            env.flasher.fwid = v;
        }
        if let Some(v) = num("OFLA")? {
            env.flasher.own_dom_records = v == 0.0;
        }
        if let Some(v) = num("FZCR")? {
            env.flasher.fzcr = v;
        }
        env.flasher.elev = num("ELEV")?;
        // FTLT: "nx ny nz", the flasher DOM's axis. PPC silently falls back to cx.dat for anything
        // else; a typo would change the physics unnoticed, so it is an error here.
        if let Some(v) = get("FTLT") {
            let x: Vec<Option<f64>> = v
                .split_whitespace()
                .map(|t| t.parse::<f64>().ok().filter(|x| x.is_finite()))
                .collect();
            match x[..] {
                [Some(a), Some(b), Some(c)] => env.flasher.ftlt = Some([a, b, c]),
                _ => return Err(InputError::file("environment", format!("'{v}' is not three numbers nx ny nz")).field("FTLT")),
            }
        }
        env.seed = num("WARPDRIVE_SEED")?.map(|v| v as u64);
        env.device = get("WARPDRIVE_DEVICE");
        env.precise = num("WARPDRIVE_PRECISE")?.is_some_and(|v| v != 0.0);
        env.ignored = UNSUPPORTED_ENV
            .iter()
            .filter(|v| get(v).is_some())
            .map(|v| (*v).to_string())
            .collect();
        Ok(env)
    }
}

/// Errors of the PPC front end.
#[derive(Debug, thiserror::Error)]
pub enum PpcError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The run: the device, a cancellation, the photon total.
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Usage(String),
}

const USAGE: &str = "usage: warpdrive ppc                  list tables and devices
       warpdrive ppc - [x y]          print the ice table at (x, y)
       warpdrive ppc =                read 'x y z' lines on stdin, print the tilt z-shift
       warpdrive ppc <gpu>            propagate f2k events from stdin, HIT lines to stdout
       warpdrive ppc <str> <om> <num> <gpu>   flasher (num may be x*y)";

/// Check the run's photon total, propagate under `ctl` (progress, cancellation), and say on
/// stderr how many photons ran and how many hits there were before and after the DOM acceptance
/// (the HIT lines are the latter).
fn simulate(
    det: &Detector,
    specs: &[crate::source::SourceSpec],
    seed: u64,
    backend: &crate::Backend,
    ctl: &Control,
    err: &mut dyn Write,
) -> Result<crate::Simulation, PpcError> {
    crate::source::check_total(specs).map_err(PpcError::Usage)?;
    let t = std::time::Instant::now();
    let (sim, stats) = ctl.install(|| crate::engine::simulate(det, specs, seed, warpdrive_core::jobs::Share::WHOLE, backend, ctl))??;
    writeln!(
        err,
        "photons: {}  hits: {} before DOM acceptance, {} after (HIT lines)",
        sim.photons,
        sim.raw_hits,
        sim.hits.len()
    )?;
    let kernel = stats.map_or(String::new(), |s| format!(" ({})", s.phases()));
    writeln!(err, "propagation and acceptance: {:.2} s{kernel}", t.elapsed().as_secs_f64())?;
    Ok(sim)
}

/// The longest line the `=` mode reads (a line is three numbers).
const MAX_LINE: u64 = 1 << 16;

/// Standard input as text, within the bounds every input has (`warpdrive_core::input`): at most
/// the input budget, stopping at the first NUL byte (`/dev/zero` fails at once), UTF-8, a
/// byte-order mark removed.
fn read_stdin(stdin: &mut dyn BufRead) -> Result<String, PpcError> {
    let path = Path::new("<stdin>");
    let limit = warpdrive_core::input::budget();
    let mut buf = Vec::new();
    loop {
        let chunk = match stdin.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if chunk.is_empty() {
            break;
        }
        if let Some(at) = chunk.iter().position(|&b| b == 0) {
            let at = buf.len() + at;
            return Err(InputError::file(path, format!("binary data, not text (a NUL byte at offset {at})")).into());
        }
        if (buf.len() + chunk.len()) as u64 > limit {
            return Err(InputError::file(
                path,
                format!(
                    "more than the {} an input may have here (memory budget; WARPDRIVE_MAX_MEMORY raises it)",
                    warpdrive_core::limits::human(limit as f64)
                ),
            )
            .into());
        }
        buf.extend_from_slice(chunk);
        let n = chunk.len();
        stdin.consume(n);
    }
    Ok(warpdrive_core::input::text_from_bytes(path, buf)?)
}

/// The next line of standard input for the `=` mode (without its newline), `None` at the end;
/// a line longer than [`MAX_LINE`] or with a NUL byte is an error, so an endless stream cannot
/// grow the process.
fn read_line(stdin: &mut dyn BufRead, number: usize) -> Result<Option<String>, PpcError> {
    let mut line = Vec::new();
    stdin.take(MAX_LINE + 1).read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    let path = Path::new("<stdin>");
    if line.len() as u64 > MAX_LINE {
        return Err(InputError::new(path, number, format!("longer than {MAX_LINE} bytes")).into());
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.contains(&0) {
        return Err(InputError::new(path, number, "binary data, not text (a NUL byte)").into());
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| InputError::new(path, number, "not UTF-8 text").into())
}

/// Run PPC's `main` with `args` (without the program name) under `ctl`: its CPU threads, its
/// progress counter (photons) and its cancellation token, which stops a propagation within one
/// chunk of photons (CPU) or one batch (GPU) with `EngineError::Cancelled` before anything is
/// written. The device is PPC's choice (the `<gpu>` argument and `WARPDRIVE_DEVICE`), not the
/// control's.
pub fn run(
    args: &[String],
    env: &PpcEnv,
    stdin: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
    ctl: &Control,
) -> Result<(), PpcError> {
    for v in &env.ignored {
        writeln!(err, "warning: {v} is set but not supported by warpdrive; it has no effect")?;
    }
    let ice_dir = || {
        env.detector
            .ice_dir
            .clone()
            .ok_or_else(|| PpcError::Usage("PPCTABLESDIR is not set: point it at a PPC ice directory".into()))
    };
    match args {
        [] => {
            let dir = ice_dir()?;
            writeln!(err, "tables: {}", dir.display())?;
            for f in [
                "cfg.txt",
                "icemodel.dat",
                "icemodel.par",
                "wv.dat",
                "as.dat",
                "geo-f2k",
                "tilt.par",
                "tilt.dat",
                "tilt.set",
                "tilt.map",
                "icemodel.bbl",
                "eff-f2k",
                "wv.rde",
            ] {
                writeln!(err, "  {f:<14} {}", if dir.join(f).is_file() { "found" } else { "-" })?;
            }
            let gpus = match warpdrive_core::cuda::usable_devices() {
                Ok(n) => format!("{n} usable"),
                Err(why) => format!("none ({why})"),
            };
            let threads = ctl.threads.unwrap_or_else(rayon::current_num_threads);
            writeln!(err, "devices: CPU, {threads} threads; CUDA GPUs: {gpus}")?;
            Ok(())
        }
        [m, rest @ ..] if m == "-" => {
            let det = build(env, err)?;
            let xy = parse_xy(rest)?;
            print_ice_table(&det, xy, out)
        }
        [m] if m == "=" => {
            let det = build(env, err)?;
            let mut number = 0;
            while let Some(line) = read_line(stdin, number + 1)? {
                number += 1;
                ctl.check().map_err(EngineError::from)?;
                let v: Vec<f64> = line.split_whitespace().filter_map(|t| t.parse().ok()).collect();
                if v.len() == 3 {
                    let s = det.medium.tilt.zshift(v[0], v[1], v[2]);
                    writeln!(out, "{line} {s} {}", det.medium.dh)?;
                }
            }
            Ok(())
        }
        [gpu] => {
            let seed = env.seed.unwrap_or(parse_u64(gpu, "gpu")?);
            let det = build(env, err)?;
            let text = read_stdin(stdin)?;
            let f2k = parse_f2k(Path::new("<stdin>"), &text, &det.yield_)?;
            let backend = backend(env, gpu, ctl, err)?;
            let sim = simulate(&det, &f2k.specs, seed, &backend, ctl, err)?;
            let t_out = std::time::Instant::now();
            let mut by_event: std::collections::BTreeMap<i32, Vec<u32>> = Default::default();
            for (i, h) in sim.hits.iter().enumerate() {
                by_event.entry(h.event).or_default().push(i as u32);
            }
            for c in &f2k.chunks {
                out.write_all(c.text.as_bytes())?;
                if let Some(hits) = c.event.and_then(|e| by_event.get(&e)) {
                    write_hit_lines(out, &sim.hits, hits, det.sensors.is_some(), ctl)?;
                }
            }
            out.flush()?;
            writeln!(err, "output: {:.2} s", t_out.elapsed().as_secs_f64())?;
            Ok(())
        }
        [s, om, num, gpu] => {
            let string = parse_u64_signed(s, "str")?;
            let om = parse_u64_signed(om, "om")?;
            let num = parse_count(num)?;
            let seed = env.seed.unwrap_or(parse_u64(gpu, "gpu")?);
            let det = build(env, err)?;
            let specs = flasher(&det, string, om, num, &env.flasher)?;
            let backend = backend(env, gpu, ctl, err)?;
            let sim = simulate(&det, &specs, seed, &backend, ctl, err)?;
            let order: Vec<u32> = (0..sim.hits.len() as u32).collect();
            write_hit_lines(out, &sim.hits, &order, det.sensors.is_some(), ctl)?;
            Ok(())
        }
        _ => Err(PpcError::Usage(USAGE.into())),
    }
}

/// The HIT lines of `hits[order[…]]` to `out` in that order, formatted a window at a time on
/// `ctl`'s threads (crate::hits::hit_lines).
fn write_hit_lines(out: &mut dyn Write, hits: &[crate::hits::Hit], order: &[u32], with_pmt: bool, ctl: &Control) -> Result<(), PpcError> {
    for window in order.chunks(HIT_LINE_WINDOW) {
        for text in ctl.install(|| hit_lines(hits, window, with_pmt))? {
            out.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

/// PPC's `<gpu>` argument names the device: cuda:<gpu> when the driver, a GPU and NVRTC are
/// there (unless WARPDRIVE_DEVICE=cpu), else the CPU. The seed does not depend on the device.
fn backend(env: &PpcEnv, gpu: &str, ctl: &Control, err: &mut dyn Write) -> Result<crate::Backend, PpcError> {
    use warpdrive_core::cuda;
    let usable = match env.device.as_deref() {
        Some("cpu") => Err("WARPDRIVE_DEVICE=cpu".to_string()),
        _ => cuda::usable_devices(),
    };
    if let Ok(n) = usable {
        let ordinal = gpu.parse::<usize>().unwrap_or(0) % n;
        writeln!(err, "device: cuda:{ordinal}")?;
        Ok(crate::Backend::Cuda(crate::gpu::GpuOptions {
            devices: vec![ordinal],
            precise: env.precise || ctl.precise,
            ..Default::default()
        }))
    } else {
        let why = usable.err().unwrap_or_default();
        let threads = ctl.threads.unwrap_or_else(rayon::current_num_threads);
        let precise = env.precise || ctl.precise;
        let mode = if precise { "precise" } else { "fast mode" };
        writeln!(err, "device: cpu, {threads} threads, {mode} ({why})")?;
        Ok(crate::Backend::Cpu { precise })
    }
}

fn build(env: &PpcEnv, err: &mut dyn Write) -> Result<Detector, PpcError> {
    if env.detector.ice_dir.is_none() {
        return Err(PpcError::Usage("PPCTABLESDIR is not set: point it at a PPC ice directory".into()));
    }
    let det = Detector::build(&env.detector)?;
    for d in &det.description {
        writeln!(err, "{d}")?;
    }
    for u in &det.unsupported {
        writeln!(err, "warning: {u}")?;
    }
    Ok(det)
}

fn parse_u64(s: &str, field: &str) -> Result<u64, PpcError> {
    s.parse()
        .map_err(|_| PpcError::Input(InputError::file("<command line>", format!("'{s}' is not a non-negative integer")).field(field)))
}

fn parse_u64_signed(s: &str, field: &str) -> Result<i32, PpcError> {
    s.parse()
        .map_err(|_| PpcError::Input(InputError::file("<command line>", format!("'{s}' is not an integer")).field(field)))
}

/// `num` or `x*y` (x photons y times).
fn parse_count(s: &str) -> Result<f64, PpcError> {
    let bad = || PpcError::Input(InputError::file("<command line>", format!("'{s}' is not a photon count (N or x*y)")).field("num"));
    let mut total = 1.0;
    for part in s.split('*') {
        let v: f64 = part.parse().map_err(|_| bad())?;
        if !(v.is_finite() && v > 0.0) {
            return Err(bad());
        }
        total *= v;
    }
    Ok(total)
}

fn parse_xy(rest: &[String]) -> Result<[f64; 2], PpcError> {
    match rest {
        [] => Ok([0.0, 0.0]),
        [x, y] => {
            let p = |s: &String, f: &str| {
                s.parse::<f64>()
                    .map_err(|_| PpcError::Input(InputError::file("<command line>", format!("'{s}' is not a number")).field(f)))
            };
            Ok([p(x, "x")?, p(y, "y")?])
        }
        _ => Err(PpcError::Usage(USAGE.into())),
    }
}

/// `ppc - [x y]`: z, absorption, effective scattering b_e = sca·(1 − g) per layer at the
/// middle wavelength slice (or WFLA), tilt-shifted at (x, y).
fn print_ice_table(det: &Detector, xy: [f64; 2], out: &mut dyn Write) -> Result<(), PpcError> {
    let m = &det.medium;
    let w = m.slices.len() / 2;
    writeln!(
        out,
        "# wavelength {} nm at x={} y={}: z[m] abs[1/m] b_e[1/m]",
        m.slices[w].wavelength, xy[0], xy[1]
    )?;
    for j in (0..m.n_layers).rev() {
        let z = f64::from(m.hmin) + j as f64 * f64::from(m.dh);
        let z = z + m.tilt.zshift(xy[0], xy[1], z);
        let k = w * m.n_layers + j;
        writeln!(out, "{z:.2} {:.6} {:.6}", m.abs[k], m.sca[k] * (1.0 - m.g))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_parsing_and_unsupported_report() {
        let vars = [
            ("PPCTABLESDIR", "/x"),
            ("WFLA", "405"),
            ("OVSZ", "3"),
            ("FLDR", "370"),
            ("OFLA", "0"),
            ("BFRA", "0.5"),
            ("VTHK", "1"),
        ];
        let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_string());
        let e = PpcEnv::from_env(get).unwrap();
        assert_eq!(e.detector.ice_dir, Some(PathBuf::from("/x")));
        assert_eq!(e.detector.wavelength, Some(405.0));
        assert_eq!(e.detector.oversize, Some(3));
        assert_eq!(e.flasher.fldr, 370.0);
        assert!(e.flasher.own_dom_records);
        assert_eq!(e.detector.bfr_scales, [0.5, 1.0]);
        assert_eq!(e.ignored, vec!["VTHK".to_string()]);
        let bad = |k: &str| (k == "WFLA").then(|| "blue".to_string());
        assert!(PpcEnv::from_env(bad).unwrap_err().to_string().contains("field 'WFLA'"));
    }

    #[test]
    fn counts_and_usage() {
        assert_eq!(parse_count("1e3*4").unwrap(), 4000.0);
        assert!(parse_count("0").is_err());
        let env = PpcEnv::default();
        let args: Vec<String> = vec!["1".into(), "2".into()];
        let (mut o, mut e) = (Vec::new(), Vec::new());
        assert!(matches!(
            run(&args, &env, &mut std::io::empty(), &mut o, &mut e, &Control::new()),
            Err(PpcError::Usage(_))
        ));
    }

    /// Standard input goes through the input bounds: a NUL byte (`/dev/zero`) stops the read at
    /// once, and the `=` mode reads lines of bounded length.
    #[test]
    fn stdin_is_bounded() {
        let e = read_stdin(&mut &b"TR 1 0 e 0 0 0 180 0 0 10 0\n\0\0"[..]).unwrap_err().to_string();
        assert_eq!(e, "<stdin>: binary data, not text (a NUL byte at offset 28)");
        assert_eq!(read_stdin(&mut &b"\xEF\xBB\xBFEM 1\n"[..]).unwrap(), "EM 1\n");
        let mut zeros = std::io::BufReader::new(std::io::repeat(0).take(1 << 30));
        let e = read_line(&mut zeros, 1).unwrap_err().to_string();
        assert!(e.contains("<stdin>:1: longer than 65536 bytes"), "{e}");
        let mut two = &b"1 2 3\n4 5 6"[..];
        assert_eq!(read_line(&mut two, 1).unwrap().as_deref(), Some("1 2 3"));
        assert_eq!(read_line(&mut two, 2).unwrap().as_deref(), Some("4 5 6"));
        assert_eq!(read_line(&mut two, 3).unwrap(), None);
    }

    /// A raised token stops the propagation: nothing is written to stdout.
    #[test]
    fn cancelled_run_writes_nothing() {
        let dir = crate::test_data::data_dir().join("ice/spice_3.2.1");
        let env = PpcEnv::from_env(|k| match k {
            "PPCTABLESDIR" => Some(dir.display().to_string()),
            "WARPDRIVE_DEVICE" => Some("cpu".to_string()),
            _ => None,
        })
        .unwrap();
        let ctl = Control::new();
        ctl.cancel.cancel();
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let r = run(
            &["0".to_string()],
            &env,
            &mut &b"TR 1 0 e 0 0 -400 180 0 0 1e6 0\n"[..],
            &mut o,
            &mut e,
            &ctl,
        );
        assert!(matches!(r, Err(PpcError::Engine(EngineError::Cancelled(_)))), "{r:?}");
        assert!(o.is_empty());
    }
}
