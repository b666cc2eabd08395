//! `tracemark results export --to parquet`: the CSV's columns, typed, read
//! back by DuckDB (from PyPI, installed by `.ci/run`) with the values the
//! CSV export gives; without the `parquet` feature, one error saying how to
//! build it in. Each test has a database of its own (`--db`).

use crate::support;
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/tests/fixtures")
        .join(name)
}

fn run(db: &Path, args: &[&str]) -> Output {
    let out = support::tracemark()
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    eprintln!(
        "tracemark {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A database holding two runs: suite-a (no drive model) and suite-b (a
/// model with a terminal escape in it).
fn two_runs(dir: &Path) -> PathBuf {
    let db = dir.join("runs.db");
    let (a, b) = (fixture("suite-a.json"), fixture("suite-b.json"));
    let out = run(
        &db,
        &[
            "results",
            "import",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
    );
    assert!(out.status.success());
    db
}

/// One CSV line's fields (quoted fields unquoted).
#[cfg(feature = "parquet")]
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            _ => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(feature = "parquet")]
#[test]
fn results_export_to_parquet_reads_in_duckdb_as_the_csv_says() {
    let have = std::process::Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        support::skip("python3 cannot import duckdb (pip install duckdb)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = two_runs(dir.path());
    let pq = dir.path().join("runs.parquet");
    let out = run(
        &db,
        &[
            "results",
            "export",
            "--all",
            "--to",
            "parquet",
            "-o",
            pq.to_str().unwrap(),
        ],
    );
    assert!(out.status.success());
    let csv = run(&db, &["results", "export", "--all", "--to", "csv"]);
    assert!(csv.status.success());
    let csv = String::from_utf8(csv.stdout).unwrap();
    let header = csv_fields(csv.lines().next().unwrap());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let csv_rows: Vec<Vec<String>> = csv.lines().skip(1).map(csv_fields).collect();
    assert_eq!(csv_rows.len(), 2, "{csv}");

    let script = "import duckdb, json, sys
path = sys.argv[1].replace(\"'\", \"''\")
con = duckdb.connect()
rows = con.execute(f\"select id, epoch(started_unix_s)::bigint, drive_model, score, valid, \
typeof(id), typeof(started_unix_s), typeof(score), typeof(valid) from read_parquet('{path}') order by id\").fetchall()
cols = [d[0] for d in con.execute(f\"describe select * from read_parquet('{path}')\").fetchall()]
print(json.dumps({'rows': rows, 'columns': cols}))";
    let read = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&pq)
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    // The same columns as the CSV, in its order.
    let columns: Vec<&str> = got["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(columns, header, "{got}");
    // Both from the one table of run columns.
    let names: Vec<&str> = results_db::RUN_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(columns, names, "{got}");
    let rows = got["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{got}");
    for (row, line) in rows.iter().zip(&csv_rows) {
        assert_eq!(row[0].as_i64().unwrap().to_string(), line[col("id")]);
        assert_eq!(
            row[1].as_i64().unwrap().to_string(),
            line[col("started_unix_s")],
            "the start as a timestamp, the same instant"
        );
        assert_eq!(row[2].as_str().unwrap_or(""), line[col("drive_model")]);
        let csv_score: f64 = line[col("score")].parse().unwrap();
        assert_eq!(row[3].as_f64().unwrap(), csv_score, "{got}");
        assert_eq!(row[4].as_bool().unwrap().to_string(), line[col("valid")]);
        assert_eq!(row[5], "BIGINT");
        assert!(row[6].as_str().unwrap().starts_with("TIMESTAMP"), "{got}");
        assert_eq!(row[7], "DOUBLE");
        assert_eq!(row[8], "BOOLEAN");
    }
    // The fixtures' own figures came through: suite-b's model (with its
    // escape) and no model for suite-a (null, not an empty string).
    assert!(rows[0][2].is_null(), "{got}");
    assert_eq!(rows[1][2], "Drive \u{1b}[31mB");
    assert!(rows[0][3].as_f64().unwrap() > 200.0);

    // Parquet needs a file to write.
    let out = run(&db, &["results", "export", "--all", "--to", "parquet"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o FILE.parquet"));
}

#[cfg(not(feature = "parquet"))]
#[test]
fn results_export_to_parquet_without_the_feature_says_how_to_build_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = two_runs(dir.path());
    let pq = dir.path().join("runs.parquet");
    for args in [
        vec!["results", "export", "--all", "--to", "parquet"],
        vec![
            "results",
            "export",
            "1",
            "--to",
            "parquet",
            "-o",
            pq.to_str().unwrap(),
        ],
    ] {
        let out = run(&db, &args);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("tracemark: error: ") && err.contains("--features parquet"),
            "{err}"
        );
    }
    assert!(!pq.exists());
}
