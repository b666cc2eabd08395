//! `tracemark compare`: ratios from result files with known figures, flags
//! for results that are not comparable, missing traces, bad files.

use crate::support;
use crate::support::result_fixture::{result, write, Figures};
use std::path::Path;

fn compare(args: &[&Path], extra: &[&str]) -> (i32, String, String) {
    let out = support::tracemark()
        .arg("compare")
        .args(args)
        .args(extra)
        .output()
        .expect("run tracemark");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The cells of `row` in the table titled `title`: whitespace-separated,
/// with "value (ratio)" kept together.
fn row(output: &str, title: &str, row: &str) -> Vec<String> {
    let mut in_table = false;
    for line in output.lines() {
        if line.starts_with(title) {
            in_table = true;
            continue;
        }
        if in_table && line.trim().is_empty() {
            break;
        }
        if in_table && line.starts_with(row) {
            let rest = line[row.len()..].trim();
            let mut cells = Vec::new();
            let tokens: Vec<&str> = rest.split_whitespace().collect();
            let mut i = 0;
            while i < tokens.len() {
                if tokens.get(i + 1).is_some_and(|t| t.starts_with('(')) {
                    cells.push(format!("{} {}", tokens[i], tokens[i + 1]));
                    i += 2;
                } else {
                    cells.push(tokens[i].to_string());
                    i += 1;
                }
            }
            return cells;
        }
    }
    panic!("no row '{row}' in table '{title}':\n{output}");
}

fn alpha_beta() -> Vec<Figures> {
    let mut alpha = Figures::new("alpha", 1000.0, 200.0, 100.0);
    alpha.playback_s = 20.0;
    vec![alpha, Figures::new("beta", 500.0, 50.0, 200.0)]
}

#[test]
fn ratios_to_the_first_result() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.json",
        &result("realtime", "/dev/nvme0n1", Some("Fast NVMe"), &alpha_beta()),
    );
    let mut b_alpha = Figures::new("alpha", 1500.0, 100.0, 50.0);
    b_alpha.p99_read_us = 600.0; // vs 300 → 2.00x
    b_alpha.playback_s = 5.0; // vs 20 → 0.25x
    let b = write(
        dir.path(),
        "b.json",
        &result(
            "realtime",
            "/dev/sda",
            None,
            &[b_alpha, Figures::new("beta", 250.0, 40.0, 400.0)],
        ),
    );
    let (code, out, err) = compare(&[&a, &b], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("A = Fast NVMe (/dev/nvme0n1)"), "{out}");
    assert!(out.contains("B = /dev/sda"), "{out}");
    assert!(!out.contains("WARNING"), "{out}");
    assert_eq!(
        row(&out, "score", "alpha"),
        ["1000.0 (1.00x)", "1500.0 (1.50x)"]
    );
    assert_eq!(
        row(&out, "score", "beta"),
        ["500.0 (1.00x)", "250.0 (0.50x)"]
    );
    // Suite: geometric means sqrt(1000*500) = 707.1 and sqrt(1500*250) = 612.4.
    assert_eq!(
        row(&out, "score", "suite (geometric mean)"),
        ["707.1 (1.00x)", "612.4 (0.87x)"]
    );
    assert_eq!(
        row(&out, "bandwidth MB/s", "alpha"),
        ["200.00 (1.00x)", "100.00 (0.50x)"]
    );
    assert_eq!(
        row(&out, "access time µs", "beta"),
        ["200.0 (1.00x)", "400.0 (2.00x)"]
    );
    assert_eq!(
        row(&out, "p99 read latency µs", "alpha"),
        ["300.0 (1.00x)", "600.0 (2.00x)"]
    );
    assert_eq!(
        row(&out, "p99 write latency µs", "beta"),
        ["1000.0 (1.00x)", "2000.0 (2.00x)"]
    );
    assert_eq!(
        row(&out, "playback time s", "alpha"),
        ["20.000 (1.00x)", "5.000 (0.25x)"]
    );
    assert_eq!(
        row(&out, "playback time s", "suite (total)"),
        ["30.000 (1.00x)", "15.000 (0.50x)"]
    );

    // --label names the columns; the first column stays the reference.
    let (code, out, _) = compare(&[&b, &a], &["--label", "slow", "--label", "fast"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("A = slow") && out.contains("B = fast"),
        "{out}"
    );
    assert_eq!(
        row(&out, "score", "alpha"),
        ["1500.0 (1.00x)", "1000.0 (0.67x)"]
    );
}

#[test]
fn mismatched_modes_and_options_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.json",
        &result("realtime", "/dev/nvme0n1", None, &alpha_beta()),
    );
    let mut compressed = result("compressed", "/dev/sda", None, &alpha_beta());
    compressed["options"]["queue_depth"] = 4.into();
    let b = write(dir.path(), "b.json", &compressed);
    let (code, out, err) = compare(&[&a, &b], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("WARNING"), "{out}");
    assert!(
        out.contains("mode differs: /dev/sda has compressed, /dev/nvme0n1 has realtime"),
        "{out}"
    );
    assert!(out.contains("queue depth differs"), "{out}");
    assert!(out.contains("  B! = /dev/sda"), "{out}");
    // The marker is on the column heading of every table.
    let headings = out
        .lines()
        .filter(|l| l.starts_with("trace ") && l.trim_end().ends_with("B!"))
        .count();
    assert_eq!(headings, 6, "{out}");

    // Same options: no flag.
    let same = write(
        dir.path(),
        "c.json",
        &result("realtime", "/dev/sdb", None, &alpha_beta()),
    );
    let (_, out, _) = compare(&[&a, &same], &[]);
    assert!(!out.contains("WARNING") && !out.contains("B!"), "{out}");
}

#[test]
fn a_result_that_replayed_fua_and_preflush_writes_plain_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    // A result from before the replay honoured them has no count.
    let old = result("realtime", "/dev/sda", None, &alpha_beta());
    let a = write(dir.path(), "a.json", &old);
    let mut honoured = result("realtime", "/dev/sdb", None, &alpha_beta());
    honoured["traces"][0]["cache_flag_writes"] = 7.into();
    honoured["traces"][1]["cache_flag_writes"] = 0.into();
    let b = write(dir.path(), "b.json", &honoured);
    let (code, out, err) = compare(&[&a, &b], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "FUA and preflush writes differs: /dev/sdb has honoured (7 per pass) in alpha, \
             /dev/sda has replayed as plain writes in alpha"
        ),
        "{out}"
    );
    assert!(out.contains("  B! = /dev/sdb"), "{out}");
    // Where the trace has none, the older result compares as it did.
    honoured["traces"][0]["cache_flag_writes"] = 0.into();
    let c = write(dir.path(), "c.json", &honoured);
    let (_, out, _) = compare(&[&a, &c], &[]);
    assert!(!out.contains("WARNING") && !out.contains("B!"), "{out}");
}

#[test]
fn missing_traces_and_other_versions_of_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.json",
        &result("realtime", "/dev/nvme0n1", None, &alpha_beta()),
    );
    let mut alpha_v2 = Figures::new("alpha", 900.0, 180.0, 110.0);
    alpha_v2.records = 1200;
    let b = write(
        dir.path(),
        "b.json",
        &result(
            "realtime",
            "/dev/sda",
            None,
            &[alpha_v2, Figures::new("gamma", 300.0, 30.0, 300.0)],
        ),
    );
    let (code, out, err) = compare(&[&a, &b], &[]);
    assert_eq!(code, 0, "{err}");
    // beta only in A, gamma only in B.
    assert_eq!(row(&out, "score", "beta"), ["500.0 (1.00x)", "-"]);
    assert_eq!(row(&out, "score", "gamma"), ["-", "300.0"]);
    assert_eq!(row(&out, "bandwidth MB/s", "gamma"), ["-", "30.00"]);
    // alpha is another version of the trace in B.
    assert_eq!(
        row(&out, "score", "alpha"),
        ["1000.0 (1.00x)", "900.0 (0.90x)≠"]
    );
    assert!(
        out.contains(
            "trace 'alpha' in /dev/sda is not the one in /dev/nvme0n1: 1200 records vs 1000"
        ),
        "{out}"
    );
    assert!(out.contains("replayed different sets of traces"), "{out}");
}

#[test]
fn a_file_that_is_not_a_result_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.json",
        &result("realtime", "/dev/nvme0n1", None, &alpha_beta()),
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        "{\n  \"tool\": {\"name\": \"tracemark\", \"version\": \"0.1.0\"},\n  \"host\": 7\n}\n",
    )
    .unwrap();
    let (code, out, err) = compare(&[&a, &bad], &[]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.json: line 3, column 11"), "{err}");
    assert!(err.contains("invalid type"), "{err}");
    assert!(!err.contains(" at line "), "{err}");
    let (code, _, err) = compare(&[&dir.path().join("none.json")], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("none.json: cannot read"), "{err}");
    let (code, _, err) = compare(&[&a], &["--label", "x", "--label", "y"]);
    assert_eq!(code, 1);
    assert!(err.contains("2 labels for 1 result files"), "{err}");
}

#[test]
fn traces_of_the_same_name_in_one_result_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let twice = |second: f64| {
        let mut other = Figures::new("alpha", second, 10.0, 100.0);
        other.records = 77;
        vec![Figures::new("alpha", 1000.0, 200.0, 100.0), other]
    };
    let a = write(
        dir.path(),
        "a.json",
        &result("realtime", "/dev/a", None, &twice(400.0)),
    );
    let b = write(
        dir.path(),
        "b.json",
        &result("realtime", "/dev/b", None, &twice(100.0)),
    );
    let (code, out, err) = compare(&[&a, &b], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("WARNING"), "{out}");
    assert_eq!(
        row(&out, "score", "alpha #2"),
        ["400.0 (1.00x)", "100.0 (0.25x)"]
    );
    assert_eq!(
        row(&out, "score", "alpha "),
        ["1000.0 (1.00x)", "1000.0 (1.00x)"]
    );
}

/// Three drives whose recorded identities are equal (one host, one path,
/// size and model, no serial): a fast, a SATA-SSD-rate and a hard-disk-rate
/// one, each with a tight interval of its own.
fn look_alikes(dir: &Path, serials: [Option<&str>; 3]) -> Vec<std::path::PathBuf> {
    let figures = [
        (8526.2, 7778.0, 9274.0),
        (2799.0, 2735.0, 2863.0),
        (34.0, 33.9, 34.1),
    ];
    figures
        .iter()
        .zip(serials)
        .enumerate()
        .map(|(i, ((score, low, high), serial))| {
            let mut v = result(
                "realtime",
                "/dev/loop5",
                Some("loop device over /tmp/medium.img"),
                &[Figures::new("v2-T5", *score, 100.0, 100.0)],
            );
            v["traces"][0]["score_ci"] = serde_json::json!({"low": low, "high": high});
            v["suite"]["score_ci"] = serde_json::json!({"low": low, "high": high});
            v["target"]["drive"] = serde_json::json!({
                "name": "loop5", "model": "loop device over /tmp/medium.img",
                "capacity_bytes": 500_000_000_000u64, "logical_block_size": 512,
                "physical_block_size": 512, "rotational": false
            });
            if let Some(s) = serial {
                v["target"]["drive"]["serial"] = s.into();
            }
            write(dir, &format!("{}.json", ["F", "S", "H"][i]), &v)
        })
        .collect()
}

#[test]
fn drives_that_only_look_alike_are_never_pooled_into_not_significant() {
    let dir = tempfile::tempdir().unwrap();
    let files = look_alikes(dir.path(), [None, None, None]);
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out, err) = compare(&paths, &[]);
    assert_eq!(code, 0, "{err}");
    for r in ["v2-T5", "suite (geometric mean)"] {
        let cells = row(&out, "score", r);
        assert_eq!(cells.len(), 3, "{out}");
        assert!(!cells.iter().any(|c| c == "n.s."), "{r}: {cells:?}\n{out}");
    }
    assert!(!out.contains("pooled"), "{out}");
}

#[test]
fn runs_of_one_drive_by_serial_are_pooled_and_named_and_no_pool_keeps_them_apart() {
    let dir = tempfile::tempdir().unwrap();
    // S and H carry one serial (one kept, one hashed: the same drive).
    let hashed = "sha256:1bf1c3aab5236eab"; // hash_serial("SER1")
    let files = look_alikes(dir.path(), [Some("OTHER"), Some("SER1"), Some(hashed)]);
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out, err) = compare(&paths, &[]);
    assert_eq!(code, 0, "{err}");
    let pooled = out
        .lines()
        .skip_while(|l| !l.starts_with("pooled as runs of one drive"))
        .nth(1)
        .unwrap_or_else(|| panic!("no pooled section:\n{out}"));
    assert!(
        pooled.contains("B (") && pooled.contains("C (") && !pooled.contains("A ("),
        "{pooled}"
    );
    assert!(pooled.contains(&format!("serial {hashed}")), "{pooled}");
    // Pooled, the two runs' spread covers the difference.
    assert!(
        row(&out, "score", "v2-T5").contains(&"n.s.".to_string()),
        "{out}"
    );

    let (code, out, _) = compare(&paths, &["--no-pool"]);
    assert_eq!(code, 0);
    assert!(!out.contains("pooled"), "{out}");
    assert_eq!(row(&out, "score", "v2-T5").len(), 3, "{out}");
}

#[test]
fn predicted_task_times_are_compared_in_seconds_with_ratio_and_n_s() {
    let dir = tempfile::tempdir().unwrap();
    let task = |s: f64| {
        serde_json::json!({"predicted_s": s, "model": "blocking",
        "models": {"blocking": s}, "captured_s": 10.0, "span": "task marks"})
    };
    let mut files = Vec::new();
    // alpha: 10 s vs 20 s, tight passes; beta: 5.0 vs 5.1 s, passes 4-6 s.
    for (i, (alpha, beta)) in [
        ((10.0, [9.9, 10.1]), (5.0, [4.0, 6.0])),
        ((20.0, [19.9, 20.1]), (5.1, [4.1, 6.1])),
    ]
    .into_iter()
    .enumerate()
    {
        let mut v = result("realtime", &format!("/dev/sd{i}"), None, &alpha_beta());
        for (t, (mean, passes)) in [alpha, beta].into_iter().enumerate() {
            let pass = v["traces"][t]["passes"][0].clone();
            v["traces"][t]["passes"] = serde_json::json!([pass, pass]);
            for (p, s) in passes.iter().enumerate() {
                v["traces"][t]["passes"][p]["task"] = task(*s);
            }
            v["traces"][t]["task"] = task(mean);
        }
        files.push(write(dir.path(), &format!("{i}.json"), &v));
    }
    let (code, out, err) = compare(&[&files[0], &files[1]], &[]);
    assert_eq!(code, 0, "{err}");
    let t = "predicted task time s";
    assert_eq!(row(&out, t, "alpha"), ["10.000 (1.00x)", "20.000 (2.00x)"]);
    assert_eq!(
        row(&out, t, "beta"),
        ["5.000 (1.00x)", "5.100 (1.02x)", "n.s."]
    );
    assert_eq!(
        row(&out, t, "suite (total)"),
        ["15.000 (1.00x)", "25.100 (1.67x)"]
    );
    assert!(
        out.contains("geometric mean over the traces: B 1.43x"),
        "{out}"
    );
    // Without task times there is no such table.
    let a = write(
        dir.path(),
        "plain.json",
        &result("realtime", "/dev/x", None, &alpha_beta()),
    );
    let (_, out, _) = compare(&[&a, &a], &[]);
    assert!(!out.contains(t), "{out}");
}
