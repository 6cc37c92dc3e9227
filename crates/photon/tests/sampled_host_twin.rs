//! The sampled estimator's device lookup (`kernels/sampled.cu`: `axis_bin`, `sampled_cell`)
//! compiled for the host (C++, no FMA contraction) against the Rust `tabulate::sampled::Lookup`
//! on random points, spherical and cylindrical, with equal-step axes (found by arithmetic) and an
//! azimuth axis of unequal edges (searched), with delays. The device computes in float, the CPU
//! in f64, so a point within float rounding of an edge may fall on either side: every point must
//! get the same cell except those (each mismatch's coordinates within 10⁻⁵ of an axis span of an
//! edge), and those must be under 0.1 % of the points. A wrong axis order, index formula, fold or
//! delay definition would mismatch most points.
//!
//! Needs a C++ compiler (`c++`, or `$CXX`); skipped without one unless
//! `WARPDRIVE_REQUIRE_DATA=1`.

use std::fmt::Write as _;
use std::process::Command;
use warpdrive_core::RandomStream;
use warpdrive_photon::tabulate::bins::{Binning, Frame, Shape};
use warpdrive_photon::tabulate::sampled::Lookup;

const KERNEL: &str = include_str!("../kernels/sampled.cu");

fn source() -> String {
    let body = &KERNEL[KERNEL.find("struct SampParams {").unwrap()..KERNEL.find("// mod.rs Acceptance::weight").unwrap()];
    let pre = "#include <cmath>\n#include <cstdio>\n#include <algorithm>\nusing std::min; using std::max;\n\
               #define __device__\n#define __forceinline__ inline\nstruct V3 { float x, y, z; };\n";
    let main = r#"
static float* read(int n) { float* v = new float[n]; for (int i = 0; i < n; ++i) scanf("%f", &v[i]); return v; }
int main() {
    SampParams T = {};
    int n[4];
    for (int k = 0; k < 4; ++k) scanf("%d", &n[k]);
    T.n_radial = n[0]; T.n_azimuth = n[1]; T.n_polar = n[2]; T.n_delay = n[3];
    T.radial = read(n[0]); T.azimuth = read(n[1]); T.polar = read(n[2]); T.delay = read(n[3]);
    float* f = read(12 + 3 + 8);
    for (int k = 0; k < 3; ++k) { T.origin[k] = f[k]; T.axis[k] = f[3 + k]; T.e1[k] = f[6 + k]; T.e2[k] = f[9 + k]; }
    T.ng_over_c = f[12]; T.cone = f[13]; T.inv_c = f[14];
    for (int k = 0; k < 4; ++k) { T.lo[k] = f[15 + k]; T.inv[k] = f[19 + k]; }
    scanf("%d %u", &T.spherical, &T.time_cells);
    int m; scanf("%d", &m);
    for (int i = 0; i < m; ++i) {
        float x, y, z, t; scanf("%f %f %f %f", &x, &y, &z, &t);
        printf("%d\n", sampled_cell(T, V3{x, y, z}, t));
    }
}
"#;
    format!("{pre}{body}{main}")
}

#[test]
fn device_lookup_is_the_rust_lookup() {
    let dir = std::env::temp_dir().join(format!("wd-sampled-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cpp, exe) = (dir.join("twin.cpp"), dir.join("twin"));
    std::fs::write(&cpp, source()).unwrap();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    match Command::new(&cxx)
        .args(["-O2", "-std=c++17", "-ffp-contract=off", "-w"])
        .arg(&cpp)
        .arg("-o")
        .arg(&exe)
        .output()
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("{cxx} failed on the host twin:\n{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            assert!(
                std::env::var("WARPDRIVE_REQUIRE_DATA").as_deref() != Ok("1"),
                "no C++ compiler ({cxx}: {e})"
            );
            eprintln!("skipped: no C++ compiler ({cxx}: {e})");
            return;
        }
    }
    let lin = |a: f64, b: f64, n: usize| (0..=n).map(|i| a + (b - a) * i as f64 / n as f64).collect::<Vec<_>>();
    let mut r = RandomStream::new(21, 0, 0);
    for shape in [Shape::Spherical, Shape::Cylindrical] {
        let b = Binning {
            shape,
            radial: lin(0.0, 50.0, 10),
            azimuth: vec![0.0, 15.0, 60.0, 100.0, 180.0],
            polar: if shape == Shape::Spherical {
                lin(-1.0, 1.0, 8)
            } else {
                lin(-30.0, 40.0, 7)
            },
            delay: lin(-20.0, 300.0, 16),
        };
        // A frame whose numbers are floats already (the device gets them as floats).
        let d = [0.3f64, -0.5, 0.812];
        let nd = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let mut f = Frame::new([1.0, -2.0, -51.93], [d[0] / nd, d[1] / nd, d[2] / nd], 1.35, 1.32);
        let fl = |v: f64| f64::from(v as f32);
        f.origin = f.origin.map(fl);
        f.axis = f.axis.map(fl);
        f.e1 = f.e1.map(fl);
        f.e2 = f.e2.map(fl);
        (f.ng_over_c, f.cone, f.inv_c) = (fl(f.ng_over_c), fl(f.cone), fl(f.inv_c));
        let look = Lookup::new(&b);
        assert!(
            look.radial.inv > 0.0 && look.azimuth.inv == 0.0,
            "one axis by arithmetic, one searched"
        );
        let mut input = String::new();
        let edges = [&b.radial, &b.azimuth, &b.polar, &b.delay];
        writeln!(input, "{} {} {} {}", edges[0].len(), edges[1].len(), edges[2].len(), edges[3].len()).unwrap();
        for e in edges {
            for x in e.iter() {
                write!(input, "{:e} ", *x as f32).unwrap();
            }
            writeln!(input).unwrap();
        }
        for v in [f.origin, f.axis, f.e1, f.e2] {
            for x in v {
                write!(input, "{:e} ", x as f32).unwrap();
            }
        }
        write!(input, "{:e} {:e} {:e} ", f.ng_over_c as f32, f.cone as f32, f.inv_c as f32).unwrap();
        let axes = [&look.radial, &look.azimuth, &look.polar, look.delay.as_ref().unwrap()];
        for a in axes {
            write!(input, "{:e} ", a.lo as f32).unwrap();
        }
        for a in axes {
            write!(input, "{:e} ", a.inv as f32).unwrap();
        }
        writeln!(input, "\n{} {}", i32::from(shape == Shape::Spherical), look.time_cells).unwrap();
        let n = 100_000;
        writeln!(input, "{n}").unwrap();
        let mut pts = Vec::with_capacity(n);
        for _ in 0..n {
            let mut u = || f64::from(120.0 * r.uniform() - 60.0) as f32;
            let p = [
                u() + f.origin[0] as f32,
                u() + f.origin[1] as f32,
                u() + f.origin[2] as f32,
                3.0 * u() + 100.0,
            ];
            writeln!(input, "{:e} {:e} {:e} {:e}", p[0], p[1], p[2], p[3]).unwrap();
            pts.push(p.map(f64::from));
        }
        let inp = dir.join("in.txt");
        std::fs::write(&inp, input).unwrap();
        let o = Command::new(&exe).stdin(std::fs::File::open(&inp).unwrap()).output().unwrap();
        assert!(o.status.success());
        let got: Vec<i64> = String::from_utf8(o.stdout).unwrap().lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(got.len(), n);
        let (mut inside, mut near, mut far) = (0, 0, 0);
        for (p, &g) in pts.iter().zip(&got) {
            let c = look.coordinates(&f, [p[0], p[1], p[2]], p[3]);
            let want = look.cell(c).map_or(-1, i64::from);
            inside += usize::from(want >= 0);
            if want == g {
                continue;
            }
            let close = |x: f64, e: &[f64]| e.iter().any(|&b| (x - b).abs() <= 1e-5 * (e[e.len() - 1] - e[0]));
            if close(c[0], &b.radial) || close(c[1], &b.azimuth) || close(c[2], &b.polar) || close(c[3], &b.delay) {
                near += 1;
            } else {
                far += 1;
                if far <= 5 {
                    eprintln!("{shape:?}: point {p:?} (coordinates {c:?}): device cell {g}, CPU {want}");
                }
            }
        }
        eprintln!("{shape:?}: {n} points, {inside} in the grid, {near} on the other side of an edge within float rounding, {far} others");
        assert!(inside > n / 4, "{inside}");
        assert!(far == 0 && near * 1000 <= n, "{near} near, {far} far");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
