//! The results database from the command line: a replay stores its run and
//! says where, `results` lists, shows, imports (results of an earlier
//! version too), exports, labels and removes runs, and a database that is
//! not one (or not ours, or corrupt) gets one error line, before any replay.
//! Every test has a database of its own (`--db` or `XDG_DATA_HOME`).

use crate::support;
use crate::support::replay::{rec, write_trace, KIB, MIB};
use std::path::{Path, PathBuf};
use std::process::Output;
use trace_format::Op;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/tests/fixtures")
        .join(name)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `tracemark ARGS` with `XDG_DATA_HOME=data` in `dir`.
fn run_in(dir: &Path, data: &Path, args: &[&str]) -> Output {
    let out = support::tracemark()
        .current_dir(dir)
        .env("XDG_DATA_HOME", data)
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "tracemark {}: {}\n{}{}",
        args.join(" "),
        out.status,
        stdout(&out),
        stderr(&out)
    );
    out
}

/// A small trace of reads and writes.
fn trace(dir: &Path) -> PathBuf {
    let path = dir.join("t.tmt");
    let recs: Vec<_> = (0..64u64)
        .map(|i| {
            let op = if i % 4 == 0 { Op::Write } else { Op::Read };
            rec(i * 200, op, (i * 37 % 64) * MIB / 4, 64 * KIB)
        })
        .collect();
    write_trace(&path, "small", &recs);
    path
}

const QUICK: [&str; 5] = ["--mode", "compressed", "--passes", "2", "--no-warmup"];

#[test]
fn a_replay_is_stored_in_the_data_directory_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let t = trace(dir.path());
    let mut args = vec!["replay", t.to_str().unwrap()];
    args.extend(QUICK);
    let out = run_in(dir.path(), &data, &args);
    assert!(out.status.success());
    let db = data.join("tracemark/results.db");
    let text = stdout(&out);
    assert!(
        text.contains(&format!("result stored as run 1 in {}", db.display())),
        "{text}"
    );
    assert!(db.exists());
    // The identity lines of the text header.
    assert!(text.contains("filesystem: "), "{text}");
    assert!(
        text.contains("host: ") && text.contains("trace set "),
        "{text}"
    );

    let list = run_in(dir.path(), &data, &["results", "list"]);
    assert!(list.status.success());
    let list = stdout(&list);
    let row = list.lines().nth(1).expect("one run listed");
    assert!(row.trim_start().starts_with("1 "), "{list}");
    assert!(
        row.contains("replay") && row.contains("compressed"),
        "{list}"
    );
    assert!(row.contains("tracemark-scratch.bin"), "{list}");

    // Shown again from the database: the same table.
    let show = run_in(dir.path(), &data, &["results", "show", "1"]);
    let show = stdout(&show);
    let table_line = text.lines().find(|l| l.starts_with("small")).unwrap();
    assert!(show.contains(table_line), "{show}");
    // And the JSON stored whole.
    let json = run_in(dir.path(), &data, &["results", "show", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["schema_version"], 3);
    assert_eq!(v["traces"][0]["name"], "small");
    assert!(
        v["target"]["filesystem"]["fs_type"].is_string(),
        "{}",
        v["target"]
    );
    assert!(v["host"]["memory_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn no_db_stores_nothing_and_tracemark_db_moves_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let t = trace(dir.path());
    let mut args = vec!["replay", t.to_str().unwrap(), "--no-db"];
    args.extend(QUICK);
    let out = run_in(dir.path(), &data, &args);
    assert!(out.status.success());
    assert!(!stdout(&out).contains("stored"), "{}", stdout(&out));
    assert!(!data.exists(), "--no-db created {}", data.display());

    let elsewhere = dir.path().join("elsewhere.db");
    let mut args = vec!["replay", t.to_str().unwrap()];
    args.extend(QUICK);
    let out = support::tracemark()
        .current_dir(dir.path())
        .env("XDG_DATA_HOME", &data)
        .env("TRACEMARK_DB", &elsewhere)
        .args(&args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("in {}", elsewhere.display())));
    assert!(elsewhere.exists() && !data.exists());
}

#[test]
fn imported_results_of_an_earlier_version_are_listed_exported_labelled_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db_arg = db.to_str().unwrap();
    let (a, b) = (fixture("suite-two.json"), fixture("replay-zram.json"));
    let out = run_in(
        dir.path(),
        dir.path(),
        &[
            "results",
            "import",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--db",
            db_arg,
        ],
    );
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("suite-two.json: stored as run 1"), "{text}");
    assert!(text.contains("replay-zram.json: stored as run 2"), "{text}");
    // The same file again: recognised.
    let again = run_in(
        dir.path(),
        dir.path(),
        &["results", "import", a.to_str().unwrap(), "--db", db_arg],
    );
    assert!(stdout(&again).contains("already stored as run 1"));

    // Exported whole, byte for byte.
    let export = run_in(
        dir.path(),
        dir.path(),
        &["results", "export", "1", "--db", db_arg],
    );
    assert_eq!(export.stdout, std::fs::read(&a).unwrap());

    let label = run_in(
        dir.path(),
        dir.path(),
        &["results", "label", "2", "zram, new kernel", "--db", db_arg],
    );
    assert!(label.status.success());
    let list = stdout(&run_in(
        dir.path(),
        dir.path(),
        &["results", "list", "--label", "kernel", "--db", db_arg],
    ));
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.contains("zram, new kernel"), "{list}");

    // CSV: a header and a line per run, the label quoted.
    let csv = stdout(&run_in(
        dir.path(),
        dir.path(),
        &["results", "export", "--all", "--to", "csv", "--db", db_arg],
    ));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("id,kind,"));
    assert!(
        lines[2].starts_with("2,replay,") && lines[2].contains("\"zram, new kernel\""),
        "{csv}"
    );

    let rm = run_in(
        dir.path(),
        dir.path(),
        &["results", "rm", "1", "--db", db_arg],
    );
    assert!(rm.status.success());
    let gone = run_in(
        dir.path(),
        dir.path(),
        &["results", "show", "1", "--db", db_arg],
    );
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        stderr(&gone).contains("run 1 was removed (`tracemark results restore 1`"),
        "{}",
        stderr(&gone)
    );

    // A file that is not a result: named, nothing stored, exit 1.
    let bad = dir.path().join("notes.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    let out = run_in(
        dir.path(),
        dir.path(),
        &["results", "import", bad.to_str().unwrap(), "--db", db_arg],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("notes.json: line 1, column 12: not a tracemark result file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn removing_runs_is_all_or_none_and_undone_until_purged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let db_arg = db.to_str().unwrap();
    let files = ["suite-two.json", "replay-zram.json"].map(fixture);
    let results = |args: &[&str]| {
        let mut all = vec!["results"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--db", db_arg]);
        run_in(dir.path(), dir.path(), &all)
    };
    let listed = |extra: &[&str]| {
        let mut args = vec!["list"];
        args.extend_from_slice(extra);
        let out = results(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.parse::<i64>().ok())
            .collect::<Vec<_>>()
    };
    // Succeeds and says `text` on standard output.
    let says = |args: &[&str], text: &str| {
        let out = results(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).contains(text), "{args:?}: {}", stdout(&out));
    };
    // Fails (exit 1) and says `text` on standard error.
    let refused = |args: &[&str], text: &str| {
        let out = results(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(text), "{args:?}: {}", stderr(&out));
    };
    let import = results(&[
        "import",
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
    ]);
    assert!(import.status.success(), "{}", stderr(&import));
    assert_eq!(listed(&[]), vec![2, 1]);

    // One id that is not there: nothing is removed.
    refused(&["rm", "1", "2", "7"], "no run 7");
    assert_eq!(listed(&[]), vec![2, 1]);

    // Removed: gone from lists, exports and comparisons, kept aside.
    says(
        &["rm", "2", "2"],
        "removed run 2 (`tracemark results restore 2` brings it back)",
    );
    assert_eq!(listed(&[]), vec![1]);
    assert_eq!(listed(&["--removed"]), vec![2]);
    let csv = stdout(&results(&["export", "--all", "--to", "csv"]));
    assert_eq!(csv.lines().count(), 2, "{csv}");
    refused(&["compare", "1", "2"], "run 2 was removed");
    refused(&["rm", "2"], "run 2 was removed");
    refused(&["label", "2", "x"], "run 2 was removed");

    // Restored whole: the same result, byte for byte.
    says(&["restore", "2"], "restored run 2");
    assert_eq!(listed(&[]), vec![2, 1]);
    let export = results(&["export", "2"]);
    assert_eq!(export.stdout, std::fs::read(&files[1]).unwrap());
    // A label replaced is named, so a slip can be put back by hand.
    says(&["label", "2", "Drive A"], "run 2 labelled 'Drive A'");
    says(
        &["label", "2", "Drive B"],
        "run 2 labelled 'Drive B' (was 'Drive A')",
    );
    refused(&["restore", "2"], "run 2 is not removed");

    // Importing a removed run's file brings the run back under its id.
    assert!(results(&["rm", "2"]).status.success());
    says(
        &["import", files[1].to_str().unwrap()],
        "run 2, removed before, restored",
    );
    assert_eq!(listed(&[]), vec![2, 1]);

    // Purge deletes only removed runs, all or none.
    assert!(results(&["rm", "1"]).status.success());
    refused(&["purge", "1", "2"], "run 2 is not removed");
    assert_eq!(listed(&["--removed"]), vec![1]);
    says(&["purge", "--all"], "deleted run 1 for good");
    assert!(listed(&["--removed"]).is_empty());
    refused(&["show", "1"], "no run 1");
    assert_eq!(listed(&[]), vec![2]);
}

#[test]
fn bad_database_files_get_one_error_line_before_any_replay() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let text_file = dir.path().join("notes.db");
    std::fs::write(&text_file, "not a database at all\n".repeat(100)).unwrap();
    let foreign = dir.path().join("foreign.db");
    let c = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3; c = sqlite3.connect('{}'); c.execute('create table t (x)'); c.commit()",
            foreign.display()
        ))
        .status();
    assert!(
        c.is_ok_and(|s| s.success()),
        "python3 could not make an SQLite file"
    );
    for (db, says) in [
        (text_file.clone(), "is not an SQLite database"),
        (foreign.clone(), "another program"),
    ] {
        for args in [
            vec!["results", "list"],
            vec![
                "replay",
                t.to_str().unwrap(),
                "--mode",
                "compressed",
                "--passes",
                "1",
                "--no-warmup",
            ],
        ] {
            let mut all = args.clone();
            all.extend(["--db", db.to_str().unwrap()]);
            let out = run_in(dir.path(), dir.path(), &all);
            assert_eq!(out.status.code(), Some(1), "{all:?}");
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.starts_with("tracemark: error: ") && err.contains(says),
                "{err}"
            );
            assert!(!err.contains("panicked"));
            // Refused before replaying: no table, no scratch file.
            assert!(stdout(&out).is_empty(), "{}", stdout(&out));
        }
    }
    assert!(!dir.path().join("tracemark-scratch.bin").exists());
}
