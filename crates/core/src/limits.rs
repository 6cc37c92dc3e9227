//! Resource guards (DESIGN.md §6): every size that comes from input is checked against the
//! memory this process may use before it is allocated, so a mistyped `--particles 1e12` is a
//! clear error naming the option, not `memory allocation of … bytes failed` (abort, exit 134).
//!
//! The budget is `WARPDRIVE_MAX_MEMORY` (bytes, or with a K/M/G/T suffix) when set, else the
//! smaller of the kernel's `MemAvailable` and the cgroup limit, less nothing: an allocation
//! larger than that cannot succeed, and one close to it would push the machine into swap.

/// Why a requested size was refused.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{what}: {count} × {bytes_each} bytes = {need} would not fit in the memory available ({budget}); {advice}")]
pub struct LimitError {
    pub what: String,
    pub count: u64,
    pub bytes_each: u64,
    pub need: String,
    pub budget: String,
    pub advice: String,
}

impl LimitError {
    /// The message with `what` spelled as the front end spells parameters when it is one (a
    /// bare snake_case name such as `synthetic_events`; other texts name files or fields).
    /// Parameters named in the advice as `{snake_name}` are spelled the same way (`use fewer
    /// repetitions and more passes ({passes})` reads `(--passes)` on the command line).
    pub fn render(&self, style: crate::engine::Style) -> String {
        let is_param = !self.what.is_empty() && self.what.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        let mut e = self.clone();
        if is_param {
            e.what = style.name(&self.what);
        }
        if self.advice.contains('{') {
            // The advice as a ParamError text after a dummy name, with that name cut off again.
            let rendered = crate::engine::ParamError::new("x", format!(",{}", self.advice)).render(style);
            e.advice = rendered[style.name("x").len() + 1..].to_string();
        }
        e.to_string()
    }
}

/// Bytes in a human unit (GiB with three digits).
pub fn human(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.3} {}", UNITS[u])
    }
}

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()?.to_ascii_uppercase() {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        'T' => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some((v * mult as f64) as u64)
}

fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn cgroup_limit() -> Option<u64> {
    for p in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
        if let Ok(t) = std::fs::read_to_string(p) {
            if let Ok(v) = t.trim().parse::<u64>() {
                if v < (1 << 60) {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// The memory budget of this process in bytes (see the module documentation).
pub fn memory_budget() -> u64 {
    if let Some(v) = std::env::var("WARPDRIVE_MAX_MEMORY").ok().as_deref().and_then(parse_size) {
        return v;
    }
    let avail = meminfo_available().unwrap_or(u64::MAX);
    avail.min(cgroup_limit().unwrap_or(u64::MAX))
}

/// Check that `count` items of `bytes_each` bytes fit in the budget. `what` names the input the
/// count comes from (an option or a file and field); `advice` says what to do instead.
pub fn check_alloc(what: &str, count: u64, bytes_each: u64, advice: &str) -> Result<(), LimitError> {
    check_alloc_beside(what, count, bytes_each, 0, advice)
}

/// [`check_alloc`] for an allocation made beside `already` bytes the same run holds (a beam's
/// working set beside its watch records): the message says how much the rest of the run takes.
pub fn check_alloc_beside(what: &str, count: u64, bytes_each: u64, already: u64, advice: &str) -> Result<(), LimitError> {
    let need = count.checked_mul(bytes_each);
    let budget = memory_budget();
    match need.and_then(|n| n.checked_add(already)) {
        Some(n) if n <= budget => Ok(()),
        _ => Err(LimitError {
            what: what.to_string(),
            count,
            bytes_each,
            need: need.map_or_else(|| "more than 16 EiB".to_string(), |n| human(n as f64)),
            budget: human(budget as f64)
                + &if already > 0 {
                    format!(", less {} for the rest of the run", human(already as f64))
                } else {
                    String::new()
                },
            advice: advice.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_checks() {
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("1500"), Some(1500));
        assert_eq!(parse_size("x"), None);
        assert_eq!(human(1536.0), "1.500 KiB");
        assert!(check_alloc("--n", 10, 8, "").is_ok());
        let e = check_alloc("--tally-bins", 1_000_000_000_000, 8, "use fewer bins")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--tally-bins: 1000000000000 × 8 bytes = 7.276 TiB"), "{e}");
        assert!(check_alloc("--n", u64::MAX, 8, "").unwrap_err().to_string().contains("16 EiB"));
        // Parameters in the advice are spelled as the front end spells them.
        let mut e = check_alloc("watch", u64::MAX, 8, "turn them off ({watch}=off) or use {watch_every}").unwrap_err();
        e.budget = "1 B".into();
        assert!(e
            .render(crate::engine::Style::Cli)
            .ends_with("(1 B); turn them off (--watch=off) or use --watch-every"));
        assert!(e
            .render(crate::engine::Style::Python)
            .starts_with("watch: 18446744073709551615 × 8"));
        assert!(e
            .render(crate::engine::Style::Python)
            .ends_with("turn them off (watch=off) or use watch_every"));
    }
}
