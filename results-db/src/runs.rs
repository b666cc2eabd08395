//! Runs in the database: storing a result (whole, plus its columns),
//! listing with filters, reading one back, labels, removal.

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
}

impl Stored {
    pub fn id(self) -> i64 {
        match self {
            Stored::New(id) | Stored::Duplicate(id) => id,
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
}

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
            let existing: Option<i64> = tx
                .query_row(
                    "SELECT id FROM runs WHERE content_hash = ?1",
                    [&hash],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(id) = existing {
                return Ok(Stored::Duplicate(id));
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
        let mut sql = format!("SELECT {} FROM runs WHERE 1", select_list());
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
                    "SELECT {}, result_json FROM runs WHERE id = ?1",
                    select_list()
                ),
                [id],
                |r| RunRow::from_sql(r, true),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or(DbError::NoSuchRun(id))
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

    /// Removes run `id`.
    pub fn remove(&self, id: i64) -> Result<(), DbError> {
        let n = self
            .conn()
            .execute("DELETE FROM runs WHERE id = ?1", [id])
            .map_err(|e| self.err(e))?;
        if n == 0 {
            return Err(DbError::NoSuchRun(id));
        }
        Ok(())
    }

    /// Sets (or with None, clears) run `id`'s label.
    pub fn set_label(&self, id: i64, label: Option<&str>) -> Result<(), DbError> {
        let n = self
            .conn()
            .execute(
                "UPDATE runs SET label = ?2 WHERE id = ?1",
                params![id, label],
            )
            .map_err(|e| self.err(e))?;
        if n == 0 {
            return Err(DbError::NoSuchRun(id));
        }
        Ok(())
    }
}
