//! Shared driver of the dataset formats that log one request per line
//! (Alibaba, Tencent, SYSTOR'17, CloudPhysics, MQSim/DiskSim, FIU, SPC,
//! blkreplay): read lines, hand each to the format's line parser, report what
//! it made; and the steps their line parsers share (a CSV row of a known
//! width, a volume number, an operation letter or digit, detection).

use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Location, SourceIo};
use crate::formats::line_input::{head_lines, parse_u64, report_bad, show, Fields, LineReader};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{DeviceId, Op};

/// What one non-blank line of a dataset is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A request.
    Io(SourceIo),
    /// Understood input that is no I/O (a header line, a command without
    /// data): counted under this key, shown by `info`.
    Note(&'static str),
}

/// Parses the whole input line by line with `parse_line`, reporting to `sink`;
/// `what` names the format in the "empty input" error.
pub(crate) fn parse_lines(
    input: &mut dyn BufRead,
    file: &str,
    sink: &mut dyn Sink,
    what: &str,
    parse_line: fn(&[u8]) -> Result<Parsed, BadReason>,
) -> Result<(), ConvertError> {
    parse_noted_lines(input, file, sink, what, |line| {
        parse_line(line).map(|p| (p, None))
    })
}

/// [`parse_lines`] for a format whose request lines may also be worth a
/// note (a request kept in a simpler form than its file gave it: the note
/// says how often).
pub(crate) fn parse_noted_lines(
    input: &mut dyn BufRead,
    file: &str,
    sink: &mut dyn Sink,
    what: &str,
    parse_line: impl Fn(&[u8]) -> Result<(Parsed, Option<&'static str>), BadReason>,
) -> Result<(), ConvertError> {
    let mut lines = LineReader::new(input, file);
    while let Some(line) = lines.next_line(sink)? {
        if line.bytes.trim_ascii().is_empty() {
            continue;
        }
        match parse_line(line.bytes) {
            Ok((parsed, note)) => {
                match parsed {
                    Parsed::Io(io) => sink.io(Location::line(file, line.number), io)?,
                    Parsed::Note(key) => sink.note(key),
                }
                if let Some(key) = note {
                    sink.note(key);
                }
            }
            Err(reason) => report_bad(sink, file, line.number, line.bytes, &reason)?,
        }
    }
    lines.report_if_empty(sink, what)
}

/// A dataset's volume (virtual disk, LUN) number as the device `0:ID`, the
/// device `--volume ID` keeps.
pub(crate) fn volume_device(field: &[u8], what: &str) -> Result<DeviceId, BadReason> {
    let id = parse_u64(field, what)?;
    let minor = u32::try_from(id).map_err(|_| {
        bad(
            BadInputKind::OutOfRange,
            format!("{what} {id} is too large"),
        )
    })?;
    Ok(DeviceId { major: 0, minor })
}

/// `R`/`W` (either case) as read or write.
pub(crate) fn read_or_write(field: &[u8], what: &str) -> Result<Op, BadReason> {
    match field {
        b"R" | b"r" => Ok(Op::Read),
        b"W" | b"w" => Ok(Op::Write),
        other => Err(bad(
            BadInputKind::UnknownOp,
            format!("{what} `{}` is neither R nor W", show(other)),
        )),
    }
}

/// Whether `line`, without surrounding blanks, equals `header` (ASCII case ignored).
pub(crate) fn is_header(line: &[u8], header: &str) -> bool {
    line.trim_ascii().eq_ignore_ascii_case(header.as_bytes())
}

/// The comma-separated fields of a row of the CSV whose columns `header`
/// names: as many as it names, else a syntax error. `N` (the most kept) must
/// exceed that number so that a row with one field too many is told apart.
pub(crate) fn csv_row<'l, const N: usize>(
    line: &'l [u8],
    header: &str,
) -> Result<Fields<'l, N>, BadReason> {
    let expected = header.split(',').count();
    debug_assert!(
        expected < N,
        "keep more fields than the {expected} of {header}"
    );
    let f = Fields::<N>::split(line, b',');
    if f.len() == expected {
        Ok(f)
    } else {
        Err(bad(
            BadInputKind::Syntax,
            format!(
                "expected {expected} comma-separated fields ({header}), found {}",
                f.len()
            ),
        ))
    }
}

/// `0` as the operation `zero` and `1` as `one` (a read and a write, in the
/// order the format gives them).
pub(crate) fn zero_or_one(field: &[u8], what: &str, zero: Op, one: Op) -> Result<Op, BadReason> {
    match field {
        b"0" => Ok(zero),
        b"1" => Ok(one),
        other => Err(bad(
            BadInputKind::UnknownOp,
            format!(
                "{what} `{}` is neither 0 ({zero}) nor 1 ({one})",
                show(other)
            ),
        )),
    }
}

/// What the first four lines of `head` (an input's first bytes) parse to,
/// or `None` when one of them does not parse: for the `looks_like` functions.
pub(crate) fn head_parsed(
    head: &[u8],
    parse_line: impl Fn(&[u8]) -> Result<Parsed, BadReason>,
) -> Option<Vec<Parsed>> {
    head_lines(head, 4).map(|l| parse_line(l).ok()).collect()
}

/// Whether the first lines of `head` all parse and one of them at least is a
/// request (a header alone is too little to tell a format by).
pub(crate) fn head_has_requests(
    head: &[u8],
    parse_line: impl Fn(&[u8]) -> Result<Parsed, BadReason>,
) -> bool {
    head_parsed(head, parse_line).is_some_and(|lines| lines.iter().any(is_request))
}

/// Whether a parsed line is a request.
pub(crate) fn is_request(parsed: &Parsed) -> bool {
    matches!(parsed, Parsed::Io(_))
}
