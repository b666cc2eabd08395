//! `tracemark replay`: replay traces against a drive and score it.

use super::args::{FleetArgs, RunArgs};
use anyhow::{Context, Result};
use clap::Args;
use replayer::engine::{Observer, PassKind};
use replayer::options::Setting;
use replayer::plan::{Plan, Request, SuiteSettings, ThisSystem};
use replayer::{PassMetrics, TmtSource, TraceSource};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

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
    pub fleet: FleetArgs,
}

/// A replay on this host alone (a fleet rank is `super::fleet::run`).
pub fn run(args: ReplayArgs) -> Result<i32> {
    super::store::text_off_stdout(args.run.json.as_deref())?;
    let plan = plan(args.run.request(), None)?;
    replay_paths(&args.traces, &[], &args.run, plan, None)
}

/// Replays `traces` onto `args`' targets as `plan` says: the table on
/// stdout, the JSON result where asked, and the run in the results database
/// (a suite's under `suite_name`). `also_read`: the other files the run
/// reads (the suite file), which no target or output may be.
pub fn replay_paths(
    traces: &[PathBuf],
    also_read: &[&Path],
    args: &RunArgs,
    plan: Plan,
    suite_name: Option<String>,
) -> Result<i32> {
    let mut named: Vec<&Path> = traces.iter().map(PathBuf::as_path).collect();
    named.extend_from_slice(also_read);
    check_files(&named, args)?;
    let mut sources = Vec::with_capacity(traces.len());
    for path in traces {
        sources.push(TmtSource::open(path)?);
    }
    let refs: Vec<&dyn TraceSource> = sources.iter().map(|s| s as &dyn TraceSource).collect();
    replay_sources(&refs, args, plan, &mut |result| {
        result.suite_name = suite_name.clone()
    })
}

/// Before the replay: no target is one of the files the run reads
/// (`reads`), its output or the results database, and `--json` can be
/// written and is none of those files, the targets or the database.
fn check_files(reads: &[&Path], args: &RunArgs) -> Result<()> {
    let targets = args.targets();
    let outputs: Vec<&Path> = args.json.as_deref().into_iter().collect();
    super::store::check_targets(&targets, reads, &outputs, &args.store.db)?;
    let mut inputs = reads.to_vec();
    inputs.extend(targets);
    super::store::check_outputs(outputs, &inputs, &args.store.db)
}

/// The run's plan on this machine, with a warning for each setting the
/// system turned down.
pub fn plan(request: Request, suite: Option<&SuiteSettings>) -> Result<Plan> {
    let plan = Plan::resolve(request, suite, &ThisSystem)?;
    for c in &plan.changes {
        let advice = match c.setting {
            Setting::Priority => "replaying at normal priority (run as root or grant CAP_SYS_NICE)",
            Setting::CpuIdle => "the CPUs keep their idle states, whose wake-up latency adds to access times (run as root, or --cpu-idle os to say so)",
            Setting::IdleCap => continue,
        };
        let asked = c.requested.as_deref().unwrap_or_default();
        eprintln!("warning: {} {asked}: {}; {advice}", c.setting.flag(), c.why);
    }
    Ok(plan)
}

/// Replays `refs` onto `args`' targets: the table on stdout, the JSON result
/// where asked; `finish` completes the result before either.
pub fn replay_sources(
    refs: &[&dyn TraceSource],
    args: &RunArgs,
    plan: Plan,
    finish: &mut dyn FnMut(&mut replayer::SuiteResult),
) -> Result<i32> {
    let opts = &plan.options;
    let named: Vec<&Path> = refs.iter().filter_map(|s| s.path()).collect();
    check_files(&named, args)?;
    // Opened first: a database that cannot take the result fails now, not
    // after the run.
    let db = args.store.open()?;
    replayer::interrupt::install_stop_handlers().context("installing the stop-signal handlers")?;
    let mut progress = Progress::new(std::io::stderr().is_terminal(), opts.passes);
    let result = replayer::run_suite(refs, args.primary_target(), opts, &mut progress);
    progress.clear();
    let mut result = result?;
    result.settings_changed.splice(0..0, plan.changes);
    finish(&mut result);
    super::store::finish_run(
        results_db::runs::AnyResult::Suite(Box::new(result)),
        &args.store,
        db.as_ref(),
        super::store::Outputs {
            json: args.json.as_deref(),
            html: None,
        },
    )
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
