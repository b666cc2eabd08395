//! `tracemark compare`: result files side by side, and the HTML report.

use anyhow::{Context, Result};
use clap::Args;
use results::compare::{load_result, Comparison};
use results::text::compare_tables;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark compare nvme.json sata.json hdd.json
  tracemark compare a.json b.json --label 'Drive A' --label 'Drive B' --html report.html

Ratios are to the first result. Results from different modes or options, or of
different versions of a trace, are flagged (! on a column, ≠ on a cell); a trace
missing from a result shows as '-'. A result marked not valid (its device
returned errors) is flagged and gets no ratios unless --include-invalid.")]
pub struct CompareArgs {
    /// Result files written by `tracemark replay/suite --json`; the first is the reference.
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Column names, in the order of the result files (default: target model and path).
    #[arg(long)]
    pub label: Vec<String>,
    /// Also write a self-contained HTML report with charts here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Give ratios for results marked not valid (device errors) too.
    #[arg(long)]
    pub include_invalid: bool,
    /// Never pool results into one drive's uncertainty (by default, results
    /// of one drive by serial or WWN are pooled, and the output says so).
    #[arg(long)]
    pub no_pool: bool,
}

pub fn run(args: CompareArgs) -> Result<i32> {
    let inputs: Vec<&std::path::Path> = args.results.iter().map(PathBuf::as_path).collect();
    super::store::check_outputs(
        args.html.as_deref(),
        &inputs,
        &super::store::DbArgs::from_env(),
    )?;
    let mut results = Vec::with_capacity(args.results.len());
    for path in &args.results {
        results.push((path.clone(), load_result(path)?));
    }
    let mut comparison = Comparison::new(results, &args.label)?;
    if args.include_invalid {
        comparison = comparison.including_invalid();
    }
    if args.no_pool {
        comparison = comparison.without_pooling();
    }
    print!("{}", compare_tables(&comparison));
    if let Some(path) = &args.html {
        // Whole or not at all: a full disk keeps the previous report.
        outfile::write(path, results::html::compare_report(&comparison).as_bytes())
            .with_context(|| format!("{}: cannot write the report", path.display()))?;
        println!("\nreport written to {}", path.display());
    }
    Ok(0)
}
