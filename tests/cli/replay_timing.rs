//! Timing and dependencies, through the library (per-I/O events) on a
//! scratch file: realtime keeps the trace's pacing, compressed removes idle,
//! --idle-cap and --time-scale change playback as they should, and no I/O is
//! issued before the ones it depends on have completed.

use crate::support::replay::*;
use replayer::options::Pacing;
use replayer::{IoEvent, MemorySource, Observer, ReplayOptions, TimingMode};
use std::path::Path;
use trace_format::{IoRecord, Op};

/// Replays `recs` once onto a scratch file in `dir`; the playback time (s) and the events.
fn play(dir: &Path, recs: Vec<IoRecord>, opts: &ReplayOptions) -> (f64, Vec<IoEvent>) {
    let (r, ev) = play_in_memory(dir, recs, opts);
    (r.traces[0].playback_s, ev)
}

/// Five bursts of four 4 KiB reads, 200 ms apart: 0.8 s, of which ~all idle.
fn bursts() -> Vec<IoRecord> {
    let mut v = Vec::new();
    for b in 0..5u64 {
        for i in 0..4u64 {
            v.push(rec(
                b * 200_000 + i * 10,
                Op::Read,
                (b * 4 + i) * 256 * KIB,
                4 * KIB,
            ));
        }
    }
    v
}

#[test]
fn realtime_keeps_idle_and_compressed_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, ev) = play(dir.path(), bursts(), &one_pass(TimingMode::Realtime));
    assert!(rt >= 0.79, "realtime playback {rt} s, trace 0.8 s");
    let recs = bursts();
    assert_on_schedule(&ev, "realtime", |i| recs[i].time.0);
    let (cp, _) = play(dir.path(), bursts(), &one_pass(TimingMode::Compressed));
    assert!(
        cp < 0.08,
        "compressed playback {cp} s should be far below 0.8 s"
    );
}

/// Checks each I/O was submitted at or after `due(i)` (ns from the pass's
/// start), the median I/O less than 50 ms after it and none a second after
/// it. The wrong schedules are far off: an uncapped or unscaled pass puts
/// the median I/O 200 ms or more from its due time (bursts are 50 to 400 ms
/// apart), a scaled-down one submits early. The median, not every I/O,
/// because a few I/Os can wait 100 ms for a CPU on two cores under load.
fn assert_on_schedule(ev: &[IoEvent], what: &str, due: impl Fn(usize) -> u64) {
    let mut late: Vec<u64> = ev
        .iter()
        .map(|e| {
            let due = due(e.index as usize);
            assert!(
                e.submit_ns >= due,
                "{what}: I/O {} submitted at {} ns, due at {due} ns",
                e.index,
                e.submit_ns
            );
            e.submit_ns - due
        })
        .collect();
    late.sort_unstable();
    let median = late[late.len() / 2];
    assert!(
        median < 50_000_000,
        "{what}: the median I/O submitted {median} ns after its due time"
    );
    let worst = late[late.len() - 1];
    assert!(worst < 1_000_000_000, "{what}: an I/O {worst} ns late");
}

#[test]
fn idle_cap_and_time_scale_shorten_playback_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let recs = bursts();
    let capped = ReplayOptions {
        idle_cap: Some(trace_format::Nanos::from_micros(50_000)),
        ..one_pass(TimingMode::Realtime)
    };
    // four gaps of ~200 ms capped to 50 ms each: burst b is due at b x 50 ms
    let (p, ev) = play(dir.path(), bursts(), &capped);
    assert_on_schedule(&ev, "idle-capped", |i| {
        (i / 4) as u64 * 50_000_000 + (recs[i].time.0 % 200_000_000)
    });
    assert!(p < 0.6, "idle-capped playback {p} s, trace 0.8 s");
    let fast = ReplayOptions {
        time_scale: 2.0,
        ..one_pass(TimingMode::Realtime)
    };
    let (p, ev) = play(dir.path(), bursts(), &fast);
    assert_on_schedule(&ev, "2x", |i| recs[i].time.0 / 2);
    assert!(p < 0.7, "2x playback {p} s, trace 0.8 s");
    let slow = ReplayOptions {
        time_scale: 0.5,
        ..one_pass(TimingMode::Realtime)
    };
    let (p, ev) = play(dir.path(), bursts(), &slow);
    assert_on_schedule(&ev, "0.5x", |i| recs[i].time.0 * 2);
    assert!(p >= 1.6, "0.5x playback {p} s, expected at least 1.6 s");
}

/// Checks every dependency: an I/O whose original issue time is at or after
/// another's original completion is submitted only after that one completed.
fn assert_dependencies_kept(recs: &[IoRecord], ev: &[IoEvent]) -> usize {
    let mut checked = 0;
    for i in ev {
        let ti = recs[i.index as usize].time;
        for j in ev {
            let Some(cj) = recs[j.index as usize].completion() else {
                continue;
            };
            if j.index < i.index && cj <= ti {
                assert!(
                    i.submit_ns >= j.complete_ns,
                    "I/O {} submitted at {} before I/O {} (a dependency) completed at {}",
                    i.index,
                    i.submit_ns,
                    j.index,
                    j.complete_ns
                );
                checked += 1;
            }
        }
    }
    checked
}

/// The most I/Os in flight at once.
fn max_in_flight(ev: &[IoEvent]) -> usize {
    let mut points: Vec<(u64, i32)> = ev
        .iter()
        .flat_map(|e| [(e.submit_ns, 1), (e.complete_ns, -1)])
        .collect();
    // completions before submissions at the same instant
    points.sort();
    let (mut cur, mut max) = (0i32, 0i32);
    for (_, d) in points {
        cur += d;
        max = max.max(cur);
    }
    max as usize
}

#[test]
fn dependencies_hold_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    // One I/O every 100 µs; most complete after 50 µs (so the next depends on
    // them), every third after 150 µs (so the next overlaps it and only the
    // one after depends on it).
    let mut recs = Vec::new();
    for i in 0..150u64 {
        let r = rec(i * 100, Op::Read, (i % 40) * 512 * KIB, 16 * KIB);
        recs.push(with_latency(r, if i % 3 == 0 { 150 } else { 50 }));
    }
    for mode in [TimingMode::Compressed, TimingMode::Realtime] {
        let (_, ev) = play(dir.path(), recs.clone(), &one_pass(mode));
        assert_eq!(ev.len(), recs.len());
        let n = assert_dependencies_kept(&recs, &ev);
        assert!(n > 1000, "only {n} dependencies checked");
    }
}

#[test]
fn independent_io_runs_concurrently_up_to_the_queue_depth() {
    let dir = tempfile::tempdir().unwrap();
    // All 200 overlap in the original (10 ms latency each): no dependencies.
    let recs: Vec<IoRecord> = (0..200u64)
        .map(|i| with_latency(rec(i, Op::Read, (i % 64) * 256 * KIB, 4 * KIB), 10_000))
        .collect();
    let (_, ev) = play(dir.path(), recs.clone(), &one_pass(TimingMode::Compressed));
    assert_eq!(
        max_in_flight(&ev),
        32,
        "QD 32 should be filled and never exceeded"
    );
    // No completion times: original order, capped by --queue-depth.
    let plain: Vec<IoRecord> = recs
        .iter()
        .map(|r| IoRecord {
            latency: None,
            ..*r
        })
        .collect();
    let qd4 = ReplayOptions {
        queue_depth: 4,
        ..one_pass(TimingMode::Compressed)
    };
    let (_, ev) = play(dir.path(), plain, &qd4);
    assert_eq!(max_in_flight(&ev), 4);
}

/// Compressed mode hands each request to the kernel on its own (one
/// submission, so one submission stamp, each), not the refill after a wait
/// as one batch (`Engine::issue`: the issuer sleeps about half as often).
#[test]
fn compressed_mode_submits_each_request_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let recs: Vec<IoRecord> = (0..400u64)
        .map(|i| rec(i, Op::Read, (i % 64) * 256 * KIB, 4 * KIB))
        .collect();
    let qd8 = ReplayOptions {
        queue_depth: 8,
        ..one_pass(TimingMode::Compressed)
    };
    let (_, ev) = play(dir.path(), recs, &qd8);
    assert_eq!(ev.len(), 400);
    assert_eq!(max_in_flight(&ev), 8);
    let mut stamps: Vec<u64> = ev.iter().map(|e| e.submit_ns).collect();
    stamps.sort_unstable();
    stamps.dedup();
    assert_eq!(
        stamps.len(),
        ev.len(),
        "some requests were submitted together"
    );
}

/// Notes the scheduling policy of the thread that reports completions (the
/// issuing thread).
#[derive(Default)]
struct PolicySeen(Vec<i32>);

impl Observer for PolicySeen {
    fn wants_io_events(&self) -> bool {
        true
    }
    fn io_completed(&mut self, _e: &IoEvent) {
        // SAFETY: querying the calling thread's policy.
        self.0.push(unsafe { libc::sched_getscheduler(0) });
    }
    fn should_stop(&self) -> bool {
        false
    }
}

/// `--priority high` runs the issuing thread as SCHED_FIFO during the pass
/// and gives the normal policy back afterwards; without the privilege the
/// probe says so (and `tracemark replay` falls back with a warning).
#[test]
fn high_priority_is_real_time_during_the_pass_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.bin");
    let recs: Vec<IoRecord> = (0..200u64)
        .map(|i| rec(i * 100, Op::Read, (i % 16) * 64 * KIB, 4 * KIB))
        .collect();
    let src = MemorySource::new("p", recs);
    let opts = ReplayOptions {
        priority: replayer::options::Priority::High,
        ..one_pass(TimingMode::Realtime)
    };
    // SAFETY: querying the calling thread's policy.
    let before = unsafe { libc::sched_getscheduler(0) };
    let available = replayer::engine::realtime_priority_available();
    let mut seen = PolicySeen::default();
    replayer::run_suite(&[&src], Some(&path), &opts, &mut seen).unwrap();
    assert_eq!(seen.0.len(), 200);
    // SAFETY: as above.
    assert_eq!(
        unsafe { libc::sched_getscheduler(0) },
        before,
        "policy restored"
    );
    match available {
        Ok(()) => assert!(
            seen.0.iter().all(|p| *p == libc::SCHED_FIFO),
            "{:?}",
            &seen.0[..5]
        ),
        Err(e) => {
            assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
            assert!(seen.0.iter().all(|p| *p == before));
        }
    }
}

/// A chain of 20 dependent reads, each taking 20 ms in the trace and issued
/// 1 ms after the previous one completed: the last is issued at 0.399 s. On
/// a scratch file a read takes well under a millisecond. Think pacing keeps
/// only the think times (about 20 ms in all); the trace's times keep 0.4 s.
#[test]
fn think_pacing_brings_dependent_io_forward_on_a_faster_target() {
    let dir = tempfile::tempdir().unwrap();
    let recs: Vec<IoRecord> = (0..20u64)
        .map(|i| with_latency(rec(i * 21_000, Op::Read, i * 256 * KIB, 4 * KIB), 20_000))
        .collect();
    let think = one_pass(TimingMode::Realtime);
    assert_eq!(think.pacing, Pacing::Think, "the default");
    let (p, ev) = play(dir.path(), recs.clone(), &think);
    assert_dependencies_kept(&recs, &ev);
    assert!(
        p < 0.25,
        "think pacing played {p} s: the 20 ms latencies of the trace were kept"
    );
    // Each I/O waits its think time after the one before completed.
    for w in ev.windows(2) {
        assert!(
            w[1].submit_ns >= w[0].complete_ns + 1_000_000,
            "I/O {} submitted {} ns after its dependency completed, under its 1 ms think time",
            w[1].index,
            w[1].submit_ns as i64 - w[0].complete_ns as i64
        );
    }
    let trace = ReplayOptions {
        pacing: Pacing::Trace,
        ..one_pass(TimingMode::Realtime)
    };
    let (p, ev) = play(dir.path(), recs.clone(), &trace);
    assert!(p >= 0.399, "trace pacing played {p} s, the trace 0.399 s");
    for e in &ev {
        let t = recs[e.index as usize].time.0;
        assert!(
            e.submit_ns >= t,
            "trace pacing: I/O {} submitted at {} ns, before its time in the trace ({t} ns)",
            e.index,
            e.submit_ns
        );
    }
}
