//! Ring-buffer pages: a page's header ([`open_page`]) and the walk over its
//! records ([`Records`]): padding, time extends and stamps, data records.

use super::{
    read_ne, PageLayout, COMMIT_MISSED_EVENTS, COMMIT_MISSED_STORED, COMMIT_SIZE_MASK,
    TIME_DELTA_BITS, TIME_STAMP_MSB, TYPE_PADDING, TYPE_TIME_EXTEND, TYPE_TIME_STAMP,
};
use std::fmt;
use std::ops::ControlFlow;

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
    pub kind: PageProblem,
    pub reason: String,
}

/// What is wrong with a ring-buffer page, for a caller (or a test) to act on
/// without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageProblem {
    /// The page, or the committed data, ends inside a header or a record's
    /// fixed part.
    Truncated,
    /// The page's commit word, or a record's length, reaches past the data
    /// there is.
    Overrun,
    /// A length shorter than the header that carries it.
    BadLength,
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
    let error = |byte: usize, kind: PageProblem, reason: String| PageError {
        cpu,
        page: page_no,
        byte,
        kind,
        reason,
    };
    if page.len() < layout.data_offset {
        return Err(error(
            0,
            PageProblem::Truncated,
            format!(
                "truncated page: {} bytes, shorter than the {}-byte page header",
                page.len(),
                layout.data_offset
            ),
        ));
    }
    let timestamp = read_ne(page, layout.timestamp_offset, 8).ok_or_else(|| {
        error(
            layout.timestamp_offset,
            PageProblem::Truncated,
            "no page timestamp".into(),
        )
    })?;
    let commit = read_ne(page, layout.commit_offset, layout.commit_size).ok_or_else(|| {
        error(
            layout.commit_offset,
            PageProblem::Truncated,
            "no commit word".into(),
        )
    })?;
    // The flags sit in the low 32 bits of an 8-byte commit word too.
    let data_len = commit & COMMIT_SIZE_MASK;
    let available = page.len() - layout.data_offset;
    let data_len = usize::try_from(data_len)
        .ok()
        .filter(|&n| n <= available)
        .ok_or_else(|| {
            error(
                layout.commit_offset,
                PageProblem::Overrun,
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
                PageProblem::Truncated,
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
    fn fail(
        &mut self,
        kind: PageProblem,
        reason: String,
    ) -> Option<Result<RawRecord<'p>, PageError>> {
        self.done = true;
        Some(Err(PageError {
            cpu: self.cpu,
            page: self.page,
            byte: self.data_offset + self.pos,
            kind,
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
                return self.fail(
                    PageProblem::Truncated,
                    format!("truncated event header: {left} bytes left of the committed data"),
                );
            };
            let (type_len, delta) = split_header(word);
            let array0 = self.word(self.pos + 4);
            let step = match type_len {
                TYPE_PADDING => self.skip_padding(delta, array0, left),
                TYPE_TIME_EXTEND | TYPE_TIME_STAMP => self.apply_time(type_len, delta, array0),
                0 => {
                    let Some(len) = array0 else {
                        return self.fail(
                            PageProblem::Truncated,
                            "truncated record: its length word is missing".into(),
                        );
                    };
                    let len = len as usize;
                    if len < 4 {
                        return self.fail(
                            PageProblem::BadLength,
                            format!("record length {len} is smaller than its own length word"),
                        );
                    }
                    // The length counts itself; records are 4-byte aligned.
                    return self.data_record(8, len - 4, delta, left);
                }
                n => return self.data_record(4, n as usize * 4, delta, left),
            };
            if let ControlFlow::Break(end) = step {
                return end;
            }
        }
        None
    }
}

/// What [`Records::next`] does after a record that is not data: go on to
/// the next one, or return this.
type Walk<'p> = ControlFlow<Option<Result<RawRecord<'p>, PageError>>>;

impl<'p> Records<'p> {
    /// A padding record: the end of the page's data (delta 0, or padding that
    /// runs to the end), or a discarded record to step over (its length
    /// follows; its delta counts).
    #[inline]
    fn skip_padding(&mut self, delta: u32, array0: Option<u32>, left: usize) -> Walk<'p> {
        if delta == 0 {
            // The rest of the page is unused.
            self.done = true;
            return ControlFlow::Break(None);
        }
        let Some(len) = array0 else {
            return ControlFlow::Break(
                self.fail(PageProblem::Truncated, "truncated padding record".into()),
            );
        };
        self.time = self.time.wrapping_add(u64::from(delta));
        let total = (len as usize).saturating_add(4);
        if total < 8 {
            return ControlFlow::Break(self.fail(
                PageProblem::BadLength,
                format!("padding record of {total} bytes is shorter than its header"),
            ));
        }
        if total >= left {
            // Padding that runs to (or past) the end closes the page.
            self.done = true;
            return ControlFlow::Break(None);
        }
        self.pos += total;
        ControlFlow::Continue(())
    }

    /// A time extend (adds to the clock) or time stamp (sets it).
    #[inline]
    fn apply_time(&mut self, type_len: u32, delta: u32, array0: Option<u32>) -> Walk<'p> {
        let Some(high) = array0 else {
            let what = if type_len == TYPE_TIME_EXTEND {
                "extend"
            } else {
                "stamp"
            };
            return ControlFlow::Break(self.fail(
                PageProblem::Truncated,
                format!("truncated time {what} record"),
            ));
        };
        let value = (u64::from(high) << TIME_DELTA_BITS) | u64::from(delta);
        self.time = if type_len == TYPE_TIME_EXTEND {
            self.time.wrapping_add(value)
        } else {
            value | (self.time & TIME_STAMP_MSB)
        };
        self.pos += 8;
        ControlFlow::Continue(())
    }

    /// A data record of `header` bytes then `payload_len` bytes of payload
    /// (padded to 4-byte alignment), `left` bytes before the data's end.
    #[inline]
    fn data_record(
        &mut self,
        header: usize,
        payload_len: usize,
        delta: u32,
        left: usize,
    ) -> Option<Result<RawRecord<'p>, PageError>> {
        let total = header.saturating_add(payload_len.div_ceil(4) * 4);
        if total > left {
            return self.fail(
                PageProblem::Overrun,
                format!(
                    "a record of {total} bytes runs past the page's committed data \
                     ({left} bytes left; corrupt or truncated page)"
                ),
            );
        }
        let start = self.pos + header;
        let offset = self.pos;
        self.time = self.time.wrapping_add(u64::from(delta));
        self.pos += total;
        Some(Ok(RawRecord {
            time: self.time,
            payload: &self.data[start..start + payload_len],
            offset: self.data_offset + offset,
        }))
    }
}
