//! A trace's identity by content: FNV-1a 64 over each record's time,
//! operation, offset, length and device, in order. Two traces with the same
//! records have the same checksum whatever their metadata, compression or
//! chunking, so a result names exactly the I/O it replayed.

use crate::fnv::Fnv1a;
use crate::IoRecord;

/// FNV-1a 64 over records, fed one record at a time.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordChecksum(Fnv1a);

impl RecordChecksum {
    fn bytes(&mut self, b: &[u8]) {
        self.0.write(b);
    }

    pub fn add(&mut self, r: &IoRecord) {
        self.bytes(&r.time.0.to_le_bytes());
        self.bytes(&[r.op.code()]);
        self.bytes(&r.offset.0.to_le_bytes());
        self.bytes(&r.len.0.to_le_bytes());
        self.bytes(&r.device.to_le_bytes());
    }

    /// The checksum as 16 lowercase hex digits, as result files carry it.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bytes, Flags, Nanos, Op};

    fn rec(time: u64, op: Op, offset: u64) -> IoRecord {
        IoRecord {
            time: Nanos(time),
            op,
            offset: Bytes(offset),
            len: Bytes(4096),
            flags: Flags::NONE,
            latency: None,
            stream: None,
            device: 0,
        }
    }

    fn sum(records: &[IoRecord]) -> String {
        let mut s = RecordChecksum::default();
        for r in records {
            s.add(r);
        }
        s.hex()
    }

    #[test]
    fn follows_the_replayed_fields_and_their_order_only() {
        let a = rec(10, Op::Read, 0);
        let b = rec(20, Op::Write, 8192);
        let base = sum(&[a, b]);
        assert_eq!(base.len(), 16);
        assert_ne!(base, sum(&[b, a]), "order counts");
        assert_ne!(base, sum(&[rec(11, Op::Read, 0), b]), "time counts");
        assert_ne!(base, sum(&[rec(10, Op::Write, 0), b]), "op counts");
        assert_ne!(base, sum(&[rec(10, Op::Read, 4096), b]), "offset counts");
        let mut other_device = a;
        other_device.device = 1;
        assert_ne!(base, sum(&[other_device, b]), "device counts");
        // What a replay does not reproduce is no part of the identity.
        let mut annotated = a;
        annotated.latency = Some(Nanos(5));
        annotated.stream = Some(7);
        annotated.flags = Flags::SYNC;
        assert_eq!(base, sum(&[annotated, b]));
    }
}
