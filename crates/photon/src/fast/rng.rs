//! The fast mode's per-segment random words: MWC64X (D. B. Thomas, "The MWC64X random number
//! generator", 2011): a lag-1 multiply-with-carry x' + c'·2³² = A·x + c with A = 4294883355,
//! period ≈ 2⁶³, output x ⊕ c (passes TestU01's BigCrush). One state per photon, seeded from the
//! photon's own Philox stream after its emission — the GPU fast mode's `WD_FAST_RNG`
//! (propagate.cu `mwc_seed`/`mwc_next`), so a photon's words do not depend on the thread that
//! runs it. One 32 × 32 → 64-bit multiply-add per word instead of a quarter of a Philox4x32-10
//! block (ten rounds of two multiplications per four words).

use warpdrive_core::RandomStream;

/// The multiplier (Thomas 2011).
pub const MWC_A: u32 = 4_294_883_355;

/// One photon's MWC64X state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mwc64x {
    pub(crate) x: u32,
    pub(crate) c: u32,
}

impl Mwc64x {
    /// Seeded from the next two words of `rng`: c < A − 1 (never the fixed point (2³² − 1,
    /// A − 1)) and not (0, 0), as the kernel's `mwc_seed`.
    #[must_use]
    pub fn seed(rng: &mut RandomStream) -> Self {
        let x = rng.next_u32();
        let mut c = rng.next_u32();
        if c >= MWC_A - 1 {
            c -= MWC_A - 1;
        }
        if x == 0 && c == 0 {
            c = 1;
        }
        Self { x, c }
    }

    /// The next 32 random bits.
    #[inline(always)]
    pub fn next_u32(&mut self) -> u32 {
        let r = self.x ^ self.c;
        let t = u64::from(MWC_A) * u64::from(self.x) + u64::from(self.c);
        self.x = t as u32;
        self.c = (t >> 32) as u32;
        r
    }

    /// Four words (a segment's draws).
    #[inline(always)]
    pub fn block4(&mut self) -> [u32; 4] {
        [self.next_u32(), self.next_u32(), self.next_u32(), self.next_u32()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::rng::u32_to_unit_f32;

    /// Uniforms from the stream: mean ½ and the KS test against U(0, 1), for several photons.
    #[test]
    fn uniform_words() {
        for id in 0..4u64 {
            let mut m = Mwc64x::seed(&mut RandomStream::new(7, 1, id));
            let xs: Vec<f64> = (0..100_000).map(|_| f64::from(u32_to_unit_f32(m.next_u32()))).collect();
            let t = warpdrive_core::stats::ks_one_sample(&xs, |x| x.clamp(0.0, 1.0));
            assert!(t.p_value > 0.001, "photon {id}: {t:?}");
        }
    }
}
