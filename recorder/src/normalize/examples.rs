//! How a skipped input is shown in the trace's examples: short, without
//! control characters.

use super::*;

/// At most [`EXAMPLE_CHARS`] characters of `s`, without control characters.
pub(super) fn shorten(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(EXAMPLE_CHARS)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.chars().nth(EXAMPLE_CHARS).is_some() {
        out.push('…');
    }
    out
}

pub(super) fn describe_event(e: &BlockEvent) -> String {
    format!(
        "{:?} {} {} at byte {} length {} on {} at source time {}",
        e.action,
        e.op,
        e.flags.names(),
        e.offset.0,
        e.len.0,
        e.device,
        e.time
    )
}

pub(super) fn describe_io(io: &SourceIo) -> String {
    format!(
        "{} {} at byte {} length {} on {} at source time {}",
        io.op,
        io.flags.names(),
        io.offset.0,
        io.len.0,
        io.device,
        io.time
    )
}
