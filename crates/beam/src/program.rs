//! A lattice compiled for tracking: consecutive map elements merged into runs (which the GPU
//! applies in one launch with particles in registers), and the collective and output elements
//! between them. The map form here fixes the order of every floating-point operation, and the
//! CPU loops and the generated GPU code follow it, so precise-mode GPU tracking equals the CPU's
//! bit for bit.

use crate::aperture::Aperture;
use crate::elements::rf::{Cavity, RfReference, C_LIGHT};
use crate::lattice::{Kind, Lattice, LscParams};
use crate::map::{Element, Map2};
use std::collections::HashMap;
use std::sync::Arc;

/// One output coordinate of a map: z_i ← c + Σ r_j z_j + Σ t_jk z_j z_k, summed in this order,
/// starting from the first non-zero term (so a row z_i ← z_i costs nothing).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub c: f64,
    pub r: Vec<(u8, f64)>,
    pub t: Vec<(u8, u8, f64)>,
}

impl Row {
    /// Is this row z_i ← z_i?
    pub fn is_identity(&self, i: usize) -> bool {
        self.c == 0.0 && self.t.is_empty() && self.r == [(i as u8, 1.0)]
    }

    /// Apply to one particle's input coordinates (the scalar twin of the vector loops).
    #[inline]
    pub fn eval(&self, z: &[f64; 6]) -> f64 {
        let mut acc: Option<f64> = (self.c != 0.0).then_some(self.c);
        let mut add = |v: f64| acc = Some(acc.map_or(v, |a| a + v));
        for &(j, v) in &self.r {
            add(if v == 1.0 { z[j as usize] } else { v * z[j as usize] });
        }
        for &(j, k, v) in &self.t {
            add(v * z[j as usize] * z[k as usize]);
        }
        acc.unwrap_or(0.0)
    }

    /// Floating-point operations: one add per term after the first, one multiply per R term
    /// that is not 1, two multiplies per T term.
    pub fn flops(&self) -> usize {
        let terms = usize::from(self.c != 0.0) + self.r.len() + self.t.len();
        terms.saturating_sub(1) + self.r.iter().filter(|(_, v)| *v != 1.0).count() + 2 * self.t.len()
    }

    /// The terms grouped by the first coordinate index j, for the GPU's fast form
    /// c + Σ_j z_j (R_ij + Σ_k T_ijk z_k) (gpu.rs `generate`): a T term then costs one fused
    /// multiply-add instead of two multiplies and an add. Groups in order of first appearance.
    pub fn groups(&self) -> Vec<Group> {
        let mut out: Vec<Group> = Vec::new();
        let at = |j: u8, out: &mut Vec<Group>| match out.iter().position(|g| g.j == j) {
            Some(g) => g,
            None => {
                out.push(Group { j, r: None, t: Vec::new() });
                out.len() - 1
            }
        };
        for (n, &(j, _)) in self.r.iter().enumerate() {
            let g = at(j, &mut out);
            out[g].r = Some(n);
        }
        for (n, &(j, _, _)) in self.t.iter().enumerate() {
            let g = at(j, &mut out);
            out[g].t.push(n);
        }
        out
    }

    /// Floating-point operations of the fast form ([`Self::groups`]; a fused multiply-add counts
    /// two): per group, z_j alone (R = 1) none, R z_j one, and with T terms one multiply per
    /// T term, one add per term of the bracket after the first and one multiply by z_j; one add
    /// per top-level term after the first.
    pub fn fast_flops(&self) -> usize {
        let groups = self.groups();
        let top = usize::from(self.c != 0.0) + groups.len();
        let inner: usize = groups
            .iter()
            .map(|g| match (g.r.map(|n| self.r[n].1), g.t.len()) {
                (Some(v), 0) => usize::from(v != 1.0),
                (r, t) => t + (t + usize::from(r.is_some())).saturating_sub(1) + 1,
            })
            .sum();
        top.saturating_sub(1) + inner
    }
}

/// The terms of a [`Row`] with first index `j`: the R term's and the T terms' positions in
/// `Row::r` and `Row::t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub j: u8,
    pub r: Option<usize>,
    pub t: Vec<usize>,
}

/// A second-order map in tracking form.
#[derive(Clone, Debug, PartialEq)]
pub struct Compact {
    pub rows: [Row; 6],
}

impl Compact {
    pub fn from_map(m: &Map2) -> Self {
        let rows = std::array::from_fn(|i| Row {
            c: m.c[i],
            r: (0..6).filter(|&j| m.r[i][j] != 0.0).map(|j| (j as u8, m.r[i][j])).collect(),
            t: m.t.iter().filter(|t| t.i as usize == i).map(|t| (t.j, t.k, t.value)).collect(),
        });
        Self { rows }
    }

    pub fn apply(&self, z: &mut [f64; 6]) {
        let zin = *z;
        for (i, row) in self.rows.iter().enumerate() {
            if !row.is_identity(i) {
                z[i] = row.eval(&zin);
            }
        }
    }

    pub fn flops(&self) -> usize {
        self.rows.iter().map(Row::flops).sum()
    }

    /// Is every input coordinate either kept (its row is the identity) or read by a computed
    /// row? Then a non-finite input leaves a non-finite output (gpu.rs `keeps_non_finite`).
    pub fn keeps_non_finite(&self) -> bool {
        (0..6).all(|j| {
            self.rows[j].is_identity(j)
                || self.rows.iter().enumerate().any(|(i, row)| {
                    !row.is_identity(i)
                        && (row.r.iter().any(|&(k, _)| usize::from(k) == j)
                            || row.t.iter().any(|&(k, l, _)| usize::from(k) == j || usize::from(l) == j))
                })
        })
    }

    /// FLOPs of the GPU's fast form ([`Row::fast_flops`]; identity rows cost nothing).
    pub fn fast_flops(&self) -> usize {
        self.rows
            .iter()
            .enumerate()
            .filter(|(i, r)| !r.is_identity(*i))
            .map(|(_, r)| r.fast_flops())
            .sum()
    }
}

/// The exact drift (EDRIFT), in the operation order the GPU code uses.
#[inline]
pub fn exact_drift(z: &mut [f64; 6], l: f64) {
    let path = (1.0 + z[1] * z[1] + z[3] * z[3]).sqrt();
    z[0] += l * z[1];
    z[2] += l * z[3];
    z[4] += l * path;
}

/// An element of a run. Copies of one element share its map.
#[derive(Clone, Debug, PartialEq)]
pub enum RunItem {
    Map {
        element: usize,
        map: Arc<Compact>,
    },
    ExactDrift {
        element: usize,
        l: f64,
    },
    /// An element tracked by its symplectic kick–drift integrator (CSBEND, KQUAD, KSEXT, KOCT;
    /// GPU: `bend::track`, `multipole::track` in kernels/bend.cu, kernels/multipole.cu).
    Kick {
        element: usize,
        kick: Arc<KickItem>,
    },
    /// RFCA: exact drift L/2, energy kick, exact drift L/2 (GPU: `rf_item_track` in gpu.rs).
    Rf {
        element: usize,
        rf: Arc<RfItem>,
    },
    /// An aperture test (MAXAMP after each element, RCOL/ECOL at entrance and exit): moves
    /// nothing; a particle outside is lost at `element`.
    Check {
        element: usize,
        aperture: Aperture,
    },
}

/// An RF cavity compiled for tracking: the cavity, the reference particle at it (momentum,
/// mass) and its arrival times (only a program compiled with a reference has one:
/// [`Program::compile_with`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RfItem {
    pub cavity: Cavity,
    pub reference: Option<RfReference>,
    /// Arrival time of the reference particle at the cavity's middle in pass 0 [s].
    pub t_ref: f64,
    /// Reference time of one pass through the line [s].
    pub period: f64,
}

impl RfItem {
    /// Track one particle (ELEGANT coordinates) through the cavity in pass `pass`. The path
    /// length s is turned into the time of flight t = s/(βc) with the particle's β, the kick
    /// uses Δt = t − (t_ref + pass · period), and s is rescaled to t β' c with the new β so that
    /// s/(βc) stays the time of flight (ELEGANT's convention for the s coordinate).
    pub fn track(&self, z: &mut [f64; 6], pass: u32) {
        let r = self
            .reference
            .as_ref()
            .expect("RFCA compiled without a reference momentum (Program::compile_with)");
        let half = 0.5 * self.cavity.l;
        if half > 0.0 {
            exact_drift(z, half);
        }
        // β = p/E with E = √(p² + m²) written out (not `hypot`): IEEE operations only, so the
        // GPU twin computes the same bits. The arrival time t = s/(βc) is the difference of two
        // large numbers below (s carries the whole path), so one ulp of β (2·10⁻¹⁶, what CUDA's
        // hypot and libm's may differ by) is 10⁻⁹ of the bunch's spread in Δt after 100 passes
        // of a 27 m ring (found on an H200: the RF check at 3.5·10⁻⁹ with hypot).
        let m2 = r.mass_ev * r.mass_ev;
        let beta = |d: f64, p0: f64| {
            let p = p0 * (1.0 + d);
            p / (p * p + m2).sqrt()
        };
        let (px, py) = crate::elements::to_canonical(z);
        let t = z[4] / (beta(z[5], r.p0_ev) * C_LIGHT);
        let dt = t - (self.t_ref + f64::from(pass) * self.period);
        let (delta, scale) = self.cavity.kick(z[5], dt, r);
        z[5] = delta;
        crate::elements::from_canonical(z, px * scale, py * scale);
        z[4] = t * beta(delta, self.cavity.p0_after(r)) * C_LIGHT;
        if half > 0.0 {
            exact_drift(z, half);
        }
    }
}

/// An element compiled for its kick–drift integrator: the element (a bend or a multipole) and
/// its TILT.
#[derive(Clone, Debug, PartialEq)]
pub struct KickItem {
    pub element: Element,
    pub tilt: f64,
}

impl KickItem {
    /// Track one particle: into the tilted frame, [`Element::kick_drift`], back.
    pub fn track(&self, z: &mut [f64; 6]) {
        crate::elements::rotate(z, self.tilt);
        self.element.kick_drift(z);
        crate::elements::rotate(z, -self.tilt);
    }

    /// The constants of the GPU twin (`kick_item_track` in gpu.rs): the tilt's flag, cos and
    /// sin of ±TILT (as [`crate::elements::rotate`] computes them), then the element's
    /// (`Bend::track_constants`, `Multipole::track_constants`). `None` for elements without an
    /// integrator.
    pub fn constants(&self) -> Option<(&'static str, Vec<f64>)> {
        let (s, c) = self.tilt.sin_cos();
        let (sm, cm) = (-self.tilt).sin_cos();
        let mut k = vec![f64::from(u8::from(self.tilt != 0.0)), c, s, cm, sm];
        let kind = match &self.element {
            Element::Bend(b) => {
                k.extend(b.track_constants());
                "bend"
            }
            Element::Multipole(m) => {
                k.extend(m.track_constants());
                "multipole"
            }
            _ => return None,
        };
        Some((kind, k))
    }
}

impl RunItem {
    pub fn element(&self) -> usize {
        match self {
            RunItem::Map { element, .. }
            | RunItem::Kick { element, .. }
            | RunItem::ExactDrift { element, .. }
            | RunItem::Rf { element, .. }
            | RunItem::Check { element, .. } => *element,
        }
    }
    /// Floating-point operations per particle (the exact drift: 4 for 1 + x'² + y'², 1 for the
    /// square root, 2 for each of the three updates).
    pub fn flops(&self) -> usize {
        match self {
            RunItem::Map { map, .. } => map.flops(),
            RunItem::ExactDrift { .. } => 11,
            // Not a map element: counted as its two drifts (the kick's transcendental
            // functions are not FP64 multiply-adds).
            RunItem::Rf { .. } => 22,
            // Comparisons, not counted as arithmetic of the maps.
            RunItem::Check { .. } => 0,
            // Integrators (square roots, divisions, arcsines): not map arithmetic, not counted.
            RunItem::Kick { .. } => 0,
        }
    }
}

/// What the tracker does at one point of the line.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Consecutive map elements: one GPU launch.
    Run(Vec<RunItem>),
    Watch {
        element: usize,
        name: String,
        filename: String,
        interval: u32,
    },
    /// LSCDRIFT: drift L/2, space-charge kick, drift L/2 (the half drift as a one-element run).
    Lsc {
        element: usize,
        name: String,
        params: LscParams,
        half_drift: Vec<RunItem>,
    },
    Charge {
        total: f64,
    },
}

/// A compiled lattice.
#[derive(Clone, Debug)]
pub struct Program {
    pub steps: Vec<Step>,
    /// Element names in line order (loss flags index into it).
    pub names: Vec<String>,
    /// Start position of each element along the line [m].
    pub positions: Vec<f64>,
    pub length: f64,
}

impl Program {
    /// Compile the line: the map of each distinct element is computed once (a line of a
    /// million copies of one drift costs one map, not a million) and shared by its copies.
    pub fn compile(lattice: &Lattice) -> Program {
        Self::compile_with(lattice, None)
    }

    /// [`Program::compile`] with the reference particle (mass, β0γ0), which RF cavities need:
    /// each cavity gets the reference momentum at it (CHANGE_P0 upstream changes it) and the
    /// reference's arrival time.
    pub fn compile_with(lattice: &Lattice, reference: Option<&crate::beam::Reference>) -> Program {
        let mut rf_reference = reference.map(|r| RfReference {
            mass_ev: r.mass_ev,
            p0_ev: r.p_central * r.mass_ev,
            charge: r.charge,
        });
        // Reference time along the line, with the reference's speed after each cavity.
        let mut t = 0.0;
        let mut cavities: Vec<(f64, Option<RfReference>)> = Vec::new();
        for e in &lattice.elements {
            let speed = |r: &Option<RfReference>| r.as_ref().map_or(C_LIGHT, |r| r.beta() * C_LIGHT);
            if let Kind::Rf(c) = &e.kind {
                t += 0.5 * c.l / speed(&rf_reference);
                cavities.push((t, rf_reference));
                if let Some(r) = rf_reference.as_mut() {
                    r.p0_ev = c.p0_after(r);
                }
                t += 0.5 * c.l / speed(&rf_reference);
            } else {
                t += e.length() / speed(&rf_reference);
            }
        }
        let period = t;
        let mut cavities = cavities.into_iter();
        let mut maps: HashMap<&str, Arc<Compact>> = HashMap::new();
        let mut half_drifts: HashMap<&str, Arc<Compact>> = HashMap::new();
        let mut kicks: HashMap<&str, Arc<KickItem>> = HashMap::new();
        let mut steps = Vec::new();
        let mut run: Vec<RunItem> = Vec::new();
        let mut positions = Vec::with_capacity(lattice.elements.len());
        let mut s = 0.0;
        // The MAXAMP in force (ELEGANT: from a MAXAMP to the next, checked after every element).
        let mut maxamp: Option<Aperture> = None;
        let flush = |run: &mut Vec<RunItem>, steps: &mut Vec<Step>| {
            if !run.is_empty() {
                steps.push(Step::Run(std::mem::take(run)));
            }
        };
        for (k, e) in lattice.elements.iter().enumerate() {
            positions.push(s);
            s += e.length();
            let moves = matches!(
                e.kind,
                Kind::Map { .. } | Kind::ExactDrift { .. } | Kind::Rf(_) | Kind::Collimator { .. }
            );
            match &e.kind {
                Kind::Map {
                    element,
                    tilt,
                    integrate: true,
                    ..
                } if matches!(element, Element::Bend(_) | Element::Multipole(_)) => run.push(RunItem::Kick {
                    element: k,
                    kick: Arc::clone(kicks.entry(e.name.as_str()).or_insert_with(|| {
                        Arc::new(KickItem {
                            element: *element,
                            tilt: *tilt,
                        })
                    })),
                }),
                Kind::Map { element, tilt, order, .. } => run.push(RunItem::Map {
                    element: k,
                    map: Arc::clone(
                        maps.entry(e.name.as_str())
                            .or_insert_with(|| Arc::new(Compact::from_map(&element.map2_with(*tilt, *order)))),
                    ),
                }),
                Kind::ExactDrift { l } => run.push(RunItem::ExactDrift { element: k, l: *l }),
                Kind::Marker => {}
                Kind::MaxAmp(a) => {
                    maxamp = (!a.is_open()).then_some(*a);
                    // "This element sets the aperture for itself and all subsequent elements."
                    if let Some(aperture) = maxamp {
                        run.push(RunItem::Check { element: k, aperture });
                    }
                }
                Kind::Collimator { l, aperture } => {
                    if !aperture.is_open() {
                        run.push(RunItem::Check {
                            element: k,
                            aperture: *aperture,
                        });
                    }
                    if *l > 0.0 {
                        run.push(RunItem::ExactDrift { element: k, l: *l });
                        if !aperture.is_open() {
                            run.push(RunItem::Check {
                                element: k,
                                aperture: *aperture,
                            });
                        }
                    }
                }
                Kind::Watch { filename, interval } => {
                    flush(&mut run, &mut steps);
                    steps.push(Step::Watch {
                        element: k,
                        name: e.name.clone(),
                        filename: filename.clone(),
                        interval: *interval,
                    });
                }
                Kind::Lsc(p) => {
                    flush(&mut run, &mut steps);
                    steps.push(Step::Lsc {
                        element: k,
                        name: e.name.clone(),
                        params: *p,
                        half_drift: std::iter::once(RunItem::Map {
                            element: k,
                            map: Arc::clone(
                                half_drifts
                                    .entry(e.name.as_str())
                                    .or_insert_with(|| Arc::new(Compact::from_map(&Element::Drift { l: 0.5 * p.l }.map2()))),
                            ),
                        })
                        .chain(maxamp.map(|aperture| RunItem::Check { element: k, aperture }))
                        .collect(),
                    });
                }
                Kind::Charge { total } => {
                    flush(&mut run, &mut steps);
                    steps.push(Step::Charge { total: *total });
                }
                Kind::Rf(c) => {
                    let (t_ref, reference) = cavities.next().unwrap_or((0.0, None));
                    run.push(RunItem::Rf {
                        element: k,
                        rf: Arc::new(RfItem {
                            cavity: *c,
                            reference,
                            t_ref,
                            period,
                        }),
                    })
                }
            }
            if moves {
                if let Some(aperture) = maxamp {
                    run.push(RunItem::Check { element: k, aperture });
                }
            }
        }
        flush(&mut run, &mut steps);
        Program {
            steps,
            names: lattice.elements.iter().map(|e| e.name.clone()).collect(),
            positions,
            length: s,
        }
    }

    /// Map elements in runs.
    pub fn runs(&self) -> impl Iterator<Item = &Vec<RunItem>> {
        self.steps.iter().filter_map(|s| match s {
            Step::Run(r) => Some(r),
            _ => None,
        })
    }

    /// Floating-point operations per particle and pass in map elements, and their number.
    /// (Aperture checks are no elements of their own: not counted.)
    pub fn map_flops(&self) -> (usize, usize) {
        self.runs()
            .flat_map(|r| r.iter())
            .filter(|it| !matches!(it, RunItem::Check { .. } | RunItem::Kick { .. }))
            .fold((0, 0), |(f, n), it| (f + it.flops(), n + 1))
    }

    /// As [`Self::map_flops`]'s count, for the GPU's fast form of the maps.
    pub fn map_fast_flops(&self) -> usize {
        self.runs()
            .flat_map(|r| r.iter())
            .map(|it| match it {
                RunItem::Map { map, .. } => map.fast_flops(),
                other => other.flops(),
            })
            .sum()
    }
}

/// Is a particle at (x, y) inside the aperture? NaN and ±∞ are outside.
#[inline]
pub fn inside(x: f64, y: f64, aperture: f64) -> bool {
    x.abs() < aperture && y.abs() < aperture
}

/// Particles per CPU work unit: six coordinates of 512 particles (24 KiB) stay in L1/L2
/// while all the elements of a run are applied.
pub const CHUNK: usize = 512;

/// Apply a run for `passes` to particles `[0, n)` of six coordinate slices on one thread, element by
/// element over the whole chunk (term-major loops that the compiler vectorises). Particles
/// already lost are left unchanged; a particle leaving the aperture after an element is flagged
/// with that element and keeps its coordinates there.
pub fn run_chunk(
    items: &[RunItem],
    z: [&mut [f64]; 6],
    lost_at: &mut [u32],
    lost_pass: &mut [u32],
    passes: std::ops::Range<u32>,
    aperture: f64,
) {
    run_chunk_until(items, z, lost_at, lost_pass, passes, aperture, &|| false);
}

/// Elements applied between two polls of the stop flag: 4096 elements of a 512-particle chunk
/// are a few milliseconds, so a run over a line of millions of elements stops within that.
pub const STOP_POLL_ELEMENTS: usize = 4096;

/// [`run_chunk`] that polls `stop` every [`STOP_POLL_ELEMENTS`] elements and returns `false`
/// (coordinates part-way through the run, to be discarded) when it says so.
pub fn run_chunk_until(
    items: &[RunItem],
    mut z: [&mut [f64]; 6],
    lost_at: &mut [u32],
    lost_pass: &mut [u32],
    passes: std::ops::Range<u32>,
    aperture: f64,
    stop: &(dyn Fn() -> bool + Sync),
) -> bool {
    for pass in passes {
        if !run_chunk_pass(items, &mut z, lost_at, lost_pass, pass, aperture, stop) {
            return false;
        }
    }
    true
}

fn run_chunk_pass(
    items: &[RunItem],
    z: &mut [&mut [f64]; 6],
    lost_at: &mut [u32],
    lost_pass: &mut [u32],
    pass: u32,
    aperture: f64,
    stop: &(dyn Fn() -> bool + Sync),
) -> bool {
    let n = lost_at.len();
    // Coordinates of particles that must not move: lost before or during this run.
    let mut frozen: Vec<(usize, [f64; 6])> = (0..n)
        .filter(|&p| lost_at[p] != 0)
        .map(|p| (p, std::array::from_fn(|i| z[i][p])))
        .collect();
    let mut tmp = [[0.0f64; CHUNK]; 6];
    for (k, item) in items.iter().enumerate() {
        if k % STOP_POLL_ELEMENTS == STOP_POLL_ELEMENTS - 1 && stop() {
            return false;
        }
        match item {
            RunItem::Map { map, .. } => {
                let mut changed = [false; 6];
                for (i, row) in map.rows.iter().enumerate() {
                    if row.is_identity(i) {
                        continue;
                    }
                    changed[i] = true;
                    let out = &mut tmp[i][..n];
                    let mut started = row.c != 0.0;
                    if started {
                        out.fill(row.c);
                    }
                    for &(j, v) in &row.r {
                        let zj = &z[j as usize][..n];
                        match (started, v == 1.0) {
                            (false, true) => out.copy_from_slice(zj),
                            (false, false) => out.iter_mut().zip(zj).for_each(|(o, a)| *o = v * a),
                            (true, true) => out.iter_mut().zip(zj).for_each(|(o, a)| *o += a),
                            (true, false) => out.iter_mut().zip(zj).for_each(|(o, a)| *o += v * a),
                        }
                        started = true;
                    }
                    for &(j, k, v) in &row.t {
                        let (zj, zk) = (&z[j as usize][..n], &z[k as usize][..n]);
                        let terms = out.iter_mut().zip(zj.iter().zip(zk));
                        if started {
                            terms.for_each(|(o, (a, b))| *o += v * a * b);
                        } else {
                            terms.for_each(|(o, (a, b))| *o = v * a * b);
                        }
                        started = true;
                    }
                    if !started {
                        out.fill(0.0);
                    }
                }
                for i in 0..6 {
                    if changed[i] {
                        z[i][..n].copy_from_slice(&tmp[i][..n]);
                    }
                }
            }
            RunItem::ExactDrift { l, .. } => {
                for p in 0..n {
                    let mut q = [z[0][p], z[1][p], z[2][p], z[3][p], z[4][p], z[5][p]];
                    exact_drift(&mut q, *l);
                    (z[0][p], z[2][p], z[4][p]) = (q[0], q[2], q[4]);
                }
            }
            RunItem::Kick { kick, .. } => {
                for p in 0..n {
                    let mut q = [z[0][p], z[1][p], z[2][p], z[3][p], z[4][p], z[5][p]];
                    kick.track(&mut q);
                    for i in 0..6 {
                        z[i][p] = q[i];
                    }
                }
            }
            RunItem::Rf { rf, .. } => {
                for p in 0..n {
                    let mut q = [z[0][p], z[1][p], z[2][p], z[3][p], z[4][p], z[5][p]];
                    rf.track(&mut q, pass);
                    for i in 0..6 {
                        z[i][p] = q[i];
                    }
                }
            }
            RunItem::Check { aperture, element } => {
                let e = *element as u32 + 1;
                for p in 0..n {
                    if lost_at[p] == 0 && !aperture.inside(z[0][p], z[2][p]) {
                        lost_at[p] = e;
                        lost_pass[p] = pass;
                        frozen.push((p, std::array::from_fn(|i| z[i][p])));
                    }
                }
            }
        }
        let e = item.element() as u32 + 1;
        for p in 0..n {
            if lost_at[p] == 0 && !inside(z[0][p], z[2][p], aperture) {
                lost_at[p] = e;
                lost_pass[p] = pass;
                frozen.push((p, std::array::from_fn(|i| z[i][p])));
            }
        }
    }
    // A NaN or ∞ in a slope, s or δ that did not reach x or y: lost at the run's last element.
    if let Some(last) = items.last() {
        for p in 0..n {
            if lost_at[p] == 0 && !(0..6).all(|i| z[i][p].is_finite()) {
                lost_at[p] = last.element() as u32 + 1;
                lost_pass[p] = pass;
                frozen.push((p, std::array::from_fn(|i| z[i][p])));
            }
        }
    }
    for (p, q) in frozen {
        for i in 0..6 {
            z[i][p] = q[i];
        }
    }
    true
}

/// Apply a run to all particles with rayon, chunk by chunk.
pub fn run_cpu(items: &[RunItem], p: &mut crate::beam::Particles, passes: std::ops::Range<u32>, aperture: f64) {
    run_cpu_until(items, p, passes, aperture, &|| false);
}

/// [`run_cpu`] that stops early when `stop` says so (polled before each chunk and every
/// [`STOP_POLL_ELEMENTS`] elements within one); returns `false` then, with the particles part-way
/// through the run (the caller discards them).
pub fn run_cpu_until(
    items: &[RunItem],
    p: &mut crate::beam::Particles,
    passes: std::ops::Range<u32>,
    aperture: f64,
    stop: &(dyn Fn() -> bool + Sync),
) -> bool {
    use rayon::prelude::*;
    let crate::beam::Particles {
        x,
        xp,
        y,
        yp,
        s,
        delta,
        lost_at,
        lost_pass,
    } = p;
    x.par_chunks_mut(CHUNK)
        .zip(xp.par_chunks_mut(CHUNK))
        .zip(y.par_chunks_mut(CHUNK))
        .zip(yp.par_chunks_mut(CHUNK))
        .zip(s.par_chunks_mut(CHUNK))
        .zip(delta.par_chunks_mut(CHUNK))
        .zip(lost_at.par_chunks_mut(CHUNK))
        .zip(lost_pass.par_chunks_mut(CHUNK))
        .all(|(((((((x, xp), y), yp), s), d), la), lp)| {
            !stop() && run_chunk_until(items, [x, xp, y, yp, s, d], la, lp, passes.clone(), aperture, stop)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast form's bracket per group, evaluated as the generated CUDA does (gpu.rs
    /// `generate`, `WD_FAST_MAPS`), without fusing.
    fn eval_grouped(row: &Row, z: &[f64; 6]) -> f64 {
        let mut acc = row.c;
        for g in row.groups() {
            let zj = z[g.j as usize];
            let bracket = g.r.map_or(0.0, |n| row.r[n].1) + g.t.iter().map(|&n| row.t[n].2 * z[row.t[n].1 as usize]).sum::<f64>();
            acc += zj * bracket;
        }
        acc
    }

    /// A map keeps a non-finite input non-finite when every input is kept or read; one that
    /// drops an input (x ← x', nothing else reads x) does not, and the generated kernels then
    /// keep the test after every element even without an aperture.
    #[test]
    fn maps_that_drop_an_input_are_not_trusted_to_keep_non_finite_values() {
        let drift = Compact::from_map(&Element::Drift { l: 1.0 }.map2());
        assert!(drift.keeps_non_finite());
        let mut z = [f64::INFINITY, 0.0, 0.0, 0.0, 0.0, 0.0];
        drift.apply(&mut z);
        assert!(!z[0].is_finite());
        let identity = |i: usize| Row {
            c: 0.0,
            r: vec![(i as u8, 1.0)],
            t: Vec::new(),
        };
        let mut rows: [Row; 6] = std::array::from_fn(identity);
        rows[0] = Row {
            c: 0.0,
            r: vec![(1, 0.5)],
            t: Vec::new(),
        };
        let drops = Compact { rows };
        assert!(!drops.keeps_non_finite());
        let mut z = [f64::NAN, 1e-3, 0.0, 0.0, 0.0, 0.0];
        drops.apply(&mut z);
        assert!(z.iter().all(|v| v.is_finite()), "{z:?}");
        // In a line: the run of the dropping map keeps the checked form only.
        let program = Program {
            steps: vec![Step::Run(vec![RunItem::Map {
                element: 0,
                map: Arc::new(drops),
            }])],
            names: vec!["X".into()],
            positions: vec![0.0],
            length: 0.0,
        };
        let src = crate::gpu::generate(&program, crate::gpu::Shape::new(true)).unwrap();
        assert!(!src.source.contains("goto recheck;"));
        let kq = crate::lattice::parse("QF: KQUAD, L=0.4, K1=0.6\nD: DRIF, L=1\nL: LINE=(QF, D)\n", "k.lte", None).unwrap();
        let src = crate::gpu::generate(&Program::compile(&kq), crate::gpu::Shape::new(true)).unwrap();
        assert!(!src.source.contains("goto recheck;"), "kick integrators keep the checked form");
        let fodo = crate::lattice::parse("QF: QUAD, L=0.4, K1=0.6\nD: EDRIFT, L=1\nL: LINE=(QF, D)\n", "q.lte", None).unwrap();
        let src = crate::gpu::generate(&Program::compile(&fodo), crate::gpu::Shape::new(true)).unwrap();
        assert!(src.source.contains("goto recheck;"));
    }

    #[test]
    fn the_grouped_form_holds_every_term_once_and_costs_fewer_flops() {
        // A full second-order row: c, six R terms (one of them 1) and all 21 T terms.
        let mut t = Vec::new();
        for j in 0..6u8 {
            for k in j..6u8 {
                t.push((j, k, 0.1 + f64::from(j) - 0.3 * f64::from(k)));
            }
        }
        let row = Row {
            c: 1e-3,
            r: (0..6u8).map(|j| (j, if j == 2 { 1.0 } else { 0.5 - 0.2 * f64::from(j) })).collect(),
            t,
        };
        let groups = row.groups();
        let mut r_seen: Vec<usize> = groups.iter().filter_map(|g| g.r).collect();
        let mut t_seen: Vec<usize> = groups.iter().flat_map(|g| g.t.clone()).collect();
        r_seen.sort_unstable();
        t_seen.sort_unstable();
        assert_eq!(r_seen, (0..6).collect::<Vec<_>>());
        assert_eq!(t_seen, (0..21).collect::<Vec<_>>());
        for g in &groups {
            assert!(g.t.iter().all(|&n| row.t[n].0 == g.j) && g.r.is_none_or(|n| row.r[n].0 == g.j));
        }
        let z = [1e-3, -2e-4, 5e-4, 3e-5, -1e-3, 2e-4];
        let (flat, grouped) = (row.eval(&z), eval_grouped(&row, &z));
        assert!((flat - grouped).abs() <= 4.0 * f64::EPSILON * flat.abs(), "{flat} vs {grouped}");
        // Flat: 27 adds, 5 R multiplies, 42 T multiplies = 74. Grouped: 6 adds at the top,
        // and per group its T terms' multiplies and adds, the R add and the multiply by z_j:
        // Σ_j (2 t_j + 1) = 2·21 + 6 = 48.
        assert_eq!(row.flops(), 74);
        assert_eq!(row.fast_flops(), 6 + 48);
        // A group of one R term that is 1 costs nothing; R z_j one multiply.
        let simple = Row {
            c: 0.0,
            r: vec![(0, 1.0), (1, 0.25)],
            t: Vec::new(),
        };
        assert_eq!((simple.flops(), simple.fast_flops()), (2, 2));
    }
}
