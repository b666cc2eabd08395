//! Storing, importing (duplicates by content), listing with filters,
//! labels and removal.

mod common;

use results_db::{Filter, ResultsDb, RunKind, Stored};

fn open() -> (tempfile::TempDir, ResultsDb) {
    let dir = tempfile::tempdir().unwrap();
    let db = ResultsDb::open(&dir.path().join("results.db")).unwrap();
    (dir, db)
}

#[test]
fn results_of_an_earlier_version_import_with_their_columns() {
    let (_d, db) = open();
    for name in [
        "replay-file.json",
        "replay-zram.json",
        "suite-two.json",
        "consistency.json",
    ] {
        let text = common::fixture(name);
        let stored = db.import(&text, name).unwrap();
        let run = db.get(stored.id()).unwrap();
        assert_eq!(
            run.result_json.as_deref(),
            Some(text.as_str()),
            "{name}: stored whole"
        );
        assert_eq!(run.origin, name);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            run.target_path,
            v["target"]["path"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(run.started_unix_s, v["started_unix_s"].as_u64().unwrap());
        if name == "consistency.json" {
            assert_eq!(run.kind, RunKind::Consistency);
        } else {
            assert_eq!(run.kind, RunKind::Replay);
            let score = v["suite"]["score"].as_f64().unwrap();
            assert_eq!(run.score, Some(score), "{name}");
        }
    }
}

#[test]
fn the_same_result_is_recognised_by_content_not_by_text() {
    let (_d, db) = open();
    let text = common::fixture("suite-two.json");
    let first = db.import(&text, "a.json").unwrap();
    assert!(matches!(first, Stored::New(_)));
    // Same content, other key order and white space.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let compact = serde_json::to_string(&v).unwrap();
    assert_eq!(
        db.import(&compact, "b.json").unwrap(),
        Stored::Duplicate(first.id())
    );
    // Another result is new.
    assert!(matches!(
        db.import(&common::suite_variant(3), "c.json").unwrap(),
        Stored::New(_)
    ));
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 2);
}

#[test]
fn list_is_newest_first_and_filters_by_drive_date_and_label() {
    let (_d, db) = open();
    let ids: Vec<i64> = (0..5)
        .map(|n| {
            db.import(&common::suite_variant(n * 100), "v")
                .unwrap()
                .id()
        })
        .collect();
    let zram = db
        .import(&common::fixture("replay-zram.json"), "z")
        .unwrap()
        .id();
    let all = db.list(&Filter::default()).unwrap();
    let starts: Vec<u64> = all.iter().map(|r| r.started_unix_s).collect();
    let mut sorted = starts.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(starts, sorted, "newest first");

    db.set_label(ids[2], Some("Drive B, new firmware")).unwrap();
    let labelled = db
        .list(&Filter {
            label: Some("firmware".into()),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(
        labelled.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![ids[2]]
    );
    assert_eq!(labelled[0].label.as_deref(), Some("Drive B, new firmware"));

    let since = db
        .list(&Filter {
            since_unix_s: Some(1_700_000_000 + 300),
            ..Filter::default()
        })
        .unwrap();
    assert!(since.iter().all(|r| r.started_unix_s >= 1_700_000_300));
    assert!(since.iter().any(|r| r.id == ids[4]) && !since.iter().any(|r| r.id == ids[0]));

    let zram_path = db.get(zram).unwrap().target_path;
    let by_drive = db
        .list(&Filter {
            drive: Some(zram_path.clone()),
            ..Filter::default()
        })
        .unwrap();
    assert!(by_drive.iter().all(|r| r.target_path.contains(&zram_path)));
    assert!(by_drive.iter().any(|r| r.id == zram));

    // `%` and `_` in a filter are plain characters.
    assert!(db
        .list(&Filter {
            label: Some("%".into()),
            ..Filter::default()
        })
        .unwrap()
        .is_empty());
}

#[test]
fn remove_and_label_name_a_missing_run() {
    let (_d, db) = open();
    let id = db
        .import(&common::fixture("suite-two.json"), "a")
        .unwrap()
        .id();
    db.remove(&[id]).unwrap();
    let err = db.get(id).err().unwrap().to_string();
    assert!(err.contains(&format!("run {id} was removed")), "{err}");
    let err = db.remove(&[id]).err().unwrap().to_string();
    assert!(err.contains(&format!("run {id} was removed")), "{err}");
    db.purge(&[id]).unwrap();
    let err = db.get(id).err().unwrap().to_string();
    assert!(err.contains(&format!("no run {id}")), "{err}");
    let err = db.remove(&[id]).err().unwrap().to_string();
    assert!(err.contains(&format!("no run {id}")), "{err}");
    assert!(db.set_label(id + 7, Some("x")).is_err());
    // Ids are never reused.
    let next = db.import(&common::suite_variant(1), "b").unwrap().id();
    assert!(next > id);
}

#[test]
fn text_that_is_not_a_result_is_refused_naming_it() {
    let (_d, db) = open();
    for (text, what) in [
        ("{", "not a tracemark result file"),
        ("[1,2]", "not a JSON object"),
        ("{\"a\":1}", "missing field `tool`"),
    ] {
        let err = db.import(text, "bad.json").err().unwrap().to_string();
        assert!(err.contains("bad.json") && err.contains(what), "{err}");
    }
    assert!(db.list(&Filter::default()).unwrap().is_empty());
}

#[test]
fn a_read_transaction_sees_one_state_while_another_program_removes_runs() {
    let (d, db) = open();
    let ids: Vec<i64> = (0..3)
        .map(|n| db.import(&common::suite_variant(n), "v").unwrap().id())
        .collect();
    let other = ResultsDb::open(&d.path().join("results.db")).unwrap();
    // As the leaderboard reads: the list, then each run; `results rm` runs
    // in between.
    let read: Result<Vec<String>, results_db::DbError> = db.read(|db| {
        let rows = db.list(&Filter::default())?;
        for &id in &ids {
            other.remove(&[id]).unwrap();
        }
        rows.iter()
            .map(|r| Ok(db.get(r.id)?.result_json.unwrap_or_default()))
            .collect()
    });
    assert_eq!(read.unwrap().len(), 3);
    // Outside the transaction the removals are seen.
    assert!(db.list(&Filter::default()).unwrap().is_empty());
}

/// A purged run's bytes are gone from the database file and its log, not
/// only from its listings: its label, stored in no other run, is found in
/// neither file afterwards (it is in them while the run is only removed).
#[test]
fn a_purged_run_leaves_no_bytes_in_the_database_files() {
    let (dir, db) = open();
    let keep = db.import(&common::suite_variant(1), "kept").unwrap().id();
    let id = db
        .import(&common::fixture("suite-two.json"), "a")
        .unwrap()
        .id();
    let secret = "label-of-a-run-to-purge-7f3a9c";
    db.set_label(id, Some(secret)).unwrap();
    let files = || {
        ["results.db", "results.db-wal"]
            .iter()
            .filter_map(|n| std::fs::read(dir.path().join(n)).ok())
            .collect::<Vec<_>>()
    };
    let holds = |bytes: &[u8]| bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
    db.remove(&[id]).unwrap();
    assert!(files().iter().any(|f| holds(f)), "a removed run is kept");
    db.purge(&[id]).unwrap();
    for f in files() {
        assert!(!holds(&f), "the purged run's label is still in the file");
    }
    assert!(db.get(keep).is_ok());
    drop(db);
    assert!(ResultsDb::open(&dir.path().join("results.db"))
        .unwrap()
        .get(keep)
        .is_ok());
}
