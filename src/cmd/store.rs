//! Where a run's result is kept: the results database (`--db`,
//! `TRACEMARK_DB`, else the XDG data directory), unless `--no-db`.

use anyhow::{bail, Context, Result};
use clap::Args;
use results_db::runs::AnyResult;
use results_db::{ResultsDb, Stored};
use std::path::{Path, PathBuf};

/// The database options of every command that runs or reads results.
#[derive(Args, Debug, Clone, Default)]
pub struct DbArgs {
    /// The results database (default: $XDG_DATA_HOME/tracemark/results.db,
    /// i.e. ~/.local/share/tracemark/results.db).
    #[arg(long, value_name = "PATH", env = "TRACEMARK_DB", global = true)]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    /// The database of a command without `--db` (`TRACEMARK_DB`, else the
    /// default): the file its outputs must never replace.
    pub fn from_env() -> DbArgs {
        DbArgs {
            db: std::env::var_os("TRACEMARK_DB").map(PathBuf::from),
        }
    }

    /// The database file this command uses.
    pub fn path(&self) -> Result<PathBuf> {
        match &self.db {
            Some(p) => Ok(p.clone()),
            None => results_db::default_path().context(
                "no results database: neither XDG_DATA_HOME nor HOME is set (give --db PATH)",
            ),
        }
    }

    /// Opens (creating when missing) the database.
    pub fn open(&self) -> Result<ResultsDb> {
        let path = self.path()?;
        ResultsDb::open(&path).context("opening the results database")
    }
}

/// The options of a command that produces a result.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Do not store the result in the results database (wins over --db
    /// and TRACEMARK_DB).
    #[arg(long)]
    pub no_db: bool,
    /// Record the drive's serial number as it is, not hashed.
    #[arg(long)]
    pub keep_serial: bool,
}

impl StoreArgs {
    /// The database the result will go to, opened before the run so a bad
    /// database fails in seconds, not after the run.
    pub fn open(&self) -> Result<Option<ResultsDb>> {
        if self.no_db {
            return Ok(None);
        }
        self.db.open().map(Some)
    }
}

/// Stores a finished run's result and prints where.
pub fn store(db: Option<&ResultsDb>, result: &AnyResult, json: &str) -> Result<()> {
    let Some(db) = db else {
        return Ok(());
    };
    let stored = db
        .store(result, json, "run")
        .context("the result was not stored in the results database")?;
    let what = match stored {
        Stored::New(id) => format!("result stored as run {id}"),
        Stored::Duplicate(id) => format!("result already stored as run {id}"),
        Stored::Restored(id) => {
            format!("result stored before as run {id}, removed since: restored")
        }
    };
    println!(
        "{what} in {} (tracemark results show {})",
        results::text::escape_control(&db.path().display().to_string()),
        stored.id()
    );
    Ok(())
}

/// Where a finished run's result goes besides stdout and the database.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outputs<'a> {
    /// `--json`: the result file.
    pub json: Option<&'a Path>,
    /// `--html`: the report (a consistency test's).
    pub html: Option<&'a Path>,
}

/// How every command that runs something ends: the serial kept or hashed as
/// asked, the table on stdout, the result file and report where asked, the
/// result in the database, and the exit status (0 done, 2 not valid, 128+N
/// stopped by signal N).
pub fn finish_run(
    mut result: AnyResult,
    store_args: &StoreArgs,
    db: Option<&ResultsDb>,
    out: Outputs,
) -> Result<i32> {
    let target = match &mut result {
        AnyResult::Suite(r) => &mut r.target,
        AnyResult::Consistency(r) => &mut r.target,
    };
    if store_args.keep_serial {
        replayer::identity_probe::keep_serial(target);
    }
    let (valid, reasons, interrupted) = match &result {
        AnyResult::Suite(r) => {
            print!("{}", results::text::suite_table(r));
            (
                r.valid,
                results::schema::sentences(&r.invalid_reasons),
                r.interrupted,
            )
        }
        AnyResult::Consistency(r) => {
            print!("{}", results::text::consistency_table(r));
            (true, String::new(), r.interrupted)
        }
    };
    let json = match &result {
        AnyResult::Suite(r) => serde_json::to_string_pretty(r),
        AnyResult::Consistency(r) => serde_json::to_string_pretty(r),
    }
    .context("the result as JSON")?
        + "\n";
    // Stored first: an output that cannot be written (standard output
    // closed or full) loses no finished run; the outputs are written even
    // when the database cannot take it.
    let stored = store(db, &result, &json);
    write_outputs(&result, out)?;
    stored?;
    if !valid {
        eprintln!(
            "tracemark: the result is not valid: {}{}",
            results::text::escape_control(&reasons),
            if out.json.is_some() {
                " (written, marked \"valid\": false)"
            } else {
                ""
            }
        );
    }
    if interrupted {
        return Ok(128 + replayer::interrupt::stop_signal().unwrap_or(libc::SIGINT));
    }
    Ok(if valid { 0 } else { 2 })
}

/// The result file and the report, where asked.
fn write_outputs(result: &AnyResult, out: Outputs) -> Result<()> {
    if let Some(path) = out.json {
        match result {
            AnyResult::Suite(r) => replayer::suite::write_json(r, path)?,
            AnyResult::Consistency(r) => replayer::consistency::write_json(r, path)?,
        }
    }
    if let (Some(path), AnyResult::Consistency(r)) = (out.html, result) {
        outfile::write(path, results::html::consistency_report(r).as_bytes())
            .with_context(|| format!("{}: cannot write the report", path.display()))?;
    }
    Ok(())
}

/// Before any work: each output can be written (see [`outfile::check`]) and
/// is none of `inputs` nor the results database (by device and inode, so
/// another name for the same file is caught too).
pub fn check_outputs<'a>(
    outputs: impl IntoIterator<Item = &'a std::path::Path>,
    inputs: &[&std::path::Path],
    db: &DbArgs,
) -> Result<()> {
    let db = db.path().ok();
    let outputs: Vec<&Path> = outputs.into_iter().collect();
    outfile::refuse_same_outputs(outputs.iter().copied())?;
    for out in outputs {
        outfile::refuse_inputs(out, inputs.iter().copied(), db.as_deref())?;
        outfile::check(out)?;
    }
    Ok(())
}

/// When a result or report goes to standard output (`-`), the run's text
/// (header, table, notes) goes to standard error from now on: what standard
/// output carries is the result alone (`tracemark replay t.tmt --json - |
/// jq`). A path such as `/dev/stdout` is left as it is: once standard output
/// were standard error, that path would name another file.
pub fn text_off_stdout<'a>(outputs: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    if outputs.into_iter().any(|p| p.as_os_str() == "-") {
        outfile::divert_text_to_stderr().context("sending the run's text to standard error")?;
    }
    Ok(())
}

/// Before any work: no replay target is a file the run reads (a trace, the
/// suite file), one of its outputs or the results database (by device and
/// inode, or for a path not made yet its folder and name): a replay writes
/// over its target, and may grow it.
pub fn check_targets(
    targets: &[&Path],
    inputs: &[&Path],
    outputs: &[&Path],
    db: &DbArgs,
) -> Result<()> {
    let db = db.path().ok();
    for target in targets {
        let t = target.display();
        if let Some(db) = db.as_deref().filter(|db| outfile::is_database(target, db)) {
            bail!(
                "the target {t} is the results database {}; a replay writes over its target (name a scratch file or a spare drive)",
                db.display()
            );
        }
        if let Some(input) = inputs.iter().find(|i| outfile::is_input(target, i)) {
            bail!(
                "the target {t} is the same file as the input {}; a replay writes over its target (name a scratch file or a spare drive)",
                input.display()
            );
        }
        if let Some(out) = outputs.iter().find(|o| outfile::is_output(target, o)) {
            bail!(
                "the target {t} is the same file as the output {}; a replay writes over its target (give each its own path)",
                out.display()
            );
        }
    }
    Ok(())
}
