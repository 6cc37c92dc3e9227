//! One engine, thin skins (DESIGN.md §2, issue #28): the front ends — the CLI's
//! `crates/cli/src/*.rs` and the Python bindings' `crates/python/src/*.rs` — only translate
//! arguments into engine requests and results into outputs. What only an engine may do —
//! validate ranges, budget memory, build thread pools, choose and open devices, stage and write
//! outputs — fails this test when it reappears in a front end, so a check cannot exist in one
//! front end and not in the other.
//!
//! Each rule is a piece of code that shows the engine's work; comment lines are not searched.
//! A use that is translation, not validation, goes in [`ALLOWED`] with the reason.

use std::path::{Path, PathBuf};

/// (what a front end must not contain, what it means, where it belongs).
const RULES: &[(&str, &str)] = &[
    ("check_alloc", "a memory budget: the request's constructor (warpdrive_core::limits)"),
    ("limits::", "a memory budget: the request's constructor (warpdrive_core::limits)"),
    (
        "ThreadPoolBuilder",
        "a thread pool: Control::install / warpdrive_core::bench::timed",
    ),
    (
        "available_parallelism",
        "a thread-count decision: Control / warpdrive_core::bench::thread_counts",
    ),
    ("device::resolve", "device dispatch: Control::gpus"),
    ("parse_devices", "device parsing: engine::Device's FromStr"),
    ("usable_devices", "device dispatch: Control::gpus"),
    ("device_count", "device dispatch: Control::gpus"),
    ("Backend::Cuda(", "device dispatch: the domain's run(&Control)"),
    (".is_finite()", "a range check: the request's constructor (ParamError)"),
    ("bail!(\"--", "an option's validation: the request's constructor (ParamError)"),
    ("anyhow!(\"--", "an option's validation: the request's constructor (ParamError)"),
    ("ParamError::new", "an option's validation: the request's constructor"),
    (
        "must be",
        "a value's range said by a front end: the request's constructor (ParamError)",
    ),
    (
        "write_atomic",
        "an output written outside the staged discipline: Result::save into a Staged",
    ),
    ("Outputs::", "output staging: the engine's prepare_* functions"),
    ("Staged::", "output staging: the engine's prepare_* functions"),
];

/// Uses that are translation, not the engine's work: (file, rule, why it is allowed). Each is a
/// Python value that must change type before a request can hold it; the engine still checks
/// every range.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "python/src/errors.rs",
        "must be",
        "counts are Python ints: a negative one cannot become the engine's u64 (pyo3 alone raises OverflowError)",
    ),
    (
        "python/src/photon.rs",
        "must be",
        "typed sources come as (N, width) arrays: the shape says how to read them into the request's flat lists",
    ),
    (
        "python/src/beam.rs",
        "must be",
        "particles come as an (N, 6) array: the shape says which column is which coordinate",
    ),
];

fn sources() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["cli/src", "python/src"] {
        let dir = crates.join(dir);
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 10, "front-end sources not found: {files:?}");
    files
}

/// `crates/`-relative name of a source file (`cli/src/main.rs`).
fn short(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    let at = s.rfind("/cli/src/").or_else(|| s.rfind("/python/src/")).unwrap_or(0);
    s[at + 1..].to_string()
}

/// Every (file:line, rule, meaning) where a front end does what only an engine may do.
fn findings() -> Vec<String> {
    let mut found = Vec::new();
    for file in sources() {
        let name = short(&file);
        let text = std::fs::read_to_string(&file).unwrap();
        for (k, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (rule, meaning) in RULES {
                let allowed = ALLOWED.iter().any(|(f, r, _)| *f == name && r == rule);
                if line.contains(rule) && !allowed {
                    found.push(format!("{name}:{}: `{rule}` — {meaning}\n    {}", k + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn front_ends_leave_validation_limits_and_dispatch_to_the_engines() {
    let found = findings();
    assert!(
        found.is_empty(),
        "front ends doing an engine's work (move it into the domain's engine, or allow it in ALLOWED with a reason):\n{}",
        found.join("\n")
    );
}

/// Every allowance is still needed: one whose rule no longer occurs in its file is removed.
#[test]
fn every_allowance_is_used() {
    for (file, rule, why) in ALLOWED {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            text.lines().any(|l| !l.trim_start().starts_with("//") && l.contains(rule)),
            "{file}: `{rule}` is allowed ({why}) but no longer used there; remove the allowance"
        );
    }
}

/// The rules find what they are meant to find: the legacy helpers this test replaced would
/// fail it (a test that cannot fail checks nothing).
#[test]
fn the_rules_catch_the_legacy_helpers() {
    let legacy = [
        "    let mut b = rayon::ThreadPoolBuilder::new();",
        "            bail!(\"--threads must be at least 1\");",
        "    Ok(warpdrive_core::device::resolve(&c.device, |why| eprintln!(\"device: cpu ({why})\"))?)",
        "        Some(devices) => Backend::Cuda(warpdrive_photon::gpu::GpuOptions {",
        "        let ordinal = warpdrive_core::cuda::parse_devices(&b.device)?.first().copied().unwrap_or(0);",
        "    warpdrive_core::table::write_atomic(&b.json, json.as_bytes())?;",
        "    if !(e.is_finite() && e > 0.0) {",
        "        return Err(crate::errors::value(\"tracks must be at least 1\"));",
    ];
    for line in legacy {
        assert!(RULES.iter().any(|(rule, _)| line.contains(rule)), "no rule catches: {line}");
    }
}
