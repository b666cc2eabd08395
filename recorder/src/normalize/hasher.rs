//! The hasher of the normaliser's pairing tables.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast non-cryptographic hasher for the normaliser's tables (keys come from
/// one input file; SipHash's flood resistance costs more than it buys here).
/// Words are folded in with a multiply; `finish` mixes the bits so that keys
/// differing only in high bits (sector offsets, multiples of 4096) spread over
/// the low bits that pick a bucket.
#[derive(Default, Clone, Copy)]
pub(super) struct FoldHasher(u64);

impl FoldHasher {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for FoldHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let mut last = [0u8; 8];
        let tail = chunks.remainder();
        last[..tail.len()].copy_from_slice(tail);
        self.add(u64::from_le_bytes(last) ^ ((tail.len() as u64) << 59));
    }

    fn write_u8(&mut self, v: u8) {
        self.add(u64::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.add(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }

    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }

    fn finish(&self) -> u64 {
        // splitmix64's finaliser.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

pub(super) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FoldHasher>>;
