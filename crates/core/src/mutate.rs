//! Mutations of valid input files for the parsers' property tests (DESIGN.md §6: bad input never
//! panics, aborts or hangs). A test draws a list of [`Mutation`]s (with proptest or any other
//! generator), applies them to a valid file with [`apply`], and runs the parser under
//! [`within`], which turns a panic or a hang into a test failure that names the input.

use std::time::Duration;

/// One edit of a file. Positions are taken modulo the current length, so any `usize` is valid.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// Replace the byte at `pos` by `byte`.
    Byte { pos: usize, byte: u8 },
    /// Cut the file at `pos`.
    Truncate { pos: usize },
    /// Duplicate the line that contains `pos`.
    DuplicateLine { pos: usize },
    /// Remove the line that contains `pos`.
    RemoveLine { pos: usize },
    /// Replace the number nearest after `pos` by one of [`NASTY_NUMBERS`] (index taken modulo).
    Number { pos: usize, which: usize },
}

/// Values that break naive parsers: huge, tiny, negative, not finite, integer overflow.
pub const NASTY_NUMBERS: [&str; 14] = [
    "1e30",
    "-1e30",
    "1e308",
    "1e-320",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "0",
    "-1",
    "18446744073709551617",
    "-9223372036854775809",
    "1000000000000",
    "",
];

fn line_bounds(b: &[u8], pos: usize) -> (usize, usize) {
    let start = b[..pos].iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    let end = b[pos..].iter().position(|&c| c == b'\n').map_or(b.len(), |i| pos + i + 1);
    (start, end)
}

/// Apply `mutations` in order to `input`.
pub fn apply(input: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut b = input.to_vec();
    for m in mutations {
        if b.is_empty() {
            break;
        }
        match *m {
            Mutation::Byte { pos, byte } => {
                let p = pos % b.len();
                b[p] = byte;
            }
            Mutation::Truncate { pos } => b.truncate(pos % b.len()),
            Mutation::DuplicateLine { pos } => {
                let (s, e) = line_bounds(&b, pos % b.len());
                let line = b[s..e].to_vec();
                b.splice(e..e, line);
            }
            Mutation::RemoveLine { pos } => {
                let (s, e) = line_bounds(&b, pos % b.len());
                b.drain(s..e);
            }
            Mutation::Number { pos, which } => {
                let p = pos % b.len();
                let Some(start) = b[p..].iter().position(u8::is_ascii_digit).map(|i| p + i) else {
                    continue;
                };
                let start = if start > 0 && (b[start - 1] == b'-' || b[start - 1] == b'.') {
                    start - 1
                } else {
                    start
                };
                let end = b[start..]
                    .iter()
                    .position(|c| !(c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'-' | b'+')))
                    .map_or(b.len(), |i| start + i);
                let with = NASTY_NUMBERS[which % NASTY_NUMBERS.len()].as_bytes().to_vec();
                b.splice(start..end, with);
            }
        }
    }
    b
}

/// Run `f` on a thread and wait at most `limit`: a panic or a time-out is an `Err` that says
/// which, so a property test can fail with the mutated input instead of crashing or hanging.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(p)) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
        Err(_) => Err(format!("did not finish within {limit:?} (hang?)")),
    }
}

/// The proptest strategy for up to `max` mutations (feature `proptest`, for the domain crates'
/// property tests).
#[cfg(feature = "proptest")]
pub fn strategy(max: usize) -> impl proptest::strategy::Strategy<Value = Vec<Mutation>> {
    use proptest::prelude::*;
    let one = prop_oneof![
        3 => (any::<usize>(), any::<u8>()).prop_map(|(pos, byte)| Mutation::Byte { pos, byte }),
        1 => any::<usize>().prop_map(|pos| Mutation::Truncate { pos }),
        1 => any::<usize>().prop_map(|pos| Mutation::DuplicateLine { pos }),
        1 => any::<usize>().prop_map(|pos| Mutation::RemoveLine { pos }),
        4 => (any::<usize>(), any::<usize>()).prop_map(|(pos, which)| Mutation::Number { pos, which }),
    ];
    proptest::collection::vec(one, 1..=max)
}

/// A proptest configuration with a fixed seed, `cases` cases and no failure files, so every run
/// tests the same inputs (statistical tests here use fixed seeds).
#[cfg(feature = "proptest")]
pub fn config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_f00d),
        max_shrink_iters: 64,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_do_what_they_say() {
        let t = b"a 1\nb 2.5\nc -3\n";
        assert_eq!(apply(t, &[Mutation::Truncate { pos: 4 }]), b"a 1\n");
        assert_eq!(apply(t, &[Mutation::RemoveLine { pos: 5 }]), b"a 1\nc -3\n");
        assert_eq!(apply(t, &[Mutation::DuplicateLine { pos: 0 }]), b"a 1\na 1\nb 2.5\nc -3\n");
        assert_eq!(apply(t, &[Mutation::Number { pos: 4, which: 0 }]), b"a 1\nb 1e30\nc -3\n");
        assert_eq!(apply(t, &[Mutation::Number { pos: 10, which: 4 }]), b"a 1\nb 2.5\nc nan\n");
        assert_eq!(apply(t, &[Mutation::Byte { pos: 0, byte: b'z' }])[0], b'z');
    }

    #[test]
    fn within_reports_panics_and_hangs() {
        assert_eq!(within(Duration::from_secs(5), || 3), Ok(3));
        assert!(within(Duration::from_secs(5), || panic!("boom")).unwrap_err().contains("boom"));
        let e = within(Duration::from_millis(50), || std::thread::sleep(Duration::from_secs(2))).unwrap_err();
        assert!(e.contains("did not finish"));
    }
}
