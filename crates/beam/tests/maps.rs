//! The map validation of spec §2.3: analytic R of drifts and quadrupoles, chromatic T, T against
//! finite differences of the exact map, symplecticity, the ε³ scaling of the second-order map's
//! error, and the optics of a FODO cell recovered by tracking.

// Index loops mirror R_ij and J_pq.
#![allow(clippy::needless_range_loop)]

use warpdrive_beam::map::{compose_linear, Element, Map2};

type M6 = [[f64; 6]; 6];

fn j6() -> M6 {
    let mut j = [[0.0; 6]; 6];
    for p in 0..3 {
        j[2 * p][2 * p + 1] = 1.0;
        j[2 * p + 1][2 * p] = -1.0;
    }
    j
}

/// max |RᵀJR − J|.
fn symplectic_error(r: &M6) -> f64 {
    let j = j6();
    let mut worst = 0.0f64;
    for a in 0..6 {
        for b in 0..6 {
            let mut v = 0.0;
            for p in 0..6 {
                for q in 0..6 {
                    v += r[p][a] * j[p][q] * r[q][b];
                }
            }
            worst = worst.max((v - j[a][b]).abs());
        }
    }
    worst
}

fn t_of(m: &Map2, i: usize, j: usize, k: usize) -> f64 {
    m.t.iter()
        .find(|t| (t.i as usize, t.j as usize, t.k as usize) == (i, j.min(k), j.max(k)))
        .map_or(0.0, |t| t.value)
}

fn exact(e: &Element, z: [f64; 6]) -> [f64; 6] {
    let mut z = z;
    e.exact(&mut z);
    z
}

/// Analytic 2×2 thick-lens matrix of a quadrupole plane with strength k1 (> 0 focusing).
fn plane(k1: f64, l: f64) -> [[f64; 2]; 2] {
    if k1 > 0.0 {
        let k = k1.sqrt();
        [[(k * l).cos(), (k * l).sin() / k], [-k * (k * l).sin(), (k * l).cos()]]
    } else if k1 < 0.0 {
        let k = (-k1).sqrt();
        [[(k * l).cosh(), (k * l).sinh() / k], [k * (k * l).sinh(), (k * l).cosh()]]
    } else {
        [[1.0, l], [0.0, 1.0]]
    }
}

#[test]
fn drift_map_is_brown_s() {
    let l = 1.7;
    let m = Element::Drift { l }.map2();
    for i in 0..6 {
        for j in 0..6 {
            let want = if i == j {
                1.0
            } else if (i, j) == (0, 1) || (i, j) == (2, 3) {
                l
            } else {
                0.0
            };
            assert_eq!(m.r[i][j], want, "R{}{}", i + 1, j + 1);
        }
    }
    assert_eq!(m.c[4], l);
    assert_eq!(m.t.len(), 2, "{:?}", m.t);
    assert!((t_of(&m, 4, 1, 1) - l / 2.0).abs() < 1e-15);
    assert!((t_of(&m, 4, 3, 3) - l / 2.0).abs() < 1e-15);
}

#[test]
fn quadrupole_linear_and_chromatic_terms_are_analytic() {
    for (l, k1) in [(0.3, 1.2), (0.3, -1.2), (0.5, 4.0), (1.0, -0.3)] {
        let m = Element::Quad { l, k1 }.map2();
        let (px, py) = (plane(k1, l), plane(-k1, l));
        for a in 0..2 {
            for b in 0..2 {
                assert!(
                    (m.r[a][b] - px[a][b]).abs() < 1e-12,
                    "K1 {k1}: R{}{} {} vs {}",
                    a + 1,
                    b + 1,
                    m.r[a][b],
                    px[a][b]
                );
                assert!((m.r[2 + a][2 + b] - py[a][b]).abs() < 1e-12, "K1 {k1}: R{}{}", a + 3, b + 3);
            }
        }
        assert!(m.r[0][5].abs() < 1e-14 && m.r[4][5].abs() < 1e-14 && (m.r[4][4] - 1.0).abs() < 1e-14);
        // T_ij6 = ∂R_ij/∂δ with K1 → K1/(1+δ): for R11 = cos(kL), ∂/∂δ = (kL/2) sin(kL) (focusing),
        // for cosh: −(kL/2) sinh(kL).
        let k = k1.abs().sqrt();
        let (f, d) = ((k * l / 2.0) * (k * l).sin(), -(k * l / 2.0) * (k * l).sinh());
        let (t116, t336) = if k1 > 0.0 { (f, d) } else { (d, f) };
        assert!((t_of(&m, 0, 0, 5) - t116).abs() < 1e-10, "T116 {} vs {t116}", t_of(&m, 0, 0, 5));
        assert!((t_of(&m, 2, 2, 5) - t336).abs() < 1e-10, "T336 {} vs {t336}", t_of(&m, 2, 2, 5));
        assert!(symplectic_error(&m.r) < 1e-12, "{}", symplectic_error(&m.r));
    }
}

/// Every T_ijk of a quadrupole and a sextupole against central second differences of the exact
/// map (step 1e-4: truncation ~1e-8·M'''' , rounding ~1e-14/h² = 1e-6 on s).
#[test]
fn second_order_terms_match_finite_differences() {
    let h = 1e-4;
    for e in [
        Element::Quad { l: 0.4, k1: 2.0 },
        Element::Quad { l: 0.4, k1: -2.0 },
        Element::Sext { l: 0.3, k2: 30.0 },
    ] {
        let m = e.map2();
        let at = |d: &[(usize, f64)]| {
            let mut z = [0.0; 6];
            d.iter().for_each(|&(i, v)| z[i] += v);
            exact(&e, z)
        };
        let mut checked = 0;
        for j in 0..6 {
            for k in j..6 {
                let fd: Vec<f64> = if j == k {
                    let (p, z0, q) = (at(&[(j, h)]), at(&[]), at(&[(j, -h)]));
                    (0..6).map(|i| 0.5 * (p[i] - 2.0 * z0[i] + q[i]) / (h * h)).collect()
                } else {
                    let (pp, pm, mp, mm) = (
                        at(&[(j, h), (k, h)]),
                        at(&[(j, h), (k, -h)]),
                        at(&[(j, -h), (k, h)]),
                        at(&[(j, -h), (k, -h)]),
                    );
                    (0..6).map(|i| (pp[i] - pm[i] - mp[i] + mm[i]) / (4.0 * h * h)).collect()
                };
                for (i, want) in fd.iter().enumerate() {
                    let got = t_of(&m, i, j, k);
                    assert!(
                        (got - want).abs() < 2e-5 * want.abs().max(1.0),
                        "{e:?}: T{}{}{} = {got} vs finite differences {want}",
                        i + 1,
                        j + 1,
                        k + 1
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 6 * 21);
        assert!(!m.t.is_empty());
    }
}

/// Least-squares slope of log y against log x.
fn slope(x: &[f64], y: &[f64]) -> f64 {
    let lx: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let ly: Vec<f64> = y.iter().map(|v| v.ln()).collect();
    let n = x.len() as f64;
    let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
    let sxy: f64 = lx.iter().zip(&ly).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = lx.iter().map(|a| (a - mx) * (a - mx)).sum();
    sxy / sxx
}

/// Spec §2.3: |M_2nd(z) − M_exact(z)| ∝ ε³, the linear map's residual ∝ ε², over two decades.
#[test]
fn second_order_error_scales_as_amplitude_cubed() {
    let e = Element::Quad { l: 0.5, k1: 3.0 };
    let m = e.map2();
    let dir = [1.0, -0.6, 0.8, 0.5, 0.0, 0.7];
    let (mut eps, mut r2, mut r1) = (Vec::new(), Vec::new(), Vec::new());
    for p in 0..11 {
        let a = 1e-4 * 10f64.powf(p as f64 / 5.0); // 1e-4 … 1e-2
        let z: [f64; 6] = std::array::from_fn(|i| a * dir[i]);
        let ex = exact(&e, z);
        let (mut second, mut first) = (z, z);
        m.apply(&mut second);
        m.apply_linear(&mut first);
        // Transverse coordinates: s carries the path length L itself, whose rounding would
        // swamp the smallest residuals.
        let err = |w: &[f64; 6]| (0..4).map(|i| (w[i] - ex[i]).abs()).fold(0.0f64, f64::max);
        eps.push(a);
        r2.push(err(&second));
        r1.push(err(&first));
    }
    let (s2, s1) = (slope(&eps, &r2), slope(&eps, &r1));
    eprintln!("slopes: second order {s2:.3}, linear {s1:.3}; residuals {r2:?}");
    assert!((s2 - 3.0).abs() < 0.1, "second-order residual slope {s2}");
    assert!((s1 - 2.0).abs() < 0.1, "linear residual slope {s1}");
}

/// Spec §2.3 FODO: QF (0.3 m, K1 = 1.2), drift 1 m, QD (K1 = −1.2), drift 1 m.
#[test]
fn fodo_cell_tune_and_beta_by_tracking() {
    let cell = [
        Element::Quad { l: 0.3, k1: 1.2 },
        Element::Drift { l: 1.0 },
        Element::Quad { l: 0.3, k1: -1.2 },
        Element::Drift { l: 1.0 },
    ];
    let maps: Vec<Map2> = cell.iter().map(Element::map2).collect();
    let r = compose_linear(&maps);
    assert!(symplectic_error(&r) < 1e-12, "{}", symplectic_error(&r));
    // Analytic one-cell matrix in x from the thick-lens formulas.
    let mul = |a: [[f64; 2]; 2], b: [[f64; 2]; 2]| -> [[f64; 2]; 2] {
        std::array::from_fn(|i| std::array::from_fn(|j| a[i][0] * b[0][j] + a[i][1] * b[1][j]))
    };
    let d = [[1.0, 1.0], [0.0, 1.0]];
    let rx = mul(d, mul(plane(-1.2, 0.3), mul(d, plane(1.2, 0.3))));
    let cos_mu = 0.5 * (rx[0][0] + rx[1][1]);
    let mu = cos_mu.acos();
    let beta = rx[0][1] / mu.sin();
    let alpha = (rx[0][0] - rx[1][1]) / (2.0 * mu.sin());
    assert!((0.5 * (r[0][0] + r[1][1]) - cos_mu).abs() < 1e-12);
    // Track a small-amplitude particle 2 000 cells with the second-order maps.
    let mut z = [1e-7, 0.0, 0.0, 0.0, 0.0, 0.0];
    let mut pts = Vec::new();
    for _ in 0..2000 {
        maps.iter().for_each(|m| m.apply(&mut z));
        pts.push((z[0], z[1]));
    }
    // Ellipse A x² + 2B x x' + C x'² = 1 by least squares → β = C/√(AC − B²).
    let mut ata = [[0.0; 3]; 3];
    let mut atb = [0.0; 3];
    for &(x, xp) in &pts {
        let row = [x * x, 2.0 * x * xp, xp * xp];
        for a in 0..3 {
            atb[a] += row[a];
            for b in 0..3 {
                ata[a][b] += row[a] * row[b];
            }
        }
    }
    let det3 = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let solve = |c: usize| {
        let mut m = ata;
        (0..3).for_each(|r| m[r][c] = atb[r]);
        det3(m) / det3(ata)
    };
    let (a, b, c) = (solve(0), solve(1), solve(2));
    let emit = 1.0 / (a * c - b * b).sqrt();
    let (beta_fit, alpha_fit) = (c * emit, b * emit);
    assert!((beta_fit - beta).abs() < 1e-6 * beta, "β tracked {beta_fit} vs analytic {beta}");
    assert!((alpha_fit - alpha).abs() < 1e-6 * beta, "α tracked {alpha_fit} vs analytic {alpha}");
    // Phase advance per cell in normalised coordinates.
    let phase = |&(x, xp): &(f64, f64)| (-(alpha * x + beta * xp) / beta.sqrt()).atan2(x / beta.sqrt());
    let mut adv = 0.0;
    for w in pts.windows(2) {
        let mut d = phase(&w[0]) - phase(&w[1]);
        d = (d + std::f64::consts::PI).rem_euclid(2.0 * std::f64::consts::PI) - std::f64::consts::PI;
        adv += d;
    }
    let mu_tracked = adv / (pts.len() - 1) as f64;
    assert!((mu_tracked.abs() - mu).abs() < 1e-9, "μ tracked {mu_tracked} vs analytic {mu}");
    eprintln!(
        "FODO: μ = {:.6}° (tune {:.6}), β = {beta:.6} m, α = {alpha:.6}",
        mu.to_degrees(),
        mu / (2.0 * std::f64::consts::PI)
    );
}
