//! Every reader of result files judges them alike: `results import`,
//! `compare`, `results show` and the leaderboard refuse what the parser
//! refuses (a key given twice, a newer schema version) and judge validity
//! from the figures, not from a `valid` key a file may lack.

use crate::support;
use crate::support::result_fixture::{result, write, Figures};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn tracemark(db: &Path, args: &[&str]) -> Output {
    let out = support::tracemark()
        .args(args)
        .env("TRACEMARK_DB", db)
        .output()
        .expect("run tracemark");
    eprintln!(
        "tracemark {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A result whose writes failed, written as an older version would: no
/// `valid` or `invalid_reasons` keys, the errors only in the figures.
fn failed_writes(model: &str, score: f64) -> Value {
    let mut v = result(
        "compressed",
        "/dev/sdz",
        Some(model),
        &[Figures::new("alpha", score, 900.0, 20.0)],
    );
    let t = &mut v["traces"][0];
    t["errors"]["write"] = 17.into();
    t["passes"][0]["errors"] = 17.into();
    t["passes"][0]["ops"]["write"]["errors"] = 17.into();
    assert!(t.get("valid").is_none());
    assert!(v.get("valid").is_none());
    v
}

#[test]
fn an_import_without_validity_keys_whose_writes_failed_is_never_ranked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let good = result(
        "compressed",
        "/dev/sdy",
        Some("Good Drive"),
        &[Figures::new("alpha", 1000.0, 200.0, 100.0)],
    );
    let good = write(dir.path(), "good.json", &good);
    let bad = write(
        dir.path(),
        "bad.json",
        &failed_writes("Failing Drive", 9000.0),
    );
    let out = tracemark(
        &db,
        &[
            "results",
            "import",
            good.to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));

    let list = text(&tracemark(&db, &["results", "list"]));
    let bad_line = list
        .lines()
        .find(|l| l.contains("Failing Drive"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(bad_line.ends_with("not valid"), "{list}");

    let out = tracemark(&db, &["results", "leaderboard"]);
    assert!(out.status.success(), "{}", text(&out));
    let board = text(&out);
    let ranked: Vec<&str> = board
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(ranked.len(), 1, "{board}");
    assert!(ranked[0].contains("Good Drive"), "{board}");
    assert!(
        board.contains("not ranked") && board.contains("I/Os failed on the device"),
        "{board}"
    );

    // `results show` and `compare` judge it the same way.
    let show = text(&tracemark(&db, &["results", "show", "2"]));
    assert!(
        show.contains("INVALID") || show.contains("not valid"),
        "{show}"
    );
    let out = tracemark(
        &db,
        &["compare", good.to_str().unwrap(), bad.to_str().unwrap()],
    );
    assert!(
        text(&out).contains("is not a valid result"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_key_given_twice_is_refused_by_import_and_compare_alike() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let v = result(
        "compressed",
        "/dev/sdy",
        Some("Twice"),
        &[Figures::new("alpha", 1000.0, 200.0, 100.0)],
    );
    // A second "score" in a trace, after the first: serde alone keeps one.
    let json = serde_json::to_string_pretty(&v).unwrap().replacen(
        "\"score\": 1000.0,",
        "\"score\": 1000.0,\n      \"score\": 99999.0,",
        1,
    );
    assert_eq!(json.matches("99999.0").count(), 1);
    let file = dir.path().join("twice.json");
    std::fs::write(&file, &json).unwrap();
    // Duplicates inside a map (no struct to catch them) are refused too.
    let map_twice = serde_json::to_string_pretty(&v).unwrap().replacen(
        "\"write\": 0",
        "\"write\": 0, \"write\": 0",
        1,
    );
    let map_file = dir.path().join("map-twice.json");
    std::fs::write(&map_file, &map_twice).unwrap();

    for f in [&file, &map_file] {
        let out = tracemark(&db, &["results", "import", f.to_str().unwrap()]);
        assert!(!out.status.success());
        assert!(text(&out).contains("is given twice"), "{}", text(&out));
        let out = tracemark(&db, &["compare", f.to_str().unwrap()]);
        assert!(!out.status.success());
        assert!(text(&out).contains("is given twice"), "{}", text(&out));
    }
    assert!(text(&tracemark(&db, &["results", "list"])).contains("no runs"));
}

#[test]
fn a_result_of_a_newer_schema_version_is_refused_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut v = result(
        "compressed",
        "/dev/sdy",
        Some("Future"),
        &[Figures::new("alpha", 1000.0, 200.0, 100.0)],
    );
    v["schema_version"] = 99.into();
    let file = write(dir.path(), "future.json", &v);
    for args in [
        vec!["results", "import", file.to_str().unwrap()],
        vec!["compare", file.to_str().unwrap()],
    ] {
        let out = tracemark(&db, &args);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains("schema version 99, newer than this tracemark's"),
            "{}",
            text(&out)
        );
    }
    assert!(text(&tracemark(&db, &["results", "list"])).contains("no runs"));
}

#[test]
fn runs_with_other_settings_are_ranked_on_separate_boards_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut files = Vec::new();
    for (i, cap) in [Value::Null, 10_000_000.into()].into_iter().enumerate() {
        let mut v = result(
            "realtime",
            &format!("/dev/sd{}", ["x", "y"][i]),
            Some(["Capped Drive", "Other Drive"][i]),
            &[Figures::new("alpha", 1000.0 * (i + 1) as f64, 200.0, 100.0)],
        );
        v["options"]["idle_cap"] = cap;
        files.push(write(dir.path(), &format!("{i}.json"), &v));
    }
    let mut args = vec!["results", "import"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    assert!(tracemark(&db, &args).status.success());
    let out = tracemark(&db, &["results", "leaderboard"]);
    assert!(out.status.success());
    let board = text(&out);
    let settings: Vec<&str> = board
        .lines()
        .filter(|l| l.starts_with("settings: "))
        .collect();
    assert_eq!(settings.len(), 2, "{board}");
    assert!(
        settings.iter().any(|l| l.contains("idle cap none"))
            && settings.iter().any(|l| l.contains("idle cap 10 ms")),
        "{board}"
    );
    assert!(board.contains(": 1 drives"), "{board}");
    assert!(!board.contains(": 2 drives"), "{board}");
    assert!(board.contains("2 boards"), "{board}");
}

#[test]
fn the_leaderboard_shows_each_drives_predicted_task_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut v = result(
        "realtime",
        "/dev/sdx",
        Some("Timed Drive"),
        &[Figures::new("alpha", 1000.0, 200.0, 100.0)],
    );
    v["traces"][0]["task"] = serde_json::json!({"predicted_s": 12.25, "model": "blocking",
        "models": {"blocking": 12.25}, "captured_s": 10.0, "span": "task marks"});
    let file = write(dir.path(), "t.json", &v);
    assert!(
        tracemark(&db, &["results", "import", file.to_str().unwrap()])
            .status
            .success()
    );
    let board = text(&tracemark(&db, &["results", "leaderboard"]));
    assert!(board.contains("task s"), "{board}");
    let line = board
        .lines()
        .find(|l| l.contains("Timed Drive"))
        .unwrap_or_else(|| panic!("{board}"));
    assert!(line.contains("12.250"), "{board}");
}
