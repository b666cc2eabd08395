use crate::error::FormatError;
use crate::frame::{
    self, decode_frame, decode_meta, u32_at, u64_at, CHUNK_HEAD_LEN, CHUNK_OVERHEAD, FOOTER_MAGIC,
    PREAMBLE_LEN, TRAILER_LEN,
};
use crate::meta::{Summary, TraceHeader, TraceTail};
use crate::record::IoRecord;
use crate::units::Nanos;
use crate::{END_MAGIC, MAGIC, VERSION_MAJOR};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;

/// Where a chunk is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkInfo {
    /// Byte offset of the chunk frame in the file.
    pub offset: u64,
    /// Bytes the chunk frame takes in the file.
    pub stored_len: u32,
    pub records: u32,
    pub first_time: Nanos,
    pub last_time: Nanos,
}

/// The footer: chunk index, summary and tail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    pub chunks: Vec<ChunkInfo>,
    pub summary: Summary,
    pub tail: TraceTail,
}

/// Checks the header block at the start of `bytes` and returns the header and
/// the block's length. `bytes` may be longer than the block.
fn parse_header_block(bytes: &[u8]) -> Result<(TraceHeader, usize), FormatError> {
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        let n = bytes.len().min(MAGIC.len());
        if n < MAGIC.len() && bytes[..n] == MAGIC[..n] {
            return Err(FormatError::Truncated(
                "the file ends inside the magic".into(),
            ));
        }
        return Err(FormatError::NotATrace);
    }
    if bytes.len() < PREAMBLE_LEN {
        return Err(FormatError::Truncated(
            "the file ends inside the preamble".into(),
        ));
    }
    let major = u16::from_le_bytes([bytes[8], bytes[9]]);
    let minor = u16::from_le_bytes([bytes[10], bytes[11]]);
    let header_len = u32_at(bytes, 12) as usize;
    let block_len = PREAMBLE_LEN + header_len + 4;
    if bytes.len() < block_len {
        return Err(if major > VERSION_MAJOR {
            FormatError::NewerVersion { major, minor }
        } else {
            FormatError::Truncated(format!(
                "the header block needs {block_len} bytes, the file has {}",
                bytes.len()
            ))
        });
    }
    // The header block's framing is the same in every version, so its checksum
    // tells a newer file from a corrupt one.
    let crc_ok = crc32c::crc32c(&bytes[..block_len - 4]) == u32_at(bytes, block_len - 4);
    if !crc_ok {
        return Err(FormatError::CorruptHeader(format!(
            "checksum mismatch (version field reads {major}.{minor})"
        )));
    }
    if major > VERSION_MAJOR {
        return Err(FormatError::NewerVersion { major, minor });
    }
    if major == 0 {
        return Err(FormatError::CorruptHeader(
            "version 0 does not exist".into(),
        ));
    }
    let header = decode_meta(&bytes[PREAMBLE_LEN..PREAMBLE_LEN + header_len])
        .map_err(FormatError::CorruptHeader)?;
    Ok((header, block_len))
}

/// Parses and checks the footer block plus trailer found at the end of `bytes`.
fn parse_footer_block(block: &[u8]) -> Result<Footer, String> {
    if block.len() < 12 || block[..4] != FOOTER_MAGIC {
        return Err("no footer magic where the trailer says the footer starts".into());
    }
    let len = u32_at(block, 4) as usize;
    if 8 + len + 4 != block.len() {
        return Err("footer length disagrees with the trailer".into());
    }
    if crc32c::crc32c(&block[..8 + len]) != u32_at(block, 8 + len) {
        return Err("checksum mismatch".into());
    }
    decode_meta(&block[8..8 + len])
}

/// Checks that the index describes contiguous chunks from `data_start` to
/// `data_end` whose record counts add up to the summary.
fn check_index(footer: &Footer, data_start: u64, data_end: u64) -> Result<(), String> {
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
    Ok(())
}

fn chunk_error(chunk: usize, chunks: usize, reason: impl Into<String>) -> FormatError {
    FormatError::CorruptChunk {
        chunk,
        chunks,
        reason: reason.into(),
    }
}

/// Checks a decoded chunk against its index entry.
fn check_chunk(
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

/// A `.tmt` file opened through a memory map. Opening checks the header, the
/// trailer, the footer and the chunk index; records are decoded, and their
/// chunks' checksums checked, as they are read.
pub struct TraceFile {
    map: memmap2::Mmap,
    header: TraceHeader,
    footer: Footer,
}

impl TraceFile {
    pub fn open(path: impl AsRef<Path>) -> Result<TraceFile, FormatError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| FormatError::Stream(e).with_path(path))?;
        let len = file
            .metadata()
            .map_err(|e| FormatError::Stream(e).with_path(path))?
            .len();
        if len == 0 {
            return Err(FormatError::Truncated("the file is empty".into()));
        }
        // SAFETY: the map is read-only; a concurrent truncation of the file by
        // another process could fault, as with any mmap reader.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| FormatError::Stream(e).with_path(path))?;
        Self::from_map(map)
    }

    fn from_map(map: memmap2::Mmap) -> Result<TraceFile, FormatError> {
        let bytes: &[u8] = &map;
        let (header, header_len) = parse_header_block(bytes)?;
        if bytes.len() < header_len + TRAILER_LEN || bytes[bytes.len() - 8..] != END_MAGIC {
            return Err(FormatError::Truncated(
                "no trailer at the end: the file is incomplete (the writer did not finish) or damaged"
                    .into(),
            ));
        }
        let trailer = &bytes[bytes.len() - TRAILER_LEN..];
        if crc32c::crc32c(&trailer[..12]) != u32_at(trailer, 12) {
            return Err(FormatError::CorruptFooter(
                "trailer checksum mismatch".into(),
            ));
        }
        let footer_offset = u64_at(trailer, 0);
        let footer_len = u32_at(trailer, 8) as u64;
        let trailer_start = (bytes.len() - TRAILER_LEN) as u64;
        if footer_offset < header_len as u64 || footer_offset + footer_len != trailer_start {
            return Err(FormatError::CorruptFooter(
                "the trailer's footer position is outside the file".into(),
            ));
        }
        let footer = parse_footer_block(&bytes[footer_offset as usize..trailer_start as usize])
            .map_err(FormatError::CorruptFooter)?;
        check_index(&footer, header_len as u64, footer_offset)
            .map_err(FormatError::CorruptFooter)?;
        Ok(TraceFile {
            map,
            header,
            footer,
        })
    }

    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    pub fn summary(&self) -> &Summary {
        &self.footer.summary
    }

    /// Bytes in the file.
    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }

    /// All records, one chunk in memory at a time.
    pub fn records(&self) -> Records<'_> {
        self.records_from_chunk(0)
    }

    /// Records from chunk `first` on (seek by time with `footer().chunks`).
    pub fn records_from_chunk(&self, first: usize) -> Records<'_> {
        Records {
            file: self,
            next_chunk: first,
            buffer: Vec::new(),
            pos: 0,
            failed: false,
        }
    }

    /// Decodes chunk `index` into `out`, checking its checksum and its index entry.
    pub fn read_chunk(&self, index: usize, out: &mut Vec<IoRecord>) -> Result<(), FormatError> {
        let chunks = self.footer.chunks.len();
        let info = self
            .footer
            .chunks
            .get(index)
            .ok_or_else(|| chunk_error(index, chunks, "no such chunk"))?;
        let start = info.offset as usize;
        let frame = &self.map[start..start + info.stored_len as usize];
        let head = decode_frame(frame, out).map_err(|r| chunk_error(index, chunks, r))?;
        check_chunk(info, head.records, head.first_time, out)
            .map_err(|r| chunk_error(index, chunks, r))
    }

    /// Decodes every chunk, checking every checksum.
    pub fn verify(&self) -> Result<(), FormatError> {
        let mut buf = Vec::new();
        for i in 0..self.footer.chunks.len() {
            self.read_chunk(i, &mut buf)?;
        }
        Ok(())
    }
}

/// Iterator over a trace's records; yields an error (once, then ends) for a
/// corrupt chunk.
pub struct Records<'a> {
    file: &'a TraceFile,
    next_chunk: usize,
    buffer: Vec<IoRecord>,
    pos: usize,
    failed: bool,
}

impl Iterator for Records<'_> {
    type Item = Result<IoRecord, FormatError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed {
                return None;
            }
            if let Some(r) = self.buffer.get(self.pos) {
                self.pos += 1;
                return Some(Ok(*r));
            }
            if self.next_chunk >= self.file.footer.chunks.len() {
                return None;
            }
            self.pos = 0;
            let index = self.next_chunk;
            self.next_chunk += 1;
            if let Err(e) = self.file.read_chunk(index, &mut self.buffer) {
                self.failed = true;
                self.buffer.clear();
                return Some(Err(e));
            }
        }
    }
}

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
        block.resize(PREAMBLE_LEN + header_len + 4, 0);
        let got = read_up_to(&mut input, &mut block[PREAMBLE_LEN..])?;
        block.truncate(PREAMBLE_LEN + got);
        let (header, block_len) = parse_header_block(&block)?;
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
        })
    }

    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The footer, after the iterator has returned `None`.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    fn read_exact_or(&mut self, n: usize, what: &str) -> Result<(), FormatError> {
        let start = self.frame.len();
        self.frame.resize(start + n, 0);
        let got = read_up_to(&mut self.input, &mut self.frame[start..])?;
        if got < n {
            return Err(FormatError::Truncated(format!(
                "the stream ends inside {what}"
            )));
        }
        Ok(())
    }

    /// Reads the next chunk into the buffer, or the footer (returns false).
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
            let footer = parse_footer_block(&self.frame).map_err(FormatError::CorruptFooter)?;
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
            let start = self.seen.first().map_or(self.position, |c| c.offset);
            check_index(&footer, start, self.position).map_err(FormatError::CorruptFooter)?;
            let mut extra = [0u8; 1];
            if read_up_to(&mut self.input, &mut extra)? != 0 {
                return Err(FormatError::CorruptFooter(
                    "bytes follow the trailer".into(),
                ));
            }
            self.footer = Some(footer);
            return Ok(false);
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
