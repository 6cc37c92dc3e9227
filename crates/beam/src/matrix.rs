//! The transfer matrices of a line (`.ele` `matrix_output`, issue #30): the first- and
//! second-order map from the start of the line to the end of every element, C (the image of
//! the reference particle), R and T in TRANSPORT's convention (K. L. Brown, SLAC-75;
//! T_ijk for j ≤ k, the coefficient of z_j z_k), built by concatenating the elements' own
//! second-order maps ([`crate::twiss::element_map`]) as order-2 truncated power series
//! ([`crate::tpsa`]): the terms of order 3 and more that a product of two second-order maps
//! holds are dropped, as in the TRANSPORT concatenation.
//!
//! Written as SDDS ([`sdds_file`]: a row per element end with s, ElementName, ElementType,
//! C1…C6, R11…R66 and, for order 2, T111…T666) and as text ([`printout`]).

use crate::lattice::Lattice;
use crate::map::Map2;
use crate::sdds::{ColumnData, Data, Page, Sdds};
use crate::tpsa::{pair, Tpsa2, N, PAIRS};

/// The map from the start of the line to the end of one element.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixRow {
    /// Position of the element's end [m].
    pub s: f64,
    pub name: String,
    pub kind: &'static str,
    pub c: [f64; N],
    pub r: [[f64; N]; N],
    /// T_ijk at `[i][pair(j, k)]` (j ≤ k, [`crate::tpsa::pair`]).
    pub t: [[f64; PAIRS]; N],
}

/// `m` applied to a map given as series: the concatenation m ∘ w, truncated at order 2.
pub fn apply_series(m: &Map2, w: &[Tpsa2; N]) -> [Tpsa2; N] {
    let mut out: [Tpsa2; N] = std::array::from_fn(|i| Tpsa2::constant(m.c[i]));
    for i in 0..N {
        for j in 0..N {
            if m.r[i][j] != 0.0 {
                out[i] = out[i] + Tpsa2::constant(m.r[i][j]) * w[j];
            }
        }
    }
    for t in &m.t {
        let (i, j, k) = (t.i as usize, t.j as usize, t.k as usize);
        out[i] = out[i] + Tpsa2::constant(t.value) * w[j] * w[k];
    }
    out
}

/// The maps from the start of `lattice`'s line to the end of each of its elements, in order.
pub fn line_matrices(lattice: &Lattice) -> Vec<MatrixRow> {
    let mut w: [Tpsa2; N] = std::array::from_fn(|i| Tpsa2::variable(i, 0.0));
    let mut s = 0.0;
    let mut cache: std::collections::HashMap<&str, Map2> = std::collections::HashMap::new();
    lattice
        .elements
        .iter()
        .map(|e| {
            let m = cache.entry(e.name.as_str()).or_insert_with(|| crate::twiss::element_map(e));
            w = apply_series(m, &w);
            s += e.length();
            MatrixRow {
                s,
                name: e.name.clone(),
                kind: e.type_name(),
                c: std::array::from_fn(|i| w[i].c),
                r: std::array::from_fn(|i| w[i].g),
                t: std::array::from_fn(|i| w[i].h),
            }
        })
        .collect()
}

/// The column names of T in order, as ELEGANT writes them (its `EMATRIX` and `matrix_output`
/// files): T{i}{j}{k} for i = 1..6, j = 1..6, k = 1..j (1-based), the coefficient of z_j z_k. The
/// coefficient is TRANSPORT's T_ikj (Brown writes j ≤ k); only the name puts the larger index first.
fn t_names() -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    for i in 0..N {
        for j in 0..N {
            for k in 0..=j {
                out.push((i, pair(k, j), format!("T{}{}{}", i + 1, j + 1, k + 1)));
            }
        }
    }
    out
}

/// The rows as SDDS: s [m], ElementName, ElementType, C1…C6, R11…R66 and (order 2) T111, T121,
/// T122, …, T666 (ELEGANT's names and order, [`t_names`]); parameter pCentral [βγ] and Order.
pub fn sdds_file(rows: &[MatrixRow], order: u8, p_central: f64) -> Sdds {
    let col = |name: String, units: &str, data: Data| ColumnData {
        name,
        units: units.into(),
        data,
    };
    let mut columns = vec![
        col("s".into(), "m", Data::Double(rows.iter().map(|r| r.s).collect())),
        col("ElementName".into(), "", Data::Str(rows.iter().map(|r| r.name.clone()).collect())),
        col(
            "ElementType".into(),
            "",
            Data::Str(rows.iter().map(|r| r.kind.to_string()).collect()),
        ),
    ];
    for i in 0..N {
        columns.push(col(format!("C{}", i + 1), "", Data::Double(rows.iter().map(|r| r.c[i]).collect())));
    }
    for i in 0..N {
        for j in 0..N {
            columns.push(col(
                format!("R{}{}", i + 1, j + 1),
                "",
                Data::Double(rows.iter().map(|r| r.r[i][j]).collect()),
            ));
        }
    }
    if order >= 2 {
        for (i, p, name) in t_names() {
            columns.push(col(name, "", Data::Double(rows.iter().map(|r| r.t[i][p]).collect())));
        }
    }
    Sdds {
        description: "warpdrive beam run: matrix_output".into(),
        contents: "transfer matrices".into(),
        pages: vec![Page {
            parameters: vec![
                crate::sdds::Parameter {
                    name: "pCentral".into(),
                    units: "m$be$nc".into(),
                    value: crate::sdds::Value::Double(p_central),
                },
                crate::sdds::Parameter {
                    name: "Order".into(),
                    units: String::new(),
                    value: crate::sdds::Value::Long(i32::from(order)),
                },
            ],
            columns,
        }],
    }
}

/// The map of the whole line as text: a header, C, R row by row and (order 2) T as a triangle
/// per i, one line per j holding T_ij1 … T_ijj, every number as `%.10e`.
pub fn printout(row: &MatrixRow, order: u8, line: &str, elements: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "matrix of line {line}: {elements} elements, s = {:.6} m, order {order} (coordinates x, xp, y, yp, s, delta)",
        row.s
    );
    let nums = |v: &[f64]| v.iter().map(|x| format!("{x:17.10e}")).collect::<Vec<_>>().join(" ");
    let _ = writeln!(s, "C: {}", nums(&row.c));
    let _ = writeln!(s, "R:");
    for i in 0..N {
        let _ = writeln!(s, "   {}", nums(&row.r[i]));
    }
    if order >= 2 {
        let _ = writeln!(
            s,
            "T (row Tij holds T_ij1 … T_ijj, the coefficients of z_j z_k for k <= j, as ELEGANT names them):"
        );
        for i in 0..N {
            for j in 0..N {
                let row: Vec<f64> = (0..=j).map(|k| row.t[i][pair(k, j)]).collect();
                let _ = writeln!(s, "T{}{}: {}", i + 1, j + 1, nums(&row));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::parse;

    fn rows(text: &str) -> Vec<MatrixRow> {
        line_matrices(&parse(text, "m.lte", None).unwrap())
    }

    /// Two drifts concatenate to the drift of their summed length, to second order.
    #[test]
    fn drifts_concatenate_to_one_drift() {
        let two = rows("A: DRIF, L=0.7\nB: DRIF, L=1.6\nL: LINE=(A, B)\n");
        let one = rows("C: DRIF, L=2.3\nL: LINE=(C)\n");
        let (a, b) = (two.last().unwrap(), &one[0]);
        assert_eq!(two.len(), 2);
        assert!((a.s - 2.3).abs() < 1e-15 && two[0].s == 0.7);
        for i in 0..N {
            for j in 0..N {
                assert!((a.r[i][j] - b.r[i][j]).abs() < 1e-13, "R{}{}", i + 1, j + 1);
            }
            for p in 0..PAIRS {
                assert!(
                    (a.t[i][p] - b.t[i][p]).abs() < 1e-12,
                    "T{} pair {p}: {} vs {}",
                    i + 1,
                    a.t[i][p],
                    b.t[i][p]
                );
            }
        }
        assert!((a.r[0][1] - 2.3).abs() < 1e-13);
        // Slopes make a drift linear in x, x'; its second order is the path length's
        // ½ L (x'² + y'²): T522 = T544 = L/2.
        assert_eq!(a.t[0], [0.0; PAIRS]);
        assert!((a.t[4][pair(1, 1)] - 1.15).abs() < 1e-12, "T522 = L/2: {}", a.t[4][pair(1, 1)]);
        assert!((a.t[4][pair(3, 3)] - 1.15).abs() < 1e-12, "T544 = L/2: {}", a.t[4][pair(3, 3)]);
    }

    /// The concatenated second-order map of a FODO cell with sextupoles and a bend agrees with
    /// tracking through the elements' maps one after the other up to third-order terms: the
    /// difference falls 8× when the amplitude halves.
    #[test]
    fn concatenation_is_exact_to_second_order() {
        let text = "QF: QUAD, L=0.3, K1=1.2\nQD: QUAD, L=0.3, K1=-1.2\nD: DRIF, L=1.0\nS: SEXT, L=0.2, K2=20\n\
                    B: SBEN, L=0.8, ANGLE=0.1, K1=0.1\nL: LINE=(QF, D, S, B, QD, D, S)\n";
        let lattice = parse(text, "m.lte", None).unwrap();
        let total = line_matrices(&lattice).pop().unwrap();
        let maps: Vec<Map2> = lattice.elements.iter().map(crate::twiss::element_map).collect();
        let diff = |eps: f64| {
            let z0 = [1.0 * eps, -0.5 * eps, 0.7 * eps, 0.3 * eps, 0.0, 0.8 * eps];
            let mut z = z0;
            for m in &maps {
                m.apply(&mut z);
            }
            let mut w = total.c;
            for i in 0..N {
                w[i] += (0..N).map(|j| total.r[i][j] * z0[j]).sum::<f64>();
                for j in 0..N {
                    for k in j..N {
                        w[i] += total.t[i][pair(j, k)] * z0[j] * z0[k];
                    }
                }
            }
            (0..N).map(|i| (w[i] - z[i]).abs()).fold(0.0, f64::max)
        };
        let (big, small) = (diff(2e-3), diff(1e-3));
        assert!(big > 0.0 && big < 1e-6, "{big}");
        let ratio = big / small;
        assert!(
            (6.0..10.0).contains(&ratio),
            "third-order remainder: ratio {ratio} ({big:e}, {small:e})"
        );
        // The linear part is the product of the elements' R, up to the feed-down T·C of the
        // rounding-level offsets C (≈ 1e-14) of the integrated bend, which the concatenation
        // keeps and the product of the R does not (measured 6e-12 on R22 = 1.6).
        let r = crate::map::compose_linear(&maps);
        for i in 0..N {
            for j in 0..N {
                assert!(
                    (r[i][j] - total.r[i][j]).abs() < 1e-10,
                    "R{}{}: {} vs {}",
                    i + 1,
                    j + 1,
                    r[i][j],
                    total.r[i][j]
                );
            }
        }
    }

    #[test]
    fn sdds_and_text_name_every_coefficient() {
        let r = rows("Q: QUAD, L=0.5, K1=1\nL: LINE=(Q, Q)\n");
        let f1 = sdds_file(&r, 1, 100.0);
        assert_eq!(f1.pages[0].columns.len(), 3 + 6 + 36);
        let f2 = sdds_file(&r, 2, 100.0);
        assert_eq!(f2.pages[0].columns.len(), 3 + 6 + 36 + 126);
        assert_eq!(f2.pages[0].columns[45].name, "T111");
        assert_eq!(f2.pages[0].columns.last().unwrap().name, "T666");
        let text = printout(r.last().unwrap(), 2, "L", 2);
        assert_eq!(text.lines().count(), 1 + 1 + 1 + 6 + 1 + 36);
        assert!(text.starts_with("matrix of line L: 2 elements, s = 1.000000 m, order 2"), "{text}");
        // ELEGANT's names: the larger index first, in the order T111, T121, T122, T131, …
        let names: Vec<&str> = f2.pages[0].columns[45..51].iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["T111", "T121", "T122", "T131", "T132", "T133"]);
        // T121 is the coefficient of x·x' in x: a drift-free thick quadrupole has one.
        let t121 = &f2.pages[0].columns[46];
        let Data::Double(v) = &t121.data else {
            panic!("T121 is not a double column")
        };
        assert_eq!(v.last().copied(), Some(r.last().unwrap().t[0][pair(0, 1)]));
        assert!(text.contains("\nT12: "), "{text}");
    }
}
