//! `warpdrive-core`: what every warpdrive domain shares.
//!
//! * [`rng`] — Philox4x32-10 counter-based random numbers keyed by (seed, entity), written in
//!   the same 32-bit arithmetic a CUDA kernel uses, so the device twin can be bit-identical.
//! * [`stats`] — two-sample Kolmogorov–Smirnov and Poisson/χ² comparisons used by validation.
//! * [`table`] — a Parquet table writer with run metadata, written atomically (temp + rename).
//! * [`progress`] — a progress bar on a terminal, silent otherwise.
//! * [`error`] — input errors that name file, line and field.
//! * [`plot`] — PNG plots with a built-in font.
//! * [`hash`] — FNV-1a 64 for cache keys, fingerprints and checksums.
//! * [`engine`] — the run API the front ends share: `Control` (device, threads, cancellation,
//!   progress), `Error` by kind, `ParamError` named as each front end spells it.
//! * [`input`] — the bounded reader every input goes through.
//! * [`batch`] — splittable runs as Slurm arrays and HTCondor DAGs (`warpdrive submit`).
//! * [`output`] — the output discipline: no output over an input, temporaries renamed whole, `--force`, signal cleanup.
//! * [`jobs`] — runs split into batch jobs (shares, job stamps) and the checks before their outputs are merged.

pub mod batch;
pub mod bench;
pub mod check;
pub mod cuda;
pub mod data;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod hash;
pub mod input;
pub mod jobs;
pub mod kernels;
pub mod limits;
pub mod mutate;
pub mod output;
pub mod plot;
pub mod pmath;
pub mod progress;
pub mod rng;
pub mod snapshot;
pub mod stats;
pub mod table;
#[cfg(test)]
mod test_support;

pub use error::InputError;
pub use rng::{Philox4x32, RandomStream};
