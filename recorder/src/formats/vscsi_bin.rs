//! CloudPhysics vSCSI traces in their binary form (`.vscsi` files, as the
//! CloudPhysics trace collection ships them and libCacheSim reads them):
//! fixed-size little-endian records of one of two versions, told apart by the
//! version in the high byte of each record's `ver` field.
//!
//! - version 1, 32 bytes: `u32 sn, u32 len, u32 nSG, u16 cmd, u16 ver,
//!   u64 lbn, u64 ts`;
//! - version 2, 40 bytes: `u16 cmd, u16 ver, u32 sn, u32 len, u32 nSG,
//!   u64 lbn, u64 ts, u64 rt`.
//!
//! `ts` is microseconds (libCacheSim divides it by 10^6 for seconds, the
//! CSV form's time), `len` bytes, `lbn` 512-byte blocks, `cmd` the SCSI
//! operation code (mapped as in the CSV form); `rt`, the response time, is
//! read as microseconds like `ts`. One file is one virtual disk (`0:0`).

use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Location, SourceIo};
use crate::formats::cloudphysics::{scsi_extent, scsi_op};
use crate::formats::line_input::check_time;
use crate::formats::{FormatSpec, Reader};
use crate::sink::Sink;
use std::io::{BufRead, ErrorKind};
use trace_format::{DeviceId, Nanos};

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "vscsi-bin",
    aliases: &["cloudphysics-bin"],
    about: "CloudPhysics vSCSI binary records (.vscsi, versions 1 and 2; µs, bytes, 512-B blocks)",
    looks_like,
    reader: Reader::Text(parse),
    // Two version-2 records (all bytes below 0x80, so it is a `str`): a
    // WRITE(10) of 4 KiB at block 16 at 1 s taking 100 µs, a READ(10) of
    // 512 B at block 0 at 1.000016 s taking 32 µs.
    example: "\x2a\x00\x00\x02\x01\x00\x00\x00\x00\x10\x00\x00\x01\x00\x00\x00\
              \x10\x00\x00\x00\x00\x00\x00\x00\x40\x42\x0f\x00\x00\x00\x00\x00\
              \x64\x00\x00\x00\x00\x00\x00\x00\
              \x28\x00\x00\x02\x02\x00\x00\x00\x00\x02\x00\x00\x01\x00\x00\x00\
              \x00\x00\x00\x00\x00\x00\x00\x00\x50\x42\x0f\x00\x00\x00\x00\x00\
              \x20\x00\x00\x00\x00\x00\x00\x00",
};

/// Record layouts: (version, record bytes, offset of the `ver` field).
const LAYOUTS: [(u8, usize, usize); 2] = [(2, 40, 2), (1, 32, 14)];

/// The version whose layout every whole record in `head` follows (at least
/// two records, at most 64 checked), if any.
fn version_of(head: &[u8]) -> Option<(u8, usize)> {
    LAYOUTS.iter().find_map(|&(version, size, ver_at)| {
        let records: Vec<&[u8]> = head.chunks_exact(size).take(64).collect();
        let fits = records.len() >= 2
            && records
                .iter()
                .all(|r| r.get(ver_at + 1) == Some(&version));
        fits.then_some((version, size))
    })
}

/// Whether `head` is vSCSI records: every whole record in it carries the
/// same version (1 or 2) where its layout puts it, which no text does.
pub fn looks_like(head: &[u8]) -> bool {
    version_of(head).is_some()
}

fn u64_at(r: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = r.get(at..at + 8) {
        b.copy_from_slice(s);
    }
    u64::from_le_bytes(b)
}

fn u32_at(r: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = r.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_le_bytes(b)
}

fn u16_at(r: &[u8], at: usize) -> u16 {
    let mut b = [0u8; 2];
    if let Some(s) = r.get(at..at + 2) {
        b.copy_from_slice(s);
    }
    u16::from_le_bytes(b)
}

/// What one record is: an I/O, or a note key for a command without data.
fn decode(r: &[u8], version: u8) -> Result<Result<SourceIo, &'static str>, BadReason> {
    let (cmd, ver, len, lbn, ts, rt) = if version == 2 {
        (
            u16_at(r, 0),
            u16_at(r, 2),
            u32_at(r, 8),
            u64_at(r, 16),
            u64_at(r, 24),
            Some(u64_at(r, 32)),
        )
    } else {
        (
            u16_at(r, 12),
            u16_at(r, 14),
            u32_at(r, 4),
            u64_at(r, 16),
            u64_at(r, 24),
            None,
        )
    };
    if ver >> 8 != u16::from(version) {
        return Err(bad(BadInputKind::Syntax, format!(
            "record of version {} in a file of version {version} records",
            ver >> 8
        )));
    }
    let micros = |v: u64, what: &str| {
        v.checked_mul(1000)
            .map(Nanos)
            .ok_or_else(|| bad(BadInputKind::OutOfRange, format!("absurd {what} {v} µs")))
            .and_then(|t| check_time(what, t))
    };
    let time = micros(ts, "time")?;
    let latency = rt.map(|rt| micros(rt, "response time")).transpose()?;
    let Some(op) = scsi_op(u64::from(cmd)) else {
        return Ok(Err("vscsi command without data"));
    };
    let (offset, len) = scsi_extent(op, lbn, u64::from(len))?;
    let device = DeviceId { major: 0, minor: 0 };
    Ok(Ok(SourceIo {
        latency,
        ..SourceIo::request(time, device, op, offset, len)
    }))
}

/// Fills `buf` from `input`; the number of bytes read (short only at the end).
fn read_record(input: &mut dyn BufRead, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let io_error = |source| ConvertError::Io {
        path: file.into(),
        source,
    };
    let head = input.fill_buf().map_err(io_error)?;
    let Some((version, size)) = version_of(head) else {
        return Err(ConvertError::Invalid {
            location: Location::record(file, 0, 0).to_string(),
            reason: "not CloudPhysics vSCSI records: no version 1 or 2 in the first records' \
                     version fields"
                .into(),
        });
    };
    let mut buf = vec![0u8; size];
    let mut index = 0u64;
    loop {
        let got = read_record(input, &mut buf).map_err(io_error)?;
        let at = Location::record(file, index, index * size as u64);
        if got == 0 {
            break;
        }
        if got < size {
            let reason = bad(BadInputKind::Truncated, format!("truncated record: the file ends {got} bytes into a {size}-byte record"));
            sink.bad_input(at, &hex(&buf[..got]), &reason)?;
            break;
        }
        match decode(&buf, version) {
            Ok(Ok(io)) => sink.io(at, io)?,
            Ok(Err(note)) => sink.note(note),
            Err(reason) => sink.bad_input(at, &hex(&buf), &reason)?,
        }
        index += 1;
    }
    if index == 0 {
        return Err(ConvertError::Invalid {
            location: Location::record(file, 0, 0).to_string(),
            reason: "no vSCSI records: the input is empty".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::Collector;
    use trace_format::Op;

    fn v1(cmd: u16, len: u32, lbn: u64, ts: u64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&7u32.to_le_bytes()); // sn
        r.extend_from_slice(&len.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes()); // nSG
        r.extend_from_slice(&cmd.to_le_bytes());
        r.extend_from_slice(&0x0100u16.to_le_bytes());
        r.extend_from_slice(&lbn.to_le_bytes());
        r.extend_from_slice(&ts.to_le_bytes());
        r
    }

    /// Each I/O as (op, offset, length, time, latency), and the sink.
    type Converted = Vec<(Op, u64, u64, u64, Option<Nanos>)>;
    fn convert(data: &[u8]) -> (Converted, Collector) {
        let mut sink = Collector::default();
        parse(&mut &data[..], "t.vscsi", &mut sink).unwrap();
        let got = sink
            .ios
            .iter()
            .map(|io| (io.op, io.offset.0, io.len.0, io.time.0, io.latency))
            .collect();
        (got, sink)
    }

    /// Version 1 records written from the layout: WRITE(10), READ(16),
    /// SYNCHRONIZE CACHE(10), TEST UNIT READY (no data).
    #[test]
    fn version_1_records_convert_exactly() {
        let mut data = v1(0x2a, 4096, 16, 1_000_000);
        data.extend(v1(0x88, 512, 0, 1_000_250));
        data.extend(v1(0x35, 0, 0, 1_000_300));
        data.extend(v1(0x00, 0, 0, 1_000_400));
        assert!(looks_like(&data));
        let (got, sink) = convert(&data[..]);
        assert_eq!(
            got,
            vec![
                (Op::Write, 16 * 512, 4096, 1_000_000_000, None),
                (Op::Read, 0, 512, 1_000_250_000, None),
                (Op::Flush, 0, 0, 1_000_300_000, None),
            ]
        );
        assert_eq!(sink.notes.get("vscsi command without data"), Some(&1));
    }

    #[test]
    fn version_2_example_converts_with_response_times() {
        let data = FORMAT.example.as_bytes();
        assert_eq!(version_of(data), Some((2, 40)));
        let (got, _) = convert(data);
        assert_eq!(
            got,
            vec![
                (Op::Write, 16 * 512, 4096, 1_000_000_000, Some(Nanos(100_000))),
                (Op::Read, 0, 512, 1_000_016_000, Some(Nanos(32_000))),
            ]
        );
    }

    #[test]
    fn bad_records_are_named() {
        let mut data = v1(0x28, 512, 0, 1);
        data.extend(v1(0x28, 512, 0, 2));
        data.extend(v1(0x28, 512, u64::MAX / 256, 3));
        data.extend_from_slice(&[1, 2, 3]);
        let mut sink = Collector::skipping_bad_input();
        parse(&mut &data[..], "t.vscsi", &mut sink).unwrap();
        assert_eq!(sink.ios.len(), 2);
        assert_eq!(sink.bad.len(), 2);
        assert!(sink.bad[0].location.contains("record 2 (byte 64)"), "{:?}", sink.bad);
        assert_eq!(
            sink.bad[1].kind,
            crate::error::BadInputKind::Truncated,
            "{:?}",
            sink.bad
        );
        assert!(!looks_like(b"version,time,op,size,lbn\n1,5633898,2a,512,42932745\n"));
        assert!(!looks_like(&v1(0x28, 512, 0, 1)));
    }
}
