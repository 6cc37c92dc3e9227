//! Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
//! SC'11; Random123). Counter-based: the output is a pure function of (key, counter), so every
//! photon, track or trial gets its own stream without state shared between threads.
//!
//! The arithmetic is the one a CUDA kernel uses (`__umulhi`, 32-bit wrapping adds), so the
//! device twin in `kernels/philox.cuh` produces the same bits.
//!
//! Stream layout used across warpdrive: key = the user seed (64 bit), counter =
//! `[draw block, stream tag, entity lo, entity hi]`. Each block yields four 32-bit words.

/// Philox round multipliers and Weyl key increments (Random123 `philox4x32` constants).
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The Philox4x32 bijection with 10 rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Philox4x32 {
    pub key: [u32; 2],
}

#[inline(always)]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = u64::from(a) * u64::from(b);
    ((p >> 32) as u32, p as u32)
}

impl Philox4x32 {
    pub fn new(seed: u64) -> Self {
        Self {
            key: [seed as u32, (seed >> 32) as u32],
        }
    }

    /// Ten rounds of the Philox S-box network on `ctr` under `key`.
    #[inline]
    #[must_use]
    pub fn block(&self, ctr: [u32; 4]) -> [u32; 4] {
        let mut c = ctr;
        let mut k = self.key;
        for round in 0..10 {
            if round > 0 {
                k[0] = k[0].wrapping_add(W0);
                k[1] = k[1].wrapping_add(W1);
            }
            let (hi0, lo0) = mulhilo(M0, c[0]);
            let (hi1, lo1) = mulhilo(M1, c[2]);
            c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
        }
        c
    }
}

/// Uniform float in (0, 1] from 32 random bits: the top 24 bits plus one, times 2^-24.
/// Never returns 0, so `-ln(u)` is always finite.
#[inline(always)]
#[must_use]
pub fn u32_to_unit_f32(x: u32) -> f32 {
    ((x >> 8) + 1) as f32 * (1.0 / 16_777_216.0)
}

/// Uniform double in (0, 1] from 64 random bits (53-bit mantissa).
#[inline(always)]
#[must_use]
pub fn u64_to_unit_f64(x: u64) -> f64 {
    ((x >> 11) + 1) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// The random stream of one entity: successive Philox blocks of the counter
/// `[block, tag, entity lo, entity hi]`, consumed four words at a time.
#[derive(Clone, Debug)]
pub struct RandomStream {
    gen: Philox4x32,
    tag: u32,
    entity: u64,
    block: u32,
    buf: [u32; 4],
    used: usize,
}

impl RandomStream {
    /// The stream for `entity` (photon, track, particle or trial id) in the domain `tag`
    /// (different tags give independent streams for the same entity).
    pub fn new(seed: u64, tag: u32, entity: u64) -> Self {
        Self {
            gen: Philox4x32::new(seed),
            tag,
            entity,
            block: 0,
            buf: [0; 4],
            used: 4,
        }
    }

    /// Next 32 random bits.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        if self.used == 4 {
            self.buf = self
                .gen
                .block([self.block, self.tag, self.entity as u32, (self.entity >> 32) as u32]);
            self.block = self.block.wrapping_add(1);
            self.used = 0;
        }
        let x = self.buf[self.used];
        self.used += 1;
        x
    }

    /// The next whole Philox block: the rest of the current block is discarded, then the next
    /// block's four words are consumed at once. A loop that draws exactly one block per
    /// iteration keeps one counter instead of a buffer, and its GPU twin evaluates Philox at one
    /// place per iteration for all lanes.
    #[inline]
    pub fn block4(&mut self) -> [u32; 4] {
        let w = self
            .gen
            .block([self.block, self.tag, self.entity as u32, (self.entity >> 32) as u32]);
        self.block = self.block.wrapping_add(1);
        self.used = 4;
        w
    }

    /// Uniform in (0, 1].
    #[inline]
    pub fn uniform(&mut self) -> f32 {
        u32_to_unit_f32(self.next_u32())
    }

    /// Uniform in (0, 1] with 53 random bits.
    #[inline]
    pub fn uniform_f64(&mut self) -> f64 {
        let hi = u64::from(self.next_u32());
        let lo = u64::from(self.next_u32());
        u64_to_unit_f64((hi << 32) | lo)
    }

    /// Exponential optical depth −ln u with u ∈ (0,1]: mean 1.
    #[inline]
    pub fn exponential(&mut self) -> f32 {
        -self.uniform().ln()
    }

    /// Standard normal (Box–Muller, one value per two uniforms; the second is discarded so the
    /// number of draws per call is fixed, which keeps CPU and GPU streams aligned).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform_f64();
        let u2 = self.uniform_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma(shape `a`, scale 1) by Marsaglia & Tsang (ACM TOMS 26 (2000) 363), with the
    /// `a < 1` boost `G(a) = G(a+1)·u^(1/a)`.
    pub fn gamma(&mut self, a: f64) -> f64 {
        if a < 1.0 {
            let u = self.uniform_f64();
            return self.gamma(a + 1.0) * u.powf(1.0 / a);
        }
        let d = a - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.uniform_f64();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    /// Poisson-distributed count with mean `mean`: multiplication method for small means,
    /// PTRS transformed rejection (Hörmann, Insurance Math. Econ. 12 (1993) 39) for large ones.
    pub fn poisson(&mut self, mean: f64) -> u64 {
        if mean <= 0.0 {
            return 0;
        }
        if mean < 10.0 {
            let l = (-mean).exp();
            let mut k = 0u64;
            let mut p = 1.0;
            loop {
                p *= self.uniform_f64();
                if p <= l {
                    return k;
                }
                k += 1;
            }
        }
        let slam = mean.sqrt();
        let loglam = mean.ln();
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = self.uniform_f64() - 0.5;
            let v = self.uniform_f64();
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + mean + 0.43).floor();
            if us >= 0.07 && v <= vr {
                return k as u64;
            }
            if k < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            if (v * inv_alpha / (a / (us * us) + b)).ln() <= -mean + k * loglam - ln_factorial(k) {
                return k as u64;
            }
        }
    }
}

/// ln(k!) by Stirling's series for k ≥ 10, exactly below.
fn ln_factorial(k: f64) -> f64 {
    if k < 10.0 {
        let mut s = 0.0;
        let mut i = 2.0;
        while i <= k {
            s += f64::ln(i);
            i += 1.0;
        }
        return s;
    }
    let k1 = k + 1.0;
    (k1 - 0.5) * k1.ln() - k1 + 0.5 * (std::f64::consts::TAU).ln() + 1.0 / (12.0 * k1) - 1.0 / (360.0 * k1.powi(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors of Random123 (`kat_vectors`, philox4x32 with 10 rounds).
    #[test]
    fn random123_known_answers() {
        let cases: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            ([0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
            ([0xffffffff; 4], [0xffffffff; 2], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
            (
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (ctr, key, want) in cases {
            assert_eq!(Philox4x32 { key }.block(ctr), want, "ctr {ctr:x?} key {key:x?}");
        }
    }

    #[test]
    fn unit_float_is_in_half_open_interval() {
        assert_eq!(u32_to_unit_f32(0), 1.0 / 16_777_216.0);
        assert_eq!(u32_to_unit_f32(u32::MAX), 1.0);
        assert!(u64_to_unit_f64(0) > 0.0);
        assert_eq!(u64_to_unit_f64(u64::MAX), 1.0);
    }

    #[test]
    fn streams_are_independent_of_draw_order_between_entities() {
        let mut a = RandomStream::new(7, 0, 1);
        let first: Vec<u32> = (0..9).map(|_| a.next_u32()).collect();
        let mut b = RandomStream::new(7, 0, 2);
        let _ = b.next_u32();
        let mut a2 = RandomStream::new(7, 0, 1);
        let again: Vec<u32> = (0..9).map(|_| a2.next_u32()).collect();
        assert_eq!(first, again);
        assert_ne!(first[0], RandomStream::new(7, 1, 1).next_u32(), "tags separate streams");
    }

    /// Mean and variance of the samplers against their exact values; 200 000 draws,
    /// thresholds at 5 standard errors (fixed seed).
    #[test]
    fn sampler_moments() {
        let n = 200_000;
        let mut r = RandomStream::new(12345, 0, 0);
        let check = |name: &str, xs: &[f64], mean: f64, var: f64| {
            let m = xs.iter().sum::<f64>() / xs.len() as f64;
            let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
            let se = (var / xs.len() as f64).sqrt();
            assert!((m - mean).abs() < 5.0 * se, "{name}: mean {m} vs {mean}");
            assert!((v / var - 1.0).abs() < 0.03, "{name}: var {v} vs {var}");
        };
        let u: Vec<f64> = (0..n).map(|_| f64::from(r.uniform())).collect();
        check("uniform", &u, 0.5, 1.0 / 12.0);
        let e: Vec<f64> = (0..n).map(|_| f64::from(r.exponential())).collect();
        check("exponential", &e, 1.0, 1.0);
        let g: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        check("normal", &g, 0.0, 1.0);
        for a in [0.5, 2.0, 7.9] {
            let g: Vec<f64> = (0..n).map(|_| r.gamma(a)).collect();
            check("gamma", &g, a, a);
        }
        for mean in [0.7, 4.0, 37.5, 3.2e6] {
            let p: Vec<f64> = (0..n).map(|_| r.poisson(mean) as f64).collect();
            check("poisson", &p, mean, mean);
        }
    }
}
