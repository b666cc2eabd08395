//! Disk events of a Windows kernel trace dumped as text by `xperf -i T.etl -a
//! dumper` (also the form of the SNIA "Microsoft Production Server" traces).
//!
//! The dump is comma-separated, padded with blanks, one event per line, the
//! event name first. A header between `BeginHeader` and `EndHeader` names each
//! event's columns, e.g.
//! `DiskRead, TimeStamp, Process Name ( PID), ThreadID, [CPU,] IrpPtr,
//! ByteOffset, IOSize, ElapsedTime, DiskNum, IrpFlags, DiskSvcTime, I/O Pri,
//! VolSnap, FileObject, FileName` and
//! `DiskFlush, TimeStamp, Process Name ( PID), ThreadID, [CPU,] IrpPtr,
//! ElapsedTime, DiskNum, IrpFlags, DiskSvcTime, I/O Pri`
//! (newer xperf versions add the `CPU` column). Columns are located from that
//! header; without one, the layout is chosen by the number of fields.
//!
//! Units: TimeStamp and ElapsedTime are microseconds; ByteOffset and IOSize are
//! hexadecimal bytes. The DiskRead/DiskWrite/DiskFlush events are logged when the
//! I/O *completes* (they carry the response time, "the time between I/O
//! initiation and completion"), so the issue time is `TimeStamp - ElapsedTime`
//! and the latency is `ElapsedTime` (DiskSvcTime, which leaves out time spent
//! queued behind other I/Os, is not the request's latency). An I/O that began
//! before the trace did (issue time below zero) is placed at 0 and counted under
//! the note `xperf io started before the trace`.
//!
//! Every other event (`DiskReadInit`, process, file, CPU events, ...) is counted
//! as a note; a line that is no event at all is bad input.

use crate::formats::{FormatSpec, Reader};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Location, SourceIo};
use crate::formats::line_input::{
    check_extent, check_time, head_lines, parse_fixed, parse_hex_u64, parse_u64, report_bad,
    Fields, LineReader, NumberStyle,
};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Nanos, Op};

const MAX_FIELDS: usize = 32;

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "xperf",
    aliases: &["etw"],
    about: "Windows `xperf -a dumper` DiskRead/DiskWrite/DiskFlush lines",
    looks_like,
    reader: Reader::Text(parse),
    example: "DiskRead, 1000, System (4), 8, 0x0, 0x100000, 0x1000, 120, 0, 0x0, 100, 0, Original, 0x0, \"C:\\file\"\nDiskWrite, 1500, System (4), 8, 0x0, 0x200000, 0x2000, 80, 0, 0x0, 60, 0, Original, 0x0, \"\"\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(head: &[u8]) -> bool {
    let mut lines = head_lines(head, 2000).peekable();
    if lines
        .peek()
        .is_some_and(|first| first.trim_ascii() == b"BeginHeader")
    {
        return true;
    }
    lines.take(200).any(|line| {
        let f = Fields::<MAX_FIELDS>::split(line, b',');
        disk_kind(f.get(0)).is_some() && f.len() >= 6
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DiskKind {
    Read,
    Write,
    Flush,
}

fn disk_kind(name: &[u8]) -> Option<DiskKind> {
    match name {
        b"DiskRead" => Some(DiskKind::Read),
        b"DiskWrite" => Some(DiskKind::Write),
        b"DiskFlush" => Some(DiskKind::Flush),
        _ => None,
    }
}

/// Column positions of one disk event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EventLayout {
    timestamp: usize,
    process: Option<usize>,
    elapsed: usize,
    disk: usize,
    /// Offset and size; none for a flush.
    range: Option<(usize, usize)>,
}

impl EventLayout {
    /// The layout xperf writes, with or without the `CPU` column.
    fn default_for(kind: DiskKind, fields: usize) -> EventLayout {
        let (cpu, data) = match kind {
            DiskKind::Flush => (usize::from(fields >= 11), false),
            _ => (usize::from(fields >= 16), true),
        };
        let irp = 4 + cpu;
        if data {
            EventLayout {
                timestamp: 1,
                process: Some(2),
                elapsed: irp + 3,
                disk: irp + 4,
                range: Some((irp + 1, irp + 2)),
            }
        } else {
            EventLayout {
                timestamp: 1,
                process: Some(2),
                elapsed: irp + 1,
                disk: irp + 2,
                range: None,
            }
        }
    }

    /// From a header line (`DiskRead, TimeStamp, ...`).
    fn from_header(kind: DiskKind, header: &Fields<'_, MAX_FIELDS>) -> Result<EventLayout, BadReason> {
        let find = |want: &[u8]| {
            (0..header.len().min(MAX_FIELDS)).find(|&i| {
                let name = header.get(i);
                name.len() >= want.len() && name[..want.len()].eq_ignore_ascii_case(want)
            })
        };
        let need = |want: &str| {
            find(want.as_bytes()).ok_or_else(|| bad(BadInputKind::Syntax, format!("the header has no `{want}` column")))
        };
        let range = if kind == DiskKind::Flush {
            None
        } else {
            Some((need("ByteOffset")?, need("IOSize")?))
        };
        Ok(EventLayout {
            timestamp: need("TimeStamp")?,
            process: find(b"Process Name"),
            elapsed: need("ElapsedTime")?,
            disk: need("DiskNum")?,
            range,
        })
    }
}

/// Whether an event name is a plausible xperf event name.
fn is_event_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-_/. ".contains(&b))
}

fn micros(field: &[u8], what: &str) -> Result<Nanos, BadReason> {
    let ns = parse_fixed(field, what, 3, NumberStyle::PLAIN)?;
    check_time(what, Nanos(ns))
}

fn number(field: &[u8], what: &str) -> Result<u64, BadReason> {
    if field.starts_with(b"0x") || field.starts_with(b"0X") {
        parse_hex_u64(field, what)
    } else {
        parse_u64(field, what)
    }
}

/// A parsed disk event: the request and whether its start was clamped to 0.
fn parse_disk_event(
    kind: DiskKind,
    layout: &EventLayout,
    f: &Fields<'_, MAX_FIELDS>,
) -> Result<(SourceIo, bool), BadReason> {
    let needed = [layout.timestamp, layout.elapsed, layout.disk]
        .into_iter()
        .chain(layout.range.map(|(a, b)| a.max(b)))
        .max()
        .unwrap_or(0);
    if f.len() <= needed {
        return Err(bad(BadInputKind::Truncated, format!(
            "truncated event: {} fields, the layout needs at least {}",
            f.len(),
            needed + 1
        )));
    }
    let completed = micros(f.get(layout.timestamp), "timestamp")?;
    let elapsed = micros(f.get(layout.elapsed), "elapsed time")?;
    let disk = parse_u64(f.get(layout.disk), "disk number")?;
    let disk = u32::try_from(disk).map_err(|_| bad(BadInputKind::OutOfRange, format!("disk number {disk} is too large")))?;
    let (offset, len) = match layout.range {
        Some((o, s)) => {
            let offset = number(f.get(o), "byte offset")?;
            let size = number(f.get(s), "I/O size")?;
            check_extent(offset, size)?;
            (offset, size)
        }
        None => (0, 0),
    };
    let pid = layout.process.and_then(|i| {
        let p = f.get(i).strip_suffix(b")")?;
        let open = p.iter().rposition(|&b| b == b'(')?;
        std::str::from_utf8(&p[open + 1..])
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    let started_before = completed < elapsed;
    let op = match kind {
        DiskKind::Read => Op::Read,
        DiskKind::Write => Op::Write,
        DiskKind::Flush => Op::Flush,
    };
    Ok((
        SourceIo {
            latency: Some(elapsed),
            pid,
            ..SourceIo::request(
                completed.saturating_sub(elapsed),
                DeviceId {
                    major: 0,
                    minor: disk,
                },
                op,
                Bytes(offset),
                Bytes(len),
            )
        },
        started_before,
    ))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let mut lines = LineReader::new(input, file);
    // Read, Write, Flush layouts from the header, when there is one.
    let mut layouts: [Option<EventLayout>; 3] = [None; 3];
    while let Some(line) = lines.next_line(sink)? {
        let text = line.bytes.trim_ascii();
        if text.is_empty() || text == b"BeginHeader" || text == b"EndHeader" {
            continue;
        }
        let f = Fields::<MAX_FIELDS>::split(text, b',');
        let name = f.get(0);
        if f.len() < 2 || !is_event_name(name) {
            report_bad(
                sink,
                file,
                line.number,
                line.bytes,
                &bad(
                    BadInputKind::Syntax,
                    "not an xperf dumper event line (`EventName, TimeStamp, ...`)",
                ),
            )?;
            continue;
        }
        let is_header = f.get(1) == b"TimeStamp";
        let Some(kind) = disk_kind(name) else {
            if !is_header {
                if name.starts_with(b"Disk") && name.ends_with(b"Init") {
                    sink.note("xperf disk init event");
                } else {
                    sink.note("xperf other event");
                }
            }
            continue;
        };
        let slot = &mut layouts[kind as usize];
        if is_header {
            match EventLayout::from_header(kind, &f) {
                Ok(layout) => *slot = Some(layout),
                Err(reason) => report_bad(sink, file, line.number, line.bytes, &reason)?,
            }
            continue;
        }
        let layout = slot.unwrap_or_else(|| EventLayout::default_for(kind, f.len()));
        match parse_disk_event(kind, &layout, &f) {
            Ok((io, started_before)) => {
                if started_before {
                    sink.note("xperf io started before the trace");
                }
                sink.io(Location::line(file, line.number), io)?;
            }
            Err(reason) => report_bad(sink, file, line.number, line.bytes, &reason)?,
        }
    }
    lines.report_if_empty(sink, "xperf dumper")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_strict};

    /// Layout without the CPU column (SNIA Microsoft Production Server traces).
    const HEADER_NO_CPU: &str = "BeginHeader
              DiskRead,  TimeStamp,     Process Name ( PID),   ThreadID,             IrpPtr,   ByteOffset,     IOSize, ElapsedTime,  DiskNum, IrpFlags, DiskSvcTime, I/O Pri,  VolSnap,         FileObject, FileName
             DiskWrite,  TimeStamp,     Process Name ( PID),   ThreadID,             IrpPtr,   ByteOffset,     IOSize, ElapsedTime,  DiskNum, IrpFlags, DiskSvcTime, I/O Pri,  VolSnap,         FileObject, FileName
          DiskReadInit,  TimeStamp,     Process Name ( PID),   ThreadID,             IrpPtr
             DiskFlush,  TimeStamp,     Process Name ( PID),   ThreadID,             IrpPtr,                           ElapsedTime,  DiskNum, IrpFlags, DiskSvcTime, I/O Pri
                 P-Start,  TimeStamp,     Process Name ( PID),  ParentPID
EndHeader
";

    fn no_cpu(rows: &str) -> Vec<u8> {
        format!("{HEADER_NO_CPU}{rows}").into_bytes()
    }

    #[test]
    fn detects_dumps_only() {
        assert!(looks_like(&no_cpu("")));
        assert!(looks_like(
            b"       DiskRead,       8612,        xperf.exe (3984),      11844,   1, 0xffffe288b23f1b20, 0x018f0b8000, 0x00001000,         283,        0, 0x060043,         283,       3, Original, 0xffffe288272d0d20, \"C:\\$Mft\"\n"
        ));
        assert!(!looks_like(b"1,h,0,Read,0,512,1\n"));
        assert!(!looks_like(b"IO Type;Init Time (s);Size (B);Min Offset\n"));
        assert!(!looks_like(b"fio version 3 iolog\n"));
        assert!(!looks_like(
            b"  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n"
        ));
        assert!(!looks_like(b""));
    }

    #[test]
    fn header_layout_without_cpu() {
        let input = no_cpu(
            "      DiskRead,     100000,       System (   4),          8, 0xfffffa8003b1e010, 0x0000001000, 0x00002000,        400,        1, 0x043, 350, 0, Original, 0xfffffa80039c3070, \"C:\\a, b.txt\"
     DiskWrite,     100500, svchost.exe ( 880),        12, 0xfffffa8003b1e010, 0x00ffff0000, 0x00001000,       1500,        0, 0x043, 800, 2, Original, 0x0, \"\"
      DiskFlush,     101000,       System (   4),          8, 0xfffffa8003b1e010,        250,        1, 0x0, 250, 0
   DiskReadInit,      99600,       System (   4),          8, 0xfffffa8003b1e010
        P-Start,      99000,  cmd.exe ( 123),   1
",
        );
        let out = run(parse, &input);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        type Row = (u64, Op, Nanos, Option<Nanos>, u64, u64, u32, Option<u32>);
        let got: Vec<Row> = out
            .ios
            .iter()
            .map(|(l, io)| {
                (
                    *l,
                    io.op,
                    io.time,
                    io.latency,
                    io.offset.0,
                    io.len.0,
                    io.device.minor,
                    io.pid,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    8,
                    Op::Read,
                    Nanos(99_600_000),
                    Some(Nanos(400_000)),
                    0x1000,
                    0x2000,
                    1,
                    Some(4)
                ),
                (
                    9,
                    Op::Write,
                    Nanos(99_000_000),
                    Some(Nanos(1_500_000)),
                    0xffff0000,
                    0x1000,
                    0,
                    Some(880)
                ),
                (
                    10,
                    Op::Flush,
                    Nanos(100_750_000),
                    Some(Nanos(250_000)),
                    0,
                    0,
                    1,
                    Some(4)
                ),
            ]
        );
        assert_eq!(
            out.notes,
            vec!["xperf disk init event", "xperf other event"]
        );
    }

    #[test]
    fn headerless_layout_with_cpu_column() {
        let input = b"       DiskRead,       8612,        xperf.exe (3984),      11844,   1, 0xffffe288b23f1b20, 0x018f0b8000, 0x00001000,         283,        0, 0x060043,         283,       3, Original, 0xffffe288272d0d20, \"C:\\$Mft\"\n\
      DiskFlush,       9000,        System (4),      8,   0, 0xffffe288b23f1b20,   100,   2, 0x0, 90, 0\n";
        let out = run(parse, input);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        let r = out.ios[0].1;
        assert_eq!(
            (r.op, r.offset.0, r.len.0, r.device.minor),
            (Op::Read, 0x018f0b8000, 0x1000, 0)
        );
        assert_eq!(
            (r.time, r.latency),
            (Nanos(8_329_000), Some(Nanos(283_000)))
        );
        assert_eq!(r.pid, Some(3984));
        let f = out.ios[1].1;
        assert_eq!(
            (f.op, f.device.minor, f.time),
            (Op::Flush, 2, Nanos(8_900_000))
        );
    }

    #[test]
    fn io_before_trace_start_is_clamped_and_noted() {
        let input = no_cpu("DiskRead, 100, System (4), 8, 0x0, 0x0, 0x200, 400, 0, 0x0, 1, 0, Original, 0x0, \"\"\n");
        let out = run(parse, &input);
        assert_eq!(out.ios[0].1.time, Nanos(0));
        assert_eq!(out.ios[0].1.latency, Some(Nanos(400_000)));
        assert_eq!(out.notes, vec!["xperf io started before the trace"]);
    }

    #[test]
    fn bad_lines() {
        let input = no_cpu(
            "DiskRead, 1000, System (4), 8, 0x0, 0x0, 0x200, 4, 0, 0x0, 1, 0, Original, 0x0, \"\"
DiskRead, 1000, System (4), 8, 0x0, 0x0
DiskRead, -1000, System (4), 8, 0x0, 0x0, 0x200, 4, 0, 0x0, 1, 0, Original, 0x0, \"\"
DiskWrite, 1000, System (4), 8, 0x0, 0xFFFFFFFFFFFFFFFF, 0x200, 4, 0, 0x0, 1, 0, Original, 0x0, \"\"
DiskWrite, 1000, System (4), 8, 0x0, 0xZZ, 0x200, 4, 0, 0x0, 1, 0, Original, 0x0, \"\"
DiskWrite, 9999999999999999, System (4), 8, 0x0, 0x0, 0x200, 4, 0, 0x0, 1, 0, Original, 0x0, \"\"
%%% garbage %%%
\u{fffd}\u{fffd}, 12
DiskFlush, 1000, System (4), 8, 0x0, 4, x, 0x0, 1, 0
FileIoRead, 1000, \u{e9}\u{e9}, 8
DiskRead, 1000, System (4), 8, 0x0, 0x0, 0x200, 4, 0, 0x0, 1, 0, Original, 0x0, \"",
        );
        let out = run(parse, &input);
        let expect = [
            (9, "truncated event"),
            (10, "negative timestamp"),
            (11, "past 2^63"),
            (12, "not a hexadecimal"),
            (13, "absurd timestamp"),
            (14, "not an xperf dumper event line"),
            (15, "not an xperf dumper event line"),
            (16, "disk number"),
        ];
        out.assert_bad_lines(&expect);
        let lines: Vec<u64> = out.ios.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, vec![8, 18], "unterminated last line still parses");
        assert_eq!(out.notes, vec!["xperf other event"]);
    }

    #[test]
    fn non_utf8_in_other_events_and_file_names_is_fine() {
        let mut input = no_cpu("");
        input.extend_from_slice(b"FileIoCreate, 5, a\xe9 (1), \"C:\\\xe9\"\n");
        input.extend_from_slice(
            b"DiskRead, 1000, System (4), 8, 0x0, 0x0, 0x200, 4, 0, 0x0, 1, 0, Original, 0x0, \"C:\\\xe9\xff\"\n",
        );
        let out = run(parse, &input);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        assert_eq!(out.ios.len(), 1);
    }

    #[test]
    fn empty_input_is_bad() {
        let (_, result) = run_strict(parse, b"  \n");
        assert!(result.unwrap_err().to_string().contains("empty input"));
    }
}
