//! FNV-1a 64-bit hashing of byte sequences: stable across runs, platforms and Rust versions,
//! for cache keys, configuration fingerprints and result checksums (not for security).

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// An FNV-1a 64 hasher. [`Fnv64::part`] ends a field with a separator byte, so that
/// ("ab", "c") and ("a", "bc") hash differently.
#[derive(Clone, Copy, Debug)]
pub struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Self(OFFSET)
    }
}

impl Fnv64 {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed bytes.
    pub fn write(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
        self
    }

    /// Feed one field: its bytes, then the separator 0xff.
    pub fn part(&mut self, bytes: &[u8]) -> &mut Self {
        self.write(bytes).write(&[0xff])
    }

    #[must_use]
    pub fn finish(&self) -> u64 {
        self.0
    }

    /// The hash as 16 hex digits.
    #[must_use]
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_separators() {
        // FNV-1a 64 test vectors (Fowler/Noll/Vo): "" and "a".
        assert_eq!(Fnv64::new().finish(), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv64::new().write(b"a").finish(), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(
            Fnv64::new().part(b"ab").part(b"c").finish(),
            Fnv64::new().part(b"a").part(b"bc").finish()
        );
    }
}
