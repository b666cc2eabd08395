//! A fast non-cryptographic generator (wyrand) for incompressible data: write
//! buffers and the scratch file's contents.

pub struct WyRand(u64);

impl WyRand {
    pub fn new(seed: u64) -> WyRand {
        WyRand(seed)
    }

    /// Seeded from the clock and the process id: different data every run.
    pub fn from_entropy() -> WyRand {
        WyRand(crate::clock::now_ns() ^ ((std::process::id() as u64) << 32) ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) ^ t) as u64
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&last[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_data_does_not_compress_to_repeats() {
        let mut buf = vec![0u8; 1 << 16];
        WyRand::new(1).fill(&mut buf);
        // No two 4 KiB blocks alike, and all byte values present.
        let blocks: std::collections::HashSet<&[u8]> = buf.chunks(4096).collect();
        assert_eq!(blocks.len(), 16);
        let mut seen = [false; 256];
        for b in &buf {
            seen[*b as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
