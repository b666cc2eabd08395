//! A fleet replay on one machine without privileges: ranks replaying their
//! shards of a converted multi-volume trace onto scratch files, `merge`
//! adding them up, and the errors of bad shard requests and failed ranks.

use crate::support::fleet::{converted_trace, volume_name, Row, VOLUMES};
use crate::support::{read_json, tracemark};
use std::path::Path;
use std::process::Output;

const LAUNCHER_VARS: [&str; 7] = [
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "JOB_COMPLETION_INDEX",
];

fn run(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = tracemark();
    for v in LAUNCHER_VARS {
        cmd.env_remove(v);
    }
    let out = cmd.current_dir(dir).args(args).output().unwrap();
    eprintln!(
        "tracemark {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `tracemark replay TRACE --shard SPEC` to scratch files, compressed, one pass.
fn rank_args<'a>(trace: &'a str, shard: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "replay",
        trace,
        "--shard",
        shard,
        "--mode",
        "compressed",
        "--passes",
        "1",
        "--no-warmup",
        "--precondition",
        "skip",
        "--cpu-idle",
        "os",
        "--json",
        "r{rank}.json",
    ];
    a.extend_from_slice(extra);
    a
}

fn rows() -> Vec<Row> {
    crate::support::fleet::alibaba_rows(1200, 200)
}

#[test]
fn bad_shard_requests_get_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let trace = converted_trace(dir.path(), &rows());
    let trace = trace.to_str().unwrap();
    // Refused while the command line is read (clap's usage error, exit 2).
    let out = run(dir.path(), &["replay", trace, "--shard", "4/4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.lines()
            .next()
            .unwrap_or("")
            .contains("--shard 4/4: the rank must be below the number of ranks"),
        "{err}"
    );
    // Refused once the trace or the environment is read (exit 1).
    let cases: [(&[&str], &str); 4] = [
        (
            &["replay", trace, "--shard", "0/9"],
            "the trace has 8 volume(s) with I/O but the fleet has 9 ranks",
        ),
        (
            &["replay", trace, "--shard", "auto"],
            "--shard auto: no launcher's rank in the environment",
        ),
        (
            &["replay", trace, trace, "--shard", "0/2"],
            "--shard replays one trace",
        ),
        (
            &["replay", trace, "--shard", "0/2", "--idle-cap", "1ms"],
            "--idle-cap with --shard",
        ),
    ];
    for (args, want) in cases {
        let out = run(dir.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line: {err}"
        );
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn ranks_on_files_split_the_volumes_and_merge_adds_them_up() {
    let dir = tempfile::tempdir().unwrap();
    let rows = rows();
    let trace = converted_trace(dir.path(), &rows);
    let trace = trace.to_str().unwrap();
    for shard in ["0/3", "1/3", "2/3"] {
        let out = run(
            dir.path(),
            &rank_args(trace, shard, &["--target", "t{rank}.bin"]),
        );
        assert!(out.status.success());
    }
    for r in 0..3 {
        assert!(
            dir.path().join(format!("t{r}.bin")).exists(),
            "rank {r}'s target"
        );
    }
    let out = run(
        dir.path(),
        &["merge", "r2.json", "r0.json", "r1.json", "-o", "fleet.json"],
    );
    assert_eq!(out.status.code(), Some(0));
    let fleet = read_json(&dir.path().join("fleet.json"));
    let ranks: Vec<serde_json::Value> = (0..3)
        .map(|r| read_json(&dir.path().join(format!("r{r}.json"))))
        .collect();
    // Every volume on exactly one rank, with exactly its rows.
    let mut seen = Vec::new();
    for (r, result) in ranks.iter().enumerate() {
        let volumes: Vec<String> = result["fleet"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert!(!volumes.is_empty(), "rank {r} has volumes");
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|row| volumes.contains(&volume_name(row.volume)))
            .collect();
        let pass = &result["traces"][0]["passes"][0];
        assert_eq!(pass["ios"].as_u64(), Some(mine.len() as u64), "rank {r}");
        let bytes: u64 = mine.iter().map(|row| row.len).sum();
        let moved = pass["read_bytes"].as_u64().unwrap() + pass["write_bytes"].as_u64().unwrap();
        assert_eq!(moved, bytes, "rank {r}");
        seen.extend(volumes);
    }
    seen.sort();
    let mut all: Vec<String> = VOLUMES.iter().map(|&v| volume_name(v)).collect();
    all.sort();
    assert_eq!(seen, all, "each volume on exactly one rank");
    // The fleet result is the ranks added up.
    let sum = |key: &str| -> u64 {
        ranks
            .iter()
            .map(|r| r["traces"][0]["passes"][0][key].as_u64().unwrap())
            .sum()
    };
    assert_eq!(fleet["ios"].as_u64(), Some(rows.len() as u64));
    for key in ["ios", "read_bytes", "write_bytes", "errors"] {
        assert_eq!(fleet[key].as_u64(), Some(sum(key)), "{key}");
    }
    assert_eq!(fleet["valid"], true);
    assert_eq!(fleet["per_rank"].as_array().unwrap().len(), 3);
    assert_eq!(fleet["per_volume"].as_array().unwrap().len(), VOLUMES.len());
    let hist = fleet["ops"]["read"]["latency_hdr"].as_str().unwrap();
    let merged = results::hdr::decode(hist).unwrap();
    let reads: u64 = rows
        .iter()
        .filter(|r| r.op == trace_format::Op::Read)
        .count() as u64;
    assert_eq!(
        merged.len(),
        reads,
        "every read's latency in the merged histogram"
    );
}

#[test]
fn a_rank_that_cannot_open_its_target_or_is_missing_invalidates_the_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let trace = converted_trace(dir.path(), &rows());
    let trace = trace.to_str().unwrap();
    assert!(run(
        dir.path(),
        &rank_args(trace, "0/2", &["--target", "t{rank}.bin"])
    )
    .status
    .success());
    // Only rank 1's target is impossible: its folder does not exist.
    let out = run(
        dir.path(),
        &rank_args(trace, "1/2", &["--target", "no-such-dir/t{rank}.bin"]),
    );
    assert_eq!(out.status.code(), Some(1));
    let failure = read_json(&dir.path().join("r1.json"));
    assert_eq!(failure["failed_rank"]["rank"], 1);
    let out = run(
        dir.path(),
        &["merge", "r0.json", "r1.json", "-o", "fleet.json"],
    );
    assert_eq!(out.status.code(), Some(2), "not valid");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("NOT VALID: rank 1 (r1.json): failed on"),
        "{stdout}"
    );
    assert!(stdout.contains("no-such-dir/t1.bin"), "{stdout}");
    let fleet = read_json(&dir.path().join("fleet.json"));
    assert_eq!(fleet["valid"], false);
    assert_eq!(fleet["failed_ranks"][0]["rank"], 1);
    // A rank that died without a word: named as missing.
    let out = run(dir.path(), &["merge", "r0.json"]);
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("NOT VALID: rank 1: no result among the inputs"),
        "{stdout}"
    );
}

#[test]
fn a_start_already_past_makes_the_ranks_result_not_valid() {
    let dir = tempfile::tempdir().unwrap();
    let trace = converted_trace(dir.path(), &rows());
    let trace = trace.to_str().unwrap();
    let out = run(
        dir.path(),
        &rank_args(
            trace,
            "0/2",
            &[
                "--target",
                "t{rank}.bin",
                "--start-at",
                "2020-01-01T00:00:00Z",
            ],
        ),
    );
    assert_eq!(out.status.code(), Some(2));
    let r = read_json(&dir.path().join("r0.json"));
    assert_eq!(r["valid"], false);
    let reason = r["invalid_reasons"][0].as_str().unwrap();
    assert!(reason.contains("after --start-at"), "{reason}");
    assert!(r["fleet"]["start_error_ns"].as_i64().is_some());
    assert_eq!(r["fleet"]["start_at_unix_ns"], 1_577_836_800_000_000_000u64);
}
