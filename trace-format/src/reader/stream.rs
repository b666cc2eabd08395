//! Reading a `.tmt` in one pass from any `Read`.

use super::blocks::{attach_task, parse_footer_block, parse_header_block};
use super::checks::{check_index, chunk_error, summary_mismatch};
use super::{ChunkInfo, Footer};
use crate::error::FormatError;
use crate::frame::{
    self, decode_frame, u32_at, u64_at, CHUNK_HEAD_LEN, FOOTER_MAGIC, PREAMBLE_LEN, TRAILER_LEN,
};
use crate::meta::{Summary, TraceHeader};
use crate::record::IoRecord;
use crate::section::{parse_section, section_len, Sections, SECTION_HEAD_LEN, SECTION_MAGIC};
use crate::END_MAGIC;
use std::io::Read;

/// Reads a `.tmt` from any `Read` in one pass (a pipe, for instance). Every
/// chunk is checked as it arrives; the footer is checked against what was read
/// and is available once every record has been read.
pub struct TraceReader<R: Read> {
    input: R,
    header: TraceHeader,
    position: u64,
    seen: Vec<ChunkInfo>,
    footer: Option<Footer>,
    buffer: Vec<IoRecord>,
    pos: usize,
    frame: Vec<u8>,
    done: bool,
    /// The summary of the records read, checked against the footer's.
    counted: Summary,
    /// The highest device index of any record read.
    max_device: u16,
    /// The file's minor version (sections exist from 1 on).
    minor: u16,
    /// Where the first section started (the chunks end there).
    chunks_end: Option<u64>,
    sections: Sections,
}

impl<R: Read> TraceReader<R> {
    pub fn new(mut input: R) -> Result<Self, FormatError> {
        let mut pre = [0u8; PREAMBLE_LEN];
        let got = read_up_to(&mut input, &mut pre)?;
        if got < PREAMBLE_LEN {
            parse_header_block(&pre[..got])?;
            return Err(FormatError::Truncated(
                "the file ends inside the preamble".into(),
            ));
        }
        let header_len = u32_at(&pre, 12) as usize;
        if header_len > 64 << 20 {
            return Err(FormatError::CorruptHeader(format!(
                "implausible header length {header_len}"
            )));
        }
        let mut block = pre.to_vec();
        // Grows as bytes arrive: a crafted length costs only what the input holds.
        (&mut input)
            .take(header_len as u64 + 4)
            .read_to_end(&mut block)
            .map_err(FormatError::Stream)?;
        let (header, block_len, minor) = parse_header_block(&block)?;
        Ok(TraceReader {
            input,
            header,
            position: block_len as u64,
            seen: Vec::new(),
            footer: None,
            buffer: Vec::new(),
            pos: 0,
            frame: Vec::new(),
            done: false,
            counted: Summary::default(),
            max_device: 0,
            minor,
            chunks_end: None,
            sections: Sections::default(),
        })
    }

    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The footer, after the iterator has returned `None`.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    /// Appends `n` bytes of the input to the frame. The frame grows as bytes
    /// arrive, so a crafted length costs no more memory than the input holds.
    fn read_exact_or(&mut self, n: usize, what: &str) -> Result<(), FormatError> {
        let start = self.frame.len();
        (&mut self.input)
            .take(n as u64)
            .read_to_end(&mut self.frame)
            .map_err(FormatError::Stream)?;
        if self.frame.len() - start < n {
            return Err(FormatError::Truncated(format!(
                "the stream ends inside {what}"
            )));
        }
        Ok(())
    }

    /// Reads and checks the section whose magic is in the frame.
    fn read_section(&mut self) -> Result<(), FormatError> {
        self.read_exact_or(SECTION_HEAD_LEN - 4, "a section head")?;
        let total = section_len(&self.frame)?;
        self.read_exact_or(total - SECTION_HEAD_LEN, "a section")?;
        parse_section(&self.frame, &mut self.sections)?;
        self.chunks_end.get_or_insert(self.position);
        self.position += total as u64;
        Ok(())
    }

    /// Reads the next chunk into the buffer, or a section (returns true with
    /// no record), or the footer (returns false).
    fn next_block(&mut self) -> Result<bool, FormatError> {
        let index = self.seen.len();
        self.frame.clear();
        let got = {
            self.frame.resize(4, 0);
            read_up_to(&mut self.input, &mut self.frame[..4])?
        };
        if got < 4 {
            return Err(FormatError::Truncated(format!(
                "the stream ends after chunk {index} without a footer"
            )));
        }
        if self.frame[..4] == FOOTER_MAGIC {
            self.read_exact_or(4, "the footer")?;
            let len = u32_at(&self.frame, 4) as usize;
            if len > 64 << 20 {
                return Err(FormatError::CorruptFooter(
                    "implausible footer length".into(),
                ));
            }
            self.read_exact_or(len + 4, "the footer")?;
            let mut footer = parse_footer_block(&self.frame).map_err(FormatError::CorruptFooter)?;
            let footer_len = self.frame.len() as u64;
            self.frame.clear();
            self.read_exact_or(TRAILER_LEN, "the trailer")?;
            let t = &self.frame;
            if t[16..] != END_MAGIC
                || crc32c::crc32c(&t[..12]) != u32_at(t, 12)
                || u64_at(t, 0) != self.position
                || u64::from(u32_at(t, 8)) != footer_len
            {
                return Err(FormatError::CorruptFooter("trailer is damaged".into()));
            }
            if footer.chunks != self.seen {
                return Err(FormatError::CorruptFooter(
                    "the chunk index disagrees with the chunks read".into(),
                ));
            }
            let data_end = self.chunks_end.unwrap_or(self.position);
            let start = self.seen.first().map_or(data_end, |c| c.offset);
            check_index(&footer, start, data_end).map_err(FormatError::CorruptFooter)?;
            let table = footer.tail.devices.len();
            if usize::from(self.max_device) >= table.max(1) {
                return Err(FormatError::CorruptFooter(format!(
                    "a record names device {} but the device table has {table} entries",
                    self.max_device
                )));
            }
            if let Some(reason) = summary_mismatch(&footer.summary, &self.counted) {
                return Err(FormatError::CorruptFooter(reason));
            }
            let mut extra = [0u8; 1];
            if read_up_to(&mut self.input, &mut extra)? != 0 {
                return Err(FormatError::CorruptFooter(
                    "bytes follow the trailer".into(),
                ));
            }
            attach_task(&mut footer, std::mem::take(&mut self.sections))?;
            self.footer = Some(footer);
            return Ok(false);
        }
        if self.frame[..4] == SECTION_MAGIC && self.minor > 0 {
            self.read_section()?;
            return Ok(true);
        }
        if self.chunks_end.is_some() {
            return Err(FormatError::CorruptFooter(
                "a chunk follows a section (sections come after the last chunk)".into(),
            ));
        }
        let fail = |r: String| chunk_error(index, index + 1, r);
        self.read_exact_or(CHUNK_HEAD_LEN - 4, "a chunk head")
            .map_err(|e| fail(e.to_string()))?;
        let head = frame::parse_chunk_head(&self.frame).map_err(fail)?;
        self.read_exact_or(head.stored_len as usize + 4, "a chunk")
            .map_err(|e| fail(e.to_string()))?;
        let head = decode_frame(&self.frame, &mut self.buffer).map_err(fail)?;
        let (Some(first), Some(last)) = (self.buffer.first(), self.buffer.last()) else {
            return Err(fail("empty chunk".into()));
        };
        let info = ChunkInfo {
            offset: self.position,
            stored_len: self.frame.len() as u32,
            records: head.records,
            first_time: first.time,
            last_time: last.time,
        };
        if let Some(prev) = self.seen.last() {
            if info.first_time < prev.last_time {
                return Err(fail("records go back in time across chunks".into()));
            }
        }
        self.position += self.frame.len() as u64;
        self.seen.push(info);
        self.pos = 0;
        Ok(true)
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<IoRecord, FormatError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if let Some(r) = self.buffer.get(self.pos) {
                self.pos += 1;
                self.counted.add(r);
                self.max_device = self.max_device.max(r.device);
                return Some(Ok(*r));
            }
            self.buffer.clear();
            match self.next_block() {
                Ok(true) => continue,
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> Result<usize, FormatError> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FormatError::Stream(e)),
        }
    }
    Ok(got)
}
