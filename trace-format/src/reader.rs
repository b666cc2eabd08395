use crate::error::{FormatError, FormatErrorKind};
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

fn chunk_error(chunk: usize, chunks: usize, reason: impl Into<String>) -> FormatError {
    FormatError::CorruptChunk {
        chunk,
        chunks,
        kind: FormatErrorKind::CorruptChunk,
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

/// Where a [`TraceFile`]'s bytes live.
enum Backing {
    /// A file read with positioned reads (`pread`), one chunk at a time.
    File {
        file: std::fs::File,
        stamp: FileStamp,
    },
    /// Bytes already in memory (tests, fuzzing, small embedded traces).
    Memory(Vec<u8>),
}

/// What tells a file rewritten in place from the one that was opened: a
/// rewrite (`cp new.tmt live.tmt`, an editor saving) changes the length or the
/// modification or change time of the same inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    fn of(file: &std::fs::File) -> std::io::Result<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata()?;
        Ok(FileStamp {
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

impl Backing {
    fn len(&self) -> u64 {
        match self {
            Backing::File { stamp, .. } => stamp.len,
            Backing::Memory(bytes) => bytes.len() as u64,
        }
    }

    /// Reads `len` bytes at `offset` into `out`; a range beyond the end (the
    /// file shrank) is a truncation.
    fn read_at(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<(), FormatError> {
        out.clear();
        let end = offset
            .checked_add(len as u64)
            .filter(|&e| e <= self.len())
            .ok_or_else(|| {
                FormatError::Truncated("a block runs past the end of the file".into())
            })?;
        match self {
            Backing::Memory(bytes) => {
                out.extend_from_slice(&bytes[offset as usize..end as usize]);
                Ok(())
            }
            Backing::File { file, .. } => {
                use std::os::unix::fs::FileExt;
                out.resize(len, 0);
                let mut got = 0;
                while got < len {
                    match file.read_at(&mut out[got..], offset + got as u64) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(FormatError::Stream(e)),
                    }
                }
                self.check_unchanged()?;
                if got < len {
                    return Err(FormatError::Truncated(
                        "a block runs past the end of the file".into(),
                    ));
                }
                Ok(())
            }
        }
    }

    /// Fails when the file is no longer the one that was opened.
    fn check_unchanged(&self) -> Result<(), FormatError> {
        if let Backing::File { file, stamp } = self {
            if FileStamp::of(file).map_err(FormatError::Stream)? != *stamp {
                return Err(FormatError::Changed);
            }
        }
        Ok(())
    }
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
                kind: describe_file_type(kind),
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
        let (header, header_len) = parse_header_block(&buf)?;
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
        let footer = parse_footer_block(&buf).map_err(FormatError::CorruptFooter)?;
        check_index(&footer, header_len, footer_offset).map_err(FormatError::CorruptFooter)?;
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

/// What a path that is not a regular file is, for the error message.
fn describe_file_type(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn no_trailer() -> FormatError {
    FormatError::Truncated(
        "no trailer at the end: the file is incomplete (the writer did not finish) or damaged"
            .into(),
    )
}

/// Checks that every record names a device of the table. A trace without a
/// table (a source that names no device) has only device 0.
fn check_devices(records: &[IoRecord], table_len: usize) -> Result<(), String> {
    let limit = table_len.max(1);
    match records.iter().position(|r| usize::from(r.device) >= limit) {
        None => Ok(()),
        Some(i) => Err(format!(
            "record {i} of the chunk names device {} but the device table has {table_len} entries",
            records[i].device
        )),
    }
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

fn opt(b: Option<crate::units::Bytes>) -> String {
    b.map_or_else(|| "none".to_string(), |b| b.0.to_string())
}

/// Names the first field where the footer's summary differs from the summary
/// of the records actually read.
fn summary_mismatch(stored: &Summary, counted: &Summary) -> Option<String> {
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
            counted: Summary::default(),
            max_device: 0,
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
