//! Reading a `.tmt` file: [`TraceFile`] with random access, [`TraceReader`]
//! in one pass from any `Read`.

mod backing;
mod blocks;
mod checks;
mod stream;

use crate::error::{FormatError, FormatErrorKind};
use crate::frame::{decode_frame, u32_at, u64_at, PREAMBLE_LEN, TRAILER_LEN};
use crate::meta::{Summary, TraceHeader, TraceTail};
use crate::record::IoRecord;
use crate::section::{parse_sections, Sections};
use crate::units::Nanos;
use crate::{END_MAGIC, MAGIC, VERSION_MAJOR};
use backing::{Backing, FileStamp};
use blocks::{attach_task, parse_footer_block, parse_header_block};
use checks::{check_chunk, check_devices, check_index, chunk_error, summary_mismatch};
use serde::{Deserialize, Serialize};
use std::path::Path;
pub use stream::TraceReader;

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

/// A `.tmt` file with random access. Opening checks the header, the trailer,
/// the footer, the summary's consistency and the chunk index; records are
/// decoded, and their chunks' checksums checked, as they are read, and a full
/// pass checks every record against the summary and the device table.
///
/// The file is read with positioned reads, one chunk at a time, not through a
/// memory map: a mapped file that another process truncates or rewrites in
/// place (`cp new.tmt live.tmt` during a replay) kills the reader with SIGBUS,
/// which no error path can catch. A positioned read instead sees the change
/// (short read, checksum mismatch, or a new size or time stamp, checked after
/// every read) and reports [`FormatError::Changed`]. A map would not be worth
/// it anyway: decoding every record of a 20-million-I/O trace through one took
/// 0.703 s against 0.746 s with `pread` (medians of 5 alternating runs, ratio
/// 1.06; `bench/mmap_read.sh`, `docs/measurements/mmap-read.md`).
pub struct TraceFile {
    backing: Backing,
    header: TraceHeader,
    footer: Footer,
}

/// The largest header or footer a reader accepts (as the writer's limit).
const MAX_BLOCK: u64 = (64 << 20) + 16;

impl TraceFile {
    pub fn open(path: impl AsRef<Path>) -> Result<TraceFile, FormatError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = path.as_ref();
        let with_path = |e: std::io::Error| FormatError::Stream(e).with_path(path);
        // Non-blocking, so a FIFO given as a trace is refused below instead of
        // waiting for a writer forever. (No effect on a regular file.)
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(with_path)?;
        let kind = file.metadata().map_err(with_path)?.file_type();
        if !kind.is_file() {
            return Err(FormatError::NotAFile {
                path: path.to_path_buf(),
                kind: outfile::kind_name(&kind),
            });
        }
        let stamp = FileStamp::of(&file).map_err(with_path)?;
        Self::from_backing(Backing::File { file, stamp }).map_err(|e| e.with_path(path))
    }

    /// A trace held in memory (checked as [`TraceFile::open`] checks a file).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<TraceFile, FormatError> {
        Self::from_backing(Backing::Memory(bytes))
    }

    fn from_backing(backing: Backing) -> Result<TraceFile, FormatError> {
        let file_len = backing.len();
        if file_len == 0 {
            return Err(FormatError::Truncated("the file is empty".into()));
        }
        let mut buf = Vec::new();
        backing.read_at(0, file_len.min(PREAMBLE_LEN as u64) as usize, &mut buf)?;
        if buf.len() == PREAMBLE_LEN {
            let header_len = u64::from(u32_at(&buf, 12));
            let major = u16::from_le_bytes([buf[8], buf[9]]);
            if header_len > MAX_BLOCK && major <= VERSION_MAJOR && buf[..8] == MAGIC {
                return Err(FormatError::CorruptHeader(format!(
                    "implausible header length {header_len}"
                )));
            }
            let want = (PREAMBLE_LEN as u64 + header_len + 4).min(file_len);
            backing.read_at(0, want as usize, &mut buf)?;
        }
        let (header, header_len, minor) = parse_header_block(&buf)?;
        let header_len = header_len as u64;
        if file_len < header_len + TRAILER_LEN as u64 {
            return Err(no_trailer());
        }
        let trailer_start = file_len - TRAILER_LEN as u64;
        backing.read_at(trailer_start, TRAILER_LEN, &mut buf)?;
        let trailer = &buf[..];
        if trailer[16..] != END_MAGIC {
            return Err(no_trailer());
        }
        if crc32c::crc32c(&trailer[..12]) != u32_at(trailer, 12) {
            return Err(FormatError::CorruptFooter(
                "trailer checksum mismatch".into(),
            ));
        }
        let footer_offset = u64_at(trailer, 0);
        let footer_len = u64::from(u32_at(trailer, 8));
        // Checked: a crafted offset near 2^64 must not wrap into range.
        if footer_offset < header_len
            || footer_offset.checked_add(footer_len) != Some(trailer_start)
            || footer_len > MAX_BLOCK
        {
            return Err(FormatError::CorruptFooter(
                "the trailer's footer position is outside the file".into(),
            ));
        }
        backing.read_at(footer_offset, footer_len as usize, &mut buf)?;
        let mut footer = parse_footer_block(&buf).map_err(FormatError::CorruptFooter)?;
        // From minor 1 on, sections may lie between the last chunk and the footer.
        let chunks_end = match footer.chunks.last() {
            Some(c) if minor > 0 => c
                .offset
                .checked_add(u64::from(c.stored_len))
                .filter(|&end| end <= footer_offset)
                .ok_or_else(|| {
                    FormatError::CorruptFooter("the index runs past the footer".into())
                })?,
            None if minor > 0 => header_len,
            _ => footer_offset,
        };
        check_index(&footer, header_len, chunks_end).map_err(FormatError::CorruptFooter)?;
        let sections = if chunks_end < footer_offset {
            let len = footer_offset - chunks_end;
            if len > MAX_BLOCK {
                return Err(FormatError::CorruptFooter(format!(
                    "implausible {len} bytes between the last chunk and the footer"
                )));
            }
            backing.read_at(chunks_end, len as usize, &mut buf)?;
            parse_sections(&buf)?
        } else {
            Sections::default()
        };
        attach_task(&mut footer, sections)?;
        Ok(TraceFile {
            backing,
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
        self.backing.len()
    }

    /// All records, one chunk in memory at a time. After the last record the
    /// iterator checks what it read against the footer's summary and yields an
    /// error if they disagree.
    pub fn records(&self) -> Records<'_> {
        self.records_from_chunk(0)
    }

    /// Records from chunk `first` on (seek by time with `footer().chunks`).
    /// Every record's device index is checked; the summary only when reading
    /// from chunk 0.
    pub fn records_from_chunk(&self, first: usize) -> Records<'_> {
        Records {
            file: self,
            next_chunk: first,
            buffer: Vec::new(),
            frame: Vec::new(),
            pos: 0,
            done: false,
            check: (first == 0).then(Summary::default),
        }
    }

    /// Decodes chunk `index` into `out`, checking its checksum, its index
    /// entry and every record's device index.
    pub fn read_chunk(&self, index: usize, out: &mut Vec<IoRecord>) -> Result<(), FormatError> {
        self.read_chunk_with(index, out, &mut Vec::new())
    }

    fn read_chunk_with(
        &self,
        index: usize,
        out: &mut Vec<IoRecord>,
        frame: &mut Vec<u8>,
    ) -> Result<(), FormatError> {
        let chunks = self.footer.chunks.len();
        let info = self
            .footer
            .chunks
            .get(index)
            .ok_or_else(|| chunk_error(index, chunks, "no such chunk"))?;
        self.backing
            .read_at(info.offset, info.stored_len as usize, frame)
            .map_err(|e| match e {
                FormatError::Truncated(r) => chunk_error(index, chunks, r),
                e => e,
            })?;
        let checked = decode_frame(frame, out)
            .and_then(|head| check_chunk(info, head.records, head.first_time, out))
            .map_err(|reason| chunk_error(index, chunks, reason))
            .and_then(|()| {
                check_devices(out, self.footer.tail.devices.len()).map_err(|reason| {
                    FormatError::CorruptChunk {
                        chunk: index,
                        chunks,
                        kind: FormatErrorKind::UnknownDevice,
                        reason,
                    }
                })
            });
        if let Err(error) = checked {
            // A chunk that fails its checks in a file rewritten since it was
            // opened is not corrupt, it is someone else's bytes: say that.
            self.backing.check_unchanged()?;
            return Err(error);
        }
        Ok(())
    }

    /// Decodes every chunk, checking every checksum, every record and the summary.
    pub fn verify(&self) -> Result<(), FormatError> {
        for r in self.records() {
            r?;
        }
        Ok(())
    }
}

fn no_trailer() -> FormatError {
    FormatError::Truncated(
        "no trailer at the end: the file is incomplete (the writer did not finish) or damaged"
            .into(),
    )
}

/// Iterator over a trace's records; yields an error (once, then ends) for a
/// corrupt chunk, or, after the last record, for a summary that disagrees
/// with the records.
pub struct Records<'a> {
    file: &'a TraceFile,
    next_chunk: usize,
    buffer: Vec<IoRecord>,
    frame: Vec<u8>,
    pos: usize,
    done: bool,
    /// The summary of the records read so far, when reading from the start.
    check: Option<Summary>,
}

impl Iterator for Records<'_> {
    type Item = Result<IoRecord, FormatError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if let Some(r) = self.buffer.get(self.pos) {
                self.pos += 1;
                if let Some(s) = self.check.as_mut() {
                    s.add(r);
                }
                return Some(Ok(*r));
            }
            if self.next_chunk >= self.file.footer.chunks.len() {
                self.done = true;
                let counted = self.check.as_ref()?;
                return summary_mismatch(&self.file.footer.summary, counted)
                    .map(|r| Err(FormatError::CorruptFooter(r)));
            }
            self.pos = 0;
            let index = self.next_chunk;
            self.next_chunk += 1;
            if let Err(e) = self
                .file
                .read_chunk_with(index, &mut self.buffer, &mut self.frame)
            {
                self.done = true;
                self.buffer.clear();
                return Some(Err(e));
            }
        }
    }
}
