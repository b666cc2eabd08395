//! Parser for blktrace binary files: per-CPU sets `NAME.blktrace.N` (merged by
//! time), `blkparse -d` dumps, and the ftrace `blk` tracer's binary output.
//!
//! A file is a sequence of `struct blk_io_trace` records, each followed by
//! `pdu_len` bytes of payload. Two record layouts exist (see the kernel's
//! `include/uapi/linux/blktrace_api.h`):
//!
//! | version | size | layout after `magic, sequence: u32; time, sector: u64; bytes: u32` |
//! |---------|------|--------------------------------------------------------------------|
//! | 7       | 48   | `action: u32, pid, device, cpu: u32, error, pdu_len: u16`           |
//! | 8       | 64   | `pid: u32, action: u64, device, cpu: u32, error, pdu_len: u16, pad[12]` |
//!
//! Records are in the byte order of the machine that captured them; the magic
//! (`0x65617400 | version`) tells which. The action's low 16 bits are the action
//! code, the bits above are category flags (read, write, sync, ...).

use crate::formats::{FormatSpec, Reader};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Action, BlockEvent, Location};
use crate::sink::Sink;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};
use trace_format::{Bytes, DeviceId, Flags, Nanos, Op};

/// `BLK_IO_TRACE_MAGIC`: the upper 24 bits of every record's first word.
pub const MAGIC: u32 = 0x6561_7400;
/// Size of a version 7 record header (`struct blk_io_trace`).
pub const V7_HEADER_LEN: usize = 48;
/// Size of a version 8 record header (`struct blk_io_trace2`).
pub const V8_HEADER_LEN: usize = 64;
/// Size of the header ftrace puts before each record in binary mode
/// (`pid: u32, cpu: u32, timestamp: u64`).
pub const FTRACE_HEADER_LEN: usize = 16;
/// Largest payload accepted. The kernel writes at most a few hundred bytes
/// (remap 16, process name 16, messages up to 128, SCSI CDBs, cgroup ids); a
/// larger value means the stream is corrupt.
pub const MAX_PDU_LEN: u16 = 4096;
/// How far a record's time may go back behind the previous record of the same
/// file before it is treated as corrupt (CPU clocks drift a little; a per-CPU
/// file is otherwise in time order).
pub const MAX_BACKWARDS: Nanos = Nanos(1_000_000_000);

/// Action codes (the low 16 bits of `action`, `__BLK_TA_*`).
pub mod action {
    pub const QUEUE: u16 = 1;
    pub const BACKMERGE: u16 = 2;
    pub const FRONTMERGE: u16 = 3;
    pub const GETRQ: u16 = 4;
    pub const SLEEPRQ: u16 = 5;
    pub const REQUEUE: u16 = 6;
    pub const ISSUE: u16 = 7;
    pub const COMPLETE: u16 = 8;
    pub const PLUG: u16 = 9;
    pub const UNPLUG_IO: u16 = 10;
    pub const UNPLUG_TIMER: u16 = 11;
    pub const INSERT: u16 = 12;
    pub const SPLIT: u16 = 13;
    pub const BOUNCE: u16 = 14;
    pub const REMAP: u16 = 15;
    pub const ABORT: u16 = 16;
    pub const DRV_DATA: u16 = 17;
    pub const ZONE_PLUG: u16 = 18;
    pub const ZONE_UNPLUG: u16 = 19;
    /// Flag in the action code: the payload starts with an 8-byte cgroup id.
    pub const CGROUP: u16 = 1 << 8;
    /// Notify kinds (action code of a record in the NOTIFY category).
    pub const NOTIFY_PROCESS: u16 = 0;
    pub const NOTIFY_TIMESTAMP: u16 = 1;
    pub const NOTIFY_MESSAGE: u16 = 2;
}

/// Category bits (`BLK_TC_*`), as found in `action >> 16`.
pub mod category {
    pub const READ: u64 = 1 << 0;
    pub const WRITE: u64 = 1 << 1;
    /// A flush request, or the preflush of a write.
    pub const FLUSH: u64 = 1 << 2;
    pub const SYNC: u64 = 1 << 3;
    pub const QUEUE: u64 = 1 << 4;
    pub const REQUEUE: u64 = 1 << 5;
    pub const ISSUE: u64 = 1 << 6;
    pub const COMPLETE: u64 = 1 << 7;
    pub const FS: u64 = 1 << 8;
    /// Passthrough (SCSI/NVMe command) request.
    pub const PC: u64 = 1 << 9;
    pub const NOTIFY: u64 = 1 << 10;
    pub const AHEAD: u64 = 1 << 11;
    pub const META: u64 = 1 << 12;
    pub const DISCARD: u64 = 1 << 13;
    pub const DRV_DATA: u64 = 1 << 14;
    pub const FUA: u64 = 1 << 15;
    /// Version 8 only.
    pub const ZONE_APPEND: u64 = 1 << 16;
    /// Version 8 only.
    pub const WRITE_ZEROES: u64 = 1 << 22;
}

/// Bits of `action` below the category flags.
const TC_SHIFT: u32 = 16;

/// The byte order of a file's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

/// How records are framed in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Bare records, as blktrace writes its per-CPU files and `blkparse -d` its dumps.
    Blktrace,
    /// Each record behind the 16-byte header ftrace writes in binary mode
    /// (`trace_pipe` with the `blk` tracer and the `bin` option).
    FtraceBin,
}

/// One decoded record header (both versions map to this; v7's 32-bit action is
/// widened).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord {
    pub version: u8,
    pub byte_order: ByteOrder,
    pub sequence: u32,
    pub time: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u64,
    pub pid: u32,
    /// Kernel-internal dev_t: `MAJOR << 20 | MINOR`.
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
    pub pdu_len: u16,
}

impl RawRecord {
    /// The action code without the cgroup flag.
    pub fn action_code(&self) -> u16 {
        (self.action & 0xffff) as u16 & !action::CGROUP
    }

    /// The category bits.
    pub fn categories(&self) -> u64 {
        self.action >> TC_SHIFT
    }

    pub fn has_cgroup(&self) -> bool {
        self.action & u64::from(action::CGROUP) != 0
    }

    pub fn device_id(&self) -> DeviceId {
        DeviceId {
            major: self.device >> 20,
            minor: self.device & 0xf_ffff,
        }
    }

    pub fn header_len(&self) -> usize {
        header_len(self.version).unwrap_or(V7_HEADER_LEN)
    }
}

fn header_len(version: u8) -> Option<usize> {
    match version {
        7 => Some(V7_HEADER_LEN),
        8 => Some(V8_HEADER_LEN),
        _ => None,
    }
}

/// The byte order and version a record's first four bytes announce, if they are
/// a blktrace magic of a supported version.
pub fn magic_of(first: [u8; 4]) -> Option<(ByteOrder, u8)> {
    for (order, word) in [
        (ByteOrder::Little, u32::from_le_bytes(first)),
        (ByteOrder::Big, u32::from_be_bytes(first)),
    ] {
        if word & 0xffff_ff00 == MAGIC {
            let version = (word & 0xff) as u8;
            if header_len(version).is_some() {
                return Some((order, version));
            }
        }
    }
    None
}

/// Reads fixed-size fields of one byte order.
struct Fields<'a> {
    bytes: &'a [u8],
    order: ByteOrder,
}

impl Fields<'_> {
    fn u16_at(&self, at: usize) -> u16 {
        let mut b = [0u8; 2];
        if let Some(s) = self.bytes.get(at..at + 2) {
            b.copy_from_slice(s);
        }
        match self.order {
            ByteOrder::Little => u16::from_le_bytes(b),
            ByteOrder::Big => u16::from_be_bytes(b),
        }
    }
    fn u32_at(&self, at: usize) -> u32 {
        let mut b = [0u8; 4];
        if let Some(s) = self.bytes.get(at..at + 4) {
            b.copy_from_slice(s);
        }
        match self.order {
            ByteOrder::Little => u32::from_le_bytes(b),
            ByteOrder::Big => u32::from_be_bytes(b),
        }
    }
    fn u64_at(&self, at: usize) -> u64 {
        let mut b = [0u8; 8];
        if let Some(s) = self.bytes.get(at..at + 8) {
            b.copy_from_slice(s);
        }
        match self.order {
            ByteOrder::Little => u64::from_le_bytes(b),
            ByteOrder::Big => u64::from_be_bytes(b),
        }
    }
}

/// Decodes a record header; `None` when the magic is not blktrace or the slice
/// is shorter than the header its version needs.
pub fn decode_header(bytes: &[u8]) -> Option<RawRecord> {
    let first: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    let (byte_order, version) = magic_of(first)?;
    let len = header_len(version)?;
    if bytes.len() < len {
        return None;
    }
    let f = Fields {
        bytes,
        order: byte_order,
    };
    let common =
        |action: u64, pid: u32, device: u32, cpu: u32, error: u16, pdu_len: u16| RawRecord {
            version,
            byte_order,
            sequence: f.u32_at(4),
            time: f.u64_at(8),
            sector: f.u64_at(16),
            bytes: f.u32_at(24),
            action,
            pid,
            device,
            cpu,
            error,
            pdu_len,
        };
    Some(if version == 7 {
        common(
            u64::from(f.u32_at(28)),
            f.u32_at(32),
            f.u32_at(36),
            f.u32_at(40),
            f.u16_at(44),
            f.u16_at(46),
        )
    } else {
        common(
            f.u64_at(32),
            f.u32_at(28),
            f.u32_at(40),
            f.u32_at(44),
            f.u16_at(48),
            f.u16_at(50),
        )
    })
}

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "blktrace",
    aliases: &[],
    about: "blktrace binary: NAME.blktrace.N per-CPU sets (give NAME or the files), blkparse -d dumps",
    looks_like,
    reader: Reader::FileSet {
        parse: parse_files,
        members: set_members,
    },
    example: "",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like
/// blktrace binary: a record magic of version 7 or 8 in either byte order, and,
/// when the whole header is there, a sane payload length.
pub fn looks_like(head: &[u8]) -> bool {
    let Some(first) = head.get(..4).and_then(|s| <[u8; 4]>::try_from(s).ok()) else {
        return false;
    };
    let Some((_, version)) = magic_of(first) else {
        return false;
    };
    match decode_header(head) {
        Some(rec) => rec.pdu_len <= MAX_PDU_LEN,
        None => header_len(version).is_some_and(|len| head.len() < len),
    }
}

/// Space-separated hex of `bytes` (at most 64 of them), for error messages.
fn hex_dump(bytes: &[u8]) -> String {
    let shown = bytes.get(..64).unwrap_or(bytes);
    let mut out = String::with_capacity(shown.len() * 3);
    for (i, b) in shown.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&format!("{b:02x}"));
    }
    if bytes.len() > shown.len() {
        out.push_str(" ...");
    }
    out
}

/// Reads as many bytes as are there up to `buf.len()`; returns how many.
fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Decodes a record's header and checks its payload length; `Err` holds the
/// bad record.
#[inline]
fn check_header(header: &[u8], pos: RecordPosition) -> Result<RawRecord, Step> {
    let Some(rec) = decode_header(header) else {
        return Err(Step::Bad {
            pos,
            dump: hex_dump(header),
            reason: bad(BadInputKind::Corrupt, "bad record header"),
            resumable: false,
        });
    };
    if rec.pdu_len > MAX_PDU_LEN {
        return Err(Step::Bad {
            pos,
            dump: hex_dump(header),
            reason: bad(BadInputKind::OutOfRange, format!(
                "absurd payload length {} (at most {MAX_PDU_LEN} expected)",
                rec.pdu_len
            )),
            resumable: false,
        });
    }
    Ok(rec)
}

/// Where a record was found in its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordPosition {
    /// 0-based record number in the stream.
    pub index: u64,
    /// Byte offset of the record (of its ftrace header, for ftrace framing).
    pub byte_offset: u64,
}

/// Streams records out of one file or pipe, checking each. Memory use is one
/// header and one payload.
pub struct RecordReader<R: Read> {
    reader: R,
    name: String,
    framing: Framing,
    /// Byte order and version of the first record; every later one must match.
    format: Option<(ByteOrder, u8)>,
    index: u64,
    offset: u64,
    last_time: Option<u64>,
    pdu: Vec<u8>,
    finished: bool,
    /// Records read ahead to judge a jump in time (not yet judged
    /// themselves), each with its payload; empty except after a jump.
    ahead: VecDeque<(Step, Vec<u8>)>,
    /// Payload buffers of read-ahead records, kept for reuse.
    spare_pdus: Vec<Vec<u8>>,
}

impl<R: Read> RecordReader<R> {
    /// `name` is used in error messages (normally the file's path).
    pub fn new(reader: R, name: impl Into<String>, framing: Framing) -> Self {
        RecordReader {
            reader,
            name: name.into(),
            framing,
            format: None,
            index: 0,
            offset: 0,
            last_time: None,
            pdu: Vec::new(),
            finished: false,
            ahead: VecDeque::new(),
            spare_pdus: Vec::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The payload of the record last returned by [`next_record`](Self::next_record).
    pub fn pdu(&self) -> &[u8] {
        &self.pdu
    }

    /// Records read so far: returned, skipped, or read ahead to judge a jump.
    pub fn records_read(&self) -> u64 {
        self.index
    }

    /// The next good record, or `None` at the end of the stream. A bad record is
    /// reported to `sink.bad_input`; when the sink says go on, a record whose
    /// length is known is skipped, otherwise the stream cannot be followed and
    /// this returns an error.
    pub fn next_record(
        &mut self,
        sink: &mut dyn Sink,
    ) -> Result<Option<(RawRecord, RecordPosition)>, ConvertError> {
        loop {
            if self.finished {
                return Ok(None);
            }
            let step = match self.ahead.pop_front() {
                Some((step, mut pdu)) => {
                    std::mem::swap(&mut self.pdu, &mut pdu);
                    self.spare_pdus.push(pdu);
                    step
                }
                None => self.read_one()?,
            };
            let step = match step {
                Step::Record(rec, pos) => self.judge_time(rec, pos),
                other => other,
            };
            match step {
                Step::End => {
                    self.finished = true;
                    return Ok(None);
                }
                Step::Record(rec, pos) => return Ok(Some((rec, pos))),
                Step::Jump(rec, pos) => {
                    if let Some(record) = self.settle_jump(rec, pos, sink)? {
                        return Ok(Some(record));
                    }
                }
                Step::Bad {
                    pos,
                    dump,
                    reason,
                    resumable,
                } => {
                    let at = Location::record(&self.name, pos.index, pos.byte_offset);
                    sink.bad_input(at, &dump, &reason)?;
                    if !resumable {
                        self.finished = true;
                        return Err(ConvertError::BadInput {
                            location: at.to_string(),
                            content: dump,
                            reason: format!("{reason}; the records after it cannot be found"),
                            kind: reason.kind,
                        });
                    }
                }
                Step::Truncated { pos, dump, reason } => {
                    let at = Location::record(&self.name, pos.index, pos.byte_offset);
                    self.finished = true;
                    sink.bad_input(at, &dump, &reason)?;
                    return Ok(None);
                }
            }
        }
    }

    fn io_error(&self, source: std::io::Error) -> ConvertError {
        ConvertError::Io {
            path: PathBuf::from(&self.name),
            source,
        }
    }

    fn read_one(&mut self) -> Result<Step, ConvertError> {
        let pos = RecordPosition {
            index: self.index,
            byte_offset: self.offset,
        };
        let mut buf = [0u8; FTRACE_HEADER_LEN + V8_HEADER_LEN];
        let prefix = match self.framing {
            Framing::Blktrace => 0,
            Framing::FtraceBin => FTRACE_HEADER_LEN,
        };
        // Prefix and magic first: they say how long the header is.
        let want = prefix + 4;
        let got = read_up_to(&mut self.reader, &mut buf[..want]).map_err(|e| self.io_error(e))?;
        if got == 0 {
            return Ok(Step::End);
        }
        if got < want {
            return Ok(Step::Truncated {
                pos,
                dump: hex_dump(&buf[..got]),
                reason: bad(BadInputKind::Truncated, format!("truncated record: the file ends {got} bytes into it")),
            });
        }
        let format = match self.check_magic(&buf[..want], prefix, pos) {
            Ok(format) => format,
            Err(bad_magic) => return Ok(bad_magic),
        };
        let header_len = header_len(format.1).unwrap_or(V7_HEADER_LEN);
        let full = prefix + header_len;
        let got = want
            + read_up_to(&mut self.reader, &mut buf[want..full]).map_err(|e| self.io_error(e))?;
        if got < full {
            return Ok(Step::Truncated {
                pos,
                dump: hex_dump(&buf[..got]),
                reason: bad(BadInputKind::Truncated, format!(
                    "truncated record: the file ends {} bytes into a {header_len}-byte header",
                    got - prefix
                )),
            });
        }
        let header = &buf[prefix..full];
        let rec = match check_header(header, pos) {
            Ok(rec) => rec,
            Err(bad_header) => return Ok(bad_header),
        };
        self.read_pdu(rec, header, full, pos)
    }

    /// The record's magic (after `prefix` bytes of `start`): its byte order
    /// and version, which must be those of the file's first record; `Err`
    /// holds the bad record.
    #[inline]
    fn check_magic(
        &mut self,
        start: &[u8],
        prefix: usize,
        pos: RecordPosition,
    ) -> Result<(ByteOrder, u8), Step> {
        let first = [
            start[prefix],
            start[prefix + 1],
            start[prefix + 2],
            start[prefix + 3],
        ];
        let Some(format) = magic_of(first) else {
            return Err(Step::Bad {
                pos,
                dump: hex_dump(start),
                reason: bad(BadInputKind::Corrupt, "bad magic: not a blktrace record (expected 0x656174 followed by version 7 or 8)"),
                resumable: false,
            });
        };
        if let Some(expected) = self.format {
            if expected != format {
                return Err(Step::Bad {
                    pos,
                    dump: hex_dump(start),
                    reason: bad(BadInputKind::Corrupt, format!(
                        "bad magic: version {} {:?}-endian record in a file of version {} {:?}-endian records",
                        format.1, format.0, expected.1, expected.0
                    )),
                    resumable: false,
                });
            }
        } else {
            self.format = Some(format);
        }
        Ok(format)
    }

    /// Reads the payload of `rec` (whose header is `header`, `full` bytes
    /// with the framing's prefix) into `self.pdu`; the whole record is
    /// consumed then.
    #[inline]
    fn read_pdu(
        &mut self,
        rec: RawRecord,
        header: &[u8],
        full: usize,
        pos: RecordPosition,
    ) -> Result<Step, ConvertError> {
        self.pdu.resize(usize::from(rec.pdu_len), 0);
        let got_pdu = read_up_to(&mut self.reader, &mut self.pdu).map_err(|e| self.io_error(e))?;
        if got_pdu < self.pdu.len() {
            return Ok(Step::Truncated {
                pos,
                dump: hex_dump(header),
                reason: bad(BadInputKind::Truncated, format!(
                    "truncated record: payload of {} bytes but the file ends after {got_pdu}",
                    rec.pdu_len
                )),
            });
        }
        // The whole record is consumed from here on: a bad one can be skipped.
        self.index += 1;
        self.offset += (full + self.pdu.len()) as u64;
        Ok(Step::Record(rec, pos))
    }

    /// Checks a whole record's time against the file's times so far: a step
    /// back of more than [`MAX_BACKWARDS`] is a bad record, a step ahead of
    /// more than that is a [`Step::Jump`] to be judged by the records after it.
    fn judge_time(&mut self, rec: RawRecord, pos: RecordPosition) -> Step {
        // Notify records are exempt: blkparse writes them into its dumps out of
        // time order (process names carry the time they were first seen).
        if rec.categories() & category::NOTIFY != 0 {
            return Step::Record(rec, pos);
        }
        if let Some(last) = self.last_time {
            if rec.time.saturating_add(MAX_BACKWARDS.0) < last {
                return Step::Bad {
                    pos,
                    dump: hex_dump(&encode_for_dump(&rec)),
                    reason: bad(BadInputKind::TimeOrder, format!(
                        "time goes backwards by {} ns (from {last} to {})",
                        last - rec.time,
                        rec.time
                    )),
                    resumable: true,
                };
            }
            if rec.time > last.saturating_add(MAX_BACKWARDS.0) {
                return Step::Jump(rec, pos);
            }
        }
        self.last_time = Some(self.last_time.map_or(rec.time, |t| t.max(rec.time)));
        Step::Record(rec, pos)
    }
}

enum Step {
    End,
    Record(RawRecord, RecordPosition),
    /// A record more than [`MAX_BACKWARDS`] ahead of the file's times so far:
    /// an idle gap, or a bad timestamp.
    Jump(RawRecord, RecordPosition),
    Bad {
        pos: RecordPosition,
        dump: String,
        reason: BadReason,
        /// Whether the record's extent is known, so reading can go on after it.
        resumable: bool,
    },
    Truncated {
        pos: RecordPosition,
        dump: String,
        reason: BadReason,
    },
}

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
fn wall_clock_of(rec: &RawRecord, payload: &[u8]) -> Option<i64> {
    let f = Fields {
        bytes: payload.get(..8)?,
        order: rec.byte_order,
    };
    let secs = i64::from(f.u32_at(0));
    let nanos = i64::from(f.u32_at(4));
    let wall = secs.checked_mul(1_000_000_000)?.checked_add(nanos)?;
    wall.checked_sub(i64::try_from(rec.time).ok()?)
}

/// A version 7 little-endian rendering of a decoded header, for error dumps
/// after the original bytes are gone.
fn encode_for_dump(rec: &RawRecord) -> Vec<u8> {
    let mut out = Vec::with_capacity(V7_HEADER_LEN);
    out.extend_from_slice(&(MAGIC | u32::from(rec.version)).to_le_bytes());
    out.extend_from_slice(&rec.sequence.to_le_bytes());
    out.extend_from_slice(&rec.time.to_le_bytes());
    out.extend_from_slice(&rec.sector.to_le_bytes());
    out.extend_from_slice(&rec.bytes.to_le_bytes());
    out.extend_from_slice(&(rec.action as u32).to_le_bytes());
    out.extend_from_slice(&rec.pid.to_le_bytes());
    out.extend_from_slice(&rec.device.to_le_bytes());
    out.extend_from_slice(&rec.cpu.to_le_bytes());
    out.extend_from_slice(&rec.error.to_le_bytes());
    out.extend_from_slice(&rec.pdu_len.to_le_bytes());
    out
}

/// Parses one stream of records (a single file, a `blkparse -d` dump, or live
/// ftrace output) in stream order, reporting to `sink`. Returns the number of
/// records read. Live capture reuses this with [`Framing::FtraceBin`].
pub fn parse_reader<R: Read>(
    reader: R,
    name: &str,
    framing: Framing,
    sink: &mut dyn Sink,
) -> Result<u64, ConvertError> {
    let mut records = RecordReader::new(reader, name, framing);
    let mut count = 0;
    while let Some((rec, pos)) = records.next_record(sink)? {
        count += 1;
        let at = Location::record(name, pos.index, pos.byte_offset);
        deliver(&rec, records.pdu(), at, sink)?;
    }
    Ok(count)
}

/// The files of a per-CPU set `PREFIX.blktrace.N`, in CPU order; empty when
/// there are none.
pub fn set_members(prefix: &Path) -> Result<Vec<PathBuf>, ConvertError> {
    let dir = match prefix.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(stem) = prefix.file_name().and_then(|s| s.to_str()) else {
        return Ok(Vec::new());
    };
    let wanted = format!("{stem}.blktrace.");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ConvertError::Io { path: dir, source }),
    };
    let mut members = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| ConvertError::Io {
            path: dir.clone(),
            source,
        })?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(cpu) = name.strip_prefix(&wanted) {
            if !cpu.is_empty() && cpu.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(n) = cpu.parse::<u64>() {
                    members.push((n, dir.join(name)));
                }
            }
        }
    }
    members.sort();
    Ok(members.into_iter().map(|(_, p)| p).collect())
}

/// The files named by the user: each path is a file, or the prefix `NAME` of a
/// set `NAME.blktrace.N`.
pub fn resolve_inputs(paths: &[&Path]) -> Result<Vec<PathBuf>, ConvertError> {
    let mut files = Vec::new();
    for &path in paths {
        if path.is_file() {
            files.push(path.to_path_buf());
            continue;
        }
        let members = set_members(path)?;
        if members.is_empty() {
            return Err(ConvertError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    ErrorKind::NotFound,
                    "no such file, and no per-CPU files NAME.blktrace.N with this prefix",
                ),
            });
        }
        files.extend(members);
    }
    Ok(files)
}

/// Parses the files of one capture (the per-CPU files `NAME.blktrace.N` of a set,
/// merged by time, or a single dump), reporting to `sink` in time order. A path
/// may also be the set's prefix `NAME`. Memory holds one record per file.
pub fn parse_files(paths: &[&Path], sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let files = resolve_inputs(paths)?;
    for warning in set_check::numbering_gaps(&files) {
        sink.warning(warning);
    }
    let mut readers = Vec::with_capacity(files.len());
    for path in &files {
        let (_, file) = crate::decompress::open(path)?;
        readers.push(RecordReader::new(
            BufReader::with_capacity(64 * 1024, file),
            path.display().to_string(),
            Framing::Blktrace,
        ));
    }
    let total = merge(&mut readers, sink)?;
    if total == 0 {
        let first = files
            .first()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let what = if files.len() > 1 {
            format!(
                "{first} (and the other {} files of the set)",
                files.len() - 1
            )
        } else {
            first
        };
        return Err(ConvertError::Invalid {
            location: Location::record(&what, 0, 0).to_string(),
            reason: "no blktrace records: the input is empty".into(),
        });
    }
    Ok(())
}

/// K-way merge of the readers by record time (ties: earlier reader first);
/// returns the number of records delivered.
fn merge<R: Read>(
    readers: &mut [RecordReader<R>],
    sink: &mut dyn Sink,
) -> Result<u64, ConvertError> {
    let mut heads: Vec<Option<(RawRecord, RecordPosition)>> = Vec::with_capacity(readers.len());
    let mut queue = BinaryHeap::with_capacity(readers.len());
    for (i, reader) in readers.iter_mut().enumerate() {
        let head = reader.next_record(sink)?;
        if let Some((rec, _)) = &head {
            queue.push(Reverse((rec.time, i)));
        }
        heads.push(head);
    }
    let mut delivered = 0u64;
    let names: Vec<String> = readers.iter().map(|r| r.name().to_string()).collect();
    let name = |i: usize| names.get(i).cloned().unwrap_or_default();
    let mut check = set_check::SetCheck::new(readers.len());
    let several = readers.len() > 1;
    while let Some(Reverse((_, i))) = queue.pop() {
        let (Some(reader), Some(slot)) = (readers.get_mut(i), heads.get_mut(i)) else {
            continue;
        };
        if let Some((rec, pos)) = slot.take() {
            if several {
                if let Some(warning) = check.record(i, &rec, reader.pdu(), &name)? {
                    sink.warning(warning);
                }
            }
            let at = Location::record(reader.name(), pos.index, pos.byte_offset);
            deliver(&rec, reader.pdu(), at, sink)?;
            delivered += 1;
        }
        let next = reader.next_record(sink)?;
        match &next {
            Some((rec, _)) => queue.push(Reverse((rec.time, i))),
            None => check.ended(i),
        }
        *slot = next;
    }
    Ok(delivered)
}

mod set_check;
mod time_jump;
#[cfg(test)]
mod tests;
