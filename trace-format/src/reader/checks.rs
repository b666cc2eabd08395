//! What a reader checks beyond the checksums: the index, the summary, each
//! chunk against its index entry, and record device indexes.

use super::{ChunkInfo, Footer};
use crate::error::{FormatError, FormatErrorKind};
use crate::frame::CHUNK_OVERHEAD;
use crate::meta::Summary;
use crate::record::IoRecord;
use crate::units::Nanos;

/// Checks that the index describes contiguous chunks from `data_start` to
/// `data_end` whose record counts add up to the summary.
pub(super) fn check_index(footer: &Footer, data_start: u64, data_end: u64) -> Result<(), String> {
    let mut at = data_start;
    let mut records = 0u64;
    let mut last_time = Nanos::ZERO;
    for (i, c) in footer.chunks.iter().enumerate() {
        if c.offset != at {
            return Err(format!(
                "index entry {i} puts chunk {i} at byte {}, expected {at}",
                c.offset
            ));
        }
        if (c.stored_len as usize) < CHUNK_OVERHEAD || c.first_time < last_time {
            return Err(format!("index entry {i} is implausible"));
        }
        if c.last_time < c.first_time {
            return Err(format!("index entry {i} ends before it starts"));
        }
        last_time = c.last_time;
        at += u64::from(c.stored_len);
        records += u64::from(c.records);
    }
    if at != data_end {
        return Err(format!(
            "the chunks end at byte {at} but the footer starts at {data_end}"
        ));
    }
    if records != footer.summary.ios {
        return Err(format!(
            "the index counts {records} records but the summary {}",
            footer.summary.ios
        ));
    }
    check_summary(&footer.summary, footer.chunks.last().map(|c| c.last_time))
}

/// The checks of the summary that need no record: its counts add up, its
/// times agree with the index, its address span is a span.
fn check_summary(s: &Summary, last_time: Option<Nanos>) -> Result<(), String> {
    let by_op = [s.reads, s.writes, s.flushes, s.discards, s.write_zeroes]
        .iter()
        .try_fold(0u64, |a, &n| a.checked_add(n));
    if by_op != Some(s.ios) {
        return Err(format!(
            "the summary's counts per operation do not add up to its {} I/Os",
            s.ios
        ));
    }
    if s.with_latency > s.ios {
        return Err("the summary counts more latencies than I/Os".into());
    }
    if s.last_issue != last_time.unwrap_or(Nanos::ZERO) {
        return Err(format!(
            "the summary's last issue time ({} ns) is not the last record's ({} ns)",
            s.last_issue.0,
            last_time.unwrap_or(Nanos::ZERO).0
        ));
    }
    if s.duration < s.last_issue {
        return Err(format!(
            "the summary's duration ({} ns) ends before its last issue ({} ns)",
            s.duration.0, s.last_issue.0
        ));
    }
    match (s.min_offset, s.max_end) {
        (None, None) => Ok(()),
        (Some(min), Some(max)) if min <= max && max.0 <= i64::MAX as u64 => Ok(()),
        (Some(min), Some(max)) => Err(format!(
            "the summary's address span is impossible (lowest offset {}, highest end {})",
            min.0, max.0
        )),
        _ => Err("the summary's address span has only one end".into()),
    }
}

pub(super) fn chunk_error(chunk: usize, chunks: usize, reason: impl Into<String>) -> FormatError {
    FormatError::CorruptChunk {
        chunk,
        chunks,
        kind: FormatErrorKind::CorruptChunk,
        reason: reason.into(),
    }
}

/// Checks a decoded chunk against its index entry.
pub(super) fn check_chunk(
    info: &ChunkInfo,
    head_records: u32,
    head_first: Nanos,
    records: &[IoRecord],
) -> Result<(), String> {
    if head_records != info.records || head_first != info.first_time {
        return Err("chunk head disagrees with the index".into());
    }
    match (records.first(), records.last()) {
        (Some(f), Some(l)) if f.time == info.first_time && l.time == info.last_time => Ok(()),
        _ => Err("record times disagree with the index".into()),
    }
}

/// Checks that every record names a device of the table. A trace without a
/// table (a source that names no device) has only device 0.
pub(super) fn check_devices(records: &[IoRecord], table_len: usize) -> Result<(), String> {
    let limit = table_len.max(1);
    match records.iter().position(|r| usize::from(r.device) >= limit) {
        None => Ok(()),
        Some(i) => Err(format!(
            "record {i} of the chunk names device {} but the device table has {table_len} entries",
            records[i].device
        )),
    }
}

fn opt(b: Option<crate::units::Bytes>) -> String {
    b.map_or_else(|| "none".to_string(), |b| b.0.to_string())
}

/// Names the first field where the footer's summary differs from the summary
/// of the records actually read.
pub(super) fn summary_mismatch(stored: &Summary, counted: &Summary) -> Option<String> {
    if stored == counted {
        return None;
    }
    let fields: [(&str, String, String); 15] = [
        ("ios", stored.ios.to_string(), counted.ios.to_string()),
        ("reads", stored.reads.to_string(), counted.reads.to_string()),
        (
            "writes",
            stored.writes.to_string(),
            counted.writes.to_string(),
        ),
        (
            "flushes",
            stored.flushes.to_string(),
            counted.flushes.to_string(),
        ),
        (
            "discards",
            stored.discards.to_string(),
            counted.discards.to_string(),
        ),
        (
            "write-zeroes",
            stored.write_zeroes.to_string(),
            counted.write_zeroes.to_string(),
        ),
        (
            "bytes read",
            stored.read_bytes.to_string(),
            counted.read_bytes.to_string(),
        ),
        (
            "bytes written",
            stored.write_bytes.to_string(),
            counted.write_bytes.to_string(),
        ),
        (
            "bytes discarded",
            stored.discard_bytes.to_string(),
            counted.discard_bytes.to_string(),
        ),
        (
            "bytes zeroed",
            stored.write_zeroes_bytes.to_string(),
            counted.write_zeroes_bytes.to_string(),
        ),
        (
            "records with a latency",
            stored.with_latency.to_string(),
            counted.with_latency.to_string(),
        ),
        (
            "last issue (ns)",
            stored.last_issue.0.to_string(),
            counted.last_issue.0.to_string(),
        ),
        (
            "duration (ns)",
            stored.duration.0.to_string(),
            counted.duration.0.to_string(),
        ),
        (
            "lowest offset",
            opt(stored.min_offset),
            opt(counted.min_offset),
        ),
        ("highest end", opt(stored.max_end), opt(counted.max_end)),
    ];
    let (name, s, c) = fields.into_iter().find(|(_, s, c)| s != c)?;
    Some(format!(
        "the summary says {name} {s} but the records give {c}"
    ))
}
