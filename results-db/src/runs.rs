//! Runs in the database: storing a result (whole, plus its columns),
//! listing with filters, reading one back, labels, removal.

use crate::{DbError, ResultsDb};
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use sha2::{Digest, Sha256};

/// What produced a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    Replay,
    Suite,
    Consistency,
}

impl RunKind {
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Replay => "replay",
            RunKind::Suite => "suite",
            RunKind::Consistency => "consistency",
        }
    }

    fn parse(s: &str) -> RunKind {
        match s {
            "suite" => RunKind::Suite,
            "consistency" => RunKind::Consistency,
            _ => RunKind::Replay,
        }
    }
}

pub use results::parse::AnyResult;

/// Parses a result's text with [`results::parse::any`], the reader every
/// command shares: what `compare` refuses is never stored or ranked, and a
/// run's validity is judged from its data. `origin` names the text.
pub fn parse(json: &str, origin: &str) -> Result<AnyResult, DbError> {
    Ok(results::parse::any(json, origin)?)
}

/// The indexed columns of a run, from its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns {
    pub kind: RunKind,
    pub started_unix_s: u64,
    pub target_path: String,
    pub drive_model: Option<String>,
    pub drive_key: String,
    pub host: String,
    pub mode: Option<String>,
    pub suite_name: Option<String>,
    pub trace_set: Option<String>,
    pub score: Option<f64>,
    pub score_low: Option<f64>,
    pub score_high: Option<f64>,
    pub valid: bool,
    pub tool_version: String,
}

impl Columns {
    pub fn of(result: &AnyResult) -> Columns {
        match result {
            AnyResult::Suite(r) => Columns {
                kind: if r.suite_name.is_some() {
                    RunKind::Suite
                } else {
                    RunKind::Replay
                },
                started_unix_s: r.started_unix_s,
                target_path: r.target.path.clone(),
                drive_model: r
                    .target
                    .drive_identity()
                    .and_then(|d| d.model.clone())
                    .or_else(|| r.target.model.clone()),
                drive_key: r.target.drive_key(),
                host: r.host.hostname.clone(),
                mode: Some(r.mode().to_string()),
                suite_name: r.suite_name.clone(),
                trace_set: r.trace_set_hash(),
                score: r.suite.map(|s| s.score),
                score_low: r.suite.and_then(|s| s.score_ci).map(|c| c.low),
                score_high: r.suite.and_then(|s| s.score_ci).map(|c| c.high),
                // The one judge, from the data: an imported file's own
                // `valid` key is not taken on trust.
                valid: results::validity::judge(r).valid,
                tool_version: r.tool.version.clone(),
            },
            AnyResult::Consistency(r) => Columns {
                kind: RunKind::Consistency,
                started_unix_s: r.started_unix_s,
                target_path: r.target.path.clone(),
                drive_model: r
                    .target
                    .drive_identity()
                    .and_then(|d| d.model.clone())
                    .or_else(|| r.target.model.clone()),
                drive_key: r.target.drive_key(),
                host: r.host.hostname.clone(),
                mode: None,
                suite_name: None,
                trace_set: None,
                // The steady state's score is the test's figure.
                score: r
                    .rounds
                    .iter()
                    .rev()
                    .find(|x| x.phase == results::consistency::Phase::Steady)
                    .map(|x| x.score),
                score_low: None,
                score_high: None,
                valid: !r.interrupted,
                tool_version: r.tool.version.clone(),
            },
        }
    }

    pub fn of_json(json: &str, origin: &str) -> Result<Columns, DbError> {
        Ok(Columns::of(&parse(json, origin)?))
    }
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

/// A stored run's columns (and its JSON when read with [`ResultsDb::get`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub kind: RunKind,
    pub stored_unix_s: u64,
    pub started_unix_s: u64,
    pub label: Option<String>,
    pub target_path: String,
    pub drive_model: Option<String>,
    pub drive_key: Option<String>,
    pub host: String,
    pub mode: Option<String>,
    pub suite_name: Option<String>,
    pub trace_set: Option<String>,
    pub score: Option<f64>,
    pub score_low: Option<f64>,
    pub score_high: Option<f64>,
    pub valid: bool,
    pub tool_version: String,
    pub origin: String,
    pub result_json: Option<String>,
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

const ROW_COLUMNS: &str = "id, kind, stored_unix_s, started_unix_s, label, target_path, drive_model, drive_key, host, mode, suite_name, trace_set, score, score_low, score_high, valid, tool_version, origin";

fn row(r: &rusqlite::Row<'_>, with_json: bool) -> rusqlite::Result<RunRow> {
    let kind: String = r.get(1)?;
    Ok(RunRow {
        id: r.get(0)?,
        kind: RunKind::parse(&kind),
        stored_unix_s: r.get::<_, i64>(2)?.max(0) as u64,
        started_unix_s: r.get::<_, i64>(3)?.max(0) as u64,
        label: r.get(4)?,
        target_path: r.get(5)?,
        drive_model: r.get(6)?,
        drive_key: r.get(7)?,
        host: r.get(8)?,
        mode: r.get(9)?,
        suite_name: r.get(10)?,
        trace_set: r.get(11)?,
        score: r.get(12)?,
        score_low: r.get(13)?,
        score_high: r.get(14)?,
        valid: r.get(15)?,
        tool_version: r.get(16)?,
        origin: r.get(17)?,
        result_json: if with_json { r.get(18)? } else { None },
    })
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
        let c = Columns::of(result);
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
            tx.execute(
                "INSERT INTO runs (kind, stored_unix_s, started_unix_s, content_hash, target_path,
                    drive_model, drive_key, host, mode, suite_name, trace_set, score, score_low,
                    score_high, valid, tool_version, origin, result_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                params![
                    c.kind.name(),
                    now_unix_s(),
                    c.started_unix_s as i64,
                    hash,
                    c.target_path,
                    c.drive_model,
                    c.drive_key,
                    c.host,
                    c.mode,
                    c.suite_name,
                    c.trace_set,
                    c.score,
                    c.score_low,
                    c.score_high,
                    c.valid,
                    c.tool_version,
                    origin,
                    json
                ],
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
        let mut sql = format!("SELECT {ROW_COLUMNS} FROM runs WHERE 1");
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
            let rows = q.query_map(refs.as_slice(), |r| row(r, false))?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// Run `id` with its result JSON.
    pub fn get(&self, id: i64) -> Result<RunRow, DbError> {
        self.conn()
            .query_row(
                &format!("SELECT {ROW_COLUMNS}, result_json FROM runs WHERE id = ?1"),
                [id],
                |r| row(r, true),
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
