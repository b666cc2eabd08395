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
