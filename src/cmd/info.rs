//! `tracemark info`: what a trace holds.

use anyhow::{Context, Result};
use clap::Args;
use results::text::format_trace_info;
use results::trace_info::TraceInfo;
use std::path::PathBuf;
use trace_format::stats::StatsBuilder;
use trace_format::TraceFile;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tracemark info traces/office-writer.tmt\n  tracemark info game.tmt --json | jq .read_bytes"
)]
pub struct InfoArgs {
    /// The trace.
    pub trace: PathBuf,
    /// Print JSON (keys: ios, reads, writes, flushes, discards, read_bytes,
    /// write_bytes, duration_ns, skipped, and the rest of what the table shows).
    #[arg(long)]
    pub json: bool,
    /// Only the footer's summary: no pass over the records (instant on any size).
    #[arg(long)]
    pub summary_only: bool,
}

pub fn run(args: InfoArgs) -> Result<i32> {
    let path = &args.trace;
    let file = TraceFile::open(path).with_context(|| format!("{}", path.display()))?;
    let stats = if args.summary_only {
        None
    } else {
        let mut b = StatsBuilder::new();
        for r in file.records() {
            b.add(&r.with_context(|| format!("{}", path.display()))?);
        }
        Some(b.finish(file.summary().ios))
    };
    if args.json {
        let info = TraceInfo::new(&file, stats.as_ref(), path);
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print!("{}", format_trace_info(&file, stats.as_ref(), path));
    }
    Ok(0)
}
