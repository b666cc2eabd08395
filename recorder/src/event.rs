//! What parsers produce: block-layer events (sources that log the life of a
//! request: blkparse, blktrace, tracefs) or whole requests (sources with one line
//! per request: MSR, WPA, xperf, fio, SPC). The normaliser turns both into
//! `IoRecord`s.

use std::fmt;
use trace_format::{Bytes, DeviceId, Flags, Nanos, Op};

/// The block-layer event kinds tracemark distinguishes (blkparse action letters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `Q`: the request entered the block layer.
    Queue,
    /// `D`: the driver was handed the request (tracefs `block_rq_issue`).
    Issue,
    /// `C`: the request completed.
    Complete,
    /// `M`: a queued bio was merged onto the back of an existing request.
    BackMerge,
    /// `F`: a queued bio was merged onto the front of an existing request.
    FrontMerge,
    /// `R`: the request went back to the queue (it will be issued again).
    Requeue,
    /// `A`: a bio was remapped (partition to disk, dm to underlying device).
    Remap,
    /// `X`: a bio was split.
    Split,
    /// Any other event (G, I, P, U, S, T, m, ...): counted, not used.
    Other,
}

/// One block-layer event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEvent {
    /// Absolute time in the source's clock; the normaliser makes it relative.
    pub time: Nanos,
    pub device: DeviceId,
    pub action: Action,
    pub op: Op,
    pub flags: Flags,
    pub offset: Bytes,
    pub len: Bytes,
    pub pid: Option<u32>,
    /// Completion error (negative errno), 0 for success.
    pub error: i32,
}

/// One whole request from a source that logs one line per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceIo {
    /// Absolute issue time in the source's clock.
    pub time: Nanos,
    pub device: DeviceId,
    pub op: Op,
    pub flags: Flags,
    pub offset: Bytes,
    pub len: Bytes,
    pub latency: Option<Nanos>,
    pub pid: Option<u32>,
}

impl SourceIo {
    /// A request without flags, original latency or process: all that most
    /// datasets give.
    pub fn request(time: Nanos, device: DeviceId, op: Op, offset: Bytes, len: Bytes) -> Self {
        SourceIo {
            time,
            device,
            op,
            flags: Flags::NONE,
            offset,
            len,
            latency: None,
            pid: None,
        }
    }
}

/// Where in the input something was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// 1-based line number of a text file.
    Line(u64),
    /// 0-based record number of a binary file, and its byte offset.
    Record { index: u64, byte_offset: u64 },
}

/// A position in a named input file.
#[derive(Debug, Clone, Copy)]
pub struct Location<'a> {
    pub file: &'a str,
    pub position: Position,
}

impl<'a> Location<'a> {
    pub fn line(file: &'a str, line: u64) -> Self {
        Location {
            file,
            position: Position::Line(line),
        }
    }

    pub fn record(file: &'a str, index: u64, byte_offset: u64) -> Self {
        Location {
            file,
            position: Position::Record { index, byte_offset },
        }
    }
}

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Position::Line(n) => write!(f, "{}:{}", self.file, n),
            Position::Record { index, byte_offset } => {
                write!(f, "{}: record {} (byte {})", self.file, index, byte_offset)
            }
        }
    }
}
