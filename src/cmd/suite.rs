//! `tracemark suite`: the reference suite (or any suite file), one score.

use super::args::default_suite;
use super::replay::{replay_paths, ModeArg, RunArgs};
use anyhow::{Context, Result};
use clap::Args;
use replayer::suite_file::SuiteFile;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark suite                                  # the reference suite on ./tracemark-scratch.bin
  tracemark suite --target /dev/nvme1n1 --allow-write --json nvme1.json
  tracemark suite --passes 1 --mode compressed
  tracemark suite --suite my-suite.toml            # traces you captured yourself
  tracemark suite --keep-idle                      # realtime with every idle period whole (slow)

In realtime mode (the default) the suite caps idle periods at 10 ms unless
--idle-cap, --keep-idle or --open-loop says otherwise.")]
pub struct SuiteArgs {
    /// The suite file (default: traces/suite.toml of this checkout).
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// Keep idle periods whole in realtime mode. By default the suite caps
    /// them at 10 ms (as if `--idle-cap 10ms`): the reference traces are
    /// 90-99% idle, and uncapped one pass of the suite takes over 8 minutes.
    #[arg(long, conflicts_with = "idle_cap")]
    pub keep_idle: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// The suite's idle cap where the user set none.
const DEFAULT_IDLE_CAP: Duration = Duration::from_millis(10);

pub fn run(mut args: SuiteArgs) -> Result<i32> {
    let realtime = matches!(args.run.mode, ModeArg::Realtime);
    if realtime && !args.keep_idle && !args.run.open_loop && args.run.idle_cap.is_none() {
        args.run.idle_cap = Some(DEFAULT_IDLE_CAP);
    }
    let path = args.suite.clone().unwrap_or_else(default_suite);
    let suite = SuiteFile::load(&path).context("reading the suite")?;
    let title = if suite.name.is_empty() {
        path.display().to_string()
    } else {
        suite.name.clone()
    };
    println!("{title}: {} traces", suite.traces.len());
    for t in &suite.traces {
        println!("  {:<24} {:<16} {}", t.name, t.category, t.description);
    }
    println!();
    let traces: Vec<PathBuf> = suite.traces.iter().map(|t| t.file.clone()).collect();
    replay_paths(&traces, &args.run)
}
