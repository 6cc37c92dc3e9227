//! Issue #36 item 7: the memory of an expanded lattice is budgeted per element before it is
//! built. This test measures what parsing and compiling a long line really allocates (a
//! counting global allocator, peak bytes) and checks that the per-element estimate the budget
//! uses, `lattice::bytes_per_element`, is an upper bound for every element kind — so a budget
//! that says "fits" is not a promise the run then breaks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use warpdrive_beam::lattice::{bytes_per_element, parse};
use warpdrive_beam::program::Program;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Peak bytes allocated beyond what was live before, while `f` runs (its result kept alive).
fn peak_of<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    (PEAK.load(Ordering::SeqCst) - base, out)
}

#[test]
fn per_element_estimate_bounds_parse_and_compile() {
    // Just above a power of two: vectors grown by doubling are then at their emptiest.
    for n in [16_385, 20_000] {
        check_kinds(n);
    }
}

fn check_kinds(n: usize) {
    // Every element kind, with names of different lengths (the estimate adds three copies of
    // the longest name).
    let kinds = [
        "D: DRIF, L=0.5",
        "ED: EDRIFT, L=0.5",
        "QUADRUPOLE_WITH_A_LONG_NAME: QUAD, L=0.2, K1=1.5, TILT=0.1",
        "S: SEXT, L=0.2, K2=3",
        "M: MARK",
        "W: WATCH, FILENAME=\"%s-w.sdds\"",
        "LS: LSCDRIFT, L=0.5, BINS=64",
        "C: CHARGE, TOTAL=1e-9",
    ];
    for def in kinds {
        let name = def.split(':').next().unwrap();
        let text = format!("{def}\nL: LINE=({n}*{name})\n");
        let (peak, (lattice, program)) = peak_of(|| {
            let lattice = parse(&text, "a/rather/long/path/to/the/lattice/file.lte", None).unwrap();
            let program = Program::compile(&lattice);
            (lattice, program)
        });
        assert_eq!(lattice.elements.len(), n);
        let per = peak as f64 / n as f64;
        let longest = name.len().max(if def.contains('"') { 9 } else { 0 });
        let bound = bytes_per_element(longest) as f64;
        eprintln!("{name}, {n} elements: {per:.0} bytes per element measured, {bound} assumed");
        assert!(
            per <= bound,
            "{name}: {per:.0} bytes per element measured, the budget assumes {bound}"
        );
        drop(program);
    }
}
