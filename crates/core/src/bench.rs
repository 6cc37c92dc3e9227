//! What every domain's benchmark shares (`warpdrive bench <domain>`, DESIGN.md §8): the
//! thread-count sweep, the device a benchmark times, timing on a pool of a given size, and the
//! JSON report, written whole into an output staged before the work.
//!
//! A domain's `bench` module holds its benchmark as a library call —
//! `run(&BenchOptions, &Control, lines) -> BenchReport` — with the options checked there
//! ([`crate::engine::ParamError`]); the front end translates its arguments, prints the lines as
//! they come and saves the report.

use crate::engine::{Control, Device, ParamError, Result, MAX_THREADS};
use crate::output::Staged;
use std::time::Instant;

/// Where a benchmark's table lines go as they are measured (the CLI prints them on stdout).
pub type Lines<'a> = &'a mut dyn FnMut(&str);

/// The thread counts a CPU benchmark times: those asked for, each at least 1 and at most
/// [`MAX_THREADS`], or (none asked for) one thread and all cores.
pub fn thread_counts(asked: &[usize]) -> Result<Vec<usize>, ParamError> {
    if asked.contains(&0) {
        return Err(ParamError::new("threads", ": every thread count must be at least 1"));
    }
    if let Some(n) = asked.iter().find(|&&n| n > MAX_THREADS) {
        return Err(ParamError::new("threads", format!("{n}: at most {MAX_THREADS}")));
    }
    if !asked.is_empty() {
        return Ok(asked.to_vec());
    }
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(if all > 1 { vec![1, all] } else { vec![1] })
}

/// The GPUs a benchmark times, `None` for the CPU: `auto` is the first GPU when the driver, a
/// GPU and NVRTC are there (a benchmark times one device unless asked for more), else the CPU
/// with a note saying why; `cuda:N` that GPU; `cuda:all` every visible GPU.
pub fn gpus(ctl: &Control) -> Result<Option<Vec<usize>>> {
    match ctl.device {
        Device::Auto => Ok(ctl.gpus()?.map(|all| all.into_iter().take(1).collect())),
        _ => ctl.gpus(),
    }
}

/// Run `work` on a pool of `threads` workers (the run's token and notes kept) and time it:
/// (its result, seconds of wall-clock time).
pub fn timed<R: Send>(ctl: &Control, threads: usize, work: impl FnOnce() -> R + Send) -> Result<(R, f64)> {
    ctl.check()?;
    ctl.clone().threads(Some(threads)).install(|| {
        let t0 = Instant::now();
        let r = work();
        (r, t0.elapsed().as_secs_f64())
    })
}

/// Minor page faults of this process so far (`getrusage`): a call's count is the difference
/// around it. A fresh result of n doubles faults about n/512 pages when first written; on a
/// virtual machine a page the guest never touched before costs the host a fault of its own as
/// well (docs/performance/spline.md, the first table's two-thread calls).
pub fn minor_faults() -> u64 {
    rusage().map_or(0, |ru| ru.ru_minflt as u64)
}

/// CPU seconds (user + system) of all this process's threads so far (`getrusage`): around a
/// call on a pool of n workers, CPU seconds over wall seconds is how many of them ran at once —
/// ≈ n when each had a core of its own, ≈ 1 when they took turns on one.
pub fn cpu_seconds() -> f64 {
    let s = |t: libc::timeval| t.tv_sec as f64 + 1e-6 * t.tv_usec as f64;
    rusage().map_or(0.0, |ru| s(ru.ru_utime) + s(ru.ru_stime))
}

fn rusage() -> Option<libc::rusage> {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    (unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0).then_some(ru)
}

/// Fastest of `repeats` timings of `work` on a pool of `threads`, after one untimed call (the
/// first call pays for page faults of fresh output buffers and cold caches, which on a VM moved a
/// one-thread rate by up to 2x between otherwise identical calls).
pub fn fastest<R: Send>(ctl: &Control, threads: usize, repeats: usize, work: impl Fn() -> R + Send + Sync) -> Result<f64> {
    let (r, _) = timed(ctl, threads, &work)?;
    std::hint::black_box(r);
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let (r, s) = timed(ctl, threads, &work)?;
        std::hint::black_box(r);
        best = best.min(s);
    }
    Ok(best)
}

/// Two timings taken in alternation, pair by pair: the comparison of two codes (or of one code on
/// two thread counts) on a machine whose speed drifts. On the 2-core VM and on the GPU host one
/// core's rate for the same single-threaded work moved by up to 2x in phases lasting seconds
/// (docs/performance/spline.md); two sides timed one after the other, or each side's fastest of a
/// few rounds, then differ by that much. The two calls of a pair are adjacent in time, so a pair's
/// ratio sees the same phase on both sides, and the median over the pairs is robust to the pairs
/// that straddle a change of phase.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Paired {
    /// Seconds of side A's call in each pair.
    pub a: Vec<f64>,
    /// Seconds of side B's call in each pair.
    pub b: Vec<f64>,
}

impl Paired {
    /// The per-pair ratios a_i / b_i, sorted (how many times faster B was than A in each pair).
    pub fn ratios(&self) -> Vec<f64> {
        let mut r: Vec<f64> = self.a.iter().zip(&self.b).map(|(a, b)| a / b).collect();
        r.sort_by(f64::total_cmp);
        r
    }

    /// The median of the per-pair ratios a_i / b_i.
    pub fn median_ratio(&self) -> f64 {
        median_sorted(&self.ratios())
    }

    /// The median seconds of side A's calls.
    pub fn median_a(&self) -> f64 {
        median(&self.a)
    }

    /// The median seconds of side B's calls.
    pub fn median_b(&self) -> f64 {
        median(&self.b)
    }

    /// The smallest and the largest per-pair ratio.
    pub fn ratio_range(&self) -> (f64, f64) {
        let r = self.ratios();
        (r.first().copied().unwrap_or(f64::NAN), r.last().copied().unwrap_or(f64::NAN))
    }
}

fn median_sorted(v: &[f64]) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// Seconds of untimed calls before [`paired`]'s pairs (both sides together; at least one call of
/// each). A pool's newly started worker threads can share their parent's core until the
/// scheduler moves one: on the GPU host the first table's 2-thread calls (8 ms each) ran at
/// 1.1–1.2× one thread in all 11 pairs, right after the pool's first call, and at 1.9–2.0× in every
/// later table of the same process.
pub const WARMUP_S: f64 = 0.25;

/// Time sides `a` and `b` (each closure makes one call and returns its seconds) in `pairs`
/// adjacent pairs after untimed calls of each (alternating, for [`WARMUP_S`] together, at least
/// one each); the order alternates (a b, b a, a b, …) so that neither side always runs second,
/// i.e. in the caches the other left.
pub fn paired(ctl: &Control, pairs: usize, mut a: impl FnMut() -> Result<f64>, mut b: impl FnMut() -> Result<f64>) -> Result<Paired> {
    if pairs == 0 {
        return Err(ParamError::new("pairs", "must be at least 1").into());
    }
    let mut warm = 0.0;
    loop {
        warm += a()? + b()?;
        if warm >= WARMUP_S || warm.is_nan() {
            break;
        }
        ctl.check()?;
    }
    let mut p = Paired::default();
    for i in 0..pairs {
        ctl.check()?;
        let (ta, tb) = if i % 2 == 0 {
            let ta = a()?;
            (ta, b()?)
        } else {
            let tb = b()?;
            (a()?, tb)
        };
        p.a.push(ta);
        p.b.push(tb);
    }
    Ok(p)
}

/// The machine's own scaling from one thread to `threads`, measured as a benchmark's scaling is
/// ([`paired`]): a fixed amount of arithmetic that shares nothing between threads (independent
/// xorshift chains turned into floats, summed per thread), split evenly over `threads` plain OS
/// threads, paired with the same work on one thread. On a machine whose cores are what they say,
/// this is ≈ `threads`; on a virtual machine whose virtual cores share physical ones, or whose
/// host is busy, it is less — and no code's scaling there can be judged against more than it.
pub fn machine_scaling(ctl: &Control, threads: usize, pairs: usize) -> Result<Paired> {
    /// ~0.1 s of work on one core of a current x86-64 machine.
    const STEPS: u64 = 1 << 27;
    let work = |n: usize| -> Result<f64> {
        let t0 = Instant::now();
        let per = STEPS / n as u64;
        let sums: Vec<f64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|k| {
                    s.spawn(move || {
                        // Four independent chains, so that the core's pipelines are busy as in
                        // real work rather than waiting on one dependency.
                        let mut x = [1u64 + k as u64, 7, 13, 29].map(|v| v.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                        let mut acc = [0.0f64; 4];
                        for _ in 0..per / 4 {
                            for (x, a) in x.iter_mut().zip(acc.iter_mut()) {
                                *x ^= *x << 13;
                                *x ^= *x >> 7;
                                *x ^= *x << 17;
                                *a += (*x >> 11) as f64 * 1.0e-16;
                            }
                        }
                        acc.iter().sum::<f64>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(f64::NAN)).collect()
        });
        std::hint::black_box(sums);
        Ok(t0.elapsed().as_secs_f64())
    };
    paired(ctl, pairs, || work(1), || work(threads.max(1)))
}

/// A benchmark's result: the JSON document, laid out as each domain has always written it
/// (docs/performance/*.md cite its fields).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    pub json: String,
}

impl BenchReport {
    /// Write the report into its output, prepared before the work by
    /// [`crate::engine::prepare_file`] (so an unusable location fails before minutes of timing,
    /// and a file that appears at the name meanwhile is not replaced without `force`), and make
    /// it visible.
    pub fn save(&self, out: Staged) -> Result<()> {
        Ok(out.write(self.json.as_bytes())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A phase that halves the machine's speed for some pairs slows both calls of those pairs, so
    /// the median of the per-pair ratios stays the true ratio.
    #[test]
    fn paired_median_ignores_a_slow_phase() {
        let ctl = Control::default();
        // Calls 2k and 2k + 1 are one pair (the first two are the untimed ones: 4 s ≥ WARMUP_S).
        let calls = std::cell::Cell::new(0usize);
        let timed = |cost: f64| {
            let k = calls.get();
            calls.set(k + 1);
            let slow = if (6..11).contains(&(k / 2)) { 2.0 } else { 1.0 };
            Ok(cost * slow)
        };
        let p = paired(&ctl, 15, || timed(3.0), || timed(1.0)).unwrap();
        assert_eq!((p.a.len(), p.b.len()), (15, 15));
        assert_eq!(p.median_ratio(), 3.0, "{:?}", p.ratios());
        assert_eq!(p.ratio_range(), (3.0, 3.0));
        assert_eq!((p.median_a(), p.median_b()), (3.0, 1.0));
        assert!(paired(&ctl, 0, || Ok(1.0), || Ok(1.0)).unwrap_err().to_string().contains("pairs"));
    }

    /// Short calls are repeated untimed until both sides have run WARMUP_S together.
    #[test]
    fn paired_warms_up_short_calls() {
        let ctl = Control::default();
        let calls = std::cell::Cell::new(0usize);
        let call = || {
            calls.set(calls.get() + 1);
            Ok(0.01)
        };
        let p = paired(&ctl, 3, call, call).unwrap();
        // 0.02 s per untimed round: 13 rounds reach 0.26 s ≥ 0.25 s, then 3 pairs.
        assert_eq!(calls.get(), 2 * 13 + 2 * 3);
        assert_eq!(p.a.len(), 3);
    }

    /// The control runs and gives a positive ratio (its size is the machine's, not checked here).
    #[test]
    fn machine_scaling_runs() {
        let p = machine_scaling(&Control::default(), 2, 1).unwrap();
        assert!(p.median_ratio() > 0.0 && p.median_ratio().is_finite());
    }

    #[test]
    fn medians_of_even_and_odd_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
