//! Where the predicted task time goes: a replay of a trace whose waits are
//! known breaks its prediction into think time and the waits per class, in
//! its text and its result file; `compare` says which classes account for a
//! difference, in text and as stacked bars the browser draws.

use crate::support;
use crate::support::browser;
use crate::support::read_json;
use crate::support::replay::*;
use crate::support::result_fixture::{result, write, Figures};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use trace_format::{IoRecord, Nanos, Op, TaskMarks, TraceHeader, TraceTail, TraceWriter};

/// Ten 64 KiB reads in a chain, one after the other on the device (each
/// 400 µs in the capture, 1 ms apart), the done mark after the last.
fn write_chain(path: &Path) {
    let recs: Vec<IoRecord> = (0..10u64)
        .map(|i| with_latency(rec(i * 1_000, Op::Read, i * 64 * KIB, 64 * KIB), 400))
        .collect();
    let mut w = TraceWriter::new(
        std::io::BufWriter::new(fs::File::create(path).unwrap()),
        &TraceHeader::new("chain", "test"),
    )
    .unwrap();
    for r in &recs {
        w.push(r).unwrap();
    }
    let marks = TaskMarks {
        end: Some(Nanos(10_000_000)),
        ..TaskMarks::default()
    };
    w.finish(&TraceTail {
        task: marks,
        ..TraceTail::default()
    })
    .unwrap();
}

#[test]
fn a_replay_breaks_its_task_time_into_think_time_and_waits() {
    let dir = tempfile::tempdir().unwrap();
    write_chain(&dir.path().join("chain.tmt"));
    let out = replay(
        dir.path(),
        &[
            "chain.tmt",
            "--passes",
            "2",
            "--no-warmup",
            "--json",
            "r.json",
            "--target",
            "scratch.bin",
        ],
    );
    assert!(out.status.success());
    let task = &read_json(&dir.path().join("r.json"))["traces"][0]["task"];
    let b = &task["breakdown"];
    assert_eq!(b["version"], 1, "{task}");
    assert_eq!(b["model"], "blocking");
    // Every read waited for the one before: the first (nothing before it on
    // the device) is random, the nine after it sequential; all at QD1.
    let waits = b["waits"].as_array().unwrap();
    let mut classes: Vec<(String, f64)> = waits
        .iter()
        .map(|w| {
            assert_eq!(w["op"], "read");
            assert_eq!(w["size_bucket"], 2, "64 KiB: {w}");
            assert_eq!(w["qd_bucket"], 0, "QD1: {w}");
            (
                w["pattern"].as_str().unwrap().to_string(),
                w["ios"].as_f64().unwrap(),
            )
        })
        .collect();
    classes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        classes,
        [("random".to_string(), 1.0), ("sequential".to_string(), 9.0)]
    );
    // The parts sum to the prediction.
    let waited: f64 = waits.iter().map(|w| w["wait_s"].as_f64().unwrap()).sum();
    assert!(waited > 0.0);
    let predicted = task["predicted_s"].as_f64().unwrap();
    let think = b["think_s"].as_f64().unwrap();
    assert!(
        (think + waited - predicted).abs() < 1e-6,
        "think {think} + waits {waited} vs {predicted}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("where the time goes (blocking path): think")
            && text.contains("64 KiB sequential reads at QD1")
            && text.contains("(9 I/Os)"),
        "{text}"
    );
}

fn breakdown(think_s: f64, waits: &[(&str, u8, u8, &str, f64, f64)]) -> Value {
    json!({
        "version": 1,
        "model": "blocking",
        "think_s": think_s,
        "waits": waits.iter().map(|(op, size, qd, pattern, ios, s)| json!({
            "op": op, "size_bucket": size, "qd_bucket": qd, "pattern": pattern,
            "ios": ios, "wait_s": s
        })).collect::<Vec<_>>()
    })
}

fn with_task(mut r: Value, predicted_s: f64, b: Value) -> Value {
    r["traces"][0]["task"] = json!({
        "predicted_s": predicted_s,
        "model": "blocking",
        "models": {"blocking": predicted_s},
        "captured_s": 1.0,
        "span": "task marks",
        "breakdown": b
    });
    r
}

/// A drawn segment per drive and part, with its width.
const PROBE: &str = r#"
<pre id="probe"></pre>
<script>
const r = [];
for (const e of document.querySelectorAll('rect.seg')) {
  const b = e.getBBox();
  r.push({ trace: e.dataset.trace, drive: e.dataset.drive, part: e.dataset.part, s: +e.dataset.s, width: b.width, height: b.height });
}
document.getElementById('probe').textContent = JSON.stringify(r);
</script>
"#;

#[test]
fn compare_names_the_classes_behind_a_difference_and_draws_them() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = |target: &str, score: f64| {
        result(
            "realtime",
            target,
            None,
            &[
                Figures::new("launch", score, score / 5.0, 1e6 / score),
                Figures::new("boot", score, score / 5.0, 1e6 / score),
            ],
        )
    };
    // B: +0.31 s, 0.26 s of it more in 4 KiB random reads at QD1.
    let a = with_task(
        fixture("/dev/nvme0n1", 2000.0),
        1.0,
        breakdown(
            0.85,
            &[
                ("read", 0, 0, "random", 100.0, 0.10),
                ("read", 4, 2, "sequential", 10.0, 0.05),
            ],
        ),
    );
    let b = with_task(
        fixture("/dev/sda", 900.0),
        1.31,
        breakdown(
            0.85,
            &[
                ("read", 0, 0, "random", 100.0, 0.36),
                ("read", 4, 2, "sequential", 10.0, 0.10),
            ],
        ),
    );
    let a = write(dir.path(), "a.json", &a);
    let b = write(dir.path(), "b.json", &b);
    let report = dir.path().join("report.html");
    let out = support::tracemark()
        .arg("compare")
        .args([&a, &b])
        .arg("--html")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("where the predicted task time goes, against A:")
            && text.contains("launch: +0.31 s on B; 0.26 s of it in 4 KiB random reads at QD1"),
        "{text}"
    );
    // The trace without a breakdown has no line.
    assert!(!text.contains("boot: +"), "{text}");

    let html = fs::read_to_string(&report).unwrap();
    assert!(html.contains("+0.31 s on B; 0.26 s of it in 4 KiB random reads at QD1"));
    if !support::require_tool("chromium") {
        return;
    }
    let probe = browser::probe(dir.path(), &html, PROBE);
    let segs = probe.as_array().unwrap();
    // Per drive: think and the two classes (no other class, nothing empty).
    assert_eq!(segs.len(), 6, "{probe}");
    assert!(segs.iter().all(|s| s["trace"] == "launch"));
    let width_of = |drive: &str| -> f64 {
        segs.iter()
            .filter(|s| s["drive"] == drive)
            .map(|s| s["width"].as_f64().unwrap())
            .sum()
    };
    for s in segs {
        assert!(s["height"].as_f64().unwrap() > 5.0, "{s}");
        assert!(s["width"].as_f64().unwrap() > 1.0, "{s}");
    }
    // The bars are as long as the predictions.
    let ratio = width_of("1") / width_of("0");
    assert!((ratio - 1.31).abs() < 0.01, "bar lengths {ratio}");
    let part = |drive: &str, part: &str| {
        segs.iter()
            .find(|s| s["drive"] == drive && s["part"] == part)
            .map(|s| s["width"].as_f64().unwrap())
            .unwrap_or_else(|| panic!("no {part} on {drive}: {probe}"))
    };
    let r = part("1", "4 KiB random reads at QD1") / part("0", "4 KiB random reads at QD1");
    assert!((r - 3.6).abs() < 0.05, "segment ratio {r}");
    assert!((part("1", "think") - part("0", "think")).abs() < 0.5);
}
