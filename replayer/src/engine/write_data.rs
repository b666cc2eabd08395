//! What writes carry: incompressible data of which no two sectors are alike.
//!
//! Each queue slot has its own write buffer, filled with random bytes once.
//! When a write from a slot completes, every 512-byte sector it sent gets a
//! new stamp in its first 8 bytes, one no other sector of the run (or of
//! another run) gets; so no sector of a slot's buffer ever holds what was
//! sent before. A drive that compresses finds nothing to compress and one
//! that deduplicates nothing to share, however many gigabytes a trace
//! writes (a fixed buffer cycled through repeats itself after its length),
//! and the data a write sends was touched recently, as an application's
//! freshly written data is. Stamping on completion keeps it off the path
//! from a deadline to the submission: a 1 MiB write's 2,048 stamps took
//! 17 µs with 32 such slots cycled through.

use crate::buffer::AlignedBuf;
use std::io;
use trace_format::rng::WyRand;

/// The stamp's granularity: the smallest logical block a device has.
const SECTOR: usize = 512;

/// The write buffers of all slots, and the stamps' state.
pub(super) struct WriteData {
    buf: AlignedBuf,
    slot_len: usize,
    /// Random per engine, so runs do not repeat each other's stamps.
    run_key: u64,
    /// Sectors stamped so far.
    stamped: u64,
}

impl WriteData {
    /// `slots` buffers of `slot_len` bytes (a multiple of 4096), random.
    pub(super) fn new(slots: usize, slot_len: usize) -> io::Result<WriteData> {
        let mut buf = AlignedBuf::new(slots.saturating_mul(slot_len))?;
        let mut rng = WyRand::from_entropy();
        rng.fill(buf.as_mut_slice());
        Ok(WriteData {
            buf,
            slot_len,
            run_key: rng.next_u64(),
            stamped: 0,
        })
    }

    /// All slots' buffers, for registration with the ring.
    pub(super) fn iovec(&self) -> libc::iovec {
        self.buf.iovec()
    }

    /// The buffer of `slot`, for a write of at most the slot length.
    pub(super) fn buffer(&mut self, slot: usize) -> *mut u8 {
        self.buf.as_mut_slice()[slot * self.slot_len..].as_mut_ptr()
    }

    /// A write of `len` bytes from `slot` completed: its sectors get new
    /// stamps, so the next write from the slot sends none of them again.
    pub(super) fn renew(&mut self, slot: usize, len: usize) {
        let start = slot * self.slot_len;
        let len = len.min(self.slot_len);
        for sector in self.buf.as_mut_slice()[start..start + len].chunks_mut(SECTOR) {
            let n = sector.len().min(8);
            sector[..n].copy_from_slice(&stamp(self.run_key, self.stamped).to_le_bytes()[..n]);
            self.stamped += 1;
        }
    }
}

/// A bijective mix of the run's key and the sector's number: distinct
/// numbers give distinct stamps, which look random (the splitmix64 finaliser).
fn stamp(run_key: u64, n: u64) -> u64 {
    let mut z = run_key.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// What a write of `len` bytes from `slot` sends, then its completion.
    fn written(data: &mut WriteData, slot: usize, len: usize) -> Vec<u8> {
        let ptr = data.buffer(slot);
        // SAFETY: the slot's buffer holds at least `len` bytes.
        let sent = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
        data.renew(slot, len);
        sent
    }

    #[test]
    fn no_two_sectors_written_are_alike_though_the_slots_repeat() {
        let mut data = WriteData::new(4, 8192).expect("buffers");
        let mut sectors = HashSet::new();
        let mut total = 0;
        // 1,000 writes through 4 slots: each slot's buffer is sent 250 times.
        for i in 0..1_000 {
            let len = if i % 3 == 0 { 8192 } else { 4096 };
            let bytes = written(&mut data, i % 4, len);
            for sector in bytes.chunks(SECTOR) {
                sectors.insert(sector.to_vec());
                total += 1;
            }
        }
        assert_eq!(
            sectors.len(),
            total,
            "a sector was written twice with the same bytes"
        );
    }

    #[test]
    fn a_completion_renews_only_its_slot_and_only_the_stamps() {
        let mut data = WriteData::new(3, 4096).expect("buffers");
        let before = data.buf.as_slice().to_vec();
        let ptr = data.buffer(1);
        assert_eq!(ptr as usize - data.buf.as_slice().as_ptr() as usize, 4096);
        data.renew(1, 4096);
        let after = data.buf.as_slice();
        // Slots 0 and 2 untouched; slot 1 changed only in its stamps.
        assert_eq!(before[..4096], after[..4096]);
        assert_eq!(before[8192..], after[8192..]);
        for (s, (b, a)) in before[4096..8192]
            .chunks(SECTOR)
            .zip(after[4096..8192].chunks(SECTOR))
            .enumerate()
        {
            assert_ne!(b[..8], a[..8], "sector {s} not stamped");
            assert_eq!(b[8..], a[8..], "sector {s} changed beyond its stamp");
        }
        // Every byte value still appears: nothing compressible was added.
        let mut seen = [false; 256];
        for b in &after[4096..8192] {
            seen[*b as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
