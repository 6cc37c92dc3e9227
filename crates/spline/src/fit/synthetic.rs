//! Synthetic fitting problems for `gpu-check` and `bench spline --fit`: a smooth known function
//! on [0, 1]^N, sampled at the centres of `bins` equal bins per axis as Poisson counts, fitted with
//! `coefs` coefficients per axis of degree 2 on equally spaced knots that extend k spacings
//! beyond the data (photospline's usual layout), with a second-order difference penalty.

use super::Spec;
use warpdrive_core::rng::RandomStream;

/// A histogram with the request to fit it.
#[derive(Clone, Debug)]
pub struct Synthetic {
    pub z: Vec<f64>,
    pub w: Vec<f64>,
    pub centers: Vec<Vec<f64>>,
    pub spec: Spec,
}

/// The expected counts: a Gaussian bump on a pedestal, μ(x) = 5 + 200 exp(−Σ_d (x_d − 0.4)² / 0.08).
pub fn expected(x: &[f64]) -> f64 {
    let r2: f64 = x.iter().map(|v| (v - 0.4) * (v - 0.4)).sum();
    5.0 + 200.0 * (-r2 / 0.08).exp()
}

/// A Poisson draw of mean `mu` by inversion of the CDF (μ ≤ a few hundred here).
fn poisson(rng: &mut RandomStream, mu: f64) -> f64 {
    let u = rng.uniform_f64();
    let mut k = 0.0;
    let mut p = (-mu).exp();
    let mut cdf = p;
    while u > cdf && k < 10.0 * mu + 100.0 {
        k += 1.0;
        p *= mu / k;
        cdf += p;
    }
    k
}

/// `nd` axes of `bins` bins and `coefs` coefficients each (degree 2, smoothing `smooth`);
/// bins with zero counts get weight 0, the others 1/count (inverse Poisson variance). Every
/// `hole`-th bin (0: none) is emptied (weight 0) to exercise the zero-weight path.
pub fn problem(nd: usize, bins: usize, coefs: usize, smooth: f64, hole: usize, seed: u64) -> Synthetic {
    let k = 2usize;
    let h = 1.0 / (coefs - k) as f64;
    let knots: Vec<f64> = (0..coefs + k + 1).map(|i| (i as f64 - k as f64) * h).collect();
    let centers: Vec<f64> = (0..bins).map(|i| (i as f64 + 0.5) / bins as f64).collect();
    let cells = bins.pow(nd as u32);
    let mut rng = RandomStream::new(seed, 0x5f17, 0);
    let mut z = Vec::with_capacity(cells);
    let mut w = Vec::with_capacity(cells);
    let mut x = vec![0.0; nd];
    for c in 0..cells {
        let mut rem = c;
        for d in (0..nd).rev() {
            x[d] = centers[rem % bins];
            rem /= bins;
        }
        let n = poisson(&mut rng, expected(&x));
        let empty = hole > 0 && c % hole == 0;
        z.push(n);
        w.push(if n > 0.0 && !empty { 1.0 / n } else { 0.0 });
    }
    Synthetic {
        z,
        w,
        centers: vec![centers; nd],
        spec: Spec {
            knots: vec![knots; nd],
            order: vec![k as u32; nd],
            smooth: vec![smooth; nd],
            penalty_order: vec![2; nd],
            monodim: None,
        },
    }
}

impl Synthetic {
    /// The histogram to give [`super::Problem::new`].
    pub fn histogram(&self) -> super::Histogram<'_> {
        super::Histogram {
            z: &self.z,
            w: &self.w,
            centers: &self.centers,
        }
    }
}
