//! The result file's schema: a run of a suite ([`SuiteResult`]), each trace
//! ([`TraceResult`]) and pass ([`PassMetrics`]), the target and host. The
//! field names are the JSON keys (documented in the crate README); a field
//! added later is `#[serde(default)]` so older files still read.

mod problem;

pub use problem::{sentences, Problem, Problems, RunProblem, FAR_OFF_LATENESS_P50_US};

use crate::options::{ReplayOptions, TimingMode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The result file's schema version: 1 is every file without the field
/// (before the drive's identity was recorded), 2 adds [`DriveIdentity`],
/// [`FilesystemInfo`], the host's CPU and memory and the trace set's hash,
/// 3 records the settings that differ from the request
/// ([`SuiteResult::settings_changed`]) instead of `options.idle_policy`,
/// and the timing mode once (in `options`).
pub const SCHEMA_VERSION: u32 = 3;

/// The schema version of a file that does not say (written before the field).
pub fn first_schema_version() -> u32 {
    1
}

/// Version 1 is written as it was: without the field, so such a file read
/// and written back is the same file.
pub fn is_first_schema_version(v: &u32) -> bool {
    *v == 1
}

/// A block device as sysfs describes it (a partition: its whole disk).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriveIdentity {
    /// The kernel's name (`nvme0n1`, `sda`, `zram0`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// The serial number, or `sha256:` and the first 16 hex digits of its
    /// SHA-256 unless `--keep-serial`: enough to tell two drives of one
    /// model apart without publishing which drive it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// The World Wide Name (sysfs `wwid`), in [`crate::identity::hash_serial`]'s
    /// form: like the serial, it names one drive and no other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn: Option<String>,
    pub capacity_bytes: u64,
    pub logical_block_size: u64,
    pub physical_block_size: u64,
    pub rotational: bool,
    /// `queue/max_sectors_kb`, `queue/max_hw_sectors_kb`, `queue/nr_requests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sectors_kb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hw_sectors_kb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_requests: Option<u64>,
    /// The I/O scheduler in use (`none`, `mq-deadline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// `nvme`, `sata`, `scsi`, `usb`, `virtio`, `mmc`, `loop`, `zram`,
    /// `device-mapper`, or what the device path says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
}

/// The filesystem a file target lives on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilesystemInfo {
    /// The target file's absolute path (the result's `path` is as given).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// `ext4`, `xfs`, `tmpfs`, ...
    pub fs_type: String,
    pub mount_point: String,
    pub mount_options: String,
    /// The mount's source (`/dev/vda1`, `overlay`).
    pub source: String,
    /// The block device under it, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive: Option<DriveIdentity>,
}

/// I/Os of the trace that were not sent to the target, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Writes, flushes, discards and write-zeroes left out by `--read-only`.
    pub read_only: u64,
    /// Discards on a file target (punching holes would unfill the scratch
    /// file) or on a device that does not support them.
    pub discards: u64,
    /// Write-zeroes (not replayed: io_uring has no asynchronous form).
    pub write_zeroes: u64,
    /// Reads or writes of length zero.
    pub empty: u64,
    /// Any operation left out by `--skip-ops`.
    #[serde(default)]
    pub by_option: u64,
}

/// Latency summary, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Lateness {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fidelity {
    /// How late I/Os were issued against their scheduled time, µs. In
    /// compressed mode the schedule is "as soon as ready".
    pub lateness_us: Lateness,
    /// The trace's first issue to last completion (or issue).
    pub original_s: f64,
    /// The replay's first issue to last completion.
    pub achieved_s: f64,
    /// Time the replay's issuing threads and their io_uring workers were
    /// ready to run but waited for a CPU (the kernel's run delay), s; for a
    /// trace, its worst pass. The machine's other load is in the figures as
    /// much as this is a share of `achieved_s`. Absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpMetrics {
    pub count: u64,
    pub bytes: u64,
    pub errors: u64,
    pub latency_us: Option<Percentiles>,
    /// The latency histogram itself (ns, HdrHistogram V2 compressed, base64,
    /// as HdrHistogram's tools read it), so results of several hosts merge
    /// exactly (`tracemark merge`); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<String>,
}

/// One pass, as the result file shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassMetrics {
    pub warmup: bool,
    pub interrupted: bool,
    pub score: f64,
    pub bandwidth_mb_s: f64,
    pub access_time_us: f64,
    pub playback_s: f64,
    pub busy_s: f64,
    /// Reads and writes per second of busy time.
    pub iops: f64,
    /// I/Os completed (all operations, errors included).
    pub ios: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    pub ops: BTreeMap<String, OpMetrics>,
    pub skipped: Skipped,
    pub fidelity: Fidelity,
    /// The task time this pass predicts for the target (realtime passes of
    /// traces with original completions; absent otherwise and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskTime>,
    /// Why the pass predicts no task time, where it predicts none (absent
    /// in older files, which said nothing of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_task_time: Option<NoTaskTime>,
    /// The pass's instants on the wall clock (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<crate::fleet::PassClock>,
    /// Per source volume, for traces of several devices (empty otherwise
    /// and in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<crate::fleet::VolumeMetrics>,
}

/// Why a replay predicts no task time for a trace: the prediction needs the
/// trace's own timing, every record's original completion and every
/// replayed I/O's latency, in order, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoTaskTime {
    /// The replay was not realtime: without the trace's think time the drive
    /// meets another load than the task's.
    NotRealtime,
    /// The replay ran on several rings, each seeing only its own records'
    /// completions.
    SeveralRings,
    /// The pass was stopped before the trace's end.
    Interrupted,
    /// The trace holds no original completion times (its source had none),
    /// so the I/Os the task waited for are unknown.
    NoOriginalCompletions,
    /// Nothing was replayed, or a replayed I/O never completed.
    Unfinished,
}

impl std::fmt::Display for NoTaskTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoTaskTime::NotRealtime => "the replay was not realtime (--mode realtime predicts)",
            NoTaskTime::SeveralRings => "the replay ran on several rings (--threads 1 predicts)",
            NoTaskTime::Interrupted => "the replay was stopped before the trace's end",
            NoTaskTime::NoOriginalCompletions => "the trace holds no original completion times",
            NoTaskTime::Unfinished => "not every replayed I/O completed",
        })
    }
}

/// How long the captured task would take on the target: the trace's own
/// timing (think time kept) with the latencies the replay measured, following
/// the I/Os the task waited for (see the replayer's `prediction` module).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskTime {
    /// The predicted task time, s, under `model`.
    pub predicted_s: f64,
    /// The dependency model of `predicted_s` (`blocking`: reads, flushes and
    /// synchronous writes hold the task up, and the writeback a flush
    /// covers; other writeback does not).
    pub model: String,
    /// The prediction under every dependency model, s.
    pub models: BTreeMap<String, f64>,
    /// The task's time in the trace as captured (tracing overhead included), s.
    pub captured_s: f64,
    /// The task's untraced time on the capture drive, s, when the trace
    /// records it: the prediction starts from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced_s: Option<f64>,
    /// What the captured time spans: `task marks` (the capture's start and
    /// "done" marks) or `trace span` (first issue to last completion).
    pub span: String,
    /// The prediction per model before calibration, s, when the trace was
    /// calibrated (`tracemark calibrate`): `models` then hold the untraced
    /// time plus this replay's difference from the capture drive's replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncalibrated: Option<BTreeMap<String, f64>>,
    /// The CPU time of the task's busiest thread at capture, s, at the
    /// untraced runs' pace, when the trace keeps it: no prediction goes
    /// below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_floor_s: Option<f64>,
    /// The prediction per model before that floor, s, when the floor held
    /// it up (in any pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfloored: Option<BTreeMap<String, f64>>,
    /// The settings the trace's calibration replays ran at (setting to
    /// value, as [`crate::comparable::settings`] names them), when the trace
    /// records them: a replay at other settings is set against them all the
    /// same ([`crate::validity::calibration_caution`]). Absent when
    /// uncalibrated and for traces calibrated before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated_at: Option<BTreeMap<String, String>>,
    /// Over the scored passes (a trace's summary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_spread: Option<Spread>,
    /// Where the predicted time goes (think time and waits per class of
    /// I/O; versioned on its own, absent from older files, skipped when
    /// of a version this reader does not know).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::breakdown::known_version"
    )]
    pub breakdown: Option<crate::breakdown::Breakdown>,
}

/// A confidence interval `[low, high]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

/// Minimum, maximum and (population) standard deviation over passes.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
    pub stddev: f64,
}

/// How a trace's I/Os wait for each other in the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dependencies {
    /// An I/O waits for every I/O that had completed before it was issued
    /// in the original (the trace has completion times).
    Completion,
    /// The original order, concurrency capped by the queue depth.
    Order,
}

/// What the target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    File,
    BlockDevice,
}

/// How the kernel runs io_uring requests on a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IoPath {
    /// Non-blocking issue from the submitting thread.
    #[serde(rename = "inline")]
    Inline,
    /// The device takes no non-blocking I/O, so every request runs on a
    /// kernel io_uring worker thread.
    #[serde(rename = "io-wq")]
    IoWq,
}

/// One trace: its passes and the means over the scored ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceResult {
    pub name: String,
    pub path: Option<String>,
    pub dependencies: Dependencies,
    pub warmup: Option<PassMetrics>,
    pub passes: Vec<PassMetrics>,
    pub score: f64,
    pub score_spread: Spread,
    /// 95 % confidence interval of the mean score over the scored passes
    /// (absent with fewer than two passes, or in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_ci: Option<Interval>,
    pub bandwidth_mb_s: f64,
    pub bandwidth_spread: Spread,
    pub access_time_us: f64,
    pub access_time_spread: Spread,
    pub playback_s: f64,
    pub playback_spread: Spread,
    pub busy_s: f64,
    pub iops: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub ios: u64,
    pub errors: BTreeMap<String, u64>,
    pub skipped: Skipped,
    /// Over all scored passes (histograms merged).
    pub latency_us: BTreeMap<String, Percentiles>,
    pub fidelity: Fidelity,
    pub interrupted: bool,
    /// What was replayed, so results of different versions of a trace are
    /// not compared as if they were the same (absent in older result files).
    #[serde(default)]
    pub trace_id: Option<TraceIdentity>,
    /// Latency distribution per operation over the scored passes: about 60
    /// `[quantile, µs]` points from the merged histograms.
    #[serde(default)]
    pub latency_cdf_us: BTreeMap<String, Vec<[f64; 2]>>,
    /// Bandwidth and mean latency over the playback of the last scored pass
    /// (the warm-up when no scored pass finished).
    #[serde(default)]
    pub timeline: Option<Timeline>,
    /// False when the figures cannot be trusted (the device returned errors):
    /// written only when false, with the reason.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub valid: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<Problems>,
    /// The predicted task time: the means over the scored passes (absent
    /// where no pass predicted one, and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskTime>,
    /// Why there is no predicted task time, where there is none (absent in
    /// older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_task_time: Option<NoTaskTime>,
    /// Of a sample of the trace's reads (the first block of each, leaving
    /// out reads of what the trace wrote first), how many found data as
    /// scoring started: a read of a block never written, trimmed or holding
    /// zeros can be answered without touching the medium (absent in older
    /// files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads_found: Option<Sampled>,
    /// Writes replayed with the FUA or preflush their record carries, per
    /// pass. Absent in files from before the replay honoured them, which
    /// replayed such writes as plain writes
    /// ([`crate::comparable::differences`] keeps the two apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_flag_writes: Option<u64>,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// A trace's identity as recorded: its records, bytes and duration and a
/// checksum over every record (FNV-1a 64 of time, op, offset, length and
/// device), so two results name the same trace only when it is the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceIdentity {
    pub records: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub duration_ns: u64,
    /// 16 hex digits.
    pub checksum: String,
}

/// Per-interval figures over one pass's playback (intervals of
/// `interval_s`: 1 s, or a power-of-ten fraction of a second for passes
/// shorter than 10 s so there are at least 10 points). Each interval counts
/// the reads and writes that completed in it; bandwidth is their bytes over
/// the interval (the last one over the part that was played);
/// `mean_latency_us` is 0 where nothing completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub interval_s: f64,
    /// The pass it comes from: 0 for the warm-up, else the scored pass number.
    pub pass: u32,
    /// Start of each interval, s since the pass started.
    pub t_s: Vec<f64>,
    pub read_mb_s: Vec<f64>,
    pub write_mb_s: Vec<f64>,
    pub bandwidth_mb_s: Vec<f64>,
    /// Reads and writes completed in the interval.
    pub ios: Vec<u64>,
    pub mean_latency_us: Vec<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SuiteSummary {
    /// 95 % confidence interval of the score, from the traces' intervals
    /// (absent with one pass, or in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_ci: Option<Interval>,
    /// Geometric mean of the trace scores.
    pub score: f64,
    /// Geometric mean of the traces' bandwidths.
    pub bandwidth_mb_s: f64,
    /// Geometric mean of the traces' access times.
    pub access_time_us: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub kernel: String,
    pub cpus: usize,
    /// `model name` of /proc/cpuinfo (absent before schema version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// MemTotal of /proc/meminfo, bytes (absent before schema version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub path: String,
    pub kind: TargetKind,
    pub size_bytes: u64,
    pub model: Option<String>,
    pub logical_block_size: u64,
    pub direct_io: bool,
    /// How the kernel runs io_uring requests on it (absent in files older
    /// than the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_path: Option<IoPath>,
    /// The further targets of a multi-target replay (`--target` given more
    /// than once, `--device-map`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<TargetInfo>,
    /// A block device's identity from sysfs (absent for a file target and
    /// before schema version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive: Option<DriveIdentity>,
    /// A file target's filesystem and the device under it (absent for a
    /// block device and before schema version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FilesystemInfo>,
}

/// The result file (`--json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteResult {
    /// [`SCHEMA_VERSION`] when written; 1 in files older
    /// than the field.
    #[serde(
        default = "first_schema_version",
        skip_serializing_if = "is_first_schema_version"
    )]
    pub schema_version: u32,
    /// The suite's name (`tracemark suite`), absent for `replay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_name: Option<String>,
    /// [`SuiteResult::computed_trace_set_hash`] when written (absent before
    /// schema version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_set: Option<String>,
    pub tool: ToolInfo,
    pub host: HostInfo,
    pub target: TargetInfo,
    /// The settings the run used.
    pub options: ReplayOptions,
    /// Each of `options` that is not what was asked, and why (absent when
    /// none is, and before schema version 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings_changed: Vec<crate::options::SettingChange>,
    /// `options.mode` again, in files before schema version 3 (kept so such
    /// a file is written back as it was); read [`SuiteResult::mode`].
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "mode")]
    pub legacy_mode: Option<TimingMode>,
    pub traces: Vec<TraceResult>,
    /// None when no trace moved data (or none finished).
    pub suite: Option<SuiteSummary>,
    pub interrupted: bool,
    /// Wall-clock start, seconds since the Unix epoch.
    pub started_unix_s: u64,
    /// False when any trace's figures cannot be trusted (device errors);
    /// written only when false, with the reasons. `compare` flags such a
    /// result and leaves it out of ratios unless asked.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub valid: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_reasons: Vec<RunProblem>,
    /// What was written to the targets before scoring (absent when nothing
    /// was asked: `--precondition skip`, or files older than the option).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<Precondition>,
    /// This rank's place in a fleet replay (`--shard`, `--start-at`);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<crate::fleet::FleetRank>,
}

impl SuiteResult {
    /// How the trace's timing was reproduced (`options.mode`).
    pub fn mode(&self) -> TimingMode {
        self.options.mode
    }
}

/// What preconditioning did, over all targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Precondition {
    pub policy: crate::options::PreconditionPolicy,
    /// Bytes that had to hold data before scoring (the read regions, or the
    /// whole space), in whole regions of `region_bytes`.
    pub needed_bytes: u64,
    /// Of those, already written by tracemark for an earlier run (its marker
    /// names them and sampled blocks hold data).
    pub already_bytes: u64,
    /// Written now.
    pub written_bytes: u64,
    pub seconds: f64,
    /// Region granularity, bytes.
    pub region_bytes: u64,
    /// Why nothing was written although asked (e.g. the target is read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_done: Option<String>,
    /// What the targets held before this run wrote anything, and what the
    /// read regions held when scoring started (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<FoundState>,
}

/// Blocks read from spread-out places of a set of regions, and how many of
/// them held data (anything but zeros: a never-written block of a reset zram
/// or a trimmed SSD reads as zeros).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampled {
    pub blocks: u32,
    pub with_data: u32,
}

/// The state a replay found its targets in, sampled, over all targets. Two
/// replays of one trace on one drive whose `space_before` differ (a reset
/// device against one in use) ran on drives in different states, even where
/// preconditioning made the read regions alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundState {
    /// The whole space the replay may use, before this run wrote.
    pub space_before: Sampled,
    /// The regions the traces read, before this run wrote.
    pub read_regions_before: Sampled,
    /// The same regions after preconditioning, as scoring started: all of
    /// them hold data unless the preconditioning was not done.
    pub read_regions_at_start: Sampled,
}
