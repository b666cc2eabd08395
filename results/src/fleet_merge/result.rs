//! The fleet result's types: the merged figures, each rank's row, each
//! volume's, and the ranks that failed.

use crate::fleet::VolumeMetrics;
use crate::schema::{Percentiles, ToolInfo};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The fleet's result (`tracemark merge -o FLEET.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetResult {
    pub tool: ToolInfo,
    /// The trace (its name in the first rank's result), records and checksum.
    pub trace: String,
    pub trace_records: u64,
    pub trace_checksum: String,
    /// Ranks in the fleet.
    pub ranks: u32,
    /// False when any rank failed or is missing, or any I/O failed.
    pub valid: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_reasons: Vec<String>,
    /// The ranks that failed, by rank, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_ranks: Vec<FailedRank>,
    /// Earliest first issue to latest last completion over the ranks (wall
    /// clock, ns since the Unix epoch).
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub interval_s: f64,
    /// Sums over the ranks' scored passes.
    pub ios: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// Reads and writes completed per second of the common interval.
    pub iops: f64,
    /// Bytes read and written per second of the common interval, MB/s.
    pub bandwidth_mb_s: f64,
    /// Per operation, from the merged histograms.
    pub ops: BTreeMap<String, FleetOp>,
    /// Reads and writes together, from the merged histograms.
    pub access_latency_us: Option<Percentiles>,
    /// The rank that finished last.
    pub slowest_rank: Option<SlowestRank>,
    /// Over the ranks: the largest start error (first issue against the
    /// shared schedule), µs, by magnitude, signed (> 0 late).
    pub worst_start_error_us: Option<f64>,
    pub per_rank: Vec<RankRow>,
    pub per_volume: Vec<VolumeRow>,
}

/// One operation over the fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetOp {
    pub count: u64,
    pub bytes: u64,
    pub errors: u64,
    pub latency_us: Option<Percentiles>,
    /// The merged histogram (as in a rank's result), so fleets merge too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRank {
    /// `None` when the file that failed does not say its rank.
    pub rank: Option<u32>,
    /// The file it came from (absent for a rank no file speaks for).
    pub file: Option<String>,
    /// What went wrong, by kind (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<RankFailureKind>,
    /// What went wrong, in words.
    pub reason: String,
}

/// How a rank failed the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankFailureKind {
    /// The rank wrote a failure record: its replay stopped with an error.
    Failed,
    /// An input is no result or failure record (unreadable, not JSON, not
    /// tracemark's).
    Unreadable,
    /// No input speaks for the rank: it died or never wrote a result.
    Missing,
    /// The rank's result is there but not valid.
    Invalid,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowestRank {
    pub rank: u32,
    /// Its last completion after the first rank to finish, s.
    pub after_fastest_s: f64,
    /// Realtime: how far behind the trace's timeline it issued its last
    /// I/O, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_schedule_us: Option<f64>,
}

/// One rank's figures (its scored passes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    pub rank: u32,
    pub file: String,
    pub hostname: String,
    pub target: String,
    pub launcher: String,
    pub volumes: Vec<String>,
    pub ios: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// Over its own first issue to last completion.
    pub iops: f64,
    pub bandwidth_mb_s: f64,
    pub access_time_us: f64,
    pub first_issue_unix_ns: Option<u64>,
    pub last_complete_unix_ns: Option<u64>,
    pub start_error_us: Option<f64>,
    pub behind_schedule_us: Option<f64>,
    pub clock_synchronized: bool,
    pub valid: bool,
}

/// One volume over the fleet (each volume is on exactly one rank).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolumeRow {
    pub rank: u32,
    #[serde(flatten)]
    pub metrics: VolumeMetrics,
    pub mean_latency_us: f64,
}
