//! `tracemark consistency` end to end on a small loop device: every phase in
//! the table, the JSON and the HTML; the device really written; safety.

use crate::support::replay::{rec, write_trace, KIB, MIB};
use crate::support::{self, SystemTest};
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use trace_format::Op;

fn make_suite(dir: &Path) -> (String, String) {
    let mixed: Vec<_> = (0..400u64)
        .map(|i| {
            let op = if i % 4 == 0 { Op::Write } else { Op::Read };
            rec(
                i * 50,
                op,
                (i * 7919 % 64) * 128 * KIB,
                4 * KIB * (1 + i % 8),
            )
        })
        .collect();
    let seq: Vec<_> = (0..64u64)
        .map(|i| rec(i * 100, Op::Read, 8 * MIB + i * 128 * KIB, 128 * KIB))
        .collect();
    let a = dir.join("mixed.tmt");
    let b = dir.join("seqread.tmt");
    write_trace(&a, "mixed", &mixed);
    write_trace(&b, "seqread", &seq);
    (a.display().to_string(), b.display().to_string())
}

#[test]
fn every_phase_on_a_loop_device() {
    let Some(t) = SystemTest::start(&["losetup"]) else {
        return;
    };
    let (a, b) = make_suite(t.dir());
    let dev = t.loop_device(64);
    let target = dev.path.display().to_string();
    let json = t.dir().join("c.json");
    let html = t.dir().join("c.html");

    // Refused without --allow-write, before anything is written.
    let out = support::tracemark()
        .args(["consistency", &a, &b, "--target", &target])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-write"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let out = support::tracemark()
        .args(["consistency", &a, &b, "--target", &target, "--allow-write"])
        .args([
            "--rounds-degrade",
            "2",
            "--rounds-steady",
            "2",
            "--rounds-recovery",
            "2",
        ])
        .args(["--degrade-start", "300ms", "--degrade-step", "200ms"])
        .args(["--steady", "250ms", "--idle", "200ms"])
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The table: one line per fill and per round, in order.
    let phases: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| ["precondition", "degradation", "steady", "recovery"].contains(w))
        .collect();
    assert_eq!(
        phases,
        [
            "precondition",
            "precondition",
            "degradation",
            "degradation",
            "steady",
            "steady",
            "recovery",
            "recovery"
        ],
        "{stdout}"
    );

    let r = crate::support::read_json(&json);
    assert_eq!(r["target"]["kind"], "block_device");
    assert_eq!(r["target"]["size_bytes"], 64 * MIB);
    let pre = r["precondition"].as_array().unwrap();
    assert_eq!(pre.len(), 2);
    for p in pre {
        assert_eq!(p["bytes"], 64 * MIB, "{p}");
        assert!(p["mb_s"].as_f64().unwrap() > 0.0);
    }
    let rounds = r["rounds"].as_array().unwrap();
    let got: Vec<(String, u64)> = rounds
        .iter()
        .map(|x| {
            (
                x["phase"].as_str().unwrap().to_string(),
                x["round"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = [
        ("degradation", 1),
        ("degradation", 2),
        ("steady", 1),
        ("steady", 2),
        ("recovery", 1),
        ("recovery", 2),
    ]
    .iter()
    .map(|(p, n)| (p.to_string(), *n))
    .collect();
    assert_eq!(got, want);
    let f = |x: &Value, k: &str| x[k].as_f64().unwrap();
    for x in rounds {
        assert!(f(x, "score") > 0.0, "{x}");
        assert!(f(x, "bandwidth_mb_s") > 0.0, "{x}");
        let traces = x["traces"].as_array().unwrap();
        assert_eq!(traces.len(), 2);
        assert!(traces.iter().all(|t| t["score"].as_f64().unwrap() > 0.0));
        if x["phase"] == "recovery" {
            assert_eq!(f(x, "write_s"), 0.0);
            assert_eq!(x["written_bytes"], 0);
            assert!((f(x, "idle_s") - 0.2).abs() < 1e-9);
        } else {
            assert!(x["written_bytes"].as_u64().unwrap() > MIB, "{x}");
            assert!(f(x, "write_mb_s") > 0.0);
            assert_eq!(f(x, "idle_s"), 0.0);
        }
    }
    // Write periods: 0.3 s, 0.5 s (growing), then 0.25 s; a pass stops at
    // the deadline, plus the I/O in flight and the device's close. With a
    // second copy of the suite writing to the same disk that tail has taken
    // 0.84 s, so the upper bound is loose; the lower bounds show the growth.
    let periods: Vec<f64> = rounds.iter().map(|x| f(x, "write_s")).collect();
    for (got, want) in periods.iter().zip([0.3, 0.5, 0.25, 0.25]) {
        assert!(*got >= want && *got < want + 2.0, "{periods:?}");
    }
    assert_eq!(r["durations"]["degrade_step_s"], 0.2);

    // The HTML: one score point and one bandwidth bar per round, by phase.
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("class=\"round-point\"").count(), 6);
    for phase in ["degradation", "steady", "recovery"] {
        assert_eq!(
            page.matches(&format!("class=\"round-point\" data-phase=\"{phase}\""))
                .count(),
            2
        );
        assert_eq!(
            page.matches(&format!(
                "class=\"bar\" data-metric=\"bandwidth\" data-phase=\"{phase}\""
            ))
            .count(),
            2
        );
    }
    assert!(!page.contains("<script"));

    // The end of the device, which no suite trace touches, holds the
    // incompressible data written by the test (the image was all zeros).
    let mut devf = std::fs::File::open(&dev.path).unwrap();
    devf.seek(SeekFrom::Start(63 * MIB)).unwrap();
    let mut buf = vec![0u8; MIB as usize];
    devf.read_exact(&mut buf).unwrap();
    let zero_blocks = buf
        .chunks(4096)
        .filter(|c| c.iter().all(|b| *b == 0))
        .count();
    assert_eq!(zero_blocks, 0);
    let distinct: std::collections::BTreeSet<u8> = buf[..4096].iter().copied().collect();
    assert!(distinct.len() > 200, "not incompressible-looking data");
}

#[test]
fn default_durations_scale_with_a_small_target() {
    let Some(t) = SystemTest::start(&["losetup"]) else {
        return;
    };
    let (a, _) = make_suite(t.dir());
    let dev = t.loop_device(32);
    let json = t.dir().join("c.json");
    let out = support::tracemark()
        .args(["consistency", &a, "--target"])
        .arg(&dev.path)
        .args([
            "--allow-write",
            "--rounds-degrade",
            "1",
            "--rounds-steady",
            "1",
            "--rounds-recovery",
            "1",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = crate::support::read_json(&json);
    let d = &r["durations"];
    let unit = d["unit_s"].as_f64().unwrap();
    // Each default is its factor of the fill time (the unit), within the
    // 1 s floor and its cap. Writing 32 MiB to a loop device takes well under
    // a second on an idle machine, where every default is the 1 s floor; on a
    // busy one the unit grows, and the defaults with it.
    assert!(unit > 0.0 && unit < 10.0, "{d}");
    for (k, factor, cap) in [
        ("degrade_start_s", 1.0, 600.0),
        ("degrade_step_s", 0.1, 60.0),
        ("steady_s", 2.5, 1500.0),
        ("idle_s", 0.5, 300.0),
    ] {
        let want: f64 = (unit * factor).clamp(1.0, cap);
        let got = d[k].as_f64().unwrap();
        assert!((got - want).abs() < 1e-6, "{k}: {d}");
    }
    assert_eq!(d["degrade_step_s"], 1.0, "{d}");
    assert_eq!(r["rounds"].as_array().unwrap().len(), 3);
}
