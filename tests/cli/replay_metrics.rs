//! Metrics against values computed independently from the per-I/O timestamps.

use crate::support::replay::*;
use replayer::{IoEvent, IoLog, MemorySource, ReplayOptions, TimingMode, TraceSource};
use trace_format::{IoRecord, Op};

/// Total time covered by at least one [submit, complete] interval.
fn union_ns(ev: &[&IoEvent]) -> u64 {
    let mut iv: Vec<(u64, u64)> = ev.iter().map(|e| (e.submit_ns, e.complete_ns)).collect();
    iv.sort();
    let (mut total, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in iv {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-9 * b.abs().max(1.0),
        "{what}: reported {a}, computed {b}"
    );
}

#[test]
fn busy_time_bandwidth_and_access_time_match_the_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    // Ten groups 20 ms apart: 8 reads of 64 KiB and 4 writes of 32 KiB each,
    // plus one flush per group (excluded from busy time and access time).
    let mut recs: Vec<IoRecord> = Vec::new();
    for g in 0..10u64 {
        let t = g * 20_000;
        for i in 0..8 {
            recs.push(rec(t + i, Op::Read, (g * 16 + i) * 256 * KIB, 64 * KIB));
        }
        for i in 0..4 {
            recs.push(rec(
                t + 8 + i,
                Op::Write,
                (g * 16 + 8 + i) * 256 * KIB,
                32 * KIB,
            ));
        }
        recs.push(rec(t + 12, Op::Flush, 0, 0));
    }
    let (r, ev) = play_in_memory(dir.path(), recs.clone(), &one_pass(TimingMode::Realtime));
    let t = &r.traces[0];
    let pass = &t.passes[0];
    assert_eq!(ev.len(), recs.len());
    assert!(ev.iter().all(|e| e.result >= 0 && e.result as u64 == e.len));

    let data: Vec<&IoEvent> = ev.iter().filter(|e| e.op.carries_data()).collect();
    let busy_ns = union_ns(&data);
    let bytes: u64 = data.iter().map(|e| e.len).sum();
    assert_eq!(bytes, 10 * (8 * 64 + 4 * 32) * KIB);
    assert_eq!(pass.read_bytes + pass.write_bytes, bytes);
    let access_us = data
        .iter()
        .map(|e| (e.complete_ns - e.submit_ns) as f64)
        .sum::<f64>()
        / data.len() as f64
        / 1e3;
    let bandwidth = bytes as f64 / (busy_ns as f64 / 1e9) / 1e6;
    let first = ev.iter().map(|e| e.submit_ns).min().unwrap();
    let last = ev.iter().map(|e| e.complete_ns).max().unwrap();

    close(pass.busy_s, busy_ns as f64 / 1e9, "busy time");
    close(pass.bandwidth_mb_s, bandwidth, "bandwidth");
    close(pass.access_time_us, access_us, "access time");
    close(
        pass.playback_s,
        (last - first) as f64 / 1e9,
        "playback time",
    );
    close(pass.score, (bandwidth / (access_us / 1e6)).sqrt(), "score");
    close(t.score, pass.score, "trace score over one pass");
    // The idle between groups is not busy time: busy time is the union of
    // the I/Os' intervals (checked above), which has gaps wherever the
    // events do. (On a loaded machine a group's I/Os can take most of the
    // 20 ms between groups, so no fixed share of the playback is asserted.)
    let events_busy_everywhere = busy_ns >= last - first;
    assert!(
        events_busy_everywhere || pass.busy_s < pass.playback_s,
        "busy {} vs playback {}",
        pass.busy_s,
        pass.playback_s
    );
    assert!(pass.playback_s > 0.18);

    // Percentiles from the HDR histogram agree with the sorted latencies (3 significant digits).
    let mut reads: Vec<u64> = data
        .iter()
        .filter(|e| e.op == Op::Read)
        .map(|e| e.complete_ns - e.submit_ns)
        .collect();
    reads.sort();
    let lat = &t.latency_us["read"];
    let max_us = *reads.last().unwrap() as f64 / 1e3;
    assert!(
        (lat.max - max_us).abs() <= max_us * 0.002,
        "max {} vs {}",
        lat.max,
        max_us
    );
    let median_us = reads[(reads.len() - 1) / 2] as f64 / 1e3;
    assert!(
        (lat.p50 - median_us).abs() <= median_us * 0.01 + 0.01,
        "p50 {} vs {}",
        lat.p50,
        median_us
    );
    assert_eq!(pass.ops["flush"].count, 10);
    assert_eq!(pass.ops["read"].count, 80);
    assert_eq!(pass.ops["write"].count, 40);
}

#[test]
fn suite_figures_are_geometric_means_of_trace_figures() {
    let dir = tempfile::tempdir().unwrap();
    let small: Vec<IoRecord> = (0..300u64)
        .map(|i| rec(i, Op::Read, (i % 50) * 64 * KIB, 4 * KIB))
        .collect();
    let large: Vec<IoRecord> = (0..100u64)
        .map(|i| rec(i, Op::Write, (i % 20) * MIB, 256 * KIB))
        .collect();
    let a = MemorySource::new("small", small);
    let b = MemorySource::new("large", large);
    let opts = ReplayOptions {
        mode: TimingMode::Compressed,
        passes: 2,
        ..Default::default()
    };
    let srcs: [&dyn TraceSource; 2] = [&a, &b];
    let r = replayer::run_suite(
        &srcs,
        Some(&dir.path().join("s.bin")),
        &opts,
        &mut IoLog::default(),
    )
    .unwrap();
    assert_eq!(r.traces.len(), 2);
    for t in &r.traces {
        assert_eq!(t.passes.len(), 2);
        assert!(t.warmup.is_some());
        let mean = (t.passes[0].score + t.passes[1].score) / 2.0;
        close(t.score, mean, "trace score is the mean over passes");
        assert!(t.score_spread.min <= t.score && t.score <= t.score_spread.max);
    }
    let s = r.suite.unwrap();
    close(
        s.score,
        (r.traces[0].score * r.traces[1].score).sqrt(),
        "suite score",
    );
    close(
        s.bandwidth_mb_s,
        (r.traces[0].bandwidth_mb_s * r.traces[1].bandwidth_mb_s).sqrt(),
        "suite bandwidth",
    );
    close(
        s.access_time_us,
        (r.traces[0].access_time_us * r.traces[1].access_time_us).sqrt(),
        "suite access time",
    );
}

/// Writes the trace recorded with FUA or a preflush are replayed whole: each
/// completes with its bytes, and a preflush of no data is a flush, not an
/// empty write skipped (the bios the device sees are checked in
/// tests/system/replay_exact.rs).
#[test]
fn fua_and_preflush_writes_complete_and_a_bare_preflush_is_a_flush() {
    use trace_format::Flags;
    let dir = tempfile::tempdir().unwrap();
    let recs = vec![
        with_flags(rec(0, Op::Write, 0, 8 * KIB), Flags::FUA),
        with_flags(rec(100, Op::Write, 64 * KIB, 8 * KIB), Flags::PREFLUSH),
        with_flags(
            rec(200, Op::Write, 128 * KIB, 8 * KIB),
            Flags::PREFLUSH | Flags::FUA,
        ),
        with_flags(rec(300, Op::Write, 192 * KIB, 0), Flags::PREFLUSH),
        rec(400, Op::Read, 0, 8 * KIB),
    ];
    let (r, ev) = play_in_memory(dir.path(), recs, &one_pass(TimingMode::Compressed));
    let mut got: Vec<(u64, Op, i32)> = ev.iter().map(|e| (e.index, e.op, e.result)).collect();
    got.sort();
    let k = 8 * KIB as i32;
    assert_eq!(
        got,
        vec![
            (0, Op::Write, k),
            (1, Op::Write, k),
            (2, Op::Write, k),
            (3, Op::Flush, 0),
            (4, Op::Read, k),
        ]
    );
    assert_eq!(r.traces[0].skipped.empty, 0);
    // The three writes that carry a flag are counted; the bare preflush is
    // a flush.
    assert_eq!(r.traces[0].cache_flag_writes, Some(3));
    let (r, _) = play_in_memory(
        dir.path(),
        vec![rec(0, Op::Write, 0, 8 * KIB)],
        &one_pass(TimingMode::Compressed),
    );
    assert_eq!(r.traces[0].cache_flag_writes, Some(0));
}
