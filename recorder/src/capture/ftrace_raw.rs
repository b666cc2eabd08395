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

use crate::event::Action;
use crate::formats::block_events::{self, parse_rwbs, Parsed};
use std::fmt;
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
// pages

/// Whether events were lost just before a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    None,
    /// This many events were lost.
    Count(u64),
    /// Events were lost; the kernel had no room to say how many.
    Unknown,
}

/// A page that went wrong: which CPU's stream, which page of it, where in the
/// page, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PageError {
    pub cpu: u32,
    /// 0-based page number in the CPU's stream.
    pub page: u64,
    /// Byte offset in the page.
    pub byte: usize,
    pub reason: String,
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CPU {} ring buffer, page {}, byte {}: {}",
            self.cpu, self.page, self.byte, self.reason
        )
    }
}

/// One data record of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'p> {
    /// Trace-clock time (ns).
    pub time: u64,
    /// The event's bytes (`common_type` first); may end in alignment padding.
    pub payload: &'p [u8],
    /// Byte offset of the record's header in the page.
    pub offset: usize,
}

/// A decoded page header; [`Page::records`] walks its events.
#[derive(Debug, Clone)]
pub struct Page<'p> {
    /// The page's base timestamp.
    pub timestamp: u64,
    /// Bytes of event data.
    pub data_len: usize,
    pub missed: Missed,
    data: &'p [u8],
    data_offset: usize,
    cpu: u32,
    page: u64,
}

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

/// Splits an event header word into (`type_len`, `time_delta`). The kernel
/// declares them as bit fields, so their place follows the byte order.
fn split_header(word: u32) -> (u32, u32) {
    if cfg!(target_endian = "big") {
        (word >> TIME_DELTA_BITS, word & ((1 << TIME_DELTA_BITS) - 1))
    } else {
        (word & 0x1f, word >> 5)
    }
}

/// Reads a page's header. `page` is what one read of `trace_pipe_raw` gave
/// (normally `layout.page_size` bytes); `cpu` and `page_no` name it in errors.
pub fn open_page<'p>(
    layout: &PageLayout,
    page: &'p [u8],
    cpu: u32,
    page_no: u64,
) -> Result<Page<'p>, PageError> {
    let error = |byte: usize, reason: String| PageError {
        cpu,
        page: page_no,
        byte,
        reason,
    };
    if page.len() < layout.data_offset {
        return Err(error(
            0,
            format!(
                "truncated page: {} bytes, shorter than the {}-byte page header",
                page.len(),
                layout.data_offset
            ),
        ));
    }
    let timestamp = read_ne(page, layout.timestamp_offset, 8)
        .ok_or_else(|| error(layout.timestamp_offset, "no page timestamp".into()))?;
    let commit = read_ne(page, layout.commit_offset, layout.commit_size)
        .ok_or_else(|| error(layout.commit_offset, "no commit word".into()))?;
    // The flags sit in the low 32 bits of an 8-byte commit word too.
    let data_len = commit & COMMIT_SIZE_MASK;
    let available = page.len() - layout.data_offset;
    let data_len = usize::try_from(data_len)
        .ok()
        .filter(|&n| n <= available)
        .ok_or_else(|| {
            error(
                layout.commit_offset,
                format!(
                    "the page says it holds {data_len} bytes of events, more than the {available} \
                     bytes after its header (corrupt or truncated page)"
                ),
            )
        })?;
    let data = &page[layout.data_offset..layout.data_offset + data_len];
    let missed = if commit & COMMIT_MISSED_EVENTS == 0 {
        Missed::None
    } else if commit & COMMIT_MISSED_STORED != 0 {
        let at = layout.data_offset + data_len;
        let count = read_ne(page, at, layout.commit_size).ok_or_else(|| {
            error(
                at,
                "the page says a lost-events count follows its data, but the page ends there"
                    .into(),
            )
        })?;
        Missed::Count(count)
    } else {
        Missed::Unknown
    };
    Ok(Page {
        timestamp,
        data_len,
        missed,
        data,
        data_offset: layout.data_offset,
        cpu,
        page: page_no,
    })
}

impl<'p> Page<'p> {
    /// The page's data records in order, with their times; stops after the
    /// first error (a corrupt or truncated event).
    pub fn records(&self) -> Records<'p> {
        Records {
            data: self.data,
            data_offset: self.data_offset,
            pos: 0,
            time: self.timestamp,
            cpu: self.cpu,
            page: self.page,
            done: false,
        }
    }
}

/// Iterator over the data records of a page.
#[derive(Debug, Clone)]
pub struct Records<'p> {
    data: &'p [u8],
    data_offset: usize,
    pos: usize,
    time: u64,
    cpu: u32,
    page: u64,
    done: bool,
}

impl<'p> Records<'p> {
    fn fail(&mut self, reason: String) -> Option<Result<RawRecord<'p>, PageError>> {
        self.done = true;
        Some(Err(PageError {
            cpu: self.cpu,
            page: self.page,
            byte: self.data_offset + self.pos,
            reason,
        }))
    }

    fn word(&self, at: usize) -> Option<u32> {
        read_ne(self.data, at, 4).and_then(|w| u32::try_from(w).ok())
    }
}

impl<'p> Iterator for Records<'p> {
    type Item = Result<RawRecord<'p>, PageError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done && self.pos < self.data.len() {
            let left = self.data.len() - self.pos;
            let Some(word) = self.word(self.pos) else {
                return self.fail(format!(
                    "truncated event header: {left} bytes left of the committed data"
                ));
            };
            let (type_len, delta) = split_header(word);
            let array0 = self.word(self.pos + 4);
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // The rest of the page is unused.
                        self.done = true;
                        return None;
                    }
                    // A discarded record: its length follows; its delta counts.
                    let Some(len) = array0 else {
                        return self.fail("truncated padding record".into());
                    };
                    self.time = self.time.wrapping_add(u64::from(delta));
                    let total = (len as usize).saturating_add(4);
                    if total < 8 {
                        return self.fail(format!(
                            "padding record of {total} bytes is shorter than its header"
                        ));
                    }
                    if total >= left {
                        // Padding that runs to (or past) the end closes the page.
                        self.done = true;
                        return None;
                    }
                    self.pos += total;
                }
                TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                    let Some(high) = array0 else {
                        return self.fail(format!(
                            "truncated time {} record",
                            if type_len == TYPE_TIME_EXTEND {
                                "extend"
                            } else {
                                "stamp"
                            }
                        ));
                    };
                    let value = (u64::from(high) << TIME_DELTA_BITS) | u64::from(delta);
                    self.time = if type_len == TYPE_TIME_EXTEND {
                        self.time.wrapping_add(value)
                    } else {
                        value | (self.time & TIME_STAMP_MSB)
                    };
                    self.pos += 8;
                }
                0 => {
                    let Some(len) = array0 else {
                        return self.fail("truncated record: its length word is missing".into());
                    };
                    let len = len as usize;
                    if len < 4 {
                        return self.fail(format!(
                            "record length {len} is smaller than its own length word"
                        ));
                    }
                    // The length counts itself; records are 4-byte aligned.
                    let payload_len = len - 4;
                    let total = 8usize.saturating_add(payload_len.div_ceil(4) * 4);
                    if total > left {
                        return self.fail(format!(
                            "a record of {total} bytes runs past the page's committed data \
                             ({left} bytes left; corrupt or truncated page)"
                        ));
                    }
                    let start = self.pos + 8;
                    let offset = self.pos;
                    self.time = self.time.wrapping_add(u64::from(delta));
                    self.pos += total;
                    return Some(Ok(RawRecord {
                        time: self.time,
                        payload: &self.data[start..start + payload_len],
                        offset: self.data_offset + offset,
                    }));
                }
                n => {
                    let payload_len = n as usize * 4;
                    let total = 4 + payload_len;
                    if total > left {
                        return self.fail(format!(
                            "a record of {total} bytes runs past the page's committed data \
                             ({left} bytes left; corrupt or truncated page)"
                        ));
                    }
                    let start = self.pos + 4;
                    let offset = self.pos;
                    self.time = self.time.wrapping_add(u64::from(delta));
                    self.pos += total;
                    return Some(Ok(RawRecord {
                        time: self.time,
                        payload: &self.data[start..start + payload_len],
                        offset: self.data_offset + offset,
                    }));
                }
            }
        }
        None
    }
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

    fn unsigned(&self, payload: &[u8], name: &str) -> Result<u64, String> {
        let n = self.number(payload, name)?;
        u64::try_from(n).map_err(|_| format!("field `{name}` is negative ({n})"))
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
    pub fn decode(&self, time: Nanos, payload: &[u8]) -> Result<Parsed, String> {
        let id = self.common_type.unsigned(payload, "common_type")?;
        let Some(layout) = self.layouts.iter().find(|l| u64::from(l.id) == id) else {
            return Ok(Parsed::Note(NOTE_OTHER_EVENT));
        };
        let dev = layout.dev.unsigned(payload, "dev")?;
        let device = DeviceId {
            major: u32::try_from(dev >> 20)
                .map_err(|_| format!("device number {dev:#x} is not a kernel dev_t"))?,
            minor: (dev & 0xf_ffff) as u32,
        };
        let sector = layout.sector.unsigned(payload, "sector")?;
        let nr_sector = layout.nr_sector.unsigned(payload, "nr_sector")?;
        let rwbs_bytes = layout.rwbs.text(payload, "rwbs")?;
        let rwbs = std::str::from_utf8(rwbs_bytes)
            .ok()
            .and_then(parse_rwbs)
            .ok_or_else(|| {
                format!(
                    "`{}` is not an RWBS field",
                    String::from_utf8_lossy(rwbs_bytes)
                )
            })?;
        if let Some(cmd) = &layout.cmd {
            if !cmd.text(payload, "cmd")?.is_empty() {
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
                let e = f.number(payload, "error")?;
                i32::try_from(e).map_err(|_| format!("completion error {e} is out of range"))?
            }
            None => 0,
        };
        let pid = match &layout.pid {
            Some(f) => u32::try_from(f.number(payload, "common_pid")?)
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
pub(crate) mod testing {
    use super::*;

    // The files of Linux 6.18 (x86-64), as tracefs prints them.
    pub(crate) const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";
    pub(crate) const HEADER_EVENT: &str = "# compressed entry header
\ttype_len    :    5 bits
\ttime_delta  :   27 bits
\tarray       :   32 bits

\tpadding     : type == 29
\ttime_extend : type == 30
\ttime_stamp : type == 31
\tdata max type_len  == 28
";
    pub(crate) const ISSUE: &str = "name: block_rq_issue
ID: 2104
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;
\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;

print fmt: \"%d,%d %s %u (%s) %llu + %u %s,%u,%u [%s]\", REC->dev
";
    pub(crate) const COMPLETE: &str = "name: block_rq_complete
ID: 2107
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;

print fmt: \"%d,%d %s (%s) %llu + %u %s,%u,%u [%d]\", REC->dev
";
    pub(crate) const REQUEUE: &str = "name: block_rq_requeue
ID: 2108
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:unsigned short ioprio;\toffset:28;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:30;\tsize:10;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:40;\tsize:4;\tsigned:0;

print fmt: \"%d,%d %s (%s) %llu + %u %s,%u,%u [%d]\", REC->dev
";
    /// An older layout (no ioprio, 8-byte rwbs, the error before rwbs moved)
    /// to show offsets come from the file, not from this code.
    pub(crate) const COMPLETE_OLD: &str = "name: block_rq_complete
ID: 1177
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:int errors;\toffset:28;\tsize:4;\tsigned:1;
\tfield:int error;\toffset:32;\tsize:4;\tsigned:1;
\tfield:char rwbs[8];\toffset:36;\tsize:8;\tsigned:1;
\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:1;
";

    /// The bio events of Linux 6.18 (x86-64): no `bytes`, no `cmd`; the
    /// queue event has the task's `comm`, the completion an `error`.
    pub(crate) const BIO_QUEUE: &str = "name: block_bio_queue
ID: 2097
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:char rwbs[10];\toffset:28;\tsize:10;\tsigned:0;
\tfield:char comm[16];\toffset:38;\tsize:16;\tsigned:0;

print fmt: \"%d,%d %s %llu + %u [%s]\", ((unsigned int) ((REC->dev) >> 20))
";
    pub(crate) const BIO_COMPLETE: &str = "name: block_bio_complete
ID: 2100
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;
\tfield:char rwbs[10];\toffset:32;\tsize:10;\tsigned:0;

print fmt: \"%d,%d %s %llu + %u [%d]\", ((unsigned int) ((REC->dev) >> 20))
";

    /// (block_bio_queue, block_bio_complete).
    pub(crate) fn bio_formats() -> (EventFormat, EventFormat) {
        (
            parse_event_format("bio_queue/format", BIO_QUEUE).unwrap(),
            parse_event_format("bio_complete/format", BIO_COMPLETE).unwrap(),
        )
    }

    pub(crate) fn formats() -> (EventFormat, EventFormat, EventFormat) {
        (
            parse_event_format("issue/format", ISSUE).unwrap(),
            parse_event_format("complete/format", COMPLETE).unwrap(),
            parse_event_format("requeue/format", REQUEUE).unwrap(),
        )
    }

    /// A decoder of all five events.
    pub(crate) fn decoder() -> BlockDecoder {
        let (i, c, r) = formats();
        let (q, bc) = bio_formats();
        BlockDecoder::new(&[("i", &i), ("c", &c), ("r", &r), ("q", &q), ("bc", &bc)]).unwrap()
    }

    pub(crate) fn layout() -> PageLayout {
        parse_header_page("events/header_page", HEADER_PAGE).unwrap()
    }

    /// Writes a field's value into a record at the place its format gives.
    pub(crate) fn put(rec: &mut [u8], format: &EventFormat, name: &str, value: u64) {
        let f = format.field(name).unwrap();
        let bytes = value.to_ne_bytes();
        let bytes = if cfg!(target_endian = "big") {
            &bytes[8 - f.size..]
        } else {
            &bytes[..f.size]
        };
        rec[f.offset..f.offset + f.size].copy_from_slice(bytes);
    }

    pub(crate) fn put_str(rec: &mut [u8], format: &EventFormat, name: &str, value: &str) {
        let f = format.field(name).unwrap();
        rec[f.offset..f.offset + f.size].fill(0);
        rec[f.offset..f.offset + value.len()].copy_from_slice(value.as_bytes());
    }

    /// A block request or bio record built from its format: the size is the
    /// last field's end, plus the (empty) `cmd` string where it has one.
    pub(crate) fn record(
        format: &EventFormat,
        dev: u64,
        sector: u64,
        nr_sector: u64,
        rwbs: &str,
        pid: u64,
    ) -> Vec<u8> {
        let end = format
            .fields
            .iter()
            .map(|f| f.offset + f.size)
            .max()
            .unwrap();
        let mut rec = vec![0u8; end + 1];
        put(&mut rec, format, "common_type", u64::from(format.id));
        put(&mut rec, format, "common_pid", pid);
        put(&mut rec, format, "dev", dev);
        put(&mut rec, format, "sector", sector);
        put(&mut rec, format, "nr_sector", nr_sector);
        if format.field("bytes").is_some() {
            put(&mut rec, format, "bytes", nr_sector * 512);
        }
        put_str(&mut rec, format, "rwbs", rwbs);
        // cmd: one NUL byte at the end of the record.
        if format.field("cmd").is_some() {
            let loc = (1u64 << 16) | end as u64;
            put(&mut rec, format, "cmd", loc);
        }
        rec
    }

    pub(crate) fn header_word(type_len: u32, delta: u32) -> u32 {
        if cfg!(target_endian = "big") {
            (type_len << TIME_DELTA_BITS) | delta
        } else {
            type_len | (delta << 5)
        }
    }

    /// Builds a page byte by byte, as the kernel lays it out.
    pub(crate) struct PageBuilder {
        pub(crate) data: Vec<u8>,
        pub(crate) timestamp: u64,
    }

    impl PageBuilder {
        pub(crate) fn new(timestamp: u64) -> Self {
            PageBuilder {
                data: Vec::new(),
                timestamp,
            }
        }
        pub(crate) fn word(&mut self, w: u32) -> &mut Self {
            self.data.extend_from_slice(&w.to_ne_bytes());
            self
        }
        /// A data record: short form when it fits 28 words, else the length word.
        pub(crate) fn record(&mut self, delta: u32, payload: &[u8]) -> &mut Self {
            let padded = payload.len().div_ceil(4) * 4;
            if padded <= 4 * TYPE_DATA_MAX as usize && !payload.is_empty() {
                self.word(header_word((padded / 4) as u32, delta));
            } else {
                self.word(header_word(0, delta));
                self.word(padded as u32 + 4);
            }
            self.data.extend_from_slice(payload);
            self.data
                .resize(self.data.len() + padded - payload.len(), 0);
            self
        }
        pub(crate) fn extend(&mut self, delta: u64) -> &mut Self {
            self.word(header_word(TYPE_TIME_EXTEND, (delta & 0x7ff_ffff) as u32));
            self.word((delta >> TIME_DELTA_BITS) as u32)
        }
        pub(crate) fn stamp(&mut self, time: u64) -> &mut Self {
            self.word(header_word(TYPE_TIME_STAMP, (time & 0x7ff_ffff) as u32));
            self.word(((time >> TIME_DELTA_BITS) & 0xffff_ffff) as u32)
        }
        pub(crate) fn padding(&mut self, delta: u32, len: u32) -> &mut Self {
            self.word(header_word(TYPE_PADDING, delta));
            self.word(len);
            self.data.resize(self.data.len() + len as usize - 4, 0xee);
            self
        }
        /// The page as `trace_pipe_raw` returns it: header, data, lost count,
        /// zeros to the page size.
        pub(crate) fn build(&self, layout: &PageLayout, missed: Option<Option<u64>>) -> Vec<u8> {
            let mut page = vec![0u8; layout.page_size];
            page[0..8].copy_from_slice(&self.timestamp.to_ne_bytes());
            let mut commit = self.data.len() as u64;
            let at = layout.data_offset;
            page[at..at + self.data.len()].copy_from_slice(&self.data);
            if let Some(count) = missed {
                commit |= COMMIT_MISSED_EVENTS;
                if let Some(n) = count {
                    commit |= COMMIT_MISSED_STORED;
                    let end = at + self.data.len();
                    page[end..end + 8].copy_from_slice(&n.to_ne_bytes());
                }
            }
            page[8..16].copy_from_slice(&commit.to_ne_bytes());
            page
        }
    }

    pub(crate) fn events(page: &[u8], cpu: u32) -> Result<Vec<(u64, Parsed)>, PageError> {
        let d = decoder();
        let p = open_page(&layout(), page, cpu, 7)?;
        p.records()
            .map(|r| {
                r.map(|r| {
                    let parsed = d.decode(Nanos(r.time), r.payload).unwrap();
                    (r.time, parsed)
                })
            })
            .collect()
    }

    pub(crate) fn event(parsed: &Parsed) -> crate::event::BlockEvent {
        match parsed {
            Parsed::Event(e) => *e,
            other => panic!("not an event: {other:?}"),
        }
    }

    pub(crate) const LOOP0: u64 = 7 << 20;
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use trace_format::{Bytes, Flags, Op};

    #[test]
    fn format_files_parse() {
        let (issue, complete, requeue) = formats();
        assert_eq!((issue.name.as_str(), issue.id), ("block_rq_issue", 2104));
        let rwbs = issue.field("rwbs").unwrap();
        assert_eq!(
            (rwbs.offset, rwbs.size, rwbs.type_name.as_str()),
            (34, 10, "char[10]")
        );
        let cmd = issue.field("cmd").unwrap();
        assert_eq!(
            (cmd.kind, cmd.offset, cmd.type_name.as_str()),
            (FieldKind::DataLoc, 60, "__data_loc char[]")
        );
        let pid = issue.field("common_pid").unwrap();
        assert!(pid.signed);
        assert_eq!(complete.field("error").unwrap().offset, 28);
        assert!(requeue.field("error").is_none());
        assert_eq!(
            layout(),
            PageLayout {
                timestamp_offset: 0,
                commit_offset: 8,
                commit_size: 8,
                data_offset: 16,
                page_size: 4096,
            }
        );
        check_header_event("events/header_event", HEADER_EVENT).unwrap();
    }

    #[test]
    fn format_files_that_are_not_understood_say_why() {
        let e = parse_event_format("x/format", "name: block_rq_issue\nID: 70000\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x/format: line 2: event id `70000` is not a 16-bit number"
        );
        let e = parse_event_format(
            "x/format",
            "name: a\nID: 1\n\tfield:int x;\toffset:zero;\tsize:4;\n",
        )
        .unwrap_err();
        assert!(e
            .to_string()
            .contains("line 3: offset `zero` is not a number"));
        let e = check_header_event(
            "events/header_event",
            &HEADER_EVENT.replace("27 bits", "26 bits"),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("`time_delta` is 26, expected 27"),
            "{e}"
        );
        let e = check_header_event("events/header_event", "type_len : 5 bits\n").unwrap_err();
        assert!(e.to_string().contains("no `time_delta` line"), "{e}");
        let e = parse_header_page(
            "events/header_page",
            &HEADER_PAGE.replace("size:8;\tsigned:1", "size:2;\tsigned:1"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("commit word has 2 bytes"), "{e}");
        // An issue format without a sector cannot be decoded.
        let no_sector = ISSUE.replace("sector_t sector;", "sector_t start;");
        let issue = parse_event_format("issue/format", &no_sector).unwrap();
        let (_, c, _) = formats();
        let e = BlockDecoder::new(&[("issue/format", &issue), ("c", &c)]).unwrap_err();
        assert_eq!(e.to_string(), "issue/format: no field `sector`");
        // Completions alone start no I/O.
        let (_, c, _) = formats();
        let (_, bc) = bio_formats();
        let e = BlockDecoder::new(&[("c", &c), ("bc", &bc)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "events/block: the format of block_rq_issue or block_bio_queue is needed"
        );
        // An event it does not read.
        let split = BIO_QUEUE.replace("name: block_bio_queue", "name: block_split");
        let split = parse_event_format("split/format", &split).unwrap();
        let e = BlockDecoder::new(&[("split/format", &split)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "split/format: `block_split` is not a block event this decoder reads"
        );
        // A bio format without a sector count.
        let q = parse_event_format(
            "q/format",
            &BIO_QUEUE.replace("unsigned int nr_sector;", "unsigned int sectors;"),
        )
        .unwrap();
        let e = BlockDecoder::new(&[("q/format", &q)]).unwrap_err();
        assert_eq!(e.to_string(), "q/format: no field `nr_sector`");
    }

    #[test]
    fn bio_records_decode_by_their_format_files() {
        let (queue, complete) = bio_formats();
        // The bio formats alone make a decoder (a bio-based device).
        let d = BlockDecoder::new(&[("q", &queue), ("c", &complete)]).unwrap();
        let rwbs = complete.field("rwbs").unwrap();
        assert_eq!((rwbs.offset, rwbs.size), (32, 10));
        assert!(queue.field("cmd").is_none() && queue.field("comm").is_some());

        let zram0 = 253 << 20;
        let rec = record(&queue, zram0, 800, 8, "WS", 24584);
        assert_eq!(rec.len(), 55);
        let e = event(&d.decode(Nanos(7), &rec).unwrap());
        assert_eq!(
            (e.action, e.device, e.op, e.flags),
            (
                Action::Queue,
                DeviceId {
                    major: 253,
                    minor: 0
                },
                Op::Write,
                Flags::SYNC
            )
        );
        assert_eq!(
            (e.offset, e.len, e.pid, e.time),
            (Bytes(800 * 512), Bytes(4096), Some(24584), Nanos(7))
        );

        let mut rec = record(&complete, zram0, 20480, 2048, "RS", 24586);
        put(&mut rec, &complete, "error", (-5i32) as u32 as u64);
        let e = event(&d.decode(Nanos(9), &rec).unwrap());
        assert_eq!(
            (e.action, e.op, e.offset, e.len, e.error),
            (
                Action::Complete,
                Op::Read,
                Bytes(20480 * 512),
                Bytes(1 << 20),
                -5
            )
        );

        // A flush bio: a write with a preflush and no data.
        let rec = record(&queue, zram0, 0, 0, "FWS", 1);
        let e = event(&d.decode(Nanos(1), &rec).unwrap());
        assert_eq!(
            (e.action, e.op, e.offset, e.len),
            (Action::Queue, Op::Flush, Bytes(0), Bytes(0))
        );
        // A discard bio.
        let rec = record(&queue, zram0, 64, 256, "DS", 1);
        let e = event(&d.decode(Nanos(1), &rec).unwrap());
        assert_eq!((e.op, e.len), (Op::Discard, Bytes(256 * 512)));
        // A request event is another event for a bio-only decoder.
        let (issue, _, _) = formats();
        let rec = record(&issue, zram0, 0, 8, "R", 1);
        assert_eq!(d.decode(Nanos(1), &rec), Ok(Parsed::Note(NOTE_OTHER_EVENT)));
        // A cut-off bio record, and garbage in its RWBS.
        let rec = record(&queue, zram0, 0, 8, "R", 1);
        assert!(d
            .decode(Nanos(1), &rec[..30])
            .unwrap_err()
            .contains("field `rwbs` (bytes 28..38) runs past the 30-byte record"));
        let rec = record(&complete, zram0, 0, 8, "Rx", 1);
        assert_eq!(
            d.decode(Nanos(1), &rec).unwrap_err(),
            "`Rx` is not an RWBS field"
        );
    }

    #[test]
    fn a_page_of_bio_events_gives_queues_and_completions_in_order() {
        let (queue, complete) = bio_formats();
        let zram0 = 253 << 20;
        let base = 11_725_221_266_000u64;
        let mut pb = PageBuilder::new(base);
        pb.record(0, &record(&queue, zram0, 800, 8, "WS", 24584))
            .record(19_000, &record(&complete, zram0, 800, 8, "WS", 24584))
            .record(19_000, &record(&queue, zram0, 808, 8, "WS", 24584))
            .record(6_000, &record(&complete, zram0, 808, 8, "WS", 24584));
        let got = events(&pb.build(&layout(), None), 0).unwrap();
        let seen: Vec<(u64, Action, u64)> = got
            .iter()
            .map(|(t, p)| {
                let e = event(p);
                (t - base, e.action, e.offset.0 / 512)
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (0, Action::Queue, 800),
                (19_000, Action::Complete, 800),
                (38_000, Action::Queue, 808),
                (44_000, Action::Complete, 808),
            ]
        );
    }

    #[test]
    fn records_decode_by_the_format_files_offsets() {
        let (issue, complete, requeue) = formats();
        let d = decoder();
        let rec = record(&issue, LOOP0 | 3, 2048, 8, "WS", 4242);
        let e = event(&d.decode(Nanos(5), &rec).unwrap());
        assert_eq!(e.action, Action::Issue);
        assert_eq!(e.device, DeviceId { major: 7, minor: 3 });
        assert_eq!(
            (e.op, e.flags, e.offset, e.len),
            (Op::Write, Flags::SYNC, Bytes(2048 * 512), Bytes(4096))
        );
        assert_eq!((e.time, e.pid, e.error), (Nanos(5), Some(4242), 0));

        let mut rec = record(&complete, LOOP0, 2048, 8, "WS", 0);
        put(&mut rec, &complete, "error", (-5i32) as u32 as u64);
        let e = event(&d.decode(Nanos(9), &rec).unwrap());
        assert_eq!((e.action, e.error, e.pid), (Action::Complete, -5, None));

        let rec = record(&requeue, LOOP0, 64, 16, "R", 1);
        let e = event(&d.decode(Nanos(9), &rec).unwrap());
        assert_eq!(
            (e.action, e.op, e.len),
            (Action::Requeue, Op::Read, Bytes(8192))
        );

        // A flush: no sector ((sector_t)-1), no length.
        let rec = record(&issue, LOOP0, u64::MAX, 0, "FF", 1);
        let e = event(&d.decode(Nanos(1), &rec).unwrap());
        assert_eq!((e.op, e.offset, e.len), (Op::Flush, Bytes(0), Bytes(0)));

        // The older layout: rwbs and error elsewhere, still right.
        let old = parse_event_format("old", COMPLETE_OLD).unwrap();
        let (i, _, _) = formats();
        let d_old = BlockDecoder::new(&[("i", &i), ("old", &old)]).unwrap();
        let mut rec = record(&old, LOOP0, 100, 2, "R", 1);
        put(&mut rec, &old, "error", (-11i32) as u32 as u64);
        let e = event(&d_old.decode(Nanos(1), &rec).unwrap());
        assert_eq!(
            (e.op, e.offset, e.len, e.error),
            (Op::Read, Bytes(51200), Bytes(1024), -11)
        );
    }

    #[test]
    fn passthrough_other_events_and_bad_records() {
        let (issue, _, _) = formats();
        let d = decoder();
        // A command in `cmd`.
        let mut rec = record(&issue, LOOP0, 0, 0, "N", 1);
        let at = rec.len();
        rec.extend_from_slice(b"12 00\0");
        put(&mut rec, &issue, "cmd", (6u64 << 16) | at as u64);
        assert_eq!(
            d.decode(Nanos(1), &rec),
            Ok(Parsed::Note(block_events::note::PASSTHROUGH))
        );
        // `N` with bytes and no sectors.
        let mut rec = record(&issue, LOOP0, 0, 0, "N", 1);
        put(&mut rec, &issue, "bytes", 36);
        assert_eq!(
            d.decode(Nanos(1), &rec),
            Ok(Parsed::Note(block_events::note::PASSTHROUGH))
        );
        // Another event.
        let mut rec = record(&issue, LOOP0, 0, 8, "R", 1);
        put(&mut rec, &issue, "common_type", 999);
        assert_eq!(d.decode(Nanos(1), &rec), Ok(Parsed::Note(NOTE_OTHER_EVENT)));
        // Garbage RWBS, a truncated record, a string past the record.
        let rec = record(&issue, LOOP0, 0, 8, "Q?", 1);
        assert_eq!(
            d.decode(Nanos(1), &rec).unwrap_err(),
            "`Q?` is not an RWBS field"
        );
        let rec = record(&issue, LOOP0, 0, 8, "R", 1);
        assert!(d
            .decode(Nanos(1), &rec[..26])
            .unwrap_err()
            .contains("ends before field `nr_sector`"));
        let mut rec = record(&issue, LOOP0, 0, 8, "R", 1);
        put(&mut rec, &issue, "cmd", (40u64 << 16) | 60);
        assert!(d
            .decode(Nanos(1), &rec)
            .unwrap_err()
            .contains("field `cmd` (bytes 60..100) runs past the 65-byte record"));
    }

    #[test]
    fn pages_with_deltas_extends_stamps_and_padding() {
        let (issue, complete, _) = formats();
        let a = record(&issue, LOOP0, 100, 8, "R", 10);
        let b = record(&complete, LOOP0, 100, 8, "R", 0);
        let c = record(&issue, LOOP0, 200, 16, "W", 10);
        let d = record(&complete, LOOP0, 200, 16, "W", 0);
        let e = record(&issue, LOOP0, 300, 8, "R", 10);
        let base = 1_000_000_000_000u64;
        let mut pb = PageBuilder::new(base);
        pb.record(0, &a) // at base
            .record(1234, &b) // + 1234 ns
            .extend(5_000_000_000 + 7) // a 5 s gap needs an extend (27 bits < 134 ms)
            .record(0, &c)
            .padding(3, 64) // a discarded record: its delta counts
            .stamp(base + 9_000_000_001) // absolute
            .record(999, &d)
            .record(1, &e)
            .padding(0, 8); // the end of the page
        let page = pb.build(&layout(), None);
        let got = events(&page, 1).unwrap();
        let times: Vec<u64> = got.iter().map(|(t, _)| t - base).collect();
        assert_eq!(
            times,
            vec![
                0,
                1234,
                1234 + 5_000_000_007,
                9_000_000_001 + 999,
                9_000_000_001 + 1000
            ]
        );
        let offsets: Vec<u64> = got.iter().map(|(_, p)| event(p).offset.0 / 512).collect();
        assert_eq!(offsets, vec![100, 100, 200, 200, 300]);
        let p = open_page(&layout(), &page, 1, 0).unwrap();
        assert_eq!(p.missed, Missed::None);
        assert_eq!(p.timestamp, base);
    }

    #[test]
    fn long_records_carry_their_length_in_the_next_word() {
        // A record over 112 bytes (28 words) uses type_len 0 and a length word.
        let (issue, _, _) = formats();
        let mut rec = record(&issue, LOOP0, 8, 8, "R", 1);
        let end = rec.len() - 1;
        rec.resize(200, 0);
        put(&mut rec, &issue, "cmd", (1u64 << 16) | end as u64);
        let mut pb = PageBuilder::new(50);
        pb.record(5, &rec).record(5, &rec[..64]);
        let page = pb.build(&layout(), None);
        let p = open_page(&layout(), &page, 0, 0).unwrap();
        let recs: Vec<RawRecord> = p.records().map(Result::unwrap).collect();
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].time, recs[0].payload.len()), (55, 200));
        assert_eq!((recs[1].time, recs[1].payload.len()), (60, 64));
        assert_eq!((recs[0].offset, recs[1].offset), (16, 16 + 8 + 200));
    }

    #[test]
    fn missed_events_flag_and_count() {
        let (issue, _, _) = formats();
        let a = record(&issue, LOOP0, 100, 8, "R", 10);
        let mut pb = PageBuilder::new(10);
        pb.record(0, &a);
        let l = layout();
        let page = pb.build(&l, Some(Some(4321)));
        let p = open_page(&l, &page, 0, 0).unwrap();
        assert_eq!(p.missed, Missed::Count(4321));
        assert_eq!(p.records().count(), 1, "the count is not read as an event");
        let page = pb.build(&l, Some(None));
        assert_eq!(open_page(&l, &page, 0, 0).unwrap().missed, Missed::Unknown);
        // A count that would lie past the page.
        let mut full = PageBuilder::new(10);
        full.data.resize(l.page_size - l.data_offset - 4, 0);
        let mut page = full.build(&l, None);
        let commit =
            (l.page_size - l.data_offset - 4) as u64 | COMMIT_MISSED_EVENTS | COMMIT_MISSED_STORED;
        page[8..16].copy_from_slice(&commit.to_ne_bytes());
        let e = open_page(&l, &page, 3, 12).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "CPU 3 ring buffer, page 12, byte 4092: the page says a lost-events count"
            ),
            "{e}"
        );
    }

    #[test]
    fn corrupt_and_truncated_pages_name_cpu_and_page() {
        let (issue, _, _) = formats();
        let a = record(&issue, LOOP0, 100, 8, "R", 10);
        let l = layout();
        let mut pb = PageBuilder::new(10);
        pb.record(0, &a).record(0, &a);
        let good = pb.build(&l, None);
        let rec_total = 4 + a.len().div_ceil(4) * 4;

        // Shorter than the header.
        let e = open_page(&l, &good[..10], 1, 5).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CPU 1 ring buffer, page 5, byte 0: truncated page: 10 bytes, shorter than the \
             16-byte page header"
        );
        // The commit says more than the bytes read.
        let e = open_page(&l, &good[..100], 1, 5).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "holds {} bytes of events, more than the 84 bytes",
                2 * rec_total
            )),
            "{e}"
        );
        // A record whose length runs past the committed data: the first
        // record still comes out, then the error, then nothing.
        let mut bad = good.clone();
        let second = l.data_offset + rec_total;
        bad[second..second + 4].copy_from_slice(&header_word(0, 0).to_ne_bytes());
        bad[second + 4..second + 8].copy_from_slice(&5000u32.to_ne_bytes());
        let p = open_page(&l, &bad, 2, 9).unwrap();
        let mut it = p.records();
        assert!(it.next().unwrap().is_ok());
        let e = it.next().unwrap().unwrap_err();
        assert_eq!((e.cpu, e.page, e.byte), (2, 9, second));
        assert!(
            e.to_string().starts_with(&format!(
                "CPU 2 ring buffer, page 9, byte {second}: a record of 5004 bytes runs past"
            )),
            "{e}"
        );
        assert!(it.next().is_none());
        // A length word smaller than itself.
        bad[second + 4..second + 8].copy_from_slice(&2u32.to_ne_bytes());
        let e = open_page(&l, &bad, 2, 9)
            .unwrap()
            .records()
            .find_map(Result::err)
            .unwrap();
        assert!(e.reason.contains("record length 2"), "{e}");
        // Committed data ending inside an event header.
        let mut cut = good.clone();
        let commit = (rec_total + 2) as u64;
        cut[8..16].copy_from_slice(&commit.to_ne_bytes());
        let e = open_page(&l, &cut, 0, 1)
            .unwrap()
            .records()
            .find_map(Result::err)
            .unwrap();
        assert!(e.reason.contains("truncated event header"), "{e}");
        // A time extend cut in half.
        let mut pb = PageBuilder::new(0);
        pb.word(header_word(TYPE_TIME_EXTEND, 1));
        let page = pb.build(&l, None);
        let e = open_page(&l, &page, 0, 1)
            .unwrap()
            .records()
            .find_map(Result::err)
            .unwrap();
        assert!(e.reason.contains("truncated time extend"), "{e}");
    }

    #[test]
    fn any_bytes_give_records_or_an_error_never_a_panic() {
        let l = layout();
        let d = decoder();
        let mut state = 0x1234_5678_9abc_def0u64;
        for round in 0..2000 {
            let mut page = vec![0u8; if round % 3 == 0 { 200 } else { 4096 }];
            for b in page.iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = state as u8;
            }
            // Small commit sizes, so the walk gets into the data.
            let commit = (state % 300) | (state & (3 << 30));
            page[8..16].copy_from_slice(&commit.to_ne_bytes());
            if let Ok(p) = open_page(&l, &page, 0, round) {
                for r in p.records().flatten() {
                    let _ = d.decode(Nanos(r.time), r.payload);
                }
            }
        }
    }
}
