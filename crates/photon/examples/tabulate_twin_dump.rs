//! `scripts/tabulate-twin-check`'s CPU side: random straight paths through a spherical and a
//! cylindrical grid (with azimuth, polar and delay edges) and what `Binning::deposit` and
//! `Binning::inside_length` make of them, every f64 as its bits in hex, written to the file named
//! by the first argument. The script compiles tabulate.cu's twins of bins.rs as host C++
//! (no FMA contraction) and checks they give the same bits.
use warpdrive_core::RandomStream;
use warpdrive_photon::tabulate::bins::{Binning, Frame, Path, Shape};

fn lin(a: f64, b: f64, n: usize) -> Vec<f64> {
    (0..=n).map(|i| a + (b - a) * i as f64 / n as f64).collect()
}

fn main() {
    let out = std::env::args().nth(1).expect("usage: tabulate_twin_dump OUT");
    let mut s = String::new();
    let h = |x: f64| format!("{:016x}", x.to_bits());
    for shape in [Shape::Spherical, Shape::Cylindrical] {
        let b = Binning {
            shape,
            radial: lin(2.0, 50.0, 12),
            azimuth: vec![0.0, 20.0, 45.0, 90.0, 135.0, 180.0],
            polar: if shape == Shape::Spherical {
                vec![-1.0, -0.5, 0.0, 0.3, 0.7, 1.0]
            } else {
                lin(-30.0, 40.0, 7)
            },
            delay: lin(-20.0, 300.0, 16),
        };
        let d = [0.3f64, -0.5, 0.812];
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let f = Frame::new([1.0, -2.0, 3.0], [d[0] / n, d[1] / n, d[2] / n], 1.35, 1.32);
        let line = |v: &[f64]| v.iter().map(|x| h(*x)).collect::<Vec<_>>().join(" ");
        s += &format!("G {}\n", i32::from(shape == Shape::Spherical));
        for e in [&b.radial, &b.azimuth, &b.polar, &b.delay] {
            s += &format!("E {} {}\n", e.len(), line(e));
        }
        let (sn, cs): (Vec<f64>, Vec<f64>) = b.azimuth[1..b.azimuth.len() - 1].iter().map(|p| p.to_radians().sin_cos()).unzip();
        s += &format!("S {}\nC {}\n", line(&sn), line(&cs));
        let mut fr = vec![];
        fr.extend(f.origin);
        fr.extend(f.axis);
        fr.extend(f.e1);
        fr.extend(f.e2);
        fr.extend([f.ng_over_c, f.cone, f.inv_c]);
        s += &format!("F {}\n", line(&fr));
        let mut rng = RandomStream::new(5, 0, 0);
        let mut cuts = Vec::new();
        for _ in 0..3000 {
            let mut u = || f64::from(rng.uniform());
            let start = [60.0 * (u() - 0.5), 60.0 * (u() - 0.5), 60.0 * (u() - 0.5)];
            let c = 2.0 * u() - 1.0;
            let sn = (1.0 - c * c).sqrt();
            let p = 2.0 * std::f64::consts::PI * u();
            let path = Path {
                start,
                dir: [sn * p.cos(), sn * p.sin(), c],
                len: 80.0 * u(),
                time: 100.0 * u(),
                ocm: 4.5,
                weight: 0.5 + u(),
            };
            let mut v = vec![];
            v.extend(path.start);
            v.extend(path.dir);
            v.extend([path.len, path.time, path.ocm, path.weight]);
            let mut pieces = vec![];
            b.deposit(&f, &path, &mut cuts, |cell, x| pieces.push(format!("{cell}:{}", h(x))));
            s += &format!("P {} | {} | {}\n", line(&v), h(b.inside_length(&f, &path)), pieces.join(" "));
        }
    }
    std::fs::write(out, s).unwrap();
}
