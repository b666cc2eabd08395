//! `tracemark consistency`: PCMark 8's extended storage test (precondition,
//! degradation, steady state, recovery), a suite pass after every round.

use super::args::{parse_bytes, parse_duration};
use anyhow::{Context, Result};
use clap::Args;
use replayer::consistency::{ConsistencyObserver, ConsistencyOptions};
use replayer::{ReplayOptions, TimingMode, TmtSource, TraceSource};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark consistency --target /dev/nvme1n1 --allow-write --json c.json --html c.html
  tracemark consistency --target scratch.bin --size 4G --rounds-degrade 3 --rounds-steady 2 --rounds-recovery 2
  tracemark consistency --target /dev/sdb --allow-write --degrade-start 10m --degrade-step 1m --steady 25m --idle 5m

The whole target is overwritten (twice sequentially, then with random writes).
Durations left unset scale with the target: the unit is the time one
precondition pass took (writing the whole target once); degradation starts at
1 unit (+0.1 unit per round), steady rounds write for 2.5 units, recovery rounds
idle 0.5 unit; each at least 1 s and at most PCMark 8's 10 min, 1 min, 25 min, 5 min.
Exit codes: 0 done, 1 error, 128+N stopped by signal N: 130 SIGINT (Ctrl-C), 143 SIGTERM
(the partial result is still written).")]
pub struct ConsistencyArgs {
    /// Traces (.tmt) of the suite pass; default: the suite file.
    pub traces: Vec<PathBuf>,
    /// The suite file (default: the quick profile of the reference suite), when no traces are given.
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// A block device or a regular file (created, `--size`).
    #[arg(long, short)]
    pub target: PathBuf,
    /// Size of a file target, e.g. 256M, 4G.
    #[arg(long, default_value = "256M", value_parser = parse_bytes)]
    pub size: u64,
    /// Allow writing to a block device (its contents are destroyed). A mounted
    /// device, or one with a mounted partition or a holder, is refused anyway.
    #[arg(long)]
    pub allow_write: bool,
    /// Where O_DIRECT is refused, go through the page cache instead of stopping.
    #[arg(long)]
    pub allow_buffered: bool,
    #[arg(long, default_value_t = 8)]
    pub rounds_degrade: u32,
    #[arg(long, default_value_t = 5)]
    pub rounds_steady: u32,
    #[arg(long, default_value_t = 5)]
    pub rounds_recovery: u32,
    /// Random writes in the first degradation round (default: scaled to the target).
    #[arg(long, value_parser = parse_duration)]
    pub degrade_start: Option<Duration>,
    /// Added to the write period each degradation round (default: scaled).
    #[arg(long, value_parser = parse_duration)]
    pub degrade_step: Option<Duration>,
    /// Random writes in each steady-state round (default: scaled).
    #[arg(long, value_parser = parse_duration)]
    pub steady: Option<Duration>,
    /// Idle time in each recovery round (default: scaled).
    #[arg(long, value_parser = parse_duration)]
    pub idle: Option<Duration>,
    /// I/Os in flight during the precondition and the random writes.
    #[arg(long, default_value_t = 32)]
    pub write_queue_depth: u32,
    /// How the suite passes replay the traces.
    #[arg(long, value_enum, default_value_t = TimingMode::Compressed)]
    pub mode: TimingMode,
    /// Most I/Os in flight in the suite passes.
    #[arg(long, default_value_t = 32)]
    pub queue_depth: u32,
    /// Scored passes per trace in each suite pass (no warm-up: the drive's
    /// state is what is measured).
    #[arg(long, default_value_t = 1)]
    pub passes: u32,
    /// Write the result file (JSON) here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the HTML report here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub store: super::store::StoreArgs,
}

/// Prints each step on stderr.
struct Steps;
impl ConsistencyObserver for Steps {
    fn step(&mut self, what: &str) {
        eprintln!("{what}");
    }
}

pub fn run(args: ConsistencyArgs) -> Result<i32> {
    let outputs = args.json.iter().chain(&args.html).map(PathBuf::as_path);
    let mut inputs: Vec<&std::path::Path> = args.traces.iter().map(PathBuf::as_path).collect();
    inputs.push(args.target.as_path());
    super::store::check_outputs(outputs, &inputs, &args.store.db)?;
    let db = args.store.open()?;
    let paths = if args.traces.is_empty() {
        let (path, source) = super::suite::suite_path(args.suite.as_deref(), None)?;
        let suite = super::suite::load_suite(&path, &source)?;
        suite.traces.iter().map(|t| t.file.clone()).collect()
    } else {
        args.traces.clone()
    };
    let mut sources = Vec::with_capacity(paths.len());
    for p in &paths {
        sources.push(TmtSource::open(p)?);
    }
    let refs: Vec<&dyn TraceSource> = sources.iter().map(|s| s as &dyn TraceSource).collect();
    let opts = ConsistencyOptions {
        rounds_degrade: args.rounds_degrade,
        rounds_steady: args.rounds_steady,
        rounds_recovery: args.rounds_recovery,
        degrade_start: args.degrade_start,
        degrade_step: args.degrade_step,
        steady: args.steady,
        idle: args.idle,
        write_queue_depth: args.write_queue_depth,
        file_size: args.size,
        suite: ReplayOptions {
            mode: args.mode,
            queue_depth: args.queue_depth,
            passes: args.passes,
            warmup: false,
            allow_write: args.allow_write,
            allow_buffered: args.allow_buffered,
            // The test preconditions the whole target itself, and then
            // measures the state the writes leave.
            precondition: replayer::options::PreconditionPolicy::Skip,
            ..Default::default()
        },
    };
    replayer::interrupt::install_stop_handlers().context("installing the stop-signal handlers")?;
    let result = replayer::consistency::run_consistency(&refs, &args.target, &opts, &mut Steps)?;
    super::store::finish_run(
        results_db::runs::AnyResult::Consistency(Box::new(result)),
        &args.store,
        db.as_ref(),
        super::store::Outputs {
            json: args.json.as_deref(),
            html: args.html.as_deref(),
        },
    )
}
