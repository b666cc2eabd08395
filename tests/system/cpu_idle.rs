//! `--cpu-idle`: with `poll` (the default) `tracemark replay` holds a 0 µs
//! CPU latency request (`/dev/cpu_dma_latency` open) while it replays and
//! the request ends with the run; with `os` it holds none. The result
//! records what was in effect. Checked from outside the process, as other
//! tests in this binary replay at the same time.

use crate::support::replay::*;
use crate::support::{skip, tracemark, SystemTest};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use trace_format::Op;

const CPU_LATENCY_FILE: &str = "/dev/cpu_dma_latency";

/// Whether process `pid` has the CPU latency request file open (None once
/// it is gone).
fn holds_request(pid: u32) -> Option<bool> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        fds.flatten()
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|p| p == Path::new(CPU_LATENCY_FILE))),
    )
}

/// Replays a 2 s trace of sparse reads with `--cpu-idle policy`; returns
/// whether the request was seen held while it ran, and the recorded policy.
fn replay_watching(t: &SystemTest, target: &Path, trace: &Path, policy: &str) -> (bool, String) {
    let json = t.dir().join(format!("{policy}.json"));
    let mut child = tracemark()
        .current_dir(t.dir())
        .env("TRACEMARK_STATE_DIR", t.dir())
        .args(["replay", trace.to_str().unwrap(), "--target"])
        .arg(target)
        .args([
            "--allow-write",
            "--passes",
            "1",
            "--no-warmup",
            "--cpu-idle",
            policy,
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = false;
    let end = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && Instant::now() < end {
        seen |= holds_request(child.id()).unwrap_or(false);
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = crate::support::read_json(&json);
    // `os` is not written (absent: os, as in files older than the option).
    (
        seen,
        v["options"]["cpu_idle"]
            .as_str()
            .unwrap_or("os")
            .to_string(),
    )
}

#[test]
fn poll_holds_a_cpu_latency_request_only_while_the_run_lasts() {
    let Some(t) = SystemTest::start(&[]) else {
        return;
    };
    if !Path::new(CPU_LATENCY_FILE).exists() {
        skip(&format!("{CPU_LATENCY_FILE} is missing (no PM QoS)"));
        return;
    }
    let Some(z) = t.zram(32) else {
        return;
    };
    let recs: Vec<_> = (0..200u64)
        .map(|i| rec(i * 10_000, Op::Read, (i % 64) * 64 * KIB, 4 * KIB))
        .collect();
    let trace = t.dir().join("sparse.tmt");
    write_trace(&trace, "sparse", &recs);

    let (held, recorded) = replay_watching(&t, &z.path, &trace, "poll");
    assert!(held, "no CPU latency request seen while the replay ran");
    assert_eq!(recorded, "poll");

    let (held, recorded) = replay_watching(&t, &z.path, &trace, "os");
    assert!(!held, "a CPU latency request held with --cpu-idle os");
    assert_eq!(recorded, "os");
}
