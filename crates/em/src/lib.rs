//! `warpdrive-em`: electromagnetic transport in the style of Celeritas, starting with the
//! Klein–Nishina mini-app of the CHEP 2021 paper (spec `specs/em.md`).
//!
//! Params: [`material`] (density, elements), [`xs`] (Geant4's Compton fit and the log-E table),
//! [`physics`] (the process list the loop talks to). Interactors: [`klein_nishina`].
//! State and loop: [`transport`] (track slots, [`stack`] allocators for hits and secondaries,
//! the fixed-point tally).

pub mod bench;
pub mod engine;
pub mod field;
pub mod gdml;
pub mod geo;
pub mod gpu;
pub mod gpu_check;
pub mod klein_nishina;
pub mod material;
pub mod nist;
pub mod output;
pub mod physics;
pub mod shower;
pub mod stack;
pub mod transport;
pub mod xs;
