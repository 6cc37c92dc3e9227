//! Linear optics of a ring or a line: Twiss functions, dispersion, phase advances, tunes,
//! first-order chromaticity, momentum compaction and the synchrotron tune.
//!
//! Every element's second-order map (its exact body pushed through order-2 power series,
//! [`crate::map`]) is computed once per distinct element. The linear map around any orbit is
//! then the Jacobian of the second-order map there, R_ij + Σ_k ∂(T_ijk z_j z_k)/∂z_j, exact to
//! first order in the orbit — all that tunes at δ = ±ε need.
//!
//! * Ring (periodic solution): the closed orbit at fixed δ is found by Newton's method on the
//!   one-turn map; at δ = 0 the one-turn 2×2 blocks give cos μ = (M11 + M22)/2,
//!   β = M12/sin μ, α = (M11 − M22)/(2 sin μ) (sin μ with the sign of M12), and the dispersion
//!   solves (I − M) η = M·6 (E. D. Courant and H. S. Snyder, Ann. Phys. 3 (1958) 1; S. Y. Lee,
//!   "Accelerator Physics", §2.II). |cos μ| ≥ 1 in a plane is reported as unstable.
//! * Line: the given initial Twiss functions and dispersion.
//! * Along the line: β1 = ((R11 β − R12 α)² + R12²)/β, α1 = −((R11 β − R12 α)(R21 β − R22 α)
//!   + R12 R22)/β, Δμ = atan2(R12, R11 β − R12 α), η1 = R η (η₆ = 1).
//! * Tunes: the total phase advance / 2π. Chromaticity ξ = dQ/dδ by central differences of the
//!   tunes on the closed orbits at δ = ±ε (ε = 10⁻⁶; the O(ε²) error is far below 10⁻⁶).
//! * Momentum compaction α_c = (1/C) dℓ/dδ, ℓ the path length of the closed orbit (the fifth
//!   row of the maps applied to η).
//! * Synchrotron tune (rings with RFCA): the 6×6 one-turn matrix in (x, x', y, y', c Δt, δ),
//!   where every element adds c Δt += ℓ/β − L/β0 (linearised: (ℓ − L)/β0 − L δ/(β0 γ0²)) and a
//!   cavity its energy kick linearised in Δt; the eigenvalues e^{±i2πQ} come in reciprocal
//!   pairs, so u = 2 cos 2πQ solves the cubic u³ + c1 u² + (c2 − 3) u + c3 − 2 c1 = 0 from the
//!   characteristic polynomial λ⁶ + c1 λ⁵ + c2 λ⁴ + c3 λ³ + c2 λ² + c1 λ + 1. Qs is the root
//!   nearest the longitudinal block's trace. Radiation is not included.

use crate::elements::rf::{Cavity, RfReference, C_LIGHT};
use crate::lattice::{Kind, Lattice, Placed};
use crate::map::{Element, Map2};
use crate::tpsa::Tpsa2;
use std::collections::HashMap;
use std::f64::consts::PI;

type M6 = [[f64; 6]; 6];

/// Twiss functions and dispersion at one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Initial {
    pub betx: f64,
    pub alfx: f64,
    pub bety: f64,
    pub alfy: f64,
    pub dx: f64,
    pub dpx: f64,
}

/// One row of the table: the optics at the end of an element (the first row is the start).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub s: f64,
    pub name: String,
    pub kind: &'static str,
    pub betx: f64,
    pub bety: f64,
    pub alfx: f64,
    pub alfy: f64,
    pub dx: f64,
    pub dpx: f64,
    /// Phase advances from the start [rad/2π].
    pub mux: f64,
    pub muy: f64,
}

/// The summary numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Periodic (ring) or from initial values (line).
    pub periodic: bool,
    pub tunes: [f64; 2],
    /// dQ/dδ.
    pub chromaticity: [f64; 2],
    /// α_c = (1/C) dℓ/dδ (ring only).
    pub momentum_compaction: Option<f64>,
    pub circumference: f64,
    /// Radiation-free synchrotron tune (ring with RF).
    pub synchrotron_tune: Option<f64>,
    /// The one-turn matrix couples x and y: the tunes are the modes' (eigen)tunes, and the
    /// table's betx, alfx, mux are mode I's horizontal functions, bety, alfy, muy mode II's
    /// vertical ones ([`crate::coupled`]).
    pub coupled: bool,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TwissError {
    #[error("the ring is unstable in the {plane} plane: |cos μ| = |(M11 + M22)/2| = {half_trace:.6} ≥ 1 (one-turn map at δ = {delta}); no periodic Twiss functions")]
    Unstable { plane: &'static str, half_trace: f64, delta: f64 },
    #[error("the longitudinal motion is unstable: 2 cos 2πQs = {u:.6} is outside [−2, 2] (RF phase on the wrong side of transition for this ring?)")]
    LongitudinalUnstable { u: f64 },
    #[error("the x–y coupled ring is unstable: a mode has |cos μ| = {half_trace:.6} ≥ 1 (NaN: complex, the modes' eigenvalues off the unit circle) in the one-turn map at δ = {delta}; no periodic optics")]
    UnstableCoupled { half_trace: f64, delta: f64 },
    #[error("the one-turn map couples x and y (off-diagonal block up to {value:.3e})")]
    Coupled { value: f64 },
    #[error("the coupled one-turn map at δ = {delta} has two equal mode tunes: its modes are not unique (move the tunes apart)")]
    Degenerate { delta: f64 },
    #[error("no closed orbit at δ = {delta:e}: Newton's method did not converge (residual {residual:e} m)")]
    NoClosedOrbit { delta: f64, residual: f64 },
    #[error("the line has no elements")]
    Empty,
}

/// How an element acts in the optics: its second-order map (transverse and path length), and
/// for cavities the cavity.
struct Model {
    map: Map2,
    length: f64,
    cavity: Option<Cavity>,
}

/// The second-order map an element has in the optics (and in `matrix_output`): RF cavities,
/// LSC drifts and collimators as drifts of their length, markers and apertures as identity.
pub fn element_map(e: &Placed) -> Map2 {
    model(e).map
}

fn model(e: &Placed) -> Model {
    let (element, tilt) = match &e.kind {
        Kind::Map { element, tilt, .. } => (*element, *tilt),
        Kind::ExactDrift { l } => (Element::Drift { l: *l }, 0.0),
        Kind::Lsc(p) => (Element::Drift { l: p.l }, 0.0),
        Kind::Rf(c) => (Element::Drift { l: c.l }, 0.0),
        Kind::Collimator { l, .. } => (Element::Drift { l: *l }, 0.0),
        Kind::Marker | Kind::Watch { .. } | Kind::Charge { .. } | Kind::MaxAmp(_) => (Element::Marker, 0.0),
    };
    Model {
        map: element.map2_with(tilt, 2),
        length: e.length(),
        cavity: match &e.kind {
            Kind::Rf(c) => Some(*c),
            _ => None,
        },
    }
}

/// The second-order map applied at `z` (with z₅ = 0 on input: the path-length output is the
/// element's own) and its Jacobian there.
fn step(m: &Map2, z: &[f64; 6]) -> ([f64; 6], M6) {
    let mut zin = *z;
    zin[4] = 0.0;
    let mut out = zin;
    m.apply(&mut out);
    let mut j = m.r;
    for t in &m.t {
        let (i, a, b) = (t.i as usize, t.j as usize, t.k as usize);
        j[i][a] += t.value * zin[b];
        j[i][b] += t.value * zin[a];
    }
    (out, j)
}

fn mul(a: &M6, b: &M6) -> M6 {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..6).map(|k| a[i][k] * b[k][j]).sum()))
}

fn identity() -> M6 {
    std::array::from_fn(|i| std::array::from_fn(|j| f64::from(u8::from(i == j))))
}

/// Solve A x = b (n ≤ 6) by Gaussian elimination with partial pivoting; None if singular.
fn solve<const N: usize>(mut a: [[f64; N]; N], mut b: [f64; N]) -> Option<[f64; N]> {
    for c in 0..N {
        let p = (c..N).max_by(|&i, &k| a[i][c].abs().total_cmp(&a[k][c].abs()))?;
        if a[p][c] == 0.0 {
            return None;
        }
        a.swap(p, c);
        b.swap(p, c);
        for r in c + 1..N {
            let f = a[r][c] / a[c][c];
            for k in c..N {
                a[r][k] -= f * a[c][k];
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = [0.0; N];
    for r in (0..N).rev() {
        x[r] = (b[r] - (r + 1..N).map(|k| a[r][k] * x[k]).sum::<f64>()) / a[r][r];
    }
    Some(x)
}

/// The optics engine of one lattice: element models shared by name.
pub struct Optics<'a> {
    lattice: &'a Lattice,
    models: Vec<std::rc::Rc<Model>>,
}

/// An orbit through the line: the Jacobians of the elements along it, the one-turn matrix and
/// the end point.
struct Orbit {
    jacobians: Vec<M6>,
    one_turn: M6,
    end: [f64; 6],
}

/// Twiss of one plane.
#[derive(Clone, Copy, Debug)]
struct Plane {
    beta: f64,
    alpha: f64,
}

impl<'a> Optics<'a> {
    pub fn new(lattice: &'a Lattice) -> Self {
        let mut cache: HashMap<&str, std::rc::Rc<Model>> = HashMap::new();
        let models = lattice
            .elements
            .iter()
            .map(|e| cache.entry(e.name.as_str()).or_insert_with(|| std::rc::Rc::new(model(e))).clone())
            .collect();
        Self { lattice, models }
    }

    fn orbit(&self, z0: [f64; 6]) -> Orbit {
        let mut z = z0;
        z[4] = 0.0;
        let mut jacobians = Vec::with_capacity(self.models.len());
        let mut one_turn = identity();
        for m in &self.models {
            let (out, j) = step(&m.map, &z);
            one_turn = mul(&j, &one_turn);
            jacobians.push(j);
            z = out;
            z[4] = 0.0;
        }
        Orbit {
            jacobians,
            one_turn,
            end: z,
        }
    }

    /// The closed orbit at `delta` (Newton's method on x, x', y, y').
    fn closed_orbit(&self, delta: f64) -> Result<Orbit, TwissError> {
        let mut z = [0.0, 0.0, 0.0, 0.0, 0.0, delta];
        let mut residual = f64::INFINITY;
        for _ in 0..20 {
            let o = self.orbit(z);
            let f: [f64; 4] = std::array::from_fn(|i| o.end[i] - z[i]);
            residual = f.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            if residual < 1e-15 {
                return Ok(o);
            }
            let a: [[f64; 4]; 4] = std::array::from_fn(|i| std::array::from_fn(|j| o.one_turn[i][j] - f64::from(u8::from(i == j))));
            let Some(dz) = solve(a, f.map(|v| -v)) else {
                break;
            };
            (0..4).for_each(|i| z[i] += dz[i]);
            if !z.iter().all(|v| v.is_finite()) {
                break;
            }
        }
        let o = self.orbit(z);
        let r = (0..4).map(|i| (o.end[i] - z[i]).abs()).fold(0.0, f64::max);
        if r < 1e-12 {
            return Ok(o);
        }
        Err(TwissError::NoClosedOrbit {
            delta,
            residual: residual.min(r),
        })
    }

    /// The periodic optics of a closed orbit: uncoupled Twiss, or (x–y coupling in the
    /// one-turn matrix) the modes' lattice functions ([`crate::coupled`]), with the dispersion
    /// from the one-turn matrix.
    fn periodic_optics(&self, o: &Orbit, delta: f64) -> Result<(Vec<Row>, [f64; 2], f64, bool), TwissError> {
        let m = &o.one_turn;
        let a: [[f64; 4]; 4] = std::array::from_fn(|i| std::array::from_fn(|j| f64::from(u8::from(i == j)) - m[i][j]));
        let eta0 = solve(a, std::array::from_fn(|i| m[i][5])).unwrap_or([f64::NAN; 4]);
        if Self::check_uncoupled(m).is_ok() {
            let start = Self::periodic(m, delta)?;
            let (rows, tunes, path) = self.propagate(o, start, eta0);
            return Ok((rows, tunes, path, false));
        }
        let m4: [[f64; 4]; 4] = std::array::from_fn(|i| std::array::from_fn(|j| m[i][j]));
        let modes = crate::coupled::eigenmodes(&m4).map_err(|e| match e {
            crate::coupled::ModeError::Unstable { half_trace } => TwissError::UnstableCoupled { half_trace, delta },
            crate::coupled::ModeError::Degenerate => TwissError::Degenerate { delta },
        })?;
        let (rows, tunes, path) = self.propagate_coupled(o, [modes[0].0, modes[1].0], eta0);
        Ok((rows, tunes, path, true))
    }

    /// [`Self::propagate`] for coupled optics: the modes' vectors carried by the Jacobians;
    /// betx, alfx, mux of mode I's horizontal motion, bety, alfy, muy of mode II's vertical one.
    fn propagate_coupled(&self, orbit: &Orbit, start: [crate::coupled::Vector; 2], eta0: [f64; 4]) -> (Vec<Row>, [f64; 2], f64) {
        let mut v = start;
        let mut eta = [eta0[0], eta0[1], eta0[2], eta0[3], 0.0, 1.0];
        let mut mu = [0.0f64; 2];
        let row = |s: f64, name: &str, kind: &'static str, v: &[crate::coupled::Vector; 2], eta: &[f64; 6], mu: &[f64; 2]| {
            let (f1, f2) = (crate::coupled::lattice_functions(&v[0]), crate::coupled::lattice_functions(&v[1]));
            Row {
                s,
                name: name.to_string(),
                kind,
                betx: f1[0],
                alfx: f1[1],
                bety: f2[2],
                alfy: f2[3],
                dx: eta[0],
                dpx: eta[1],
                mux: mu[0] / (2.0 * PI),
                muy: mu[1] / (2.0 * PI),
            }
        };
        let mut rows = Vec::with_capacity(orbit.jacobians.len() + 1);
        rows.push(row(0.0, "_BEGIN_", "MARK", &v, &eta, &mu));
        let (mut s, mut path) = (0.0, 0.0);
        for (k, (j, e)) in orbit.jacobians.iter().zip(&self.lattice.elements).enumerate() {
            for (p, c) in [(0usize, 0usize), (1, 2)] {
                let next = crate::coupled::transport(j, &v[p]);
                let mut d = (next[c] * v[p][c].conj()).arg();
                if d < 0.0 {
                    d += 2.0 * PI;
                }
                mu[p] += d;
                v[p] = next;
            }
            path += propagate_dispersion(j, &mut eta);
            s += self.models[k].length;
            rows.push(row(s, &e.name, e.type_name(), &v, &eta, &mu));
        }
        (rows, mu.map(|m| m / (2.0 * PI)), path)
    }

    fn check_uncoupled(m: &M6) -> Result<(), TwissError> {
        let value = (0..2)
            .flat_map(|i| (2..4).map(move |j| (i, j)))
            .map(|(i, j)| m[i][j].abs().max(m[j][i].abs()))
            .fold(0.0, f64::max);
        if value > 1e-12 {
            return Err(TwissError::Coupled { value });
        }
        Ok(())
    }

    /// Periodic Twiss of the two planes from the one-turn matrix.
    fn periodic(m: &M6, delta: f64) -> Result<[Plane; 2], TwissError> {
        let mut out = [Plane { beta: 0.0, alpha: 0.0 }; 2];
        for (k, (plane, i)) in [("horizontal (x)", 0usize), ("vertical (y)", 2usize)].into_iter().enumerate() {
            let c = 0.5 * (m[i][i] + m[i + 1][i + 1]);
            if !c.is_finite() || c.abs() >= 1.0 {
                return Err(TwissError::Unstable {
                    plane,
                    half_trace: c.abs(),
                    delta,
                });
            }
            let s = m[i][i + 1].signum() * (1.0 - c * c).sqrt();
            out[k] = Plane {
                beta: m[i][i + 1] / s,
                alpha: (m[i][i] - m[i + 1][i + 1]) / (2.0 * s),
            };
        }
        Ok(out)
    }

    /// Propagate Twiss functions and dispersion along an orbit: rows at every element end
    /// (and the start), total phase advances [2π], and dℓ/dδ.
    fn propagate(&self, orbit: &Orbit, start: [Plane; 2], eta0: [f64; 4]) -> (Vec<Row>, [f64; 2], f64) {
        let mut planes = start;
        let mut eta = [eta0[0], eta0[1], eta0[2], eta0[3], 0.0, 1.0];
        let mut mu = [0.0f64; 2];
        let mut s = 0.0;
        let row = |s: f64, name: &str, kind: &'static str, p: &[Plane; 2], eta: &[f64; 6], mu: &[f64; 2]| Row {
            s,
            name: name.to_string(),
            kind,
            betx: p[0].beta,
            bety: p[1].beta,
            alfx: p[0].alpha,
            alfy: p[1].alpha,
            dx: eta[0],
            dpx: eta[1],
            mux: mu[0] / (2.0 * PI),
            muy: mu[1] / (2.0 * PI),
        };
        let mut rows = Vec::with_capacity(orbit.jacobians.len() + 1);
        rows.push(row(0.0, "_BEGIN_", "MARK", &planes, &eta, &mu));
        let mut path = 0.0;
        for (k, (j, e)) in orbit.jacobians.iter().zip(&self.lattice.elements).enumerate() {
            for (p, i) in [(0usize, 0usize), (1, 2)] {
                let (r11, r12, r21, r22) = (j[i][i], j[i][i + 1], j[i + 1][i], j[i + 1][i + 1]);
                let Plane { beta, alpha } = planes[p];
                let a = r11 * beta - r12 * alpha;
                let b = r21 * beta - r22 * alpha;
                planes[p] = Plane {
                    beta: (a * a + r12 * r12) / beta,
                    alpha: -(a * b + r12 * r22) / beta,
                };
                let mut d = r12.atan2(a);
                if d < 0.0 {
                    d += 2.0 * PI;
                }
                mu[p] += d;
            }
            path += propagate_dispersion(j, &mut eta);
            s += self.models[k].length;
            rows.push(row(s, &e.name, e.type_name(), &planes, &eta, &mu));
        }
        (rows, mu.map(|m| m / (2.0 * PI)), path)
    }

    /// Tunes at `delta` on the closed orbit (ring) or along the line from `initial` with the
    /// orbit starting at the initial dispersion times δ.
    fn tunes_at(&self, delta: f64, initial: Option<&Initial>) -> Result<[f64; 2], TwissError> {
        match initial {
            None => {
                let o = self.closed_orbit(delta)?;
                Ok(self.periodic_optics(&o, delta)?.1)
            }
            Some(i) => {
                let o = self.orbit([i.dx * delta, i.dpx * delta, 0.0, 0.0, 0.0, delta]);
                Ok(self.propagate(&o, start_of(i), [0.0; 4]).1)
            }
        }
    }

    /// The table and summary.
    pub fn twiss(&self, initial: Option<&Initial>, reference: Option<&RfReference>) -> Result<(Vec<Row>, Summary), TwissError> {
        if self.models.is_empty() {
            return Err(TwissError::Empty);
        }
        let circumference: f64 = self.models.iter().map(|m| m.length).sum();
        let (rows, tunes, path, coupled) = match initial {
            None => {
                let o = self.closed_orbit(0.0)?;
                self.periodic_optics(&o, 0.0)?
            }
            Some(i) => {
                let o = self.orbit([0.0; 6]);
                let (rows, tunes, path) = self.propagate(&o, start_of(i), [i.dx, i.dpx, 0.0, 0.0]);
                (rows, tunes, path, false)
            }
        };
        let eps = 1e-6;
        let plus = self.tunes_at(eps, initial)?;
        let minus = self.tunes_at(-eps, initial)?;
        let chromaticity = [0, 1].map(|p| (plus[p] - minus[p]) / (2.0 * eps));
        let periodic = initial.is_none();
        let synchrotron_tune = match (periodic, reference, self.models.iter().any(|m| m.cavity.is_some())) {
            (true, Some(r), true) => Some(self.synchrotron_tune(r)?),
            _ => None,
        };
        Ok((
            rows,
            Summary {
                periodic,
                tunes,
                chromaticity,
                momentum_compaction: periodic.then(|| path / circumference),
                circumference,
                synchrotron_tune,
                coupled,
            },
        ))
    }

    /// The 6×6 one-turn matrix in (x, x', y, y', c Δt, δ) with the cavities' kicks.
    pub fn longitudinal_one_turn(&self, r: &RfReference) -> M6 {
        let (beta0, gamma0) = (r.beta(), r.gamma());
        let mut total = identity();
        for m in &self.models {
            let mut j = m.map.r;
            // c Δt_out = c Δt_in + ℓ/β − L/β0, linearised.
            for c in 0..6 {
                if c != 4 {
                    j[4][c] = m.map.r[4][c] / beta0;
                }
            }
            j[4][5] -= m.length / (beta0 * gamma0 * gamma0);
            j[4][4] = 1.0;
            if let Some(cav) = m.cavity {
                // Drift L/2 (already in j as a drift of L: split it), kick, drift L/2.
                let half = |l: f64| {
                    let mut d = crate::map::Element::Drift { l }.map2().r;
                    for c in 0..6 {
                        if c != 4 {
                            d[4][c] /= beta0;
                        }
                    }
                    d[4][5] -= l / (beta0 * gamma0 * gamma0);
                    d
                };
                let tau = Tpsa2::variable(4, 0.0) * Tpsa2::constant(1.0 / C_LIGHT);
                let (d1, _) = cav.kick(Tpsa2::variable(5, 0.0), tau, r);
                let mut kick = identity();
                kick[5] = d1.g;
                j = mul(&half(0.5 * cav.l), &mul(&kick, &half(0.5 * cav.l)));
            }
            total = mul(&j, &total);
        }
        total
    }

    fn synchrotron_tune(&self, r: &RfReference) -> Result<f64, TwissError> {
        let m = self.longitudinal_one_turn(r);
        let c = characteristic(&m);
        let cubic = |u: f64| ((u + c[0]) * u + (c[1] - 3.0)) * u + (c[2] - 2.0 * c[0]);
        let dcubic = |u: f64| (3.0 * u + 2.0 * c[0]) * u + (c[1] - 3.0);
        let mut u = m[4][4] + m[5][5];
        for _ in 0..100 {
            let du = cubic(u) / dcubic(u);
            u -= du;
            if du.abs() < 1e-16 {
                break;
            }
        }
        if !u.is_finite() || u.abs() > 2.0 {
            return Err(TwissError::LongitudinalUnstable { u });
        }
        Ok((0.5 * u).acos() / (2.0 * PI))
    }
}

fn start_of(i: &Initial) -> [Plane; 2] {
    [
        Plane {
            beta: i.betx,
            alpha: i.alfx,
        },
        Plane {
            beta: i.bety,
            alpha: i.alfy,
        },
    ]
}

/// c1, c2, c3 of det(λ I − M) = λ⁶ + c1 λ⁵ + c2 λ⁴ + c3 λ³ + … (Faddeev–LeVerrier).
fn characteristic(m: &M6) -> [f64; 3] {
    let mut c = [0.0; 6];
    let mut mk = identity();
    let mut prev_c = 1.0;
    for k in 1..=3 {
        // M_k = M (M_{k−1} + c_{k−1} I), c_k = −tr(M_k)/k.
        let mut a = mk;
        if k > 1 {
            (0..6).for_each(|i| a[i][i] += prev_c);
        }
        mk = mul(m, &a);
        let tr: f64 = (0..6).map(|i| mk[i][i]).sum();
        c[k - 1] = -tr / k as f64;
        prev_c = c[k - 1];
    }
    [c[0], c[1], c[2]]
}

/// Twiss of `lattice`: periodic without `initial`, else from it; the synchrotron tune needs
/// the reference (mass and momentum).
pub fn twiss(lattice: &Lattice, initial: Option<&Initial>, reference: Option<&RfReference>) -> Result<(Vec<Row>, Summary), TwissError> {
    Optics::new(lattice).twiss(initial, reference)
}

/// PNG of βx, βy (top) and the horizontal dispersion (bottom) along s.
pub fn plot(path: &std::path::Path, title: &str, rows: &[Row]) -> Result<(), warpdrive_core::plot::PlotError> {
    use warpdrive_core::plot::plotters::prelude::*;
    use warpdrive_core::plot::{colour, write_png, FONT};
    let smax = rows.last().map_or(1.0, |r| r.s).max(1e-9);
    let bmax = rows.iter().flat_map(|r| [r.betx, r.bety]).fold(0.0f64, f64::max).max(1e-9) * 1.08;
    let (dmin, dmax) = rows.iter().fold((0.0f64, 0.0f64), |(a, b), r| (a.min(r.dx), b.max(r.dx)));
    let pad = 0.08 * (dmax - dmin).max(1e-6);
    write_png(path, (1000, 700), |area| {
        let (top, bottom) = area.split_vertically(430);
        let mut chart = ChartBuilder::on(&top)
            .caption(title, (FONT, 22))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..smax, 0.0..bmax)?;
        chart.configure_mesh().y_desc("β [m]").label_style((FONT, 15)).draw()?;
        for (k, label) in [(0usize, "βx"), (1, "βy")] {
            let c = colour(k);
            chart
                .draw_series(LineSeries::new(
                    rows.iter().map(|r| (r.s, if k == 0 { r.betx } else { r.bety })),
                    c.stroke_width(2),
                ))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 15))
            .draw()?;
        let mut chart = ChartBuilder::on(&bottom)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..smax, (dmin - pad)..(dmax + pad))?;
        chart
            .configure_mesh()
            .x_desc("s [m]")
            .y_desc("ηx [m]")
            .label_style((FONT, 15))
            .draw()?;
        let c = colour(2);
        chart.draw_series(LineSeries::new(rows.iter().map(|r| (r.s, r.dx)), c.stroke_width(2)))?;
        Ok(())
    })
}

/// Write the table as Parquet: s, name, type, betx, bety, alfx, alfy, dx, dpx, mux, muy.
pub fn write_table(path: &std::path::Path, rows: &[Row], metadata: &[(String, String)]) -> Result<(), String> {
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType};
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use std::sync::Arc;
    let numeric: [fn(&Row) -> f64; 8] = [
        |r| r.betx,
        |r| r.bety,
        |r| r.alfx,
        |r| r.alfy,
        |r| r.dx,
        |r| r.dpx,
        |r| r.mux,
        |r| r.muy,
    ];
    let schema = "message twiss { REQUIRED DOUBLE s; REQUIRED BINARY name (UTF8); REQUIRED BINARY type (UTF8); \
                  REQUIRED DOUBLE betx; REQUIRED DOUBLE bety; REQUIRED DOUBLE alfx; REQUIRED DOUBLE alfy; \
                  REQUIRED DOUBLE dx; REQUIRED DOUBLE dpx; REQUIRED DOUBLE mux; REQUIRED DOUBLE muy; }";
    let fail = |e: parquet::errors::ParquetError| format!("{}: {e}", path.display());
    let schema = Arc::new(parquet::schema::parser::parse_message_type(schema).map_err(fail)?);
    let props = WriterProperties::builder()
        .set_key_value_metadata(Some(metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect()))
        .build();
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = SerializedFileWriter::new(file, schema, Arc::new(props)).map_err(fail)?;
    let mut g = w.next_row_group().map_err(fail)?;
    let mut k = 0;
    while let Some(mut c) = g.next_column().map_err(fail)? {
        match k {
            0 => {
                let v: Vec<f64> = rows.iter().map(|r| r.s).collect();
                c.typed::<DoubleType>().write_batch(&v, None, None).map_err(fail)?;
            }
            1 | 2 => {
                let v: Vec<ByteArray> = rows
                    .iter()
                    .map(|r| ByteArray::from(if k == 1 { r.name.as_str() } else { r.kind }))
                    .collect();
                c.typed::<ByteArrayType>().write_batch(&v, None, None).map_err(fail)?;
            }
            _ => {
                let f = numeric[k - 3];
                let v: Vec<f64> = rows.iter().map(f).collect();
                c.typed::<DoubleType>().write_batch(&v, None, None).map_err(fail)?;
            }
        }
        c.close().map_err(fail)?;
        k += 1;
    }
    g.close().map_err(fail)?;
    w.close().map_err(fail)?;
    Ok(())
}

/// The dispersion vector (η, η′, η_y, η_y′, ·, 1) carried through one element's Jacobian `j`
/// (the s column ignored, δ kept at 1); returns the element's path-length term (R5·η), which
/// the momentum compaction sums.
fn propagate_dispersion(j: &M6, eta: &mut [f64; 6]) -> f64 {
    let next: [f64; 6] = std::array::from_fn(|i| (0..6).filter(|&c| c != 4).map(|c| j[i][c] * eta[c]).sum());
    *eta = next;
    eta[4] = 0.0;
    eta[5] = 1.0;
    next[4]
}
