//! The kernel events tracemark reads from a log, by provider (the GUID a
//! trace or event header names, or the hook group of a system header):
//!
//! - DiskIo (`3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c`, group `0x01`): Read (10)
//!   and Write (11), logged at completion: `u32 DiskNumber, u32 IrpFlags,
//!   u32 TransferSize, u32 Reserved, u64 ByteOffset, ptr FileObject,
//!   ptr Irp, u64 HighResResponseTime` (ticks from issue to completion),
//!   then `u32 IssuingThreadId` from version 3; FlushBuffers (14): `u32
//!   DiskNumber, u32 IrpFlags, u64 HighResResponseTime, ptr Irp`, then the
//!   thread; ReadInit (12), WriteInit (13), FlushInit (15), logged at issue
//!   in the issuing thread: `ptr Irp`, then the thread. Version 0 (Windows
//!   XP) ends Read/Write after FileObject: no IRP, no response time.
//! - SystemConfig (`01853a65-418f-4f36-aefc-dc0f1d2fd235`, group `0x0B`):
//!   PhyDisk (11): `u32 DiskNumber, u32 BytesPerSector, u32 SectorsPerTrack,
//!   u32 TracksPerCylinder, u64 Cylinders, u32 SCSIPort, u32 SCSIPath,
//!   u32 SCSITarget, u32 SCSILun, wchar Manufacturer[256], ...` (the model
//!   string at byte 40); LogDisk
//!   (12): `u64 StartOffset, u64 PartitionSize, u32 DiskNumber, u32 Size,
//!   u32 DriveType, wchar DriveLetterString[4], u32 Pad1, u32
//!   PartitionNumber, u32 SectorsPerCluster, u32 BytesPerSector, ...`.
//! - Lost events (`6a399ae0-4bc6-4de9-870b-3657f8947e7e`): RTLostEvent (32),
//!   RTLostBuffer (33), RTLostFile (34).
//!
//! The times are ticks of the log's clock; the caller turns them into
//! nanoseconds.

use super::header::{EventView, Guid, Origin};
use std::collections::{HashMap, VecDeque};
use trace_format::Op;

pub const DISK_IO_GUID: Guid = Guid::new(
    0x3d6f_a8d4,
    0xfe05,
    0x11d0,
    [0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c],
);
pub const SYSTEM_CONFIG_GUID: Guid = Guid::new(
    0x0185_3a65,
    0x418f,
    0x4f36,
    [0xae, 0xfc, 0xdc, 0x0f, 0x1d, 0x2f, 0xd2, 0x35],
);
pub const LOST_EVENT_GUID: Guid = Guid::new(
    0x6a39_9ae0,
    0x4bc6,
    0x4de9,
    [0x87, 0x0b, 0x36, 0x57, 0xf8, 0x94, 0x7e, 0x7e],
);

/// Hook groups of system headers (the high byte of the hook id).
const GROUP_IO: u8 = 0x01;
const GROUP_CONFIG: u8 = 0x0b;

/// DiskIo opcodes.
pub const READ: u8 = 10;
pub const WRITE: u8 = 11;
pub const READ_INIT: u8 = 12;
pub const WRITE_INIT: u8 = 13;
pub const FLUSH: u8 = 14;
pub const FLUSH_INIT: u8 = 15;
/// SystemConfig opcodes.
pub const PHY_DISK: u8 = 11;
pub const LOG_DISK: u8 = 12;

/// `IRP_PAGING_IO`, `IRP_SYNCHRONOUS_API`, `IRP_SYNCHRONOUS_PAGING_IO`.
pub const IRP_PAGING_IO: u32 = 0x0002;
pub const IRP_SYNCHRONOUS_API: u32 = 0x0004;
pub const IRP_SYNCHRONOUS_PAGING_IO: u32 = 0x0040;

/// The provider families the reader tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    DiskIo,
    SystemConfig,
    Lost,
    Other,
}

fn family(origin: Origin) -> Family {
    match origin {
        Origin::Hook(h) => match (h >> 8) as u8 {
            GROUP_IO => Family::DiskIo,
            GROUP_CONFIG => Family::SystemConfig,
            _ => Family::Other,
        },
        Origin::Provider(g) if g == DISK_IO_GUID => Family::DiskIo,
        Origin::Provider(g) if g == SYSTEM_CONFIG_GUID => Family::SystemConfig,
        Origin::Provider(g) if g == LOST_EVENT_GUID => Family::Lost,
        Origin::Provider(_) => Family::Other,
    }
}

/// A completed disk request as DiskIo logs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub op: Op,
    pub disk: u32,
    pub irp_flags: u32,
    pub offset: u64,
    pub size: u32,
    pub irp: Option<u64>,
    /// Ticks from issue to completion.
    pub elapsed: Option<u64>,
    pub issuing_thread: Option<u32>,
    /// The process of the header, `None` where it logged none.
    pub process: Option<u32>,
}

/// What one event is to the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kernel {
    Complete(Completion),
    /// A request issued (its IRP) by `process`; `name` is its note key.
    Init {
        irp: u64,
        process: Option<u32>,
        name: &'static str,
    },
    /// A physical disk's configuration, as a note.
    Disk(String),
    /// A lost-event record (its kind).
    Lost(&'static str),
    /// Any other event (its note key).
    Other(&'static str),
}

/// Why an event's data cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

struct Data<'a> {
    bytes: &'a [u8],
    pointer: usize,
}

impl Data<'_> {
    fn has(&self, end: usize) -> bool {
        self.bytes.len() >= end
    }
    fn u32(&self, at: usize) -> u32 {
        let b = &self.bytes[at..at + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from(self.u32(at)) | (u64::from(self.u32(at + 4)) << 32)
    }
    fn ptr(&self, at: usize) -> u64 {
        if self.pointer == 8 {
            self.u64(at)
        } else {
            u64::from(self.u32(at))
        }
    }
    fn opt_u32(&self, at: usize) -> Option<u32> {
        self.has(at + 4).then(|| self.u32(at))
    }
    /// A NUL-terminated UTF-16 string of at most `chars` characters.
    fn wide(&self, at: usize, chars: usize) -> String {
        let end = (at + 2 * chars).min(self.bytes.len());
        let units: Vec<u16> = self.bytes.get(at..end).unwrap_or(&[])
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&units)
            .chars()
            .filter(|c| !c.is_control())
            .take(64)
            .collect::<String>()
            .trim()
            .to_string()
    }
}

fn process_of(pid: u32) -> Option<u32> {
    (pid != u32::MAX).then_some(pid)
}

fn too_short(what: &str, version: u16, len: usize, need: usize) -> DecodeError {
    DecodeError(format!(
        "DiskIo {what} (version {version}) has {len} bytes of data, at least {need} are needed"
    ))
}

/// What `event` is.
pub fn decode(event: &EventView<'_>) -> Result<Kernel, DecodeError> {
    let d = Data {
        bytes: event.data,
        pointer: event.pointer.bytes(),
    };
    let p = d.pointer;
    match family(event.origin) {
        Family::DiskIo => match event.opcode {
            READ | WRITE => {
                let need = 24 + p;
                if !d.has(need) {
                    return Err(too_short("Read/Write", event.version, d.bytes.len(), need));
                }
                Ok(Kernel::Complete(Completion {
                    op: if event.opcode == READ { Op::Read } else { Op::Write },
                    disk: d.u32(0),
                    irp_flags: d.u32(4),
                    size: d.u32(8),
                    offset: d.u64(16),
                    irp: d.has(24 + 2 * p).then(|| d.ptr(24 + p)),
                    elapsed: d.has(32 + 2 * p).then(|| d.u64(24 + 2 * p)),
                    issuing_thread: d.opt_u32(32 + 2 * p),
                    process: process_of(event.process),
                }))
            }
            FLUSH => {
                if !d.has(16) {
                    return Err(too_short("FlushBuffers", event.version, d.bytes.len(), 16));
                }
                Ok(Kernel::Complete(Completion {
                    op: Op::Flush,
                    disk: d.u32(0),
                    irp_flags: d.u32(4),
                    size: 0,
                    offset: 0,
                    elapsed: Some(d.u64(8)),
                    irp: d.has(16 + p).then(|| d.ptr(16)),
                    issuing_thread: d.opt_u32(16 + p),
                    process: process_of(event.process),
                }))
            }
            READ_INIT | WRITE_INIT | FLUSH_INIT => {
                if !d.has(p) {
                    return Err(too_short("Init", event.version, d.bytes.len(), p));
                }
                Ok(Kernel::Init {
                    irp: d.ptr(0),
                    process: process_of(event.process),
                    name: match event.opcode {
                        READ_INIT => "etl DiskIo ReadInit event",
                        WRITE_INIT => "etl DiskIo WriteInit event",
                        _ => "etl DiskIo FlushInit event",
                    },
                })
            }
            _ => Ok(Kernel::Other("etl DiskIo other event")),
        },
        Family::SystemConfig => match event.opcode {
            PHY_DISK if d.has(40) => {
                let disk = d.u32(0);
                let sector = d.u32(4);
                let model = d.wide(40, 256);
                Ok(Kernel::Disk(format!(
                    "etl disk {disk}: {sector}-byte sectors, model `{model}`"
                )))
            }
            LOG_DISK if d.has(24) => {
                let start = d.u64(0);
                let size = d.u64(8);
                let disk = d.u32(16);
                let letter = d.wide(28, 4);
                Ok(Kernel::Disk(format!(
                    "etl disk {disk}: partition `{letter}` of {size} bytes at byte {start}"
                )))
            }
            _ => Ok(Kernel::Other("etl SystemConfig event")),
        },
        Family::Lost => Ok(Kernel::Lost(match event.opcode {
            32 => "etl lost events record",
            33 => "etl lost buffer record",
            34 => "etl lost file record",
            _ => "etl lost-event provider record",
        })),
        Family::Other => Ok(Kernel::Other("etl other event")),
    }
}

/// An issued request waiting for its completion.
#[derive(Debug, Clone, Copy)]
struct Issued {
    time: u64,
    process: Option<u32>,
    /// Its place in [`Pairing::order`].
    seq: u64,
}

/// Requests in flight held at most; beyond, the oldest is forgotten.
pub const MAX_IN_FLIGHT: usize = 1 << 14;

/// Pairs Init events with completions by IRP, bounded.
#[derive(Default)]
pub struct Pairing {
    issued: HashMap<u64, Issued>,
    /// IRPs in issue order with their sequence number; an entry whose
    /// number no longer matches `issued` is stale and skipped.
    order: VecDeque<(u64, u64)>,
    next_seq: u64,
    /// Inits forgotten (bound reached) or replaced by a later Init of the
    /// same IRP before any completion.
    pub unpaired_inits: u64,
}

/// A completed request with its issue time and process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub completion: Completion,
    /// Ticks.
    pub issued: u64,
    pub completed: u64,
    /// Whether the issue time came from an Init event.
    pub from_init: bool,
    pub process: Option<u32>,
}

impl Pairing {
    pub fn init(&mut self, irp: u64, time: u64, process: Option<u32>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.issued.insert(irp, Issued { time, process, seq }).is_some() {
            self.unpaired_inits += 1;
        }
        self.order.push_back((irp, seq));
        while self.issued.len() > MAX_IN_FLIGHT || self.order.len() > 2 * MAX_IN_FLIGHT {
            let Some((old, old_seq)) = self.order.pop_front() else {
                break;
            };
            if self.issued.get(&old).is_some_and(|i| i.seq == old_seq) {
                self.issued.remove(&old);
                self.unpaired_inits += 1;
            }
        }
    }

    pub fn complete(&mut self, completion: Completion, time: u64) -> Request {
        let init = completion.irp.and_then(|irp| self.issued.remove(&irp));
        let (issued, from_init, process) = match init {
            Some(i) if i.time <= time => (i.time, true, i.process.or(completion.process)),
            _ => (
                time.saturating_sub(completion.elapsed.unwrap_or(0)),
                false,
                completion.process,
            ),
        };
        Request {
            completion,
            issued,
            completed: time,
            from_init,
            process,
        }
    }

    /// Inits still waiting at the end of the log.
    pub fn in_flight(&self) -> usize {
        self.issued.len()
    }
}
