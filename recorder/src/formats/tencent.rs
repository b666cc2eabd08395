//! Tencent Cloud Block Storage (CBS) traces (SNIA IOTTA, ATC '20 OSCA paper):
//! `Timestamp,Offset,Size,IOType,VolumeID`, no header, e.g.
//! `1538323200,1875024,16,1,1063`.
//!
//! As the publisher's README documents it: Timestamp is Unix time in whole
//! seconds (so every request of a second has the same time, in file order);
//! Offset and Size are 512-byte sectors; IOType is 0 (read) or 1 (write);
//! VolumeID is the cloud virtual volume (here device `0:ID`, the volume
//! `--volume ID` keeps). The files ship as `.tgz`: extract the CSV, then
//! convert it (compressed or not).

use super::request_lines::{
    csv_row, head_parsed, is_header, is_request, parse_lines, volume_device, zero_or_one, Parsed,
};
use crate::error::{BadReason, ConvertError};
use crate::formats::{FormatSpec, Reader};
use crate::event::SourceIo;
use crate::formats::line_input::{check_extent, nanos_from, parse_u64, sectors_to_bytes};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::Op;

const HEADER: &str = "Timestamp,Offset,Size,IOType,VolumeID";

/// Smallest first-field value taken as a Unix time in detection (2001-09-09):
/// tells this layout from other all-numeric five-field CSVs.
const MIN_UNIX_SECONDS: u64 = 1_000_000_000;

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "tencent",
    aliases: &["tencent-cbs", "cbs"],
    about: "Tencent CBS traces (Timestamp,Offset,Size,IOType,VolumeID; s, sectors, 0=read)",
    looks_like,
    reader: Reader::Text(parse),
    example: "1538323200,1875024,16,1,1063\n1538323200,0,8,0,1063\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(head: &[u8]) -> bool {
    let unix_time = |parsed: &Parsed| match parsed {
        Parsed::Io(io) => io.time.0 >= MIN_UNIX_SECONDS * 1_000_000_000,
        Parsed::Note(_) => true,
    };
    head_parsed(head, parse_line)
        .is_some_and(|lines| lines.iter().all(unix_time) && lines.iter().any(is_request))
}

fn parse_line(line: &[u8]) -> Result<Parsed, BadReason> {
    if is_header(line, HEADER) {
        return Ok(Parsed::Note("tencent header line"));
    }
    let f = csv_row::<6>(line, HEADER)?;
    let time = nanos_from(
        parse_u64(f.get(0), "timestamp")?,
        1_000_000_000,
        "timestamp",
    )?;
    let offset = sectors_to_bytes(parse_u64(f.get(1), "offset")?, "offset", "sectors")?;
    let len = sectors_to_bytes(parse_u64(f.get(2), "size")?, "size", "sectors")?;
    let op = zero_or_one(f.get(3), "IOType", Op::Read, Op::Write)?;
    let device = volume_device(f.get(4), "VolumeID")?;
    check_extent(offset.0, len.0)?;
    Ok(Parsed::Io(SourceIo::request(time, device, op, offset, len)))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "Tencent CBS trace", parse_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_documented};
    use trace_format::Nanos;

    /// Rows written from the README's field list: a write and a read of
    /// volume 1063 in one second, then a read of another volume.
    const DOC: &[u8] = b"1538323200,1875024,16,1,1063\n\
1538323200,0,8,0,1063\n\
1538323201,4294967296,256,0,4\n";

    #[test]
    fn documented_rows_convert_exactly() {
        let out = run_documented(looks_like, parse, DOC);
        let got = out.requests();
        let s = 1_000_000_000u64;
        assert_eq!(
            got,
            vec![
                (
                    1063,
                    Op::Write,
                    1875024 * 512,
                    16 * 512,
                    Nanos(1538323200 * s)
                ),
                (1063, Op::Read, 0, 8 * 512, Nanos(1538323200 * s)),
                (
                    4,
                    Op::Read,
                    4294967296 * 512,
                    256 * 512,
                    Nanos(1538323201 * s)
                ),
            ]
        );
    }

    #[test]
    fn not_other_formats() {
        assert!(!looks_like(b"0,R,126703644672,4096,1577808000000626\n"));
        assert!(!looks_like(b"0,303567,3584,w,0.000000\n"));
        // All numeric but not a Unix time in seconds.
        assert!(!looks_like(b"5,1875024,16,1,1063\n"));
        assert!(!looks_like(b""));
    }

    #[test]
    fn bad_rows() {
        let text = b"1538323200,0,8,2,1\n1538323200,0,8,R,1\n1538323200,0,8,0\n1538323200,36028797018963968,8,0,1\n";
        let out = run(parse, text);
        let reasons: Vec<&str> = out.bad.iter().map(|(_, _, r)| r.as_str()).collect();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        use crate::error::BadInputKind as K;
        assert_eq!(
            out.kinds,
            [K::UnknownOp, K::UnknownOp, K::Syntax, K::OutOfRange],
            "{reasons:?}"
        );
    }
}
