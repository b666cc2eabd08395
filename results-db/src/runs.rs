//! Runs in the database: storing a result (whole, plus its columns),
//! listing with filters, reading one back, labels, removal (which sets a
//! run aside, so a mistyped id is undone with `restore`) and purging.

use crate::columns::RunKind;
use crate::columns::{select_list, Columns, RunRow, RUN_COLUMNS};
use crate::db::ResultsDb;
use crate::error::DbError;
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use sha2::{Digest, Sha256};

pub use results::parse::AnyResult;

/// Parses a result's text with [`results::parse::any`], the reader every
/// command shares: what `compare` refuses is never stored or ranked, and a
/// run's validity is judged from its data. `origin` names the text.
pub fn parse(json: &str, origin: &str) -> Result<AnyResult, DbError> {
    Ok(results::parse::any(json, origin)?)
}

/// A content hash of a result that does not depend on its key order or
/// white space: the same result imported twice is stored once.
pub fn content_hash(json: &str) -> Option<String> {
    fn canonical(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::String((*k).clone()).to_string());
                    out.push(':');
                    canonical(&map[*k], out);
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let mut text = String::with_capacity(json.len());
    canonical(&value, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    Some(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// What storing a result did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Stored as run `id`.
    New(i64),
    /// The same result was already stored as run `id`.
    Duplicate(i64),
    /// The same result had been removed as run `id`: it is back.
    Restored(i64),
}

impl Stored {
    pub fn id(self) -> i64 {
        match self {
            Stored::New(id) | Stored::Duplicate(id) | Stored::Restored(id) => id,
        }
    }
}

/// Which runs `list` returns; every field set must match.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// A part of the drive's model, the target's path or the label.
    pub drive: Option<String>,
    /// The suite's name, or the start of its trace set's hash.
    pub suite: Option<String>,
    /// A part of the label.
    pub label: Option<String>,
    pub kind: Option<RunKind>,
    /// Started at or after (seconds since the epoch).
    pub since_unix_s: Option<u64>,
    /// Started before.
    pub until_unix_s: Option<u64>,
    pub limit: Option<u64>,
    /// The removed runs instead of the kept ones.
    pub removed: bool,
}

/// Brings removed run `?1` back (`restore`, and storing its result again).
const RESTORE_SQL: &str = "UPDATE runs SET removed_unix_s = NULL WHERE id = ?1";

fn like(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

fn now_unix_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl ResultsDb {
    /// Stores `json` (a result file's text, kept as it is) with the columns
    /// of its parsed form; `origin` is `run` for a run of this machine, or
    /// the file it was imported from. One transaction, synced before it
    /// returns. A result stored before (same content) is not stored again.
    pub fn store(&self, result: &AnyResult, json: &str, origin: &str) -> Result<Stored, DbError> {
        let hash = content_hash(json).ok_or_else(|| DbError::NotAResult {
            origin: origin.to_string(),
            reason: "not JSON".into(),
        })?;
        let row = Columns::of(result).into_row(origin, now_unix_s().max(0) as u64);
        let run = || -> rusqlite::Result<Stored> {
            let tx =
                rusqlite::Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)?;
            let existing: Option<(i64, Option<i64>)> = tx
                .query_row(
                    "SELECT id, removed_unix_s FROM runs WHERE content_hash = ?1",
                    [&hash],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            match existing {
                Some((id, None)) => return Ok(Stored::Duplicate(id)),
                Some((id, Some(_))) => {
                    tx.execute(RESTORE_SQL, [id])?;
                    tx.commit()?;
                    return Ok(Stored::Restored(id));
                }
                None => {}
            }
            let stored: Vec<_> = RUN_COLUMNS.iter().filter(|c| c.stored).collect();
            let names: Vec<&str> = stored.iter().map(|c| c.name).collect();
            let mut values: Vec<rusqlite::types::Value> =
                stored.iter().map(|c| (c.value)(&row).sql_value()).collect();
            values.push(hash.clone().into());
            values.push(json.to_string().into());
            let places: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
            tx.execute(
                &format!(
                    "INSERT INTO runs ({}, content_hash, result_json) VALUES ({})",
                    names.join(", "),
                    places.join(", ")
                ),
                rusqlite::params_from_iter(values),
            )?;
            let id = tx.last_insert_rowid();
            tx.commit()?;
            Ok(Stored::New(id))
        };
        run().map_err(|e| self.err(e))
    }

    /// Parses and stores a result file's text (`tracemark results import`).
    pub fn import(&self, json: &str, origin: &str) -> Result<Stored, DbError> {
        let parsed = parse(json, origin)?;
        self.store(&parsed, json, origin)
    }

    /// The runs the filter lets through, newest first (by start, then id).
    pub fn list(&self, f: &Filter) -> Result<Vec<RunRow>, DbError> {
        let mut sql = format!(
            "SELECT {} FROM runs WHERE removed_unix_s IS {}",
            select_list(),
            if f.removed { "NOT NULL" } else { "NULL" }
        );
        let mut args: Vec<Box<dyn rusqlite::ToSql>> = Vec::new();
        if let Some(d) = &f.drive {
            sql += " AND (drive_model LIKE ? ESCAPE '\\' OR target_path LIKE ? ESCAPE '\\' OR label LIKE ? ESCAPE '\\')";
            for _ in 0..3 {
                args.push(Box::new(like(d)));
            }
        }
        if let Some(s) = &f.suite {
            sql += " AND (suite_name = ? OR trace_set LIKE ? ESCAPE '\\')";
            args.push(Box::new(s.clone()));
            args.push(Box::new(format!(
                "{}%",
                like(s).trim_start_matches('%').trim_end_matches('%')
            )));
        }
        if let Some(l) = &f.label {
            sql += " AND label LIKE ? ESCAPE '\\'";
            args.push(Box::new(like(l)));
        }
        if let Some(k) = f.kind {
            sql += " AND kind = ?";
            args.push(Box::new(k.name()));
        }
        if let Some(t) = f.since_unix_s {
            sql += " AND started_unix_s >= ?";
            args.push(Box::new(t as i64));
        }
        if let Some(t) = f.until_unix_s {
            sql += " AND started_unix_s < ?";
            args.push(Box::new(t as i64));
        }
        sql += " ORDER BY started_unix_s DESC, id DESC";
        if let Some(n) = f.limit {
            sql += &format!(" LIMIT {n}");
        }
        let run = || -> rusqlite::Result<Vec<RunRow>> {
            let mut q = self.conn().prepare(&sql)?;
            let refs: Vec<&dyn rusqlite::ToSql> = args.iter().map(|a| a.as_ref()).collect();
            let rows = q.query_map(refs.as_slice(), |r| RunRow::from_sql(r, false))?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// Run `id` with its result JSON.
    pub fn get(&self, id: i64) -> Result<RunRow, DbError> {
        self.conn()
            .query_row(
                &format!(
                    "SELECT {}, result_json FROM runs WHERE id = ?1 AND removed_unix_s IS NULL",
                    select_list()
                ),
                [id],
                |r| RunRow::from_sql(r, true),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .map_or_else(|| Err(self.missing(id)), Ok)
    }

    /// Whether run `id` is kept (`Some(false)`), removed (`Some(true)`) or
    /// not in the database.
    fn state(conn: &rusqlite::Connection, id: i64) -> rusqlite::Result<Option<bool>> {
        conn.query_row(
            "SELECT removed_unix_s IS NOT NULL FROM runs WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()
    }

    /// The error for a run that is not among the kept ones.
    fn missing(&self, id: i64) -> DbError {
        match Self::state(self.conn(), id) {
            Ok(Some(true)) => DbError::Removed(id),
            Ok(_) => DbError::NoSuchRun(id),
            Err(e) => self.err(e),
        }
    }

    /// Applies `sql` (with the id as `?1`) to every run of `ids` in one
    /// transaction, after checking that each is in the state `removed`
    /// says: one id that is not leaves every run as it was.
    fn change_all(&self, ids: &[i64], removed: bool, sql: &str) -> Result<(), DbError> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let run = || -> Result<(), DbError> {
            let tx =
                rusqlite::Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)
                    .map_err(|e| self.err(e))?;
            for &id in &ids {
                match Self::state(&tx, id).map_err(|e| self.err(e))? {
                    None => return Err(DbError::NoSuchRun(id)),
                    Some(r) if r == removed => {}
                    Some(true) => return Err(DbError::Removed(id)),
                    Some(false) => return Err(DbError::NotRemoved(id)),
                }
                tx.execute(sql, [id]).map_err(|e| self.err(e))?;
            }
            tx.commit().map_err(|e| self.err(e))
        };
        run()
    }

    /// Runs `f` in one read transaction: everything it reads is one state
    /// of the database, so a run removed or stored meanwhile by another
    /// program is either wholly there or wholly absent.
    pub fn read<T, E: From<DbError>>(
        &self,
        f: impl FnOnce(&ResultsDb) -> Result<T, E>,
    ) -> Result<T, E> {
        self.conn()
            .execute_batch("BEGIN DEFERRED")
            .map_err(|e| self.err(e))?;
        let out = f(self);
        // A read transaction holds nothing to keep: ending it cannot lose data.
        let _ = self.conn().execute_batch("COMMIT");
        out
    }

    /// Removes the runs `ids`, all or none: they leave every listing,
    /// comparison and leaderboard, and stay in the database, whole, for
    /// [`ResultsDb::restore`] until [`ResultsDb::purge`].
    pub fn remove(&self, ids: &[i64]) -> Result<(), DbError> {
        self.change_all(
            ids,
            false,
            "UPDATE runs SET removed_unix_s = CAST(strftime('%s', 'now') AS INTEGER) WHERE id = ?1",
        )
    }

    /// Brings removed runs back, all or none.
    pub fn restore(&self, ids: &[i64]) -> Result<(), DbError> {
        self.change_all(ids, true, RESTORE_SQL)
    }

    /// Deletes removed runs for good, all or none; a kept run is refused.
    /// Their bytes leave the file too: the deleted pages are zeroed
    /// (`secure_delete`), and the write-ahead log that held them is
    /// checkpointed and emptied (where no other program is reading it
    /// then, it is emptied by the next write that finds it free).
    pub fn purge(&self, ids: &[i64]) -> Result<(), DbError> {
        self.conn()
            .execute_batch("PRAGMA secure_delete = ON")
            .map_err(|e| self.err(e))?;
        let purged = self.change_all(ids, true, "DELETE FROM runs WHERE id = ?1");
        let _ = self.conn().execute_batch("PRAGMA secure_delete = OFF");
        purged?;
        // A reader holding the log keeps it until it is done; the runs are
        // deleted either way.
        let _ = self
            .conn()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        Ok(())
    }

    /// Sets (or with None, clears) run `id`'s label; returns the label it
    /// replaced, so the caller can say what was there.
    pub fn set_label(&self, id: i64, label: Option<&str>) -> Result<Option<String>, DbError> {
        let run = || -> Result<Option<String>, DbError> {
            let tx =
                rusqlite::Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)
                    .map_err(|e| self.err(e))?;
            let before: Option<Option<String>> = tx
                .query_row(
                    "SELECT label FROM runs WHERE id = ?1 AND removed_unix_s IS NULL",
                    [id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| self.err(e))?;
            let Some(before) = before else {
                return Err(self.missing(id));
            };
            tx.execute(
                "UPDATE runs SET label = ?2 WHERE id = ?1",
                params![id, label],
            )
            .map_err(|e| self.err(e))?;
            tx.commit().map_err(|e| self.err(e))?;
            Ok(before)
        };
        run()
    }
}
