//! `tracemark replay`: replay traces against a drive and score it.

use super::args::{parse_bytes, parse_duration};
use anyhow::{Context, Result};
use clap::Args;
use replayer::engine::{Observer, PassKind};
use replayer::options::{CpuIdle, IdleCap, IoWorkerCpu, PreconditionPolicy, Priority};
use replayer::{MappingKind, PassMetrics, ReplayOptions, TimingMode, TmtSource, TraceSource};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;
use trace_format::Op;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark replay app.tmt                              # realtime, scratch file in the current directory
  tracemark replay a.tmt b.tmt --mode compressed --json result.json
  tracemark replay app.tmt --target /dev/nvme1n1 --allow-write   # a spare drive, overwritten
  tracemark replay app.tmt --target /dev/sdb --read-only          # reads only, nothing written
  tracemark replay app.tmt --idle-cap 100ms --time-scale 2

Exit codes: 0 done, 1 error, 2 the result is not valid (the device returned I/O errors,\nor stopped answering for --io-timeout; the result is still written, marked \"valid\": false),\n128+N stopped by signal N: 130 SIGINT (Ctrl-C), 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT (the\npartial result is still written, marked \"valid\": false).")]
pub struct ReplayArgs {
    /// The traces (.tmt) to replay, in order.
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub fleet: super::fleet::FleetArgs,
}

/// How to replay: every option of `replay`, shared with `suite`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// A block device or a regular file. Default: ./tracemark-scratch.bin,
    /// created and filled with random data, sized to what the traces touch,
    /// reused by later runs. A file that does not exist is created the same way.
    /// Give it several times to replay a multi-device trace's device i onto
    /// the i-th target (devices beyond the list go to the first).
    #[arg(long, short)]
    pub target: Vec<PathBuf>,
    /// Route one trace device to a target: SRC is the device's index in the
    /// trace (0, 1, ...) or its MAJ:MIN as `tracemark info` lists it
    /// (e.g. 8:16=/dev/sdc). Repeatable; wins over the order of --target.
    #[arg(long, value_name = "SRC=TARGET")]
    pub device_map: Vec<replayer::options::DeviceRoute>,
    /// Leave the first BYTES of every target alone: the mapped range starts
    /// there (e.g. 1GiB, 4096). A multiple of the logical block size.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, default_value = "0")]
    pub target_offset: u64,
    /// Operations not to replay, counted as skipped (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "OPS")]
    pub skip_ops: Vec<Op>,
    /// How the issuing thread is scheduled during each pass (high without
    /// root or CAP_SYS_NICE: a warning, and normal priority).
    #[arg(long, value_enum, default_value_t = Priority::Normal)]
    pub priority: Priority,
    /// Where io_uring's worker threads run on a target whose requests run on
    /// them (zram, some loop devices; the result says `io-wq`): a cross-CPU
    /// wake-up made a QD1 zram read 5x slower in some runs; on a loaded
    /// machine the one CPU may be a busy one.
    #[arg(long, value_enum, default_value_t = IoWorkerCpu::Any)]
    pub io_worker_cpu: IoWorkerCpu,
    /// What the CPUs do while idle during the run: waking a CPU from an idle
    /// state adds to access times a latency that moves with the machine, not
    /// with the drive.
    #[arg(long, value_enum, default_value_t = CpuIdle::Poll)]
    pub cpu_idle: CpuIdle,
    /// What is written before scoring, so reads touch data as on a drive in
    /// use (in 1 MiB regions). Regions tracemark already wrote (a marker in
    /// ~/.local/state/tracemark says so) are not written again. A block
    /// device needs --allow-write for this.
    #[arg(long, value_enum, default_value_t = PreconditionPolicy::ReadRegions)]
    pub precondition: PreconditionPolicy,
    /// How the trace's timing is reproduced.
    #[arg(long, value_enum, default_value_t = TimingMode::Realtime)]
    pub mode: TimingMode,
    /// Realtime: shorten idle periods longer than this to this (e.g. 100ms,
    /// 2s, 500us; none keeps them whole).
    #[arg(long, value_name = "DUR|none")]
    pub idle_cap: Option<IdleCap>,
    /// Schedule speed factor: 2 plays twice as fast, 0.5 half as fast.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Realtime: issue on the original absolute schedule, regardless of completions.
    #[arg(long)]
    pub open_loop: bool,
    /// Most I/Os in flight at once (in every mode). The default is the
    /// depth the validity study's predictions were checked at: a trace's
    /// writeback bursts reach well past 32 in flight, and an I/O held back
    /// for a slot is not timed while it waits, so a shallower cap hides the
    /// queueing a task's flush waits behind.
    #[arg(long, default_value_t = 128)]
    pub queue_depth: u32,
    /// Issuing rings, one thread each. 0: one per target the trace's devices
    /// go to when there are two CPUs per ring, else one. 1: one ring for all. N > 1: one per target, and in compressed
    /// mode a single target's stream split over N rings.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub threads: u32,
    /// Scored passes per trace (after one unscored warm-up pass).
    #[arg(long, short = 'p', default_value_t = 3)]
    pub passes: u32,
    /// Skip the unscored warm-up pass.
    #[arg(long)]
    pub no_warmup: bool,
    /// Replay reads only; writes, flushes, discards are skipped and counted.
    #[arg(long)]
    pub read_only: bool,
    /// Allow writing to a block device (its contents are destroyed). A mounted
    /// device, or one with a mounted partition or a holder, is refused anyway.
    #[arg(long)]
    pub allow_write: bool,
    /// Where O_DIRECT is refused, replay through the page cache instead of stopping.
    #[arg(long)]
    pub allow_buffered: bool,
    /// How trace offsets become target offsets.
    #[arg(long, value_enum, default_value_t = MappingKind::Compact)]
    pub mapping: MappingKind,
    /// Fail when no I/O completes for this long (e.g. 60s).
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub io_timeout: Duration,
    /// Write the result file (JSON) here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub store: super::store::StoreArgs,
}

impl RunArgs {
    /// The primary target: the first --target, else the first --device-map
    /// target, else none (the scratch file).
    pub fn primary_target(&self) -> Option<&std::path::Path> {
        self.target
            .first()
            .or_else(|| self.device_map.first().map(|r| &r.target))
            .map(PathBuf::as_path)
    }

    pub fn options(&self) -> ReplayOptions {
        ReplayOptions {
            mode: self.mode,
            open_loop: self.open_loop,
            idle_cap: self.idle_cap.and_then(IdleCap::as_option),
            idle_policy: None,
            time_scale: self.time_scale,
            queue_depth: self.queue_depth,
            threads: self.threads,
            passes: self.passes,
            warmup: !self.no_warmup,
            read_only: self.read_only,
            allow_write: self.allow_write,
            allow_buffered: self.allow_buffered,
            mapping: self.mapping,
            io_timeout: self.io_timeout,
            extra_targets: self.target.iter().skip(1).cloned().collect(),
            device_map: self.device_map.clone(),
            target_offset: self.target_offset,
            skip_ops: self.skip_ops.clone(),
            priority: self.priority,
            precondition: self.precondition,
            io_worker_cpu: self.io_worker_cpu,
            cpu_idle: self.cpu_idle,
            shard: None,
            start_at_unix_ns: None,
        }
    }
}

pub fn run(args: ReplayArgs) -> Result<i32> {
    if args.fleet.is_set() {
        return super::fleet::run(args);
    }
    replay_paths(&args.traces, &args.run, None, None)
}

/// Replays `traces` as `args` says: the table on stdout, the JSON result
/// where asked (with `idle_policy` saying where the idle handling came from),
/// and the run in the results database (a suite's under `suite_name`).
pub fn replay_paths(
    traces: &[PathBuf],
    args: &RunArgs,
    idle_policy: Option<String>,
    suite_name: Option<String>,
) -> Result<i32> {
    let mut opts = args.options();
    opts.idle_policy = idle_policy;
    let opts = checked(opts)?;
    let named: Vec<&std::path::Path> = traces.iter().map(PathBuf::as_path).collect();
    check_output(&named, args)?;
    let mut sources = Vec::with_capacity(traces.len());
    for path in traces {
        sources.push(TmtSource::open(path)?);
    }
    let refs: Vec<&dyn TraceSource> = sources.iter().map(|s| s as &dyn TraceSource).collect();
    replay_sources(&refs, args, &opts, &mut |result| {
        result.suite_name = suite_name.clone()
    })
}

/// Before the replay: `--json` can be written and is none of the traces,
/// the targets or the results database.
fn check_output(traces: &[&std::path::Path], args: &RunArgs) -> Result<()> {
    let mut inputs = traces.to_vec();
    inputs.extend(args.target.iter().map(PathBuf::as_path));
    inputs.extend(args.device_map.iter().map(|r| r.target.as_path()));
    super::store::check_outputs(args.json.as_deref(), &inputs, &args.store.db)
}

/// `opts` validated, with `--priority high` and `--cpu-idle poll` turned
/// down (and a warning) where the system refuses them.
pub fn checked(mut opts: ReplayOptions) -> Result<ReplayOptions> {
    opts.validate()?;
    if opts.priority == Priority::High {
        if let Err(e) = replayer::engine::realtime_priority_available() {
            eprintln!(
                "warning: --priority high: SCHED_FIFO refused ({e}); replaying at normal priority (run as root or grant CAP_SYS_NICE)"
            );
            opts.priority = Priority::Normal;
        }
    }
    if opts.cpu_idle == CpuIdle::Poll {
        if let Err(e) = replayer::cpu_idle::available() {
            eprintln!(
                "warning: --cpu-idle poll: {} refused ({e}); the CPUs keep their idle states, whose wake-up latency adds to access times (run as root, or --cpu-idle os to say so)",
                replayer::cpu_idle::CPU_LATENCY_FILE
            );
            opts.cpu_idle = CpuIdle::Os;
        }
    }
    Ok(opts)
}

/// Replays `refs` onto `args`' targets: the table on stdout, the JSON result
/// where asked; `finish` completes the result before either.
pub fn replay_sources(
    refs: &[&dyn TraceSource],
    args: &RunArgs,
    opts: &ReplayOptions,
    finish: &mut dyn FnMut(&mut replayer::SuiteResult),
) -> Result<i32> {
    let named: Vec<&std::path::Path> = refs.iter().filter_map(|s| s.path()).collect();
    check_output(&named, args)?;
    // Opened first: a database that cannot take the result fails now, not
    // after the run.
    let db = args.store.open()?;
    replayer::interrupt::install_stop_handlers().context("installing the stop-signal handlers")?;
    let mut progress = Progress::new(std::io::stderr().is_terminal(), opts.passes);
    let result = replayer::run_suite(refs, args.primary_target(), opts, &mut progress);
    progress.clear();
    let mut result = result?;
    finish(&mut result);
    if args.store.keep_serial {
        replayer::identity_probe::keep_serial(&mut result.target);
    }
    print!("{}", results::text::suite_table(&result));
    if let Some(path) = &args.json {
        replayer::suite::write_json(&result, path)?;
    }
    let json = serde_json::to_string_pretty(&result).context("the result as JSON")? + "\n";
    super::store::store(
        db.as_ref(),
        &results_db::runs::AnyResult::Suite(Box::new(result.clone())),
        &json,
    )?;
    if !result.valid {
        eprintln!(
            "tracemark: the result is not valid: {}{}",
            results::text::escape_control(&result.invalid_reasons.join("; ")),
            if args.json.is_some() {
                " (written, marked \"valid\": false)"
            } else {
                ""
            }
        );
    }
    if result.interrupted {
        return Ok(128 + replayer::interrupt::stop_signal().unwrap_or(libc::SIGINT));
    }
    Ok(if result.valid { 0 } else { 2 })
}

/// A progress bar on stderr (indicatif: the terminal's width, an ETA), only
/// when stderr is a terminal: one bar per pass and for preconditioning.
struct Progress {
    enabled: bool,
    passes: u32,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(enabled: bool, passes: u32) -> Progress {
        Progress {
            enabled,
            passes,
            bar: None,
        }
    }

    /// Starts a new bar of `total` units, labelled `prefix`.
    fn start(&mut self, prefix: String, total: u64, bytes: bool) {
        self.clear();
        if !self.enabled {
            return;
        }
        let template = if bytes {
            "{prefix} [{wide_bar}] {bytes}/{total_bytes} {percent:>3}% ETA {eta}"
        } else {
            "{prefix} [{wide_bar}] {pos}/{len} I/Os {percent:>3}% ETA {eta}"
        };
        let style = indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("#>-");
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr_with_hz(10),
        )
        .with_style(style)
        .with_prefix(prefix);
        self.bar = Some(bar);
    }

    fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn pass_started(&mut self, trace: &str, pass: PassKind, total_ios: u64) {
        let pass = match pass {
            PassKind::Warmup => "warm-up".to_string(),
            PassKind::Scored(n) => format!("pass {n}/{}", self.passes),
        };
        self.start(format!("{trace} {pass}"), total_ios, false);
    }

    fn progress(&mut self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    fn precondition_progress(&mut self, written: u64, total: u64) {
        if written == 0 {
            self.start("precondition".to_string(), total, true);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(written);
        }
        if written >= total {
            self.clear();
        }
    }

    fn pass_finished(&mut self, _trace: &str, _pass: PassKind, _m: &PassMetrics) {
        self.clear();
    }
}
