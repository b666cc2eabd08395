//! Live capture (`tracemark capture`): traces one block device through the
//! kernel's tracefs and streams the events into a `.tmt`.
//!
//! How it works:
//! - tracefs is mounted at `/sys/kernel/tracing` if it is not (and unmounted at
//!   the end);
//! - a private tracing instance `instances/tracemark-<pid>` gets its own ring
//!   buffer, `trace_clock` `mono`, and the block events of the chosen
//!   [`EventSet`] with a kernel-side `filter` on the device;
//!   removing the instance at the end undoes all of it and never disturbs the
//!   global tracer. Without instance support the top level is used and every
//!   file written there is restored;
//! - the instance's binary ring buffer is read while the capture runs: each
//!   CPU's `per_cpu/cpuN/trace_pipe_raw`, a page at a time (non-blocking; when
//!   every CPU is read to empty it sleeps 20 ms so pages fill),
//!   decoded by [`crate::capture::ftrace_raw`] by the layouts the kernel's
//!   format files give. The CPUs' streams are merged in time order behind a
//!   watermark (below), and the events fed through the [`Normaliser`] into a
//!   [`TraceWriter`]: memory stays flat however long the capture runs;
//! - when the binary buffer cannot be read (no `trace_pipe_raw`, format files
//!   this version does not understand, no `mono` clock), or `--text-pipe` asks
//!   for it, the text `trace_pipe` is read instead, each line parsed by
//!   [`crate::formats::tracefs::parse_line`]; the capture's messages say so;
//! - it stops when the duration has passed, the command it started has exited,
//!   or on SIGINT/SIGTERM; tracing is then switched off, the buffers drained, the
//!   per-CPU buffer statistics read for lost events, and the trace renamed into
//!   place. Every setting is restored by guards, also on errors and panics.
//!
//! Which events ([`EventSet`]): a request-based (blk-mq) disk is traced by its
//! request events, `block_rq_issue` (the issue time: what the driver was
//! handed, after merging and splitting), `block_rq_complete` and
//! `block_rq_requeue`. A bio-based device (zram, device-mapper, md, brd: no
//! `mq` directory in its sysfs entry) never emits request events; it is
//! traced by its bio events, `block_bio_queue` (the issue time: each bio as it
//! was submitted) and `block_bio_complete`, paired by device, sector and
//! length as blkparse's `Q` and `C` ([`EventChoice::Queue`]). The kernel
//! traces a bio's completion only when it traced its queueing
//! (`BIO_TRACE_COMPLETION`); for a request-based disk it traces the request's
//! completion instead, so bio events of such a disk (asked for with
//! [`CaptureOptions::events`]) take their completions from
//! `block_rq_complete`, which covers every bio merged into the request. A bio
//! capture that sees no completion at all says so (messages and a trace note)
//! and has no latencies. Zero-length completions that are not flushes (the
//! end of a flush sequence) are counted and not paired: they carry no sector.
//! A bio that a request-based disk splits into several requests (larger than
//! its largest request) gets the latency of the first request's completion;
//! the others count as completions without a matching request. A bio-based
//! device that splits a bio (md at a chunk boundary) completes the remainder
//! at its own sector, counted the same way.
//!
//! Partitions: block request and bio events name the whole disk and give disk
//! sectors (a partition's bios are remapped before they are traced).
//! Capturing a partition filters the disk's events to the partition's sector
//! range (kernel-side) and maps offsets into the partition, so the trace looks
//! as if the partition were a disk. Cache flushes carry no sector and cannot be
//! attributed to a partition; every flush of the disk is kept. This holds for
//! bio events too, so a partition of a bio-based disk is captured the same way.
//!
//! Clocks: the instance uses the `mono` trace clock (CLOCK_MONOTONIC), so a
//! trace time maps to wall-clock time with one offset measured at the start.
//! The binary buffer gives nanoseconds; the text of `trace_pipe` (the
//! fallback) only microseconds.
//!
//! Merging the CPUs: a request is often issued on one CPU and completed on
//! another, and the normaliser must see the issue first. Each CPU's events
//! are in time order; each read round notes the monotonic clock before it
//! starts, and a CPU read to empty in that round has every event stamped
//! before that time (less [`COMMIT_SLACK_NS`] for events still being
//! written) already read. Events are held in per-CPU queues and released, in
//! time order (a merge of the queues), up to the lowest such watermark over
//! the CPUs (a CPU not read to empty counts up to its last event). A completion is written after its
//! issue was committed, so it is never released before that issue.
//!
//! Lost events: the kernel's per-CPU `stats` (overruns, dropped events) and
//! the lost-events marks the reader meets (the page header's missed-events
//! flag and count, or the text pipe's `LOST` lines) are both reported.
//!
//! [`TraceWriter`]: trace_format::TraceWriter

pub mod ftrace_raw;

use crate::convert::{temp_path_for, TmtOutput};
use crate::error::ConvertError;
use crate::event::{Action, BlockEvent, Location, SourceIo};
use crate::formats::block_events::{self, Parsed};
use crate::formats::tracefs;
use crate::normalize::{EventChoice, NormaliseOptions, Normaliser};
use crate::sink::Sink;
use std::cell::Cell;
use std::collections::VecDeque;
use std::ffi::{CString, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use trace_format::{
    Bytes, DeviceId, DeviceInfo, IssueEvent, Nanos, Op, Summary, TraceHeader, WriterOptions,
};

/// Where tracefs is (or gets) mounted.
pub const TRACEFS_ROOT: &str = "/sys/kernel/tracing";

/// Default per-CPU ring buffer: large enough that a reader which keeps up
/// loses nothing to bursts of a busy NVMe drive.
pub const DEFAULT_BUFFER_MIB: u64 = 64;

/// Which block events a capture traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventSet {
    /// `block_rq_issue`, `block_rq_complete`, `block_rq_requeue`: requests as
    /// the driver got them (request-based disks only).
    Request,
    /// `block_bio_queue`, `block_bio_complete` (and `block_rq_complete` on a
    /// request-based disk): bios as they were submitted, before merging; all a
    /// bio-based device reports.
    Bio,
}

impl EventSet {
    /// `request` or `bio` (the `--events` values).
    pub fn name(self) -> &'static str {
        match self {
            EventSet::Request => "request",
            EventSet::Bio => "bio",
        }
    }

    pub fn from_name(name: &str) -> Option<EventSet> {
        match name {
            "request" => Some(EventSet::Request),
            "bio" => Some(EventSet::Bio),
            _ => None,
        }
    }

    /// `request events` or `bio events`, for the summary line.
    pub fn describe(self) -> &'static str {
        match self {
            EventSet::Request => "request events",
            EventSet::Bio => "bio events",
        }
    }

    /// The event whose time is a record's issue time.
    fn start_event(self) -> &'static str {
        match self {
            EventSet::Request => "block_rq_issue",
            EventSet::Bio => "block_bio_queue",
        }
    }
}

/// One event a capture enables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TracedEvent {
    name: &'static str,
    /// Without it the capture cannot be made; without the others it is
    /// made and says what is missing.
    required: bool,
}

/// The events that make up a capture of `set` on a device that is (or is
/// not) bio-based.
fn traced_events(set: EventSet, bio_based: bool) -> Vec<TracedEvent> {
    let event = |name, required| TracedEvent { name, required };
    match set {
        EventSet::Request => vec![
            event("block_rq_issue", true),
            event("block_rq_complete", true),
            event("block_rq_requeue", false),
        ],
        EventSet::Bio => {
            let mut events = vec![
                event("block_bio_queue", true),
                // Bios of a request-based disk complete as requests; this one
                // still reports the bios that end before they become one.
                event("block_bio_complete", false),
            ];
            if !bio_based {
                events.push(event("block_rq_complete", false));
            }
            events
        }
    }
}

/// Name the parser's locations use for the live stream.
const PIPE_NAME: &str = "trace_pipe";

/// Longest line accepted from `trace_pipe`; a longer one is bad input.
const MAX_LINE: usize = 64 * 1024;

/// How long the main loop waits for data before checking its stop conditions.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How far behind a read round's start events are released from a CPU read to
/// empty: an event is stamped when its space is reserved and readable once
/// committed, a few microseconds later (more if an interrupt intervenes).
/// Released late, an event would only be out of time order by that much,
/// which the normaliser tolerates; pairing never depends on it.
pub const COMMIT_SLACK_NS: u64 = 2_000_000;

/// Pages read from one CPU before the next CPU's turn in a round.
const PAGES_PER_TURN: usize = 64;

/// Note keys a capture stores in the trace.
pub mod note {
    pub const LOST_OVERRUN: &str = "lost events (ring buffer overrun)";
    pub const LOST_DROPPED: &str = "lost events (dropped, ring buffer full)";
    pub const OUTSIDE_PARTITION: &str =
        "capture: I/O of the whole disk outside the partition (not kept)";
    /// Bio capture without any completion event: every record lacks latency.
    pub const NO_BIO_COMPLETIONS: &str =
        "capture: bios whose completion the kernel did not report (no latency)";
    /// Completions of no data that are not flushes (the end of a flush
    /// sequence): no sector to pair them by.
    pub const EMPTY_COMPLETION: &str =
        "capture: completions without data or flush (end of a flush sequence; not paired)";
}

/// Why a capture could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("capture needs root to use tracefs; run it with sudo")]
    NotRoot,
    #[error("tracefs is not available: {0}")]
    NoTracefs(String),
    #[error("{}: {reason}", path.display())]
    Device { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Tracefs {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {source}", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start `{command}`: {source}")]
    Command {
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

fn tracefs_error(path: &Path, source: io::Error) -> CaptureError {
    CaptureError::Tracefs {
        path: path.to_path_buf(),
        source,
    }
}

/// What to capture and where to write it.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// The block device (`/dev/sdb`, `/dev/nvme0n1p2`).
    pub device: PathBuf,
    /// The trace to write.
    pub output: PathBuf,
    /// Stop after this long (`None`: when the command exits, or on Ctrl-C).
    pub duration: Option<Duration>,
    /// Program and arguments to run while tracing (empty: none).
    pub command: Vec<OsString>,
    /// Per-CPU ring buffer size in KiB.
    pub buffer_kb_per_cpu: u64,
    /// Trace name (default: the device name).
    pub name: Option<String>,
    pub description: Option<String>,
    pub category: Option<String>,
    pub writer: WriterOptions,
    /// Use a private tracing instance when the kernel has them (the default);
    /// `false` forces the top-level fallback (for testing its restore).
    pub use_instance: bool,
    /// Read the text `trace_pipe` (microseconds) even where the binary ring
    /// buffer can be read (for testing and comparing the two).
    pub text_pipe: bool,
    /// Which events to trace; `None` picks by the device (bio events for a
    /// bio-based device, request events otherwise).
    pub events: Option<EventSet>,
}

impl CaptureOptions {
    pub fn new(device: impl Into<PathBuf>, output: impl Into<PathBuf>) -> CaptureOptions {
        CaptureOptions {
            device: device.into(),
            output: output.into(),
            duration: None,
            command: Vec::new(),
            buffer_kb_per_cpu: DEFAULT_BUFFER_MIB * 1024,
            name: None,
            description: None,
            category: None,
            writer: WriterOptions::default(),
            use_instance: true,
            text_pipe: false,
            events: None,
        }
    }
}

/// Why the capture stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Duration,
    CommandExited,
    /// SIGINT or SIGTERM.
    Interrupted,
}

/// Events the kernel lost: from the per-CPU buffer statistics, and from the
/// lost-events marks the reader met in the stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostEvents {
    /// Overwritten before they were read (`overrun` + `commit overrun`).
    pub overrun: u64,
    /// Not recorded because the buffer was full (`dropped events`).
    pub dropped: u64,
    /// Events the stream itself said were missing (a page header's lost-events
    /// count, or the text pipe's `CPU:N [LOST M EVENTS]` lines); normally the
    /// same events `overrun` counts.
    pub reader_missed: u64,
    /// Pages flagged as following lost events without a count.
    pub uncounted_marks: u64,
}

impl LostEvents {
    /// Events lost (the statistics and the stream's marks count the same
    /// overwritten events, so the larger of the two counts).
    pub fn total(&self) -> u64 {
        self.overrun
            .max(self.reader_missed)
            .saturating_add(self.dropped)
    }
}

/// How the capture read the kernel's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The binary per-CPU ring buffers (`trace_pipe_raw`): nanosecond times.
    RingBuffer,
    /// The text `trace_pipe`: microsecond times.
    TextPipe,
}

impl Reader {
    pub fn describe(self) -> &'static str {
        match self {
            Reader::RingBuffer => "binary ring buffer, ns times",
            Reader::TextPipe => "text trace_pipe, µs times",
        }
    }
}

/// What a capture did.
#[derive(Debug, Clone)]
pub struct CaptureReport {
    pub output: PathBuf,
    pub device: TracedDevice,
    pub summary: Summary,
    /// From tracing on to tracing off.
    pub traced_for: Duration,
    pub stop: StopReason,
    pub lost: LostEvents,
    /// Exit code of the command (128 + signal number when a signal ended it).
    pub command_status: Option<i32>,
    /// Whether a private tracing instance was used (else the top level).
    pub used_instance: bool,
    /// How the events were read.
    pub reader: Reader,
    /// Which events were traced.
    pub events: EventSet,
    /// Lines of `trace_pipe`, or records and pages of the binary buffer, that
    /// could not be parsed (kept as examples).
    pub skipped_lines: u64,
    pub notes: Vec<(String, u64)>,
    /// Things the user should know (a smaller buffer, a cleanup that failed).
    pub messages: Vec<String>,
}

/// The traced device, as resolved from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedDevice {
    /// The device asked for (a disk or a partition).
    pub info: DeviceInfo,
    /// The disk whose request events are traced (the device itself, or the
    /// disk holding the partition).
    pub disk: DeviceId,
    /// For a partition: its first sector and length on the disk, in bytes.
    pub partition: Option<(Bytes, Bytes)>,
    /// The disk has no request queue (zram, device-mapper, md, brd): it
    /// reports bio events only.
    pub bio_based: bool,
}

fn sysfs_string(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn sysfs_u64(path: &Path) -> Option<u64> {
    sysfs_string(path).and_then(|s| s.parse().ok())
}

fn parse_dev(s: &str) -> Option<DeviceId> {
    let (major, minor) = s.trim().split_once(':')?;
    Some(DeviceId {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
    })
}

/// Resolves a block device path into what the capture needs from sysfs.
pub fn resolve_device(path: &Path) -> Result<TracedDevice, CaptureError> {
    let bad = |reason: String| CaptureError::Device {
        path: path.to_path_buf(),
        reason,
    };
    let meta = fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.file_type().is_block_device() {
        return Err(bad("not a block device".into()));
    }
    let rdev = meta.rdev();
    let id = DeviceId {
        major: libc::major(rdev),
        minor: libc::minor(rdev),
    };
    let sys = fs::canonicalize(format!("/sys/dev/block/{id}"))
        .map_err(|e| bad(format!("no sysfs entry /sys/dev/block/{id} ({e})")))?;
    let name = sys
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let sectors = sysfs_u64(&sys.join("size"));
    let size = sectors.and_then(|s| s.checked_mul(512)).map(Bytes);
    let is_partition = sys.join("partition").exists();
    let (disk_dir, disk, partition) = if is_partition {
        let disk_dir = sys
            .parent()
            .ok_or_else(|| bad("partition without a parent disk in sysfs".into()))?
            .to_path_buf();
        let disk = sysfs_string(&disk_dir.join("dev"))
            .and_then(|d| parse_dev(&d))
            .ok_or_else(|| bad(format!("cannot read {}/dev", disk_dir.display())))?;
        let start = sysfs_u64(&sys.join("start"))
            .and_then(|s| s.checked_mul(512))
            .ok_or_else(|| bad(format!("cannot read {}/start", sys.display())))?;
        let len = size.ok_or_else(|| bad(format!("cannot read {}/size", sys.display())))?;
        (disk_dir, disk, Some((Bytes(start), len)))
    } else {
        (sys.clone(), id, None)
    };
    // blk-mq disks have `mq/` (their hardware queues); bio-based ones
    // (zram, dm-*, md*, brd) have a `queue/` directory but no `mq/`.
    let bio_based = !disk_dir.join("mq").exists();
    let logical_block_size =
        sysfs_u64(&disk_dir.join("queue/logical_block_size")).and_then(|n| u32::try_from(n).ok());
    let model = sysfs_string(&disk_dir.join("device/model")).filter(|m| !m.is_empty());
    Ok(TracedDevice {
        info: DeviceInfo {
            id,
            name,
            size,
            logical_block_size,
            model,
        },
        disk,
        partition,
        bio_based,
    })
}

/// The name of the disk that holds the traced device (for messages).
fn disk_name(device: &TracedDevice) -> String {
    match device.partition {
        None => device.info.name.clone(),
        Some(_) => format!("the disk of {} ({})", device.info.name, device.disk),
    }
}

/// Which events to trace: the ones asked for, or by the device. `Err` when
/// request events are asked for on a bio-based device; the message (for
/// the user) says what bio events mean when they are used.
pub fn choose_events(
    device: &TracedDevice,
    asked: Option<EventSet>,
    path: &Path,
) -> Result<(EventSet, Option<String>), CaptureError> {
    let name = disk_name(device);
    match (asked, device.bio_based) {
        (Some(EventSet::Request), true) => Err(CaptureError::Device {
            path: path.to_path_buf(),
            reason: format!(
                "{name} is a bio-based device (no request queue, like zram, device-mapper or \
                 md): the kernel reports no request events for it; capture its bio events \
                 with --events bio (or auto)"
            ),
        }),
        (None, true) | (Some(EventSet::Bio), true) => Ok((
            EventSet::Bio,
            Some(format!(
                "{name} is a bio-based device (no request queue): capturing its bio events \
                 (block_bio_queue to block_bio_complete); issue times are when each bio was \
                 submitted"
            )),
        )),
        (Some(EventSet::Bio), false) => Ok((
            EventSet::Bio,
            Some(format!(
                "capturing the bio events of {name} (asked for): issue times are when each bio \
                 was submitted, before merging; latencies run to the completion of the request \
                 that carried it"
            )),
        )),
        (None, false) | (Some(EventSet::Request), false) => Ok((EventSet::Request, None)),
    }
}

/// What to tell the user when a bio capture saw `starts` bios and no
/// completion at all (`missing`: the optional events this kernel lacks);
/// `None` when completions came, or nothing was traced.
fn no_completions(
    events: EventSet,
    device: &TracedDevice,
    starts: u64,
    completions: u64,
    missing: &[&str],
) -> Option<String> {
    if events != EventSet::Bio || starts == 0 || completions > 0 {
        return None;
    }
    let lacks = |name: &str| missing.contains(&name);
    let why = if lacks("block_bio_complete") && (device.bio_based || lacks("block_rq_complete")) {
        "this kernel has no block_bio_complete event".to_string()
    } else if device.bio_based {
        "block_bio_complete did not fire: the kernel traces a bio's completion only for bios \
         it flagged BIO_TRACE_COMPLETION"
            .to_string()
    } else if lacks("block_rq_complete") {
        "this kernel has no block_rq_complete event, and its bios complete as requests".to_string()
    } else {
        "neither block_bio_complete nor block_rq_complete fired".to_string()
    };
    Some(format!(
        "the kernel reported no completion for the {starts} bio(s) traced on {} ({why}): the \
         trace has no latencies",
        disk_name(device)
    ))
}

/// The kernel's `dev_t` encoding used in block event fields (`MAJOR << 20 | MINOR`).
pub fn kernel_dev_t(id: DeviceId) -> u64 {
    (u64::from(id.major) << 20) | u64::from(id.minor & 0xf_ffff)
}

/// The event filter that keeps the traced device's requests.
pub fn event_filter(device: &TracedDevice) -> String {
    let dev = kernel_dev_t(device.disk);
    match device.partition {
        None => format!("dev == {dev}"),
        Some((start, len)) => {
            let first = start.0 / 512;
            let end = (start.0 + len.0) / 512;
            // Flushes have no sector (nr_sector 0): keep them all.
            format!("dev == {dev} && ((sector >= {first} && sector < {end}) || nr_sector == 0)")
        }
    }
}

/// The message for a user who is not root.
pub fn check_root() -> Result<(), CaptureError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(CaptureError::NotRoot);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// tracefs: mount, instance, settings

/// Unmounts tracefs on drop if this capture mounted it.
struct TracefsMount {
    root: PathBuf,
    mounted_here: bool,
}

impl TracefsMount {
    fn ensure(root: &Path) -> Result<TracefsMount, CaptureError> {
        if root.join("trace").exists() {
            return Ok(TracefsMount {
                root: root.to_path_buf(),
                mounted_here: false,
            });
        }
        let filesystems = fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if !filesystems
            .lines()
            .any(|l| l.trim_end().ends_with("tracefs"))
        {
            return Err(CaptureError::NoTracefs(
                "this kernel has no tracefs (it needs CONFIG_TRACING)".into(),
            ));
        }
        if !root.is_dir() {
            return Err(CaptureError::NoTracefs(format!(
                "{} does not exist",
                root.display()
            )));
        }
        let target = CString::new(root.as_os_str().as_bytes())
            .map_err(|_| CaptureError::Usage("tracefs path contains a NUL byte".into()))?;
        // SAFETY: all pointers are valid NUL-terminated strings; data is null.
        let rc = unsafe {
            libc::mount(
                c"nodev".as_ptr(),
                target.as_ptr(),
                c"tracefs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(CaptureError::NoTracefs(format!(
                "mounting tracefs at {} failed: {}",
                root.display(),
                io::Error::last_os_error()
            )));
        }
        Ok(TracefsMount {
            root: root.to_path_buf(),
            mounted_here: true,
        })
    }

    /// Unmounts (once); returns a message if that failed.
    fn release(&mut self) -> Option<String> {
        if !std::mem::take(&mut self.mounted_here) {
            return None;
        }
        let target = CString::new(self.root.as_os_str().as_bytes()).ok()?;
        // SAFETY: valid NUL-terminated path.
        let rc = unsafe { libc::umount2(target.as_ptr(), 0) };
        (rc != 0).then(|| {
            format!(
                "could not unmount tracefs at {} (mounted by the capture): {}",
                self.root.display(),
                io::Error::last_os_error()
            )
        })
    }
}

impl Drop for TracefsMount {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// The tracing directory the capture works in: a private instance (removed on
/// release) or the top level (every written file restored on release).
struct TraceDir {
    dir: PathBuf,
    instance: bool,
    /// Top level only: (file, value to write back), in the order written.
    restore: Vec<(PathBuf, String)>,
    released: bool,
}

/// What to write back to a tracing file to restore what reading it returned.
fn restore_value(file: &Path, old: &str) -> String {
    let old = old.trim();
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match name {
        // `[local] global counter ...`: the bracketed one is in use.
        "trace_clock" => old
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
            .unwrap_or("local")
            .to_string(),
        // `1410`, or `7 (expanded: 1410)` before first use: once written the
        // buffer is expanded, so the expanded size is what comes back.
        "buffer_size_kb" => old
            .split_once("(expanded:")
            .and_then(|(_, e)| e.trim().strip_suffix(')'))
            .or_else(|| old.split_whitespace().next())
            .unwrap_or("1410")
            .trim()
            .to_string(),
        // `none` means no filter; `0` clears one.
        "filter" if old == "none" || old.is_empty() => "0".to_string(),
        _ => old.to_string(),
    }
}

impl TraceDir {
    /// Creates the instance `tracemark-<pid>`, or falls back to the top level.
    fn open(
        root: &Path,
        use_instance: bool,
        messages: &mut Vec<String>,
    ) -> Result<TraceDir, CaptureError> {
        let instances = root.join("instances");
        if !use_instance {
            messages.push("using the top-level tracer (asked for)".into());
        } else if instances.is_dir() {
            let pid = std::process::id();
            let mut last_error = None;
            for n in 0..8 {
                let name = if n == 0 {
                    format!("tracemark-{pid}")
                } else {
                    format!("tracemark-{pid}-{n}")
                };
                let dir = instances.join(name);
                match fs::create_dir(&dir) {
                    Ok(()) => {
                        return Ok(TraceDir {
                            dir,
                            instance: true,
                            restore: Vec::new(),
                            released: false,
                        })
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => {
                        last_error = Some(e);
                        break;
                    }
                }
            }
            messages.push(format!(
                "could not create a tracing instance in {} ({}); using the top-level \
                 tracer and restoring its settings afterwards",
                instances.display(),
                last_error.map_or_else(|| "name taken".to_string(), |e| e.to_string())
            ));
        } else {
            messages.push(
                "this kernel has no tracing instances; using the top-level tracer and \
                 restoring its settings afterwards"
                    .into(),
            );
        }
        Ok(TraceDir {
            dir: root.to_path_buf(),
            instance: false,
            restore: Vec::new(),
            released: false,
        })
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Writes `value` to `file`, remembering the old value at the top level.
    fn set(&mut self, file: &str, value: &str) -> Result<(), CaptureError> {
        let path = self.path(file);
        if !self.instance {
            let old = fs::read_to_string(&path).map_err(|e| tracefs_error(&path, e))?;
            self.restore
                .push((path.clone(), restore_value(&path, &old)));
        }
        write_setting(&path, value)
    }

    /// Undoes everything (once); returns messages for what failed.
    fn release(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.released, true) {
            return Vec::new();
        }
        let mut failed = Vec::new();
        if self.instance {
            // Disable first: an instance with enabled events can still be
            // removed, but this keeps the kernel's work minimal if it cannot.
            let _ = write_setting(&self.path("tracing_on"), "0");
            if let Err(e) = fs::remove_dir(&self.dir) {
                failed.push(format!(
                    "could not remove the tracing instance {}: {e}",
                    self.dir.display()
                ));
            }
        } else {
            while let Some((path, value)) = self.restore.pop() {
                if let Err(e) = write_setting(&path, &value) {
                    failed.push(format!(
                        "could not restore {} to `{value}`: {e}",
                        path.display()
                    ));
                }
            }
        }
        failed
    }
}

impl Drop for TraceDir {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

fn write_setting(path: &Path, value: &str) -> Result<(), CaptureError> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| tracefs_error(path, e))?;
    f.write_all(value.as_bytes())
        .map_err(|e| tracefs_error(path, e))
}

/// Sums `overrun`, `commit overrun` and `dropped events` over the CPUs.
fn read_lost(dir: &Path) -> LostEvents {
    let mut lost = LostEvents::default();
    let Ok(cpus) = fs::read_dir(dir.join("per_cpu")) else {
        return lost;
    };
    for cpu in cpus.flatten() {
        let Ok(stats) = fs::read_to_string(cpu.path().join("stats")) else {
            continue;
        };
        for line in stats.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(n) = value.trim().parse::<u64>() else {
                continue;
            };
            match key.trim() {
                "overrun" | "commit overrun" => lost.overrun = lost.overrun.saturating_add(n),
                "dropped events" => lost.dropped = lost.dropped.saturating_add(n),
                _ => {}
            }
        }
    }
    lost
}

/// Per-CPU buffer size that fits: at most a quarter of the available memory
/// over all CPUs.
fn fitting_buffer_kb(wanted_kb: u64, cpus: u64, messages: &mut Vec<String>) -> u64 {
    let available_kb = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(u64::MAX);
    let cap = (available_kb / 4) / cpus.max(1);
    if wanted_kb > cap {
        let kb = cap.max(1024);
        messages.push(format!(
            "using a {} MiB per-CPU trace buffer instead of {} MiB: {} CPUs would need more \
             than a quarter of the available memory",
            kb / 1024,
            wanted_kb / 1024,
            cpus
        ));
        kb
    } else {
        wanted_kb
    }
}

fn online_cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

// ---------------------------------------------------------------------------
// signals

static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_signal: libc::c_int) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM set a flag (the main loop then stops, drains and
/// restores) instead of killing the process; the old handlers come back on drop.
struct StopSignals {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl StopSignals {
    fn install() -> Result<StopSignals, CaptureError> {
        STOP_REQUESTED.store(false, Ordering::SeqCst);
        let mut guard = StopSignals { old: Vec::new() };
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction is valid; the handler only stores an atomic.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = request_stop as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                // No SA_RESTART: a signal wakes the poll at once.
                action.sa_flags = 0;
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) != 0 {
                    return Err(CaptureError::Usage(format!(
                        "cannot install a signal handler: {}",
                        io::Error::last_os_error()
                    )));
                }
                guard.old.push((signal, old));
            }
        }
        Ok(guard)
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for (signal, old) in self.old.drain(..).rev() {
            // SAFETY: restores a sigaction previously returned by the kernel.
            unsafe {
                libc::sigaction(signal, &old, std::ptr::null_mut());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// the stream

/// Receives each line of the pipe: its number and its text, or why it is no
/// text.
type LineHandler<'h> = dyn FnMut(u64, Result<&str, &str>) -> Result<(), ConvertError> + 'h;

/// Reads `trace_pipe` without blocking and hands out complete lines.
struct PipeReader {
    file: File,
    path: PathBuf,
    pending: Vec<u8>,
    chunk: Vec<u8>,
    line: u64,
    /// Discarding the rest of an over-long line.
    skipping_long: bool,
}

/// What one read of the pipe found.
#[derive(Debug, PartialEq, Eq)]
enum PipeRead {
    Data,
    Empty,
}

impl PipeReader {
    fn open(path: PathBuf) -> Result<PipeReader, CaptureError> {
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| tracefs_error(&path, e))?;
        Ok(PipeReader {
            file,
            path,
            pending: Vec::with_capacity(2 * MAX_LINE),
            chunk: vec![0; 256 * 1024],
            line: 0,
            skipping_long: false,
        })
    }

    /// Waits up to `timeout` for data (or a signal).
    fn wait(&self, timeout: Duration) {
        let mut fd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd. The result does not matter: the caller reads
        // (non-blocking) either way.
        unsafe {
            libc::poll(&mut fd, 1, ms);
        }
    }

    /// Reads what is available and passes each complete line to `on_line`.
    fn read_once(&mut self, on_line: &mut LineHandler<'_>) -> Result<PipeRead, CaptureError> {
        let n = loop {
            match self.file.read(&mut self.chunk) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(PipeRead::Empty),
                Err(e) => return Err(tracefs_error(&self.path, e)),
            }
        };
        if n == 0 {
            return Ok(PipeRead::Empty);
        }
        let data = self.chunk.get(..n).unwrap_or(&[]);
        let mut rest = data;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(nl);
            rest = tail.get(1..).unwrap_or(&[]);
            if self.skipping_long {
                self.skipping_long = false;
                continue;
            }
            self.line += 1;
            let result = if self.pending.is_empty() {
                deliver_bytes(self.line, head, on_line)
            } else {
                self.pending.extend_from_slice(head);
                let r = deliver_bytes(self.line, &self.pending, on_line);
                self.pending.clear();
                r
            };
            result?;
        }
        if !self.skipping_long {
            self.pending.extend_from_slice(rest);
            if self.pending.len() > MAX_LINE {
                self.line += 1;
                self.pending.clear();
                self.skipping_long = true;
                on_line(self.line, Err("line longer than 64 KiB"))?;
            }
        }
        Ok(PipeRead::Data)
    }
}

fn deliver_bytes(
    line: u64,
    bytes: &[u8],
    on_line: &mut LineHandler<'_>,
) -> Result<(), ConvertError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => on_line(line, Ok(text)),
        Err(_) => on_line(line, Err("not UTF-8 text")),
    }
}

/// The text `trace_pipe`, parsed line by line.
struct TextStream {
    pipe: PipeReader,
    /// Events its `LOST` lines reported.
    lost: u64,
}

impl TextStream {
    fn read_once(&mut self, sink: &mut dyn Sink) -> Result<PipeRead, CaptureError> {
        let lost = &mut self.lost;
        let mut on_line = |line: u64, text: Result<&str, &str>| -> Result<(), ConvertError> {
            let at = Location::line(PIPE_NAME, line);
            match text {
                Ok(text) => match tracefs::parse_line(text) {
                    Ok(parsed) => {
                        if let tracefs::TraceLine::Lost { events, .. } = parsed {
                            *lost = lost.saturating_add(events);
                        }
                        tracefs::deliver(parsed, at, sink)
                    }
                    Err(reason) => sink.bad_input(at, text, &reason),
                },
                Err(reason) => sink.bad_input(at, "", reason),
            }
        };
        self.pipe.read_once(&mut on_line)
    }
}

/// One CPU's binary stream.
struct RawCpu {
    cpu: u32,
    file: File,
    path: PathBuf,
    /// `per_cpu/cpuN/trace_pipe_raw`: names the stream in messages.
    name: String,
    /// Pages and data records read so far.
    pages: u64,
    records: u64,
    /// Time of the last record read.
    last_time: u64,
    /// Every event of this CPU stamped at or before this time has been read.
    watermark: u64,
    /// The kernel has no buffer for this CPU (offline): nothing to wait for.
    gone: bool,
    /// Decoded events waiting for the other CPUs' watermark, in reading
    /// (and so, per CPU, time) order.
    held: VecDeque<HeldEvent>,
}

/// A decoded event waiting for the other CPUs' watermark.
struct HeldEvent {
    /// Record number and stream byte offset on its CPU (for messages).
    record: u64,
    byte: u64,
    /// Its time is `event.time`.
    event: BlockEvent,
}

/// The binary per-CPU ring buffers, decoded and merged in time order.
struct RawStream {
    cpus: Vec<RawCpu>,
    layout: ftrace_raw::PageLayout,
    decoder: ftrace_raw::BlockDecoder,
    page: Vec<u8>,
    /// Events the page headers said were lost, and pages that said so
    /// without a count.
    missed: u64,
    uncounted_marks: u64,
}

/// Reads a tracefs text file. `header_page` and `header_event` answer only
/// the first read (a later one, at a non-zero offset, gets nothing), so the
/// first read must ask for the whole file: a small first read (as
/// `read_to_string` makes) would cut it short.
fn read_text(path: &Path) -> Result<String, String> {
    let error = |e: io::Error| format!("{}: {e}", path.display());
    let mut file = File::open(path).map_err(error)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(error(e)),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// A short hex dump of a record for a bad-input example.
fn hex_prefix(bytes: &[u8]) -> String {
    let mut out: String = bytes
        .iter()
        .take(32)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ");
    if bytes.len() > 32 {
        out.push_str(" ...");
    }
    out
}

fn mono_now_ns() -> u64 {
    u64::try_from(clock_ns(libc::CLOCK_MONOTONIC)).unwrap_or(0)
}

impl RawStream {
    /// Reads the format files of `events` (those the capture enabled) and
    /// opens every CPU's `trace_pipe_raw` in `dir` (the instance or the top
    /// level); `Err` says why the binary buffer cannot be used.
    fn open(dir: &Path, root: &Path, events: &[&str]) -> Result<RawStream, String> {
        // Instances have their own copies of the header files; old kernels
        // only the top level.
        let header_dir = [dir.join("events"), root.join("events")]
            .into_iter()
            .find(|d| d.join("header_page").is_file())
            .ok_or_else(|| format!("{} is missing", root.join("events/header_page").display()))?;
        let page_path = header_dir.join("header_page");
        let mut layout = ftrace_raw::parse_header_page(
            &page_path.display().to_string(),
            &read_text(&page_path)?,
        )
        .map_err(|e| e.to_string())?;
        let event_path = header_dir.join("header_event");
        ftrace_raw::check_header_event(&event_path.display().to_string(), &read_text(&event_path)?)
            .map_err(|e| e.to_string())?;
        let mut formats = Vec::new();
        for event in events {
            let path = dir.join(format!("events/block/{event}/format"));
            if !path.is_file() {
                continue;
            }
            let name = path.display().to_string();
            let format = ftrace_raw::parse_event_format(&name, &read_text(&path)?)
                .map_err(|e| e.to_string())?;
            formats.push((name, format));
        }
        let named: Vec<(&str, &ftrace_raw::EventFormat)> =
            formats.iter().map(|(n, f)| (n.as_str(), f)).collect();
        let decoder = ftrace_raw::BlockDecoder::new(&named).map_err(|e| e.to_string())?;
        // Kernels with sub-buffers of other sizes say how large they are.
        if let Some(kb) = sysfs_u64(&dir.join("buffer_subbuf_size_kb")) {
            let bytes = usize::try_from(kb.saturating_mul(1024)).unwrap_or(usize::MAX);
            layout = layout
                .with_page_size(bytes)
                .map_err(|e| format!("{}: {e}", dir.join("buffer_subbuf_size_kb").display()))?;
        }
        let per_cpu = dir.join("per_cpu");
        let entries = fs::read_dir(&per_cpu).map_err(|e| format!("{}: {e}", per_cpu.display()))?;
        let mut cpus = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let path = entry.path().join("trace_pipe_raw");
            let file = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            cpus.push(RawCpu {
                cpu,
                file,
                path,
                name: format!("per_cpu/cpu{cpu}/trace_pipe_raw"),
                pages: 0,
                records: 0,
                last_time: 0,
                watermark: 0,
                gone: false,
                held: VecDeque::new(),
            });
        }
        if cpus.is_empty() {
            return Err(format!(
                "no cpuN/trace_pipe_raw files in {}",
                per_cpu.display()
            ));
        }
        cpus.sort_by_key(|c| c.cpu);
        Ok(RawStream {
            cpus,
            page: vec![0; layout.page_size],
            layout,
            decoder,
            missed: 0,
            uncounted_marks: 0,
        })
    }

    /// One round: reads each CPU (up to [`PAGES_PER_TURN`] pages), then
    /// releases the events below the CPUs' common watermark. `Data` when some
    /// CPU has more to read at once.
    fn read_round(&mut self, sink: &mut dyn Sink) -> Result<PipeRead, CaptureError> {
        let round_start = mono_now_ns();
        let mut more = false;
        for i in 0..self.cpus.len() {
            let drained = self.read_cpu(i, sink)?;
            let cpu = &mut self.cpus[i];
            let reached = if drained {
                round_start.saturating_sub(COMMIT_SLACK_NS)
            } else {
                more = true;
                cpu.last_time
            };
            cpu.watermark = cpu.watermark.max(reached);
        }
        let watermark = self
            .cpus
            .iter()
            .map(|c| if c.gone { u64::MAX } else { c.watermark })
            .min()
            .unwrap_or(u64::MAX);
        self.release(watermark, sink)?;
        Ok(if more {
            PipeRead::Data
        } else {
            PipeRead::Empty
        })
    }

    /// Reads and decodes pages of CPU `i`; `true` when it was read to empty.
    fn read_cpu(&mut self, i: usize, sink: &mut dyn Sink) -> Result<bool, CaptureError> {
        for _ in 0..PAGES_PER_TURN {
            let Some(cpu) = self.cpus.get_mut(i) else {
                return Ok(true);
            };
            if cpu.gone {
                return Ok(true);
            }
            let n = match cpu.file.read(&mut self.page) {
                Ok(0) => return Ok(true),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {
                    cpu.gone = true;
                    return Ok(true);
                }
                Err(e) => return Err(tracefs_error(&cpu.path, e)),
            };
            self.decode_page(i, n, sink)?;
        }
        Ok(false)
    }

    /// Decodes the first `n` bytes of the page buffer, read from CPU `i`.
    fn decode_page(&mut self, i: usize, n: usize, sink: &mut dyn Sink) -> Result<(), ConvertError> {
        let RawStream {
            cpus,
            layout,
            decoder,
            page,
            missed,
            uncounted_marks,
        } = self;
        let Some(cpu) = cpus.get_mut(i) else {
            return Ok(());
        };
        let bytes = page.get(..n).unwrap_or(&[]);
        let page_no = cpu.pages;
        cpu.pages += 1;
        let stream_byte = page_no.saturating_mul(layout.page_size as u64);
        let p = match ftrace_raw::open_page(layout, bytes, cpu.cpu, page_no) {
            Ok(p) => p,
            Err(e) => {
                let at = Location::record(&cpu.name, cpu.records, stream_byte);
                let header = bytes.get(..layout.data_offset).unwrap_or(bytes);
                return sink.bad_input(at, &hex_prefix(header), &e.to_string());
            }
        };
        let lost_at = Location::record(&cpu.name, cpu.records, stream_byte);
        match p.missed {
            ftrace_raw::Missed::None => {}
            ftrace_raw::Missed::Count(events) => {
                *missed = missed.saturating_add(events);
                tracefs::deliver(
                    tracefs::TraceLine::Lost {
                        cpu: cpu.cpu,
                        events,
                    },
                    lost_at,
                    sink,
                )?;
            }
            ftrace_raw::Missed::Unknown => {
                *uncounted_marks += 1;
                sink.note(tracefs::note::LOST_LINES);
            }
        }
        for record in p.records() {
            let record = match record {
                Ok(r) => r,
                Err(e) => {
                    let at = Location::record(
                        &cpu.name,
                        cpu.records,
                        stream_byte.saturating_add(e.byte as u64),
                    );
                    let rest = bytes.get(e.byte..).unwrap_or(&[]);
                    sink.bad_input(at, &hex_prefix(rest), &e.to_string())?;
                    break;
                }
            };
            let index = cpu.records;
            cpu.records += 1;
            cpu.last_time = record.time;
            let byte = stream_byte.saturating_add(record.offset as u64);
            match decoder.decode(Nanos(record.time), record.payload) {
                Ok(Parsed::Event(event)) => cpu.held.push_back(HeldEvent {
                    record: index,
                    byte,
                    event,
                }),
                Ok(other) => {
                    block_events::deliver(other, Location::record(&cpu.name, index, byte), sink)?
                }
                Err(reason) => sink.bad_input(
                    Location::record(&cpu.name, index, byte),
                    &hex_prefix(record.payload),
                    &format!("CPU {} ring buffer, page {page_no}: {reason}", cpu.cpu),
                )?,
            }
        }
        Ok(())
    }

    /// Hands the held events stamped at or before `upto` to `sink`, oldest
    /// first: a merge of the CPUs' queues, each in time order. The CPU with
    /// the oldest event gives events until another CPU's is older.
    fn release(&mut self, upto: u64, sink: &mut dyn Sink) -> Result<(), ConvertError> {
        loop {
            // The oldest front, and the oldest front of the other CPUs.
            let mut best: Option<(u64, usize)> = None;
            let mut second = u64::MAX;
            for (i, cpu) in self.cpus.iter().enumerate() {
                let Some(t) = cpu.held.front().map(|h| h.event.time.0) else {
                    continue;
                };
                match best {
                    Some((b, _)) if t >= b => second = second.min(t),
                    _ => {
                        if let Some((b, _)) = best {
                            second = second.min(b);
                        }
                        best = Some((t, i));
                    }
                }
            }
            let Some((t, i)) = best else {
                return Ok(());
            };
            if t > upto {
                return Ok(());
            }
            let limit = upto.min(second);
            let Some(cpu) = self.cpus.get_mut(i) else {
                return Ok(());
            };
            // The oldest of all goes, then this CPU's events while no other
            // CPU has an older one.
            let mut first = true;
            while first || cpu.held.front().is_some_and(|h| h.event.time.0 <= limit) {
                first = false;
                let Some(h) = cpu.held.pop_front() else {
                    break;
                };
                sink.event(Location::record(&cpu.name, h.record, h.byte), h.event)?;
            }
        }
    }
}

/// Where the capture's events come from.
enum EventStream {
    Raw(RawStream),
    Text(TextStream),
}

impl EventStream {
    fn reader(&self) -> Reader {
        match self {
            EventStream::Raw(_) => Reader::RingBuffer,
            EventStream::Text(_) => Reader::TextPipe,
        }
    }

    /// Reads what is there (a bounded amount); `Data` when there may be more
    /// at once.
    fn read_some(&mut self, sink: &mut dyn Sink) -> Result<PipeRead, CaptureError> {
        match self {
            EventStream::Raw(r) => r.read_round(sink),
            EventStream::Text(t) => t.read_once(sink),
        }
    }

    /// Waits up to `timeout` for data (or a signal).
    fn wait(&self, timeout: Duration) {
        match self {
            EventStream::Text(t) => t.pipe.wait(timeout),
            // Polling `trace_pipe_raw` waits for `buffer_percent` of the
            // buffer to fill; a plain sleep (ended early by a signal) keeps
            // the delay bounded and lets pages fill between reads.
            EventStream::Raw(_) => {
                let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
                // SAFETY: no descriptors; poll only sleeps.
                unsafe {
                    libc::poll(std::ptr::null_mut(), 0, ms);
                }
            }
        }
    }

    /// After tracing is off: reads everything left and releases every held
    /// event.
    fn drain(&mut self, sink: &mut dyn Sink) -> Result<(), CaptureError> {
        for _ in 0..2 {
            while self.read_some(sink)? == PipeRead::Data {}
            std::thread::sleep(Duration::from_millis(5));
        }
        while self.read_some(sink)? == PipeRead::Data {}
        if let EventStream::Raw(r) = self {
            r.release(u64::MAX, sink)?;
        }
        Ok(())
    }

    /// (events the stream said were lost, lost-event marks without a count).
    fn missed(&self) -> (u64, u64) {
        match self {
            EventStream::Raw(r) => (r.missed, r.uncounted_marks),
            EventStream::Text(t) => (t.lost, 0),
        }
    }
}

/// Sits between the parser and the normaliser: maps a partition's events into
/// the partition, sets aside completions that carry nothing to pair by,
/// counts what started and completed, and remembers the first event time
/// (the trace start).
struct CaptureView<'n> {
    inner: &'n mut dyn Sink,
    /// (disk, partition, first byte, end byte).
    partition: Option<(DeviceId, DeviceId, u64, u64)>,
    first_time: Rc<Cell<Option<Nanos>>>,
    /// Issue (or queue) events and completion events handed on.
    starts: u64,
    completions: u64,
}

impl CaptureView<'_> {
    /// The event as seen on the partition, or `None` when outside it.
    fn map(&self, mut e: BlockEvent) -> Option<BlockEvent> {
        let Some((disk, part, start, end)) = self.partition else {
            return Some(e);
        };
        if e.device != disk {
            return Some(e);
        }
        let starts_inside = e.offset.0 >= start && e.offset.0 < end;
        if e.len.0 > 0 {
            // Data outside the partition was issued to the whole disk.
            let ends_inside = e.offset.0.checked_add(e.len.0).is_some_and(|x| x <= end);
            if !(starts_inside && ends_inside) {
                return None;
            }
        }
        // A flush has no meaningful sector; it is kept as it is.
        if starts_inside {
            e.offset = Bytes(e.offset.0 - start);
        }
        e.device = part;
        Some(e)
    }
}

impl Sink for CaptureView<'_> {
    fn event(&mut self, at: Location<'_>, event: BlockEvent) -> Result<(), ConvertError> {
        if self.first_time.get().is_none() {
            self.first_time.set(Some(event.time));
        }
        match event.action {
            // The end of a flush sequence completes the original request
            // with no data and no flush op: its sector (0) would pair it
            // with whatever I/O at sector 0 is in flight.
            Action::Complete if event.len.0 == 0 && event.op != Op::Flush => {
                self.inner.note(note::EMPTY_COMPLETION);
                return Ok(());
            }
            Action::Complete => self.completions += 1,
            Action::Issue | Action::Queue => self.starts += 1,
            _ => {}
        }
        match self.map(event) {
            Some(e) => self.inner.event(at, e),
            None => {
                self.inner.note(note::OUTSIDE_PARTITION);
                Ok(())
            }
        }
    }

    fn io(&mut self, at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
        self.inner.io(at, io)
    }

    fn bad_input(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &str,
    ) -> Result<(), ConvertError> {
        self.inner.bad_input(at, content, reason)
    }

    fn note(&mut self, key: &str) {
        self.inner.note(key)
    }
}

/// Maps trace-clock times to wall-clock time.
#[derive(Debug, Clone, Copy)]
struct ClockOffset {
    /// Unix ns minus trace-clock ns, when the trace clock is CLOCK_MONOTONIC.
    mono_to_unix: Option<i128>,
    /// Wall-clock time when tracing started (the fallback).
    start_unix_ns: i64,
}

fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

impl ClockOffset {
    fn measure(mono: bool) -> ClockOffset {
        let before = clock_ns(libc::CLOCK_MONOTONIC);
        let wall = clock_ns(libc::CLOCK_REALTIME);
        let after = clock_ns(libc::CLOCK_MONOTONIC);
        let mid = before + (after - before) / 2;
        ClockOffset {
            mono_to_unix: mono.then_some(wall - mid),
            start_unix_ns: i64::try_from(wall).unwrap_or(i64::MAX),
        }
    }

    fn unix_ns(&self, trace_time: Option<Nanos>) -> i64 {
        match (self.mono_to_unix, trace_time) {
            (Some(offset), Some(t)) => {
                i64::try_from(i128::from(t.0) + offset).unwrap_or(self.start_unix_ns)
            }
            _ => self.start_unix_ns,
        }
    }
}

/// Removes the temporary output unless the capture succeeded.
struct TempGuard {
    path: PathBuf,
    keep: bool,
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Kills nothing: a command still running when the capture ends is waited for,
/// after the trace is written (its exit status still matters).
fn exit_code(status: std::process::ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

fn uname() -> (Option<String>, Option<String>) {
    // SAFETY: a zeroed utsname is valid output space for uname.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    if unsafe { libc::uname(&mut u) } != 0 {
        return (None, None);
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Some(String::from_utf8_lossy(&bytes).to_string()).filter(|s| !s.is_empty())
    };
    (field(&u.nodename), field(&u.release))
}

/// Default output name: `<device name>-<YYYYmmdd-HHMMSS>.tmt` in local time.
pub fn default_output(device: &Path) -> PathBuf {
    let name = device
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "capture".into());
    // SAFETY: time(NULL) and localtime_r with valid pointers.
    let stamp = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            String::from("unknown-time")
        } else {
            format!(
                "{:04}{:02}{:02}-{:02}{:02}{:02}",
                tm.tm_year + 1900,
                tm.tm_mon + 1,
                tm.tm_mday,
                tm.tm_hour,
                tm.tm_min,
                tm.tm_sec
            )
        }
    };
    PathBuf::from(format!("{name}-{stamp}.tmt"))
}

/// Runs a capture: sets tracing up, starts the command, streams events into the
/// trace until a stop condition, restores everything, writes the trace.
/// `on_started` is called once tracing is on (before the command starts).
pub fn capture(
    opts: &CaptureOptions,
    on_started: &mut dyn FnMut(&TracedDevice),
) -> Result<CaptureReport, CaptureError> {
    check_root()?;
    if opts.buffer_kb_per_cpu == 0 {
        return Err(CaptureError::Usage(
            "the trace buffer size must be at least 1 MiB".into(),
        ));
    }
    let device = resolve_device(&opts.device)?;
    let mut messages = Vec::new();
    let (events, why) = choose_events(&device, opts.events, &opts.device)?;
    messages.extend(why);
    let traced = traced_events(events, device.bio_based);

    // The output first: a capture that cannot be written is not started.
    let output = &opts.output;
    let temp = temp_path_for(output).map_err(CaptureError::Usage)?;
    let out_file = File::create(&temp).map_err(|e| CaptureError::Output {
        path: temp.clone(),
        source: e,
    })?;
    let mut temp_guard = TempGuard {
        path: temp.clone(),
        keep: false,
    };

    let signals = StopSignals::install()?;
    let root = Path::new(TRACEFS_ROOT);
    let mut mount = TracefsMount::ensure(root)?;
    let events_dir = root.join("events/block");
    if !events_dir.join(events.start_event()).is_dir() {
        return Err(CaptureError::NoTracefs(format!(
            "{} is missing: this kernel has no block trace events",
            events_dir.join(events.start_event()).display()
        )));
    }
    let mut dir = TraceDir::open(root, opts.use_instance, &mut messages)?;
    let lost_before = if dir.instance {
        LostEvents::default()
    } else {
        read_lost(&dir.dir)
    };

    // Configure with tracing off.
    dir.set("tracing_on", "0")?;
    let mono = match dir.set("trace_clock", "mono") {
        Ok(()) => true,
        Err(_) => {
            messages.push(
                "the `mono` trace clock is unavailable; the start time is approximate".into(),
            );
            false
        }
    };
    let buffer_kb = fitting_buffer_kb(opts.buffer_kb_per_cpu, online_cpus(), &mut messages);
    dir.set("buffer_size_kb", &buffer_kb.to_string())?;
    let filter = event_filter(&device);
    let mut enabled: Vec<&str> = Vec::new();
    let mut missing: Vec<&str> = Vec::new();
    for event in &traced {
        let event_dir = format!("events/block/{}", event.name);
        if !dir.path(&event_dir).is_dir() {
            if event.required {
                return Err(CaptureError::NoTracefs(format!(
                    "{} is missing: this kernel has no {} event",
                    dir.path(&event_dir).display(),
                    event.name
                )));
            }
            missing.push(event.name);
            continue;
        }
        dir.set(&format!("{event_dir}/filter"), &filter)?;
        dir.set(&format!("{event_dir}/enable"), "1")?;
        enabled.push(event.name);
    }
    // Empty the buffer (a new instance's is empty; the top level's may not be).
    if !dir.instance {
        write_setting(&dir.path("trace"), "")?;
    }
    let mut stream = if opts.text_pipe {
        messages.push(
            "reading the text trace_pipe (asked for): times have microsecond resolution".into(),
        );
        EventStream::Text(TextStream {
            pipe: PipeReader::open(dir.path("trace_pipe"))?,
            lost: 0,
        })
    } else {
        let raw = if mono {
            RawStream::open(&dir.dir, root, &enabled)
        } else {
            Err("without the `mono` clock the CPUs' buffers cannot be merged by time".into())
        };
        match raw {
            Ok(raw) => EventStream::Raw(raw),
            Err(why) => {
                messages.push(format!(
                    "cannot read the binary ring buffer ({why}); reading the text trace_pipe \
                     instead: times have microsecond resolution"
                ));
                EventStream::Text(TextStream {
                    pipe: PipeReader::open(dir.path("trace_pipe"))?,
                    lost: 0,
                })
            }
        }
    };

    let (host, kernel) = uname();
    let mut header = TraceHeader::new(
        opts.name
            .clone()
            .unwrap_or_else(|| device.info.name.clone()),
        "capture",
    );
    header.description = opts.description.clone().unwrap_or_default();
    header.category = opts.category.clone().unwrap_or_default();
    header.source_files = vec![opts.device.display().to_string()];
    header.capture_host = host;
    header.capture_kernel = kernel;
    header.original_device = Some(device.info.clone());
    header.issue_event = match events {
        EventSet::Request => IssueEvent::Issue,
        EventSet::Bio => IssueEvent::Queue,
    };

    let first_time = Rc::new(Cell::new(None));
    let clock = ClockOffset::measure(mono);
    let first_seen = first_time.clone();
    let mut out = TmtOutput::new(header, opts.writer, out_file, move |h: &mut TraceHeader| {
        h.capture_start_unix_ns = Some(clock.unix_ns(first_seen.get()));
    });
    let mut normaliser = Normaliser::new(
        NormaliseOptions {
            event: Some(match events {
                EventSet::Request => EventChoice::Issue,
                EventSet::Bio => EventChoice::Queue,
            }),
            skip_bad: true,
            ..NormaliseOptions::default()
        },
        &mut out,
    );
    let partition = device.partition.map(|(start, len)| {
        (
            device.disk,
            device.info.id,
            start.0,
            start.0.saturating_add(len.0),
        )
    });
    let mut view = CaptureView {
        inner: &mut normaliser,
        partition,
        first_time,
        starts: 0,
        completions: 0,
    };

    dir.set("tracing_on", "1")?;
    let started = Instant::now();
    on_started(&device);
    let mut child: Option<Child> =
        match opts.command.split_first() {
            None => None,
            Some((program, args)) => {
                Some(Command::new(program).args(args).spawn().map_err(|e| {
                    CaptureError::Command {
                        command: program.to_string_lossy().to_string(),
                        source: e,
                    }
                })?)
            }
        };
    let mut command_status = None;
    let deadline = opts.duration.map(|d| started + d);

    let stop = loop {
        // Read what is there, checking the stop conditions at least every
        // poll interval even under a steady stream.
        let slice_end = Instant::now() + POLL_INTERVAL;
        let mut got_data = false;
        while stream.read_some(&mut view)? == PipeRead::Data {
            got_data = true;
            if Instant::now() >= slice_end || STOP_REQUESTED.load(Ordering::SeqCst) {
                break;
            }
        }
        if STOP_REQUESTED.load(Ordering::SeqCst) {
            break StopReason::Interrupted;
        }
        if let Some(c) = child.as_mut() {
            match c.try_wait() {
                Ok(Some(status)) => {
                    command_status = Some(exit_code(status));
                    child = None;
                    break StopReason::CommandExited;
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(CaptureError::Command {
                        command: opts
                            .command
                            .first()
                            .map(|p| p.to_string_lossy().to_string())
                            .unwrap_or_default(),
                        source: e,
                    })
                }
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break StopReason::Duration;
        }
        if !got_data {
            let wait = deadline.map_or(POLL_INTERVAL, |d| {
                d.saturating_duration_since(Instant::now())
                    .min(POLL_INTERVAL)
            });
            stream.wait(wait);
        }
    };

    // An interrupted command is told too (a terminal's Ctrl-C reaches it
    // anyway; a SIGINT sent to the capture alone does not).
    if stop == StopReason::Interrupted {
        if let Some(c) = child.as_ref() {
            if let Ok(pid) = libc::pid_t::try_from(c.id()) {
                // SAFETY: signals our own child, which has not been reaped.
                unsafe {
                    libc::kill(pid, libc::SIGINT);
                }
            }
        }
    }

    // Stop tracing, then drain what the buffer still holds.
    write_setting(&dir.path("tracing_on"), "0")?;
    let traced_for = started.elapsed();
    stream.drain(&mut view)?;
    let lost_after = read_lost(&dir.dir);
    let (reader_missed, uncounted_marks) = stream.missed();
    let lost = LostEvents {
        overrun: lost_after.overrun.saturating_sub(lost_before.overrun),
        dropped: lost_after.dropped.saturating_sub(lost_before.dropped),
        reader_missed,
        uncounted_marks,
    };
    if uncounted_marks > 0 && lost.total() == 0 {
        messages.push(format!(
            "the ring buffer marked {uncounted_marks} page(s) as following lost events without \
             saying how many: the trace misses I/O"
        ));
    }
    let reader = stream.reader();
    drop(stream);

    let (starts, completions) = (view.starts, view.completions);
    for name in &missing {
        messages.push(match *name {
            "block_rq_requeue" => {
                "this kernel has no block_rq_requeue event; requeued requests may count twice"
                    .to_string()
            }
            other => format!("this kernel has no {other} event"),
        });
    }
    let mut outcome = normaliser.finish()?;
    // Never silently: a bio capture whose completions the kernel did not
    // trace has no latencies, and the trace says so.
    if let Some(message) = no_completions(events, &device, starts, completions, &missing) {
        outcome
            .tail
            .notes
            .push((note::NO_BIO_COMPLETIONS.to_string(), outcome.records));
        messages.push(message);
    }
    outcome.tail.notes.push((
        note::LOST_OVERRUN.to_string(),
        lost.overrun.max(lost.reader_missed),
    ));
    outcome
        .tail
        .notes
        .push((note::LOST_DROPPED.to_string(), lost.dropped));
    outcome.tail.capture_start_unix_ns = out.header().capture_start_unix_ns;
    let (buffered, summary) = out.finish(&outcome.tail)?;
    let file = buffered.into_inner().map_err(|e| CaptureError::Output {
        path: temp.clone(),
        source: e.into_error(),
    })?;
    file.sync_all().map_err(|e| CaptureError::Output {
        path: temp.clone(),
        source: e,
    })?;
    drop(file);
    fs::rename(&temp, output).map_err(|e| CaptureError::Output {
        path: output.clone(),
        source: e,
    })?;
    temp_guard.keep = true;

    // Restore tracing and signals, then wait for a command still running.
    messages.extend(dir.release());
    let used_instance = dir.instance;
    drop(dir);
    messages.extend(mount.release());
    drop(signals);
    if let Some(mut c) = child.take() {
        if let Ok(status) = c.wait() {
            command_status = Some(exit_code(status));
        }
    }
    messages.extend(outcome.messages);
    Ok(CaptureReport {
        output: output.clone(),
        device,
        summary,
        traced_for,
        stop,
        lost,
        command_status,
        used_instance,
        reader,
        events,
        skipped_lines: outcome.tail.skipped.count,
        notes: outcome.tail.notes,
        messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_format::Flags;

    #[test]
    fn dev_t_encoding_matches_the_kernel() {
        assert_eq!(kernel_dev_t(DeviceId { major: 7, minor: 0 }), 7 << 20);
        assert_eq!(
            kernel_dev_t(DeviceId {
                major: 259,
                minor: 3
            }),
            (259 << 20) | 3
        );
    }

    fn device(partition: Option<(Bytes, Bytes)>) -> TracedDevice {
        TracedDevice {
            info: DeviceInfo {
                id: DeviceId { major: 8, minor: 1 },
                ..DeviceInfo::default()
            },
            disk: DeviceId { major: 8, minor: 0 },
            partition,
            bio_based: false,
        }
    }

    #[test]
    fn events_follow_the_device_unless_asked() {
        let path = Path::new("/dev/x");
        let disk = device(None);
        let zram = TracedDevice {
            info: DeviceInfo {
                id: DeviceId {
                    major: 253,
                    minor: 0,
                },
                name: "zram0".into(),
                ..DeviceInfo::default()
            },
            disk: DeviceId {
                major: 253,
                minor: 0,
            },
            partition: None,
            bio_based: true,
        };
        assert_eq!(
            choose_events(&disk, None, path).unwrap(),
            (EventSet::Request, None)
        );
        assert_eq!(
            choose_events(&disk, Some(EventSet::Request), path).unwrap(),
            (EventSet::Request, None)
        );
        let (set, why) = choose_events(&disk, Some(EventSet::Bio), path).unwrap();
        assert_eq!(set, EventSet::Bio);
        assert!(why.unwrap().contains("(asked for)"));
        for asked in [None, Some(EventSet::Bio)] {
            let (set, why) = choose_events(&zram, asked, path).unwrap();
            assert_eq!(set, EventSet::Bio);
            assert!(
                why.unwrap()
                    .starts_with("zram0 is a bio-based device (no request queue): capturing"),
                "{asked:?}"
            );
        }
        let e = choose_events(&zram, Some(EventSet::Request), path)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/dev/x: zram0 is a bio-based device")
                && e.ends_with("with --events bio (or auto)"),
            "{e}"
        );
        // A partition names its disk.
        let part = TracedDevice {
            partition: Some((Bytes(512), Bytes(512))),
            ..zram.clone()
        };
        let (_, why) = choose_events(&part, None, path).unwrap();
        assert!(why.unwrap().starts_with("the disk of zram0 (253:0) is"));

        let names = |set, bio| -> Vec<(&str, bool)> {
            traced_events(set, bio)
                .iter()
                .map(|e| (e.name, e.required))
                .collect()
        };
        assert_eq!(
            names(EventSet::Request, false),
            [
                ("block_rq_issue", true),
                ("block_rq_complete", true),
                ("block_rq_requeue", false)
            ]
        );
        assert_eq!(
            names(EventSet::Bio, true),
            [("block_bio_queue", true), ("block_bio_complete", false)]
        );
        assert_eq!(
            names(EventSet::Bio, false),
            [
                ("block_bio_queue", true),
                ("block_bio_complete", false),
                ("block_rq_complete", false)
            ]
        );
        for set in [EventSet::Request, EventSet::Bio] {
            assert_eq!(EventSet::from_name(set.name()), Some(set));
            assert_eq!(traced_events(set, true)[0].name, set.start_event());
        }
        assert_eq!(EventSet::from_name("auto"), None);
    }

    #[test]
    fn filters() {
        assert_eq!(event_filter(&device(None)), "dev == 8388608");
        assert_eq!(
            event_filter(&device(Some((Bytes(2048 * 512), Bytes(1000 * 512))))),
            "dev == 8388608 && ((sector >= 2048 && sector < 3048) || nr_sector == 0)"
        );
    }

    #[test]
    fn restore_values() {
        let p = |s: &str| PathBuf::from(format!("/x/{s}"));
        assert_eq!(
            restore_value(&p("trace_clock"), "local global [mono] boot\n"),
            "mono"
        );
        assert_eq!(
            restore_value(&p("buffer_size_kb"), "7 (expanded: 1410)\n"),
            "1410"
        );
        assert_eq!(restore_value(&p("buffer_size_kb"), "2048\n"), "2048");
        assert_eq!(restore_value(&p("filter"), "none\n"), "0");
        assert_eq!(restore_value(&p("filter"), "dev == 5\n"), "dev == 5");
        assert_eq!(restore_value(&p("tracing_on"), "1\n"), "1");
    }

    #[test]
    fn not_root_message() {
        assert_eq!(
            CaptureError::NotRoot.to_string(),
            "capture needs root to use tracefs; run it with sudo"
        );
    }

    fn event(device: DeviceId, offset: u64, len: u64) -> BlockEvent {
        BlockEvent {
            time: Nanos(1),
            device,
            action: crate::event::Action::Issue,
            op: trace_format::Op::Read,
            flags: Flags::default(),
            offset: Bytes(offset),
            len: Bytes(len),
            pid: None,
            error: 0,
        }
    }

    #[test]
    fn partition_mapping() {
        let disk = DeviceId { major: 8, minor: 0 };
        let part = DeviceId { major: 8, minor: 1 };
        let mut sink: Vec<trace_format::IoRecord> = Vec::new();
        let mut n = Normaliser::new(NormaliseOptions::default(), &mut sink);
        let view = CaptureView {
            inner: &mut n,
            partition: Some((disk, part, 1 << 20, 2 << 20)),
            first_time: Rc::new(Cell::new(None)),
            starts: 0,
            completions: 0,
        };
        let e = view.map(event(disk, (1 << 20) + 4096, 4096)).unwrap();
        assert_eq!((e.device, e.offset), (part, Bytes(4096)));
        assert!(view.map(event(disk, 0, 4096)).is_none());
        assert!(view.map(event(disk, (2 << 20) - 4096, 8192)).is_none());
        // A flush (no data) belongs to the partition, whatever its sector.
        let e = view.map(event(disk, u64::MAX - 511, 0)).unwrap();
        assert_eq!(e.device, part);
    }

    #[test]
    fn empty_completions_are_set_aside_and_the_rest_counted() {
        let disk = DeviceId { major: 7, minor: 0 };
        let mut out: Vec<trace_format::IoRecord> = Vec::new();
        let mut n = Normaliser::new(
            NormaliseOptions {
                event: Some(EventChoice::Queue),
                ..NormaliseOptions::default()
            },
            &mut out,
        );
        let mut view = CaptureView {
            inner: &mut n,
            partition: None,
            first_time: Rc::new(Cell::new(None)),
            starts: 0,
            completions: 0,
        };
        let at = Location::line("t", 1);
        let with = |action, op, offset, len, time| BlockEvent {
            action,
            op,
            time: Nanos(time),
            ..event(disk, offset, len)
        };
        // A write at sector 0 in flight while a flush sequence ends: the
        // data-less `WS 0 + 0` completion must not complete the write.
        view.event(at, with(Action::Queue, Op::Write, 0, 4096, 10))
            .unwrap();
        view.event(at, with(Action::Queue, Op::Flush, 0, 0, 11))
            .unwrap();
        view.event(at, with(Action::Complete, Op::Flush, 0, 0, 20))
            .unwrap();
        view.event(at, with(Action::Complete, Op::Write, 0, 0, 21))
            .unwrap();
        view.event(at, with(Action::Complete, Op::Write, 0, 4096, 50))
            .unwrap();
        assert_eq!((view.starts, view.completions), (2, 2));
        assert_eq!(view.first_time.get(), Some(Nanos(10)));
        let outcome = n.finish().unwrap();
        let got: Vec<(Op, Option<u64>)> =
            out.iter().map(|r| (r.op, r.latency.map(|l| l.0))).collect();
        assert_eq!(got, vec![(Op::Write, Some(40)), (Op::Flush, Some(9))]);
        let count = |key: &str| {
            outcome
                .tail
                .notes
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, n)| *n)
        };
        assert_eq!(count(note::EMPTY_COMPLETION), Some(1));
        assert_eq!(count(crate::normalize::note::UNMATCHED_COMPLETION), None);
    }

    #[test]
    fn a_bio_capture_without_completions_says_why() {
        let disk = device(None);
        let zram = TracedDevice {
            bio_based: true,
            ..device(None)
        };
        let name = &disk.info.name;
        // Completions came, nothing was traced, or request events: silence.
        assert_eq!(no_completions(EventSet::Bio, &zram, 5, 1, &[]), None);
        assert_eq!(no_completions(EventSet::Bio, &zram, 0, 0, &[]), None);
        assert_eq!(no_completions(EventSet::Request, &zram, 5, 0, &[]), None);
        let m = no_completions(EventSet::Bio, &zram, 5, 0, &[]).unwrap();
        assert_eq!(
            m,
            format!(
                "the kernel reported no completion for the 5 bio(s) traced on {name} \
                 (block_bio_complete did not fire: the kernel traces a bio's completion only \
                 for bios it flagged BIO_TRACE_COMPLETION): the trace has no latencies"
            )
        );
        let m = no_completions(EventSet::Bio, &zram, 2, 0, &["block_bio_complete"]).unwrap();
        assert!(
            m.contains("(this kernel has no block_bio_complete event)"),
            "{m}"
        );
        // A request-based disk's bios complete as requests.
        let m = no_completions(EventSet::Bio, &disk, 2, 0, &["block_bio_complete"]).unwrap();
        assert!(
            m.contains("(neither block_bio_complete nor block_rq_complete fired)"),
            "{m}"
        );
        let m = no_completions(EventSet::Bio, &disk, 2, 0, &["block_rq_complete"]).unwrap();
        assert!(m.contains("no block_rq_complete event"), "{m}");
    }

    #[test]
    fn stats_parse() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, text) in [
            (
                0,
                "entries: 5\noverrun: 3\ncommit overrun: 1\nbytes: 9\ndropped events: 0\n",
            ),
            (
                1,
                "entries: 5\noverrun: 0\ncommit overrun: 0\ndropped events: 7\n",
            ),
        ] {
            let d = dir.path().join(format!("per_cpu/cpu{cpu}"));
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("stats"), text).unwrap();
        }
        assert_eq!(
            read_lost(dir.path()),
            LostEvents {
                overrun: 4,
                dropped: 7,
                ..LostEvents::default()
            }
        );
    }

    #[test]
    fn pipe_lines_are_split_across_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        let long = "x".repeat(MAX_LINE + 10);
        let mut content = format!("a\nbc\n{long}\nd\n").into_bytes();
        content.extend_from_slice(b"\x00\xff\n");
        fs::write(&path, content).unwrap();
        let mut r = PipeReader::open(path).unwrap();
        r.chunk = vec![0; 3];
        let mut seen = Vec::new();
        let mut on = |n: u64, t: Result<&str, &str>| {
            seen.push((n, t.map(str::to_string).map_err(str::to_string)));
            Ok(())
        };
        while r.read_once(&mut on).unwrap() == PipeRead::Data {}
        assert_eq!(seen.first(), Some(&(1, Ok("a".to_string()))));
        assert_eq!(seen.get(1), Some(&(2, Ok("bc".to_string()))));
        assert_eq!(
            seen.get(2),
            Some(&(3, Err("line longer than 64 KiB".to_string())))
        );
        assert_eq!(seen.get(3), Some(&(4, Ok("d".to_string()))));
        assert_eq!(seen.get(4), Some(&(5, Err("not UTF-8 text".to_string()))));
        assert_eq!(seen.len(), 5);
    }

    use crate::capture::ftrace_raw::testing::{
        decoder, formats, layout, record, PageBuilder, LOOP0,
    };
    use std::collections::HashMap;

    /// Collects what the raw stream hands on.
    #[derive(Default)]
    struct Collected {
        events: Vec<BlockEvent>,
        bad: Vec<(String, String)>,
        notes: HashMap<String, u64>,
    }

    impl Sink for Collected {
        fn event(&mut self, _at: Location<'_>, event: BlockEvent) -> Result<(), ConvertError> {
            self.events.push(event);
            Ok(())
        }
        fn io(&mut self, _at: Location<'_>, _io: SourceIo) -> Result<(), ConvertError> {
            Ok(())
        }
        fn bad_input(
            &mut self,
            at: Location<'_>,
            _content: &str,
            reason: &str,
        ) -> Result<(), ConvertError> {
            self.bad.push((at.to_string(), reason.to_string()));
            Ok(())
        }
        fn note(&mut self, key: &str) {
            *self.notes.entry(key.to_string()).or_default() += 1;
        }
    }

    /// A raw stream over regular files, one per CPU, holding `pages`: a read
    /// gives a page, then end of file (a CPU read to empty).
    fn raw_stream(dir: &Path, pages: &[Vec<Vec<u8>>]) -> RawStream {
        let cpus = pages
            .iter()
            .enumerate()
            .map(|(n, cpu_pages)| {
                let path = dir.join(format!("cpu{n}"));
                fs::write(&path, cpu_pages.concat()).unwrap();
                RawCpu {
                    cpu: n as u32,
                    file: File::open(&path).unwrap(),
                    path,
                    name: format!("per_cpu/cpu{n}/trace_pipe_raw"),
                    pages: 0,
                    records: 0,
                    last_time: 0,
                    watermark: 0,
                    gone: false,
                    held: VecDeque::new(),
                }
            })
            .collect();
        RawStream {
            cpus,
            layout: layout(),
            decoder: decoder(),
            page: vec![0; layout().page_size],
            missed: 0,
            uncounted_marks: 0,
        }
    }

    /// One page of records `(time, record bytes)`, deltas from the first.
    fn page(records: &[(u64, Vec<u8>)], missed: Option<Option<u64>>) -> Vec<u8> {
        let first = records.first().map_or(0, |r| r.0);
        let mut pb = PageBuilder::new(first);
        let mut last = first;
        for (t, rec) in records {
            pb.record((t - last) as u32, rec);
            last = *t;
        }
        pb.build(&layout(), missed)
    }

    #[test]
    fn cpus_merge_so_completions_on_another_cpu_find_their_issue() {
        let (issue, complete, _) = formats();
        let base = 5_000_000_123u64;
        // Request A issued on CPU 0, completed on CPU 1; B the other way round.
        let cpu0 = page(
            &[
                (base, record(&issue, LOOP0, 800, 8, "R", 10)),
                (base + 2_617, record(&complete, LOOP0, 1600, 16, "W", 0)),
            ],
            None,
        );
        let cpu1 = page(
            &[
                (base + 1_501, record(&complete, LOOP0, 800, 8, "R", 0)),
                (base + 2_003, record(&issue, LOOP0, 1600, 16, "W", 11)),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let mut raw = raw_stream(dir.path(), &[vec![cpu0], vec![cpu1]]);
        let mut out: Vec<trace_format::IoRecord> = Vec::new();
        let mut n = Normaliser::new(NormaliseOptions::default(), &mut out);
        assert_eq!(raw.read_round(&mut n).unwrap(), PipeRead::Empty);
        raw.release(u64::MAX, &mut n).unwrap();
        let outcome = n.finish().unwrap();
        assert!(
            outcome.tail.notes.iter().all(|(_, c)| *c == 0),
            "{:?}",
            outcome.tail.notes
        );
        let got: Vec<(u64, u64, Option<u64>)> = out
            .iter()
            .map(|r| (r.time.0, r.offset.0, r.latency.map(|l| l.0)))
            .collect();
        // Nanosecond times and latencies, relative to the first event.
        assert_eq!(
            got,
            vec![(0, 800 * 512, Some(1_501)), (2_003, 1600 * 512, Some(614))]
        );
    }

    #[test]
    fn bio_events_across_cpus_pair_queue_with_completion() {
        use crate::capture::ftrace_raw::testing::bio_formats;
        let (queue, complete) = bio_formats();
        let zram0 = 253u64 << 20;
        let base = 9_000_000_000u64;
        // Bio A queued on CPU 0 and completed on CPU 1; B queued on CPU 1
        // and completed on CPU 0; C, a flush bio, never completes.
        let cpu0 = page(
            &[
                (base, record(&queue, zram0, 800, 8, "WS", 10)),
                (base + 4_000, record(&complete, zram0, 64, 16, "R", 0)),
                (base + 5_000, record(&queue, zram0, 0, 0, "FWS", 10)),
            ],
            None,
        );
        let cpu1 = page(
            &[
                (base + 1_234, record(&queue, zram0, 64, 16, "R", 11)),
                (base + 2_345, record(&complete, zram0, 800, 8, "WS", 0)),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let mut raw = raw_stream(dir.path(), &[vec![cpu0], vec![cpu1]]);
        let mut out: Vec<trace_format::IoRecord> = Vec::new();
        let mut n = Normaliser::new(
            NormaliseOptions {
                event: Some(EventChoice::Queue),
                ..NormaliseOptions::default()
            },
            &mut out,
        );
        raw.read_round(&mut n).unwrap();
        raw.release(u64::MAX, &mut n).unwrap();
        let outcome = n.finish().unwrap();
        assert_eq!(outcome.issue_event, IssueEvent::Queue);
        let got: Vec<(u64, Op, u64, u64, Option<u64>)> = out
            .iter()
            .map(|r| (r.time.0, r.op, r.offset.0, r.len.0, r.latency.map(|l| l.0)))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Op::Write, 800 * 512, 4096, Some(2_345)),
                (1_234, Op::Read, 64 * 512, 8192, Some(2_766)),
                (5_000, Op::Flush, 0, 0, None),
            ]
        );
    }

    #[test]
    fn a_cpu_not_read_to_empty_holds_back_later_events_of_the_others() {
        let (issue, _, _) = formats();
        let base = 1_000_000u64;
        // CPU 0: one more page than a turn reads, one issue per page, 10 us apart.
        let cpu0: Vec<Vec<u8>> = (0..=PAGES_PER_TURN as u64)
            .map(|k| {
                page(
                    &[(base + k * 10_000, record(&issue, LOOP0, k * 8, 8, "R", 1))],
                    None,
                )
            })
            .collect();
        // CPU 1: one issue early in CPU 0's span, one after all of it.
        let cpu1 = page(
            &[
                (base + 5_000, record(&issue, LOOP0, 90_000, 8, "R", 2)),
                (base + 10_000_000, record(&issue, LOOP0, 91_000, 8, "R", 2)),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let mut raw = raw_stream(dir.path(), &[cpu0, vec![cpu1]]);
        let mut sink = Collected::default();
        assert_eq!(raw.read_round(&mut sink).unwrap(), PipeRead::Data);
        let last_read = base + (PAGES_PER_TURN as u64 - 1) * 10_000;
        let times: Vec<u64> = sink.events.iter().map(|e| e.time.0).collect();
        assert_eq!(times.len(), PAGES_PER_TURN + 1, "{times:?}");
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert_eq!(times.last(), Some(&last_read));
        assert!(times.contains(&(base + 5_000)));
        // The second round reads CPU 0 to empty: everything is released.
        assert_eq!(raw.read_round(&mut sink).unwrap(), PipeRead::Empty);
        let times: Vec<u64> = sink.events.iter().map(|e| e.time.0).collect();
        assert_eq!(times.len(), PAGES_PER_TURN + 3);
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert_eq!(times.last(), Some(&(base + 10_000_000)));
        assert!(sink.bad.is_empty());
    }

    #[test]
    fn lost_event_marks_and_corrupt_pages_are_reported() {
        let (issue, _, _) = formats();
        let rec = record(&issue, LOOP0, 8, 8, "R", 1);
        let counted = page(&[(1_000, rec.clone())], Some(Some(250)));
        let uncounted = page(&[(2_000, rec.clone())], Some(None));
        let mut corrupt = page(&[(3_000, rec.clone()), (3_100, rec.clone())], None);
        // The second record's header: a long record that runs off the page.
        let second = layout().data_offset + 4 + rec.len().div_ceil(4) * 4;
        corrupt[second..second + 4].copy_from_slice(&0u32.to_ne_bytes());
        corrupt[second + 4..second + 8].copy_from_slice(&9_000u32.to_ne_bytes());
        let dir = tempfile::tempdir().unwrap();
        let mut raw = raw_stream(dir.path(), &[vec![], vec![counted, uncounted, corrupt]]);
        let mut sink = Collected::default();
        raw.read_round(&mut sink).unwrap();
        assert_eq!((raw.missed, raw.uncounted_marks), (250, 1));
        assert_eq!(sink.notes.get(tracefs::note::LOST_EVENTS), Some(&250));
        assert_eq!(sink.notes.get(tracefs::note::LOST_LINES), Some(&2));
        // The records before the corruption are kept.
        assert_eq!(sink.events.len(), 3);
        assert_eq!(sink.bad.len(), 1, "{:?}", sink.bad);
        let (at, reason) = &sink.bad[0];
        let byte = 2 * 4096 + second;
        assert_eq!(
            at,
            &format!("per_cpu/cpu1/trace_pipe_raw: record 3 (byte {byte})")
        );
        assert!(
            reason.starts_with(&format!(
                "CPU 1 ring buffer, page 2, byte {second}: a record"
            )),
            "{reason}"
        );
    }
}
