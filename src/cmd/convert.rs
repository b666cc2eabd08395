//! `tracemark convert`: block I/O logs in, one `.tmt` out.

use super::args::{input_format, parse_duration, AutoOr, TraceMetaArgs};
use crate::output;
use anyhow::Result;
use clap::{Args, ValueEnum};
use recorder::convert::{convert, ConvertOptions};
use recorder::formats::Format;
use recorder::normalize::EventChoice;
use std::path::{Path, PathBuf};
use trace_format::{DeviceId, Nanos};

#[derive(Args, Debug)]
#[command(after_help = after_help())]
pub struct ConvertArgs {
    /// Input files (`-` for standard input). Several text files are read one
    /// after the other; the files of a blktrace set are merged by time.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The trace to write (with `--split-by volume`, the folder to write the
    /// traces in).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Write one trace per part of a dataset into the folder `-o` names
    /// (`NAME-volID.tmt`), in one pass.
    #[arg(long, value_enum)]
    pub split_by: Option<SplitBy>,
    /// Input format: auto, or one of the formats listed below.
    #[arg(long, default_value = "auto", ignore_case = true, value_parser = input_format())]
    pub format: AutoOr<Format>,
    /// Which event is a request's issue time (default: issue where the
    /// input has it, else queue).
    #[arg(long, value_enum)]
    pub event: Option<EventChoice>,
    /// Keep only this device (MAJ:MIN); without it every device is kept.
    #[arg(long)]
    pub device: Option<DeviceId>,
    /// Keep only this volume of a multi-volume dataset (Alibaba device_id,
    /// Tencent VolumeID, SYSTOR LUN, MQSim/DiskSim device): the device `0:ID`.
    #[arg(long, value_name = "ID", conflicts_with = "device")]
    pub volume: Option<u32>,
    /// Start of the window to keep, as time since the trace start (`10s`, `1.5`, `500ms`).
    #[arg(long, value_parser = parse_duration)]
    pub from: Option<std::time::Duration>,
    /// End of the window to keep, as time since the trace start.
    #[arg(long, value_parser = parse_duration)]
    pub to: Option<std::time::Duration>,
    /// Count lines or records that cannot be parsed (and show the first few)
    /// instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    /// How far input time may run backwards and still be put in order
    /// (default 1s): for datasets merged from sources whose clocks or
    /// buffers are out of step by more. Memory grows with the requests
    /// inside the window (at most 262,144 held).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub reorder_window: Option<std::time::Duration>,
    #[command(flatten)]
    pub meta: TraceMetaArgs,
    /// Print nothing on success.
    #[arg(short, long)]
    pub quiet: bool,
}

/// What `--split-by` splits a dataset by.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SplitBy {
    /// One trace per volume (device) of a multi-volume dataset.
    Volume,
}

/// The input formats (from the recorder's table) and examples.
fn after_help() -> String {
    let mut help =
        String::from("Input formats (detected from content unless --format names one):\n");
    for f in Format::all() {
        let spec = f.spec();
        help.push_str(&format!("  {:<10} {}", spec.name, spec.about));
        if !spec.aliases.is_empty() {
            help.push_str(&format!(" (alias: {})", spec.aliases.join(", ")));
        }
        help.push('\n');
    }
    help.push_str(
        "
Examples:
  tracemark convert sda.blktrace.* -o boot.tmt
  tracemark convert sda -o boot.tmt --event queue --device 8:0
  tracemark convert web_0.csv -o msr-web.tmt --name msr-web --description \"MSR Cambridge web server, volume 0\"
  tracemark convert messy.txt -o t.tmt --skip-bad
  tracemark convert io_traces.csv.zst -o disk7.tmt --volume 7
  tracemark convert io_traces.csv.zst --split-by volume -o volumes/
Any input may be gzip, xz, zstd or bzip2 compressed (recognised by its first bytes).
Datasets need not be sorted by time: requests up to 1 s out of order (--reorder-window) are put in order.",
    );
    help
}

fn nanos(d: std::time::Duration) -> Nanos {
    Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

pub fn run(args: ConvertArgs) -> Result<i32> {
    let writer = args.meta.writer_options().map_err(anyhow::Error::msg)?;
    let opts = ConvertOptions {
        format: args.format.chosen(),
        event: args.event,
        device: args
            .device
            .or(args.volume.map(|minor| DeviceId { major: 0, minor })),
        from: args.from.map(nanos),
        to: args.to.map(nanos),
        skip_bad: args.skip_bad,
        reorder_window: args.reorder_window.map(nanos),
        name: args.meta.name,
        description: args.meta.description,
        category: args.meta.category,
        writer,
        // No output may replace the results database (`TRACEMARK_DB`, else
        // the default), as with every command.
        database: super::store::DbArgs::from_env().path().ok(),
    };
    if let Some(SplitBy::Volume) = args.split_by {
        return split(&args.inputs, &args.output, args.quiet, &opts);
    }
    let report = convert(&args.inputs, &args.output, &opts)?;
    for m in &report.messages {
        eprintln!("note: {m}");
    }
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    if report.skipped.count > 0 {
        eprintln!(
            "warning: skipped {} bad input line(s) or record(s) (--skip-bad); first ones:",
            report.skipped.count
        );
        for e in &report.skipped.examples {
            eprintln!("  {}: {}: `{}`", e.location, e.reason, e.content);
        }
    }
    if !args.quiet {
        let s = &report.summary;
        let size = std::fs::metadata(&report.output)
            .map(|m| m.len())
            .unwrap_or(0);
        println!(
            "{}: {} I/Os from {} input ({} event), {} reads ({}), {} writes ({}), {} flushes, {} discards, {}; {} ({:.2} bytes per I/O)",
            report.output.display(),
            s.ios,
            report.format.name(),
            report.issue_event.name(),
            s.reads,
            output::bytes(s.read_bytes),
            s.writes,
            output::bytes(s.write_bytes),
            s.flushes,
            s.discards,
            output::duration_ns(s.duration.0),
            output::bytes(size),
            if s.ios > 0 { size as f64 / s.ios as f64 } else { 0.0 },
        );
        if report.devices.len() > 1 {
            let names: Vec<String> = report
                .devices
                .iter()
                .map(|d| format!("{} {}", d.id, d.name))
                .collect();
            println!("  devices: {}", names.join(", "));
        }
    }
    Ok(0)
}

/// `--split-by volume`: one trace per volume into the folder `-o` names.
fn split(inputs: &[PathBuf], folder: &Path, quiet: bool, opts: &ConvertOptions) -> Result<i32> {
    let report = recorder::split::convert_split(inputs, folder, opts)?;
    for m in &report.messages {
        eprintln!("note: {m}");
    }
    if !quiet {
        let ios: u64 = report.traces.iter().map(|t| t.summary.ios).sum();
        println!(
            "{}: {} traces ({} I/Os) from {} input, one per volume",
            folder.display(),
            report.traces.len(),
            ios,
            report.format.name()
        );
        for t in &report.traces {
            println!(
                "  {} {}: {} I/Os",
                t.device,
                t.output.display(),
                t.summary.ios
            );
        }
    }
    Ok(0)
}
