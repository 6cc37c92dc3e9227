//! The grid the directional step's tests use (`tests/tabulate_sampled.rs`, the rule against the
//! rates along random segments; `tests/sampled_host_twin.rs`, the kernel's step against the Rust
//! one): `photon tabulate`'s default radial, azimuth and delay edges, cos θ in 20 bins for
//! spheres and Δz from −200 to 200 m in 20 bins for cylinders.

use warpdrive_photon::tabulate::bins::{Binning, Shape};

fn lin(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    (0..=n).map(|i| lo + (hi - lo) * i as f64 / n as f64).collect()
}

pub fn step_bins(shape: Shape) -> Binning {
    Binning {
        shape,
        radial: lin(0.0, 300.0, 30),
        azimuth: lin(0.0, 180.0, 9),
        polar: if shape == Shape::Spherical {
            lin(-1.0, 1.0, 20)
        } else {
            lin(-200.0, 200.0, 20)
        },
        delay: lin(-10.0, 2000.0, 40),
    }
}
