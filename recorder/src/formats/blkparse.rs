//! Parser for blkparse's default text output:
//!
//! ```text
//!   8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]
//!   DEV   CPU  SEQUENCE   SECONDS.NS    PID ACT RWBS  REST
//! ```
//!
//! `REST` depends on the action (see blkparse's `process_default`): `SECTOR + N
//! [comm]` for most, `SECTOR + N [error]` or `SECTOR [error]` for completions and
//! requeues, `[comm]` for a request without a sector (a flush), `BYTES (cdb)
//! [comm]` for passthrough requests, `SECTOR + N <- (MAJ,MIN) SECTOR` for
//! remaps, `SECTOR / SECTOR [comm]` for splits, free text for scheduler
//! messages (`m`), an optional `(elapsed)` before the bracket with `blkparse -t`.
//! The per-CPU and total summary block blkparse prints at the end is recognised
//! and counted, not parsed.
//!
//! The action part is shared with the ftrace `blk` tracer's text, which prints
//! the same fields after its own prefix (see [`crate::formats::tracefs`]).

use crate::formats::{FormatSpec, Reader};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Action, Location};
use crate::formats::block_events::{
    self, deliver, io_event, parse_action, parse_device, parse_number, parse_rwbs_bytes,
    parse_seconds, token, Parsed, Rwbs,
};
use crate::formats::line_input::{head_lines, report_bad, LineReader};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Nanos};

/// Note keys only this parser reports (the others are in [`block_events::note`]).
pub mod note {
    pub const SUMMARY: &str = "blkparse summary lines";
    pub const COMMENT: &str = crate::formats::line_input::COMMENT_NOTE;
}

/// The fixed fields of a blkparse event line.
struct Header<'l> {
    device: DeviceId,
    time: Nanos,
    pid: u32,
    action: &'l str,
    rwbs: &'l str,
    rest: &'l str,
}

fn parse_header(line: &str) -> Result<Header<'_>, BadReason> {
    let missing = |what: &str| bad(BadInputKind::Truncated, format!("truncated line: {what} missing"));
    let (dev, rest) = token(line).ok_or_else(|| missing("device"))?;
    let device = parse_device(dev).ok_or_else(|| bad(BadInputKind::Syntax, format!("`{dev}` is not a MAJ,MIN device")))?;
    let (cpu, rest) = token(rest).ok_or_else(|| missing("CPU"))?;
    let _: u32 = parse_number(cpu, "CPU")?;
    let (seq, rest) = token(rest).ok_or_else(|| missing("sequence number"))?;
    let _: u64 = parse_number(seq, "sequence number")?;
    let (time, rest) = token(rest).ok_or_else(|| missing("time"))?;
    let time = parse_seconds(time)?;
    let (pid, rest) = token(rest).ok_or_else(|| missing("PID"))?;
    let pid: u32 = parse_number(pid, "PID")?;
    let (action, rest) = token(rest).ok_or_else(|| missing("action"))?;
    if action.len() > 2 || !action.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(bad(BadInputKind::UnknownOp, format!("`{action}` is not a blkparse action")));
    }
    let (rwbs, rest) = token(rest).ok_or_else(|| missing("RWBS field"))?;
    Ok(Header {
        device,
        time,
        pid,
        action,
        rwbs,
        rest,
    })
}

/// Parses one blkparse event line.
pub fn parse_line(line: &str) -> Result<Parsed, BadReason> {
    let h = parse_header(line)?;
    // With blkparse's per-priority extension, `NONE|REAL|BEST|IDLE n` follows RWBS.
    let mut rest = h.rest;
    if let Some((word, after)) = token(rest) {
        if matches!(word, "NONE" | "REAL" | "BEST" | "IDLE" | "ERRR") {
            rest = token(after).map_or(
                after,
                |(n, a)| if n.parse::<u32>().is_ok() { a } else { after },
            );
        }
    }
    let pid = (h.pid != 0).then_some(h.pid);
    parse_action(h.device, h.time, pid, h.action, h.rwbs, rest)
}

/// A cursor over the bytes of a line, for [`parse_line_fast`].
struct Scan<'l> {
    bytes: &'l [u8],
    pos: usize,
}

impl<'l> Scan<'l> {
    fn new(bytes: &'l [u8]) -> Self {
        Scan { bytes, pos: 0 }
    }

    #[inline]
    fn skip_space(&mut self) {
        let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
        self.pos += rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// Whether the next byte is whitespace (a token ended).
    fn at_space(&self) -> bool {
        self.bytes
            .get(self.pos)
            .is_some_and(u8::is_ascii_whitespace)
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.bytes.get(self.pos) == Some(&b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// One to `max` decimal digits (`max` small enough that they cannot
    /// overflow the caller's type); `None` for none or more.
    #[inline]
    fn digits(&mut self, max: usize) -> Option<u64> {
        let rest = self.bytes.get(self.pos..)?;
        let mut value = 0u64;
        let mut count = 0;
        for &b in rest {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            if count == max {
                return None;
            }
            value = value * 10 + u64::from(digit);
            count += 1;
        }
        if count == 0 {
            return None;
        }
        self.pos += count;
        Some(value)
    }

    /// Digits then whitespace: a whole numeric token.
    #[inline]
    fn number_token(&mut self, max: usize) -> Option<u64> {
        self.skip_space();
        let v = self.digits(max)?;
        self.at_space().then_some(v)
    }

    /// A run of non-whitespace bytes (possibly empty).
    fn word(&mut self) -> &'l [u8] {
        let start = self.pos;
        while self
            .bytes
            .get(self.pos)
            .is_some_and(|b| !b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
        self.bytes.get(start..self.pos).unwrap_or(&[])
    }

    fn rest(&self) -> &'l [u8] {
        self.bytes.get(self.pos..).unwrap_or(&[])
    }
}

/// Digits that fit a `u32` (at most 9) and a `u64` (at most 19) for sure.
const U32_DIGITS: usize = 9;
const U64_DIGITS: usize = 19;

/// `SECTOR + N`, nothing, or with `lone_sector` a lone `SECTOR`, in plain form
/// (no parentheses, single tokens): `Some(None)` for nothing, `Some(Some(..))`
/// for an extent, `None` for anything else (the general parser decides).
fn extent_fast(before: &[u8], lone_sector: bool) -> Option<Option<(u64, u64)>> {
    let mut sc = Scan::new(before);
    sc.skip_space();
    if sc.at_end() {
        return Some(None);
    }
    let sector = sc.number_token(U64_DIGITS)?;
    sc.skip_space();
    if lone_sector && sc.at_end() {
        return Some(Some((sector, 0)));
    }
    if !sc.eat(b'+') || !sc.at_space() {
        return None;
    }
    sc.skip_space();
    let count = sc.digits(U64_DIGITS)?;
    sc.skip_space();
    sc.at_end().then_some(Some((sector, count)))
}

/// Splits at the first `[` and the last `]` after it: `(before, inside)`.
fn bracket_fast(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let open = rest.iter().position(|&b| b == b'[')?;
    let close = rest
        .iter()
        .rposition(|&b| b == b']')
        .filter(|&c| c > open)?;
    Some((rest.get(..open)?, rest.get(open + 1..close)?))
}

/// A completion error: `0` or `-N`, nothing else.
fn error_fast(inside: &[u8]) -> Option<i32> {
    let mut sc = Scan::new(inside);
    let negative = sc.eat(b'-');
    let v = i32::try_from(sc.digits(U32_DIGITS)?).ok()?;
    if !sc.at_end() {
        return None;
    }
    Some(if negative { -v } else { v })
}

/// The fixed fields of an event line as [`parse_line_fast`] reads them:
/// device, time and PID, up to the action word.
#[inline]
fn header_fast(sc: &mut Scan<'_>) -> Option<(DeviceId, Nanos, Option<u32>)> {
    sc.skip_space();
    let major = sc.digits(U32_DIGITS)?;
    if !sc.eat(b',') {
        return None;
    }
    let minor = sc.digits(U32_DIGITS)?;
    if !sc.at_space() {
        return None;
    }
    let device = DeviceId {
        major: u32::try_from(major).ok()?,
        minor: u32::try_from(minor).ok()?,
    };
    sc.number_token(U32_DIGITS)?; // CPU
    sc.number_token(U64_DIGITS)?; // sequence number
    sc.skip_space();
    let time = seconds_fast(sc)?;
    let pid = u32::try_from(sc.number_token(U32_DIGITS)?).ok()?;
    Some((device, time, (pid != 0).then_some(pid)))
}

/// `SECONDS.FRACTION` (at most 9 fraction digits) followed by whitespace.
#[inline]
fn seconds_fast(sc: &mut Scan<'_>) -> Option<Nanos> {
    let secs = sc.digits(10)?;
    if !sc.eat(b'.') {
        return None;
    }
    let frac_start = sc.pos;
    let frac = sc.digits(9)?;
    let frac_digits = u32::try_from(sc.pos - frac_start).ok()?;
    if !sc.at_space() {
        return None;
    }
    let ns = secs * 1_000_000_000 + frac * 10u64.pow(9 - frac_digits);
    if ns >= 1 << 62 {
        return None;
    }
    Some(Nanos(ns))
}

/// The note key of an action that makes no I/O event, `""` for one that
/// does, `None` for a split (left to the general parser).
#[inline]
fn action_note_fast(action: &[u8]) -> Option<&'static str> {
    Some(match action {
        b"G" => block_events::note::GETRQ,
        b"I" => block_events::note::INSERT,
        b"P" => block_events::note::PLUG,
        b"U" | b"T" | b"UT" => block_events::note::UNPLUG,
        b"S" => block_events::note::SLEEP,
        b"B" => block_events::note::BOUNCE,
        b"m" => block_events::note::MESSAGE,
        [b'Z', ..] => block_events::note::ZONE,
        b"Q" | b"D" | b"C" | b"M" | b"F" | b"R" | b"A" => "",
        b"X" => return None,
        _ => block_events::note::UNKNOWN_ACTION,
    })
}

/// The common shapes of a blkparse event line, parsed straight from bytes.
/// Returns what [`parse_line`] returns for the same line whenever that is a
/// success, and `None` for anything it does not handle (then the general
/// parser decides, and gives the error if there is one).
fn parse_line_fast(line: &[u8]) -> Option<Parsed> {
    let mut sc = Scan::new(line);
    let (device, time, pid) = header_fast(&mut sc)?;
    sc.skip_space();
    let action = sc.word();
    if action.is_empty() || action.len() > 2 || !action.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    sc.skip_space();
    let rwbs = parse_rwbs_bytes(sc.word())?;
    let key = action_note_fast(action)?;
    if !key.is_empty() {
        return Some(Parsed::Note(key));
    }
    sc.skip_space();
    // A priority word, a passthrough or anything unusual: the general parser.
    if !sc
        .bytes
        .get(sc.pos)
        .is_some_and(|&b| b.is_ascii_digit() || b == b'[')
    {
        return None;
    }
    let rest = sc.rest();
    match action {
        b"A" => remap_fast(device, time, pid, rwbs, rest),
        b"C" | b"R" => {
            let (before, inside) = bracket_fast(rest)?;
            let error = error_fast(inside)?;
            let Some(extent) = extent_fast(before, true)? else {
                return Some(Parsed::Note(block_events::note::PASSTHROUGH));
            };
            let kind = if action == b"C" {
                Action::Complete
            } else {
                Action::Requeue
            };
            io_event(device, time, pid, kind, rwbs, Some(extent), error).ok()
        }
        _ => {
            let (before, _) = bracket_fast(rest)?;
            let extent = extent_fast(before, !matches!(action, b"Q" | b"D"))?;
            let kind = match action {
                b"Q" => Action::Queue,
                b"D" => Action::Issue,
                b"M" => Action::BackMerge,
                _ => Action::FrontMerge,
            };
            io_event(device, time, pid, kind, rwbs, extent, 0).ok()
        }
    }
}

/// A remap's `SECTOR + N <- (MAJ,MIN) SECTOR`.
#[inline]
fn remap_fast(
    device: DeviceId,
    time: Nanos,
    pid: Option<u32>,
    rwbs: Rwbs,
    rest: &[u8],
) -> Option<Parsed> {
    let arrow = rest.windows(2).position(|w| w == b"<-")?;
    let extent = extent_fast(rest.get(..arrow)?, true)?;
    let mut from = Scan::new(rest.get(arrow + 2..)?);
    from.skip_space();
    if !from.eat(b'(') {
        return None;
    }
    let major = u32::try_from(from.digits(U32_DIGITS)?).ok()?;
    if !from.eat(b',') {
        return None;
    }
    let minor = u32::try_from(from.digits(U32_DIGITS)?).ok()?;
    if !from.eat(b')') {
        return None;
    }
    from.skip_space();
    let from_sector = from.digits(U64_DIGITS)?;
    from.skip_space();
    if !from.at_end() {
        return None;
    }
    let from_offset = from_sector.checked_mul(512)?;
    match io_event(device, time, pid, Action::Remap, rwbs, extent, 0).ok()? {
        Parsed::Event(e) => Some(Parsed::Remap(
            e,
            DeviceId { major, minor },
            Bytes(from_offset),
        )),
        other => Some(other),
    }
}

/// Whether a line belongs to blkparse's closing summary or its banner lines.
fn is_summary_line(t: &str) -> bool {
    const STARTS: [&str; 20] = [
        "Total (",
        "Throughput",
        "Events (",
        "Skips:",
        "Reads ",
        "Writes ",
        "Read ",
        "Write ",
        "IO unplugs",
        "Timer unplugs",
        "PC ",
        "Input file",
        "Trace started",
        "Allocation wait",
        "Dispatch wait",
        "Completion wait",
        "Read depth",
        "Write depth",
        "Unknown action",
        "Q2C",
    ];
    if let Some(cpu) = t.strip_prefix("CPU") {
        return cpu.starts_with(|c: char| c.is_ascii_digit());
    }
    STARTS.iter().any(|s| t.starts_with(s))
}

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "blkparse",
    aliases: &[],
    about: "blkparse text output (`8,0 3 1 0.000000000 697 Q W 223490 + 8 [comm]`)",
    looks_like,
    reader: Reader::Text(parse),
    example: "  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kjournald]\n  8,0    3        2     0.000001000   697  D  WS 223490 + 8 [kjournald]\n  8,0    3        3     0.000101000     0  C  WS 223490 + 8 [0]\n",
};

/// Whether `head` (the first bytes of an input) looks like blkparse output: its
/// first event line parses.
pub fn looks_like(head: &[u8]) -> bool {
    let mut checked = 0;
    for line in head_lines(head, 8) {
        let Ok(text) = std::str::from_utf8(line) else {
            return false;
        };
        let t = text.trim();
        // blkparse's banner, and comment lines (a `#Maj,Mn CPU ...` column
        // header written above the events by some tools).
        if t.starts_with("Input file") || t.starts_with('#') {
            continue;
        }
        checked += 1;
        if parse_header(t).is_ok() {
            return true;
        }
        if checked >= 1 {
            return false;
        }
    }
    false
}

/// An ASCII line trimmed as `str::trim` trims it (its whitespace includes the
/// vertical tab, which `trim_ascii` keeps).
fn trim_ascii_line(line: &[u8]) -> &[u8] {
    let space = |b: &u8| b.is_ascii_whitespace() || *b == 0x0B;
    let start = line.iter().position(|b| !space(b)).unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !space(b))
        .map_or(start, |e| e + 1);
    line.get(start..end).unwrap_or(&[])
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let mut reader = LineReader::new(input, file);
    let mut in_summary = false;
    while let Some(line) = reader.next_line(sink)? {
        // Plain ASCII (nearly every line): trim what `str::trim` would trim
        // and try the fast path before anything else.
        if line.bytes.is_ascii() {
            let t = trim_ascii_line(line.bytes);
            if t.is_empty() {
                continue;
            }
            if let Some(parsed) = parse_line_fast(t) {
                deliver(parsed, Location::line(file, line.number), sink)?;
                continue;
            }
        }
        let Ok(text) = std::str::from_utf8(line.bytes) else {
            let reason = bad(BadInputKind::NotText, "not UTF-8 text");
            report_bad(sink, file, line.number, line.bytes, &reason)?;
            continue;
        };
        let t = text.trim();
        if t.is_empty() {
            continue;
        }
        let at = Location::line(file, line.number);
        match parse_line(t) {
            Ok(parsed) => deliver(parsed, at, sink)?,
            Err(_) if in_summary || is_summary_line(t) => {
                in_summary = true;
                sink.note(note::SUMMARY);
            }
            Err(reason) => sink.bad_input(at, text, &reason)?,
        }
    }
    reader.report_if_empty(sink, "blkparse")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::BlockEvent;
    use crate::formats::block_events::*;
    use trace_format::{Flags, Op};
    use crate::normalize::{NormaliseOptions, Normaliser};
    use trace_format::IoRecord;

    fn ev(line: &str) -> BlockEvent {
        match parse_line(line) {
            Ok(Parsed::Event(e)) => e,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn rwbs_strings() {
        let r = |s| parse_rwbs(s).unwrap();
        assert_eq!(r("R").op, RwbsOp::Read);
        assert_eq!(r("WS").flags, Flags::SYNC);
        assert_eq!(r("FWFSM").op, RwbsOp::Write);
        assert_eq!(
            r("FWFSM").flags,
            Flags::PREFLUSH | Flags::FUA | Flags::SYNC | Flags::META
        );
        assert_eq!(r("FN").op, RwbsOp::None);
        assert_eq!(r("FN").flags, Flags::PREFLUSH);
        assert_eq!(r("F").op, RwbsOp::Flush);
        assert_eq!(r("FF").op, RwbsOp::Flush);
        assert_eq!(r("DE").op, RwbsOp::Discard);
        assert_eq!(r("RA").op, RwbsOp::Read);
        // Combinations real blkparse output holds (fill_rwbs order: preflush,
        // op, FUA, read-ahead, sync, meta).
        assert_eq!(r("RM").flags, Flags::META);
        assert_eq!(r("RAS").flags, Flags::SYNC);
        assert_eq!(r("WSM").flags, Flags::SYNC | Flags::META);
        assert_eq!(r("FWS").flags, Flags::PREFLUSH | Flags::SYNC);
        assert_eq!(r("FWS").op, RwbsOp::Write);
        assert_eq!(r("N").op, RwbsOp::None);
        assert_eq!(r("WBS").flags, Flags::PREFLUSH | Flags::SYNC);
        assert_eq!(r("WZ").op, RwbsOp::WriteZeroes);
        assert_eq!(r("ZR").op, RwbsOp::ZoneReset);
        assert!(parse_rwbs("").is_none());
        assert!(parse_rwbs("X").is_none());
        assert!(parse_rwbs("WQ").is_none());
    }

    #[test]
    fn event_lines() {
        let e = ev("  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [comm]");
        assert_eq!(e.device, DeviceId { major: 8, minor: 0 });
        assert_eq!(e.action, Action::Queue);
        assert_eq!((e.op, e.flags), (Op::Write, Flags::SYNC));
        assert_eq!((e.offset, e.len), (Bytes(223490 * 512), Bytes(4096)));
        assert_eq!(e.pid, Some(697));

        let e = ev("  8,16   5        6     1.000031865 18615  D   R 1444645666 + 256 [java]");
        assert_eq!(e.time, Nanos(1_000_031_865));
        assert_eq!(
            (e.action, e.op, e.len),
            (Action::Issue, Op::Read, Bytes(131072))
        );

        let e = ev("  8,16   2    1   9.1  0  C   W 3428327186 + 8 [0]");
        assert_eq!((e.action, e.error), (Action::Complete, 0));
        let e = ev("  8,16   2    1   9.1  0  C   W 3428327186 + 8 [-5]");
        assert_eq!(e.error, -5);
        let e = ev("  8,16   2    1   9.1  0  C   W 3428327186 + 8 (  123456) [0]");
        assert_eq!(e.offset, Bytes(3428327186 * 512));

        // Flushes: no sector on the issue, sector 0 on the completion.
        let e = ev("  8,0 1 5 0.000040389 226 D  FWS [jbd2/sda1-8]");
        assert_eq!(
            (e.op, e.offset, e.len, e.flags),
            (Op::Flush, Bytes(0), Bytes(0), Flags::SYNC)
        );
        let e = ev("  8,0 1 6 0.000456012 0 C  FWS 0 [0]");
        assert_eq!((e.action, e.op), (Action::Complete, Op::Flush));
        let e = ev("  8,0 1 6 0.000456012 0 D  FN [kworker/0:1H]");
        assert_eq!(e.op, Op::Flush);
        // A write with preflush and FUA is a write.
        let e = ev("  8,0 1 6 0.000456012 9 D  FWFS 100 + 8 [jbd2]");
        assert_eq!(e.op, Op::Write);
        assert_eq!(e.flags, Flags::PREFLUSH | Flags::FUA | Flags::SYNC);

        let Ok(Parsed::Remap(e, from, off)) =
            parse_line("  8,16   5        1     0.000000000 18615  A   R 1444645666 + 256 <- (8,17) 1444645632")
        else {
            panic!("remap")
        };
        assert_eq!(e.action, Action::Remap);
        assert_eq!(
            from,
            DeviceId {
                major: 8,
                minor: 17
            }
        );
        assert_eq!(off, Bytes(1444645632 * 512));

        let e = ev("  8,0 0 3 0.5 12 X R 100 / 108 [dd]");
        assert_eq!((e.action, e.len), (Action::Split, Bytes(8 * 512)));
        // Comm names with spaces.
        let e = ev("  8,0 0 3 0.5 12 Q R 100 + 8 [Web Content]");
        assert_eq!(e.offset, Bytes(51200));
    }

    #[test]
    fn lines_that_are_no_io() {
        let n = |l: &str| match parse_line(l) {
            Ok(Parsed::Note(k)) => k,
            other => panic!("{l}: {other:?}"),
        };
        assert_eq!(
            n("  8,33   4        1     0.000000000  3922  D   N 0 (00 ..) [kworker/u65:0]"),
            block_events::note::PASSTHROUGH
        );
        assert_eq!(
            n("  8,33   4        1     0.000000000  3922  D   R 512 (12 00 ..) [sg_inq]"),
            block_events::note::PASSTHROUGH
        );
        assert_eq!(
            n("  8,33   4        2     0.000100000     0  C   N (00 ..) [0]"),
            block_events::note::PASSTHROUGH
        );
        assert_eq!(
            n("  8,16   5        0     0.000012990     0  m   N cfq18615S / insert_request"),
            block_events::note::MESSAGE
        );
        assert_eq!(
            n("  8,16   5        4     0.000008750 18615  P   N [java]"),
            block_events::note::PLUG
        );
        assert_eq!(
            n("  8,16   5        7     0.000046560 18615  U   N [java] 1"),
            block_events::note::UNPLUG
        );
        assert_eq!(
            n("  8,16   5        3     0.000006438 18615  G   R 1444645666 + 256 [java]"),
            block_events::note::GETRQ
        );
    }

    #[test]
    fn bad_lines_say_why() {
        use crate::error::BadInputKind as K;
        let e = |l: &str| parse_line(l).unwrap_err();
        let kind = |l: &str| e(l).kind;
        assert_eq!(
            kind("  8,0    3        1     0.000000000   697  Q  WS 223490 +"),
            K::Truncated
        );
        assert_eq!(
            kind("  8,0    3        1     0.000000000   697  Q  WS 223490 + 8"),
            K::Truncated
        );
        assert_eq!(kind("  8,0    3        1"), K::Truncated);
        assert!(e("hello world").message.contains("MAJ,MIN"));
        assert_eq!(kind("  8,0 3 1 0.5 697 Q WS -5 + 8 [x]"), K::Negative);
        // Which field is negative is in the message.
        assert!(e("  8,0 3 1 0.5 697 Q WS 5 + -8 [x]")
            .message
            .contains("negative sector count"));
        assert_eq!(kind("  8,0 3 1 -0.5 697 Q WS 5 + 8 [x]"), K::Negative);
        assert_eq!(
            kind("  8,0 3 1 0.5 697 Q WS 99999999999999999999 + 8 [x]"),
            K::OutOfRange
        );
        assert_eq!(
            kind("  8,0 3 1 0.5 697 Q WS 36028797018963968 + 8 [x]"),
            K::OutOfRange
        );
        assert_eq!(kind("  8,0 3 1 0.5 697 Q QQ 5 + 8 [x]"), K::UnknownOp);
    }

    /// Lines of every shape the fast path handles, and some it leaves alone.
    const SHAPES: [&str; 16] = [
        "259,0    0        1     0.000000000 21279  A  RA 2348060440 + 8 <- (259,3) 2345510680",
        "259,0    0        2     0.000000184 21279  Q  RA 2348060440 + 8 [(null)]",
        "259,0    0        3     0.000000949 21279  G  RA 2348060440 + 8 [(null)]",
        "259,0    0        4     0.000001100 21279  P   N [(null)]",
        "259,0    0        5     0.000001290 21279  U   N [(null)] 1",
        "  8,16   5        6     1.000031865 18615  D   R 1444645666 + 256 [java]",
        "  8,16   2    1   9.1  0  C   W 3428327186 + 8 [-5]",
        "  8,0 1 5 0.000040389 226 D  FWS [jbd2/sda1-8]",
        "  8,0 1 6 0.000456012 0 C  FWS 0 [0]",
        "  8,0 1 6 0.000456012 9 D  FWFS 100 + 8 [jbd2]",
        "  8,0 0 3 0.5 12 M WS 100 + 8 [Web Content]",
        "  8,0 0 3 0.5 12 F DE 100 + 8 [x]",
        "  8,0 0 3 0.5 12 R W 100 + 8 [0]",
        "  8,16   5        0     0.000012990     0  m   N cfq18615S / insert_request",
        "  8,33   4        2     0.000100000     0  C   N (00 ..) [0]",
        "  8,0 0 3 0.5 12 X R 100 / 108 [dd]",
    ];

    #[test]
    fn fast_path_takes_the_common_lines() {
        for line in &SHAPES[..13] {
            let fast = parse_line_fast(line.as_bytes());
            assert!(fast.is_some(), "{line}");
            assert_eq!(fast, parse_line(line).ok(), "{line}");
        }
    }

    /// The fast path either declines a line or agrees with the general parser,
    /// on the shapes above mutated at random (bytes replaced, inserted, removed).
    #[test]
    fn fast_path_agrees_with_general_parser() {
        const ALPHABET: &[u8] = b" \t0123456789+-.,()[]<>/ANRWDFSMQCGPUXZEm\x0b";
        let mut rng = trace_format::rng::WyRand::new(0x9E37_79B9_7F4A_7C15);
        let mut next = move |n: usize| rng.below(n);
        let mut taken = 0;
        for _ in 0..200_000 {
            let mut line = SHAPES[next(SHAPES.len())].as_bytes().to_vec();
            for _ in 0..1 + next(3) {
                let at = next(line.len() + 1);
                let b = ALPHABET[next(ALPHABET.len())];
                match next(3) {
                    0 if at < line.len() => line[at] = b,
                    1 => line.insert(at, b),
                    _ if at < line.len() => {
                        line.remove(at);
                    }
                    _ => {}
                }
            }
            let text = std::str::from_utf8(&line).unwrap().trim();
            if let Some(fast) = parse_line_fast(text.as_bytes()) {
                taken += 1;
                assert_eq!(Ok(fast), parse_line(text), "{text:?}");
            }
        }
        assert!(taken > 10_000, "the fast path took only {taken} lines");
    }

    fn convert(
        text: &[u8],
        skip_bad: bool,
    ) -> Result<(Vec<IoRecord>, crate::normalize::NormaliseOutcome), ConvertError> {
        let mut out = Vec::new();
        let outcome = {
            let opts = NormaliseOptions {
                skip_bad,
                ..Default::default()
            };
            let mut n = Normaliser::new(opts, &mut out);
            let mut input = text;
            parse(&mut input, "x.txt", &mut n)?;
            n.finish()?
        };
        Ok((out, outcome))
    }

    const SAMPLE: &str = "\
  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kworker]
  8,0    3        2     0.000001000   697  G  WS 223490 + 8 [kworker]
  8,0    3        3     0.000002000   697  D  WS 223490 + 8 [kworker]
  8,0    3        4     0.000003000   697  D  FWS [kworker]
  8,0    3        5     0.000100000     0  C  WS 223490 + 8 [0]
  8,0    3        6     0.000200000     0  C  FWS 0 [0]
  8,0    3        0     0.000210000     0  m   N cfq697 / complete
CPU3 (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB
Total (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB

Throughput (R/W): 0KiB/s / 0KiB/s
Events (8,0): 6 entries
Skips: 0 forward (0 -   0.0%)
";

    #[test]
    fn whole_file_with_summary() {
        let (recs, o) = convert(SAMPLE.as_bytes(), false).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            (recs[0].op, recs[0].latency),
            (Op::Write, Some(Nanos(98_000)))
        );
        assert_eq!(
            (recs[1].op, recs[1].latency),
            (Op::Flush, Some(Nanos(197_000)))
        );
        let notes: std::collections::HashMap<_, _> = o.tail.notes.iter().cloned().collect();
        assert_eq!(notes.get(super::note::SUMMARY), Some(&7));
        assert_eq!(notes.get(block_events::note::MESSAGE), Some(&1));
        assert_eq!(notes.get(block_events::note::GETRQ), Some(&1));
    }

    #[test]
    fn bad_input_classes_name_file_and_line() {
        let cases: [(&[u8], &str, &str); 5] = [
            (b"  8,0 3 1 0.0 697 D R 8 + 8 [a]\n  8,0 3 2 0.1 697 D R 8 +", "x.txt:2:", "truncated"),
            (b"  8,0 3 1 0.0 697 D R 8 + 8 [a]\n\x00\x01garbage\xff\n", "x.txt:2:", "UTF-8"),
            (b"  8,0 3 1 0.0 697 D R 8 + 8 [a]\nthis is not blkparse\n", "x.txt:2:", "MAJ,MIN"),
            (b"  8,0 3 1 0.0 697 D R 8 + 8 [a]\n  8,0 3 1 0.0 697 D R 18014398509481984 + 8 [a]\n", "x.txt:2:", "past 2^63"),
            (b"  8,0 3 1 9.0 697 D R 8 + 8 [a]\n  8,0 3 1 1.0 697 D R 8 + 8 [a]\n", "x.txt:2:", "backwards"),
        ];
        for (text, loc, why) in cases {
            let err = convert(text, false).unwrap_err().to_string();
            assert!(err.starts_with(loc) && err.contains(why), "{err}");
            let (recs, o) = convert(text, true).unwrap();
            assert_eq!(recs.len(), 1);
            assert_eq!(o.tail.skipped.count, 1);
            assert!(o.tail.skipped.examples[0].location.starts_with("x.txt:2"));
        }
        let err = convert(b"", false).unwrap_err().to_string();
        assert!(err.contains("x.txt:1") && err.contains("empty"), "{err}");
        let err = convert(b"\n\n", false).unwrap_err().to_string();
        assert!(err.contains("empty"), "{err}");
    }

    /// The issue's case in blkparse text: a read is requeued, its re-dispatch
    /// is missing, and a 16 KiB write follows at the same sector. The write
    /// stays a write with its own latency; the read's completion ends the
    /// requeue.
    #[test]
    fn requeued_read_does_not_take_a_later_write_at_its_sector() {
        let text = b"\
  8,0    1        1     0.000000000   100  D   R 2048 + 8 [app]
  8,0    1        2     0.000010000     0  R   R 2048 + 8 [0]
  8,0    1        3     0.000100000   200  Q   W 2048 + 32 [writer]
  8,0    1        4     0.000110000   200  D   W 2048 + 32 [writer]
  8,0    1        5     0.000300000     0  C   W 2048 + 32 [0]
  8,0    1        6     0.000500000     0  C   R 2048 + 8 [0]
";
        let (recs, o) = convert(text, false).unwrap();
        let got: Vec<_> = recs
            .iter()
            .map(|r| (r.op, r.offset.0, r.len.0, r.latency))
            .collect();
        assert_eq!(
            got,
            vec![
                (Op::Read, 2048 * 512, 4096, Some(Nanos(500_000))),
                (Op::Write, 2048 * 512, 16384, Some(Nanos(190_000))),
            ]
        );
        let notes: std::collections::HashMap<_, _> = o.tail.notes.iter().cloned().collect();
        assert_eq!(notes.get(crate::normalize::note::REISSUE), None);
        assert_eq!(notes.get(crate::normalize::note::REQUEUE_COMPLETED), Some(&1));
    }

    /// One line with a bogus time (1,266,874,889 s) among good lines: that
    /// line is named without --skip-bad, and skipped with it, keeping every
    /// good line after it.
    #[test]
    fn one_bogus_time_is_the_bad_line() {
        let mut text = String::new();
        for i in 0..40u64 {
            if i == 10 {
                text.push_str("  8,0 1 99 1266874889.000000000 5 D W 77 + 8 [x]\n");
            }
            let t = 100.0 + i as f64 * 0.01;
            text.push_str(&format!("  8,0 1 {i} {t:.9} 5 D R {} + 8 [x]\n", i * 8));
            text.push_str(&format!("  8,0 1 {i} {:.9} 0 C R {} + 8 [0]\n", t + 0.001, i * 8));
        }
        let err = convert(text.as_bytes(), false).unwrap_err().to_string();
        assert!(err.starts_with("x.txt:21: time jumps ahead"), "{err}");
        let (recs, o) = convert(text.as_bytes(), true).unwrap();
        assert_eq!(recs.len(), 40);
        assert!(recs.iter().all(|r| r.latency == Some(Nanos(1_000_000))));
        assert_eq!(o.tail.skipped.count, 1);
        assert_eq!(o.tail.skipped.examples[0].location, "x.txt:21");
    }

    /// `#` lines (a column header above the events) are detected as
    /// blkparse, skipped and counted, with line numbers kept.
    #[test]
    fn comment_lines_are_skipped() {
        let text = format!("#Maj,Mn CPU  Seq  Time  PID Act RWBS\n# from host x\n{SAMPLE}");
        assert!(looks_like(text.as_bytes()));
        let (recs, o) = convert(text.as_bytes(), false).unwrap();
        assert_eq!(recs.len(), 2);
        let notes: std::collections::HashMap<_, _> = o.tail.notes.iter().cloned().collect();
        assert_eq!(notes.get(super::note::COMMENT), Some(&2));
        let bad = format!("# header\n{}", "  8,0 3 1 0.5 697 Q WS 5 + -8 [x]\n");
        let err = convert(bad.as_bytes(), false).unwrap_err().to_string();
        assert!(err.starts_with("x.txt:2:"), "{err}");
    }

    #[test]
    fn detects_itself_only() {
        assert!(looks_like(SAMPLE.as_bytes()));
        assert!(looks_like(
            b"Input file sda.blktrace.0 added\n  8,0 0 1 0.0 1 Q R 0 + 8 [a]\n"
        ));
        assert!(!looks_like(
            b"128166372003061629,hm,1,Read,3154152960,32768,2736\n"
        ));
        assert!(!looks_like(
            b"  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]\n"
        ));
        assert!(!looks_like(b""));
    }
}
