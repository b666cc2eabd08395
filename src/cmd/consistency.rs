//! `tracemark consistency`: PCMark 8's extended storage test (precondition,
//! degradation, steady state, recovery), a suite pass after every round.

use super::args::{parse_bytes, parse_duration, RunArgs};
use anyhow::{bail, Context, Result};
use clap::Args;
use replayer::consistency::{ConsistencyObserver, ConsistencyOptions};
use replayer::options::PreconditionPolicy;
use replayer::plan::SuiteSettings;
use replayer::{TmtSource, TraceSource};
use std::path::{Path, PathBuf};
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
#[command(
    mut_arg("target", |a| a.required(true).help("A block device or a regular file (created, --size)")),
    mut_arg("mode", |a| a.default_value("compressed")),
    mut_arg("queue_depth", |a| a.default_value("32").help("Most I/Os in flight in the suite passes")),
    mut_arg("passes", |a| a.default_value("1").help("Scored passes per trace in each suite pass (no warm-up: the drive's state is what is measured)")),
    mut_arg("precondition", |a| a.default_value("skip").help("skip: the test preconditions the whole target itself")),
)]
pub struct ConsistencyArgs {
    /// Traces (.tmt) of the suite pass; default: the suite file.
    pub traces: Vec<PathBuf>,
    /// The suite file (default: the quick profile of the reference suite), when no traces are given.
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// Size of a file target, e.g. 256M, 4G.
    #[arg(long, default_value = "256M", value_parser = parse_bytes)]
    pub size: u64,
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
    /// Write the HTML report here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// How the suite passes replay the traces: the options of `replay`.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Prints each step on stderr.
struct Steps;
impl ConsistencyObserver for Steps {
    fn step(&mut self, what: &str) {
        eprintln!("{what}");
    }
}

pub fn run(args: ConsistencyArgs) -> Result<i32> {
    super::store::text_off_stdout(args.run.json.iter().chain(&args.html).map(PathBuf::as_path))?;
    let [target] = args.run.target.as_slice() else {
        bail!("consistency tests one target; give --target once");
    };
    let mut request = args.run.request();
    // The drive's state after the writes is what is measured: no warm-up.
    request.options.warmup = false;
    // The suite file's settings apply to its passes, as in `suite`.
    let mut suite_file = None;
    let (paths, settings) = if args.traces.is_empty() {
        let (path, source) = super::suite::suite_path(args.suite.as_deref(), None)?;
        suite_file = Some(path.clone());
        let suite = super::suite::load_suite(&path, &source)?;
        let settings = SuiteSettings {
            source,
            idle_cap: suite.idle_cap,
        };
        let paths: Vec<PathBuf> = suite.traces.iter().map(|t| t.file.clone()).collect();
        (paths, Some(settings))
    } else {
        (args.traces.clone(), None)
    };
    let plan = super::replay::plan(request, settings.as_ref())?;
    if plan.options.precondition != PreconditionPolicy::Skip {
        bail!("consistency preconditions the whole target itself: leave out --precondition");
    }
    let outputs: Vec<&Path> = args
        .run
        .json
        .iter()
        .chain(&args.html)
        .map(PathBuf::as_path)
        .collect();
    let mut inputs: Vec<&Path> = paths
        .iter()
        .chain(&suite_file)
        .map(PathBuf::as_path)
        .collect();
    super::store::check_targets(&[target.as_path()], &inputs, &outputs, &args.run.store.db)?;
    inputs.push(target.as_path());
    super::store::check_outputs(outputs, &inputs, &args.run.store.db)?;
    let db = args.run.store.open()?;
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
        suite: plan.options,
    };
    replayer::interrupt::install_stop_handlers().context("installing the stop-signal handlers")?;
    let mut result = replayer::consistency::run_consistency(&refs, target, &opts, &mut Steps)?;
    result.settings_changed.splice(0..0, plan.changes);
    super::store::finish_run(
        results_db::runs::AnyResult::Consistency(Box::new(result)),
        &args.run.store,
        db.as_ref(),
        super::store::Outputs {
            json: args.run.json.as_deref(),
            html: args.html.as_deref(),
        },
    )
}
