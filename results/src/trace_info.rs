//! `tracemark info --json`: what a trace holds, as a typed document.
//!
//! Fields are declared in alphabetical order: that is the order of the keys
//! in the file (which began as a map with sorted keys), kept so scripts and
//! diffs of earlier output see the same bytes. The characterisation fields
//! (`Option<..>` with `skip_serializing_if`) are absent under
//! `--summary-only`; a field of type `Option<Option<T>>` is then absent, and
//! otherwise `null` when the trace cannot tell (no completion times, for
//! instance).

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use trace_format::stats::{Histogram, TraceStats};
use trace_format::TraceFile;

/// The document `tracemark info --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceInfo {
    /// Lowest offset and highest end of any request (null for no data requests).
    pub address_span: AddressSpan,
    /// Time with a request in flight, ns (needs completion times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_ns: Option<Option<u64>>,
    /// `busy_ns` as a share of `duration_ns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_share: Option<Option<f64>>,
    /// File size per I/O: the format's compactness on this trace.
    pub bytes_per_io: f64,
    pub capture_host: Option<String>,
    pub capture_kernel: Option<String>,
    /// Wall-clock start of the trace, ns since the Unix epoch, when known.
    pub capture_start_unix_ns: Option<i64>,
    pub category: String,
    pub chunks: usize,
    pub description: String,
    /// The trace's device table (`IoRecord::device` indexes it).
    pub devices: Vec<DeviceJson>,
    pub discard_bytes: u64,
    pub discards: u64,
    /// First issue to last completion (or issue), ns.
    pub duration_ns: u64,
    /// The path as given on the command line.
    pub file: String,
    pub file_bytes: u64,
    pub flushes: u64,
    /// Distinct bytes read or written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub footprint_bytes: Option<u64>,
    /// Distinct extents of the footprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub footprint_extents: Option<usize>,
    /// Time with nothing in flight, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_periods: Option<IdlePeriodsJson>,
    pub ios: u64,
    /// The kernel event whose time is the issue time (`issue`, `insert`, ...).
    pub issue_event: &'static str,
    /// Gaps between consecutive issues, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue_gaps_ns: Option<Histogram>,
    pub name: String,
    /// What the source noted that is no I/O, with counts.
    pub notes: Vec<NoteJson>,
    pub original_device: Option<OriginalDeviceJson>,
    /// Requests in flight at each issue (needs completion times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<Option<Histogram>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_depth_at_issue: Option<Option<QueueDepthJson>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_reads: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_writes: Option<u64>,
    /// Bytes read back after the trace wrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_after_write_bytes: Option<u64>,
    pub read_bytes: u64,
    /// Read request sizes, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_sizes: Option<Histogram>,
    pub reads: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential_reads: Option<u64>,
    /// Share of reads and writes that start where the previous one of their
    /// kind ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential_writes: Option<u64>,
    /// Input lines or events the conversion skipped (`--skip-bad`).
    pub skipped: u64,
    pub skipped_examples: Vec<SkippedExampleJson>,
    pub source_files: Vec<String>,
    pub source_format: String,
    /// The captured task (its marks, untraced time and calibration), when
    /// the trace has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskJson>,
    /// The largest step every time and latency is a multiple of, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_step_ns: Option<Option<u64>>,
    pub with_latency: u64,
    pub write_bytes: u64,
    /// Write request sizes, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_sizes: Option<Histogram>,
    pub write_zeroes: u64,
    pub write_zeroes_bytes: u64,
    pub writes: u64,
    /// Distinct bytes written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_footprint_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AddressSpan {
    pub max_end: Option<u64>,
    pub min_offset: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceJson {
    /// `MAJ:MIN`.
    pub dev: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OriginalDeviceJson {
    pub dev: String,
    pub logical_block_size: Option<u32>,
    pub model: Option<String>,
    pub name: String,
    pub size_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoteJson {
    pub count: u64,
    pub what: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedExampleJson {
    pub content: String,
    pub location: String,
    pub reason: String,
}

/// Queue depth at issue in the original run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueDepthJson {
    pub max: usize,
    pub median: Option<u64>,
    pub p90: Option<u64>,
    /// Share of issues with nothing else in flight.
    pub qd1_share: Option<f64>,
}

/// Idle periods by length (see `trace_format::stats::IdlePeriods`).
/// The captured task, ns (fields alphabetical, absent when unknown).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskJson {
    /// What a replay on the capture drive predicted, per dependency model
    /// (a calibrated trace).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub capture_drive_ns: BTreeMap<&'static str, u64>,
    /// The replays the calibration is the median of, where the trace records
    /// them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationJson>,
    /// Start to "done", as captured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured_ns: Option<u64>,
    /// The "done" point after time 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_after_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_before_ns: Option<u64>,
    /// The task's time in an untraced run on the capture drive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untraced_ns: Option<u64>,
    /// The CPU time its threads ran between the marks at capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<TaskCpuJson>,
}

/// A task's CPU time between its marks, as captured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskCpuJson {
    /// Its busiest thread's: no prediction goes below it.
    pub busiest_thread_ns: u64,
    pub total_ns: u64,
    pub threads: u32,
}

/// The replays a trace's calibration is the median of.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationJson {
    /// Each replay's prediction on the capture drive, per dependency model,
    /// ns.
    pub replays_ns: Vec<BTreeMap<&'static str, u64>>,
    /// The settings they ran at.
    pub settings: BTreeMap<String, String>,
}

impl TaskJson {
    fn new(t: &trace_format::TaskMarks, c: Option<&trace_format::CalibrationReplays>) -> TaskJson {
        TaskJson {
            calibration: c.map(|c| CalibrationJson {
                replays_ns: c
                    .predictions
                    .iter()
                    .map(|p| p.iter().map(|(m, n)| (m.name(), n.0)).collect())
                    .collect(),
                settings: c.settings.iter().cloned().collect(),
            }),
            capture_drive_ns: t
                .capture_drive
                .iter()
                .map(|(m, n)| (m.name(), n.0))
                .collect(),
            captured_ns: t.captured().map(|n| n.0),
            end_ns: t.end.map(|n| n.0),
            start_after_ns: t.start_after.map(|n| n.0),
            start_before_ns: t.start_before.map(|n| n.0),
            untraced_ns: t.untraced.map(|n| n.0),
            cpu: t.cpu.map(|c| TaskCpuJson {
                busiest_thread_ns: c.busiest_thread.0,
                total_ns: c.total.0,
                threads: c.threads,
            }),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdlePeriodsJson {
    pub bounds_ns: Vec<u64>,
    pub counts: Vec<u64>,
    /// Idle kept when each period is cut to the cap, keyed `10ms`, `1s`, ...
    pub kept_ns_at_cap: BTreeMap<String, u64>,
    pub ns: Vec<u64>,
}

impl TraceInfo {
    /// The document for `file`, opened from `path`; `stats` is `None` under
    /// `--summary-only`.
    pub fn new(file: &TraceFile, stats: Option<&TraceStats>, path: &Path) -> TraceInfo {
        let h = file.header();
        let s = file.summary();
        let tail = &file.footer().tail;
        let mut info = TraceInfo {
            address_span: AddressSpan {
                max_end: s.max_end.map(|b| b.0),
                min_offset: s.min_offset.map(|b| b.0),
            },
            busy_ns: None,
            busy_share: None,
            bytes_per_io: if s.ios > 0 {
                file.file_len() as f64 / s.ios as f64
            } else {
                0.0
            },
            capture_host: h.capture_host.clone(),
            capture_kernel: h.capture_kernel.clone(),
            capture_start_unix_ns: h.capture_start_unix_ns.or(tail.capture_start_unix_ns),
            category: h.category.clone(),
            chunks: file.footer().chunks.len(),
            description: h.description.clone(),
            devices: tail
                .devices
                .iter()
                .map(|d| DeviceJson {
                    dev: d.id.to_string(),
                    name: d.name.clone(),
                })
                .collect(),
            discard_bytes: s.discard_bytes,
            discards: s.discards,
            duration_ns: s.duration.0,
            file: path.display().to_string(),
            file_bytes: file.file_len(),
            flushes: s.flushes,
            footprint_bytes: None,
            footprint_extents: None,
            idle_ns: None,
            idle_periods: None,
            ios: s.ios,
            issue_event: h.issue_event.name(),
            issue_gaps_ns: None,
            name: h.name.clone(),
            notes: tail
                .notes
                .iter()
                .map(|(k, n)| NoteJson {
                    count: *n,
                    what: k.clone(),
                })
                .collect(),
            original_device: h.original_device.as_ref().map(|d| OriginalDeviceJson {
                dev: d.id.to_string(),
                logical_block_size: d.logical_block_size,
                model: d.model.clone(),
                name: d.name.clone(),
                size_bytes: d.size.map(|b| b.0),
            }),
            queue_depth: None,
            queue_depth_at_issue: None,
            random_reads: None,
            random_writes: None,
            read_after_write_bytes: None,
            read_bytes: s.read_bytes,
            read_sizes: None,
            reads: s.reads,
            sequential_reads: None,
            sequential_share: None,
            sequential_writes: None,
            skipped: tail.skipped.count,
            skipped_examples: tail
                .skipped
                .examples
                .iter()
                .map(|e| SkippedExampleJson {
                    content: e.content.clone(),
                    location: e.location.clone(),
                    reason: e.reason.clone(),
                })
                .collect(),
            source_files: h.source_files.clone(),
            source_format: h.source_format.clone(),
            task: (!tail.task.is_empty())
                .then(|| TaskJson::new(&tail.task, tail.calibration.as_ref())),
            time_step_ns: None,
            with_latency: s.with_latency,
            write_bytes: s.write_bytes,
            write_sizes: None,
            write_zeroes: s.write_zeroes,
            write_zeroes_bytes: s.write_zeroes_bytes,
            writes: s.writes,
            written_footprint_bytes: None,
        };
        if let Some(st) = stats {
            info.add_characterisation(st);
        }
        info
    }

    /// The fields that need a pass over the records.
    fn add_characterisation(&mut self, st: &TraceStats) {
        let duration = self.duration_ns;
        self.busy_ns = Some(st.busy.map(|b| b.0));
        self.busy_share = Some(
            st.busy
                .filter(|_| duration > 0)
                .map(|b| b.0 as f64 / duration as f64),
        );
        self.footprint_bytes = Some(st.footprint.0);
        self.footprint_extents = Some(st.footprint_extents);
        self.idle_ns = Some(st.idle.0);
        let p = &st.idle_periods;
        self.idle_periods = Some(IdlePeriodsJson {
            bounds_ns: p.bounds.clone(),
            counts: p.counts.clone(),
            kept_ns_at_cap: TraceStats::IDLE_CAPS
                .iter()
                .zip(&p.kept_ns_at_cap)
                .map(|(cap, kept)| (cap_key(*cap), *kept))
                .collect(),
            ns: p.ns.clone(),
        });
        self.issue_gaps_ns = Some(st.issue_gaps.clone());
        self.queue_depth = Some(st.queue_depth.clone());
        self.queue_depth_at_issue = Some(st.queue_depth_counts.as_ref().map(|c| QueueDepthJson {
            max: c.len().saturating_sub(1),
            median: st.queue_depth_percentile(0.5),
            p90: st.queue_depth_percentile(0.9),
            qd1_share: st.qd1_share(),
        }));
        self.random_reads = Some(st.random_reads);
        self.random_writes = Some(st.random_writes);
        self.read_after_write_bytes = Some(st.read_after_write.0);
        self.read_sizes = Some(st.read_sizes.clone());
        self.sequential_reads = Some(st.sequential_reads);
        self.sequential_share = Some(st.sequential_share());
        self.sequential_writes = Some(st.sequential_writes);
        self.time_step_ns = Some(st.time_step.map(|t| t.0));
        self.write_sizes = Some(st.write_sizes.clone());
        self.written_footprint_bytes = Some(st.written_footprint.0);
    }
}

/// `10ms`, `1s`: a cap as a JSON key.
fn cap_key(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else {
        format!("{}ms", ns / 1_000_000)
    }
}
