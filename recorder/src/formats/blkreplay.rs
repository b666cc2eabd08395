//! blkreplay load files (`*.load`, 1&1's blkreplay: `conv_blktrace_to_load.sh`
//! and the shipped example loads): a header of free text (copyright, `INFO:`
//! lines, the column line `start ; sector; length ; op ; replay_delay ;
//! replay_duration`) then one request per line,
//! `SEC.NSEC ; sector ; length ; op ; delay ; duration`, e.g.
//! `12.345678901 ;    223490 ;    8 ; R ; 0.0 ; 0.0`.
//!
//! The time is seconds with a decimal fraction (blkparse and the converters
//! write nine digits); sector and length are 512-byte sectors; op is `R` or
//! `W` (either case). The delay and duration fields are blkreplay's replay
//! placeholders (0.0 in a load) and are ignored. A line that does not start
//! with a digit is header text, counted as a note. One load is one device
//! (`0:0`).

use super::request_lines::{parse_lines, read_or_write, Parsed};
use crate::error::ConvertError;
use crate::formats::{FormatSpec, Reader};
use crate::event::SourceIo;
use crate::formats::line_input::{
    check_extent, check_time, head_lines, parse_fixed, parse_u64, Fields, NumberStyle,
};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Flags, Nanos, Sectors};

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "blkreplay",
    aliases: &["load"],
    about: "blkreplay .load files (start ; sector ; length ; R|W ; delay ; duration)",
    looks_like,
    reader: Reader::Text(parse),
    example: "start ; sector; length ; op ;  replay_delay=0 ; replay_duration=0\n     0.000000000 ;       223490 ;    8 ; R ; 0.0 ; 0.0\n     0.000150123 ;     10485760 ;  256 ; W ; 0.0 ; 0.0\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this
/// format: a request line in the first lines, and every line either header
/// text or a request.
pub fn looks_like(head: &[u8]) -> bool {
    let mut requests = 0;
    for line in head_lines(head, 64) {
        match parse_line(line) {
            Ok(Parsed::Io(_)) => requests += 1,
            Ok(Parsed::Note(_)) => {}
            Err(_) => return false,
        }
        if requests == 4 {
            break;
        }
    }
    requests > 0
}

fn parse_line(line: &[u8]) -> Result<Parsed, String> {
    if !line
        .trim_ascii_start()
        .first()
        .is_some_and(u8::is_ascii_digit)
    {
        return Ok(Parsed::Note("blkreplay header line"));
    }
    let f = Fields::<7>::split(line, b';');
    if !(4..=6).contains(&f.len()) {
        return Err(format!(
            "expected `start ; sector ; length ; op [; delay ; duration]`, found {} `;`-separated fields",
            f.len()
        ));
    }
    let time = check_time(
        "start time",
        Nanos(parse_fixed(f.get(0), "start time", 9, NumberStyle::PLAIN)?),
    )?;
    let sector = parse_u64(f.get(1), "sector")?;
    let offset = Sectors(sector)
        .to_bytes()
        .ok_or_else(|| format!("sector {sector} is past 2^64 bytes"))?;
    let sectors = parse_u64(f.get(2), "length")?;
    let len = Sectors(sectors)
        .to_bytes()
        .ok_or_else(|| format!("length {sectors} sectors is past 2^64 bytes"))?;
    let op = read_or_write(f.get(3), "op")?;
    check_extent(offset.0, len.0)?;
    Ok(Parsed::Io(SourceIo {
        time,
        device: DeviceId { major: 0, minor: 0 },
        op,
        flags: Flags::NONE,
        offset,
        len: Bytes(len.0),
        latency: None,
        pid: None,
    }))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "blkreplay load", parse_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::run;
    use trace_format::Op;

    /// A load as `conv_blktrace_to_load.sh` writes it: copyright and INFO
    /// header, the column line, then requests in blkparse's `%6T.%9t ; %12S ;
    /// %4n ; %3d` layout reduced to R/W.
    const DOC: &[u8] = b"Copyright Thomas Schoebel-Theuer /  1&1 Internet AG\n\
\n\
This file was automatically generated from 'sda.blktrace.*'\n\
INFO: action_char=D\n\
start ; sector; length ; op ;  replay_delay=0 ; replay_duration=0\n\
     0.000000000 ;       223490 ;    8 ; R ; 0.0 ; 0.0\n\
     0.000150123 ;     10485760 ;  256 ; W ; 0.0 ; 0.0\n\
    12.5 ; 0 ; 1 ; w\n";

    #[test]
    fn documented_rows_convert_exactly() {
        assert!(looks_like(DOC));
        let out = run(parse, DOC);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        assert_eq!(out.notes.len(), 4);
        let got: Vec<(Op, u64, u64, Nanos)> = out
            .ios
            .iter()
            .map(|(_, io)| (io.op, io.offset.0, io.len.0, io.time))
            .collect();
        assert_eq!(
            got,
            vec![
                (Op::Read, 223490 * 512, 4096, Nanos(0)),
                (Op::Write, 10485760 * 512, 256 * 512, Nanos(150_123)),
                (Op::Write, 0, 512, Nanos(12_500_000_000)),
            ]
        );
    }

    #[test]
    fn not_other_formats() {
        assert!(!looks_like(b"IO Type;Priority\n"));
        assert!(!looks_like(b"just some text\n"));
        assert!(!looks_like(b"11413000 0 657728 16 1\n"));
    }

    #[test]
    fn bad_rows() {
        let out = run(parse, b"1.0 ; 2 ; 8 ; X ; 0 ; 0\n1.0 ; 2\n");
        let reasons: Vec<&str> = out.bad.iter().map(|(_, _, r)| r.as_str()).collect();
        assert!(reasons[0].contains("neither R nor W"), "{reasons:?}");
        assert!(reasons[1].contains("fields"), "{reasons:?}");
    }
}
