//! What a result file says about its place in a fleet: which rank of how
//! many replayed which volumes of a shared trace, when its schedule started
//! against the agreed start, and on which clock; and the per-pass wall-clock
//! instants and per-volume counters that `tracemark merge` adds up. All of
//! it is absent from results of a replay on one host and from older files.

use serde::{Deserialize, Serialize};

/// One rank's part of a fleet replay (`tracemark replay --shard`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetRank {
    /// This rank, from 0.
    pub rank: u32,
    /// Ranks in the fleet.
    pub ranks: u32,
    /// Where rank and size came from: `command line`, or the launcher and
    /// its variables (`Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)`).
    pub launcher: String,
    /// The trace's volumes this rank replayed (`MAJ:MIN` as `tracemark info`
    /// lists them, or the device index where the trace has no table).
    pub volumes: Vec<String>,
    /// The whole trace (every rank's part): records and checksum, so a merge
    /// only adds up ranks of the same trace.
    pub trace_records: u64,
    pub trace_checksum: String,
    /// The agreed start of every rank's schedule (`--start-at`), ns since the
    /// Unix epoch; absent when each rank started on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_ns: Option<u64>,
    /// This rank's first issue minus the instant the shared schedule gave it
    /// (the agreed start plus its first I/O's offset in the trace), ns; > 0
    /// is late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_error_ns: Option<i64>,
    /// The clock the start was read on.
    pub clock: ClockSource,
}

/// The wall clock a rank's start was measured on, and what the kernel
/// says of its synchronisation (`adjtimex`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockSource {
    /// `CLOCK_REALTIME`, mapped onto CLOCK_MONOTONIC once per pass.
    pub name: String,
    /// False when the kernel's clock is marked unsynchronised (STA_UNSYNC:
    /// no NTP/PTP daemon disciplines it); then ranks on different hosts
    /// can disagree by any amount.
    pub synchronized: bool,
    /// The kernel's maximum error estimate, µs (`adjtimex` maxerror).
    pub max_error_us: u64,
    /// The kernel's estimated error, µs (`adjtimex` esterror).
    pub est_error_us: u64,
}

/// A pass's instants on the wall clock (ns since the Unix epoch), so passes
/// of different hosts can be laid on one time axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PassClock {
    /// When the issuing thread was ready to issue the first I/O.
    pub ready_unix_ns: u64,
    /// The first I/O's scheduled instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_due_unix_ns: Option<u64>,
    /// When the first I/O was submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_issue_unix_ns: Option<u64>,
    /// When the last I/O completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_complete_unix_ns: Option<u64>,
    /// Realtime: how far behind the trace's timeline (start plus the
    /// trace's offset, without the closed loop's shifts) the last I/O was
    /// issued, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_schedule_ns: Option<u64>,
}

/// One source volume (trace device) in one pass.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct VolumeMetrics {
    /// `MAJ:MIN` as `tracemark info` lists it (the device index where the
    /// trace has no device table).
    pub volume: String,
    /// I/Os completed (errors included).
    pub ios: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// Sum of the successful reads' and writes' latencies, ns (mean =
    /// sum / (reads + writes - errors)); a sum so merges add exactly.
    pub latency_sum_ns: u64,
    /// Successful reads and writes.
    pub data_ios: u64,
}

impl VolumeMetrics {
    /// Adds `other`'s counters (the same volume, another ring or rank).
    pub fn add(&mut self, other: &VolumeMetrics) {
        self.ios += other.ios;
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
        self.errors += other.errors;
        self.latency_sum_ns += other.latency_sum_ns;
        self.data_ios += other.data_ios;
    }

    /// Mean latency of the successful reads and writes, µs (0 with none).
    pub fn mean_latency_us(&self) -> f64 {
        if self.data_ios == 0 {
            0.0
        } else {
            self.latency_sum_ns as f64 / self.data_ios as f64 / 1e3
        }
    }
}

/// What a rank writes instead of a result when it could not replay (its
/// target would not open, its trace would not read), so a merge names the
/// rank and why rather than only missing it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankFailure {
    pub rank: u32,
    pub ranks: u32,
    pub launcher: String,
    pub hostname: String,
    /// The error, as the rank printed it.
    pub error: String,
}

/// The file a failed rank writes: `{"failed_rank": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankFailureFile {
    pub failed_rank: RankFailure,
}
