//! `tracemark results`: the runs kept in the results database: list, show,
//! compare, export, import, rm, restore, purge, label, leaderboard.

mod leaderboard;
mod time;

use super::store::DbArgs;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use results::text::escape_control as esc;
use results_db::runs::AnyResult;
use results_db::{Filter, ResultsDb, RunKind, RunRow, Stored};
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark results list                       # newest first
  tracemark results list --drive 980 --since 2026-11-01
  tracemark results show 12
  tracemark results compare 12 15 --html a-vs-b.html
  tracemark results label 12 'Drive A, firmware 2'
  tracemark results export --all --to csv -o runs.csv
  tracemark results export --all --to parquet -o runs.parquet   # built with --features parquet
  tracemark results import other-machine/*.json
  tracemark results rm 12 13                   # set aside; `results restore 12 13` undoes it
  tracemark results list --removed
  tracemark results purge --all                # deletes the removed runs for good
  tracemark results leaderboard --html board.html

Every replay, suite and consistency run is stored (unless --no-db) in
$XDG_DATA_HOME/tracemark/results.db (~/.local/share/tracemark/results.db);
--db PATH or TRACEMARK_DB=PATH use another file.")]
pub struct ResultsArgs {
    #[command(subcommand)]
    pub command: ResultsCommand,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Subcommand, Debug)]
pub enum ResultsCommand {
    /// The stored runs, newest first.
    List(ListArgs),
    /// One run: its table (or its result JSON).
    Show {
        id: i64,
        /// Print the stored result JSON as it was written.
        #[arg(long)]
        json: bool,
    },
    /// Runs side by side, ratios to the first (as `tracemark compare`).
    Compare {
        #[arg(required = true)]
        ids: Vec<i64>,
        /// Also write the HTML report here.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Give ratios for runs marked not valid too.
        #[arg(long)]
        include_invalid: bool,
        /// Never pool runs into one drive's uncertainty (by default, runs of
        /// one drive by serial or WWN are pooled, and the output says so).
        #[arg(long)]
        no_pool: bool,
    },
    /// Write runs out: one run's result JSON, or every run (--all) as a JSON
    /// array; CSV and Parquet give one row of columns per run.
    Export {
        /// The run (or --all).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<i64>,
        #[arg(long)]
        all: bool,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        to: ExportFormat,
        /// Write here instead of standard output (Parquet needs it).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Store result files (from other machines, or older runs); a result
    /// already stored is recognised by its content.
    Import {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Remove runs, all or none: they leave every list, comparison and
    /// leaderboard but stay in the database until `purge` (`restore`
    /// brings them back).
    Rm {
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Bring removed runs back (`list --removed` shows them).
    Restore {
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Delete removed runs for good, all or none (a run that is not removed
    /// is refused).
    Purge {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        ids: Vec<i64>,
        /// Every removed run.
        #[arg(long)]
        all: bool,
    },
    /// Name a run (the drive's name on the leaderboard); '' removes the label.
    Label { id: i64, name: String },
    /// Rank the drives by suite score for one suite (trace set); --html
    /// writes a self-contained page.
    Leaderboard(leaderboard::LeaderboardArgs),
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// A part of the drive's model, the target's path or the label.
    #[arg(long)]
    pub drive: Option<String>,
    /// The suite's name or the start of its trace set's hash.
    #[arg(long)]
    pub suite: Option<String>,
    /// A part of the label.
    #[arg(long)]
    pub label: Option<String>,
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// Runs started on or after this day (YYYY-MM-DD, UTC).
    #[arg(long, value_parser = time::parse_date)]
    pub since: Option<u64>,
    /// Runs started before this day (YYYY-MM-DD, UTC).
    #[arg(long, value_parser = time::parse_date)]
    pub until: Option<u64>,
    /// At most this many runs.
    #[arg(long, short = 'n')]
    pub limit: Option<u64>,
    /// The removed runs (`results restore` brings one back, `results
    /// purge` deletes it).
    #[arg(long)]
    pub removed: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum KindArg {
    Replay,
    Suite,
    Consistency,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ExportFormat {
    /// The result JSON (with --all, an array of them).
    Json,
    /// A header line, then a line of columns per run.
    Csv,
    /// Apache Parquet with the CSV's columns, typed (needs -o; build with
    /// `--features parquet`).
    Parquet,
}

pub fn run(args: ResultsArgs) -> Result<i32> {
    let output = match &args.command {
        ResultsCommand::Compare { html, .. } => html.as_deref(),
        ResultsCommand::Export { output, .. } => output.as_deref(),
        ResultsCommand::Leaderboard(a) => a.html.as_deref(),
        _ => None,
    };
    super::store::check_outputs(output, &[], &args.db)?;
    let db = args.db.open()?;
    match args.command {
        ResultsCommand::List(a) => list(&db, a),
        ResultsCommand::Show { id, json } => show(&db, id, json),
        ResultsCommand::Compare {
            ids,
            html,
            include_invalid,
            no_pool,
        } => compare(&db, &ids, html, include_invalid, no_pool),
        ResultsCommand::Export {
            id,
            all,
            to,
            output,
        } => export(&db, id, all, to, output),
        ResultsCommand::Import { files } => import(&db, &files),
        ResultsCommand::Rm { ids } => {
            db.remove(&ids)?;
            let list = id_list(&ids);
            println!(
                "removed {} (`tracemark results restore {list}` brings {} back)",
                runs_named(&ids),
                if list.contains(' ') { "them" } else { "it" }
            );
            Ok(0)
        }
        ResultsCommand::Restore { ids } => {
            db.restore(&ids)?;
            println!("restored {}", runs_named(&ids));
            Ok(0)
        }
        ResultsCommand::Purge { ids, all } => {
            let ids = if all {
                db.list(&Filter {
                    removed: true,
                    ..Filter::default()
                })?
                .iter()
                .map(|r| r.id)
                .collect()
            } else {
                ids
            };
            if ids.is_empty() {
                println!(
                    "no removed runs in {}",
                    esc(&db.path().display().to_string())
                );
                return Ok(0);
            }
            db.purge(&ids)?;
            println!("deleted {} for good", runs_named(&ids));
            Ok(0)
        }
        ResultsCommand::Label { id, name } => {
            let name = Some(name.trim()).filter(|n| !n.is_empty());
            let before = db.set_label(id, name)?;
            let was = match before.as_deref() {
                Some(b) if Some(b) != name => format!(" (was '{}')", esc(b)),
                _ => String::new(),
            };
            match name {
                Some(n) => println!("run {id} labelled '{}'{was}", esc(n)),
                None => println!("run {id}: label removed{was}"),
            }
            Ok(0)
        }
        ResultsCommand::Leaderboard(a) => leaderboard::run(&db, a),
    }
}

/// `1 3 7`, each id once, in order.
fn id_list(ids: &[i64]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")
}

/// `run 3` or `runs 1 3 7`.
fn runs_named(ids: &[i64]) -> String {
    let list = id_list(ids);
    if list.contains(' ') {
        format!("runs {list}")
    } else {
        format!("run {list}")
    }
}

fn drive_cell(r: &RunRow) -> String {
    r.drive_model
        .clone()
        .unwrap_or_else(|| r.target_path.clone())
}

fn score_cell(r: &RunRow) -> String {
    match (r.score, r.score_low, r.score_high) {
        (Some(s), Some(lo), Some(hi)) => format!("{s:.0} ±{:.0}", (hi - lo) / 2.0),
        (Some(s), _, _) => format!("{s:.0}"),
        _ => "-".into(),
    }
}

fn list(db: &ResultsDb, a: ListArgs) -> Result<i32> {
    let filter = Filter {
        drive: a.drive,
        suite: a.suite,
        label: a.label,
        kind: a.kind.map(|k| match k {
            KindArg::Replay => RunKind::Replay,
            KindArg::Suite => RunKind::Suite,
            KindArg::Consistency => RunKind::Consistency,
        }),
        since_unix_s: a.since,
        until_unix_s: a.until,
        limit: a.limit,
        removed: a.removed,
    };
    let runs = db.list(&filter)?;
    if runs.is_empty() {
        println!(
            "no {}runs in {}",
            if filter.removed { "removed " } else { "" },
            esc(&db.path().display().to_string())
        );
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>5}  {:<16}  {:<11}  {:<32}  {:<20}  {:<24}  {:<10}  {:>10}",
        "id", "started (UTC)", "kind", "drive", "label", "suite", "mode", "score"
    )?;
    for r in &runs {
        let suite = match (&r.suite_name, &r.trace_set) {
            (Some(n), _) => n.clone(),
            (None, Some(h)) => format!("traces {}", &h[..h.len().min(8)]),
            _ => "-".into(),
        };
        writeln!(
            out,
            "{:>5}  {:<16}  {:<11}  {:<32}  {:<20}  {:<24}  {:<10}  {:>10}{}",
            r.id,
            time::format_utc(r.started_unix_s),
            r.kind.name(),
            esc(&drive_cell(r)),
            esc(r.label.as_deref().unwrap_or("")),
            esc(&suite),
            r.mode.as_deref().unwrap_or("-"),
            score_cell(r),
            if r.valid { "" } else { "  not valid" }
        )?;
    }
    Ok(0)
}

/// A stored run's result, parsed.
fn load(db: &ResultsDb, id: i64) -> Result<(RunRow, AnyResult, String)> {
    let row = db.get(id)?;
    let json = row.result_json.clone().unwrap_or_default();
    let parsed = results_db::runs::parse(&json, &format!("run {id}"))?;
    Ok((row, parsed, json))
}

fn show(db: &ResultsDb, id: i64, as_json: bool) -> Result<i32> {
    let (row, parsed, json) = db.read(|db| load(db, id))?;
    if as_json {
        print!("{json}");
        return Ok(0);
    }
    println!(
        "run {} ({}), started {} UTC, stored {} UTC{}{}",
        row.id,
        row.kind.name(),
        time::format_utc(row.started_unix_s),
        time::format_utc(row.stored_unix_s),
        row.label
            .as_deref()
            .map(|l| format!(", label '{}'", esc(l)))
            .unwrap_or_default(),
        if row.origin == "run" {
            String::new()
        } else {
            format!(", imported from {}", esc(&row.origin))
        }
    );
    match parsed {
        AnyResult::Suite(r) => print!("{}", results::text::suite_table(&r)),
        AnyResult::Consistency(r) => print!("{}", results::text::consistency_table(&r)),
    }
    Ok(0)
}

fn compare(
    db: &ResultsDb,
    ids: &[i64],
    html: Option<PathBuf>,
    include_invalid: bool,
    no_pool: bool,
) -> Result<i32> {
    let loaded = db.read(|db| {
        ids.iter()
            .map(|&id| load(db, id).map(|l| (id, l)))
            .collect::<Result<Vec<_>>>()
    })?;
    let mut results = Vec::with_capacity(ids.len());
    let mut labels = Vec::with_capacity(ids.len());
    for (id, (row, parsed, _)) in loaded {
        let AnyResult::Suite(r) = parsed else {
            bail!("run {id} is a consistency test; compare takes replay and suite runs");
        };
        labels.push(format!(
            "#{id} {}",
            row.label.clone().unwrap_or_else(|| r.target.drive_name())
        ));
        results.push((PathBuf::from(format!("run {id}")), *r));
    }
    let mut comparison = results::compare::Comparison::new(results, &labels)?;
    if include_invalid {
        comparison = comparison.including_invalid();
    }
    if no_pool {
        comparison = comparison.without_pooling();
    }
    print!("{}", results::text::compare_tables(&comparison));
    if let Some(path) = &html {
        outfile::write(path, results::html::compare_report(&comparison).as_bytes())
            .with_context(|| format!("{}: cannot write the report", path.display()))?;
        println!("\nreport written to {}", path.display());
    }
    Ok(0)
}

fn export(
    db: &ResultsDb,
    id: Option<i64>,
    all: bool,
    to: ExportFormat,
    output: Option<PathBuf>,
) -> Result<i32> {
    // Refused before anything is read.
    if to == ExportFormat::Parquet {
        if !results_db::export::PARQUET_BUILT {
            return Err(results_db::export::ExportError::ParquetNotBuilt.into());
        }
        if output.is_none() {
            bail!("--to parquet writes a file: name it with -o FILE.parquet");
        }
    }
    // One read transaction: the export is one state of the database.
    let bytes = db.read(|db| -> Result<Vec<u8>> {
        let rows: Vec<RunRow> = if all {
            let mut rows = db.list(&Filter::default())?;
            rows.reverse(); // oldest first in a file
            rows
        } else {
            vec![db.get(id.context("give a run id or --all")?)?]
        };
        Ok(match to {
            ExportFormat::Json if !all => {
                rows[0].result_json.clone().unwrap_or_default().into_bytes()
            }
            ExportFormat::Json => {
                let mut values = Vec::with_capacity(rows.len());
                for r in &rows {
                    let (_, _, json) = load(db, r.id)?;
                    let v: serde_json::Value = serde_json::from_str(&json)
                        .with_context(|| format!("run {}: stored result is not JSON", r.id))?;
                    values.push(serde_json::json!({ "id": r.id, "label": r.label, "result": v }));
                }
                (serde_json::to_string_pretty(&values)? + "\n").into_bytes()
            }
            ExportFormat::Csv => results_db::export::csv_text(&rows).into_bytes(),
            ExportFormat::Parquet => results_db::export::parquet_bytes(&rows)?,
        })
    })?;
    match output {
        Some(path) => outfile::write(&path, &bytes)
            .with_context(|| format!("{}: cannot write", path.display()))?,
        None => std::io::stdout().lock().write_all(&bytes)?,
    }
    Ok(0)
}

fn import(db: &ResultsDb, files: &[PathBuf]) -> Result<i32> {
    let mut failed = 0;
    for file in files {
        let name = file.display().to_string();
        let outcome = std::fs::read_to_string(file)
            .with_context(|| format!("{name}: cannot read"))
            .and_then(|text| Ok(db.import(&text, &name)?));
        match outcome {
            Ok(Stored::New(id)) => println!("{}: stored as run {id}", esc(&name)),
            Ok(Stored::Duplicate(id)) => println!("{}: already stored as run {id}", esc(&name)),
            Ok(Stored::Restored(id)) => {
                println!("{}: run {id}, removed before, restored", esc(&name))
            }
            Err(e) => {
                failed += 1;
                eprintln!("tracemark: error: {}", esc(&format!("{e:#}")));
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} files not imported", files.len());
    }
    Ok(0)
}
