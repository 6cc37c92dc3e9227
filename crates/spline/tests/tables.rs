//! Every table in shared/data/splines loads, evaluates to the reference values of the data's
//! PROVENANCE.md (scipy NdBSpline, double precision), agrees with an independent full-basis
//! de Boor evaluation at random points, and has gradients that match finite differences.

use std::path::{Path, PathBuf};
use warpdrive_core::RandomStream;
use warpdrive_spline::fits::Value;
use warpdrive_spline::SplineTable;

fn data() -> Option<PathBuf> {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")).map(|d| d.join("splines"))
}

fn all_tables(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in std::fs::read_dir(dir).unwrap() {
        let sub = sub.unwrap().path();
        if sub.is_dir() {
            for f in std::fs::read_dir(&sub).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "fits") {
                    out.push(f);
                }
            }
        }
    }
    out.sort();
    out
}

/// All n basis functions of degree k at x by the textbook Cox–de Boor recursion over the whole
/// knot vector (de Boor 1978, eq. IX.(14)); half-open intervals, the right end closed.
fn full_basis(t: &[f64], k: usize, x: f64) -> Vec<f64> {
    let m = t.len();
    let last = t[m - 1];
    let mut b: Vec<f64> = (0..m - 1)
        .map(|i| {
            let inside = (t[i] <= x && x < t[i + 1]) || (x == last && t[i] < t[i + 1] && t[i + 1] == last);
            f64::from(u8::from(inside))
        })
        .collect();
    for j in 1..=k {
        b = (0..m - 1 - j)
            .map(|i| {
                let a = if t[i + j] > t[i] {
                    (x - t[i]) / (t[i + j] - t[i]) * b[i]
                } else {
                    0.0
                };
                let c = if t[i + j + 1] > t[i + 1] {
                    (t[i + j + 1] - x) / (t[i + j + 1] - t[i + 1]) * b[i + 1]
                } else {
                    0.0
                };
                a + c
            })
            .collect();
    }
    b
}

/// Σ c Π B in double precision over the full tensor product (skipping zero weights), plus
/// Σ |c Π B| as the scale of float32 rounding.
fn reference(t: &SplineTable, x: &[f64]) -> (f64, f64) {
    let bases: Vec<Vec<f64>> = (0..t.ndim()).map(|d| full_basis(&t.knots[d], t.order[d] as usize, x[d])).collect();
    let nz: Vec<Vec<(usize, f64)>> = bases
        .iter()
        .map(|b| b.iter().copied().enumerate().filter(|(_, v)| *v != 0.0).collect())
        .collect();
    let (mut sum, mut scale) = (0.0, 0.0);
    let mut idx = vec![0usize; t.ndim()];
    if nz.iter().any(Vec::is_empty) {
        return (0.0, 0.0);
    }
    loop {
        let mut w = 1.0;
        let mut pos = 0;
        for d in 0..t.ndim() {
            let (i, v) = nz[d][idx[d]];
            w *= v;
            pos += i * t.strides[d];
        }
        let term = f64::from(t.coefficients[pos]) * w;
        sum += term;
        scale += term.abs();
        let mut d = t.ndim();
        loop {
            if d == 0 {
                return (sum, scale);
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < nz[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[test]
fn every_table_loads_with_its_metadata() {
    let Some(dir) = data() else { return };
    let files = all_tables(&dir);
    assert_eq!(files.len(), 18, "{files:?}");
    for f in &files {
        let t = SplineTable::read(f).unwrap_or_else(|e| panic!("{e}"));
        for d in 0..t.ndim() {
            assert_eq!(t.knots[d].len(), t.naxes[d] + t.order[d] as usize + 1);
        }
        // Round trip through our writer keeps everything.
        let back = SplineTable::from_bytes(f, &t.to_fits()).unwrap();
        assert_eq!(back.coefficients, t.coefficients, "{}", f.display());
        assert_eq!(back.knots, t.knots);
        assert_eq!(back.order, t.order);
        assert_eq!(back.extents, t.extents);
        assert_eq!(back.aux.len(), t.aux.len(), "{:?} vs {:?}", back.aux, t.aux);
    }
    let ems = SplineTable::read(&dir.join("icetray_photospline_ems/ems_z0_a0.pt.prob.fits")).unwrap();
    assert_eq!(ems.naxes, vec![22, 9, 16, 25]);
    assert_eq!(ems.order, vec![2, 2, 2, 3]);
    assert!(
        (ems.aux_f64("NGROUP").unwrap() - 1.3277).abs() < 1e-4,
        "{:?}",
        ems.aux_f64("NGROUP")
    );
    let xs = SplineTable::read(&dir.join("leptoninjector_xs/test_xs.fits")).unwrap();
    assert!(xs.aux_value("TARGETMASS").is_some(), "HIERARCH key lost: {:?}", xs.aux);
    assert!(xs.aux_value("INTERACTION").is_some());
    let berss = SplineTable::read(&dir.join("nuflux/BERSS_H3p_central.fits")).unwrap();
    assert!(!berss.extents_in_file);
    assert_eq!(berss.order, vec![2, 1]);
    for d in 0..2 {
        let k = berss.order[d] as usize;
        assert_eq!(berss.extents[d], [berss.knots[d][k], berss.knots[d][berss.naxes[d]]]);
    }
    let nco = SplineTable::read(&dir.join("photospline_test/test_spline_5d_nco.fits")).unwrap();
    assert_eq!(nco.order, vec![2, 2, 2, 2, 3]);
    assert!(matches!(
        ems.aux_value("GEOMETRY"),
        Some(Value::Int(1)) | Some(Value::Float(_)) | Some(Value::Str(_))
    ));
}

#[test]
fn provenance_reference_values() {
    let Some(dir) = data() else { return };
    let cases: &[(&str, &[f64], f64)] = &[
        ("photospline_test/test_spline_4d.fits", &[0.0, 0.0, 0.0, 0.0], 122.145181),
        ("photospline_test/test_spline_5d_nco.fits", &[0.0; 5], -1474.18314),
        ("icetray_photospline_ems/ems_z0_a0.pt.abs.fits", &[300.0, 90.0, 0.0], -26.1249578),
        ("icetray_photospline_ems/ems_z0_a0.pt.abs.fits", &[50.0, 0.0, 0.0], -17.0846),
        ("icetray_photospline_ems/ems_z0_a0.pt.prob.fits", &[50.0, 0.0, 0.0, 100.0], 0.42579),
        ("icetray_photospline_ems/ems_z0_a0.pt.prob.fits", &[50.0, 0.0, 0.0, 500.0], 0.87927),
        ("icetray_photospline_ems/ems_z0_a0.pt.prob.fits", &[50.0, 0.0, 0.0, 2000.0], 0.99852),
        (
            "icetray_photospline_ems/ems_z0_a0.pt.prob.fits",
            &[300.0, 90.0, 0.0, 3500.0],
            0.995978369,
        ),
        ("nuflux/H3a_SIBYLL23C_conv_numu.fits", &[4.85, 0.508726], -17.2137562),
        ("ngc1068_kde/bg_2d_photospline.fits", &[5.523022, 0.413176], 6.35108981e-05),
        ("leptoninjector_xs/test_xs.fits", &[6.5, -6.136845, -6.136845], -199.049972),
    ];
    for (file, x, want) in cases {
        let t = SplineTable::read(&dir.join(file)).unwrap();
        let got = t.evaluate(x);
        // The references and their points are printed with 6-9 significant digits: allow half a
        // unit of the value's last digit plus |∂f/∂x_d| times half a unit of each coordinate's.
        let half_unit = |v: f64| {
            let s = format!("{v}");
            0.5 * 10f64.powi(-(s.split('.').nth(1).map_or(0, str::len) as i32))
        };
        let digits = format!("{want:e}").split('e').next().unwrap().replace(['-', '.'], "").len() as i32;
        let g = t.gradient(x);
        let from_point: f64 = x
            .iter()
            .enumerate()
            .map(|(d, &xd)| g.grad[d].abs() * if xd == 0.0 { 0.0 } else { half_unit(xd) })
            .sum();
        let tol = 0.5 * want.abs() * 10f64.powi(1 - digits) + from_point + 1e-12;
        assert!((got - want).abs() <= tol, "{file} at {x:?}: {got} vs {want} (tolerance {tol:e})");
    }
    let ems = SplineTable::read(&dir.join("icetray_photospline_ems/ems_z0_a0.pt.abs.fits")).unwrap();
    let e = ems.evaluate(&[50.0, 0.0, 0.0]).exp();
    assert!((e - 3.80411e-08).abs() < 1e-12, "{e}");
}

/// Random points inside every table's extents: our evaluator equals the full-basis double
/// precision evaluation to float64 rounding of the sum (both use the float32 coefficients).
#[test]
fn agrees_with_independent_de_boor_at_random_points() {
    let Some(dir) = data() else { return };
    for (n, f) in all_tables(&dir).iter().enumerate() {
        let t = SplineTable::read(f).unwrap();
        let mut rng = RandomStream::new(7, 0x5350_0001, n as u64);
        let mut worst = 0.0f64;
        for _ in 0..400 {
            let x: Vec<f64> = t.extents.iter().map(|e| e[0] + (e[1] - e[0]) * rng.uniform_f64()).collect();
            let (want, scale) = reference(&t, &x);
            let got = t.evaluate(&x);
            let err = (got - want).abs() / scale.max(1e-300);
            worst = worst.max(err);
            assert!(err < 1e-12, "{} at {x:?}: {got} vs {want} (scale {scale})", f.display());
        }
        // Points between the first knot and the lower extent, where part of the basis is missing.
        for d in 0..t.ndim() {
            let mut x: Vec<f64> = t.extents.iter().map(|e| 0.5 * (e[0] + e[1])).collect();
            x[d] = 0.5 * (t.knots[d][0] + t.extents[d][0]);
            let (want, scale) = reference(&t, &x);
            assert!(
                (t.evaluate(&x) - want).abs() <= 1e-12 * scale.max(1e-300),
                "{} below the extents in dim {d}",
                f.display()
            );
        }
        eprintln!("{}: worst relative difference {worst:.1e}", f.display());
    }
}

/// ∂f/∂x_d against central differences, on every table.
#[test]
fn gradients_match_finite_differences() {
    let Some(dir) = data() else { return };
    for (n, f) in all_tables(&dir).iter().enumerate() {
        let t = SplineTable::read(f).unwrap();
        let mut rng = RandomStream::new(8, 0x5350_0002, n as u64);
        for _ in 0..50 {
            let x: Vec<f64> = t
                .extents
                .iter()
                .map(|e| e[0] + (e[1] - e[0]) * (0.05 + 0.9 * rng.uniform_f64()))
                .collect();
            let g = t.gradient(&x);
            assert!((g.value - t.evaluate(&x)).abs() <= 1e-12 * g.value.abs().max(1.0));
            for d in 0..t.ndim() {
                // A step well inside one knot interval keeps the difference quotient smooth.
                let span = t.extents[d][1] - t.extents[d][0];
                let h = 1e-6 * span;
                let mut a = x.clone();
                let mut b = x.clone();
                a[d] += h;
                b[d] -= h;
                let fd = (t.evaluate(&a) - t.evaluate(&b)) / (2.0 * h);
                // Central differences are exact for polynomials up to degree 2 and have error
                // O(h² f''') otherwise; a knot between x±h adds O(h f'') — bound by the scale.
                let (_, scale) = reference(&t, &x);
                let tol = 1e-6 * (scale / span).max(fd.abs()) + 1e-9;
                assert!(
                    (g.grad[d] - fd).abs() <= tol,
                    "{} dim {d} at {x:?}: {} vs {fd}",
                    f.display(),
                    g.grad[d]
                );
            }
        }
    }
}

#[test]
fn grid_equals_pointwise() {
    let Some(dir) = data() else { return };
    let t = SplineTable::read(&dir.join("icetray_photospline_ems/ems_z0_a0.pt.prob.fits")).unwrap();
    let axes: Vec<Vec<f64>> = t
        .extents
        .iter()
        .map(|e| (0..5).map(|i| e[0] + (e[1] - e[0]) * f64::from(i) / 4.0).collect())
        .collect();
    let g = t.grid(&axes);
    let mut k = 0;
    for a in &axes[0] {
        for b in &axes[1] {
            for c in &axes[2] {
                for d in &axes[3] {
                    assert_eq!(g[k], t.evaluate(&[*a, *b, *c, *d]));
                    k += 1;
                }
            }
        }
    }
}

#[test]
fn bad_files_give_clear_errors() {
    let Some(dir) = data() else { return };
    let path = dir.join("photospline_test/test_spline_2d.fits");
    let bytes = std::fs::read(&path).unwrap();
    let tmp = std::env::temp_dir().join(format!("wd-spline-bad-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // Truncated in the middle of the coefficients.
    let cut = tmp.join("truncated.fits");
    std::fs::write(&cut, &bytes[..2880 + 100]).unwrap();
    let e = SplineTable::read(&cut).unwrap_err().to_string();
    assert!(e.contains("truncated.fits") && e.contains("truncated"), "{e}");
    // Truncated inside a header.
    let cut2 = tmp.join("header.fits");
    std::fs::write(&cut2, &bytes[..400]).unwrap();
    let e = SplineTable::read(&cut2).unwrap_err().to_string();
    assert!(e.contains("END card"), "{e}");
    // BITPIX = 16.
    let mut b = bytes.clone();
    let at = find(&b, b"BITPIX  =");
    b[at..at + 80].copy_from_slice(format!("{:<80}", format!("BITPIX  = {:>20}", 16)).as_bytes());
    let bad = tmp.join("bitpix.fits");
    std::fs::write(&bad, &b).unwrap();
    let e = SplineTable::read(&bad).unwrap_err().to_string();
    assert!(e.contains("BITPIX") && e.contains("bitpix.fits:"), "{e}");
    // A knot vector that does not match the coefficient count: change ORDER0.
    let mut b = bytes.clone();
    let key = if find_opt(&b, b"ORDER0  =").is_some() { "ORDER0" } else { "ORDER" };
    let at = find(&b, format!("{key:<8}=").as_bytes());
    b[at..at + 80].copy_from_slice(format!("{:<80}", format!("{key:<8}= {:>20}", 3)).as_bytes());
    let bad = tmp.join("order.fits");
    std::fs::write(&bad, &b).unwrap();
    let e = SplineTable::read(&bad).unwrap_err().to_string();
    assert!(e.contains("KNOTS0 has") && e.contains("expected"), "{e}");
    // Not FITS at all.
    let bad = tmp.join("text.fits");
    std::fs::write(&bad, b"hello").unwrap();
    let e = SplineTable::read(&bad).unwrap_err().to_string();
    assert!(e.contains("not a FITS file"), "{e}");
    std::fs::remove_dir_all(&tmp).ok();
}

fn find_opt(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    find_opt(hay, needle).unwrap_or_else(|| panic!("{} not found", String::from_utf8_lossy(needle)))
}
