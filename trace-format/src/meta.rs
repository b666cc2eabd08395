//! What a trace says about itself: the header (known before the first record)
//! and the tail (learnt while writing: device table, summary, skipped input).

use crate::record::{DeviceId, IoRecord, Op};
use crate::task::{CalibrationReplays, TaskMarks};
use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};

/// Which block-layer event defined a record's issue time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IssueEvent {
    /// The driver dispatch (blkparse `D`, tracefs `block_rq_issue`).
    Issue,
    /// The request's entry into the block layer (blkparse `Q`).
    Queue,
    /// The source has only one time per request (MSR, WPA, fio, SPC): whatever it
    /// recorded.
    Source,
}

impl IssueEvent {
    pub fn name(self) -> &'static str {
        match self {
            IssueEvent::Issue => "issue",
            IssueEvent::Queue => "queue",
            IssueEvent::Source => "source",
        }
    }
}

/// A block device as the capture or the source describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub id: DeviceId,
    /// Kernel name (`nvme0n1`), Windows disk name, or empty when unknown.
    pub name: String,
    pub size: Option<Bytes>,
    pub logical_block_size: Option<u32>,
    /// Model string, when known.
    pub model: Option<String>,
}

/// The self-describing header written at the start of a `.tmt` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    pub name: String,
    pub description: String,
    /// Application or category (`game load`, `office`, ...).
    pub category: String,
    /// Input format the trace was converted from (`blkparse`, `tracefs`, `msr`, ... or
    /// `capture` for a live capture).
    pub source_format: String,
    /// Input files, as given on the command line.
    pub source_files: Vec<String>,
    /// Host and kernel of the capture, when known.
    pub capture_host: Option<String>,
    pub capture_kernel: Option<String>,
    /// The traced device, when known before the first record (live capture).
    pub original_device: Option<DeviceInfo>,
    pub issue_event: IssueEvent,
    /// Wall-clock time of the trace start (ns since the Unix epoch), when known.
    pub capture_start_unix_ns: Option<i64>,
    /// The tracemark version that wrote the file.
    pub writer: String,
}

impl TraceHeader {
    pub fn new(name: impl Into<String>, source_format: impl Into<String>) -> TraceHeader {
        TraceHeader {
            name: name.into(),
            description: String::new(),
            category: String::new(),
            source_format: source_format.into(),
            source_files: Vec::new(),
            capture_host: None,
            capture_kernel: None,
            original_device: None,
            issue_event: IssueEvent::Source,
            capture_start_unix_ns: None,
            writer: format!("tracemark-trace-format {}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// One entry of the device table; `IoRecord::device` indexes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceEntry {
    pub id: DeviceId,
    pub name: String,
}

/// What a conversion skipped with `--skip-bad`: the count and the first examples.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SkippedInput {
    pub count: u64,
    /// The first few skipped lines or records: where, what it said, why.
    pub examples: Vec<SkippedExample>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedExample {
    /// `file:line` or `file: record N`.
    pub location: String,
    pub content: String,
    pub reason: String,
}

impl SkippedInput {
    pub const MAX_EXAMPLES: usize = 10;

    pub fn add(&mut self, example: SkippedExample) {
        self.count += 1;
        if self.examples.len() < Self::MAX_EXAMPLES {
            self.examples.push(example);
        }
    }
}

/// What the writer learns while writing, stored in the footer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TraceTail {
    pub devices: Vec<DeviceEntry>,
    pub skipped: SkippedInput,
    /// Other things the source noted but that are no records (events it did not
    /// use, for instance), as `key: count` lines for `info`.
    pub notes: Vec<(String, u64)>,
    /// Wall-clock start, when learnt only while reading the source.
    pub capture_start_unix_ns: Option<i64>,
    /// The captured task, stored in the file's task section (not in the
    /// footer's encoding; a reader fills it from the section, or from the
    /// notes of a format 1.0 file).
    #[serde(skip)]
    pub task: TaskMarks,
    /// The replays the task's calibration was made from, stored in the
    /// file's calibration section (absent from uncalibrated traces and from
    /// traces calibrated before the section existed).
    #[serde(skip)]
    pub calibration: Option<CalibrationReplays>,
}

/// Per-trace totals, computed by the writer and stored in the footer so `info`
/// need not decode records.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Summary {
    pub ios: u64,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub discards: u64,
    pub write_zeroes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub discard_bytes: u64,
    pub write_zeroes_bytes: u64,
    /// Records with a known original latency.
    pub with_latency: u64,
    /// Issue time of the last record.
    pub last_issue: Nanos,
    /// From the trace start to the last issue or completion, whichever is later.
    pub duration: Nanos,
    /// Lowest offset and highest end of any request with data (None when there is none).
    pub min_offset: Option<Bytes>,
    pub max_end: Option<Bytes>,
}

impl Summary {
    pub fn add(&mut self, r: &IoRecord) {
        self.ios += 1;
        match r.op {
            Op::Read => {
                self.reads += 1;
                self.read_bytes = self.read_bytes.saturating_add(r.len.0);
            }
            Op::Write => {
                self.writes += 1;
                self.write_bytes = self.write_bytes.saturating_add(r.len.0);
            }
            Op::Flush => self.flushes += 1,
            Op::Discard => {
                self.discards += 1;
                self.discard_bytes = self.discard_bytes.saturating_add(r.len.0);
            }
            Op::WriteZeroes => {
                self.write_zeroes += 1;
                self.write_zeroes_bytes = self.write_zeroes_bytes.saturating_add(r.len.0);
            }
        }
        if r.latency.is_some() {
            self.with_latency += 1;
        }
        self.last_issue = self.last_issue.max(r.time);
        let end_time = r.completion().unwrap_or(r.time);
        self.duration = self.duration.max(end_time);
        if r.len.0 > 0 {
            self.min_offset = Some(self.min_offset.map_or(r.offset, |m| m.min(r.offset)));
            let end = r.end().unwrap_or(Bytes(u64::MAX));
            self.max_end = Some(self.max_end.map_or(end, |m| m.max(end)));
        }
    }
}
