//! The grid the directional step's tests use (`tests/tabulate_sampled.rs`, the rule against the
//! rates along random segments; `tests/sampled_host_twin.rs`, the kernel's step against the Rust
//! one): `photon tabulate`'s default radial, azimuth and delay edges (`TabulateOptions::default`),
//! cos θ in 20 bins for spheres and Δz from −200 to 200 m in 20 bins for cylinders.

use warpdrive_photon::tabulate::bins::{Binning, Shape};
use warpdrive_photon::tabulate::{Edges, TabulateOptions};

pub fn step_bins(shape: Shape) -> Binning {
    let o = TabulateOptions::default();
    let polar = match shape {
        Shape::Spherical => Edges::Linear {
            lo: -1.0,
            hi: 1.0,
            bins: 20,
        },
        Shape::Cylindrical => Edges::Linear {
            lo: -200.0,
            hi: 200.0,
            bins: 20,
        },
    };
    let delay = o.delay.expect("the default has a time table");
    Binning {
        shape,
        radial: o.radial.resolve("radial_bins").unwrap(),
        azimuth: o.azimuth_bins.resolve("azimuth_bins").unwrap(),
        polar: polar.resolve("polar_bins").unwrap(),
        delay: delay.resolve("delay_bins").unwrap(),
    }
}
