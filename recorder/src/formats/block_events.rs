//! The block-layer event vocabulary shared by the sources that log the life of
//! a request: blkparse text, the ftrace `blk` tracer's text, tracefs
//! `block_rq_*` lines and the ring-buffer decoder of live capture. RWBS
//! strings, what one event amounts to ([`Parsed`]), the note keys for events
//! that make no I/O, and the parser of the action part that blkparse and the
//! blk tracer print alike.

use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Action, BlockEvent, Location};
use crate::formats::line_input::{parse_fixed, sectors_to_bytes, NumberStyle};
use crate::sink::Sink;
use trace_format::{Bytes, DeviceId, Flags, Nanos, Op};

/// Note keys of block-layer event sources (blkparse, the blk tracer text, tracefs
/// lines, the ring buffer).
pub mod note {
    pub const MESSAGE: &str = "scheduler messages (m)";
    pub const PASSTHROUGH: &str = "passthrough requests (not replayed)";
    pub const ZONE_RESET: &str = "zone reset requests (not replayed)";
    pub const NO_OP_WITH_DATA: &str = "requests with no operation (N) carrying data (not replayed)";
    pub const GETRQ: &str = "unused events: get request (G)";
    pub const INSERT: &str = "unused events: insert (I)";
    pub const PLUG: &str = "unused events: plug (P)";
    pub const UNPLUG: &str = "unused events: unplug (U/T)";
    pub const SLEEP: &str = "unused events: sleep (S)";
    pub const BOUNCE: &str = "unused events: bounce (B)";
    pub const ZONE: &str = "unused events: zone plug/unplug (Z)";
    pub const UNKNOWN_ACTION: &str = "unused events: unknown action";
}

/// The operation an RWBS string names, before the length is considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwbsOp {
    Read,
    Write,
    Discard,
    /// `F` as the operation (REQ_OP_FLUSH in kernel text).
    Flush,
    /// `WZ` (write-zeroes in blktrace's extended `fill_rwbs`).
    WriteZeroes,
    /// `ZR` (zone reset).
    ZoneReset,
    /// `N`: none of the above (blkparse: no data; kernel text: another op).
    None,
}

/// An RWBS string (`R`, `WS`, `FWFSM`, `DE`, ...) decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rwbs {
    pub op: RwbsOp,
    /// SYNC, FUA, META and PREFLUSH (a leading `F`, or `B`, the barrier of old
    /// kernels); `A` (read-ahead) and `E` (secure erase) carry no flag.
    pub flags: Flags,
}

/// Decodes an RWBS string; `None` when it is not one.
pub fn parse_rwbs(s: &str) -> Option<Rwbs> {
    parse_rwbs_bytes(s.as_bytes())
}

/// [`parse_rwbs`] on bytes.
pub(crate) fn parse_rwbs_bytes(b: &[u8]) -> Option<Rwbs> {
    let mut i = 0;
    let mut flags = Flags::NONE;
    // A leading F is a preflush when another operation letter follows.
    if b.len() >= 2 && b[0] == b'F' && matches!(b[1], b'W' | b'D' | b'R' | b'N' | b'F' | b'Z') {
        flags |= Flags::PREFLUSH;
        i = 1;
    }
    let op = match (b.get(i), b.get(i + 1)) {
        (Some(b'W'), Some(b'Z')) => {
            i += 2;
            RwbsOp::WriteZeroes
        }
        (Some(b'Z'), Some(b'R')) => {
            i += 2;
            RwbsOp::ZoneReset
        }
        (Some(b'W'), _) => {
            i += 1;
            RwbsOp::Write
        }
        (Some(b'R'), _) => {
            i += 1;
            RwbsOp::Read
        }
        (Some(b'D'), next) => {
            i += if next == Some(&b'E') { 2 } else { 1 };
            RwbsOp::Discard
        }
        (Some(b'F'), _) => {
            i += 1;
            RwbsOp::Flush
        }
        (Some(b'N'), _) => {
            i += 1;
            RwbsOp::None
        }
        _ => return None,
    };
    for &c in b.get(i..)? {
        match c {
            b'F' => flags |= Flags::FUA,
            b'S' => flags |= Flags::SYNC,
            b'M' => flags |= Flags::META,
            b'B' => flags |= Flags::PREFLUSH,
            b'A' => {}
            _ => return None,
        }
    }
    Some(Rwbs { op, flags })
}

/// What one event line amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    Event(BlockEvent),
    /// A remap: the event on the destination device, the source device and offset.
    Remap(BlockEvent, DeviceId, Bytes),
    /// Understood, no I/O: counted under this key.
    Note(&'static str),
}

/// Reports a parsed line to `sink`.
pub fn deliver(parsed: Parsed, at: Location<'_>, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    match parsed {
        Parsed::Event(e) => sink.event(at, e),
        Parsed::Remap(e, from, off) => sink.remap(at, e, from, off),
        Parsed::Note(key) => {
            sink.note(key);
            Ok(())
        }
    }
}

/// Splits off the first whitespace-separated token.
pub(crate) fn token(s: &str) -> Option<(&str, &str)> {
    let bytes = s.as_bytes();
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let end = bytes[start..]
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .map_or(bytes.len(), |p| start + p);
    // Both ends are at ASCII bytes (or the end), so on char boundaries.
    Some((s.get(start..end)?, s.get(end..)?))
}

/// `MAJ,MIN`.
pub(crate) fn parse_device(s: &str) -> Option<DeviceId> {
    let (a, b) = s.split_once(',')?;
    if a.is_empty() || b.is_empty() {
        return None;
    }
    Some(DeviceId {
        major: a.parse().ok()?,
        minor: b.parse().ok()?,
    })
}

/// `SECONDS.FRACTION` (up to nanoseconds) as nanoseconds.
pub(crate) fn parse_seconds(s: &str) -> Result<Nanos, BadReason> {
    if !s.contains('.') {
        return Err(bad(
            BadInputKind::NotANumber,
            format!("time `{s}` is not in seconds with a fraction"),
        ));
    }
    let ns = parse_fixed(s.as_bytes(), "time", 9, NumberStyle::PLAIN)?;
    if ns >= 1 << 62 {
        return Err(bad(BadInputKind::OutOfRange, format!("absurd time `{s}`")));
    }
    Ok(Nanos(ns))
}

pub(crate) fn parse_number<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, BadReason> {
    if s.starts_with('-') {
        return Err(bad(
            BadInputKind::Negative,
            format!("negative {what} `{s}`"),
        ));
    }
    s.parse().map_err(|_| {
        // All digits and still unreadable: too large for its type.
        let kind = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            BadInputKind::OutOfRange
        } else {
            BadInputKind::NotANumber
        };
        bad(kind, format!("{what} `{s}` is not a number (or too large)"))
    })
}

/// The numbers of an event's rest, before the bracket: `SECTOR`, `SECTOR + N`,
/// or `BYTES` / nothing (passthrough), with parenthesised parts removed.
struct Extent {
    /// `(sector, sectors)`; sectors 0 when only the sector was printed.
    sector: Option<(u64, u64)>,
    /// A lone number without `+` before the bracket (passthrough byte count).
    lone_number: bool,
}

fn parse_extent(before: &str, lone_is_bytes: bool) -> Result<Extent, BadReason> {
    let stripped;
    let text = if before.contains(['(', ')']) {
        let mut kept = String::with_capacity(before.len());
        let mut depth = 0usize;
        for c in before.chars() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| bad(BadInputKind::Syntax, "unbalanced `)`"))?
                }
                _ if depth == 0 => kept.push(c),
                _ => {}
            }
        }
        if depth != 0 {
            return Err(bad(BadInputKind::Syntax, "unbalanced `(`"));
        }
        stripped = kept;
        stripped.as_str()
    } else {
        before
    };
    let mut words = text.split_ascii_whitespace();
    let mut parts: [&str; 4] = [""; 4];
    let mut count = 0;
    for w in words.by_ref() {
        if let Some(slot) = parts.get_mut(count) {
            *slot = w;
        }
        count += 1;
    }
    match parts.get(..count.min(4)).unwrap_or(&[]) {
        [] => Ok(Extent {
            sector: None,
            lone_number: false,
        }),
        [n] if lone_is_bytes => {
            let _: u64 = parse_number(n, "byte count")?;
            Ok(Extent {
                sector: None,
                lone_number: true,
            })
        }
        [s] => Ok(Extent {
            sector: Some((parse_number(s, "sector")?, 0)),
            lone_number: false,
        }),
        [s, "+", n] => Ok(Extent {
            sector: Some((parse_number(s, "sector")?, parse_number(n, "sector count")?)),
            lone_number: false,
        }),
        [_, "+"] => Err(bad(
            BadInputKind::Truncated,
            "truncated line: sector count missing after `+`",
        )),
        _ => Err(bad(
            BadInputKind::Syntax,
            format!("cannot read `{}` as SECTOR + COUNT", text.trim()),
        )),
    }
}

/// Splits `rest` at its bracketed part: `(before, inside, after)`.
fn bracket(rest: &str) -> Result<(&str, &str, &str), BadReason> {
    let open = rest.find('[').ok_or_else(|| {
        bad(
            BadInputKind::Truncated,
            "truncated line: missing `[...]` (process name or error)",
        )
    })?;
    let close = rest
        .rfind(']')
        .filter(|&c| c > open)
        .ok_or_else(|| bad(BadInputKind::Truncated, "truncated line: missing `]`"))?;
    Ok((&rest[..open], &rest[open + 1..close], &rest[close + 1..]))
}

/// Builds the event for an I/O action from its RWBS and extent; a note for
/// requests tracemark does not replay.
pub(crate) fn io_event(
    device: DeviceId,
    time: Nanos,
    pid: Option<u32>,
    action: Action,
    rwbs: Rwbs,
    sector: Option<(u64, u64)>,
    error: i32,
) -> Result<Parsed, BadReason> {
    let (sector_no, sectors) = sector.unwrap_or((0, 0));
    let len = sectors.checked_mul(512).ok_or_else(|| {
        bad(
            BadInputKind::OutOfRange,
            format!("sector count {sectors} is absurd"),
        )
    })?;
    let mut flags = rwbs.flags;
    let op = match rwbs.op {
        RwbsOp::Flush => Op::Flush,
        RwbsOp::Write | RwbsOp::None
            if len == 0 && (flags.contains(Flags::PREFLUSH) || flags.contains(Flags::FUA)) =>
        {
            Op::Flush
        }
        // blkparse prints N for a request without data (not passthrough): a flush.
        RwbsOp::None if len == 0 => Op::Flush,
        RwbsOp::None => return Ok(Parsed::Note(note::NO_OP_WITH_DATA)),
        RwbsOp::ZoneReset => return Ok(Parsed::Note(note::ZONE_RESET)),
        RwbsOp::Read => Op::Read,
        RwbsOp::Write => Op::Write,
        RwbsOp::Discard => Op::Discard,
        RwbsOp::WriteZeroes => Op::WriteZeroes,
    };
    let offset = if op == Op::Flush {
        // Flushes have no sector (kernels print 0 or (sector_t)-1).
        flags = Flags::from_bits(flags.bits() & !(Flags::PREFLUSH.bits() | Flags::FUA.bits()))
            .unwrap_or(Flags::NONE);
        Bytes(0)
    } else {
        sectors_to_bytes(sector_no, "sector", "")?
    };
    Ok(Parsed::Event(BlockEvent {
        time,
        device,
        action,
        op,
        flags,
        offset,
        len: if op == Op::Flush {
            Bytes(0)
        } else {
            Bytes(len)
        },
        pid,
        error,
    }))
}

/// Parses the action part of a blkparse or blk-tracer line: the action letters,
/// the RWBS string and what follows them.
pub fn parse_action(
    device: DeviceId,
    time: Nanos,
    pid: Option<u32>,
    action: &str,
    rwbs_text: &str,
    rest: &str,
) -> Result<Parsed, BadReason> {
    let first = action.chars().next().unwrap_or(' ');
    let other = match action {
        "G" => Some(note::GETRQ),
        "I" => Some(note::INSERT),
        "P" => Some(note::PLUG),
        "U" | "T" | "UT" => Some(note::UNPLUG),
        "S" => Some(note::SLEEP),
        "B" => Some(note::BOUNCE),
        "m" => Some(note::MESSAGE),
        _ if first == 'Z' => Some(note::ZONE),
        "Q" | "D" | "C" | "M" | "F" | "R" | "A" | "X" => None,
        _ => Some(note::UNKNOWN_ACTION),
    };
    let rwbs = parse_rwbs(rwbs_text).ok_or_else(|| {
        bad(
            BadInputKind::UnknownOp,
            format!("`{rwbs_text}` is not an RWBS field"),
        )
    })?;
    if let Some(key) = other {
        return Ok(Parsed::Note(key));
    }
    let at = (device, time, pid);
    match action {
        "A" => parse_remap(at, rwbs, rest),
        "X" => parse_split(at, rwbs, rest),
        "C" | "R" => parse_completion(at, action == "C", rwbs, rest),
        _ => parse_request(at, action, rwbs, rest),
    }
}

/// The device, time and PID of an event line.
type At = (DeviceId, Nanos, Option<u32>);

/// A remap's `SECTOR + N <- (MAJ,MIN) SECTOR`.
fn parse_remap((device, time, pid): At, rwbs: Rwbs, rest: &str) -> Result<Parsed, BadReason> {
    let (to_part, from_part) = rest.split_once("<-").ok_or_else(|| {
        bad(
            BadInputKind::Truncated,
            "truncated remap line: missing `<- (MAJ,MIN) SECTOR`",
        )
    })?;
    let extent = parse_extent(to_part, false)?;
    let from_part = from_part.trim();
    let (dev_part, from_sector) = from_part
        .strip_prefix('(')
        .and_then(|s| s.split_once(')'))
        .ok_or_else(|| {
            bad(
                BadInputKind::Syntax,
                "remap source is not `(MAJ,MIN) SECTOR`",
            )
        })?;
    let from_dev = parse_device(dev_part.trim()).ok_or_else(|| {
        bad(
            BadInputKind::Syntax,
            format!("remap source device `{dev_part}` is not MAJ,MIN"),
        )
    })?;
    let from_sector: u64 = parse_number(from_sector.trim(), "remap source sector")?;
    let from_offset = sectors_to_bytes(from_sector, "sector", "")?;
    match io_event(device, time, pid, Action::Remap, rwbs, extent.sector, 0)? {
        Parsed::Event(e) => Ok(Parsed::Remap(e, from_dev, from_offset)),
        other => Ok(other),
    }
}

/// A split's `SECTOR / SECTOR [comm]`.
fn parse_split((device, time, pid): At, rwbs: Rwbs, rest: &str) -> Result<Parsed, BadReason> {
    let (before, _, _) = bracket(rest)?;
    let (a, b) = before
        .split_once('/')
        .ok_or_else(|| bad(BadInputKind::Syntax, "split line is not `SECTOR / SECTOR`"))?;
    let start: u64 = parse_number(a.trim(), "sector")?;
    let split: u64 = parse_number(b.trim(), "split sector")?;
    let sectors = split.saturating_sub(start);
    io_event(
        device,
        time,
        pid,
        Action::Split,
        rwbs,
        Some((start, sectors)),
        0,
    )
}

/// A completion's (or, not `complete`, a requeue's) `SECTOR + N [error]`.
fn parse_completion(
    (device, time, pid): At,
    complete: bool,
    rwbs: Rwbs,
    rest: &str,
) -> Result<Parsed, BadReason> {
    let (before, inside, _) = bracket(rest)?;
    let error: i32 = inside.trim().parse().map_err(|_| {
        bad(
            BadInputKind::NotANumber,
            format!("completion error `{inside}` is not a number"),
        )
    })?;
    let extent = parse_extent(before, false)?;
    if extent.sector.is_none() {
        // `(cdb) [error]` or `[error]`: only passthrough requests
        // complete without a sector.
        return Ok(Parsed::Note(note::PASSTHROUGH));
    }
    let kind = if complete {
        Action::Complete
    } else {
        Action::Requeue
    };
    io_event(device, time, pid, kind, rwbs, extent.sector, error)
}

/// Q, D, M, F: `SECTOR + N [comm]`, `[comm]`, or `BYTES (cdb) [comm]`.
fn parse_request(
    (device, time, pid): At,
    action: &str,
    rwbs: Rwbs,
    rest: &str,
) -> Result<Parsed, BadReason> {
    let (before, _, _) = bracket(rest)?;
    let lone_is_bytes = matches!(action, "Q" | "D");
    let extent = parse_extent(before, lone_is_bytes)?;
    if extent.lone_number {
        return Ok(Parsed::Note(note::PASSTHROUGH));
    }
    let kind = match action {
        "Q" => Action::Queue,
        "D" => Action::Issue,
        "M" => Action::BackMerge,
        _ => Action::FrontMerge,
    };
    io_event(device, time, pid, kind, rwbs, extent.sector, 0)
}
