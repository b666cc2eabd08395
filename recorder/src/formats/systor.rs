//! SYSTOR '17 enterprise VDI traces (SNIA IOTTA, Lee et al., "Understanding
//! storage traffic characteristics on enterprise virtual desktop
//! infrastructure"): `Timestamp,Response,IOType,LUN,Offset,Size` with that
//! header line, e.g. `1487065205.534719,0.000451,R,4,2781364224,4096`.
//!
//! Timestamp is Unix time in seconds with a decimal fraction; Response is the
//! response time in seconds (decimal; kept as the original latency, unknown
//! when the field is empty); IOType is `R` or `W`; LUN is the logical unit
//! (here device `0:LUN`, the volume `--volume LUN` keeps); Offset and Size are
//! bytes.

use super::request_lines::{
    csv_row, head_parsed, is_header, parse_lines, read_or_write, volume_device, Parsed,
};
use crate::error::{BadReason, ConvertError};
use crate::formats::{FormatSpec, Reader};
use crate::event::SourceIo;
use crate::formats::line_input::{check_extent, check_time, parse_fixed, parse_u64, NumberStyle};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, Nanos};

const HEADER: &str = "Timestamp,Response,IOType,LUN,Offset,Size";

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "systor",
    aliases: &["systor17"],
    about: "SYSTOR '17 VDI traces (Timestamp,Response,IOType,LUN,Offset,Size; s, bytes)",
    looks_like,
    reader: Reader::Text(parse),
    example: "Timestamp,Response,IOType,LUN,Offset,Size\n1487065205.534719,0.000451,R,4,2781364224,4096\n1487065205.5352,,W,0,0,65536\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this
/// format (the header line alone is enough).
pub fn looks_like(head: &[u8]) -> bool {
    head_parsed(head, parse_line).is_some_and(|lines| !lines.is_empty())
}

fn seconds(field: &[u8], what: &str) -> Result<Nanos, BadReason> {
    check_time(
        what,
        Nanos(parse_fixed(field, what, 9, NumberStyle::PLAIN)?),
    )
}

fn parse_line(line: &[u8]) -> Result<Parsed, BadReason> {
    if is_header(line, HEADER) {
        return Ok(Parsed::Note("systor header line"));
    }
    let f = csv_row::<7>(line, HEADER)?;
    let time = seconds(f.get(0), "timestamp")?;
    let latency = match f.get(1) {
        b"" => None,
        field => Some(seconds(field, "response time")?),
    };
    let op = read_or_write(f.get(2), "IOType")?;
    let device = volume_device(f.get(3), "LUN")?;
    let offset = parse_u64(f.get(4), "offset")?;
    let len = parse_u64(f.get(5), "size")?;
    check_extent(offset, len)?;
    Ok(Parsed::Io(SourceIo {
        latency,
        ..SourceIo::request(time, device, op, Bytes(offset), Bytes(len))
    }))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "SYSTOR '17 trace", parse_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_documented};
    use trace_format::Op;

    /// The header and rows written from it: a read, a write on another LUN
    /// with a 12.5 ms response, and one without a response time.
    const DOC: &[u8] = b"Timestamp,Response,IOType,LUN,Offset,Size\n\
1487065205.534719,0.000451,R,4,2781364224,4096\n\
1487065205.5352,0.0125,W,0,0,65536\n\
1487065206,,r,4,512,512\n";

    #[test]
    fn documented_rows_convert_exactly() {
        let out = run_documented(looks_like, parse, DOC);
        assert_eq!(out.notes, vec!["systor header line".to_string()]);
        let got: Vec<(u32, Op, u64, u64, Nanos, Option<Nanos>)> = out
            .ios
            .iter()
            .map(|(_, io)| {
                (
                    io.device.minor,
                    io.op,
                    io.offset.0,
                    io.len.0,
                    io.time,
                    io.latency,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    4,
                    Op::Read,
                    2781364224,
                    4096,
                    Nanos(1487065205534719000),
                    Some(Nanos(451_000))
                ),
                (
                    0,
                    Op::Write,
                    0,
                    65536,
                    Nanos(1487065205535200000),
                    Some(Nanos(12_500_000))
                ),
                (4, Op::Read, 512, 512, Nanos(1487065206000000000), None),
            ]
        );
    }

    #[test]
    fn not_other_formats() {
        assert!(!looks_like(
            b"128166372003061629,web,1,Read,3154152960,32768,18741\n"
        ));
        assert!(!looks_like(b"0,R,126703644672,4096,1577808000000626\n"));
        assert!(!looks_like(b"0,303567,3584,w,0.000000\n"));
    }

    #[test]
    fn bad_rows() {
        let text = b"1.5,0.1,X,0,0,512\n1.5,-0.1,R,0,0,512\n1.5,0.1,R,0,0\n";
        let out = run(parse, text);
        let reasons: Vec<&str> = out.bad.iter().map(|(_, _, r)| r.as_str()).collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        use crate::error::BadInputKind as K;
        assert_eq!(out.kinds, [K::UnknownOp, K::Negative, K::Syntax], "{reasons:?}");
        assert!(reasons[1].contains("negative response time"));
    }
}
