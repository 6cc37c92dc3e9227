//! Second-order transfer maps (Brown's TRANSPORT formalism, spec §2):
//!   z_i ← C_i + Σ_j R_ij z_j + Σ_{j≤k} T_ijk z_j z_k,
//! computed once per element on the host by pushing order-2 power series through the element's
//! exact map, and applied to particles with only the non-zero coefficients.

use crate::exact::{self, Coords};
use crate::tpsa::{pair, Tpsa2, N};

/// A magnetic element of the lattice.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Element {
    /// Field-free drift of length `l` [m].
    Drift { l: f64 },
    /// Hard-edge quadrupole: length [m], K1 [m⁻²] (> 0 focuses in x).
    Quad { l: f64, k1: f64 },
    /// Hard-edge sextupole: length [m], K2 [m⁻³].
    Sext { l: f64, k2: f64 },
    /// A marker: the identity.
    Marker,
    /// Sector bend (SBEN, CSBEND; RBEN with its edge angles), [`crate::elements::bend`].
    Bend(crate::elements::bend::Bend),
    /// Thin or kick-integrated multipole (MULT, KOCT), [`crate::elements::multipole`].
    Multipole(crate::elements::multipole::Multipole),
    /// Orbit corrector (HKICK, VKICK, KICKER).
    Kicker(crate::elements::multipole::Kicker),
    /// Solenoid (SOLE), [`crate::elements::solenoid`].
    Solenoid(crate::elements::solenoid::Solenoid),
}

impl Element {
    pub fn length(&self) -> f64 {
        match *self {
            Element::Drift { l } | Element::Quad { l, .. } | Element::Sext { l, .. } => l,
            Element::Marker => 0.0,
            Element::Bend(b) => b.l,
            Element::Multipole(m) => m.l,
            Element::Kicker(k) => k.l,
            Element::Solenoid(s) => s.l,
        }
    }

    /// The exact map (to rounding), for f64 tracking or power series.
    pub fn exact<R: crate::tpsa::Real>(&self, z: &mut Coords<R>) {
        match *self {
            Element::Drift { l } => exact::drift(z, l),
            Element::Quad { l, k1 } => exact::multipole(z, l, k1, 0.0, exact::default_steps(l)),
            Element::Sext { l, k2 } => exact::multipole(z, l, 0.0, k2, exact::default_steps(l)),
            Element::Marker => {}
            Element::Bend(b) => b.exact(z),
            Element::Multipole(m) => m.exact(z),
            Element::Kicker(k) => k.exact(z),
            Element::Solenoid(s) => s.exact(z),
        }
    }

    /// The symplectic kick–drift integration with the element's N_KICKS (ELEGANT's CSBEND,
    /// KQUAD, KSEXT, KOCT, MULT); elements without one use their exact map.
    pub fn kick_drift<R: crate::tpsa::Real>(&self, z: &mut Coords<R>) {
        match *self {
            Element::Bend(b) => b.kick_drift(z),
            Element::Multipole(m) => m.kick_drift(z),
            _ => self.exact(z),
        }
    }

    /// The element's second-order map around the reference orbit z = 0.
    pub fn map2(&self) -> Map2 {
        self.map2_with(0.0, 2)
    }

    /// The map of the element rotated by `tilt` [rad] about the beam axis (ELEGANT's TILT: the
    /// element's frame is the lab frame turned by `tilt`), truncated to `order` 1 or 2.
    pub fn map2_with(&self, tilt: f64, order: u8) -> Map2 {
        let mut m = self.map2_at(tilt, &[0.0; N]);
        if order < 2 {
            m.t.clear();
        }
        m
    }

    /// The second-order expansion of the element (rotated by `tilt`) around the point `z0`:
    /// C is the image of `z0`, R the Jacobian there and T the second-order coefficients
    /// (Brown's convention), as a series in the deviation z − z0.
    pub fn map2_at(&self, tilt: f64, z0: &[f64; N]) -> Map2 {
        let mut z: Coords<Tpsa2> = std::array::from_fn(|i| Tpsa2::variable(i, z0[i]));
        rotate(&mut z, tilt);
        self.exact(&mut z);
        rotate(&mut z, -tilt);
        Map2::from_series(&z)
    }
}

use crate::elements::rotate;

/// One non-zero second-order coefficient T_ijk (j ≤ k).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    pub i: u8,
    pub j: u8,
    pub k: u8,
    pub value: f64,
}

/// z ← C + R z + T z z.
#[derive(Clone, Debug, PartialEq)]
pub struct Map2 {
    pub c: [f64; N],
    pub r: [[f64; N]; N],
    /// Non-zero T_ijk, ordered by i, then (j, k).
    pub t: Vec<Term>,
}

/// Coefficients below this (absolute, in SI units of the map) are rounding noise of the exact
/// integration of an element whose true coefficient is zero, and are dropped.
const ZERO: f64 = 1e-13;

impl Map2 {
    pub fn identity() -> Self {
        let mut r = [[0.0; N]; N];
        (0..N).for_each(|i| r[i][i] = 1.0);
        Self {
            c: [0.0; N],
            r,
            t: Vec::new(),
        }
    }

    fn from_series(z: &Coords<Tpsa2>) -> Self {
        let mut m = Self::identity();
        for i in 0..N {
            m.c[i] = z[i].c;
            m.r[i] = z[i].g;
            for j in 0..N {
                for k in j..N {
                    let v = z[i].h[pair(j, k)];
                    if v.abs() > ZERO {
                        m.t.push(Term {
                            i: i as u8,
                            j: j as u8,
                            k: k as u8,
                            value: v,
                        });
                    }
                }
            }
        }
        m
    }

    /// Apply to one particle (all outputs from the same input).
    pub fn apply(&self, z: &mut [f64; N]) {
        let zin = *z;
        for i in 0..N {
            let mut v = self.c[i];
            for j in 0..N {
                v += self.r[i][j] * zin[j];
            }
            z[i] = v;
        }
        for t in &self.t {
            z[t.i as usize] += t.value * zin[t.j as usize] * zin[t.k as usize];
        }
    }

    /// Apply the linear part only (C + R z).
    pub fn apply_linear(&self, z: &mut [f64; N]) {
        let zin = *z;
        for i in 0..N {
            z[i] = self.c[i] + (0..N).map(|j| self.r[i][j] * zin[j]).sum::<f64>();
        }
    }

    /// Floating-point operations of [`Map2::apply`] with the zeros of R skipped (one multiply
    /// and one add per non-zero R_ij off the identity, three per T term).
    pub fn flops(&self) -> usize {
        let r: usize = (0..N)
            .map(|i| (0..N).filter(|&j| self.r[i][j] != 0.0 && !(i == j && self.r[i][j] == 1.0)).count() * 2)
            .sum();
        let c = self.c.iter().filter(|&&v| v != 0.0).count();
        r + c + 3 * self.t.len()
    }
}

/// R of a sequence of maps (the first applied first): R_line = R_n ⋯ R_1.
pub fn compose_linear(maps: &[Map2]) -> [[f64; N]; N] {
    let mut acc = Map2::identity().r;
    for m in maps {
        let mut next = [[0.0; N]; N];
        for i in 0..N {
            for j in 0..N {
                next[i][j] = (0..N).map(|k| m.r[i][k] * acc[k][j]).sum();
            }
        }
        acc = next;
    }
    acc
}
