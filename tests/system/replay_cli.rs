//! `tracemark replay` as a user runs it: the result file, Ctrl-C, bad options,
//! and the safety rules on block devices.

use crate::support::mount::Mount;
use crate::support::replay::*;
use crate::support::SystemTest;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use trace_format::Op;

fn small_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let recs: Vec<_> = (0..64u64)
        .map(|i| {
            let op = if i % 4 == 0 { Op::Write } else { Op::Read };
            rec(i * 100, op, (i % 16) * 128 * KIB, 8 * KIB)
        })
        .collect();
    let p = dir.join("small.tmt");
    write_trace(&p, "small", &recs);
    p
}

#[test]
fn result_file_has_the_documented_schema() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let json = dir.path().join("r.json");
    let out = replay(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            trace.to_str().unwrap(),
            "--mode",
            "compressed",
            "--passes",
            "2",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success());
    // default target: the scratch file in the current directory
    assert!(dir.path().join("tracemark-scratch.bin").exists());
    let v = crate::support::read_json(&json);
    assert_eq!(v["tool"]["name"], "tracemark");
    assert_eq!(v["options"]["mode"], "compressed");
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["target"]["kind"], "file");
    assert!(v["target"]["size_bytes"].as_u64().unwrap() >= 2 * MIB);
    assert!(v["host"]["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    let traces = v["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 2);
    for t in traces {
        assert_eq!(t["name"], "small");
        assert_eq!(t["passes"].as_array().unwrap().len(), 2);
        for key in [
            "score",
            "bandwidth_mb_s",
            "access_time_us",
            "playback_s",
            "busy_s",
        ] {
            assert!(t[key].as_f64().unwrap() > 0.0, "{key}");
        }
        assert_eq!(t["ios"], 64);
        assert_eq!(t["read_bytes"], 48 * 8 * KIB);
        assert_eq!(t["write_bytes"], 16 * 8 * KIB);
        for op in ["read", "write"] {
            for p in ["p50", "p90", "p99", "p99_9", "max"] {
                assert!(t["latency_us"][op][p].as_f64().unwrap() > 0.0, "{op} {p}");
            }
        }
        for p in ["p50", "p99", "max"] {
            assert!(t["fidelity"]["lateness_us"][p].as_f64().is_some());
        }
    }
    assert!(v["suite"]["score"].as_f64().unwrap() > 0.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("suite (geometric mean)"), "{stdout}");
}

#[test]
fn ctrl_c_drains_writes_a_partial_result_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    // 30 s of realtime replay: one read a second.
    let recs: Vec<_> = (0..30u64)
        .map(|i| rec(i * 1_000_000, Op::Read, i * MIB, 4 * KIB))
        .collect();
    let trace = dir.path().join("slow.tmt");
    write_trace(&trace, "slow", &recs);
    let json = dir.path().join("r.json");
    let child = crate::support::tracemark()
        .current_dir(dir.path())
        .args([
            "replay",
            trace.to_str().unwrap(),
            "--no-warmup",
            "--passes",
            "1",
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let sent = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "took {:?} to stop",
        sent.elapsed()
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = crate::support::read_json(&json);
    assert_eq!(v["interrupted"], true);
    let ios = v["traces"][0]["ios"].as_u64().unwrap();
    assert!((1..30).contains(&ios), "{ios} I/Os in the partial pass");
    assert!(String::from_utf8_lossy(&out.stdout).contains("interrupted"));
}

#[test]
fn bad_options_give_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let trace = small_trace(dir.path());
    let t = trace.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &[t, "--mode", "compressed", "--idle-cap", "10ms"],
            "--idle-cap",
        ),
        (&[t, "--time-scale", "0"], "--time-scale"),
        (&[t, "--queue-depth", "0"], "--queue-depth"),
        (&["/nonexistent/x.tmt"], "/nonexistent/x.tmt"),
    ];
    for (args, needle) in cases {
        let out = replay(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn writes_to_a_block_device_need_allow_write() {
    let Some(t) = SystemTest::start(&["losetup"]) else {
        return;
    };
    let trace = small_trace(t.dir());
    let dev = t.loop_device(16);
    let target = dev.path.to_str().unwrap();
    let before = std::fs::read(&dev.path).unwrap();
    let out = replay(
        t.dir(),
        &[
            trace.to_str().unwrap(),
            "--target",
            target,
            "--passes",
            "1",
            "--no-warmup",
            "--mode",
            "compressed",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-write"));
    assert!(
        std::fs::read(&dev.path).unwrap() == before,
        "the device changed"
    );
    // Reads only are fine without --allow-write.
    let out = replay(
        t.dir(),
        &[
            trace.to_str().unwrap(),
            "--target",
            target,
            "--passes",
            "1",
            "--no-warmup",
            "--mode",
            "compressed",
            "--read-only",
        ],
    );
    assert!(out.status.success());
    assert!(
        std::fs::read(&dev.path).unwrap() == before,
        "the device changed"
    );
}

#[test]
fn a_mounted_device_is_refused_even_with_allow_write() {
    let Some(t) = SystemTest::start(&["losetup", "mkfs.ext4"]) else {
        return;
    };
    let trace = small_trace(t.dir());
    let dev = t.loop_device(32);
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&dev.path)
        .status()
        .unwrap();
    assert!(st.success());
    let mnt = t.dir().join("mnt");
    // Unmounted on drop (and then the loop device detaches).
    let _mount = Mount::new([&dev.path], &mnt);
    std::fs::write(mnt.join("precious"), b"keep me").unwrap();
    let out = replay(
        t.dir(),
        &[
            trace.to_str().unwrap(),
            "--target",
            dev.path.to_str().unwrap(),
            "--allow-write",
            "--passes",
            "1",
            "--no-warmup",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mounted"), "{err}");
    assert_eq!(std::fs::read(mnt.join("precious")).unwrap(), b"keep me");
}
