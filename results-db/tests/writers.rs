//! Two processes storing at once both land; a writer killed mid-way loses
//! none of the runs it had been told were stored. The writers are this
//! test binary run again as `writer_child` (an ignored test that only acts
//! when its environment says so).

mod common;

use results_db::{Filter, ResultsDb};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const DB_ENV: &str = "RESULTS_DB_TEST_WRITER_DB";
const COUNT_ENV: &str = "RESULTS_DB_TEST_WRITER_COUNT";
const FIRST_ENV: &str = "RESULTS_DB_TEST_WRITER_FIRST";

/// Stores COUNT variants (numbered from FIRST) into DB, printing each id
/// once stored.
#[test]
#[ignore = "run by the other tests as a child process"]
fn writer_child() {
    let Some(db) = std::env::var_os(DB_ENV) else {
        return;
    };
    let count: u64 = std::env::var(COUNT_ENV).unwrap().parse().unwrap();
    let first: u64 = std::env::var(FIRST_ENV).unwrap().parse().unwrap();
    let db = ResultsDb::open(std::path::Path::new(&db)).unwrap();
    for n in first..first + count {
        let stored = db.import(&common::suite_variant(n), "writer").unwrap();
        println!("stored {}", stored.id());
    }
}

fn writer(db: &std::path::Path, first: u64, count: u64) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "writer_child",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(DB_ENV, db)
    .env(COUNT_ENV, count.to_string())
    .env(FIRST_ENV, first.to_string())
    .stdout(Stdio::piped());
    c
}

#[test]
fn two_concurrent_writers_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let a = writer(&path, 0, 40).spawn().unwrap();
    let b = writer(&path, 1000, 40).spawn().unwrap();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success(), "{a:?} {b:?}");
    let db = ResultsDb::open(&path).unwrap();
    let runs = db.list(&Filter::default()).unwrap();
    assert_eq!(runs.len(), 80);
    let mut ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 80);
    db.check_integrity().unwrap();
}

#[test]
fn a_killed_writer_loses_nothing_it_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut child = writer(&path, 0, 100_000).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut reported = Vec::new();
    while reported.len() < 25 {
        let line = lines.next().expect("the writer ended early").unwrap();
        if let Some(id) = line.strip_prefix("stored ") {
            reported.push(id.parse::<i64>().unwrap());
        }
    }
    // SIGKILL: no destructor, no checkpoint, possibly mid-transaction.
    child.kill().unwrap();
    child.wait().unwrap();
    for line in lines.map_while(Result::ok) {
        if let Some(id) = line.strip_prefix("stored ") {
            reported.push(id.parse().unwrap());
        }
    }
    let db = ResultsDb::open(&path).unwrap();
    db.check_integrity().unwrap();
    for id in &reported {
        let run = db
            .get(*id)
            .unwrap_or_else(|e| panic!("run {id} reported stored: {e}"));
        assert!(run.result_json.is_some());
    }
    // And the database takes new runs.
    db.import(&common::suite_variant(999_999), "after").unwrap();
}

/// Many programs opening one database for the first time at once (a suite's
/// replays starting together) all open it: none sees "database is locked".
#[test]
fn many_first_opens_at_once_all_succeed() {
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.db");
        let start = std::sync::Arc::new(std::sync::Barrier::new(12));
        let openers: Vec<_> = (0..12)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    ResultsDb::open(&path)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        for opener in openers {
            let opened = opener.join().unwrap();
            assert!(opened.is_ok(), "round {round}: {opened:?}");
        }
    }
}
