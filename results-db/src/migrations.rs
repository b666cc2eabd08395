//! The database schema, as the steps that build it: `PRAGMA user_version`
//! is the number of steps applied. A database of any earlier version is
//! brought up to date in one transaction when it is opened; a newer one is
//! refused. A new step is added at the end, never by editing one that
//! shipped (tests open a database of every earlier version).

use crate::columns::Columns;
use crate::error::{classify, DbError};
use rusqlite::Connection;
use rusqlite::{params, TransactionBehavior};
use std::path::Path;

/// `PRAGMA application_id` of a tracemark results database ("tmrd").
pub const APPLICATION_ID: i32 = 0x746d_7264;

/// One schema step: SQL, then (optionally) filling the new columns of the
/// rows already stored, from their result JSON.
pub struct Step {
    pub sql: &'static str,
    pub backfill: Option<fn(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>>,
}

/// Every step, in order: version N is the first N applied.
pub const STEPS: &[Step] = &[
    // 1: every run whole, with what listing needs.
    Step {
        sql: "CREATE TABLE runs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                kind TEXT NOT NULL,
                stored_unix_s INTEGER NOT NULL,
                started_unix_s INTEGER NOT NULL,
                content_hash TEXT NOT NULL UNIQUE,
                label TEXT,
                target_path TEXT NOT NULL,
                drive_model TEXT,
                host TEXT NOT NULL,
                mode TEXT,
                score REAL,
                valid INTEGER NOT NULL,
                tool_version TEXT NOT NULL,
                origin TEXT NOT NULL,
                result_json TEXT NOT NULL
              );
              CREATE INDEX runs_started ON runs(started_unix_s);
              CREATE INDEX runs_drive_model ON runs(drive_model);
              CREATE INDEX runs_label ON runs(label);",
        backfill: None,
    },
    // 2: the drive's identity and the trace set, so runs of one drive and
    // one suite are found (and ranked) together; the score's interval.
    Step {
        sql: "ALTER TABLE runs ADD COLUMN drive_key TEXT;
              ALTER TABLE runs ADD COLUMN suite_name TEXT;
              ALTER TABLE runs ADD COLUMN trace_set TEXT;
              ALTER TABLE runs ADD COLUMN score_low REAL;
              ALTER TABLE runs ADD COLUMN score_high REAL;
              CREATE INDEX runs_drive_key ON runs(drive_key);
              CREATE INDEX runs_trace_set ON runs(trace_set);",
        backfill: Some(backfill_identity),
    },
    // 3: `results rm` sets aside, it does not delete: a removed run keeps
    // its row, with when it was removed, until `results purge`.
    Step {
        sql: "ALTER TABLE runs ADD COLUMN removed_unix_s INTEGER;
              CREATE INDEX runs_removed ON runs(removed_unix_s);",
        backfill: None,
    },
];

/// The schema version this build writes.
pub fn current_version() -> i64 {
    STEPS.len() as i64
}

/// Brings the database to the current version (see the module doc).
pub fn migrate(conn: &Connection, path: &Path) -> Result<(), DbError> {
    migrate_to(conn, path, current_version())
}

/// Applies the steps up to `target` (tests build databases of earlier
/// versions with it). The version is read again inside the write
/// transaction, so two processes opening a new database at once apply each
/// step once.
pub fn migrate_to(conn: &Connection, path: &Path, target: i64) -> Result<(), DbError> {
    let version = |c: &Connection| -> rusqlite::Result<i64> {
        c.query_row("PRAGMA user_version", [], |r| r.get(0))
    };
    let found = version(conn).map_err(|e| classify(path, e))?;
    if found > current_version() {
        return Err(DbError::TooNew {
            path: path.to_path_buf(),
            found,
            known: current_version(),
        });
    }
    if found >= target {
        return Ok(());
    }
    let run = || -> rusqlite::Result<()> {
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
        let found = version(&tx)?;
        for (i, step) in STEPS.iter().enumerate().take(target as usize) {
            if (i as i64) < found {
                continue;
            }
            tx.execute_batch(step.sql)?;
            if let Some(fill) = step.backfill {
                fill(&tx)?;
            }
        }
        if found < target {
            tx.execute_batch(&format!(
                "PRAGMA application_id = {}; PRAGMA user_version = {target};",
                APPLICATION_ID
            ))?;
        }
        tx.commit()
    };
    run().map_err(|e| classify(path, e))
}

/// Step 2's columns for the rows stored before it, from their JSON.
fn backfill_identity(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let rows: Vec<(i64, String)> = {
        let mut q = tx.prepare("SELECT id, result_json FROM runs WHERE drive_key IS NULL")?;
        let it = q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        it.collect::<rusqlite::Result<_>>()?
    };
    let mut update = tx.prepare(
        "UPDATE runs SET drive_key = ?2, suite_name = ?3, trace_set = ?4,
                score_low = ?5, score_high = ?6 WHERE id = ?1",
    )?;
    for (id, json) in rows {
        // A row whose JSON no longer parses keeps empty columns: it is
        // still listed and shown, never dropped.
        let Ok(cols) = Columns::of_json(&json, "stored run") else {
            continue;
        };
        update.execute(params![
            id,
            cols.drive_key,
            cols.suite_name,
            cols.trace_set,
            cols.score_low,
            cols.score_high
        ])?;
    }
    Ok(())
}
