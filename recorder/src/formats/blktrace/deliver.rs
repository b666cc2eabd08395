//! What a decoded record becomes: an I/O event, a note, or the wall clock.

use super::record::*;
use crate::error::{bad, BadInputKind, ConvertError};
use crate::event::{Action, BlockEvent, Location};
use crate::sink::Sink;
use trace_format::{Bytes, Flags, Nanos, Op};

/// Note keys reported for records that are understood but are no I/O.
pub mod note {
    pub const PROCESS: &str = "blktrace notify: process name";
    pub const TIMESTAMP: &str = "blktrace notify: wall-clock timestamp";
    pub const MESSAGE: &str = "blktrace notify: message";
    pub const NOTIFY_OTHER: &str = "blktrace notify: other";
    pub const PASSTHROUGH: &str = "blktrace passthrough (pc) record";
    pub const DRIVER_DATA: &str = "blktrace driver data";
}

/// The operation and flags a record's categories describe. A record without
/// data that is not a discard is a flush: the kernel logs a cache flush as
/// `FWS` with no data when queued, `FN` when issued, and completes the
/// originating bio as a zero-byte `WS` (or `NS` on older kernels) without the
/// flush bit.
pub fn op_and_flags(categories: u64, bytes: u32) -> (Op, Flags) {
    let has = |bit: u64| categories & bit != 0;
    let op = if has(category::DISCARD) {
        Op::Discard
    } else if bytes == 0 {
        Op::Flush
    } else if has(category::WRITE_ZEROES) {
        Op::WriteZeroes
    } else if has(category::WRITE) {
        Op::Write
    } else {
        Op::Read
    };
    let mut flags = Flags::NONE;
    for (bit, flag) in [
        (category::SYNC, Flags::SYNC),
        (category::FUA, Flags::FUA),
        (category::META, Flags::META),
    ] {
        if has(bit) {
            flags |= flag;
        }
    }
    if has(category::FLUSH) && op != Op::Flush {
        flags |= Flags::PREFLUSH;
    }
    (op, flags)
}

/// The event kind of an action code, `None` for codes no kernel writes.
pub fn action_of(code: u16) -> Option<Action> {
    Some(match code {
        action::QUEUE => Action::Queue,
        action::BACKMERGE => Action::BackMerge,
        action::FRONTMERGE => Action::FrontMerge,
        action::REQUEUE => Action::Requeue,
        action::ISSUE => Action::Issue,
        action::COMPLETE => Action::Complete,
        action::REMAP => Action::Remap,
        action::SPLIT => Action::Split,
        0 | 0x100.. => return None,
        _ => Action::Other,
    })
}

/// Reports one record to `sink`: an I/O event, a note, or the wall clock.
pub fn deliver(
    rec: &RawRecord,
    pdu: &[u8],
    at: Location<'_>,
    sink: &mut dyn Sink,
) -> Result<(), ConvertError> {
    let cats = rec.categories();
    let code = rec.action_code();
    // With the cgroup flag, the payload starts with the 8-byte cgroup id.
    let payload = if rec.has_cgroup() {
        pdu.get(8..).unwrap_or(&[])
    } else {
        pdu
    };
    if cats & category::NOTIFY != 0 {
        match code {
            action::NOTIFY_PROCESS => sink.note(note::PROCESS),
            action::NOTIFY_TIMESTAMP => {
                sink.note(note::TIMESTAMP);
                if let Some(unix_ns) = wall_clock_of(rec, payload) {
                    sink.wall_clock(unix_ns);
                }
            }
            action::NOTIFY_MESSAGE => sink.note(note::MESSAGE),
            _ => sink.note(note::NOTIFY_OTHER),
        }
        return Ok(());
    }
    if cats & category::PC != 0 {
        sink.note(note::PASSTHROUGH);
        return Ok(());
    }
    if cats & category::DRV_DATA != 0 || code == action::DRV_DATA {
        sink.note(note::DRIVER_DATA);
        return Ok(());
    }
    let Some(kind) = action_of(code) else {
        let header = encode_for_dump(rec);
        return sink.bad_input(
            at,
            &hex_dump(&header),
            &bad(BadInputKind::UnknownOp, format!("unknown action code {code:#x}")),
        );
    };
    let Some(offset) = rec.sector.checked_mul(512) else {
        let header = encode_for_dump(rec);
        return sink.bad_input(
            at,
            &hex_dump(&header),
            &bad(BadInputKind::OutOfRange, format!("sector {} is past the end of any device", rec.sector)),
        );
    };
    let (op, flags) = op_and_flags(cats, rec.bytes);
    sink.event(
        at,
        BlockEvent {
            time: Nanos(rec.time),
            device: rec.device_id(),
            action: kind,
            op,
            flags,
            offset: Bytes(offset),
            len: Bytes(u64::from(rec.bytes)),
            pid: Some(rec.pid),
            error: i32::from(rec.error as i16),
        },
    )
}

/// Unix ns at source time zero from a timestamp notify (`u32 seconds, u32
/// nanoseconds` in the record's byte order, taken at the record's time).
pub(super) fn wall_clock_of(rec: &RawRecord, payload: &[u8]) -> Option<i64> {
    let f = Fields {
        bytes: payload.get(..8)?,
        order: rec.byte_order,
    };
    let secs = i64::from(f.u32_at(0));
    let nanos = i64::from(f.u32_at(4));
    let wall = secs.checked_mul(1_000_000_000)?.checked_add(nanos)?;
    wall.checked_sub(i64::try_from(rec.time).ok()?)
}

