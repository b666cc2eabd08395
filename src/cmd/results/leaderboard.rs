//! `tracemark results leaderboard`: the stored runs of one suite ranked by
//! drive, as a table and a self-contained HTML page.

use super::{time, ResultsDb};
use anyhow::{bail, Context, Result};
use clap::Args;
use results::leaderboard::{boards, rank, Entry, Leaderboard};
use results::text::escape_control as esc;
use results_db::runs::AnyResult;
use results_db::{Filter, RunKind};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct LeaderboardArgs {
    /// The suite: its name or the start of its trace set's hash (default:
    /// the trace set of the newest replay or suite run).
    #[arg(long)]
    pub suite: Option<String>,
    /// Write the page here; each run's report is written beside it
    /// (FILE's name, `.run-ID.html`) and linked.
    #[arg(long)]
    pub html: Option<PathBuf>,
}

pub fn run(db: &ResultsDb, args: LeaderboardArgs) -> Result<i32> {
    // One read transaction: a run removed meanwhile is wholly absent.
    let (suite_name, trace_set, entries) = db.read(|db| collect(db, &args))?;
    let boards = boards(entries);
    for (i, entries) in boards.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let board = rank(
            &suite_name,
            trace_set.as_deref().unwrap_or(""),
            entries.clone(),
        );
        print_board(&board, &suite_name, trace_set.as_deref());
        if i == 0 {
            if let Some(path) = &args.html {
                write_pages(path, db.path(), &board, entries.clone())?;
                println!("leaderboard written to {}", path.display());
            }
        }
    }
    if boards.len() > 1 {
        println!(
            "\n{} boards: runs of this trace set with other settings are ranked apart{}",
            boards.len(),
            if args.html.is_some() {
                " (the page holds the first, the newest run's)"
            } else {
                ""
            }
        );
    }
    Ok(0)
}

/// The suite's name, its trace set and every replay or suite run of it,
/// newest first.
fn collect(db: &ResultsDb, args: &LeaderboardArgs) -> Result<(String, Option<String>, Vec<Entry>)> {
    let rows: Vec<_> = db
        .list(&Filter {
            suite: args.suite.clone(),
            ..Filter::default()
        })?
        .into_iter()
        .filter(|r| r.kind != RunKind::Consistency && r.trace_set.is_some())
        .collect();
    let Some(newest) = rows.first() else {
        bail!(
            "no replay or suite run{} in {}",
            args.suite
                .as_deref()
                .map(|s| format!(" of suite '{s}'"))
                .unwrap_or_default(),
            db.path().display()
        );
    };
    let trace_set = newest.trace_set.clone();
    let suite_name = newest.suite_name.clone().unwrap_or_default();
    let mut entries = Vec::new();
    for row in rows.iter().filter(|r| r.trace_set == trace_set) {
        let (row, parsed, _) = super::load(db, row.id)?;
        let AnyResult::Suite(result) = parsed else {
            continue;
        };
        entries.push(Entry {
            id: row.id,
            label: row.label.clone(),
            result: *result,
            report_href: args.html.as_deref().map(|p| run_report_name(p, row.id)),
        });
    }
    Ok((suite_name, trace_set, entries))
}

/// The ranking as a table, then the runs left out and why.
fn print_board(board: &Leaderboard, suite_name: &str, trace_set: Option<&str>) {
    println!(
        "{} ({} mode, trace set {}): {} drives",
        esc(if suite_name.is_empty() {
            "replay runs"
        } else {
            suite_name
        }),
        board.mode,
        trace_set.unwrap_or("-"),
        board.drives.len()
    );
    println!("settings: {}", esc(&board.settings));
    let task = board.drives.iter().any(|d| d.task_s.is_some());
    println!(
        "{:>3}  {:<5}  {:<36}  {:>8}  {:>15}  {}runs",
        "#",
        "group",
        "drive",
        "score",
        "95 % interval",
        if task { "    task s  " } else { "" }
    );
    for d in &board.drives {
        let runs: Vec<String> = d.runs.iter().map(|r| format!("{}", r.id)).collect();
        let task_cell = match (task, d.task_s) {
            (false, _) => String::new(),
            (true, Some(t)) => format!("{t:>10.3}  "),
            (true, None) => format!("{:>10}  ", "-"),
        };
        println!(
            "{:>3}  {:<5}  {:<36}  {:>8.0}  {:>15}  {task_cell}{}",
            d.rank,
            board.groups.get(d.group).map_or("", String::as_str),
            esc(&d.name),
            d.score,
            d.ci.map_or("-".to_string(), |c| format!("{:.0}-{:.0}", c.low, c.high)),
            runs.join(",")
        );
    }
    for d in board.drives.iter().filter(|d| d.runs.len() > 1) {
        let runs: Vec<String> = d.runs.iter().map(|r| format!("{}", r.id)).collect();
        println!(
            "runs {} pooled as one drive: {}",
            runs.join(","),
            esc(&d.key)
        );
    }
    for (id, why) in &board.left_out {
        println!("run {id} not ranked: {}", esc(why));
    }
}

/// The leaderboard page at `path` and, beside it, each ranked run's report
/// under the name the page links to. Every name is checked first (none may
/// be the results database `db`); the reports are published then and the
/// page last, each whole: a page never links to a report not yet written.
fn write_pages(path: &Path, db: &Path, board: &Leaderboard, entries: Vec<Entry>) -> Result<()> {
    let reports: Vec<PathBuf> = entries
        .iter()
        .filter_map(|e| e.report_href.as_ref().map(|h| path.with_file_name(h)))
        .collect();
    let to_stdout = matches!(outfile::resolve(path), Ok(outfile::Resolved::Stdout));
    if to_stdout && !reports.is_empty() {
        anyhow::bail!(
            "{}: the leaderboard's run pages are written beside its page; give --html a file path, not standard output",
            path.display()
        );
    }
    let pages = reports.iter().map(PathBuf::as_path).chain([path]);
    outfile::refuse_same_outputs(pages.clone())?;
    for page in pages {
        outfile::refuse_inputs(page, [] as [&Path; 0], Some(db))?;
        outfile::check(page)
            .with_context(|| format!("{}: cannot write the page", page.display()))?;
    }
    for e in entries {
        let Some(href) = &e.report_href else { continue };
        let target = path.with_file_name(href);
        let label = e
            .label
            .clone()
            .unwrap_or_else(|| e.result.target.drive_name());
        let started = time::format_utc(e.result.started_unix_s);
        let c = results::compare::Comparison::new(
            vec![(PathBuf::from(format!("run {}", e.id)), e.result)],
            &[format!("#{} {label} ({started} UTC)", e.id)],
        )?;
        outfile::write(&target, results::html::compare_report(&c).as_bytes())
            .with_context(|| format!("{}: cannot write the report", target.display()))?;
    }
    outfile::write(path, results::html::leaderboard_report(board).as_bytes())
        .with_context(|| format!("{}: cannot write the page", path.display()))?;
    Ok(())
}

/// `board.html` -> `board.run-12.html` (a name in the page's directory).
fn run_report_name(page: &Path, id: i64) -> String {
    let stem = page
        .file_stem()
        .map_or_else(|| "leaderboard".into(), |s| s.to_string_lossy().to_string());
    format!("{stem}.run-{id}.html")
}
