//! `tracemark calibrate`: a trace calibrated with a replay of it on its
//! capture drive carries that replay's predicted task time, and later
//! replays predict the untraced time plus their difference from it; a result
//! of anything else is refused and the trace left as it was.

use crate::support::replay::*;
use crate::support::{read_json, tracemark};
use replayer::calibration::{calibrate, Accept, CalibrationProblem};
use std::fs;
use std::path::Path;
use trace_format::{DependencyModel, IoRecord, Nanos, TraceFile};

const UNTRACED_NS: u64 = 80_000_000;

/// A task reading in a chain, its done mark and its untraced time.
pub(crate) fn write_marked_trace(path: &Path, reads: u64) -> Vec<IoRecord> {
    crate::support::replay::write_marked_trace(path, reads, UNTRACED_NS)
}

fn records(path: &Path) -> Vec<IoRecord> {
    TraceFile::open(path)
        .unwrap()
        .records()
        .map(|r| r.unwrap())
        .collect()
}

/// Replays `trace` on the scratch file for `passes` passes with `extra`
/// options, its result written to `json` in `dir`: the report and the
/// result.
fn replay_passes(
    dir: &Path,
    trace: &str,
    passes: &str,
    extra: &[&str],
    json: &str,
) -> (String, serde_json::Value) {
    let base = [trace, "--passes", passes, "--no-warmup", "--json", json];
    let args = [&base[..], extra, &["--target", "scratch.bin"]].concat();
    let out = replay(dir, &args);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (stdout, read_json(&dir.join(json)))
}

/// Two passes of `trace`: the result.
fn replay_json(dir: &Path, trace: &str, json: &str) -> serde_json::Value {
    replay_passes(dir, trace, "2", &[], json).1
}

/// One pass of chain.tmt with `extra` options: the report and the result.
fn replay_once(dir: &Path, extra: &[&str], json: &str) -> (String, serde_json::Value) {
    replay_passes(dir, "chain.tmt", "1", extra, json)
}

/// Runs `tracemark calibrate ARGS... --accept-cpu-wait` in `dir`: the
/// replays these tests calibrate from run beside other tests, and one that
/// waited for a CPU would be refused (tested on its own below).
fn calibrate_cli(dir: &Path, args: &[&str]) -> std::process::Output {
    calibrate_cli_strict(dir, &[args, &["--accept-cpu-wait"]].concat())
}

/// [`calibrate_cli`], which must succeed: its standard output.
fn calibrate_ok(dir: &Path, args: &[&str]) -> String {
    let out = calibrate_cli(dir, args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `tracemark calibrate ARGS...` in `dir`.
fn calibrate_cli_strict(dir: &Path, args: &[&str]) -> std::process::Output {
    tracemark()
        .current_dir(dir)
        .arg("calibrate")
        .args(args)
        .output()
        .unwrap()
}

/// What the library says of calibrating `trace` with `result` (both in
/// `dir`): it must refuse.
fn refusal(dir: &Path, trace: &str, result: &str) -> replayer::calibration::CalibrationError {
    refusal_taking(dir, trace, result, Accept::default())
}

/// As [`refusal`], taking what `accept` says.
fn refusal_taking(
    dir: &Path,
    trace: &str,
    result: &str,
    accept: Accept,
) -> replayer::calibration::CalibrationError {
    let loaded = results::compare::load_result(&dir.join(result)).unwrap();
    let err = calibrate(
        &dir.join(trace),
        &[(&loaded, &dir.join(result))],
        &dir.join("out.tmt"),
        accept,
    )
    .expect_err("a refusal");
    assert!(!dir.join("out.tmt").exists(), "nothing written");
    err
}

fn models(task: &serde_json::Value, key: &str) -> Vec<(String, f64)> {
    task[key]
        .as_object()
        .unwrap_or_else(|| panic!("task.{key} is missing: {task}"))
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect()
}

#[test]
fn a_calibrated_trace_predicts_the_untraced_time_plus_the_difference_from_the_calibration_replay() {
    let dir = tempfile::tempdir().unwrap();
    let original = write_marked_trace(&dir.path().join("chain.tmt"), 20);
    let first = replay_json(dir.path(), "chain.tmt", "first.json");
    let task = &first["traces"][0]["task"];
    assert!(
        task.get("uncalibrated").is_none(),
        "not calibrated yet: {task}"
    );
    let on_capture_drive = models(task, "models");

    let stdout = calibrate_ok(
        dir.path(),
        &["chain.tmt", "--from", "first.json", "-o", "calibrated.tmt"],
    );
    assert!(stdout.contains("calibrated.tmt: calibrated"), "{stdout}");
    let calibrated = dir.path().join("calibrated.tmt");
    assert_eq!(records(&calibrated), original, "the records are kept");
    let marks = TraceFile::open(&calibrated).unwrap().footer().tail.task;
    assert_eq!(marks.untraced, Some(Nanos(UNTRACED_NS)));
    let ns = |name: &str| {
        let s = on_capture_drive.iter().find(|(k, _)| k == name).unwrap().1;
        Some(Nanos((s * 1e9).round() as u64))
    };
    for model in DependencyModel::ALL {
        assert_eq!(marks.capture_drive.get(model), ns(model.name()));
    }
    info_shows_the_task(dir.path(), "chain.tmt", None);
    info_shows_the_task(dir.path(), "calibrated.tmt", Some(&marks));

    // The next replay: per model, untraced + its own uncalibrated figure -
    // the calibration replay's.
    let second = replay_json(dir.path(), "calibrated.tmt", "second.json");
    let task = &second["traces"][0]["task"];
    let now = models(task, "models");
    let before = models(task, "uncalibrated");
    for ((model, predicted), (_, uncalibrated)) in now.iter().zip(&before) {
        let at_capture = on_capture_drive.iter().find(|(k, _)| k == model).unwrap().1;
        // (never below zero: on a loaded machine the calibration replay
        // can be slower than the next by more than the untraced time)
        let expected = (UNTRACED_NS as f64 / 1e9 + uncalibrated - at_capture).max(0.0);
        assert!(
            (predicted - expected).abs() < 5e-9,
            "{model}: predicted {predicted} s, expected {expected} s"
        );
    }
    let log = fs::read_to_string(dir.path().join("second.json")).unwrap();
    assert!(log.contains("\"uncalibrated\""));

    // Calibrating again replaces the earlier calibration (from the second
    // replay's uncalibrated figures, not its calibrated ones).
    let stdout = calibrate_ok(dir.path(), &["calibrated.tmt", "--from", "second.json"]);
    assert!(stdout.contains("earlier calibration replaced"));
    let again = TraceFile::open(&calibrated).unwrap().footer().tail.task;
    let blocking_before = before.iter().find(|(k, _)| k == "blocking").unwrap().1;
    assert_eq!(
        again.capture_drive.get(DependencyModel::Blocking),
        Some(Nanos((blocking_before * 1e9).round() as u64))
    );
    let file = TraceFile::open(&calibrated).unwrap();
    assert!(
        file.footer().tail.notes.is_empty(),
        "the calibration is in the task section, not in the notes"
    );
}

/// A trace whose busiest thread ran longer than any drive's waits: every
/// prediction is held at that CPU time, the JSON says what it held up, and
/// a calibration from it stores the model's own figure, not the floor.
#[test]
fn the_cpu_floor_holds_the_prediction_and_a_calibration_keeps_the_models_figure() {
    let dir = tempfile::tempdir().unwrap();
    let floor_ns = 10 * UNTRACED_NS;
    let cpu = trace_format::TaskCpu {
        busiest_thread: Nanos(floor_ns),
        total: Nanos(floor_ns + 1),
        threads: 2,
    };
    crate::support::replay::write_marked_trace_with_cpu(
        &dir.path().join("chain.tmt"),
        20,
        UNTRACED_NS,
        Some(cpu),
    );
    let (report, first) = replay_passes(dir.path(), "chain.tmt", "2", &[], "first.json");
    assert!(
        report.contains("held at its busiest thread's CPU time at capture, 0.800 s"),
        "{report}"
    );
    let task = &first["traces"][0]["task"];
    let floor_s = floor_ns as f64 / 1e9;
    assert_eq!(task["cpu_floor_s"].as_f64(), Some(floor_s), "{task}");
    for (model, s) in models(task, "models") {
        assert!((s - floor_s).abs() < 1e-9, "{model} held at the floor: {s}");
    }
    let unfloored = models(task, "unfloored");
    assert_eq!(unfloored.len(), 3, "{task}");
    assert!(unfloored.iter().all(|(_, s)| *s < floor_s), "{unfloored:?}");

    calibrate_ok(dir.path(), &["chain.tmt", "--from", "first.json"]);
    let marks = TraceFile::open(dir.path().join("chain.tmt"))
        .unwrap()
        .footer()
        .tail
        .task;
    assert_eq!(marks.cpu, Some(cpu), "the calibration keeps the CPU time");
    let blocking = unfloored.iter().find(|(k, _)| k == "blocking").unwrap().1;
    assert_eq!(
        marks.capture_drive.get(DependencyModel::Blocking),
        Some(Nanos((blocking * 1e9).round() as u64)),
        "the capture drive's figure is the model's, not the floor"
    );
}

/// Several calibration replays: the trace carries the median of their
/// predictions per model, and a refused one among them refuses them all.
#[test]
fn several_calibration_replays_give_the_median_of_their_predictions() {
    let dir = tempfile::tempdir().unwrap();
    write_marked_trace(&dir.path().join("chain.tmt"), 20);
    let v = replay_json(dir.path(), "chain.tmt", "replay.json");
    // The same replay as three draws of the drive: its blocking prediction
    // set to 0.30, 0.10 and 0.20 s.
    for (name, secs) in [("a.json", 0.30), ("b.json", 0.10), ("c.json", 0.20)] {
        let mut r = v.clone();
        r["traces"][0]["task"]["models"]["blocking"] = serde_json::json!(secs);
        fs::write(dir.path().join(name), serde_json::to_string(&r).unwrap()).unwrap();
    }
    let stdout = calibrate_ok(
        dir.path(),
        &["chain.tmt", "--from", "a.json", "b.json", "c.json"],
    );
    assert!(stdout.contains("the median of 3 replays"), "{stdout}");
    assert!(
        stdout.contains(
            "the replays predicted 0.100-0.300 s (blocking; -50.0 % to +50.0 % of their median)"
        ),
        "{stdout}"
    );
    let marks = TraceFile::open(dir.path().join("chain.tmt"))
        .unwrap()
        .footer()
        .tail
        .task;
    assert_eq!(
        marks.capture_drive.get(DependencyModel::Blocking),
        Some(Nanos(200_000_000))
    );
    // Two: their mean.
    calibrate_ok(dir.path(), &["chain.tmt", "--from", "a.json", "b.json"]);
    let marks = TraceFile::open(dir.path().join("chain.tmt"))
        .unwrap()
        .footer()
        .tail
        .task;
    assert_eq!(
        marks.capture_drive.get(DependencyModel::Blocking),
        Some(Nanos(200_000_000))
    );
    // One of another trace among them: refused, the trace left as it was.
    write_marked_trace(&dir.path().join("other.tmt"), 7);
    replay_json(dir.path(), "other.tmt", "other.json");
    let before = fs::read(dir.path().join("chain.tmt")).unwrap();
    let out = calibrate_cli(
        dir.path(),
        &["chain.tmt", "--from", "a.json", "other.json", "c.json"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("other.json") && stderr.contains("holds no replay of this trace"),
        "{stderr}"
    );
    assert_eq!(fs::read(dir.path().join("chain.tmt")).unwrap(), before);
}

/// The trace keeps each calibration replay's prediction and the settings
/// they ran at, and `info` shows them; replays at different settings are
/// refused together; a later replay at another queue depth is told that its
/// calibrated figure is set against replays at other settings.
#[test]
fn the_calibration_keeps_its_replays_and_settings_and_a_replay_at_others_is_told() {
    let dir = tempfile::tempdir().unwrap();
    write_marked_trace(&dir.path().join("chain.tmt"), 20);
    let v = replay_json(dir.path(), "chain.tmt", "replay.json");
    assert_eq!(v["options"]["queue_depth"], 128, "replay's default");
    for (name, secs) in [("a.json", 0.30), ("b.json", 0.10), ("c.json", 0.20)] {
        let mut r = v.clone();
        r["traces"][0]["task"]["models"]["blocking"] = serde_json::json!(secs);
        fs::write(dir.path().join(name), serde_json::to_string(&r).unwrap()).unwrap();
    }
    calibrate_ok(
        dir.path(),
        &["chain.tmt", "--from", "a.json", "b.json", "c.json"],
    );
    let tail = TraceFile::open(dir.path().join("chain.tmt"))
        .unwrap()
        .footer()
        .tail
        .clone();
    let c = tail.calibration.expect("the calibration's replays");
    let blocking: Vec<_> = c
        .predictions
        .iter()
        .map(|p| p.get(DependencyModel::Blocking))
        .collect();
    assert_eq!(
        blocking,
        [300_000_000, 100_000_000, 200_000_000].map(|n| Some(Nanos(n))),
        "in the order given"
    );
    let setting = |what: &str| {
        c.settings
            .iter()
            .find(|(w, _)| w == what)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(setting("queue depth").as_deref(), Some("128"));
    assert_eq!(setting("pacing").as_deref(), Some("think"));

    let info = tracemark()
        .current_dir(dir.path())
        .args(["info", "chain.tmt"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(
        text.contains(
            "  from replays   300.0 ms / 100.0 ms / 200.0 ms (blocking, the median of 3)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  replayed at    mode realtime, ") && text.contains("queue depth 128"),
        "{text}"
    );
    let info = tracemark()
        .current_dir(dir.path())
        .args(["info", "--json", "chain.tmt"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let calibration = &json["task"]["calibration"];
    assert_eq!(calibration["settings"]["queue depth"], "128", "{json}");
    assert_eq!(calibration["replays_ns"][1]["blocking"], 100_000_000u64);

    // Replays at different settings: refused, named, the trace unchanged.
    let mut shallow = v.clone();
    shallow["options"]["queue_depth"] = serde_json::json!(32);
    fs::write(
        dir.path().join("qd32.json"),
        serde_json::to_string(&shallow).unwrap(),
    )
    .unwrap();
    let before = fs::read(dir.path().join("chain.tmt")).unwrap();
    let out = calibrate_cli(dir.path(), &["chain.tmt", "--from", "a.json", "qd32.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("qd32.json")
            && stderr.contains("queue depth 32, a.json at queue depth 128"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one error line: {stderr}");
    assert_eq!(fs::read(dir.path().join("chain.tmt")).unwrap(), before);
    let a = results::compare::load_result(&dir.path().join("a.json")).unwrap();
    let q = results::compare::load_result(&dir.path().join("qd32.json")).unwrap();
    let err = calibrate(
        &dir.path().join("chain.tmt"),
        &[
            (&a, &dir.path().join("a.json")),
            (&q, &dir.path().join("qd32.json")),
        ],
        &dir.path().join("out.tmt"),
        Accept {
            cpu_wait: true,
            ..Accept::default()
        },
    )
    .expect_err("refused");
    assert_eq!(err.problem(), Some(CalibrationProblem::MixedSettings));

    // A replay at queue depth 32 is told, in its report and its JSON; one
    // at the calibration's settings is not, nor one whose idle is capped as
    // a suite file caps it (the predicted task time keeps the idle whole).
    let caution = "caution: its calibrated task time is set against replays at other settings: queue depth 32 (calibrated at 128)";
    let (stdout, low) = replay_once(dir.path(), &["--queue-depth", "32"], "low.json");
    assert!(stdout.contains(caution), "{stdout}");
    assert_eq!(
        low["traces"][0]["task"]["calibrated_at"]["queue depth"], "128",
        "{low}"
    );
    let (stdout, _) = replay_once(dir.path(), &["--idle-cap", "1s"], "same.json");
    assert!(
        !stdout.contains("set against replays at other settings"),
        "{stdout}"
    );
    let compared = tracemark()
        .current_dir(dir.path())
        .args(["compare", "same.json", "low.json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(
        text.contains("queue depth 32 (calibrated at 128)"),
        "{text}"
    );
}

#[test]
fn a_result_of_another_trace_or_without_a_prediction_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_marked_trace(&dir.path().join("chain.tmt"), 20);
    write_marked_trace(&dir.path().join("other.tmt"), 21);
    replay_json(dir.path(), "chain.tmt", "chain.json");
    let other_before = fs::read(dir.path().join("other.tmt")).unwrap();

    let out = calibrate_cli(dir.path(), &["other.tmt", "--from", "chain.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("chain.json") && stderr.contains("holds no replay of this trace"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one error line: {stderr}");
    assert_eq!(
        fs::read(dir.path().join("other.tmt")).unwrap(),
        other_before,
        "left as it was"
    );

    let err = refusal(dir.path(), "other.tmt", "chain.json");
    assert_eq!(err.problem(), Some(CalibrationProblem::NotThisTrace));

    // A compressed replay predicts no task time.
    let out = replay(
        dir.path(),
        &[
            "chain.tmt",
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--no-warmup",
            "--json",
            "compressed.json",
            "--target",
            "scratch.bin",
        ],
    );
    assert!(out.status.success());
    // The result says why, in the JSON and under the table.
    let json = read_json(&dir.path().join("compressed.json"));
    assert_eq!(json["traces"][0]["no_task_time"], "not_realtime", "{json}");
    assert_eq!(
        json["traces"][0]["passes"][0]["no_task_time"],
        "not_realtime"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("no predicted task time: the replay was not realtime"),
        "{stdout}"
    );
    let err = refusal(dir.path(), "chain.tmt", "compressed.json");
    assert_eq!(
        err.problem(),
        Some(CalibrationProblem::NoPrediction),
        "{err}"
    );
}

/// A calibration replay that waited for a CPU for a tenth of its playback
/// is refused (the load would move every later prediction), named in one
/// error line with the way round it; with --accept-cpu-wait it is taken.
#[test]
fn a_calibration_replay_that_waited_for_a_cpu_is_refused_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    write_marked_trace(&dir.path().join("chain.tmt"), 20);
    let mut v = replay_json(dir.path(), "chain.tmt", "quiet.json");
    let fidelity = &mut v["traces"][0]["fidelity"];
    let achieved = fidelity["achieved_s"].as_f64().unwrap();
    assert!(achieved > 0.0, "{fidelity}");
    fidelity["cpu_wait_s"] = serde_json::json!(achieved / 10.0);
    fs::write(
        dir.path().join("loaded.json"),
        serde_json::to_string_pretty(&v).unwrap(),
    )
    .unwrap();
    let before = fs::read(dir.path().join("chain.tmt")).unwrap();

    let err = refusal(dir.path(), "chain.tmt", "loaded.json");
    assert_eq!(err.problem(), Some(CalibrationProblem::CpuWait), "{err}");
    let out = calibrate_cli_strict(dir.path(), &["chain.tmt", "--from", "loaded.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("loaded.json")
            && stderr.contains("for a CPU (10 % of the playback)")
            && stderr.contains("--accept-cpu-wait"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one error line: {stderr}");
    assert_eq!(fs::read(dir.path().join("chain.tmt")).unwrap(), before);

    let out = calibrate_cli_strict(
        dir.path(),
        &["chain.tmt", "--from", "loaded.json", "--accept-cpu-wait"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(fs::read(dir.path().join("chain.tmt")).unwrap(), before);
}

/// A read-only replay of a fresh file cannot precondition it, and its reads
/// find blocks never written: the result says so per trace, the table
/// cautions, and `calibrate` refuses it unless told; the default replay
/// finds data.
#[test]
fn a_calibration_replay_whose_reads_found_no_data_is_refused_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    write_marked_trace(&dir.path().join("chain.tmt"), 20);
    let found = |v: &serde_json::Value| {
        let f = &v["traces"][0]["reads_found"];
        (
            f["blocks"].as_u64().unwrap(),
            f["with_data"].as_u64().unwrap(),
        )
    };
    let v = replay_json(dir.path(), "chain.tmt", "filled.json");
    assert_eq!(found(&v), (20, 20), "preconditioned reads find data");
    // A file as large as the replay needs is used as it is (not filled):
    // sparse, it holds no data.
    fs::File::create(dir.path().join("fresh.bin"))
        .unwrap()
        .set_len(64 << 20)
        .unwrap();

    let out = replay(
        dir.path(),
        &[
            "chain.tmt",
            "--passes",
            "1",
            "--no-warmup",
            "--read-only",
            "--json",
            "empty.json",
            "--target",
            "fresh.bin",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&dir.path().join("empty.json"));
    assert_eq!(found(&v), (20, 0), "a fresh file holds no data");
    assert!(
        stdout.contains("caution: 20 of 20 sampled reads found no data"),
        "{stdout}"
    );
    unwritten_reads_refused_unless_accepted(
        dir.path(),
        "empty.json",
        &["empty.json", "--accept-unwritten-reads"],
    );
}

/// Calibrating chain.tmt in `dir` from `result` is refused for unwritten
/// reads (by the library, and by the CLI in one error line saying each of
/// `says`, the trace unchanged), and taken with `--accept-unwritten-reads`.
fn unwritten_reads_refused_unless_accepted(dir: &Path, result: &str, says: &[&str]) {
    let before = fs::read(dir.join("chain.tmt")).unwrap();
    // The replay ran beside other tests: a CPU wait is not what this checks.
    let cpu_wait_taken = Accept {
        cpu_wait: true,
        ..Accept::default()
    };
    let err = refusal_taking(dir, "chain.tmt", result, cpu_wait_taken);
    assert_eq!(
        err.problem(),
        Some(CalibrationProblem::UnwrittenReads),
        "{err}"
    );
    let out = calibrate_cli(dir, &["chain.tmt", "--from", result]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(says.iter().all(|s| stderr.contains(s)), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one error line: {stderr}");
    assert_eq!(fs::read(dir.join("chain.tmt")).unwrap(), before);

    calibrate_ok(
        dir,
        &["chain.tmt", "--from", result, "--accept-unwritten-reads"],
    );
    assert_ne!(fs::read(dir.join("chain.tmt")).unwrap(), before);
}

/// A replay at `--precondition skip` does not look whether its reads found
/// data (nothing is sampled), so the check above cannot see holes there:
/// `calibrate` refuses it unless told, as it does a replay that found none.
#[test]
fn a_calibration_replay_at_precondition_skip_is_refused_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    write_marked_trace(&dir.path().join("chain.tmt"), 20);
    let out = replay(
        dir.path(),
        &[
            "chain.tmt",
            "--passes",
            "1",
            "--no-warmup",
            "--precondition",
            "skip",
            "--json",
            "skip.json",
            "--target",
            "scratch.bin",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&dir.path().join("skip.json"));
    assert!(v["traces"][0]["reads_found"].is_null(), "nothing sampled");
    unwritten_reads_refused_unless_accepted(
        dir.path(),
        "skip.json",
        &[
            "skip.json",
            "--precondition skip",
            "--accept-unwritten-reads",
        ],
    );
}

/// Calibrated in place through a symbolic link: the real trace is
/// calibrated, the link stays a link, the trace keeps its mode (600); a
/// device node or FIFO as `-o` is refused and left as it was.
#[test]
fn in_place_through_a_link_calibrates_the_target_and_keeps_its_mode() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_marked_trace(&d.join("real.tmt"), 20);
    replay_json(d, "real.tmt", "first.json");
    fs::set_permissions(d.join("real.tmt"), fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("real.tmt", d.join("link.tmt")).unwrap();
    let out = calibrate_cli(d, &["link.tmt", "--from", "first.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::symlink_metadata(d.join("link.tmt"))
        .unwrap()
        .file_type()
        .is_symlink());
    let real = d.join("real.tmt");
    let marks = TraceFile::open(&real).unwrap().footer().tail.task;
    assert!(marks.capture_drive.is_set(), "the real trace is calibrated");
    assert_eq!(
        fs::metadata(&real).unwrap().permissions().mode() & 0o7777,
        0o600
    );
    for special in ["/dev/null", "/dev/stdout"] {
        let before = fs::metadata(special).ok().map(|m| m.file_type());
        let out = calibrate_cli(d, &["real.tmt", "--from", "first.json", "-o", special]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{special}: {err}");
        assert!(err.contains("refusing to replace it"), "{special}: {err}");
        let after = fs::metadata(special).ok().map(|m| m.file_type());
        assert_eq!(
            before.map(|t| t.is_char_device() || t.is_fifo()),
            after.map(|t| t.is_char_device() || t.is_fifo())
        );
    }
}

/// `tracemark info` (text and JSON) shows the trace's marks, its untraced
/// time and, once calibrated, the capture drive's prediction per model.
fn info_shows_the_task(dir: &Path, trace: &str, calibrated: Option<&trace_format::TaskMarks>) {
    let text = tracemark()
        .current_dir(dir)
        .args(["info", trace])
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Task (capture marks)\n"), "{text}");
    assert!(
        text.contains("  done           20.5 ms after time 0\n"),
        "{text}"
    );
    assert!(text.contains("  untraced       80.0 ms\n"), "{text}");
    let json = tracemark()
        .current_dir(dir)
        .args(["info", "--json", trace])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let task = &json["task"];
    assert_eq!(task["end_ns"], 20_500_000, "{task}");
    assert_eq!(task["untraced_ns"], UNTRACED_NS, "{task}");
    match calibrated {
        None => {
            assert!(
                text.contains("  calibrated     no (tracemark calibrate)\n"),
                "{text}"
            );
            assert!(task.get("capture_drive_ns").is_none(), "{task}");
        }
        Some(marks) => {
            let blocking = marks.capture_drive.get(DependencyModel::Blocking).unwrap();
            let shown = format!("blocking {}", results::text::units::duration_ns(blocking.0));
            assert!(
                text.contains("  calibrated     on the capture drive: all "),
                "{text}"
            );
            assert!(text.contains(&shown), "{text}");
            assert_eq!(task["capture_drive_ns"]["blocking"], blocking.0, "{task}");
        }
    }
}
