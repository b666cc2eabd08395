//! One table of a run's columns ([`results_db::RUN_COLUMNS`]) feeds the
//! database's reads and writes and both exports: every column is in the SQL
//! schema with its type, in the CSV header in order, and a stored run's
//! value of each column reaches its CSV field.

mod common;

use results_db::export::{columns, csv_text};
use results_db::{ColumnType, Filter, ResultsDb, RUN_COLUMNS};
use rusqlite::Connection;

#[test]
fn every_run_column_is_in_the_sql_schema_with_its_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    drop(ResultsDb::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    let mut q = conn.prepare("PRAGMA table_info(runs)").unwrap();
    let table: Vec<(String, String, bool)> = q
        .query_map([], |r| Ok((r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for c in RUN_COLUMNS {
        let Some((_, ty, not_null)) = table.iter().find(|(n, _, _)| n == c.name) else {
            panic!("{} is not a column of the runs table: {table:?}", c.name);
        };
        let (want, required) = match c.kind {
            ColumnType::Int | ColumnType::Time(_) => ("INTEGER", true),
            ColumnType::Bool => ("INTEGER", true),
            ColumnType::Text => ("TEXT", true),
            ColumnType::OptionalText => ("TEXT", false),
            ColumnType::OptionalNumber => ("REAL", false),
        };
        assert_eq!(ty, want, "{}", c.name);
        // The id is the primary key (never null, though not declared so).
        if c.name != "id" {
            assert_eq!(*not_null, required, "{}: NOT NULL", c.name);
        }
    }
}

#[test]
fn the_csv_header_is_the_run_columns_in_order() {
    let names: Vec<&str> = RUN_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(columns(), names);
    let text = csv_text(&[]);
    assert_eq!(text, format!("{}\n", names.join(",")));
}

/// A run stored, labelled and read back: each column's CSV field is the
/// value SQLite holds for it.
#[test]
fn each_stored_column_reaches_its_csv_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let db = ResultsDb::open(&path).unwrap();
    let id = db
        .import(&common::fixture("suite-b.json"), "suite-b.json")
        .unwrap()
        .id();
    db.set_label(id, Some("lab")).unwrap();
    let rows = db.list(&Filter::default()).unwrap();
    let text = csv_text(&rows);
    let line: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(line.len(), RUN_COLUMNS.len(), "{text}");
    let conn = Connection::open(&path).unwrap();
    for (c, field) in RUN_COLUMNS.iter().zip(line) {
        let sql: rusqlite::types::Value = conn
            .query_row(
                &format!("SELECT {} FROM runs WHERE id = ?1", c.name),
                [id],
                |r| r.get(0),
            )
            .unwrap();
        use rusqlite::types::Value;
        let want = match (&sql, c.kind) {
            (Value::Null, _) => String::new(),
            (Value::Integer(v), ColumnType::Bool) => (*v != 0).to_string(),
            (Value::Integer(v), _) => v.to_string(),
            (Value::Real(v), _) => v.to_string(),
            (Value::Text(s), _) => s.clone(),
            (Value::Blob(_), _) => panic!("{}: a blob", c.name),
        };
        assert_eq!(field, want, "{}: {text}", c.name);
    }
    // Not every column empty: the run's own values came through.
    assert!(
        text.contains(",lab,") && text.contains(",suite-b.json"),
        "{text}"
    );
}
