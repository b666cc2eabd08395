//! Live capture (`tracemark capture`): traces one block device through the
//! kernel's tracefs and streams the events into a `.tmt`.
//!
//! How it works:
//! - tracefs is read at `/sys/kernel/tracing`; where it is not mounted there,
//!   the capture mounts it on a private directory of its own (unmounted at
//!   the end), so it changes nothing another program sees;
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
//!   or on SIGINT, SIGTERM, SIGHUP or SIGQUIT; tracing is then switched off, the buffers drained, the
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

mod command;
mod cpu_merge;
mod device;
mod ring;
mod session;
mod signals;
mod stream;
mod task_cpu;
mod text_pipe;
mod view;
mod wall_offset;

pub use device::{
    choose_events, event_filter, kernel_dev_t, resolve_device, EventSet, TracedDevice,
};
pub use ring::COMMIT_SLACK_NS;
pub use session::check_root;

use crate::error::ConvertError;
use crate::normalize::{EventChoice, NormaliseOptions, Normaliser};
use crate::tmt_output::{OutputFile, TmtOutput};
use std::cell::Cell;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use trace_format::{IssueEvent, Summary, TraceHeader, WriterOptions};

pub use command::TASK_MARK_PID_ENV;
use command::{task_marks, RunningCommand};
use device::no_completions;
use session::Tracing;
use signals::{StopSignals, STOP_REQUESTED};
use stream::EventStream;
use task_cpu::CpuMeter;
use text_pipe::PipeRead;
use view::CaptureView;
use wall_offset::ClockOffset;

/// Where the system mounts tracefs (a capture that finds none there mounts
/// its own on a private directory).
pub const TRACEFS_ROOT: &str = "/sys/kernel/tracing";

/// Default per-CPU ring buffer: large enough that a reader which keeps up
/// loses nothing to bursts of a busy NVMe drive.
pub const DEFAULT_BUFFER_MIB: u64 = 64;

/// How long the main loop waits for data before checking its stop conditions.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

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
    /// The task's untraced time on this drive, stored with the task's marks
    /// (a replay's predicted task time starts from it).
    pub untraced: Option<Duration>,
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
            untraced: None,
            events: None,
        }
    }
}

/// Why the capture stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Duration,
    CommandExited,
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT.
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
    /// Things the user should know (a smaller buffer, a dead capture's
    /// instance removed).
    pub messages: Vec<String>,
    /// What could not be put back (an instance the kernel would not remove,
    /// a top-level setting it would not take): the machine is not as it was.
    pub not_restored: Vec<String>,
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
    check_can_start(opts)?;
    let device = resolve_device(&opts.device)?;
    let mut messages = Vec::new();
    let (events, why) = choose_events(&device, opts.events, &opts.device)?;
    messages.extend(why);
    // The output first: a capture that cannot be written is not started.
    let output = OutputFile::create(&opts.output)?;

    let signals = StopSignals::install()?;
    let root = Path::new(TRACEFS_ROOT);
    let mut tracing = Tracing::set_up(root, opts, &device, events, &mut messages)?;
    let mut stream = EventStream::open(&tracing, root, opts.text_pipe, &mut messages)?;

    let first_time = Rc::new(Cell::new(None));
    let clock = ClockOffset::measure(tracing.mono);
    let first_seen = first_time.clone();
    let mut out = TmtOutput::new(
        output,
        trace_header(opts, &device, events),
        opts.writer,
        move |h: &mut TraceHeader| {
            h.capture_start_unix_ns = Some(clock.unix_ns(first_seen.get()));
        },
    );
    let mut normaliser = Normaliser::new(normalise_options(events), &mut out);
    let mut view = CaptureView::new(&mut normaliser, &device, first_time);

    tracing.switch(true)?;
    let started = Instant::now();
    on_started(&device);
    let (mut command, meter) = start_command(opts, &tracing, &mut messages)?;
    let stop = read_until_stop(&mut stream, &mut view, &mut command, opts.duration, started)?;
    if stop == StopReason::Interrupted {
        command.interrupt();
    }
    if let (Some(meter), Some(exited)) = (&meter, command.exited_mono()) {
        meter.command_exited(exited);
    }

    // Stop tracing, then drain what the buffer still holds.
    let task_cpu = meter.and_then(|m| m.finish(&mut messages));
    tracing.switch(false)?;
    let traced_for = started.elapsed();
    let (lost, reader) = drain(stream, &tracing, &mut view)?;
    let (starts, completions) = (view.starts, view.completions);
    messages.extend(lost_and_missing_messages(&lost, &tracing.missing));

    let mut outcome = normaliser.finish()?;
    outcome.tail.task = task_marks(
        &command,
        stop,
        outcome.origin.filter(|_| tracing.mono),
        opts.untraced,
    );
    if outcome.tail.task.end.is_some() {
        outcome.tail.task.cpu = task_cpu;
    }
    // Never silently: a bio capture whose completions the kernel did not
    // trace has no latencies, and the trace says so.
    if let Some(message) = no_completions(events, &device, starts, completions, &tracing.missing) {
        outcome
            .tail
            .notes
            .push((note::NO_BIO_COMPLETIONS.to_string(), outcome.records));
        messages.push(message);
    }
    outcome.tail.notes.extend(lost_notes(&lost));
    outcome.tail.capture_start_unix_ns = out.header().capture_start_unix_ns;
    let summary = out.commit(&outcome.tail)?;

    // Restore tracing and signals, then wait for a command still running.
    let used_instance = tracing.dir.instance;
    let not_restored = tracing.release();
    drop(signals);
    let command_status = command.wait();
    messages.extend(outcome.messages);
    Ok(CaptureReport {
        output: opts.output.clone(),
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
        not_restored,
    })
}

/// Starts the command, if any, with its threads' CPU time metered.
fn start_command(
    opts: &CaptureOptions,
    tracing: &Tracing,
    messages: &mut Vec<String>,
) -> Result<(RunningCommand, Option<CpuMeter>), CaptureError> {
    let meter = if opts.command.is_empty() {
        None
    } else {
        CpuMeter::start(tracing.root(), messages)
    };
    let command = RunningCommand::spawn(&opts.command)?;
    if let (Some(meter), Some((pid, spawned))) = (&meter, command.started()) {
        meter.command_started(pid, spawned);
    }
    Ok((command, meter))
}

/// How a capture's events become records: the first event of `events` is
/// the issue; a line the parser cannot read is counted, not fatal.
fn normalise_options(events: EventSet) -> NormaliseOptions {
    NormaliseOptions {
        event: Some(match events {
            EventSet::Request => EventChoice::Issue,
            EventSet::Bio => EventChoice::Queue,
        }),
        skip_bad: true,
        ..NormaliseOptions::default()
    }
}

/// Refuses a capture that cannot start: not root, no trace buffer.
fn check_can_start(opts: &CaptureOptions) -> Result<(), CaptureError> {
    check_root()?;
    if opts.buffer_kb_per_cpu == 0 {
        return Err(CaptureError::Usage(
            "the trace buffer size must be at least 1 MiB".into(),
        ));
    }
    Ok(())
}

/// Reads what the stopped tracing's buffers still hold into `view`; the
/// events lost, and which reader read them.
fn drain(
    mut stream: EventStream,
    tracing: &Tracing,
    view: &mut CaptureView<'_>,
) -> Result<(LostEvents, Reader), CaptureError> {
    stream.drain(view)?;
    let (reader_missed, uncounted_marks) = stream.missed();
    let lost = LostEvents {
        reader_missed,
        uncounted_marks,
        ..tracing.lost_since_set_up()
    };
    Ok((lost, stream.reader()))
}

/// The trace's notes of the events the kernel lost.
fn lost_notes(lost: &LostEvents) -> [(String, u64); 2] {
    [
        (
            note::LOST_OVERRUN.to_string(),
            lost.overrun.max(lost.reader_missed),
        ),
        (note::LOST_DROPPED.to_string(), lost.dropped),
    ]
}

/// The trace header of a capture (what is known before the first event).
fn trace_header(opts: &CaptureOptions, device: &TracedDevice, events: EventSet) -> TraceHeader {
    let (host, kernel) = uname();
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| device.info.name.clone());
    let mut header = TraceHeader::new(name, "capture");
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
    header
}

/// What to tell the user about uncounted lost events and missing events.
fn lost_and_missing_messages(lost: &LostEvents, missing: &[&str]) -> Vec<String> {
    let mut messages = Vec::new();
    if lost.uncounted_marks > 0 && lost.total() == 0 {
        messages.push(format!(
            "the ring buffer marked {} page(s) as following lost events without saying how \
             many: the trace misses I/O",
            lost.uncounted_marks
        ));
    }
    for name in missing {
        messages.push(match *name {
            "block_rq_requeue" => {
                "this kernel has no block_rq_requeue event; requeued requests may count twice"
                    .to_string()
            }
            other => format!("this kernel has no {other} event"),
        });
    }
    messages
}

/// Reads events into `view` until the duration has passed, the command has
/// exited or a stop signal came, checking at least every poll interval even
/// under a steady stream.
fn read_until_stop(
    stream: &mut EventStream,
    view: &mut CaptureView<'_>,
    command: &mut RunningCommand,
    duration: Option<Duration>,
    started: Instant,
) -> Result<StopReason, CaptureError> {
    let deadline = duration.map(|d| started + d);
    loop {
        let slice_end = Instant::now() + POLL_INTERVAL;
        let mut got_data = false;
        while stream.read_some(view)? == PipeRead::Data {
            got_data = true;
            if Instant::now() >= slice_end || STOP_REQUESTED.load(Ordering::SeqCst) {
                break;
            }
        }
        if STOP_REQUESTED.load(Ordering::SeqCst) {
            return Ok(StopReason::Interrupted);
        }
        if command.exited()? {
            return Ok(StopReason::CommandExited);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(StopReason::Duration);
        }
        if !got_data {
            let wait = deadline.map_or(POLL_INTERVAL, |d| {
                d.saturating_duration_since(Instant::now())
                    .min(POLL_INTERVAL)
            });
            stream.wait(wait);
        }
    }
}
