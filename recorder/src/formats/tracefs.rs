//! Parser for Linux tracefs text (`/sys/kernel/tracing/trace` or `trace_pipe`):
//! the block events and the ftrace `blk` tracer's lines.
//!
//! ```text
//!   dd-5653  [000] .....  367.892716: block_rq_issue: 7,0 WS 4096 () 80 + 8 be,0,4 [dd]
//!   ksoftirqd/1-22 [001] ..s.. 367.892902: block_rq_complete: 7,0 WS () 80 + 8 be,0,4 [0]
//!   dd-5679  [001] d..1.  367.964428:   7,0    Q  WS 80 + 8 [dd]          (blk tracer)
//!   dd-24584 [000] ..... 11725.221266: block_bio_queue: 253,0 WS 800 + 8 [dd]
//!   dd-24584 [000] ..... 11725.221285: block_bio_complete: 253,0 WS 800 + 8 [0]
//! ```
//!
//! The bio events (`Q` and `C`) are all a bio-based device (zram,
//! device-mapper, md) reports; live capture reads them for such devices.
//!
//! Older kernels print no ioprio field (`... 80 + 8 [dd]`); the irq-flags column
//! may be absent; `options/record-tgid` adds `(  TGID)` after the task. The event
//! bodies follow `include/trace/events/block.h`; the blk tracer prints the
//! blkparse action fields, parsed by [`crate::formats::blkparse::parse_action`].

use crate::formats::{FormatSpec, Reader};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::Location;
use crate::formats::block_events::{self, parse_action, parse_device, parse_seconds, token, Parsed};
use crate::formats::line_input::{head_lines, report_bad, LineReader};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::Nanos;

/// Note keys this parser reports.
pub mod note {
    pub const LOST_LINES: &str = "tracefs: lost-events lines (per-CPU buffer overruns)";
    pub const LOST_EVENTS: &str = "tracefs: events lost to buffer overruns";
    pub const OTHER_EVENT: &str = "tracefs: events other than block I/O";
    pub const UNUSED_BLOCK: &str = "tracefs: unused block events";
    pub const PASSTHROUGH: &str = crate::formats::block_events::note::PASSTHROUGH;
}

/// What one line of tracefs text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceLine {
    /// An event (or a note for an understood line that is no I/O).
    Parsed(Parsed),
    /// `CPU:N [LOST M EVENTS]`: the kernel dropped events.
    Lost { cpu: u32, events: u64 },
    /// A `#` header line or a blank line.
    Comment,
}

/// The common prefix of an ftrace line: task pid and timestamp, and the body.
struct Prefix<'l> {
    pid: Option<u32>,
    time: Nanos,
    body: &'l str,
}

/// Finds ` [CPU] ` and returns (before, after).
fn split_at_cpu(line: &str) -> Option<(&str, &str)> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(rel) = line.get(from..)?.find('[') {
        let open = from + rel;
        let digits = bytes
            .get(open + 1..)?
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits > 0 && bytes.get(open + 1 + digits) == Some(&b']') {
            return Some((&line[..open], &line[open + 2 + digits..]));
        }
        from = open + 1;
    }
    None
}

fn parse_prefix(line: &str) -> Result<Prefix<'_>, BadReason> {
    let (task, after) =
        split_at_cpu(line).ok_or_else(|| bad(BadInputKind::Syntax, "not an ftrace line: no `[CPU]` column after the task"))?;
    // `comm-pid` or `comm-pid (  tgid)`.
    let task = match task.trim_end().strip_suffix(')') {
        Some(t) => t.rfind('(').map_or(t, |p| &t[..p]),
        None => task,
    };
    let pid = task
        .trim()
        .rsplit_once('-')
        .and_then(|(_, pid)| pid.parse::<u32>().ok())
        .filter(|&p| p != 0);
    let (first, rest) = token(after).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: timestamp missing"))?;
    let (stamp, rest) = if first.ends_with(':') {
        (first, rest)
    } else {
        token(rest).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: timestamp missing"))?
    };
    let stamp = stamp
        .strip_suffix(':')
        .ok_or_else(|| bad(BadInputKind::Syntax, format!("`{stamp}` is not an ftrace timestamp (`SECONDS.FRACTION:`)")))?;
    let time = parse_seconds(stamp)?;
    Ok(Prefix {
        pid,
        time,
        body: rest.trim(),
    })
}

/// Removes a leading `(...)` group, returning its content and what follows.
fn strip_paren(s: &str) -> Result<(&str, &str), BadReason> {
    let s = s.trim_start();
    let inner = s
        .strip_prefix('(')
        .ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: `(command)` field missing"))?;
    let close = inner.find(')').ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: missing `)`"))?;
    Ok((&inner[..close], &inner[close + 1..]))
}

/// Removes the ioprio field (`be,0,4`, `none,0,0`) of newer kernels, if present,
/// from `SECTOR + N IOPRIO [x]`.
fn strip_ioprio(s: &str) -> String {
    match s.find('[') {
        Some(open) => {
            let before = &s[..open];
            let kept: Vec<&str> = before
                .split_whitespace()
                .filter(|t| !t.contains(','))
                .collect();
            format!("{} {}", kept.join(" "), &s[open..])
        }
        None => s.to_string(),
    }
}

/// Parses the body of a `block_*` event.
fn parse_block_event(
    name: &str,
    pid: Option<u32>,
    time: Nanos,
    body: &str,
) -> Result<Parsed, BadReason> {
    let action = match name {
        "block_rq_issue" => "D",
        "block_rq_insert" => "I",
        "block_rq_complete" => "C",
        "block_rq_requeue" => "R",
        "block_bio_queue" => "Q",
        "block_bio_backmerge" => "M",
        "block_bio_frontmerge" => "F",
        "block_bio_complete" => "C",
        "block_getrq" => "G",
        "block_sleeprq" => "S",
        "block_bio_bounce" => "B",
        "block_split" => "X",
        "block_bio_remap" | "block_rq_remap" => "A",
        "block_plug" | "block_unplug" => return Ok(Parsed::Note(block_events::note::PLUG)),
        _ => return Ok(Parsed::Note(note::UNUSED_BLOCK)),
    };
    let (dev, rest) = token(body).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: device missing"))?;
    let device = parse_device(dev).ok_or_else(|| bad(BadInputKind::Syntax, format!("`{dev}` is not a MAJ,MIN device")))?;
    let (rwbs, rest) = token(rest).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: RWBS field missing"))?;
    let rest: String = match name {
        "block_rq_issue" | "block_rq_insert" => {
            // BYTES (CMD) SECTOR + N [IOPRIO] [comm]
            let (bytes, rest) = token(rest).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: byte count missing"))?;
            if bytes.starts_with('-') || bytes.parse::<u64>().is_err() {
                return Err(bad(BadInputKind::NotANumber, format!("byte count `{bytes}` is not a number")));
            }
            let (cmd, rest) = strip_paren(rest)?;
            if !cmd.trim().is_empty() {
                return Ok(Parsed::Note(note::PASSTHROUGH));
            }
            strip_ioprio(rest)
        }
        "block_rq_complete" | "block_rq_requeue" => {
            // (CMD) SECTOR + N [IOPRIO] [error]
            let (cmd, rest) = strip_paren(rest)?;
            if !cmd.trim().is_empty() {
                return Ok(Parsed::Note(note::PASSTHROUGH));
            }
            strip_ioprio(rest)
        }
        "block_rq_remap" => {
            // SECTOR + N <- (MAJ,MIN) SECTOR NR_BIOS: drop the bio count.
            match rest.trim().rsplit_once(')') {
                Some((head, tail)) => {
                    let sector = tail.split_whitespace().next().unwrap_or("");
                    format!("{head}) {sector}")
                }
                None => rest.to_string(),
            }
        }
        _ => rest.to_string(),
    };
    parse_action(device, time, pid, action, rwbs, &rest)
}

/// Parses one line of tracefs text: a block event, a blk-tracer line, a
/// lost-events marker, or a header. Live capture reuses this.
pub fn parse_line(line: &str) -> Result<TraceLine, BadReason> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(TraceLine::Comment);
    }
    if let Some(cpu) = t.strip_prefix("CPU:") {
        // CPU:1 [LOST 123 EVENTS]
        if let Some((n, rest)) = cpu.split_once(' ') {
            let events = rest
                .trim()
                .strip_prefix("[LOST ")
                .and_then(|r| r.strip_suffix(" EVENTS]"))
                .and_then(|m| m.trim().parse::<u64>().ok());
            if let (Ok(cpu), Some(events)) = (n.parse::<u32>(), events) {
                return Ok(TraceLine::Lost { cpu, events });
            }
        }
    }
    let p = parse_prefix(t)?;
    let body = p.body;
    if body.is_empty() {
        return Err(bad(BadInputKind::Truncated, "truncated line: nothing after the timestamp"));
    }
    // `block_rq_issue: ...` (optionally `block:block_rq_issue: ...`).
    if let Some((name, rest)) = body.split_once(": ") {
        let name = name.strip_prefix("block:").unwrap_or(name);
        if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            if name.starts_with("block_") {
                return parse_block_event(name, p.pid, p.time, rest).map(TraceLine::Parsed);
            }
            return Ok(TraceLine::Parsed(Parsed::Note(note::OTHER_EVENT)));
        }
    }
    // The blk tracer: `MAJ,MIN [CGROUP] ACTION RWBS REST`.
    let (dev, rest) = token(body).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line"))?;
    let Some(device) = parse_device(dev) else {
        if body.ends_with(':') || body.split_once(':').is_some() {
            return Ok(TraceLine::Parsed(Parsed::Note(note::OTHER_EVENT)));
        }
        return Err(bad(BadInputKind::UnknownOp, format!(
            "`{body}` is neither a block event nor a blk tracer line"
        )));
    };
    let (mut action, mut rest) = token(rest).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: action missing"))?;
    if action.contains(',') {
        // blk_cgroup option: a cgroup id pair before the action.
        (action, rest) = token(rest).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: action missing"))?;
    }
    if action.len() > 2 || !action.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(bad(BadInputKind::UnknownOp, format!("`{action}` is not a blk tracer action")));
    }
    let (rwbs, rest) = token(rest).ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: RWBS field missing"))?;
    parse_action(device, p.time, p.pid, action, rwbs, rest).map(TraceLine::Parsed)
}

/// Reports one parsed line to `sink`.
pub fn deliver(line: TraceLine, at: Location<'_>, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    match line {
        TraceLine::Parsed(p) => block_events::deliver(p, at, sink),
        TraceLine::Lost { events, .. } => {
            sink.note(note::LOST_LINES);
            for _ in 0..events {
                sink.note(note::LOST_EVENTS);
            }
            Ok(())
        }
        TraceLine::Comment => Ok(()),
    }
}

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "tracefs",
    aliases: &["ftrace"],
    about: "/sys/kernel/tracing text: block_rq_issue/block_rq_complete events, or the blk tracer",
    looks_like,
    reader: Reader::Text(parse),
    example: "              dd-1234    [001] .....   123.456789: block_rq_issue: 7,0 W 4096 () 0 + 8 be,0,4 [dd]\n          <idle>-0       [001] d.h1.   123.456999: block_rq_complete: 7,0 W () 0 + 8 be,0,4 [0]\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like tracefs
/// text: a `# tracer:` header or a first line with block events.
pub fn looks_like(head: &[u8]) -> bool {
    for line in head_lines(head, 64) {
        let Ok(text) = std::str::from_utf8(line) else {
            return false;
        };
        let t = text.trim();
        if t.starts_with("# tracer:") {
            return true;
        }
        if t.starts_with('#') {
            continue;
        }
        return match parse_line(t) {
            Ok(TraceLine::Parsed(Parsed::Note(note::OTHER_EVENT))) => continue,
            Ok(TraceLine::Parsed(_)) | Ok(TraceLine::Lost { .. }) => true,
            _ => false,
        };
    }
    false
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let mut reader = LineReader::new(input, file).keeping_comments();
    while let Some(line) = reader.next_line(sink)? {
        let Ok(text) = std::str::from_utf8(line.bytes) else {
            let reason = bad(BadInputKind::NotText, "not UTF-8 text");
            report_bad(sink, file, line.number, line.bytes, &reason)?;
            continue;
        };
        let at = Location::line(file, line.number);
        match parse_line(text) {
            Ok(parsed) => deliver(parsed, at, sink)?,
            Err(reason) => sink.bad_input(at, text, &reason)?,
        }
    }
    reader.report_if_empty(sink, "tracefs")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Action, BlockEvent};
    use crate::normalize::{NormaliseOptions, Normaliser};
    use trace_format::{Bytes, DeviceId, Flags, Op};

    fn ev(line: &str) -> BlockEvent {
        match parse_line(line) {
            Ok(TraceLine::Parsed(Parsed::Event(e))) => e,
            other => panic!("{line}: {other:?}"),
        }
    }

    const LOOP0: DeviceId = DeviceId { major: 7, minor: 0 };

    #[test]
    fn event_layouts_old_and_new() {
        for line in [
            "  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]",
            "  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 none,0,0 [dd]",
            "  dd-1234 [001] ...1 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 be,0,4 [dd]",
            "  dd-1234 [001] 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]",
            "  dd-1234 (   1234) [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]",
            "  dd-1234 [001] ..... 123.456789: block:block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]",
        ] {
            let e = ev(line);
            assert_eq!(e.action, Action::Issue, "{line}");
            assert_eq!(
                (e.device, e.op, e.offset, e.len),
                (LOOP0, Op::Read, Bytes(0), Bytes(4096))
            );
            assert_eq!(e.time, Nanos(123_456_789_000));
            assert_eq!(e.pid, Some(1234));
        }
        let e = ev("  ksoftirqd/1-22 [001] ..s.. 367.892902: block_rq_complete: 7,0 WS () 80 + 8 be,0,4 [0]");
        assert_eq!(
            (e.action, e.op, e.flags, e.offset),
            (Action::Complete, Op::Write, Flags::SYNC, Bytes(80 * 512))
        );
        let e = ev("  <idle>-0 [001] d.h1. 1.5: block_rq_complete: 7,0 R () 0 + 8 [-5]");
        assert_eq!((e.error, e.pid), (-5, None));
        let e = ev("  dd-5653 [000] ..... 367.892689: block_bio_queue: 7,0 WS 80 + 8 [dd]");
        assert_eq!(e.action, Action::Queue);
        assert!(matches!(
            parse_line("  kworker/u8:0-12 [001] ...1. 367.892813: block_rq_insert: 254,0 WS 4096 () 24330320 + 8 be,0,4 [kworker/u8:0]"),
            Ok(TraceLine::Parsed(Parsed::Note(crate::formats::block_events::note::INSERT)))
        ));
        let e = ev(
            "  jbd2-300 [000] ..... 5.0: block_rq_issue: 8,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]",
        );
        assert_eq!(e.op, Op::Flush);
        let e = ev("  x-3 [000] ..... 5.0: block_rq_complete: 8,0 FF () 18446744073709551615 + 0 none,0,0 [0]");
        assert_eq!((e.op, e.offset), (Op::Flush, Bytes(0)));
        let e = ev("  x-3 [000] ..... 5.0: block_bio_complete: 253,0 R 100 + 8 [0]");
        assert_eq!(e.action, Action::Complete);
        let e = ev("  x-3 [000] ..... 5.0: block_rq_requeue: 8,0 W () 100 + 8 none,0,0 [0]");
        assert_eq!(e.action, Action::Requeue);
        let Ok(TraceLine::Parsed(Parsed::Remap(e, from, off))) =
            parse_line("  x-3 [000] ..... 5.0: block_bio_remap: 8,0 R 2056 + 8 <- (8,1) 8")
        else {
            panic!()
        };
        assert_eq!(
            (e.offset, from, off),
            (
                Bytes(2056 * 512),
                DeviceId { major: 8, minor: 1 },
                Bytes(4096)
            )
        );
        assert!(matches!(
            parse_line("  sg-3 [000] ..... 5.0: block_rq_issue: 8,0 N 36 (12 00 00 00 24 00) 0 + 0 none,0,0 [sg_inq]"),
            Ok(TraceLine::Parsed(Parsed::Note(note::PASSTHROUGH)))
        ));
    }

    #[test]
    fn bio_event_lines_of_a_bio_based_device() {
        // As Linux 6.18 prints them for zram (253,0) and a flush bio.
        let zram0 = DeviceId {
            major: 253,
            minor: 0,
        };
        let e = ev("              dd-24584   [000] ..... 11725.221266: block_bio_queue: 253,0 WS 800 + 8 [dd]");
        assert_eq!(
            (e.action, e.device, e.op, e.flags, e.offset, e.len, e.pid),
            (
                Action::Queue,
                zram0,
                Op::Write,
                Flags::SYNC,
                Bytes(800 * 512),
                Bytes(4096),
                Some(24584)
            )
        );
        assert_eq!(e.time, Nanos(11_725_221_266_000));
        let e = ev("              dd-24586   [000] ..... 11725.230018: block_bio_complete: 253,0 RS 20480 + 2048 [0]");
        assert_eq!(
            (e.action, e.op, e.offset, e.len, e.error),
            (
                Action::Complete,
                Op::Read,
                Bytes(20480 * 512),
                Bytes(1 << 20),
                0
            )
        );
        let e = ev("  kworker/0:2-99 [001] ..s.. 5.0: block_bio_complete: 253,0 W 64 + 8 [-5]");
        assert_eq!((e.action, e.error), (Action::Complete, -5));
        let e = ev("         losetup-24587   [000] ..... 11725.233923: block_bio_queue: 254,0 FWS 0 + 0 [losetup]");
        assert_eq!(
            (e.action, e.op, e.offset, e.len),
            (Action::Queue, Op::Flush, Bytes(0), Bytes(0))
        );
        assert_eq!(
            parse_line("  dd-1 [000] ..... 5.0: block_bio_queue: 253,0 WS 800 +")
                .unwrap_err()
                .kind,
            crate::error::BadInputKind::Truncated
        );

        // A zram capture's text pairs in queue mode.
        let text = "\
              dd-24584   [000] ..... 11725.221266: block_bio_queue: 253,0 WS 800 + 8 [dd]
              dd-24584   [000] ..... 11725.221285: block_bio_complete: 253,0 WS 800 + 8 [0]
              dd-24586   [000] ..... 11725.229604: block_bio_queue: 253,0 RS 20480 + 2048 [dd]
              dd-24586   [000] ..... 11725.230018: block_bio_complete: 253,0 RS 20480 + 2048 [0]
";
        let mut out = Vec::new();
        let o = {
            let opts = NormaliseOptions {
                event: Some(crate::normalize::EventChoice::Queue),
                ..NormaliseOptions::default()
            };
            let mut n = Normaliser::new(opts, &mut out);
            let mut input = text.as_bytes();
            parse(&mut input, "t", &mut n).unwrap();
            n.finish().unwrap()
        };
        assert_eq!(o.issue_event, trace_format::IssueEvent::Queue);
        let got: Vec<(u64, Op, u64, Option<u64>)> = out
            .iter()
            .map(|r| (r.time.0, r.op, r.len.0, r.latency.map(|l| l.0)))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Op::Write, 4096, Some(19_000)),
                (8_338_000, Op::Read, 1 << 20, Some(414_000))
            ]
        );
    }

    /// A requeue in tracefs lines: a read requeued, its
    /// re-issue missing, a 16 KiB write at the same sector: the write stays a
    /// write with its own latency, and the read's completion ends the requeue.
    #[test]
    fn requeued_read_is_not_reissued_by_a_write_at_its_sector() {
        let text = "\
  kworker-9 [000] ..... 100.000000: block_rq_issue: 8,0 R 4096 () 2048 + 8 none,0,0 [app]
  kworker-9 [000] ..... 100.000010: block_rq_requeue: 8,0 R () 2048 + 8 none,0,0 [0]
  writer-7  [001] ..... 100.000110: block_rq_issue: 8,0 W 16384 () 2048 + 32 none,0,0 [writer]
  <idle>-0  [001] d.h1. 100.000300: block_rq_complete: 8,0 W () 2048 + 32 none,0,0 [0]
  <idle>-0  [000] d.h1. 100.000500: block_rq_complete: 8,0 R () 2048 + 8 none,0,0 [0]
";
        let mut out = Vec::new();
        {
            let mut n = Normaliser::new(NormaliseOptions::default(), &mut out);
            parse(&mut text.as_bytes(), "t", &mut n).unwrap();
            n.finish().unwrap();
        }
        let got: Vec<_> = out
            .iter()
            .map(|r| (r.op, r.len.0, r.latency.map(|l| l.0)))
            .collect();
        assert_eq!(
            got,
            vec![(Op::Read, 4096, Some(500_000)), (Op::Write, 16384, Some(190_000))]
        );
    }

    #[test]
    fn blk_tracer_lines() {
        let e = ev("              dd-5679    [001] d..1.   367.964428:   7,0    Q  WS 80 + 8 [dd]");
        assert_eq!(
            (e.action, e.op, e.offset, e.len, e.pid),
            (
                Action::Queue,
                Op::Write,
                Bytes(40960),
                Bytes(4096),
                Some(5679)
            )
        );
        let e = ev("     ksoftirqd/1-22      [001] d.s1.   367.966009:   7,0    C  WS 80 + 8 [0]");
        assert_eq!(e.action, Action::Complete);
        assert!(matches!(
            parse_line("  dd-5679 [001] d..1. 367.964439:   7,0    P   N [dd]"),
            Ok(TraceLine::Parsed(Parsed::Note(_)))
        ));
        assert!(matches!(
            parse_line("  dd-5679 [001] d..1. 367.964439:   7,0    U   N [dd] 1"),
            Ok(TraceLine::Parsed(Parsed::Note(_)))
        ));
    }

    #[test]
    fn headers_lost_events_and_other_events() {
        assert_eq!(parse_line("# tracer: nop"), Ok(TraceLine::Comment));
        assert_eq!(
            parse_line("CPU:1 [LOST 123 EVENTS]"),
            Ok(TraceLine::Lost {
                cpu: 1,
                events: 123
            })
        );
        assert!(matches!(
            parse_line("  bash-1 [000] ..... 1.0: sched_switch: prev_comm=bash"),
            Ok(TraceLine::Parsed(Parsed::Note(note::OTHER_EVENT)))
        ));
    }

    #[test]
    fn bad_lines() {
        use crate::error::BadInputKind as K;
        let e = |l: &str| parse_line(l).unwrap_err();
        let kind = |l: &str| e(l).kind;
        assert_eq!(
            kind("  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 +"),
            K::Truncated
        );
        assert_eq!(
            kind("  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096"),
            K::Truncated
        );
        assert!(
            e("  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R -4096 () 0 + 8 [dd]")
                .message
                .contains("byte count")
        );
        assert_eq!(
            kind("  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 + -8 [dd]"),
            K::Negative
        );
        assert_eq!(kind("  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 99999999999999999999 + 8 [dd]"), K::OutOfRange);
        assert_eq!(kind("random words"), K::Syntax);
        assert!(
            e("  dd-1234 [001] ..... nonsense: block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]")
                .message
                .contains("`nonsense` is not in seconds")
        );
    }

    #[test]
    fn whole_trace_pairs_and_counts_lost_events() {
        let text = "\
# tracer: nop
#
              dd-5653    [000] .....   367.892689: block_bio_queue: 7,0 WS 80 + 8 [dd]
              dd-5653    [000] .....   367.892716: block_rq_issue: 7,0 WS 4096 () 80 + 8 be,0,4 [dd]
CPU:1 [LOST 3 EVENTS]
     ksoftirqd/1-22      [001] ..s..   367.892902: block_rq_complete: 7,0 WS () 80 + 8 be,0,4 [0]
";
        let mut out = Vec::new();
        let o = {
            let mut n = Normaliser::new(NormaliseOptions::default(), &mut out);
            let mut input = text.as_bytes();
            parse(&mut input, "t", &mut n).unwrap();
            n.finish().unwrap()
        };
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].time, Nanos(27_000));
        assert_eq!(out[0].latency, Some(Nanos(186_000)));
        let lost = o.tail.notes.iter().find(|(k, _)| k == note::LOST_EVENTS);
        assert_eq!(lost.map(|(_, n)| *n), Some(3));
    }

    #[test]
    fn detection() {
        assert!(looks_like(
            b"# tracer: blk\n#\n  dd-1 [000] d..1. 1.0:   7,0    Q  WS 80 + 8 [dd]\n"
        ));
        assert!(looks_like(
            b"  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]\n"
        ));
        assert!(!looks_like(
            b"  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [comm]\n"
        ));
        assert!(!looks_like(b"fio version 2 iolog\n"));
    }
}
