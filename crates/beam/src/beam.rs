//! Particles (spec §1, §5): ELEGANT's six coordinates in double precision, struct-of-arrays,
//! with a loss flag per particle; Gaussian beams from Twiss parameters drawn from Philox streams
//! keyed by particle index (the same beam on every device and thread count); Parquet out (files
//! in: [`crate::beam_file`]).

use crate::species::Species;
use warpdrive_core::rng::RandomStream;
use warpdrive_core::table::{Column, Table};

pub use crate::species::{ELECTRON_MASS_EV, PROTON_MASS_EV};

/// Speed of light [m/s].
pub const C_LIGHT: f64 = 299_792_458.0;

/// The reference particle: rest energy, charge and central momentum β0γ0 (ELEGANT's p_central).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    /// m c² [eV].
    pub mass_ev: f64,
    /// p0 / (m c).
    pub p_central: f64,
    /// Charge of each particle in units of e (signed).
    pub charge: f64,
}

impl Reference {
    /// The reference of `species` at β0γ0 = `p_central`.
    pub fn new(species: &Species, p_central: f64) -> Self {
        Self {
            mass_ev: species.mass_ev,
            p_central,
            charge: species.charge,
        }
    }

    /// An electron at β0γ0 = `p_central`.
    pub fn electron(p_central: f64) -> Self {
        Self::new(&Species::electron(), p_central)
    }

    /// m c² / |q| [eV per unit charge]: an energy gain of |q|·V eV is V/(m c²/|q|) in units of
    /// m c² (for |q| = 1 exactly V/m c², bit for bit what the GPU's kick computes).
    pub fn mass_per_charge(&self) -> f64 {
        self.mass_ev / self.charge.abs()
    }

    pub fn gamma(&self) -> f64 {
        (1.0 + self.p_central * self.p_central).sqrt()
    }
    pub fn beta(&self) -> f64 {
        self.p_central / self.gamma()
    }
    /// Total energy γ0 m c² [eV].
    pub fn energy_ev(&self) -> f64 {
        self.gamma() * self.mass_ev
    }
}

/// β of a particle with relative momentum deviation δ (p = p0(1+δ) in units of m c).
#[inline]
pub fn beta_of(p_central: f64, delta: f64) -> f64 {
    let p = p_central * (1.0 + delta);
    p / (1.0 + p * p).sqrt()
}

/// 6-D coordinates of all particles, one array per coordinate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Particles {
    pub x: Vec<f64>,
    pub xp: Vec<f64>,
    pub y: Vec<f64>,
    pub yp: Vec<f64>,
    /// Path length travelled [m].
    pub s: Vec<f64>,
    pub delta: Vec<f64>,
    /// 0 = alive, else 1 + index of the element where the particle was lost.
    pub lost_at: Vec<u32>,
    /// Pass (turn, from 0) in which it was lost.
    pub lost_pass: Vec<u32>,
}

impl Particles {
    pub fn with_len(n: usize) -> Self {
        Self {
            x: vec![0.0; n],
            xp: vec![0.0; n],
            y: vec![0.0; n],
            yp: vec![0.0; n],
            s: vec![0.0; n],
            delta: vec![0.0; n],
            lost_at: vec![0; n],
            lost_pass: vec![0; n],
        }
    }

    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Rows `r` as particles of their own (a batch job's share of a bunch).
    #[must_use]
    pub fn slice(&self, r: std::ops::Range<usize>) -> Self {
        Self {
            x: self.x[r.clone()].to_vec(),
            xp: self.xp[r.clone()].to_vec(),
            y: self.y[r.clone()].to_vec(),
            yp: self.yp[r.clone()].to_vec(),
            s: self.s[r.clone()].to_vec(),
            delta: self.delta[r.clone()].to_vec(),
            lost_at: self.lost_at[r.clone()].to_vec(),
            lost_pass: self.lost_pass[r].to_vec(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    pub fn get(&self, i: usize) -> [f64; 6] {
        [self.x[i], self.xp[i], self.y[i], self.yp[i], self.s[i], self.delta[i]]
    }

    pub fn set(&mut self, i: usize, z: [f64; 6]) {
        self.x[i] = z[0];
        self.xp[i] = z[1];
        self.y[i] = z[2];
        self.yp[i] = z[3];
        self.s[i] = z[4];
        self.delta[i] = z[5];
    }

    /// The six coordinate arrays, in order.
    pub fn coords(&self) -> [&Vec<f64>; 6] {
        [&self.x, &self.xp, &self.y, &self.yp, &self.s, &self.delta]
    }

    pub fn coords_mut(&mut self) -> [&mut Vec<f64>; 6] {
        [&mut self.x, &mut self.xp, &mut self.y, &mut self.yp, &mut self.s, &mut self.delta]
    }

    pub fn alive(&self) -> usize {
        self.lost_at.iter().filter(|&&l| l == 0).count()
    }
}

/// Twiss parameters and emittance of one transverse plane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plane {
    pub beta: f64,
    pub alpha: f64,
    /// Geometric RMS emittance [m rad].
    pub emittance: f64,
}

/// A Gaussian bunch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BeamSpec {
    pub x: Plane,
    pub y: Plane,
    /// RMS bunch length in path length [m] (the s coordinate).
    pub sigma_s: f64,
    /// RMS relative momentum spread.
    pub sigma_delta: f64,
    pub particles: usize,
    pub seed: u64,
}

/// Stream tag of beam generation (so beams never share random numbers with other uses).
const BEAM_TAG: u32 = 0xBEA3;

/// Particle `i` of a Gaussian beam: in each plane u = √(εβ) a, u' = √(ε/β)(b − α a) with a, b
/// standard normal, so ⟨u²⟩ = εβ, ⟨uu'⟩ = −εα, ⟨u'²⟩ = ε(1+α²)/β.
pub fn gaussian_particle(spec: &BeamSpec, i: u64) -> [f64; 6] {
    let mut r = RandomStream::new(spec.seed, BEAM_TAG, i);
    let mut plane = |p: &Plane| {
        let (a, b) = (r.normal(), r.normal());
        let u = (p.emittance * p.beta).sqrt() * a;
        let up = (p.emittance / p.beta).sqrt() * (b - p.alpha * a);
        (u, up)
    };
    let (x, xp) = plane(&spec.x);
    let (y, yp) = plane(&spec.y);
    let s = spec.sigma_s * r.normal();
    let d = spec.sigma_delta * r.normal();
    [x, xp, y, yp, s, d]
}

pub fn gaussian(spec: &BeamSpec) -> Particles {
    use rayon::prelude::*;
    let zs: Vec<[f64; 6]> = (0..spec.particles as u64)
        .into_par_iter()
        .map(|i| gaussian_particle(spec, i))
        .collect();
    let mut p = Particles::with_len(spec.particles);
    for (i, z) in zs.into_iter().enumerate() {
        p.set(i, z);
    }
    p
}

/// Particle coordinates and loss flags as a table (columns x, xp, y, yp, s, delta, t, p,
/// lost_at, lost_pass).
pub fn to_table(p: &Particles, reference: &Reference) -> Table {
    let mut t = Table::default();
    for (name, c) in ["x", "xp", "y", "yp", "s", "delta"].iter().zip(p.coords()) {
        t.push(name, Column::F64(c.clone()));
    }
    let time =
        p.s.iter()
            .zip(&p.delta)
            .map(|(s, d)| crate::lsc::time_of(*s, *d, reference.p_central))
            .collect();
    let mom = p.delta.iter().map(|d| reference.p_central * (1.0 + d)).collect();
    t.push("t", Column::F64(time));
    t.push("p", Column::F64(mom));
    t.push("lost_at", Column::I64(p.lost_at.iter().map(|&v| i64::from(v)).collect()));
    t.push("lost_pass", Column::I64(p.lost_pass.iter().map(|&v| i64::from(v)).collect()));
    t
}

/// First and second moments of the surviving particles.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    pub alive: usize,
    pub mean: [f64; 6],
    /// Central second moments ⟨(z_i − z̄_i)(z_j − z̄_j)⟩.
    pub sigma: [[f64; 6]; 6],
}

impl Moments {
    /// The moments of `p`'s surviving particles, folded block by block
    /// ([`crate::moments`]: the same bits however the bunch is split between batch jobs).
    pub fn of(p: &Particles) -> Self {
        let total = p.len() as u64;
        crate::moments::fold(crate::moments::partials(p, 0, total).iter().map(|(_, q)| q))
    }

    pub fn rms(&self, k: usize) -> f64 {
        self.sigma[k][k].max(0.0).sqrt()
    }

    /// Geometric RMS emittance of plane 0 (x) or 1 (y).
    pub fn emittance(&self, plane: usize) -> f64 {
        let (a, b) = (2 * plane, 2 * plane + 1);
        (self.sigma[a][a] * self.sigma[b][b] - self.sigma[a][b] * self.sigma[a][b])
            .max(0.0)
            .sqrt()
    }
}
