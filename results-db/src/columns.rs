//! A run's columns: what the database keeps beside each result, and the one
//! table ([`RUN_COLUMNS`]) that reading, storing and both exports follow.

use crate::error::DbError;
use results::parse::AnyResult;

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

    pub(crate) fn parse(s: &str) -> RunKind {
        match s {
            "suite" => RunKind::Suite,
            "consistency" => RunKind::Consistency,
            _ => RunKind::Replay,
        }
    }
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

    /// The columns of a result's text, read by [`results::parse::any`].
    pub fn of_json(json: &str, origin: &str) -> Result<Columns, DbError> {
        Ok(Columns::of(&results::parse::any(json, origin)?))
    }

    /// The row these columns are stored as: `origin` (`run`, or the file it
    /// was imported from) and the time it is stored; no id or label yet.
    pub fn into_row(self, origin: &str, stored_unix_s: u64) -> RunRow {
        RunRow {
            id: 0,
            kind: self.kind,
            stored_unix_s,
            started_unix_s: self.started_unix_s,
            label: None,
            target_path: self.target_path,
            drive_model: self.drive_model,
            drive_key: Some(self.drive_key),
            host: self.host,
            mode: self.mode,
            suite_name: self.suite_name,
            trace_set: self.trace_set,
            score: self.score,
            score_low: self.score_low,
            score_high: self.score_high,
            valid: self.valid,
            tool_version: self.tool_version,
            origin: origin.to_string(),
            result_json: None,
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

/// How a run column is typed in each output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// A whole number: SQL INTEGER, CSV digits, Parquet required INT64.
    Int,
    /// Seconds since the epoch: SQL INTEGER, CSV digits, Parquet required
    /// INT64 TIMESTAMP(MILLIS, UTC) of the same instant. The words name
    /// the time in an error (`start time`).
    Time(&'static str),
    /// SQL TEXT NOT NULL, CSV text, Parquet required STRING.
    Text,
    /// SQL TEXT, CSV text or empty, Parquet optional STRING.
    OptionalText,
    /// SQL REAL, CSV decimal or empty, Parquet optional DOUBLE.
    OptionalNumber,
    /// SQL INTEGER 0 or 1, CSV `true` or `false`, Parquet BOOLEAN.
    Bool,
}

/// One run's value in one column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    Int(i64),
    Time(u64),
    Text(&'a str),
    OptionalText(Option<&'a str>),
    OptionalNumber(Option<f64>),
    Bool(bool),
}

impl Cell<'_> {
    /// As a CSV field before quoting: none is empty.
    pub fn csv_text(self) -> String {
        match self {
            Cell::Int(v) => v.to_string(),
            Cell::Time(v) => v.to_string(),
            Cell::Text(s) => s.to_string(),
            Cell::OptionalText(s) => s.unwrap_or_default().to_string(),
            Cell::OptionalNumber(v) => v.map(|x| x.to_string()).unwrap_or_default(),
            Cell::Bool(b) => b.to_string(),
        }
    }

    /// As SQLite stores it.
    pub fn sql_value(self) -> rusqlite::types::Value {
        use rusqlite::types::Value;
        match self {
            Cell::Int(v) => Value::Integer(v),
            Cell::Time(v) => Value::Integer(v.min(i64::MAX as u64) as i64),
            Cell::Text(s) => Value::Text(s.to_string()),
            Cell::OptionalText(s) => s.map_or(Value::Null, |s| Value::Text(s.to_string())),
            Cell::OptionalNumber(v) => v.map_or(Value::Null, Value::Real),
            Cell::Bool(b) => Value::Integer(i64::from(b)),
        }
    }
}

/// One column of a run as the database keeps it and the exports write it.
pub struct RunColumn {
    /// The SQL column, the CSV header's field, the Parquet field.
    pub name: &'static str,
    pub kind: ColumnType,
    /// Written when a run is stored (the id is SQLite's, the label is set
    /// later).
    pub stored: bool,
    pub value: for<'a> fn(&'a RunRow) -> Cell<'a>,
}

/// Every column of a run, in the exports' order: `results list`'s reads,
/// storing a run, the CSV and the Parquet export all follow this table (the
/// SQL schema itself is built by [`crate::migrations`], whose steps never
/// change once shipped; a test checks each column is there).
pub const RUN_COLUMNS: &[RunColumn] = &[
    RunColumn {
        name: "id",
        kind: ColumnType::Int,
        stored: false,
        value: |r| Cell::Int(r.id),
    },
    RunColumn {
        name: "kind",
        kind: ColumnType::Text,
        stored: true,
        value: |r| Cell::Text(r.kind.name()),
    },
    RunColumn {
        name: "started_unix_s",
        kind: ColumnType::Time("start time"),
        stored: true,
        value: |r| Cell::Time(r.started_unix_s),
    },
    RunColumn {
        name: "stored_unix_s",
        kind: ColumnType::Time("storage time"),
        stored: true,
        value: |r| Cell::Time(r.stored_unix_s),
    },
    RunColumn {
        name: "label",
        kind: ColumnType::OptionalText,
        stored: false,
        value: |r| Cell::OptionalText(r.label.as_deref()),
    },
    RunColumn {
        name: "drive_model",
        kind: ColumnType::OptionalText,
        stored: true,
        value: |r| Cell::OptionalText(r.drive_model.as_deref()),
    },
    RunColumn {
        name: "drive_key",
        kind: ColumnType::OptionalText,
        stored: true,
        value: |r| Cell::OptionalText(r.drive_key.as_deref()),
    },
    RunColumn {
        name: "target_path",
        kind: ColumnType::Text,
        stored: true,
        value: |r| Cell::Text(&r.target_path),
    },
    RunColumn {
        name: "host",
        kind: ColumnType::Text,
        stored: true,
        value: |r| Cell::Text(&r.host),
    },
    RunColumn {
        name: "suite_name",
        kind: ColumnType::OptionalText,
        stored: true,
        value: |r| Cell::OptionalText(r.suite_name.as_deref()),
    },
    RunColumn {
        name: "trace_set",
        kind: ColumnType::OptionalText,
        stored: true,
        value: |r| Cell::OptionalText(r.trace_set.as_deref()),
    },
    RunColumn {
        name: "mode",
        kind: ColumnType::OptionalText,
        stored: true,
        value: |r| Cell::OptionalText(r.mode.as_deref()),
    },
    RunColumn {
        name: "score",
        kind: ColumnType::OptionalNumber,
        stored: true,
        value: |r| Cell::OptionalNumber(r.score),
    },
    RunColumn {
        name: "score_low",
        kind: ColumnType::OptionalNumber,
        stored: true,
        value: |r| Cell::OptionalNumber(r.score_low),
    },
    RunColumn {
        name: "score_high",
        kind: ColumnType::OptionalNumber,
        stored: true,
        value: |r| Cell::OptionalNumber(r.score_high),
    },
    RunColumn {
        name: "valid",
        kind: ColumnType::Bool,
        stored: true,
        value: |r| Cell::Bool(r.valid),
    },
    RunColumn {
        name: "tool_version",
        kind: ColumnType::Text,
        stored: true,
        value: |r| Cell::Text(&r.tool_version),
    },
    RunColumn {
        name: "origin",
        kind: ColumnType::Text,
        stored: true,
        value: |r| Cell::Text(&r.origin),
    },
];

impl RunRow {
    /// A row as SQLite returns it for `SELECT` of [`RUN_COLUMNS`] (and
    /// `result_json` when `with_json`), each read by its column's name.
    pub(crate) fn from_sql(r: &rusqlite::Row<'_>, with_json: bool) -> rusqlite::Result<RunRow> {
        let kind: String = r.get("kind")?;
        let seconds =
            |name: &str| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(name)?.max(0) as u64) };
        Ok(RunRow {
            id: r.get("id")?,
            kind: RunKind::parse(&kind),
            stored_unix_s: seconds("stored_unix_s")?,
            started_unix_s: seconds("started_unix_s")?,
            label: r.get("label")?,
            target_path: r.get("target_path")?,
            drive_model: r.get("drive_model")?,
            drive_key: r.get("drive_key")?,
            host: r.get("host")?,
            mode: r.get("mode")?,
            suite_name: r.get("suite_name")?,
            trace_set: r.get("trace_set")?,
            score: r.get("score")?,
            score_low: r.get("score_low")?,
            score_high: r.get("score_high")?,
            valid: r.get("valid")?,
            tool_version: r.get("tool_version")?,
            origin: r.get("origin")?,
            result_json: if with_json {
                r.get("result_json")?
            } else {
                None
            },
        })
    }
}

/// The names of [`RUN_COLUMNS`] as a `SELECT` list.
pub(crate) fn select_list() -> String {
    RUN_COLUMNS
        .iter()
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}
