//! `tracemark capture`: trace one block device live through tracefs into a `.tmt`.

use super::args::{auto_or, parse_duration, AutoOr, TraceMetaArgs};
use crate::output;
use anyhow::{bail, Result};
use clap::Args;
use recorder::capture::{
    capture, default_output, CaptureOptions, CaptureReport, EventSet, StopReason, TracedDevice,
    DEFAULT_BUFFER_MIB,
};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "Capture stops when --duration has passed, when COMMAND exits, or on \
Ctrl-C (SIGINT, SIGTERM, SIGHUP, SIGQUIT); without --duration or COMMAND it runs until Ctrl-C. \
Every tracing setting is restored afterwards, and tracing instances left by captures that were \
killed (tracemark-PID whose PID no longer runs) are removed. Exit status: the COMMAND's when it \
fails, 1 when tracing could not be restored (the trace is still written). Needs root.

A partition (/dev/sda1) is captured through its disk's events (request or bio), keeping only the \
partition's sectors and giving offsets within the partition; every cache flush of the disk is \
kept. Events are read from the kernel's binary per-CPU ring buffers (trace_pipe_raw), so \
times have nanosecond resolution (CLOCK_MONOTONIC); where that is not possible the capture says \
so and reads the text trace_pipe, with microsecond resolution.

Events (--events): a request-based disk (SATA, NVMe, virtio, loop) is traced by its request \
events: issue time is when the driver got each request (after merging), latency runs to its \
completion. A bio-based device (zram, device-mapper volumes such as LVM or LUKS, md RAID, brd) \
has no request events; `auto` (the default) traces its bio events instead: issue time is when \
each bio was submitted, latency runs to the bio's completion, and the capture says so. \
`--events bio` traces the bios of a request-based disk too (what the application submitted, \
before merging). The summary line names the events used.

Task marks: with COMMAND, the trace records where the task started and ended on its clock, for the predicted task time of a replay: the command's start and exit, or, where the command says so itself, `kill -USR2 $TRACEMARK_CAPTURE_PID` (the task starts) and `kill -USR1 $TRACEMARK_CAPTURE_PID` (the task is done, e.g. its window is up; the I/O after it is still traced). `--untraced DUR` stores the task's time measured in an untraced run on the same drive. The capture also keeps the CPU time the command's threads ran between the marks (`info` shows it); no predicted task time goes below that of the busiest thread.

Examples:
  sudo tracemark capture --device /dev/nvme0n1 --duration 60s -o boot.tmt
  sudo tracemark capture --device /dev/sdb -o build.tmt --name build -- make -j8
  sudo tracemark capture --device /dev/sda2 --category office
  sudo tracemark capture --device /dev/mapper/vg-home --duration 5m -o home.tmt
  sudo tracemark capture --device /dev/sdb --events bio -o sdb-bios.tmt -- ./app"
)]
pub struct CaptureArgs {
    /// The block device to trace (a disk or a partition).
    #[arg(long)]
    pub device: PathBuf,
    /// The trace to write (default: `<device name>-<YYYYmmdd-HHMMSS>.tmt`).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Stop after this long (`30s`, `5m`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Which block events to trace.
    #[arg(long, default_value = "auto", value_parser = auto_or::<EventSet>(
        "bio events for a bio-based device (zram, device-mapper, md), request events otherwise"
    ))]
    pub events: AutoOr<EventSet>,
    /// The task's time in an untraced run on this drive (`1.52s`), kept with
    /// the task's marks: a replay's predicted task time starts from it.
    #[arg(long, value_parser = parse_duration)]
    pub untraced: Option<std::time::Duration>,
    /// Per-CPU trace buffer in MiB; larger loses fewer events under bursts.
    #[arg(long, default_value_t = DEFAULT_BUFFER_MIB)]
    pub buffer_mb: u64,
    #[command(flatten)]
    pub meta: TraceMetaArgs,
    /// Use the top-level tracer instead of a private instance (restoring
    /// every file it writes); for testing that fallback.
    #[arg(long, hide = true)]
    pub no_instance: bool,
    /// Read the text trace_pipe (microsecond times) instead of the binary
    /// ring buffer; for testing and comparing the two.
    #[arg(long, hide = true)]
    pub text_pipe: bool,
    /// Print only warnings and errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Command to run while tracing (after `--`); its non-zero exit status
    /// becomes capture's.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

pub fn run(args: CaptureArgs) -> Result<i32> {
    let opts = capture_options(&args)?;
    let quiet = args.quiet;
    let until = until(&args);
    let mut on_started = |d: &TracedDevice| {
        if !quiet {
            eprintln!(
                "tracemark: tracing {} ({}) {until}; Ctrl-C stops",
                d.info.name, d.info.id
            );
        }
    };
    let report = capture(&opts, &mut on_started)?;
    print_warnings(&report, quiet);
    if !quiet {
        print_summary(&report);
    }
    Ok(match report.command_status {
        Some(code) if code != 0 => code,
        _ if !report.not_restored.is_empty() => 1,
        _ => 0,
    })
}

/// The recorder's options from the command line, checked.
fn capture_options(args: &CaptureArgs) -> Result<CaptureOptions> {
    let writer = args.meta.writer_options().map_err(anyhow::Error::msg)?;
    if args.buffer_mb == 0 || args.buffer_mb > 1 << 20 {
        bail!("--buffer-mb {} is outside 1..=1048576", args.buffer_mb);
    }
    if args.duration.is_some_and(|d| d.is_zero()) {
        bail!("--duration must be longer than zero");
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.device));
    let mut opts = CaptureOptions::new(&args.device, &output);
    opts.duration = args.duration;
    opts.command = args.command.clone();
    opts.buffer_kb_per_cpu = args.buffer_mb * 1024;
    opts.name = args.meta.name.clone();
    opts.description = args.meta.description.clone();
    opts.category = args.meta.category.clone();
    opts.use_instance = !args.no_instance;
    opts.text_pipe = args.text_pipe;
    opts.untraced = args.untraced;
    opts.events = args.events.chosen();
    opts.writer = writer;
    Ok(opts)
}

/// When the capture stops, for the line that says it started.
fn until(args: &CaptureArgs) -> String {
    match (&args.duration, args.command.first()) {
        (Some(d), Some(c)) => format!(
            "for {} or until `{}` exits",
            output::duration_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            c.to_string_lossy()
        ),
        (Some(d), None) => format!(
            "for {}",
            output::duration_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        ),
        (None, Some(c)) => format!("until `{}` exits", c.to_string_lossy()),
        (None, None) => "until Ctrl-C".to_string(),
    }
}

/// The notes and warnings on stderr: skipped lines, lost events, settings
/// not restored.
fn print_warnings(report: &CaptureReport, quiet: bool) {
    for m in &report.messages {
        eprintln!("note: {m}");
    }
    if report.skipped_lines > 0 {
        eprintln!(
            "warning: {} trace line(s) or record(s) could not be parsed (see `tracemark info`)",
            report.skipped_lines
        );
    }
    if report.lost.total() > 0 {
        eprintln!(
            "warning: the kernel lost {} event(s) ({} overwritten, {} dropped): the trace \
             misses I/O; use a larger --buffer-mb or a lighter load",
            report.lost.total(),
            report.lost.overrun.max(report.lost.reader_missed),
            report.lost.dropped
        );
    }
    for m in &report.not_restored {
        eprintln!("warning: {m}");
    }
    if report.stop == StopReason::Duration && report.command_status.is_some() && !quiet {
        eprintln!("note: the capture ended at --duration; the command ran on untraced");
    }
}

/// The summary line on stdout.
fn print_summary(report: &CaptureReport) {
    let s = &report.summary;
    let stopped = match report.stop {
        StopReason::Duration => "duration reached",
        StopReason::CommandExited => "command exited",
        StopReason::Interrupted => "interrupted",
    };
    println!(
        "{}: {} I/Os on {} over {} ({stopped}): {} reads ({}), {} writes ({}), {} flushes, \
         {} discards; {} with latency; lost events: {}; {}; read from the {}",
        report.output.display(),
        s.ios,
        report.device.info.name,
        output::duration_ns(u64::try_from(report.traced_for.as_nanos()).unwrap_or(u64::MAX)),
        s.reads,
        output::bytes(s.read_bytes),
        s.writes,
        output::bytes(s.write_bytes),
        s.flushes,
        s.discards,
        s.with_latency,
        report.lost.total(),
        report.events.describe(),
        report.reader.describe(),
    );
}
