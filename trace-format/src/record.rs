//! The I/O record model shared by every part of tracemark: one record is one
//! block request as the application's drive saw it.

use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The operation of a block request. On the command line (`clap` feature)
/// its values are kebab-case: `read`, ..., `write-zeroes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Op {
    /// Data read from the drive.
    Read,
    /// Data written to the drive.
    Write,
    /// A request with no data whose only purpose is a cache flush.
    Flush,
    /// Blocks the drive may forget (TRIM, UNMAP).
    Discard,
    /// Blocks set to zeroes without sending the data.
    WriteZeroes,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Read, Op::Write, Op::Flush, Op::Discard, Op::WriteZeroes];

    /// The on-disk code of the operation (see FORMAT.md).
    pub fn code(self) -> u8 {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Flush => 2,
            Op::Discard => 3,
            Op::WriteZeroes => 4,
        }
    }

    pub fn from_code(code: u8) -> Option<Op> {
        Some(match code {
            0 => Op::Read,
            1 => Op::Write,
            2 => Op::Flush,
            3 => Op::Discard,
            4 => Op::WriteZeroes,
            _ => return None,
        })
    }

    /// The lower-case name used in CSV exports and JSON (`read`, `write_zeroes`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Discard => "discard",
            Op::WriteZeroes => "write_zeroes",
        }
    }

    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operation moves data (reads and writes).
    pub fn carries_data(self) -> bool {
        matches!(self, Op::Read | Op::Write)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Request flags, a bit set. Only the bits named here are defined; the others
/// must be zero in a file.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Flags(u8);

impl Flags {
    pub const NONE: Flags = Flags(0);
    /// Synchronous request (REQ_SYNC, blkparse `S`).
    pub const SYNC: Flags = Flags(1);
    /// Forced unit access (REQ_FUA, blkparse `F` after the op).
    pub const FUA: Flags = Flags(2);
    /// Cache flush before the data (REQ_PREFLUSH, blkparse `F` before the op).
    pub const PREFLUSH: Flags = Flags(4);
    /// Filesystem metadata (REQ_META, blkparse `M`).
    pub const META: Flags = Flags(8);
    pub const ALL: Flags = Flags(15);

    pub fn bits(self) -> u8 {
        self.0
    }

    /// `None` when undefined bits are set.
    pub fn from_bits(bits: u8) -> Option<Flags> {
        (bits & !Self::ALL.0 == 0).then_some(Flags(bits))
    }

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn insert(&mut self, other: Flags) {
        self.0 |= other.0;
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Names joined by `|` (`sync|fua`), empty for no flags: the CSV export form.
    pub fn names(self) -> String {
        let mut parts = Vec::new();
        for (flag, name) in [
            (Flags::SYNC, "sync"),
            (Flags::FUA, "fua"),
            (Flags::PREFLUSH, "preflush"),
            (Flags::META, "meta"),
        ] {
            if self.contains(flag) {
                parts.push(name);
            }
        }
        parts.join("|")
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

/// One block I/O request of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IoRecord {
    /// Issue time, nanoseconds since the start of the trace. Records of a trace
    /// are in non-decreasing time order.
    pub time: Nanos,
    pub op: Op,
    /// Byte offset on the original device (0 for a flush).
    pub offset: Bytes,
    /// Byte length (0 for a flush).
    pub len: Bytes,
    pub flags: Flags,
    /// The original completion latency (issue to completion), when the source had it.
    pub latency: Option<Nanos>,
    /// Process, thread or stream id of the issuer, when known.
    pub stream: Option<u32>,
    /// Index into the trace's device table (see `TraceTail::devices`); 0 for a
    /// single-device trace.
    pub device: u16,
}

impl IoRecord {
    /// End of the request's byte range, `None` on overflow.
    pub fn end(&self) -> Option<Bytes> {
        self.offset.checked_add(self.len)
    }

    /// Completion time in the original trace, when the latency is known.
    pub fn completion(&self) -> Option<Nanos> {
        self.latency.and_then(|l| self.time.checked_add(l))
    }
}

/// A source device: Linux MAJ:MIN, or a Windows disk number (major 0, minor =
/// disk number), or 0:0 when the source does not say.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
pub struct DeviceId {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl std::str::FromStr for DeviceId {
    type Err = String;
    /// Parses `MAJ:MIN` or `MAJ,MIN`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once([':', ','])
            .ok_or_else(|| format!("device '{s}' is not MAJ:MIN"))?;
        let major = a
            .trim()
            .parse()
            .map_err(|_| format!("device '{s}': major '{a}' is not a number"))?;
        let minor = b
            .trim()
            .parse()
            .map_err(|_| format!("device '{s}': minor '{b}' is not a number"))?;
        Ok(DeviceId { major, minor })
    }
}
