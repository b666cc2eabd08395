//! `tracemark merge`: the result files of a fleet's ranks into one result.

use anyhow::{Context, Result};
use clap::Args;
use results::fleet_merge::{fleet_table, merge, RankInput};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  mpirun --bind-to none -n 4 tracemark replay dc.tmt --shard auto --target /dev/rbd{rank} --allow-write \\
      --passes 1 --no-warmup --start-at 2026-12-02T12:00:00Z --json rank-{rank}.json
  tracemark merge rank-*.json -o fleet.json

Counts and bytes are added up; latency percentiles come from the ranks'
histograms merged exactly; IOPS and bandwidth are over the common interval
(the earliest first issue to the latest last completion). A rank that is
missing, wrote a failure record, or whose result is not valid makes the fleet
result not valid (exit code 2), naming the rank.")]
pub struct MergeArgs {
    /// The ranks' result files (`tracemark replay --shard ... --json`).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Write the fleet result (JSON) here.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

pub fn run(args: MergeArgs) -> Result<i32> {
    let files: Vec<&std::path::Path> = args.results.iter().map(PathBuf::as_path).collect();
    let db = super::store::DbArgs::from_env();
    super::store::check_outputs(args.output.as_deref(), &files, &db)?;
    let inputs: Vec<(String, RankInput)> = args
        .results
        .iter()
        .map(|path| {
            let name = path.display().to_string();
            let input = match std::fs::read_to_string(path) {
                Ok(text) => RankInput::parse(&text),
                Err(e) => RankInput::Unreadable(format!("cannot read: {e}")),
            };
            (name, input)
        })
        .collect();
    let fleet = merge(&inputs)?;
    print!("{}", fleet_table(&fleet));
    if let Some(path) = &args.output {
        let text = serde_json::to_string_pretty(&fleet)? + "\n";
        outfile::write(path, text.as_bytes())
            .with_context(|| format!("{}: cannot write the fleet result", path.display()))?;
    }
    Ok(if fleet.valid { 0 } else { 2 })
}
