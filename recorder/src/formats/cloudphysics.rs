//! CloudPhysics vSCSI traces as CSV (the form libCacheSim ships and converts):
//! `version,time,op,size,lbn` with that header, e.g. `1,5633898,2a,512,42932745`.
//!
//! version is the vscsi record version (1 or 2); time is whole seconds (the
//! libCacheSim documentation of its sample: "time is in seconds"; decimals are
//! accepted); op is the SCSI command's operation code in hexadecimal; size is
//! bytes; lbn is the logical block number in 512-byte blocks. READ(6/10/12/16)
//! (`08 28 a8 88`) are reads, WRITE(6/10/12/16) (`0a 2a aa 8a`) writes and
//! SYNCHRONIZE CACHE(10/16) (`35 91`) flushes; any other command carries no
//! extent in this layout and is counted as a note, not an I/O. One file is one
//! virtual disk (device `0:0`).

use super::request_lines::{csv_row, is_header, parse_lines, Parsed};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::formats::{FormatSpec, Reader};
use crate::event::SourceIo;
use crate::formats::line_input::{
    check_extent, check_time, head_lines, parse_fixed, parse_hex_u64, parse_u64,
    sectors_to_bytes, NumberStyle,
};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Nanos, Op};

const HEADER: &str = "version,time,op,size,lbn";

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "cloudphysics",
    aliases: &["vscsi"],
    about: "CloudPhysics vSCSI CSV (version,time,op,size,lbn; s, SCSI opcode, bytes, 512-B blocks)",
    looks_like,
    reader: Reader::Text(parse),
    example: "version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633899,28,65536,8\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this
/// format: the header is required (the rows alone are too plain to tell).
pub fn looks_like(head: &[u8]) -> bool {
    let mut lines = head_lines(head, 4);
    if !lines.next().is_some_and(|l| is_header(l, HEADER)) {
        return false;
    }
    lines.all(|l| parse_line(l).is_ok())
}

/// What a SCSI operation code means for a trace.
pub(crate) fn scsi_op(code: u64) -> Option<Op> {
    match code {
        0x08 | 0x28 | 0xa8 | 0x88 => Some(Op::Read),
        0x0a | 0x2a | 0xaa | 0x8a => Some(Op::Write),
        0x35 | 0x91 => Some(Op::Flush),
        _ => None,
    }
}

/// Where a SCSI command of `op` reads or writes: nothing for a flush, else
/// `size` bytes from 512-byte block `lbn`.
pub(crate) fn scsi_extent(op: Op, lbn: u64, size: u64) -> Result<(Bytes, Bytes), BadReason> {
    if op == Op::Flush {
        return Ok((Bytes(0), Bytes(0)));
    }
    let offset = sectors_to_bytes(lbn, "lbn", "")?;
    check_extent(offset.0, size)?;
    Ok((offset, Bytes(size)))
}

fn parse_line(line: &[u8]) -> Result<Parsed, BadReason> {
    if is_header(line, HEADER) {
        return Ok(Parsed::Note("vscsi header line"));
    }
    let f = csv_row::<6>(line, HEADER)?;
    match parse_u64(f.get(0), "version")? {
        1 | 2 => {}
        v => return Err(bad(BadInputKind::Syntax, format!("vscsi version {v} is neither 1 nor 2"))),
    }
    let time = check_time(
        "time",
        Nanos(parse_fixed(f.get(1), "time", 9, NumberStyle::PLAIN)?),
    )?;
    let code = parse_hex_u64(f.get(2), "op")?;
    let size = parse_u64(f.get(3), "size")?;
    let lbn = parse_u64(f.get(4), "lbn")?;
    let Some(op) = scsi_op(code) else {
        return Ok(Parsed::Note("vscsi command without data"));
    };
    let (offset, len) = scsi_extent(op, lbn, size)?;
    let device = DeviceId { major: 0, minor: 0 };
    Ok(Parsed::Io(SourceIo::request(time, device, op, offset, len)))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "CloudPhysics vSCSI CSV", parse_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_documented};

    /// The header and rows written from the layout: WRITE(10), READ(10),
    /// READ(16), SYNCHRONIZE CACHE(10), a TEST UNIT READY (no data).
    const DOC: &[u8] = b"version,time,op,size,lbn\n\
1,5633898,2a,512,42932745\n\
1,5633899,28,65536,8\n\
2,5633899.5,88,4096,0\n\
1,5633900,35,0,0\n\
1,5633900,00,0,0\n";

    #[test]
    fn documented_rows_convert_exactly() {
        let out = run_documented(looks_like, parse, DOC);
        let got: Vec<(Op, u64, u64, Nanos)> = out
            .ios
            .iter()
            .map(|(_, io)| (io.op, io.offset.0, io.len.0, io.time))
            .collect();
        let s = 1_000_000_000u64;
        assert_eq!(
            got,
            vec![
                (Op::Write, 42932745 * 512, 512, Nanos(5633898 * s)),
                (Op::Read, 8 * 512, 65536, Nanos(5633899 * s)),
                (Op::Read, 0, 4096, Nanos(5633899 * s + s / 2)),
                (Op::Flush, 0, 0, Nanos(5633900 * s)),
            ]
        );
        assert_eq!(
            out.notes,
            vec![
                "vscsi header line".to_string(),
                "vscsi command without data".to_string()
            ]
        );
    }

    #[test]
    fn header_is_required_to_detect() {
        assert!(!looks_like(b"1,5633898,2a,512,42932745\n"));
        assert!(!looks_like(b"0,R,126703644672,4096,1577808000000626\n"));
    }

    #[test]
    fn bad_rows() {
        let text = b"3,1,28,512,0\n1,1,zz,512,0\n1,1,28,512\n";
        let out = run(parse, text);
        let reasons: Vec<&str> = out.bad.iter().map(|(_, _, r)| r.as_str()).collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        use crate::error::BadInputKind as K;
        assert_eq!(out.kinds, [K::Syntax, K::NotANumber, K::Syntax], "{reasons:?}");
        assert!(reasons[0].contains("neither 1 nor 2"));
    }
}
