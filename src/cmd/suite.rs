//! `tracemark suite`: the reference suite (or any suite file), one score.

use super::replay::{replay_paths, RunArgs};
use anyhow::{Context, Result};
use clap::Args;
use replayer::suite_file::SuiteFile;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark suite                                  # the reference suite on ./tracemark-scratch.bin
  tracemark suite --target /dev/nvme1n1 --allow-write --json nvme1.json
  tracemark suite --passes 1 --mode compressed
  tracemark suite --suite my-suite.toml            # traces you captured yourself")]
pub struct SuiteArgs {
    /// The suite file (default: traces/suite.toml of this checkout).
    #[arg(long)]
    pub suite: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Where the reference suite lives: `traces/suite.toml` under the current
/// directory, else in the source tree this binary was built from.
fn default_suite() -> PathBuf {
    let local = PathBuf::from("traces/suite.toml");
    if local.is_file() {
        return local;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces/suite.toml")
}

pub fn run(args: SuiteArgs) -> Result<i32> {
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
