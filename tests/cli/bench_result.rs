//! `bench/tm_result.py`, the one reader of result files for the bench
//! scripts, on a real result: a renamed field in the result schema fails
//! here rather than in a bench run hours long.

use crate::support::replay::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use trace_format::Op;

fn tm_result(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/tm_result.py");
    let mut child = Command::new("python3")
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or_default()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn words(out: &Output) -> Vec<String> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// A compressed replay of 64 reads to a scratch file; its result file.
fn one_replay(dir: &Path) -> (PathBuf, PathBuf) {
    let recs: Vec<_> = (0..64u64)
        .map(|i| rec(i * 100, Op::Read, i * 64 * KIB, 4 * KIB))
        .collect();
    let trace = dir.join("t.tmt");
    write_trace(&trace, "reads", &recs);
    let json = dir.join("run-1.json");
    let out = replay(
        dir,
        &[
            trace.to_str().unwrap(),
            "--target",
            dir.join("scratch.bin").to_str().unwrap(),
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--no-warmup",
            "--no-db",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success());
    (trace, json)
}

#[test]
fn the_bench_result_reader_reads_a_real_result() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, json) = one_replay(dir.path());
    let v = crate::support::read_json(&json);
    let t = &v["traces"][0];
    let path = json.to_str().unwrap();

    let got = words(&tm_result(
        &[
            path,
            "traces.0.ios",
            "replay_iops",
            "traces.0.score",
            "wait_share",
            "traces.0.nosuch?",
        ],
        None,
    ));
    assert_eq!(got[0], "64");
    let iops: f64 = got[1].parse().unwrap();
    let want = t["ios"].as_f64().unwrap() / t["playback_s"].as_f64().unwrap();
    assert!((iops - want).abs() <= 1e-6 * want, "{iops} vs {want}");
    assert_eq!(got[2].parse::<f64>().unwrap(), t["score"].as_f64().unwrap());
    // The share of the playback spent waiting for a CPU (over 1 on a
    // loaded machine: the waits of several I/Os overlap).
    let share: f64 = got[3].parse().unwrap();
    let wait = t["fidelity"]["cpu_wait_s"].as_f64().unwrap_or(0.0);
    let want = wait / t["playback_s"].as_f64().unwrap();
    assert!(
        (share - want).abs() <= 1e-9 * want.max(1.0),
        "{share} vs {want}"
    );
    assert_eq!(got[4], "nan");

    // A field that is not there (without ?) is an error naming it.
    let out = tm_result(&[path, "traces.0.nosuch"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("traces.0.nosuch"));

    // `tracemark info --json` on standard input.
    let info = crate::support::tracemark()
        .args(["info", "--json"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(info.status.success());
    assert_eq!(words(&tm_result(&["-", "ios"], Some(&info.stdout))), ["64"]);

    // repeatability.sh's table over two runs (the same file twice): no spread.
    std::fs::copy(&json, dir.path().join("run-2.json")).unwrap();
    let out = tm_result(&["runs", dir.path().to_str().unwrap(), "2"], None);
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    let score = format!("{:.0}", t["score"].as_f64().unwrap());
    assert!(
        table.contains(&format!(
            "| reads | {score} | {score} | {score} | 0.0 % | 0.0 % |"
        )),
        "{table}"
    );
    assert!(table.contains("| **suite** |"), "{table}");
}

#[test]
fn the_fresh_vs_filled_rows_and_ratios_come_from_a_real_result() {
    let dir = tempfile::tempdir().unwrap();
    let (_, json) = one_replay(dir.path());
    let v = crate::support::read_json(&json);
    let pass = v["traces"][0]["passes"].as_array().unwrap().last().unwrap();
    let score = pass["score"].as_f64().unwrap();
    // zram's mm_stat: orig, compr, mem_used, limit, max_used, same, compacted, huge
    let mm = "8192 4096 4096 0 4096 3 0 2";
    let out = tm_result(
        &[
            "fresh_row",
            json.to_str().unwrap(),
            "1",
            "fresh",
            "tm",
            "0.5",
            "7",
            mm,
        ],
        None,
    );
    let row = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
    assert_eq!(cells[..4], ["1", "fresh", "tm", "0.5"], "{row}");
    assert_eq!(cells[4], format!("{score:.0}"), "{row}");
    assert_eq!(cells[9], "2 / 2 / 3", "{row}");
    assert_eq!(cells[10], "7", "{row}");

    // Two rounds: the second's filled run scored half the fresh one.
    let filled = row.replacen("| fresh |", "| filled |", 1);
    let round2 = filled.replacen("| 1 |", "| 2 |", 1);
    let halved = row.replacen("| 1 |", "| 2 |", 1).replacen(
        &format!("| {score:.0} |"),
        &format!("| {:.0} |", (score / 2.0).round()),
        1,
    );
    let rows = dir.path().join("rows");
    std::fs::write(&rows, format!("{row}\n{filled}\n{halved}\n{round2}\n")).unwrap();
    let out = tm_result(&["fresh_ratios", rows.to_str().unwrap()], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let half = (score / 2.0).round() / score.round();
    assert!(
        text.contains(&format!("tm: fresh/filled by round: 1.00 {half:.2}")),
        "{text}"
    );
    assert!(text.contains("fresh above filled in 0 of 2"), "{text}");
}
