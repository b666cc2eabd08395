//! A database of every earlier schema version, with runs in it, opens as
//! the current version with every run kept and the new columns filled.

mod common;

use results_db::migrations::{current_version, STEPS};
use results_db::{Filter, ResultsDb};
use rusqlite::{params, Connection};

/// A database at `version`, built by the first `version` steps, holding the
/// suite fixture inserted as that version's schema has it.
fn database_at(version: i64, path: &std::path::Path) {
    let conn = Connection::open(path).unwrap();
    for step in &STEPS[..version as usize] {
        conn.execute_batch(step.sql).unwrap();
    }
    conn.execute_batch(&format!(
        "PRAGMA application_id = {}; PRAGMA user_version = {version};",
        results_db::APPLICATION_ID
    ))
    .unwrap();
    if version >= 1 {
        // Version 1's columns only: later ones must be filled by the
        // migration from the JSON.
        conn.execute(
            "INSERT INTO runs (kind, stored_unix_s, started_unix_s, content_hash, target_path,
                drive_model, host, mode, score, valid, tool_version, origin, result_json)
             VALUES ('replay', 1, 2, 'h', '/dev/zram0', NULL, 'host', 'realtime', 1.0, 1, '0.1.0', 'run', ?1)",
            params![common::fixture("suite-two.json")],
        )
        .unwrap();
    }
}

#[test]
fn every_earlier_version_migrates_keeping_its_runs() {
    assert!(current_version() >= 2);
    for version in 0..current_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.db");
        database_at(version, &path);
        let db = ResultsDb::open(&path).unwrap_or_else(|e| panic!("version {version}: {e}"));
        let v: i64 = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, current_version(), "from version {version}");
        let runs = db.list(&Filter::default()).unwrap();
        if version == 0 {
            assert!(runs.is_empty());
            continue;
        }
        assert_eq!(runs.len(), 1, "from version {version}");
        let run = db.get(runs[0].id).unwrap();
        assert_eq!(
            run.result_json.as_deref(),
            Some(common::fixture("suite-two.json").as_str())
        );
        // Filled from the stored JSON by the migration to version 2 (a
        // row of version 2 itself came with them).
        if version < 2 {
            let drive_key = run.drive_key.expect("drive key backfilled");
            assert_eq!(drive_key, "file tracemark-scratch.bin");
            assert!(run.trace_set.is_some(), "trace set backfilled");
        }
        // Every run of an earlier version is kept, none taken as removed.
        assert!(db
            .list(&Filter {
                removed: true,
                ..Filter::default()
            })
            .unwrap()
            .is_empty());
        // A new run lands beside it.
        db.import(&common::suite_variant(1), "variant").unwrap();
        assert_eq!(db.list(&Filter::default()).unwrap().len(), 2);
    }
}

#[test]
fn opening_twice_applies_no_step_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let db = ResultsDb::open(&path).unwrap();
    db.import(&common::fixture("suite-two.json"), "f").unwrap();
    drop(db);
    let db = ResultsDb::open(&path).unwrap();
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 1);
    db.migrate_to(current_version()).unwrap();
}

#[test]
fn a_newer_schema_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    drop(ResultsDb::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .execute_batch(&format!("PRAGMA user_version = {};", current_version() + 5))
        .unwrap();
    let err = refused(&path).to_string();
    assert!(
        err.contains(&format!("version {}", current_version() + 5)) && err.contains("newer"),
        "{err}"
    );
}

/// The error opening `path` gives (a panic when it opens).
fn refused(path: &std::path::Path) -> results_db::DbError {
    match ResultsDb::open(path) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => e,
    }
}
