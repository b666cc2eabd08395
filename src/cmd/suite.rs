//! `tracemark suite`: a profile of the reference suite (or any suite file), one score.

use super::args::RunArgs;
use super::replay::replay_paths;
use crate::reference::{self, DEFAULT_PROFILE, PROFILES};
use anyhow::{bail, Context, Result};
use clap::Args;
use replayer::options::{IdleCap, Setting};
use replayer::plan::{Plan, SuiteSettings};
use replayer::suite_file::{SuiteFile, SuiteFileError};
use replayer::TimingMode;
use results::text::escape_control as esc;
use std::path::{Path, PathBuf};
use trace_format::TraceFile;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark suite                                  # the quick profile on ./tracemark-scratch.bin
  tracemark suite --profile full                   # every reference trace, idle periods up to 1 s kept
  tracemark suite --target /dev/nvme1n1 --allow-write --json nvme1.json
  tracemark suite --passes 1 --mode compressed
  tracemark suite --suite my-suite.toml            # traces you captured yourself
  tracemark suite --profile full --verify          # read and check every trace, replay nothing

The reference traces are built into tracemark (written out on first use to
~/.cache/tracemark/). In realtime mode (the default) idle periods are capped as
the profile or suite file says (idle_cap), 1 s where it says nothing, unless
--idle-cap, --keep-idle or --open-loop says otherwise.")]
pub struct SuiteArgs {
    /// The reference profile: quick (the default; a few minutes), full
    /// (every trace), data (file copies).
    #[arg(long, value_parser = PROFILES, conflicts_with = "suite")]
    pub profile: Option<String>,
    /// Any suite file instead of a profile (traces relative to it).
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// Keep idle periods whole in realtime mode, whatever the suite's idle_cap.
    #[arg(long, conflicts_with = "idle_cap")]
    pub keep_idle: bool,
    /// Check the suite's traces (every record read, every checksum) and exit
    /// without replaying.
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// The suite file to run: `--suite`, else the profile written out from the binary.
pub fn suite_path(suite: Option<&Path>, profile: Option<&str>) -> Result<(PathBuf, String)> {
    match suite {
        Some(p) => Ok((p.to_path_buf(), format!("suite file {}", p.display()))),
        None => {
            let name = profile.unwrap_or(DEFAULT_PROFILE);
            Ok((reference::profile_path(name)?, format!("profile {name}")))
        }
    }
}

/// Loads a suite; a profile without traces says which and why.
pub fn load_suite(path: &Path, source: &str) -> Result<SuiteFile> {
    match SuiteFile::load(path) {
        Err(SuiteFileError::NoTraces { description, .. }) => bail!(
            "{source} has no traces yet{}",
            if description.is_empty() {
                String::new()
            } else {
                format!(" ({description})")
            }
        ),
        r => r.context("reading the suite"),
    }
}

pub fn run(args: SuiteArgs) -> Result<i32> {
    super::store::text_off_stdout(args.run.json.as_deref())?;
    let (path, source) = suite_path(args.suite.as_deref(), args.profile.as_deref())?;
    let suite = load_suite(&path, &source)?;
    if args.verify {
        return verify(&suite, &source);
    }
    let mut request = args.run.request();
    if args.keep_idle {
        request.idle_cap = Some(IdleCap::KeepWhole);
    }
    let settings = SuiteSettings {
        source: source.clone(),
        idle_cap: suite.idle_cap,
    };
    let plan = super::replay::plan(request, Some(&settings))?;
    let policy = idle_words(&plan, &settings);
    let title = if suite.name.is_empty() {
        path.display().to_string()
    } else {
        suite.name.clone()
    };
    println!(
        "{} ({}): {} traces; idle: {}",
        esc(&title),
        esc(&source),
        suite.traces.len(),
        esc(&policy)
    );
    for t in &suite.traces {
        println!(
            "  {:<24} {:<16} {}",
            esc(&t.name),
            esc(&t.category),
            esc(&t.description)
        );
    }
    println!();
    let traces: Vec<PathBuf> = suite.traces.iter().map(|t| t.file.clone()).collect();
    replay_paths(&traces, &[&path], &args.run, plan, Some(title))
}

/// Where the run's idle handling comes from, as the header line says it.
fn idle_words(plan: &Plan, suite: &SuiteSettings) -> String {
    let o = &plan.options;
    if o.mode != TimingMode::Realtime {
        return "compressed mode: idle removed".to_string();
    }
    if o.open_loop {
        return "command line: --open-loop".to_string();
    }
    let cap = o.idle_cap.map_or(IdleCap::KeepWhole, IdleCap::Cap);
    let from = match plan.changes.iter().any(|c| c.setting == Setting::IdleCap) {
        false => "command line",
        true if suite.idle_cap.is_some() => suite.source.as_str(),
        true => "default",
    };
    match cap {
        IdleCap::KeepWhole => format!("{from}: none"),
        cap => format!("{from}: cap {cap}"),
    }
}

/// Reads every trace of the suite through (records decoded, chunk checksums
/// checked) and prints one line each.
fn verify(suite: &SuiteFile, source: &str) -> Result<i32> {
    println!("{}: {} traces", esc(source), suite.traces.len());
    for t in &suite.traces {
        let f = TraceFile::open(&t.file).with_context(|| format!("{}", t.file.display()))?;
        f.verify()
            .with_context(|| format!("{}", t.file.display()))?;
        let s = f.summary();
        println!(
            "  {:<24} ok  {:>8} I/Os  {:>10} read  {:>10} written",
            esc(&t.name),
            s.ios,
            crate::output::bytes(s.read_bytes),
            crate::output::bytes(s.write_bytes)
        );
    }
    Ok(0)
}
