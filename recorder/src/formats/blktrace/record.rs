//! The `struct blk_io_trace` record: constants, action codes, category
//! bits, and the decoding of a header of either version and byte order.

use trace_format::DeviceId;
use trace_format::Nanos;


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
pub(super) const TC_SHIFT: u32 = 16;

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

pub(super) fn header_len(version: u8) -> Option<usize> {
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
pub(super) struct Fields<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) order: ByteOrder,
}

impl Fields<'_> {
    pub(super) fn u16_at(&self, at: usize) -> u16 {
        let mut b = [0u8; 2];
        if let Some(s) = self.bytes.get(at..at + 2) {
            b.copy_from_slice(s);
        }
        match self.order {
            ByteOrder::Little => u16::from_le_bytes(b),
            ByteOrder::Big => u16::from_be_bytes(b),
        }
    }
    pub(super) fn u32_at(&self, at: usize) -> u32 {
        let mut b = [0u8; 4];
        if let Some(s) = self.bytes.get(at..at + 4) {
            b.copy_from_slice(s);
        }
        match self.order {
            ByteOrder::Little => u32::from_le_bytes(b),
            ByteOrder::Big => u32::from_be_bytes(b),
        }
    }
    pub(super) fn u64_at(&self, at: usize) -> u64 {
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


/// Space-separated hex of `bytes` (at most 64 of them), for error messages.
pub(super) fn hex_dump(bytes: &[u8]) -> String {
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


/// A version 7 little-endian rendering of a decoded header, for error dumps
/// after the original bytes are gone.
pub(super) fn encode_for_dump(rec: &RawRecord) -> Vec<u8> {
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

