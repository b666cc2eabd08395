//! FIU traces (SNIA IOTTA; the I/O deduplication traces of Koller and
//! Rangaswami, FAST '10, and the SRCMap traces of Verma et al., EuroSys '10):
//! one request per line, blank-separated
//! `timestamp pid process lba size op major minor [md5]`, e.g.
//! `89968195792462 20782 gzip 283193184 8 R 6 0 56f11b711d91a065a2b6458eca924523`.
//!
//! timestamp is nanoseconds (a monotonic clock); pid and process name the
//! issuer; lba and size are 512-byte blocks; op is `R` or `W`; major and minor
//! are the device (kept as such: filter with `--device MAJ:MIN`); md5 (the
//! deduplication traces only) is the content hash of the block, ignored. A
//! process name with blanks in it is read as everything between the pid and
//! the lba.

use super::request_lines::{head_has_requests, parse_lines, read_or_write, Parsed};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::formats::{FormatSpec, Reader};
use crate::event::SourceIo;
use crate::formats::line_input::{check_extent, check_time, parse_u64, sectors_to_bytes, show};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{DeviceId, Nanos};

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "fiu",
    aliases: &["srcmap"],
    about: "FIU SRCMap / I/O deduplication traces (ts_ns pid process lba blocks R|W major minor [md5])",
    looks_like,
    reader: Reader::Text(parse),
    example: "89968195792462 20782 gzip 283193184 8 R 6 0 56f11b711d91a065a2b6458eca924523\n89968195800000 1 kjournald 16 8 W 8 1\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(head: &[u8]) -> bool {
    head_has_requests(head, parse_line)
}

fn is_md5(field: &[u8]) -> bool {
    field.len() == 32 && field.iter().all(u8::is_ascii_hexdigit)
}

fn parse_line(line: &[u8]) -> Result<Parsed, BadReason> {
    let f: Vec<&[u8]> = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .collect();
    // Fields after the process name, counted from the end.
    let tail = if f.last().is_some_and(|l| is_md5(l)) {
        6
    } else {
        5
    };
    if f.len() < 3 + tail {
        return Err(bad(BadInputKind::Syntax, format!(
            "expected `timestamp pid process lba size op major minor [md5]`, found {} fields",
            f.len()
        )));
    }
    let end = &f[f.len() - tail..];
    let time = check_time("timestamp", Nanos(parse_u64(f[0], "timestamp")?))?;
    let pid = parse_u64(f[1], "pid")?;
    let pid = u32::try_from(pid).map_err(|_| bad(BadInputKind::OutOfRange, format!("pid {pid} is too large")))?;
    let offset = sectors_to_bytes(parse_u64(end[0], "lba")?, "lba", "")?;
    let len = sectors_to_bytes(parse_u64(end[1], "size")?, "size", "blocks")?;
    let op = read_or_write(end[2], "op")?;
    let major = parse_u64(end[3], "major")?;
    let minor = parse_u64(end[4], "minor")?;
    let device = match (u32::try_from(major), u32::try_from(minor)) {
        (Ok(major), Ok(minor)) => DeviceId { major, minor },
        _ => {
            return Err(bad(BadInputKind::OutOfRange, format!(
                "device `{}:{}` is too large",
                show(end[3]),
                show(end[4])
            )))
        }
    };
    check_extent(offset.0, len.0)?;
    Ok(Parsed::Io(SourceIo {
        pid: Some(pid),
        ..SourceIo::request(time, device, op, offset, len)
    }))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "FIU trace", parse_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_documented};
    use trace_format::Op;

    /// The documented example line, a write without md5 (SRCMap layout) and
    /// one whose process name has a blank in it.
    const DOC: &[u8] =
        b"89968195792462 20782 gzip 283193184 8 R 6 0 56f11b711d91a065a2b6458eca924523\n\
89968195800000 1 kjournald 16 8 W 8 1\n\
89968196000000 4242 Web Content 1024 16 W 8 16 0123456789abcdef0123456789ABCDEF\n";

    #[test]
    fn documented_rows_convert_exactly() {
        let out = run_documented(looks_like, parse, DOC);
        let got: Vec<(String, Op, u64, u64, Nanos, Option<u32>)> = out
            .ios
            .iter()
            .map(|(_, io)| {
                (
                    io.device.to_string(),
                    io.op,
                    io.offset.0,
                    io.len.0,
                    io.time,
                    io.pid,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "6:0".into(),
                    Op::Read,
                    283193184 * 512,
                    4096,
                    Nanos(89968195792462),
                    Some(20782)
                ),
                (
                    "8:1".into(),
                    Op::Write,
                    16 * 512,
                    4096,
                    Nanos(89968195800000),
                    Some(1)
                ),
                (
                    "8:16".into(),
                    Op::Write,
                    1024 * 512,
                    8192,
                    Nanos(89968196000000),
                    Some(4242)
                ),
            ]
        );
    }

    #[test]
    fn not_other_formats() {
        assert!(!looks_like(b"11413000 0 657728 16 1\n"));
        assert!(!looks_like(
            b"  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [comm]\n"
        ));
        assert!(!looks_like(b""));
    }

    #[test]
    fn bad_rows() {
        let out = run(parse, b"1 2 p 3 8 X 8 0\n1 2 p 3 8 R\n");
        let reasons: Vec<&str> = out.bad.iter().map(|(_, _, r)| r.as_str()).collect();
        use crate::error::BadInputKind as K;
        assert_eq!(out.kinds, [K::UnknownOp, K::Syntax], "{reasons:?}");
    }
}
