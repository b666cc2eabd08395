//! The columnar record encoding inside a chunk (before zstd). See FORMAT.md,
//! "Chunk payload".

use crate::record::{Flags, IoRecord, Op};
use crate::units::{Bytes, Nanos};

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

pub(crate) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Reads values from one column, failing on a malformed or exhausted column.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    pub column: &'static str,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8], column: &'static str) -> Self {
        Cursor {
            bytes,
            pos: 0,
            column,
        }
    }

    pub(crate) fn varint(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .bytes
                .get(self.pos)
                .ok_or_else(|| format!("{} column ends early", self.column))?;
            self.pos += 1;
            let low = u64::from(b & 0x7f);
            if shift == 63 && low > 1 {
                return Err(format!("{} column has an oversized varint", self.column));
            }
            v |= low << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("{} column has an oversized varint", self.column))
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| format!("{} column ends early", self.column))?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| format!("{} ends early", self.column))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn finish(&self) -> Result<(), String> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(format!(
                "{} column has {} bytes left over",
                self.column,
                self.bytes.len() - self.pos
            ))
        }
    }
}

const OP_MASK: u8 = 0x07;
const FLAGS_SHIFT: u8 = 3;
const HAS_LATENCY: u8 = 0x80;

/// Encodes records (non-decreasing times, starting at or after `first_time`)
/// into the uncompressed chunk payload.
pub(crate) fn encode_chunk(records: &[IoRecord], first_time: Nanos, out: &mut Vec<u8>) {
    let mut time_unit = 0u64;
    let mut block_unit = 0u64;
    let mut latency_unit = 0u64;
    let mut prev = first_time.0;
    for r in records {
        time_unit = gcd(time_unit, r.time.0 - prev);
        prev = r.time.0;
        block_unit = gcd(block_unit, gcd(r.offset.0, r.len.0));
        if let Some(l) = r.latency {
            latency_unit = gcd(latency_unit, l.0);
        }
    }
    let time_unit = time_unit.max(1);
    let block_unit = block_unit.max(1);
    let latency_unit = latency_unit.max(1);

    let mut times = Vec::with_capacity(records.len() * 2);
    let mut kinds = Vec::with_capacity(records.len());
    let mut offsets = Vec::with_capacity(records.len() * 2);
    let mut lens = Vec::with_capacity(records.len() * 2);
    let mut latencies = Vec::with_capacity(records.len() * 2);
    let mut streams = Vec::with_capacity(records.len());
    let mut devices = Vec::with_capacity(records.len());
    let mut prev_time = first_time.0;
    let mut prev_end = 0u64;
    for r in records {
        put_varint(&mut times, (r.time.0 - prev_time) / time_unit);
        prev_time = r.time.0;
        let mut kind = r.op.code() | (r.flags.bits() << FLAGS_SHIFT);
        if let Some(l) = r.latency {
            kind |= HAS_LATENCY;
            put_varint(&mut latencies, l.0 / latency_unit);
        }
        kinds.push(kind);
        // Offsets are coded against the end of the previous request: 0 for a
        // sequential stream. Differences of multiples of the unit stay multiples.
        let delta = (r.offset.0 / block_unit) as i128 - (prev_end / block_unit) as i128;
        put_varint(&mut offsets, zigzag(delta as i64));
        put_varint(&mut lens, r.len.0 / block_unit);
        // The writer keeps every end at or below i64::MAX, so this neither
        // overflows nor leaves a delta outside i64.
        prev_end = r.offset.0 + r.len.0;
        put_varint(&mut streams, r.stream.map_or(0, |s| u64::from(s) + 1));
        put_varint(&mut devices, u64::from(r.device));
    }
    out.clear();
    put_varint(out, time_unit);
    put_varint(out, block_unit);
    put_varint(out, latency_unit);
    for col in [
        &times, &kinds, &offsets, &lens, &latencies, &streams, &devices,
    ] {
        put_varint(out, col.len() as u64);
    }
    for col in [
        &times, &kinds, &offsets, &lens, &latencies, &streams, &devices,
    ] {
        out.extend_from_slice(col);
    }
}

/// Decodes a chunk payload of `count` records; every inconsistency is an error.
pub(crate) fn decode_chunk(
    payload: &[u8],
    count: usize,
    first_time: Nanos,
    out: &mut Vec<IoRecord>,
) -> Result<(), String> {
    out.clear();
    let mut head = Cursor::new(payload, "chunk header");
    let time_unit = head.varint()?;
    let block_unit = head.varint()?;
    let latency_unit = head.varint()?;
    if time_unit == 0 || block_unit == 0 || latency_unit == 0 {
        return Err("a unit is zero".into());
    }
    let mut lens = [0usize; 7];
    for l in lens.iter_mut() {
        *l = usize::try_from(head.varint()?).map_err(|_| "column length too large")?;
    }
    let names = [
        "time", "kind", "offset", "length", "latency", "stream", "device",
    ];
    let mut cols: Vec<Cursor> = Vec::with_capacity(7);
    for (len, name) in lens.iter().zip(names) {
        head.column = "chunk columns";
        let bytes = head.take(*len)?;
        cols.push(Cursor::new(bytes, name));
    }
    head.column = "chunk";
    head.finish()?;
    let [times, kinds, offsets, lengths, latencies, streams, devices] = &mut cols[..] else {
        return Err("column table".into());
    };

    let mut time = first_time.0;
    let mut prev_end = 0u64;
    out.reserve(count);
    for i in 0..count {
        let bad = |what: &str| format!("record {i} in the chunk: {what}");
        let dt = times
            .varint()?
            .checked_mul(time_unit)
            .ok_or_else(|| bad("time overflows"))?;
        time = time.checked_add(dt).ok_or_else(|| bad("time overflows"))?;
        let kind = kinds.byte()?;
        let op = Op::from_code(kind & OP_MASK).ok_or_else(|| bad("unknown operation code"))?;
        let flags = Flags::from_bits((kind & !HAS_LATENCY) >> FLAGS_SHIFT)
            .ok_or_else(|| bad("undefined flag bits"))?;
        let delta = unzigzag(offsets.varint()?);
        let offset_units = u64::try_from((prev_end / block_unit) as i128 + delta as i128)
            .map_err(|_| bad("offset out of range"))?;
        let offset = offset_units
            .checked_mul(block_unit)
            .ok_or_else(|| bad("offset out of range"))?;
        let len = lengths
            .varint()?
            .checked_mul(block_unit)
            .ok_or_else(|| bad("length out of range"))?;
        let latency = if kind & HAS_LATENCY != 0 {
            Some(Nanos(
                latencies
                    .varint()?
                    .checked_mul(latency_unit)
                    .ok_or_else(|| bad("latency out of range"))?,
            ))
        } else {
            None
        };
        let stream = match streams.varint()? {
            0 => None,
            s => Some(u32::try_from(s - 1).map_err(|_| bad("stream id out of range"))?),
        };
        let device = u16::try_from(devices.varint()?).map_err(|_| bad("device out of range"))?;
        prev_end = offset
            .checked_add(len)
            .filter(|&e| e <= i64::MAX as u64)
            .ok_or_else(|| bad("request ends beyond 2^63"))?;
        out.push(IoRecord {
            time: Nanos(time),
            op,
            offset: Bytes(offset),
            len: Bytes(len),
            flags,
            latency,
            stream,
            device,
        });
    }
    for c in cols.iter() {
        c.finish()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut c = Cursor::new(&b, "t");
            assert_eq!(c.varint().unwrap(), v);
            c.finish().unwrap();
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn an_eleven_byte_varint_is_refused() {
        let b = [0xffu8; 11];
        assert!(Cursor::new(&b, "t").varint().is_err());
    }
}
