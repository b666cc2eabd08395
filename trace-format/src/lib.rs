//! The tracemark I/O record model and the `.tmt` trace file format.
//!
//! A `.tmt` file is a header, a run of zstd-compressed columnar chunks of
//! records, each protected by a CRC-32C, and a footer holding the chunk index,
//! the summary and what the writer learnt while writing; between the last chunk
//! and the footer, typed sections (the captured task, its calibration). `FORMAT.md` in this
//! crate specifies the bytes.
//!
//! Write with [`TraceWriter`] (memory bounded by one chunk), read with
//! [`TraceFile`] (random access, one positioned read per chunk, not a memory
//! map: see its documentation) or [`TraceReader`] (any `Read`).

mod codec;
mod error;
pub mod fnv;
mod frame;
mod meta;
mod reader;
mod record;
mod record_checksum;
pub mod rng;
mod section;
pub mod stats;
mod task;
mod units;
mod writer;

pub use error::{FormatError, FormatErrorKind};
pub use meta::{
    DeviceEntry, DeviceInfo, IssueEvent, SkippedExample, SkippedInput, Summary, TraceHeader,
    TraceTail,
};
pub use reader::{ChunkInfo, Footer, Records, TraceFile, TraceReader};
pub use record::{DeviceId, Flags, IoRecord, Op};
pub use record_checksum::RecordChecksum;
pub use task::{CalibrationReplays, DependencyModel, ModelTimes, TaskCpu, TaskMarks};
pub use units::{Bytes, Nanos, Sectors};
pub use writer::{TraceWriter, WriterOptions};

/// The file's first eight bytes.
pub const MAGIC: [u8; 8] = *b"TMTRACE\0";
/// The last eight bytes.
pub const END_MAGIC: [u8; 8] = *b"TMTEND\0\0";
/// The format version this crate writes. A reader refuses a newer major version.
pub const VERSION_MAJOR: u16 = 1;
/// Minor 1 added sections (the task section); a file of minor 0 holds none.
pub const VERSION_MINOR: u16 = 1;
/// Default number of records per chunk.
pub const DEFAULT_CHUNK_RECORDS: u32 = 65_536;

/// The README's example, compiled and run as a doctest so it stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
