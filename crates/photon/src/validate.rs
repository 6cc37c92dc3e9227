//! Statistical comparison of two hit sets (spec §6): total hits against a reference's
//! run-to-run spread, per-DOM Poisson χ² over the brightest DOMs, unbinned KS on arrival times
//! at the brightest DOMs. Used by the PPC validation test and by `warpdrive gpu-check`.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use warpdrive_core::stats::{ks_two_sample, mean_std, poisson_chi2, TestResult};

/// (string, om).
pub type DomKey = (i32, i32);
/// A hit reduced to what the comparison needs: module and arrival time [ns].
pub type TimedHit = (DomKey, f64);

/// Read the `HIT` lines of a PPC output (plain or .gz).
pub fn read_hit_lines(path: &Path) -> std::io::Result<Vec<TimedHit>> {
    let mut text = String::new();
    let f = std::fs::File::open(path)?;
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(f).read_to_string(&mut text)?;
    } else {
        std::io::BufReader::new(f).read_to_string(&mut text)?;
    }
    let mut out = Vec::new();
    for l in text.lines().filter(|l| l.starts_with("HIT ")) {
        let t: Vec<&str> = l.split_whitespace().collect();
        let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: bad HIT line '{l}'", path.display()));
        let s = t.get(1).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        let om = t.get(2).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        let time = t.get(3).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        out.push(((s, om), time));
    }
    Ok(out)
}

/// The PPC reference runs of the 10 TeV cascade at (0, 0, −400) in spice_3.2.1 under
/// `data/reference`: four CPU-build runs and one H100 run (independent realisations).
pub fn ppc_reference_runs(data: &Path) -> std::io::Result<Vec<Vec<TimedHit>>> {
    let refdir = data.join("reference");
    let mut files: Vec<std::path::PathBuf> = (1..=4)
        .map(|i| refdir.join(format!("ppc_cpu_cascade_10TeV_spice_3.2.1/run_{i}.hits.gz")))
        .collect();
    files.push(refdir.join("ppc_h100_2026/ppc_cascade_10TeV_spice_3.2.1.hits.gz"));
    files.iter().map(|f| read_hit_lines(f)).collect()
}

/// PPC's eight H100 runs of the same 10 TeV cascade in a birefringent model (`spice_bfr-v2` or
/// `spice_ftp-v3m`), data/reference/ppc_bfr_h100_2026 (README there), or its four flasher runs
/// (`kind` = "e10", "fla" for `ppc 63 20 1e8 0`, "fla405" with WFLA=405).
pub fn ppc_bfr_reference_runs(data: &Path, model: &str, kind: &str) -> std::io::Result<Vec<Vec<TimedHit>>> {
    let dir = data.join("reference/ppc_bfr_h100_2026");
    let n = if kind == "e10" { 8 } else { 4 };
    (1..=n)
        .map(|i| read_hit_lines(&dir.join(format!("{model}_{kind}_{i}.hits.gz"))))
        .collect()
}

/// Accepted hits as (DOM, time) pairs, the form `compare` takes.
#[must_use]
pub fn timed_hits(hits: &[crate::hits::Hit]) -> Vec<TimedHit> {
    hits.iter().map(|h| ((h.string, h.om), f64::from(h.time))).collect()
}

/// PPC's flasher `ppc 63 20 4e8 <gpu>` (four of PPC's 1e8-photon runs' worth) in `model`, with
/// `WFLA` if given, `WARPDRIVE_DEVICE` = `device` if given and `WARPDRIVE_SEED` = `seed`, through
/// warpdrive's PPC front end, against PPC's four H100 runs of `kind` ("fla", "fla405") with
/// [`flasher_total_agrees`]. The CPU test (tests/ppc_reference.rs) and the device check
/// (`gpu_check::check_flashers`) both run it.
pub fn ppc_flasher_vs_reference(
    data: &Path,
    model: &str,
    kind: &str,
    wfla: Option<&str>,
    device: Option<&str>,
    gpu: &str,
    seed: u64,
) -> Result<(bool, String), String> {
    let runs = ppc_bfr_reference_runs(data, model, kind).map_err(|e| format!("{model} {kind}: {e}"))?;
    let ice = data.join("ice").join(model).display().to_string();
    let get = |k: &str| match k {
        "PPCTABLESDIR" => Some(ice.clone()),
        "WARPDRIVE_DEVICE" => device.map(str::to_string),
        "WARPDRIVE_SEED" => Some(seed.to_string()),
        "WFLA" => wfla.map(str::to_string),
        _ => None,
    };
    let env = crate::ppc::PpcEnv::from_env(get).map_err(|e| e.to_string())?;
    let args: Vec<String> = ["63", "20", "4e8", gpu].iter().map(|s| (*s).to_string()).collect();
    let (mut text, mut err) = (Vec::new(), Vec::new());
    let ctl = warpdrive_core::engine::Control::new();
    crate::ppc::run(&args, &env, &mut std::io::empty(), &mut text, &mut err, &ctl).map_err(|e| e.to_string())?;
    let lines = String::from_utf8_lossy(&text).lines().filter(|l| l.starts_with("HIT ")).count() as f64;
    Ok(flasher_total_agrees(&runs, lines, 4.0))
}

/// Issue #14's flasher criterion: our HIT lines for `factor` times the photons of one of PPC's
/// runs, scaled to one run (`ours / factor`), within 3 σ_run·√(1/factor + 1/n) + 3 % of the mean
/// of PPC's n runs; σ_run is PPC's run-to-run σ, at least the Poisson √mean (flasher hits are
/// over-dispersed: tests/ppc_reference.rs). Returns (passed, a one-line report).
pub fn flasher_total_agrees(runs: &[Vec<TimedHit>], ours: f64, factor: f64) -> (bool, String) {
    let totals: Vec<f64> = runs.iter().map(|r| r.len() as f64).collect();
    let n = totals.len() as f64;
    let mean = totals.iter().sum::<f64>() / n;
    let sd = (totals.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let per_run = ours / factor;
    let tol = 3.0 * sd.max(mean.sqrt()) * (1.0 / factor + 1.0 / n).sqrt() + 0.03 * mean;
    (
        (per_run - mean).abs() <= tol,
        format!("{per_run:.1} HIT lines per PPC run vs PPC {mean:.1} (run σ {sd:.1}; tolerance ±{tol:.0})"),
    )
}

/// The outcome of comparing one hit set with reference runs.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub hits: usize,
    pub reference_totals: Vec<f64>,
    pub reference_mean: f64,
    pub reference_sd: f64,
    /// Allowed |hits − mean|: n_sigma·sd + `rel`·mean.
    pub total_tolerance: f64,
    pub per_dom: TestResult,
    /// (DOM, ours, reference per run) for the brightest DOMs.
    pub brightest: Vec<(DomKey, f64, f64)>,
    /// KS of arrival times at the brightest DOMs.
    pub times: Vec<(DomKey, TestResult)>,
}

impl Comparison {
    /// All criteria met at significance `alpha` (p-values must exceed it).
    pub fn passes(&self, alpha: f64) -> bool {
        (self.hits as f64 - self.reference_mean).abs() <= self.total_tolerance
            && self.per_dom.p_value > alpha
            && self.times.iter().all(|(_, t)| t.p_value > alpha)
    }

    pub fn report(&self) -> String {
        let mut s = format!(
            "hits {} vs reference {:.0} (s.d. {:.0}, tolerance ±{:.0}); per-DOM χ² {:.1}/{} p = {:.3}\n",
            self.hits,
            self.reference_mean,
            self.reference_sd,
            self.total_tolerance,
            self.per_dom.statistic,
            self.per_dom.dof,
            self.per_dom.p_value
        );
        for (k, t) in &self.times {
            s += &format!(
                "  arrival times DOM {}-{}: KS D = {:.4}, p = {:.3}\n",
                k.0, k.1, t.statistic, t.p_value
            );
        }
        s
    }
}

fn counts(hits: &[TimedHit]) -> HashMap<DomKey, f64> {
    let mut c = HashMap::new();
    for (k, _) in hits {
        *c.entry(*k).or_insert(0.0) += 1.0;
    }
    c
}

/// Compare `ours` with reference runs: totals (tolerance n_sigma·sd + rel·mean; with a single
/// reference run its Poisson σ is used as sd), per-DOM χ² over the `n_doms` brightest DOMs of the
/// pooled reference, KS on arrival times at the `n_times` brightest.
pub fn compare(ours: &[TimedHit], reference: &[Vec<TimedHit>], n_sigma: f64, rel: f64, n_doms: usize, n_times: usize) -> Comparison {
    let totals: Vec<f64> = reference.iter().map(|r| r.len() as f64).collect();
    let (mean, mut sd) = mean_std(&totals);
    if reference.len() == 1 {
        sd = mean.sqrt();
    }
    let pooled: Vec<TimedHit> = reference.concat();
    let pc = counts(&pooled);
    let oc = counts(ours);
    let mut doms: Vec<(DomKey, f64)> = pc.iter().map(|(k, v)| (*k, *v)).collect();
    doms.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let top: Vec<DomKey> = doms.iter().take(n_doms).map(|d| d.0).collect();
    let a: Vec<f64> = top.iter().map(|k| oc.get(k).copied().unwrap_or(0.0)).collect();
    let b: Vec<f64> = top.iter().map(|k| pc[k]).collect();
    let per_dom = poisson_chi2(&a, 1.0, &b, reference.len() as f64);
    let brightest = top
        .iter()
        .zip(a.iter().zip(&b))
        .map(|(k, (x, y))| (*k, *x, y / reference.len() as f64))
        .collect();
    let times = top
        .iter()
        .take(n_times)
        .map(|k| {
            let t_ours: Vec<f64> = ours.iter().filter(|(d, _)| d == k).map(|(_, t)| *t).collect();
            let t_ref: Vec<f64> = pooled.iter().filter(|(d, _)| d == k).map(|(_, t)| *t).collect();
            let t = if t_ours.is_empty() {
                TestResult {
                    statistic: 1.0,
                    dof: 0.0,
                    p_value: 0.0,
                }
            } else {
                ks_two_sample(&t_ours, &t_ref)
            };
            (*k, t)
        })
        .collect();
    Comparison {
        hits: ours.len(),
        reference_totals: totals,
        reference_mean: mean,
        reference_sd: sd,
        total_tolerance: n_sigma * sd + rel * mean,
        per_dom,
        brightest,
        times,
    }
}
