//! blkreplay load files (`*.load`, 1&1's blkreplay: `conv_blktrace_to_load.sh`
//! and the shipped example loads): a header of free text (copyright, `INFO:`
//! lines, the column line `start ; sector; length ; op ; replay_delay ;
//! replay_duration`) then one request per line,
//! `SEC.NSEC ; sector ; length ; op ; delay ; duration`, e.g.
//! `12.345678901 ;    223490 ;    8 ; R ; 0.0 ; 0.0`.
//!
//! The time is seconds with a decimal fraction (blkparse and the converters
//! write nine digits); sector and length are 512-byte sectors. The op is
//! documented as `R` or `W`, but the converter copies blkparse's RWBS field,
//! so real loads also hold `RA` (read-ahead), `RM`, `WS`, `FWS`, `WSM`, `D`,
//! `N`, ... (either case): the operation letter decides (R read, W write, D
//! discard, F flush), S/F/M/B become the record's flags, a read-ahead is a
//! read (the record has no read-ahead flag; a note counts them), and `N`
//! (no data) is a note. The delay and duration fields are blkreplay's replay
//! placeholders (0.0 in a load) and are ignored. A line that does not start
//! with a digit is header text, counted as a note. One load is one device
//! (`0:0`).

use super::block_events::{parse_rwbs_bytes, RwbsOp};
use super::request_lines::{parse_noted_lines, Parsed};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::formats::{FormatSpec, Reader};
use crate::event::SourceIo;
use crate::formats::line_input::{
    check_extent, check_time, head_lines, parse_fixed, parse_u64, sectors_to_bytes, Fields,
    NumberStyle,
};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Nanos, Op};

/// Notes: requests kept in a simpler form than the load gave them.
pub mod notes {
    pub const READ_AHEAD: &str = "blkreplay read-ahead (RA) replayed as reads";
    pub const NO_DATA: &str = "blkreplay requests without data (N)";
    pub const ZONE_RESET: &str = "blkreplay zone resets (ZR), not replayed";
}

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
            Ok((Parsed::Io(_), _)) => requests += 1,
            Ok((Parsed::Note(_), _)) => {}
            Err(_) => return false,
        }
        if requests == 4 {
            break;
        }
    }
    requests > 0
}

/// A line: a request or header text, and a note when the request was kept
/// in a simpler form (a read-ahead as a read).
fn parse_line(line: &[u8]) -> Result<(Parsed, Option<&'static str>), BadReason> {
    if !line
        .trim_ascii_start()
        .first()
        .is_some_and(u8::is_ascii_digit)
    {
        return Ok((Parsed::Note("blkreplay header line"), None));
    }
    let f = Fields::<7>::split(line, b';');
    if !(4..=6).contains(&f.len()) {
        return Err(bad(BadInputKind::Syntax, format!(
            "expected `start ; sector ; length ; op [; delay ; duration]`, found {} `;`-separated fields",
            f.len()
        )));
    }
    let time = check_time(
        "start time",
        Nanos(parse_fixed(f.get(0), "start time", 9, NumberStyle::PLAIN)?),
    )?;
    let offset = sectors_to_bytes(parse_u64(f.get(1), "sector")?, "sector", "")?;
    let len = sectors_to_bytes(parse_u64(f.get(2), "length")?, "length", "sectors")?;
    let field = f.get(3).to_ascii_uppercase();
    let rwbs = parse_rwbs_bytes(&field).ok_or_else(|| {
        bad(BadInputKind::UnknownOp, format!(
            "op `{}` is no blkparse RWBS operation (R, W, D, F or N, then any of F, A, S, M)",
            super::line_input::show(f.get(3))
        ))
    })?;
    let op = match rwbs.op {
        RwbsOp::Read => Op::Read,
        RwbsOp::Write => Op::Write,
        RwbsOp::Discard => Op::Discard,
        RwbsOp::Flush => Op::Flush,
        RwbsOp::WriteZeroes => Op::WriteZeroes,
        RwbsOp::None => return Ok((Parsed::Note(notes::NO_DATA), None)),
        RwbsOp::ZoneReset => return Ok((Parsed::Note(notes::ZONE_RESET), None)),
    };
    let note = (op == Op::Read && field.contains(&b'A')).then_some(notes::READ_AHEAD);
    check_extent(offset.0, len.0)?;
    Ok((
        Parsed::Io(SourceIo {
            time,
            device: DeviceId { major: 0, minor: 0 },
            op,
            flags: rwbs.flags,
            offset,
            len: Bytes(len.0),
            latency: None,
            pid: None,
        }),
        note,
    ))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_noted_lines(input, file, sink, "blkreplay load", parse_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_documented};
    use trace_format::Flags;

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
        let out = run_documented(looks_like, parse, DOC);
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
        assert!(
            reasons[0].contains("op `X` is no blkparse RWBS operation"),
            "{reasons:?}"
        );
        use crate::error::BadInputKind as K;
        assert_eq!(out.kinds, [K::UnknownOp, K::Syntax], "{reasons:?}");
    }

    /// What real loads hold beyond R and W: the converter keeps blkparse's
    /// RWBS (a MySQL load on Linux has `RA` on one of its 80,000 lines).
    #[test]
    fn rwbs_ops_of_real_loads_convert() {
        let load = b"start ; sector; length ; op ;  replay_delay=0 ; replay_duration=0\n\
     0.000000000 ;       223490 ;    8 ; RA ; 0.0 ; 0.0\n\
     0.000100000 ;       223498 ;   16 ; RM ; 0.0 ; 0.0\n\
     0.000200000 ;         4096 ;    8 ; WS ; 0.0 ; 0.0\n\
     0.000300000 ;         4104 ;    8 ; FWS ; 0.0 ; 0.0\n\
     0.000400000 ;         4112 ;    8 ; WSM ; 0.0 ; 0.0\n\
     0.000500000 ;         4120 ;    8 ; wfs ; 0.0 ; 0.0\n\
     0.000600000 ;         8192 ;   64 ; D ; 0.0 ; 0.0\n\
     0.000700000 ;            0 ;    0 ; FF ; 0.0 ; 0.0\n\
     0.000800000 ;            0 ;    0 ; N ; 0.0 ; 0.0\n\
     0.000900000 ;       300000 ;    8 ; ra ; 0.0 ; 0.0\n";
        assert!(looks_like(load));
        let out = run(parse, load);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        let got: Vec<(Op, Flags, u64)> = out
            .ios
            .iter()
            .map(|(_, io)| (io.op, io.flags, io.offset.0 / 512))
            .collect();
        assert_eq!(
            got,
            vec![
                (Op::Read, Flags::NONE, 223490),
                (Op::Read, Flags::META, 223498),
                (Op::Write, Flags::SYNC, 4096),
                (Op::Write, Flags::PREFLUSH | Flags::SYNC, 4104),
                (Op::Write, Flags::SYNC | Flags::META, 4112),
                (Op::Write, Flags::FUA | Flags::SYNC, 4120),
                (Op::Discard, Flags::NONE, 8192),
                (Op::Flush, Flags::PREFLUSH, 0),
                (Op::Read, Flags::NONE, 300000),
            ]
        );
        let count = |key: &str| out.notes.iter().filter(|n| *n == key).count();
        assert_eq!(count(notes::READ_AHEAD), 2, "{:?}", out.notes);
        assert_eq!(count(notes::NO_DATA), 1, "{:?}", out.notes);
    }
}
