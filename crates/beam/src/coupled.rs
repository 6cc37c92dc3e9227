//! Coupled transverse optics (issue #30): the eigenmodes of a one-turn matrix that couples x and
//! y (tilted magnets, solenoids), and the Mais–Ripken lattice functions of each mode, after
//! A. Wolski, "Alternative approach to general coupled linear optics", Phys. Rev. ST Accel.
//! Beams 9, 024001 (2006), §II–III (implemented from the paper's equations).
//!
//! For a real symplectic 4×4 one-turn matrix M the eigenvalues come in pairs λ, 1/λ; with
//! u = λ + 1/λ the characteristic polynomial becomes u² − tr(M) u + (c₂ − 2) = 0, with
//! c₂ = (tr(M)² − tr(M²))/2 the second invariant. Both roots real in (−2, 2): stable, λ = e^{±iμ}.
//! Each mode k has an eigenvector v_k (M v_k = e^{iμ_k} v_k) normalised so that v_k^† S v_k = 2i
//! (S the symplectic form); then β_{k,x} = |v_k,x|², α_{k,x} = −Re(v_k,px v̄_k,x) and likewise in
//! y. Without coupling, mode I is the horizontal motion and β_{I,x} = β_x: v = (√β, (i − α)/√β).
//! Along the line v_k(s) = J(s) v_k(0), and the phase advance of mode I (II) is that of its x (y)
//! component.

use rustfft::num_complex::Complex64;

/// A mode's eigenvector in (x, x', y, y').
pub type Vector = [Complex64; 4];

/// Why no modes were found.
#[derive(Clone, Debug, PartialEq)]
pub enum ModeError {
    /// Complex u or |u| ≥ 2: the motion grows (`u`: the offending half-trace, u/2).
    Unstable { half_trace: f64 },
    /// The two modes have the same tune (a degenerate eigenvalue): no unique eigenvectors.
    Degenerate,
}

fn trace(m: &[[f64; 4]; 4]) -> f64 {
    (0..4).map(|i| m[i][i]).sum()
}

/// The symplectic product v^† S w with S = diag(J2, J2), J2 = [[0, 1], [−1, 0]].
pub fn symplectic(v: &Vector, w: &Vector) -> Complex64 {
    v[0].conj() * w[1] - v[1].conj() * w[0] + v[2].conj() * w[3] - v[3].conj() * w[2]
}

/// A null vector of the complex 4×4 matrix `a` of rank 3 (Gaussian elimination with full
/// pivoting; the free variable set to 1).
fn null_vector(mut a: [[Complex64; 4]; 4]) -> Option<Vector> {
    let mut cols = [0usize, 1, 2, 3];
    for r in 0..3 {
        // Pivot: the largest entry of the remaining block.
        let (mut pr, mut pc, mut best) = (r, r, -1.0);
        for i in r..4 {
            for j in r..4 {
                let m = a[i][cols[j]].norm();
                if m > best {
                    (pr, pc, best) = (i, j, m);
                }
            }
        }
        if best <= 0.0 {
            return None;
        }
        a.swap(r, pr);
        cols.swap(r, pc);
        for i in 0..4 {
            if i != r {
                let f = a[i][cols[r]] / a[r][cols[r]];
                for j in 0..4 {
                    let t = a[r][cols[j]];
                    a[i][cols[j]] -= f * t;
                }
            }
        }
    }
    // Rows 0..3 now read a[r][cols[r]] x_cols[r] + a[r][cols[3]] x_cols[3] = 0.
    let mut v = [Complex64::new(0.0, 0.0); 4];
    v[cols[3]] = Complex64::new(1.0, 0.0);
    for r in 0..3 {
        v[cols[r]] = -a[r][cols[3]] / a[r][cols[r]];
    }
    Some(v)
}

/// The two modes of the one-turn matrix `m` (x, x', y, y'), normalised (v^† S v = 2i), with
/// their tunes in [0, 1): mode I first (the one with the larger horizontal share β_x/(β_x+β_y)).
pub fn eigenmodes(m: &[[f64; 4]; 4]) -> Result<[(Vector, f64); 2], ModeError> {
    let m2: [[f64; 4]; 4] = std::array::from_fn(|i| std::array::from_fn(|j| (0..4).map(|k| m[i][k] * m[k][j]).sum()));
    let c1 = trace(m);
    let c2 = 0.5 * (c1 * c1 - trace(&m2));
    let disc = c1 * c1 - 4.0 * (c2 - 2.0);
    // Equal tunes (within rounding): the eigenvectors of the double eigenvalue are not unique.
    if disc.abs() <= 1e-12 * (1.0 + c1 * c1) {
        return Err(ModeError::Degenerate);
    }
    // Complex u: the eigenvalues leave the unit circle (the modes' tunes collided).
    if disc.is_nan() || disc <= 0.0 {
        return Err(ModeError::Unstable { half_trace: f64::NAN });
    }
    let roots = [0.5 * (c1 + disc.sqrt()), 0.5 * (c1 - disc.sqrt())];
    let mut modes = Vec::with_capacity(2);
    for u in roots {
        let c = 0.5 * u;
        if !c.is_finite() || c.abs() >= 1.0 {
            return Err(ModeError::Unstable { half_trace: c.abs() });
        }
        let lambda = Complex64::new(c, (1.0 - c * c).sqrt());
        let a: [[Complex64; 4]; 4] = std::array::from_fn(|i| {
            std::array::from_fn(|j| Complex64::new(m[i][j], 0.0) - if i == j { lambda } else { Complex64::new(0.0, 0.0) })
        });
        let mut v = null_vector(a).ok_or(ModeError::Degenerate)?;
        let mut mu = lambda.arg();
        // The normalisation needs Im(v^† S v) > 0; the conjugate vector (eigenvalue e^{−iμ})
        // otherwise.
        let w = symplectic(&v, &v).im;
        if w == 0.0 || !w.is_finite() {
            return Err(ModeError::Degenerate);
        }
        if w < 0.0 {
            v = v.map(|z| z.conj());
            mu = -mu;
        }
        let scale = (2.0 / w.abs()).sqrt();
        v = v.map(|z| z * scale);
        modes.push((v, mu.rem_euclid(std::f64::consts::TAU) / std::f64::consts::TAU));
    }
    let share = |v: &Vector| v[0].norm_sqr() / (v[0].norm_sqr() + v[2].norm_sqr());
    if share(&modes[1].0) > share(&modes[0].0) {
        modes.swap(0, 1);
    }
    Ok([modes[0], modes[1]])
}

/// (β_x, α_x, β_y, α_y) of a normalised mode vector.
pub fn lattice_functions(v: &Vector) -> [f64; 4] {
    [v[0].norm_sqr(), -(v[1] * v[0].conj()).re, v[2].norm_sqr(), -(v[3] * v[2].conj()).re]
}

/// `j` (the 4×4 transverse block of an element's Jacobian) applied to `v`.
pub fn transport(j: &[[f64; 6]; 6], v: &Vector) -> Vector {
    std::array::from_fn(|i| (0..4).map(|k| v[k] * j[i][k]).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uncoupled(mu: [f64; 2], beta: [f64; 2], alpha: [f64; 2]) -> [[f64; 4]; 4] {
        let mut m = [[0.0; 4]; 4];
        for p in 0..2 {
            let (s, c, b, a) = (mu[p].sin(), mu[p].cos(), beta[p], alpha[p]);
            let g = (1.0 + a * a) / b;
            let o = 2 * p;
            m[o][o] = c + a * s;
            m[o][o + 1] = b * s;
            m[o + 1][o] = -g * s;
            m[o + 1][o + 1] = c - a * s;
        }
        m
    }

    /// Without coupling the modes are the planes: β, α and the tunes come back.
    #[test]
    fn uncoupled_modes_are_the_planes() {
        let m = uncoupled([2.1, 0.9], [12.0, 3.5], [-1.2, 0.4]);
        let [(v1, q1), (v2, q2)] = eigenmodes(&m).unwrap();
        let f1 = lattice_functions(&v1);
        let f2 = lattice_functions(&v2);
        assert!(
            (f1[0] - 12.0).abs() < 1e-12 && (f1[1] + 1.2).abs() < 1e-12 && f1[2] < 1e-24,
            "{f1:?}"
        );
        assert!(
            (f2[2] - 3.5).abs() < 1e-12 && (f2[3] - 0.4).abs() < 1e-12 && f2[0] < 1e-24,
            "{f2:?}"
        );
        assert!((q1 - 2.1 / std::f64::consts::TAU).abs() < 1e-14 && (q2 - 0.9 / std::f64::consts::TAU).abs() < 1e-14);
        assert!((symplectic(&v1, &v1) - Complex64::new(0.0, 2.0)).norm() < 1e-12);
        assert!(symplectic(&v1, &v2).norm() < 1e-12, "the modes are symplectically orthogonal");
    }

    /// A rotated frame (M' = R(−θ) M R(θ)): the same tunes, β_{I,x} = β_x cos²θ,
    /// β_{I,y} = β_x sin²θ, β_{II,y} = β_y cos²θ.
    #[test]
    fn rotated_planes_share_their_beta() {
        let m0 = uncoupled([2.1, 0.9], [12.0, 3.5], [-1.2, 0.4]);
        let t: f64 = 0.3;
        let (c, s) = (t.cos(), t.sin());
        let r = |a: f64| {
            let (c, s) = (a.cos(), a.sin());
            let mut q = [[0.0; 4]; 4];
            for k in 0..2 {
                q[k][k] = c;
                q[k + 2][k + 2] = c;
                q[k][k + 2] = s;
                q[k + 2][k] = -s;
            }
            q
        };
        let mul = |a: &[[f64; 4]; 4], b: &[[f64; 4]; 4]| -> [[f64; 4]; 4] {
            std::array::from_fn(|i| std::array::from_fn(|j| (0..4).map(|k| a[i][k] * b[k][j]).sum()))
        };
        let m = mul(&r(-t), &mul(&m0, &r(t)));
        let [(v1, q1), (v2, q2)] = eigenmodes(&m).unwrap();
        let (f1, f2) = (lattice_functions(&v1), lattice_functions(&v2));
        assert!((q1 - 2.1 / std::f64::consts::TAU).abs() < 1e-12 && (q2 - 0.9 / std::f64::consts::TAU).abs() < 1e-12);
        assert!(
            (f1[0] - 12.0 * c * c).abs() < 1e-10 && (f1[2] - 12.0 * s * s).abs() < 1e-10,
            "{f1:?}"
        );
        assert!((f2[2] - 3.5 * c * c).abs() < 1e-10 && (f2[0] - 3.5 * s * s).abs() < 1e-10, "{f2:?}");
        assert!((f1[1] + 1.2 * c * c).abs() < 1e-10, "{f1:?}");
    }

    #[test]
    fn unstable_and_degenerate_matrices_are_refused() {
        let mut m = uncoupled([2.1, 0.9], [12.0, 3.5], [0.0, 0.0]);
        m[0][0] = 3.0;
        m[1][1] = 1.0 / 3.0;
        m[0][1] = 0.0;
        m[1][0] = 0.0;
        assert!(matches!(eigenmodes(&m), Err(ModeError::Unstable { .. })));
        let same = uncoupled([1.0, 1.0], [2.0, 2.0], [0.0, 0.0]);
        assert_eq!(eigenmodes(&same), Err(ModeError::Degenerate));
    }
}
