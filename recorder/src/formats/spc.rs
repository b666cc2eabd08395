//! SPC traces from the UMass Trace Repository (Financial1/2, WebSearch1-3):
//! `ASU,LBA,Size,Opcode,Timestamp[,...]`, e.g. `0,303567,3584,w,0.000000`.
//!
//! ASU (application specific unit) becomes device `0:ASU`; LBA counts 512-byte
//! blocks; Size is bytes; Opcode is `r`/`R` (read) or `w`/`W` (write); Timestamp
//! is seconds (decimal) since the start of the trace. Fields after the fifth
//! (optional, unspecified by the format) are ignored.

use super::request_lines::{head_has_requests, parse_lines, volume_device, Parsed};
use crate::formats::{FormatSpec, Reader};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::SourceIo;
use crate::formats::line_input::{
    check_extent, check_time, parse_fixed, parse_u64, sectors_to_bytes, show, Fields, NumberStyle,
};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, Nanos, Op};

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "spc",
    aliases: &["umass"],
    about: "SPC / UMass CSV (ASU,LBA,Size,Opcode,Timestamp)",
    looks_like,
    reader: Reader::Text(parse),
    example: "0,20941264,8192,W,0.551706\n0,20939840,8192,r,0.554041\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(head: &[u8]) -> bool {
    head_has_requests(head, parse_line)
}

fn parse_line(line: &[u8]) -> Result<Parsed, BadReason> {
    let f = Fields::<6>::split(line, b',');
    if f.len() < 5 {
        return Err(bad(BadInputKind::Syntax, format!(
            "expected at least 5 comma-separated fields (ASU,LBA,Size,Opcode,Timestamp), found {}",
            f.len()
        )));
    }
    let device = volume_device(f.get(0), "ASU")?;
    let offset = sectors_to_bytes(parse_u64(f.get(1), "LBA")?, "LBA", "")?;
    let size = parse_u64(f.get(2), "size")?;
    let op = match f.get(3) {
        b"r" | b"R" => Op::Read,
        b"w" | b"W" => Op::Write,
        other => return Err(bad(BadInputKind::UnknownOp, format!("opcode `{}` is neither r nor w", show(other)))),
    };
    let time = Nanos(parse_fixed(f.get(4), "timestamp", 9, NumberStyle::PLAIN)?);
    check_time("timestamp", time)?;
    check_extent(offset.0, size)?;
    Ok(Parsed::Io(SourceIo::request(time, device, op, offset, Bytes(size))))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "SPC", parse_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_strict};

    const SAMPLE: &[u8] = b"0,303567,3584,w,0.000000\n\
1,55590,3072,W,0.000000\n\
0,303574,3584,r,0.026214\n\
24,2,512,R,12.5,extra,fields\n";

    #[test]
    fn detects_spc_only() {
        assert!(looks_like(SAMPLE));
        assert!(!looks_like(
            b"128166372003061629,web,1,Read,3154152960,32768,18741\n"
        ));
        assert!(!looks_like(
            b"version,time,op,size,lbn\n1,5633898,2a,512,42932745\n"
        ));
        assert!(!looks_like(b"fio version 2 iolog\n"));
        assert!(!looks_like(b"11413000 0 657728 16 1\n"));
        assert!(!looks_like(b"IO Type;Priority\n"));
        assert!(!looks_like(b""));
    }

    #[test]
    fn units_are_blocks_bytes_and_seconds() {
        let out = run(parse, SAMPLE);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        let got = out.requests();
        assert_eq!(
            got,
            vec![
                (0, Op::Write, 303567 * 512, 3584, Nanos(0)),
                (1, Op::Write, 55590 * 512, 3072, Nanos(0)),
                (0, Op::Read, 303574 * 512, 3584, Nanos(26_214_000)),
                (24, Op::Read, 1024, 512, Nanos(12_500_000_000)),
            ]
        );
    }

    #[test]
    fn bad_lines() {
        let input: &[u8] = b"0,1,512,r,0.1\n\
0,1,512,r\n\
0,1,-512,r,0.2\n\
0,1,512,x,0.3\n\
0,18014398509481983,512,r,0.4\n\
0,18014398509481984,512,r,0.4\n\
0,1,512,r,-1.0\n\
0,1,512,r,1e300\n\
0,1,512,r,nan\n\
0,1,512,r,9999999999\n\
\xff,1,512,r,0.5\n\
0,1,512,r,0.6";
        let out = run(parse, input);
        let expect = [
            (2, "at least 5"),
            (3, "negative size"),
            (4, "neither r nor w"),
            (6, "past 2^63"),
            (7, "negative timestamp"),
            (8, "too large"),
            (9, "not a number"),
            (10, "absurd timestamp"),
            (11, "ASU"),
        ];
        out.assert_bad_lines(&expect);
        let lines: Vec<u64> = out.ios.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, vec![1, 5, 12]);
        // Line 5 ends exactly at 2^63 - 512 + 512 = 2^63.
        assert_eq!(out.ios[1].1.offset.0 + out.ios[1].1.len.0, 1 << 63);
    }

    #[test]
    fn empty_input_is_bad() {
        let (_, result) = run_strict(parse, b"\n");
        assert!(result.unwrap_err().to_string().contains("empty input"));
    }
}
