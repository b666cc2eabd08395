//! Windows Performance Analyzer "Disk Usage" table exports (CSV).
//!
//! The first line names the columns; exports differ in column order and in the
//! columns present, so columns are found by name:
//! `IO Type` (Read/Write/Flush), `Init Time (s)` (issue time), `Complete Time
//! (s)`, `IO Time (µs)` (issue to completion), `Size (B)`, `Min Offset`, `Disk`,
//! `Count`, and `Process (ID)` or `Process` (`name (pid)`) when present. Time
//! units are read from the parentheses (`s`, `ms`, `µs`, `ns`; a mis-decoded
//! micro sign still means µs).
//!
//! Locale: a `;`-separated export (e.g. German Windows) writes decimal commas and
//! dot thousands separators (`1,079943800`, `16.384`, `1.795,900`); a
//! `,`-separated (English) one writes decimal dots and, inside quotes, comma
//! thousands separators. The separator of the header line decides. Offsets are
//! hexadecimal (`0x0000000000000200`) or plain numbers; a flush's offsets
//! (`0xFFFFFFFFFFFFFFFF`) are not used. A UTF-8 byte order mark is skipped.
//!
//! Rows with `Count` > 1 are aggregates of several I/Os (a grouped view). One
//! record per row would lose I/Os and make the trace's counts disagree with the
//! export's, so such a row becomes `Count` records, all at the row's init time,
//! splitting `Size` as evenly as whole bytes allow and laid end to end from
//! `Min Offset`, with no latency (the row's times are aggregates, not any one
//! I/O's). Counts and bytes per operation stay exact; the individual offsets,
//! sizes and times are an approximation, so each such row is also counted under
//! the note `wpa aggregated row split` for `info` to show.

use crate::formats::{FormatSpec, Reader};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Location, SourceIo};
use crate::formats::line_input::{
    check_extent, check_time, head_lines, parse_fixed, parse_hex_u64, report_bad, show, Fields,
    LineReader, NumberStyle,
};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Nanos, Op};

/// Most columns a WPA export line may have that we can address.
const MAX_COLUMNS: usize = 64;

/// Largest `Count` of one aggregated row: 16.8 million I/Os, several seconds
/// of conversion. A row becomes that many records, so without a bound a line
/// of a hundred bytes could stand for 2^32 flushes and keep a conversion
/// busy for most of an hour; an export with larger groups is exported
/// ungrouped (or grouped finer) instead.
const MAX_COUNT: u64 = 1 << 24;

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "wpa",
    aliases: &[],
    about: "Windows Performance Analyzer Disk Usage CSV export",
    looks_like,
    reader: Reader::Text(parse),
    example: "IO Type;Init Time (s);Complete Time (s);IO Time (\u{b5}s);Size (B);Min Offset;Max Offset;Disk;Count\nRead;1,079943800;1,080031000;87,200;512;0x0000000000000000;0x00000000000001FF;1;1\nWrite;1,080034500;1,080111700;77,200;16.384;0x0000000000000400;0x00000000000043FF;1;1\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(head: &[u8]) -> bool {
    head_lines(head, 1)
        .next()
        .is_some_and(|header| Layout::from_header(header).is_ok())
}

/// A time column and the power of ten that turns its numbers into nanoseconds.
#[derive(Debug, Clone, Copy)]
struct TimeColumn {
    index: usize,
    /// Fraction digits that make nanoseconds: 9 for seconds, 3 for µs.
    scale: u32,
}

#[derive(Debug, Clone, Copy)]
enum PidColumn {
    /// `Process (ID)`: a number.
    Id(usize),
    /// `Process`: `name.exe (1234)`.
    NameAndId(usize),
}

/// Where the columns are and how numbers are written.
#[derive(Debug)]
struct Layout {
    separator: u8,
    style: NumberStyle,
    io_type: usize,
    init: TimeColumn,
    complete: Option<TimeColumn>,
    io_time: Option<TimeColumn>,
    size: usize,
    min_offset: usize,
    disk: Option<usize>,
    count: Option<usize>,
    pid: Option<PidColumn>,
}

/// A header name without its unit, lower-cased, and the unit in parentheses.
fn split_name(column: &[u8]) -> (String, &[u8]) {
    let (name, unit) = match column.iter().position(|&b| b == b'(') {
        Some(p) => {
            let unit = &column[p + 1..];
            let unit = unit.strip_suffix(b")").unwrap_or(unit);
            (&column[..p], unit.trim_ascii())
        }
        None => (column, &[][..]),
    };
    (
        String::from_utf8_lossy(name.trim_ascii()).to_ascii_lowercase(),
        unit,
    )
}

/// Fraction digits to nanoseconds for a time unit (`s`, `ms`, `µs`, `ns`).
fn time_scale(unit: &[u8]) -> Option<u32> {
    let prefix = unit.strip_suffix(b"s")?;
    Some(match prefix {
        b"" => 9,
        b"m" => 6,
        b"n" => 0,
        // µ (UTF-8 micro sign or Greek mu, Latin-1 0xB5, or a replacement
        // character after a wrong decode) or `u`.
        b"u" | b"\xC2\xB5" | b"\xCE\xBC" | b"\xB5" | b"\xEF\xBF\xBD" | b"?" => 3,
        _ => return None,
    })
}

impl Layout {
    fn from_header(header: &[u8]) -> Result<Layout, BadReason> {
        let (separator, style) = if header.contains(&b';') {
            (
                b';',
                NumberStyle {
                    decimal: b',',
                    group: Some(b'.'),
                },
            )
        } else {
            (
                b',',
                NumberStyle {
                    decimal: b'.',
                    group: Some(b','),
                },
            )
        };
        let columns = Fields::<MAX_COLUMNS>::split(header, separator);
        let mut io_type = None;
        let mut init = None;
        let mut complete = None;
        let mut io_time = None;
        let mut size = None;
        let mut min_offset = None;
        let mut disk = None;
        let mut count = None;
        let mut pid = None;
        for index in 0..columns.len().min(MAX_COLUMNS) {
            let (name, unit) = split_name(columns.get(index));
            let time = || time_scale(unit).map(|scale| TimeColumn { index, scale });
            match name.as_str() {
                "io type" => io_type = Some(index),
                "init time" => init = time(),
                "complete time" => complete = time(),
                "io time" => io_time = time(),
                "size" if unit.is_empty() || unit == b"B" => size = Some(index),
                "min offset" => min_offset = Some(index),
                "disk" => disk = Some(index),
                "count" => count = Some(index),
                "process" if unit.eq_ignore_ascii_case(b"id") => pid = Some(PidColumn::Id(index)),
                "process" if unit.is_empty() && pid.is_none() => {
                    pid = Some(PidColumn::NameAndId(index))
                }
                _ => {}
            }
        }
        let missing = |what: &str| {
            bad(BadInputKind::Syntax, format!("not a WPA Disk Usage export: the header line has no `{what}` column"))
        };
        Ok(Layout {
            separator,
            style,
            io_type: io_type.ok_or_else(|| missing("IO Type"))?,
            init: init.ok_or_else(|| missing("Init Time (s)"))?,
            complete,
            io_time,
            size: size.ok_or_else(|| missing("Size (B)"))?,
            min_offset: min_offset.ok_or_else(|| missing("Min Offset"))?,
            disk,
            count,
            pid,
        })
    }

    fn integer(&self, field: &[u8], what: &str) -> Result<u64, BadReason> {
        parse_fixed(field, what, 0, self.style)
    }

    fn time(
        &self,
        fields: &Fields<'_, MAX_COLUMNS>,
        column: TimeColumn,
        what: &str,
    ) -> Result<Nanos, BadReason> {
        let ns = parse_fixed(fields.get(column.index), what, column.scale, self.style)?;
        check_time(what, Nanos(ns))
    }
}

/// One row, ready to be reported as `count` records.
struct Row {
    op: Option<Op>,
    time: Nanos,
    latency: Option<Nanos>,
    size: u64,
    offset: u64,
    disk: u32,
    count: u64,
    pid: Option<u32>,
}

fn parse_row(layout: &Layout, line: &[u8]) -> Result<Row, BadReason> {
    let fields = Fields::<MAX_COLUMNS>::split(line, layout.separator);
    let io_type = fields.get(layout.io_type);
    if io_type.is_empty() {
        return Err(bad(BadInputKind::Missing, format!(
            "missing IO Type (the row has {} fields)",
            fields.len()
        )));
    }
    let op = if io_type.eq_ignore_ascii_case(b"read") {
        Some(Op::Read)
    } else if io_type.eq_ignore_ascii_case(b"write") {
        Some(Op::Write)
    } else if io_type.eq_ignore_ascii_case(b"flush") {
        Some(Op::Flush)
    } else {
        None
    };
    let time = layout.time(&fields, layout.init, "init time")?;
    let latency = match (layout.io_time, layout.complete) {
        (Some(column), _) => Some(layout.time(&fields, column, "IO time")?),
        (None, Some(column)) => {
            let complete = layout.time(&fields, column, "complete time")?;
            Some(Nanos(complete.0.checked_sub(time.0).ok_or_else(|| {
                bad(BadInputKind::OutOfRange, format!("complete time {complete} is before init time {time}"))
            })?))
        }
        (None, None) => None,
    };
    let size = layout.integer(fields.get(layout.size), "size")?;
    let offset = if op == Some(Op::Flush) {
        0
    } else {
        let field = fields.get(layout.min_offset);
        if field.starts_with(b"0x") || field.starts_with(b"0X") {
            parse_hex_u64(field, "min offset")?
        } else {
            layout.integer(field, "min offset")?
        }
    };
    check_extent(offset, size)?;
    let disk = match layout.disk {
        Some(i) => {
            let field = fields.get(i);
            // `1` or `Disk 1`.
            let digits = field
                .iter()
                .position(u8::is_ascii_digit)
                .map_or(field, |p| &field[p..]);
            let n = layout.integer(digits, "disk")?;
            u32::try_from(n).map_err(|_| bad(BadInputKind::OutOfRange, format!("disk {n} is too large")))?
        }
        None => 0,
    };
    let count = match layout.count {
        Some(i) => layout.integer(fields.get(i), "count")?,
        None => 1,
    };
    if count == 0 || count > MAX_COUNT {
        return Err(bad(BadInputKind::OutOfRange, format!(
            "count {count} is not between 1 and {MAX_COUNT} (the most I/Os one grouped row may stand for; export the table ungrouped)"
        )));
    }
    // Each I/O of an aggregate carries at least one byte: a larger count
    // would split the row into empty requests (and a 100-byte line into up
    // to 2^32 of them, as the fuzzer found).
    if matches!(op, Some(Op::Read | Op::Write)) && count > size {
        return Err(bad(BadInputKind::OutOfRange, format!(
            "count {count} is more than the row's {size} bytes (every I/O carries at least one)"
        )));
    }
    let pid = layout.pid.and_then(|column| match column {
        PidColumn::Id(i) => std::str::from_utf8(fields.get(i)).ok()?.parse().ok(),
        PidColumn::NameAndId(i) => {
            let f = fields.get(i).strip_suffix(b")")?;
            let open = f.iter().rposition(|&b| b == b'(')?;
            std::str::from_utf8(&f[open + 1..])
                .ok()?
                .trim()
                .parse()
                .ok()
        }
    });
    Ok(Row {
        op,
        time,
        latency,
        size,
        offset,
        disk,
        count,
        pid,
    })
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let mut lines = LineReader::new(input, file);
    let mut layout: Option<Layout> = None;
    while let Some(line) = lines.next_line(sink)? {
        if line.bytes.trim_ascii().is_empty() {
            continue;
        }
        let Some(layout) = layout.as_ref() else {
            match Layout::from_header(line.bytes) {
                Ok(l) => layout = Some(l),
                Err(reason) => {
                    return Err(ConvertError::Invalid {
                        location: Location::line(file, line.number).to_string(),
                        reason: format!("{reason} (first line: `{}`)", show(line.bytes)),
                    })
                }
            }
            continue;
        };
        let row = match parse_row(layout, line.bytes) {
            Ok(row) => row,
            Err(reason) => {
                report_bad(sink, file, line.number, line.bytes, &reason)?;
                continue;
            }
        };
        let Some(op) = row.op else {
            sink.note("wpa other io type");
            continue;
        };
        let at = Location::line(file, line.number);
        let device = DeviceId {
            major: 0,
            minor: row.disk,
        };
        let io = |offset, len, latency| SourceIo {
            latency,
            pid: row.pid,
            ..SourceIo::request(row.time, device, op, Bytes(offset), Bytes(len))
        };
        if row.count == 1 {
            let (offset, len) = if op == Op::Flush {
                (0, 0)
            } else {
                (row.offset, row.size)
            };
            sink.io(at, io(offset, len, row.latency))?;
            continue;
        }
        sink.note("wpa aggregated row split");
        let (base, extra) = if op == Op::Flush {
            (0, 0)
        } else {
            (row.size / row.count, row.size % row.count)
        };
        let mut offset = row.offset;
        for i in 0..row.count {
            let len = base + u64::from(i < extra);
            // No latency: the row's times are aggregates, not any one I/O's.
            sink.io(at, io(offset, len, None))?;
            // Cannot overflow: the row's whole range passed check_extent.
            offset += len;
        }
    }
    lines.report_if_empty(sink, "WPA Disk Usage")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_strict};

    const HEADER_DE: &str = "IO Type;Priority;Process (Name);Init Time (s);Complete Time (s);IO Time (\u{b5}s);Disk Service Time (\u{b5}s);Size (B);Min Offset;Max Offset;QD/I - Queue Depth at Init Time;QD/C - Queue Depth at Complete Time;Disk;Count\r\n";

    fn german(rows: &str) -> Vec<u8> {
        let mut v = b"\xEF\xBB\xBF".to_vec();
        v.extend_from_slice(HEADER_DE.as_bytes());
        v.extend_from_slice(rows.as_bytes());
        v
    }

    #[test]
    fn detects_wpa_headers_only() {
        assert!(looks_like(&german("")));
        assert!(looks_like(
            b"Disk,IO Type,Init Time (s),Size (B),Min Offset,Count\n"
        ));
        assert!(!looks_like(b"IO Type;Priority;Process (Name)\n"));
        assert!(!looks_like(b"1,h,0,Read,0,512,1\n"));
        assert!(!looks_like(b"0,1,512,r,0.1\n"));
        assert!(!looks_like(b"fio version 3 iolog\n"));
        assert!(!looks_like(b""));
    }

    #[test]
    fn german_locale_rows() {
        let input = german(
            "Read;Normal;System;1,079943800;1,080031000;87,200;87,200;512;0x0000000000000000;0x00000000000001FF;0;0;1;1\r\n\
Read;Normal;System;1,080116400;1,080275600;159,200;159,200;16.384;0x0000000000000400;0x00000000000043FF;0;0;1;1\r\n\
Flush;Normal;System;1,718822100;1,720618000;1.795,900;1.205,600;0;0xFFFFFFFFFFFFFFFF;0xFFFFFFFFFFFFFFFF;1;1;2;1\r\n\
Write;High;csrss.exe;5,077557500;5,077747300;189,800;86,600;4.096;0x0000002210E54000;0x0000002210E54FFF;1;0;1;1\r\n\
Trim;Normal;System;6,0;6,1;1,0;1,0;4.096;0x0;0xFFF;0;0;1;1\r\n",
        );
        let out = run(parse, &input);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        let got: Vec<(Op, Nanos, Option<Nanos>, u64, u64, u32)> = out
            .ios
            .iter()
            .map(|(_, io)| {
                (
                    io.op,
                    io.time,
                    io.latency,
                    io.offset.0,
                    io.len.0,
                    io.device.minor,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Op::Read,
                    Nanos(1_079_943_800),
                    Some(Nanos(87_200)),
                    0,
                    512,
                    1
                ),
                (
                    Op::Read,
                    Nanos(1_080_116_400),
                    Some(Nanos(159_200)),
                    0x400,
                    16384,
                    1
                ),
                (
                    Op::Flush,
                    Nanos(1_718_822_100),
                    Some(Nanos(1_795_900)),
                    0,
                    0,
                    2
                ),
                (
                    Op::Write,
                    Nanos(5_077_557_500),
                    Some(Nanos(189_800)),
                    0x2210E54000,
                    4096,
                    1
                ),
            ]
        );
        assert_eq!(out.ios[0].0, 2, "line numbers count the header");
        assert_eq!(out.notes, vec!["wpa other io type"]);
    }

    #[test]
    fn english_locale_any_column_order_and_pid() {
        let input =
            b"Disk,Count,Size (B),IO Type,Process,Init Time (ms),Min Offset,Complete Time (ms)\n\
0,1,\"16,384\",Write,svchost.exe (1234),\"1,500.25\",8192,\"1,501.25\"\n\
3,1,512,read,Idle (0),0.5,0x200,0.75\n";
        let out = run(parse, input);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        let a = out.ios[0].1;
        assert_eq!((a.op, a.len.0, a.offset.0), (Op::Write, 16384, 8192));
        assert_eq!(a.time, Nanos(1_500_250_000));
        assert_eq!(a.latency, Some(Nanos(1_000_000)), "complete - init");
        assert_eq!(a.pid, Some(1234));
        let b = out.ios[1].1;
        assert_eq!((b.op, b.device.minor, b.offset.0), (Op::Read, 3, 512));
        assert_eq!(b.latency, Some(Nanos(250_000)));
        assert_eq!(b.pid, Some(0));
    }

    #[test]
    fn aggregated_rows_keep_counts_and_bytes() {
        let input = german(
            "Write;Normal;System;2,0;2,5;500,0;1,0;1.000;0x1000;0x13E7;0;0;0;3\r\n\
Flush;Normal;System;3,0;3,5;5,0;1,0;0;0xFFFFFFFFFFFFFFFF;0xFFFFFFFFFFFFFFFF;0;0;0;2\r\n",
        );
        let out = run(parse, &input);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        let got: Vec<(Op, u64, u64, Option<Nanos>, Nanos)> = out
            .ios
            .iter()
            .map(|(_, io)| (io.op, io.offset.0, io.len.0, io.latency, io.time))
            .collect();
        let t2 = Nanos(2_000_000_000);
        let t3 = Nanos(3_000_000_000);
        assert_eq!(
            got,
            vec![
                (Op::Write, 0x1000, 334, None, t2),
                (Op::Write, 0x1000 + 334, 333, None, t2),
                (Op::Write, 0x1000 + 667, 333, None, t2),
                (Op::Flush, 0, 0, None, t3),
                (Op::Flush, 0, 0, None, t3),
            ]
        );
        assert_eq!(
            out.notes,
            vec!["wpa aggregated row split", "wpa aggregated row split"]
        );
    }

    #[test]
    fn bad_rows() {
        let input = german(
            "Read;Normal;System;1,0;1,1;1,0;1,0;512;0x0;0x1FF;0;0;1;1\r\n\
Read;Normal;System;1,0\r\n\
;;;;;;;;;;;;;\r\n\
Read;Normal;System;1,0;1,1;1,0;1,0;-512;0x0;0x1FF;0;0;1;1\r\n\
Read;Normal;System;1,0;1,1;1,0;1,0;512;0xFFFFFFFFFFFFFFFF;0x1FF;0;0;1;1\r\n\
Read;Normal;System;1.5;1,1;1,0;1,0;512;0x0;0x1FF;0;0;1;1\r\n\
Read;Normal;System;9999999999,0;1,1;1,0;1,0;512;0x0;0x1FF;0;0;1;1\r\n\
Read;Normal;System;1,0;1,1;1,0;1,0;512;0xZZ;0x1FF;0;0;1;1\r\n\
Read;Normal;System;1,0;1,1;1,0;1,0;512;0x0;0x1FF;0;0;1;0\r\n\
Read;Normal;Syst\u{e9}m;1,0;1,1;1,0;1,0;512;0x0;0x1FF;0;0;1;1\r\n\
Read;Normal;System;1,0;1,1;1,0;1,0;512;0x0;0x1FF;0;0;1;1",
        );
        let out = run(parse, &input);
        let expect = [
            (3, "missing IO time"),
            (4, "missing IO Type"),
            (5, "negative size"),
            (6, "past 2^63"),
            (7, "not a number"),
            (8, "absurd init time"),
            (9, "not a hexadecimal"),
            (10, "count 0"),
        ];
        out.assert_bad_lines(&expect);
        let lines: Vec<u64> = out.ios.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, vec![2, 11, 12], "non-ASCII process names are fine");
    }

    #[test]
    fn header_problems_stop_even_when_skipping() {
        let mut sink = crate::formats::line_input::testing::Collect::skipping();
        let mut input: &[u8] = b"IO Type;Init Time (s);Size (B)\nRead;1,0;512\n";
        let err = parse(&mut input, "w.csv", &mut sink)
            .unwrap_err()
            .to_string();
        assert!(err.contains("w.csv:1"), "{err}");
        assert!(err.contains("Min Offset"), "{err}");
        let (_, result) = run_strict(parse, b"");
        assert!(result.unwrap_err().to_string().contains("empty input"));
    }

    #[test]
    fn latin1_micro_sign_in_header_is_microseconds() {
        let input =
            b"IO Type;Init Time (s);IO Time (\xB5s);Size (B);Min Offset\nRead;1,0;2,5;512;0x0\n";
        let out = run(parse, input);
        assert_eq!(out.ios[0].1.latency, Some(Nanos(2_500)));
    }

    #[test]
    fn a_count_beyond_the_rows_bytes_is_refused_not_split_into_empty_requests() {
        let head = b"IO Type;Init Time (s);Size (B);Min Offset;Max Offset;Disk;Count\n";
        let mut input = head.to_vec();
        input.extend_from_slice(b"Write;1,0;16;0x0;0xF;1;1000\n");
        let (_, result) = run_strict(parse, &input);
        let err = result.unwrap_err().to_string();
        assert!(err.contains("count 1000 is more than the row's 16 bytes"), "{err}");
        // Flushes carry no bytes: their count alone is bounded.
        let mut input = head.to_vec();
        input.extend_from_slice(b"Flush;1,0;0;0x0;0x0;1;4294967295\n");
        let err = run_strict(parse, &input).1.unwrap_err().to_string();
        assert!(err.contains("count 4294967295 is not between 1 and 16777216"), "{err}");
        // A count the bytes can hold is split as before.
        let mut input = head.to_vec();
        input.extend_from_slice(b"Write;1,0;16;0x0;0xF;1;16\n");
        assert_eq!(run(parse, &input).ios.len(), 16);
    }
}
