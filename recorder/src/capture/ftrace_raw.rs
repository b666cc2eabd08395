//! Decoding of the kernel's binary trace ring buffer (`per_cpu/cpuN/trace_pipe_raw`)
//! for live capture: nanosecond times, and far less work per event than parsing
//! the text of `trace_pipe`. Pure decoding, no I/O: [`crate::capture`] reads the
//! files and feeds the bytes here.
//!
//! What is decoded, and from where its layout comes:
//! - `events/header_page` gives the layout of a ring-buffer page (sub-buffer):
//!   a timestamp, a `commit` word (bytes of event data, plus the flags "events
//!   were lost before this page" and "their count is stored after the data"),
//!   then the data ([`PageLayout`]);
//! - `events/header_event` describes the 4-byte event header: a 5-bit
//!   `type_len` and a 27-bit `time_delta`. `type_len` 1..=28 is a data record
//!   of `4 * type_len` bytes, 0 a data record whose length is in the next word,
//!   29 padding (a discarded record; with a zero delta, the end of the page), 30
//!   a time extend (a delta too large for 27 bits), 31 an absolute timestamp.
//!   The header is checked against these values, not assumed;
//! - each event's `format` file gives the offset, size and signedness of its
//!   fields ([`EventFormat`]); [`BlockDecoder`] reads the request events
//!   `block_rq_issue`, `block_rq_complete` and `block_rq_requeue`, and the bio
//!   events `block_bio_queue` and `block_bio_complete` (what bio-based devices
//!   such as zram, device-mapper and md report instead), by name through them,
//!   so a kernel that moves or resizes a field is still read correctly.
//!
//! The ring buffer is in the host's byte order. Times are in the instance's
//! trace clock (the capture uses `mono`: CLOCK_MONOTONIC nanoseconds).

use crate::error::{bad, BadInputKind, BadReason};
use crate::event::Action;
use crate::formats::block_events::{self, parse_rwbs, Parsed};
use trace_format::{DeviceId, Nanos};

/// `type_len` of padding (a discarded record, or the unused end of a page).
pub const TYPE_PADDING: u32 = 29;
/// `type_len` of a time extend.
pub const TYPE_TIME_EXTEND: u32 = 30;
/// `type_len` of an absolute timestamp.
pub const TYPE_TIME_STAMP: u32 = 31;
/// Largest `type_len` of a data record whose length is in the header.
pub const TYPE_DATA_MAX: u32 = 28;
/// Bits of `time_delta` in an event header.
pub const TIME_DELTA_BITS: u32 = 27;

/// Commit-word flag: events were lost between the previous page and this one.
pub const COMMIT_MISSED_EVENTS: u64 = 1 << 31;
/// Commit-word flag: the number of lost events is stored after the data.
pub const COMMIT_MISSED_STORED: u64 = 1 << 30;
/// The bytes-of-data part of the commit word.
const COMMIT_SIZE_MASK: u64 = (1 << 30) - 1;

/// An absolute timestamp carries the low 59 bits; the top 5 come from the
/// running time.
const TIME_STAMP_MSB: u64 = 0xf8 << 56;

/// Why a tracefs format file was not understood (the capture then falls back
/// to the text pipe).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct FormatError {
    pub file: String,
    pub reason: String,
}

fn format_error(file: &str, reason: impl Into<String>) -> FormatError {
    FormatError {
        file: file.to_string(),
        reason: reason.into(),
    }
}

// ---------------------------------------------------------------------------
// format files

/// How a field's bytes are to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A number or a fixed array in place.
    Inline,
    /// `__data_loc`: a 32-bit word, low 16 bits the offset of the data from the
    /// start of the record, high 16 bits its length.
    DataLoc,
    /// `__rel_loc`: like `__data_loc`, with the offset counted from the end of
    /// the word itself.
    RelLoc,
}

/// One `field:` line of a format file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFormat {
    pub name: String,
    /// The C declaration without the name (`unsigned int`, `char[10]`,
    /// `__data_loc char[]`).
    pub type_name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    pub kind: FieldKind,
}

/// An event's `format` file: its name, its type id (the first field of every
/// record, `common_type`) and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub name: String,
    pub id: u16,
    pub fields: Vec<FieldFormat>,
}

impl EventFormat {
    pub fn field(&self, name: &str) -> Option<&FieldFormat> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parses `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` (the `signed`
/// part is absent on very old kernels).
fn parse_field_line(line: &str) -> Result<FieldFormat, String> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (key, value) = part
            .split_once(':')
            .ok_or_else(|| format!("`{part}` is not `key:value`"))?;
        let value = value.trim();
        let number = || {
            value
                .parse::<usize>()
                .map_err(|_| format!("{key} `{value}` is not a number"))
        };
        match key.trim() {
            "field" => decl = Some(value),
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = number()? != 0,
            _ => {}
        }
    }
    let decl = decl.ok_or("no `field:` declaration")?;
    let offset = offset.ok_or("no `offset:`")?;
    let size = size.ok_or("no `size:`")?;
    // The name is the last word, without an array suffix: `char rwbs[10]`,
    // `__data_loc char[] cmd`.
    let last = decl
        .split_whitespace()
        .last()
        .ok_or("empty field declaration")?;
    let (name, array) = match last.find('[') {
        Some(open) => (&last[..open], &last[open..]),
        None => (last, ""),
    };
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("`{decl}` has no field name"));
    }
    let type_part = decl[..decl.len() - last.len()].trim();
    let kind = if type_part.starts_with("__data_loc") {
        FieldKind::DataLoc
    } else if type_part.starts_with("__rel_loc") {
        FieldKind::RelLoc
    } else {
        FieldKind::Inline
    };
    if kind != FieldKind::Inline && size != 4 {
        return Err(format!(
            "`{decl}`: a dynamic field's location word has {size} bytes, not 4"
        ));
    }
    Ok(FieldFormat {
        name: name.to_string(),
        type_name: format!("{type_part}{array}"),
        offset,
        size,
        signed,
        kind,
    })
}

/// Parses an event's `format` file; `file` names it in errors.
pub fn parse_event_format(file: &str, text: &str) -> Result<EventFormat, FormatError> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            let v = v.trim();
            id = Some(v.parse::<u16>().map_err(|_| {
                format_error(
                    file,
                    format!("line {}: event id `{v}` is not a 16-bit number", n + 1),
                )
            })?);
        } else if t.starts_with("field:") {
            let field = parse_field_line(t)
                .map_err(|reason| format_error(file, format!("line {}: {reason}", n + 1)))?;
            fields.push(field);
        } else if t.starts_with("print fmt:") {
            break;
        }
    }
    let name = name.ok_or_else(|| format_error(file, "no `name:` line"))?;
    let id = id.ok_or_else(|| format_error(file, "no `ID:` line"))?;
    if fields.is_empty() {
        return Err(format_error(file, "no `field:` lines"));
    }
    Ok(EventFormat { name, id, fields })
}

/// Where the parts of a ring-buffer page are, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of the page's 8-byte base timestamp.
    pub timestamp_offset: usize,
    /// Offset and size (4 or 8: the kernel's `long`) of the commit word; the
    /// lost-events count stored after the data has the same size.
    pub commit_offset: usize,
    pub commit_size: usize,
    /// Where event data starts.
    pub data_offset: usize,
    /// Bytes of a whole page (what one read of `trace_pipe_raw` returns).
    pub page_size: usize,
}

impl PageLayout {
    /// The same layout with another page (sub-buffer) size, from the
    /// instance's `buffer_subbuf_size_kb`.
    pub fn with_page_size(self, page_size: usize) -> Result<PageLayout, String> {
        if page_size <= self.data_offset {
            return Err(format!(
                "a page of {page_size} bytes has no room after its {}-byte header",
                self.data_offset
            ));
        }
        Ok(PageLayout { page_size, ..self })
    }
}

/// Parses `events/header_page`.
pub fn parse_header_page(file: &str, text: &str) -> Result<PageLayout, FormatError> {
    let mut timestamp = None;
    let mut commit = None;
    let mut data = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if !t.starts_with("field:") {
            continue;
        }
        let f = parse_field_line(t)
            .map_err(|reason| format_error(file, format!("line {}: {reason}", n + 1)))?;
        match f.name.as_str() {
            "timestamp" => timestamp = Some(f),
            "commit" => commit = Some(f),
            "data" => data = Some(f),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or_else(|| format_error(file, "no `timestamp` field"))?;
    let commit = commit.ok_or_else(|| format_error(file, "no `commit` field"))?;
    let data = data.ok_or_else(|| format_error(file, "no `data` field"))?;
    if timestamp.size != 8 {
        return Err(format_error(
            file,
            format!("the page timestamp has {} bytes, not 8", timestamp.size),
        ));
    }
    if commit.size != 4 && commit.size != 8 {
        return Err(format_error(
            file,
            format!("the commit word has {} bytes, not 4 or 8", commit.size),
        ));
    }
    let header_end = (timestamp.offset + 8).max(commit.offset + commit.size);
    if data.offset < header_end {
        return Err(format_error(
            file,
            format!(
                "page data at byte {} overlaps the header (which ends at byte {header_end})",
                data.offset
            ),
        ));
    }
    if data.size == 0 {
        return Err(format_error(file, "the page has no room for data"));
    }
    Ok(PageLayout {
        timestamp_offset: timestamp.offset,
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
        page_size: data.offset + data.size,
    })
}

/// Checks that `events/header_event` describes the event header this module
/// decodes (it has not changed since Linux 2.6.31, but a kernel that changed
/// it must not be misread).
pub fn check_header_event(file: &str, text: &str) -> Result<(), FormatError> {
    let mut seen = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ':')
            .filter(|w| !w.is_empty())
            .collect();
        // `type_len : 5 bits`, `padding : type == 29`, `data max type_len == 28`.
        let entry = match words.as_slice() {
            [name, n, "bits"] => Some((name.to_string(), *n)),
            [name, "type", "==", n] => Some((name.to_string(), *n)),
            ["data", "max", "type_len", "==", n] => Some(("data max".to_string(), *n)),
            _ => None,
        };
        if let Some((name, n)) = entry {
            seen.push((name, n.parse::<u32>().ok()));
        }
    }
    let expect = [
        ("type_len", 5),
        ("time_delta", TIME_DELTA_BITS),
        ("padding", TYPE_PADDING),
        ("time_extend", TYPE_TIME_EXTEND),
        ("time_stamp", TYPE_TIME_STAMP),
        ("data max", TYPE_DATA_MAX),
    ];
    for (name, value) in expect {
        match seen.iter().find(|(n, _)| n == name) {
            None => {
                return Err(format_error(
                    file,
                    format!("no `{name}` line; not the event header this version reads"),
                ))
            }
            Some((_, Some(v))) if *v == value => {}
            Some((_, v)) => {
                return Err(format_error(
                    file,
                    format!(
                        "`{name}` is {}, expected {value}; not the event header this version reads",
                        v.map_or_else(|| "not a number".to_string(), |v| v.to_string())
                    ),
                ))
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// pages (in page.rs)

mod page;
pub use page::{open_page, Missed, Page, PageError, PageProblem, RawRecord, Records};

fn read_ne(bytes: &[u8], at: usize, size: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(size)?)?;
    Some(match size {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_ne_bytes([b[0], b[1]])),
        4 => u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        8 => u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// block request and bio records

/// A field the decoder reads: where, how wide, signed or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Field {
    offset: usize,
    size: usize,
    signed: bool,
    kind: FieldKind,
}

impl Field {
    fn number(&self, payload: &[u8], name: &str) -> Result<i128, String> {
        let raw = read_ne(payload, self.offset, self.size).ok_or_else(|| {
            format!(
                "record of {} bytes ends before field `{name}` (bytes {}..{})",
                payload.len(),
                self.offset,
                self.offset + self.size
            )
        })?;
        Ok(if self.signed {
            let shift = 64 - 8 * self.size as u32;
            i128::from(((raw << shift) as i64) >> shift)
        } else {
            i128::from(raw)
        })
    }

    fn unsigned(&self, payload: &[u8], name: &str) -> Result<u64, BadReason> {
        let n = self.number(payload, name).map_err(truncated)?;
        let negative = || format!("field `{name}` is negative ({n})");
        u64::try_from(n).map_err(|_| bad(BadInputKind::Negative, negative()))
    }

    /// The bytes of a char array or dynamic string, up to its first NUL.
    fn text<'p>(&self, payload: &'p [u8], name: &str) -> Result<&'p [u8], String> {
        let (start, len) = match self.kind {
            FieldKind::Inline => (self.offset, self.size),
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let word = read_ne(payload, self.offset, 4)
                    .ok_or_else(|| format!("record ends before field `{name}`"))?;
                let at = (word & 0xffff) as usize;
                let len = (word >> 16) as usize;
                let at = if self.kind == FieldKind::RelLoc {
                    at + self.offset + 4
                } else {
                    at
                };
                (at, len)
            }
        };
        let bytes = payload.get(start..start + len).ok_or_else(|| {
            format!(
                "field `{name}` (bytes {start}..{}) runs past the {}-byte record",
                start + len,
                payload.len()
            )
        })?;
        Ok(bytes.split(|&b| b == 0).next().unwrap_or(&[]))
    }
}

fn truncated(message: String) -> BadReason {
    bad(BadInputKind::Truncated, message)
}

/// The fields of one block event (a request or a bio event).
#[derive(Debug, Clone, PartialEq, Eq)]
struct EventLayout {
    id: u16,
    action: Action,
    dev: Field,
    sector: Field,
    nr_sector: Field,
    rwbs: Field,
    /// `block_rq_issue` only: bytes of the request (also set for passthrough).
    bytes: Option<Field>,
    /// Completions only.
    error: Option<Field>,
    /// Request events only: the passthrough command (empty for normal
    /// requests).
    cmd: Option<Field>,
    pid: Option<Field>,
}

/// Note key for records of events the decoder does not know.
pub const NOTE_OTHER_EVENT: &str = crate::formats::tracefs::note::OTHER_EVENT;

/// Decodes `block_rq_issue`, `block_rq_complete`, `block_rq_requeue`,
/// `block_bio_queue` and `block_bio_complete` records into block events, by
/// the field layout of each event's format file. A bio queue event becomes a
/// [`Action::Queue`] event, a bio completion a [`Action::Complete`] one, as
/// blkparse's `Q` and `C`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDecoder {
    /// `common_type`: which event a record is.
    common_type: Field,
    layouts: Vec<EventLayout>,
}

fn field_of(
    format: &EventFormat,
    file: &str,
    name: &str,
    sizes: &[usize],
) -> Result<Field, FormatError> {
    let f = format
        .field(name)
        .ok_or_else(|| format_error(file, format!("no field `{name}`")))?;
    if f.kind == FieldKind::Inline && !sizes.is_empty() && !sizes.contains(&f.size) {
        return Err(format_error(
            file,
            format!("field `{name}` has {} bytes, expected {sizes:?}", f.size),
        ));
    }
    Ok(Field {
        offset: f.offset,
        size: f.size,
        signed: f.signed,
        kind: f.kind,
    })
}

fn optional_field(
    format: &EventFormat,
    file: &str,
    name: &str,
    sizes: &[usize],
) -> Result<Option<Field>, FormatError> {
    match format.field(name) {
        None => Ok(None),
        Some(_) => field_of(format, file, name, sizes).map(Some),
    }
}

const NUMBER_SIZES: [usize; 4] = [1, 2, 4, 8];

impl BlockDecoder {
    /// Builds the decoder from parsed format files, each with the file name
    /// for errors. Events other than the five it reads are refused, and one
    /// that starts an I/O (`block_rq_issue` or `block_bio_queue`) is needed;
    /// which completions a capture needs is the capture's to check.
    pub fn new(formats: &[(&str, &EventFormat)]) -> Result<BlockDecoder, FormatError> {
        let mut common_type: Option<Field> = None;
        let mut layouts = Vec::new();
        for &(file, format) in formats {
            let action = match format.name.as_str() {
                "block_rq_issue" => Action::Issue,
                "block_rq_complete" | "block_bio_complete" => Action::Complete,
                "block_rq_requeue" => Action::Requeue,
                "block_bio_queue" => Action::Queue,
                other => {
                    return Err(format_error(
                        file,
                        format!("`{other}` is not a block event this decoder reads"),
                    ))
                }
            };
            let ty = field_of(format, file, "common_type", &[2])?;
            match common_type {
                None => common_type = Some(ty),
                Some(t) if t.offset == ty.offset => {}
                Some(_) => {
                    return Err(format_error(
                        file,
                        "`common_type` is not where the other events have it",
                    ))
                }
            }
            if layouts.iter().any(|l: &EventLayout| l.id == format.id) {
                return Err(format_error(
                    file,
                    format!("event id {} is used twice", format.id),
                ));
            }
            let rwbs = field_of(format, file, "rwbs", &[])?;
            if rwbs.kind == FieldKind::Inline && rwbs.size == 0 {
                return Err(format_error(file, "field `rwbs` is empty"));
            }
            layouts.push(EventLayout {
                id: format.id,
                action,
                dev: field_of(format, file, "dev", &[4, 8])?,
                sector: field_of(format, file, "sector", &[4, 8])?,
                nr_sector: field_of(format, file, "nr_sector", &[2, 4, 8])?,
                rwbs,
                bytes: if format.name == "block_rq_issue" {
                    optional_field(format, file, "bytes", &NUMBER_SIZES)?
                } else {
                    None
                },
                error: if action == Action::Complete {
                    optional_field(format, file, "error", &NUMBER_SIZES)?
                } else {
                    None
                },
                cmd: optional_field(format, file, "cmd", &[])?,
                pid: optional_field(format, file, "common_pid", &NUMBER_SIZES)?,
            });
        }
        if !layouts
            .iter()
            .any(|l| matches!(l.action, Action::Issue | Action::Queue))
        {
            return Err(format_error(
                "events/block",
                "the format of block_rq_issue or block_bio_queue is needed",
            ));
        }
        let common_type = common_type.ok_or_else(|| format_error("events/block", "no formats"))?;
        Ok(BlockDecoder {
            common_type,
            layouts,
        })
    }

    /// Decodes one record (the payload of a [`RawRecord`]) at trace time
    /// `time`: an event, or a note for what is no I/O (another event, a
    /// passthrough request). `Err` says what is wrong with the record.
    pub fn decode(&self, time: Nanos, payload: &[u8]) -> Result<Parsed, BadReason> {
        let id = self.common_type.unsigned(payload, "common_type")?;
        let Some(layout) = self.layouts.iter().find(|l| u64::from(l.id) == id) else {
            return Ok(Parsed::Note(NOTE_OTHER_EVENT));
        };
        let dev = layout.dev.unsigned(payload, "dev")?;
        let not_dev_t = || format!("device number {dev:#x} is not a kernel dev_t");
        let device = DeviceId {
            major: u32::try_from(dev >> 20)
                .map_err(|_| bad(BadInputKind::OutOfRange, not_dev_t()))?,
            minor: (dev & 0xf_ffff) as u32,
        };
        let sector = layout.sector.unsigned(payload, "sector")?;
        let nr_sector = layout.nr_sector.unsigned(payload, "nr_sector")?;
        let rwbs_bytes = layout.rwbs.text(payload, "rwbs").map_err(truncated)?;
        let rwbs = std::str::from_utf8(rwbs_bytes)
            .ok()
            .and_then(parse_rwbs)
            .ok_or_else(|| {
                let rwbs = String::from_utf8_lossy(rwbs_bytes);
                let message = format!("`{rwbs}` is not an RWBS field");
                bad(BadInputKind::UnknownOp, message)
            })?;
        if let Some(cmd) = &layout.cmd {
            if !cmd.text(payload, "cmd").map_err(truncated)?.is_empty() {
                return Ok(Parsed::Note(block_events::note::PASSTHROUGH));
            }
        }
        // A driver-private request (`N`) carrying bytes but no sectors is a
        // passthrough command (the kernel no longer fills `cmd`).
        if let Some(bytes) = &layout.bytes {
            if rwbs.op == block_events::RwbsOp::None
                && nr_sector == 0
                && bytes.unsigned(payload, "bytes")? > 0
            {
                return Ok(Parsed::Note(block_events::note::PASSTHROUGH));
            }
        }
        let error = match &layout.error {
            Some(f) => {
                let e = f.number(payload, "error").map_err(truncated)?;
                let out_of_range = || format!("completion error {e} is out of range");
                i32::try_from(e).map_err(|_| bad(BadInputKind::OutOfRange, out_of_range()))?
            }
            None => 0,
        };
        let pid = match &layout.pid {
            Some(f) => u32::try_from(f.number(payload, "common_pid").map_err(truncated)?)
                .ok()
                .filter(|&p| p != 0),
            None => None,
        };
        block_events::io_event(
            device,
            time,
            pid,
            layout.action,
            rwbs,
            Some((sector, nr_sector)),
            error,
        )
    }
}

/// Format files and page building shared by the decoder's tests and the
/// capture's merge tests.
#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests;
