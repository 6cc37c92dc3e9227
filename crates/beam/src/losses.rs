//! Lost particles (issue #30), as ELEGANT's lost-particle output keeps them: every lost particle
//! with its coordinates where it was lost, the element (index in the expanded line and name),
//! the position of that element along the line and the pass (turn) of the loss; and the
//! losses counted per pass for the run's summary.

use crate::beam::{Particles, Reference};
use crate::program::Program;
use std::collections::BTreeMap;
use warpdrive_core::table::{Column, Table};

/// Bytes per particle of the lost-particle table (12 columns of 8 bytes and an element name,
/// counted as 16 bytes and a 24-byte string header), for the budget.
pub const LOST_TABLE_BYTES: u64 = 12 * 8 + 40;

/// One lost particle.
#[derive(Clone, Debug, PartialEq)]
pub struct Loss {
    /// Row of the particle in the bunch.
    pub particle: u64,
    /// Index of the element in the expanded line (0-based).
    pub element: usize,
    pub pass: u32,
}

/// The lost particles of `p` in particle order (`first_row`: the bunch row of `p`'s first
/// particle, for a batch job's share).
pub fn losses(p: &Particles, first_row: u64) -> Vec<Loss> {
    p.lost_at
        .iter()
        .zip(&p.lost_pass)
        .enumerate()
        .filter(|(_, (&l, _))| l > 0)
        .map(|(i, (&l, &pass))| Loss {
            particle: first_row + i as u64,
            element: l as usize - 1,
            pass,
        })
        .collect()
}

/// Particles lost in each pass, in pass order (passes without losses left out).
pub fn by_pass(p: &Particles) -> Vec<(u32, usize)> {
    let mut m: BTreeMap<u32, usize> = BTreeMap::new();
    for (&l, &pass) in p.lost_at.iter().zip(&p.lost_pass) {
        if l > 0 {
            *m.entry(pass).or_default() += 1;
        }
    }
    m.into_iter().collect()
}

/// Position along the line of the end of element `k` [m] (where its losses are reported; a
/// collimator's entrance losses too).
pub fn element_end(program: &Program, k: usize) -> f64 {
    program.positions.get(k + 1).copied().unwrap_or(program.length)
}

/// `lost.parquet`: particle (bunch row), x, xp, y, yp, s, delta, t, p (the coordinates where
/// it was lost), element (index in the line, = final.parquet's lost_at − 1), element_name
/// (the lattice's name of that element, from the index the CPU or GPU recorded), pass, s_element
/// (the position of the element's end along the line [m]), in particle order: a split run's
/// jobs concatenate to the unsplit run's file.
pub fn lost_table(p: &Particles, reference: &Reference, program: &Program, first_row: u64) -> Table {
    let lost = losses(p, first_row);
    let rows: Vec<usize> = lost.iter().map(|l| (l.particle - first_row) as usize).collect();
    let mut t = Table::default();
    t.push("particle", Column::I64(lost.iter().map(|l| l.particle as i64).collect()));
    for (name, c) in ["x", "xp", "y", "yp", "s", "delta"].iter().zip(p.coords()) {
        t.push(name, Column::F64(rows.iter().map(|&i| c[i]).collect()));
    }
    t.push(
        "t",
        Column::F64(
            rows.iter()
                .map(|&i| crate::lsc::time_of(p.s[i], p.delta[i], reference.p_central))
                .collect(),
        ),
    );
    t.push(
        "p",
        Column::F64(rows.iter().map(|&i| reference.p_central * (1.0 + p.delta[i])).collect()),
    );
    t.push("element", Column::I64(lost.iter().map(|l| l.element as i64).collect()));
    t.push(
        "element_name",
        Column::Str(lost.iter().map(|l| program.names[l.element].clone()).collect()),
    );
    t.push("pass", Column::I64(lost.iter().map(|l| i64::from(l.pass)).collect()));
    t.push(
        "s_element",
        Column::F64(lost.iter().map(|l| element_end(program, l.element)).collect()),
    );
    t
}
