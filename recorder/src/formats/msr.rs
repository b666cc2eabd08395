//! MSR Cambridge / SNIA IOTTA block traces (CSV, no header):
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, e.g.
//! `128166372003061629,web,1,Read,3154152960,32768,18741`.
//!
//! Timestamp and ResponseTime are Windows FILETIME ticks (100 ns); Timestamp is
//! the issue time, ResponseTime the time to completion. Type is `Read` or
//! `Write` (any case); offset and size are bytes. The disk number becomes device
//! `0:disk`.
//!
//! When the first timestamp is an absolute FILETIME (after 1970), times are
//! converted to the Unix epoch and the sink is told the source's time zero is the
//! Unix epoch; otherwise (relative tick counts, as some derived files have) they
//! are kept as ticks since zero. A header line naming the columns is tolerated.

use crate::formats::{FormatSpec, Reader};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Location, SourceIo};
use crate::formats::line_input::{
    check_extent, head_lines, nanos_from, parse_u64, report_bad, show, Fields, LineReader,
};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Op};

/// FILETIME ticks (100 ns since 1601-01-01) at the Unix epoch.
const UNIX_EPOCH_TICKS: u64 = 116_444_736_000_000_000;
const TICK_NS: u64 = 100;

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "msr",
    aliases: &["snia"],
    about: "MSR Cambridge / SNIA IOTTA CSV (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime)",
    looks_like,
    reader: Reader::Text(parse),
    example: "128166372003061629,web,1,Read,3154152960,32768,18741\n128166372003061639,web,1,Write,3154185728,4096,1000\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(head: &[u8]) -> bool {
    let mut seen = 0;
    for line in head_lines(head, 4) {
        if seen == 0 && is_header(line) {
            continue;
        }
        if parse_fields(line).is_err() {
            return false;
        }
        seen += 1;
    }
    seen > 0
}

fn is_header(line: &[u8]) -> bool {
    line.len() >= 10 && line[..10].eq_ignore_ascii_case(b"timestamp,")
}

/// The fields of one record, before the time base is applied.
struct Record {
    ticks: u64,
    disk: u32,
    op: Op,
    offset: u64,
    size: u64,
    response_ticks: u64,
}

fn parse_fields(line: &[u8]) -> Result<Record, BadReason> {
    let f = Fields::<8>::split(line, b',');
    if f.len() != 7 {
        return Err(bad(BadInputKind::Syntax, format!(
            "expected 7 comma-separated fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), found {}",
            f.len()
        )));
    }
    let ticks = parse_u64(f.get(0), "timestamp")?;
    let disk = parse_u64(f.get(2), "disk number")?;
    let disk = u32::try_from(disk).map_err(|_| bad(BadInputKind::OutOfRange, format!("disk number {disk} is too large")))?;
    let kind = f.get(3);
    let op = if kind.eq_ignore_ascii_case(b"read") {
        Op::Read
    } else if kind.eq_ignore_ascii_case(b"write") {
        Op::Write
    } else {
        return Err(bad(BadInputKind::UnknownOp, format!("type `{}` is neither Read nor Write", show(kind))));
    };
    let offset = parse_u64(f.get(4), "offset")?;
    let size = parse_u64(f.get(5), "size")?;
    let response_ticks = parse_u64(f.get(6), "response time")?;
    check_extent(offset, size)?;
    Ok(Record {
        ticks,
        disk,
        op,
        offset,
        size,
        response_ticks,
    })
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let mut lines = LineReader::new(input, file);
    // Decided by the first record: subtract the Unix epoch (absolute FILETIMEs) or not.
    let mut epoch: Option<u64> = None;
    let mut records = 0u64;
    while let Some(line) = lines.next_line(sink)? {
        if line.bytes.trim_ascii().is_empty() {
            continue;
        }
        if records == 0 && is_header(line.bytes) {
            sink.note("msr header line");
            continue;
        }
        let record = match parse_fields(line.bytes) {
            Ok(r) => r,
            Err(reason) => {
                report_bad(sink, file, line.number, line.bytes, &reason)?;
                continue;
            }
        };
        let zero = *epoch.get_or_insert_with(|| {
            if record.ticks >= UNIX_EPOCH_TICKS {
                sink.wall_clock(0);
                UNIX_EPOCH_TICKS
            } else {
                0
            }
        });
        records += 1;
        let Some(ticks) = record.ticks.checked_sub(zero) else {
            let reason = bad(BadInputKind::OutOfRange, format!(
                "timestamp {} is before 1970 although the trace's first timestamp is an absolute FILETIME",
                record.ticks
            ));
            report_bad(sink, file, line.number, line.bytes, &reason)?;
            continue;
        };
        let times = nanos_from(ticks, TICK_NS, "timestamp").and_then(|t| {
            nanos_from(record.response_ticks, TICK_NS, "response time").map(|l| (t, l))
        });
        let (time, latency) = match times {
            Ok(v) => v,
            Err(reason) => {
                report_bad(sink, file, line.number, line.bytes, &reason)?;
                continue;
            }
        };
        let device = DeviceId {
            major: 0,
            minor: record.disk,
        };
        let (offset, len) = (Bytes(record.offset), Bytes(record.size));
        let io = SourceIo {
            latency: Some(latency),
            ..SourceIo::request(time, device, record.op, offset, len)
        };
        sink.io(Location::line(file, line.number), io)?;
    }
    lines.report_if_empty(sink, "MSR CSV")
}

/// Times a record with these FILETIME ticks gets when it is the first (absolute) one.
#[cfg(test)]
fn unix_ns(ticks: u64) -> trace_format::Nanos {
    trace_format::Nanos((ticks - UNIX_EPOCH_TICKS) * TICK_NS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_strict};
    use trace_format::Nanos;

    const SAMPLE: &[u8] = b"128166372003061629,web,1,Read,3154152960,32768,18741\n\
128166372016382155,web,1,Write,3154152960,4096,1409\r\n\
128166372026382245,Web,0,WRITE,0,512,0\n";

    #[test]
    fn detects_msr_and_nothing_else() {
        assert!(looks_like(SAMPLE));
        assert!(looks_like(
            b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n1,h,0,read,0,512,3\n"
        ));
        assert!(!looks_like(b""));
        assert!(!looks_like(b"0,303567,3584,w,0.000000\n"), "SPC");
        assert!(!looks_like(
            b"version,time,op,size,lbn\n1,5633898,2a,512,42932745\n"
        ));
        assert!(!looks_like(b"fio version 3 iolog\n"));
        assert!(!looks_like(
            b"  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n"
        ));
        assert!(!looks_like(b"11413000 0 657728 16 1\n"));
    }

    #[test]
    fn records_have_filetime_units_and_disk_devices() {
        let out = run(parse, SAMPLE);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        assert_eq!(out.wall_clock, Some(0));
        assert_eq!(out.ios.len(), 3);
        let (line, first) = out.ios[0];
        assert_eq!(line, 1);
        assert_eq!(first.time, unix_ns(128166372003061629));
        assert_eq!(first.latency, Some(Nanos(1_874_100)));
        assert_eq!(first.op, Op::Read);
        assert_eq!(first.offset, Bytes(3154152960));
        assert_eq!(first.len, Bytes(32768));
        assert_eq!(first.device, DeviceId { major: 0, minor: 1 });
        assert_eq!(out.ios[1].1.op, Op::Write);
        assert_eq!(out.ios[2].1.op, Op::Write);
        assert_eq!(out.ios[2].1.device, DeviceId { major: 0, minor: 0 });
        assert_eq!(out.ios[2].1.latency, Some(Nanos(0)));
    }

    #[test]
    fn relative_ticks_stay_relative() {
        let out = run(parse, b"0,h,2,Read,0,4096,10\n25,h,2,Read,4096,4096,10\n");
        assert_eq!(out.wall_clock, None);
        assert_eq!(out.ios[1].1.time, Nanos(2500));
    }

    #[test]
    fn header_line_is_noted() {
        let out = run(
            parse,
            b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n5,h,0,Read,0,512,1\n",
        );
        assert_eq!(out.ios.len(), 1);
        assert_eq!(out.notes, vec!["msr header line"]);
    }

    #[test]
    fn bad_lines_are_reported_with_reasons() {
        let input: &[u8] = b"128166372003061629,web,1,Read,3154152960,32768,18741\n\
128166372003061629,web,1,Read,3154152960\n\
garbage\n\
128166372003061629,web,1,Read,3154152960,-512,18741\n\
128166372003061629,web,1,Trim,0,512,1\n\
128166372003061629,web,1,Read,9223372036854775807,512,1\n\
1,web,1,Read,0,512,1\n\
99999999999999999999,web,1,Read,0,512,1\n\
128166372003061629,web,1,Read,0,512,18446744073709551615\n\
128166372003061629,w\xffb,1,Read,0,512,1\n\
128166372003061629,web,x,Read,0,512,1\n";
        let out = run(parse, input);
        let reasons: Vec<(u64, &str)> = out.bad.iter().map(|(l, _, r)| (*l, r.as_str())).collect();
        assert_eq!(reasons.len(), 9, "{reasons:?}");
        assert_eq!(reasons[0].0, 2);
        use crate::error::BadInputKind as K;
        assert_eq!(
            out.kinds,
            [
                K::Syntax,
                K::Syntax,
                K::Negative,
                K::UnknownOp,
                K::OutOfRange,
                K::OutOfRange,
                K::OutOfRange,
                K::OutOfRange,
                K::NotANumber
            ],
            "{reasons:?}"
        );
        // Which field is wrong is in the message.
        assert!(reasons[7].1.contains("absurd response time"));
        assert!(reasons[8].1.contains("disk number"));
        // The hostname is not used, so non-UTF-8 there is harmless.
        assert_eq!(out.ios.len(), 2);
        assert_eq!(out.ios[1].0, 10);
    }

    #[test]
    fn stops_at_first_bad_line_without_skip() {
        let (out, result) = run_strict(parse, b"1,h,0,Read,0,512,1\nnope\n2,h,0,Read,0,512,1\n");
        let err = result.unwrap_err().to_string();
        assert!(err.contains("t.txt:2"), "{err}");
        assert!(err.contains("nope"), "{err}");
        assert_eq!(out.ios.len(), 1);
    }

    #[test]
    fn empty_input_is_bad() {
        for input in [&b""[..], b"\n\n  \n"] {
            let (_, result) = run_strict(parse, input);
            assert!(result.unwrap_err().to_string().contains("empty input"));
        }
    }

    #[test]
    fn truncated_last_line_is_bad() {
        let out = run(parse, b"1,h,0,Read,0,512,1\n2,h,0,Rea");
        assert_eq!(out.ios.len(), 1);
        assert_eq!(out.bad.len(), 1);
        assert_eq!(out.bad[0].0, 2);
    }
}
