//! `tracemark capture` through bio events: a bio-based device (zram) is
//! captured through its bio events, I/O by I/O, and `--events bio` on a loop
//! device or a partition gives the same I/Os as its request events. Needs
//! root (CI runs as root).

use crate::capture::{capture_script, dd, dd_plan, ios, note, records, KIB, MIB};
use crate::support::{tracemark, SystemTest};
use std::path::Path;
use trace_format::{IoRecord, IssueEvent, Op, TraceFile};

/// Latencies of a bio capture: every record has one, or (a kernel that does
/// not trace bio completions) none has and the trace and stderr say so.
/// `shortest_ns` is the least latency possible at the capture's resolution:
/// 1 with ns times; 0 with µs times, where a zram read of a page never
/// written (zero-filled, well under a microsecond) rounds to 0.
fn check_bio_latencies(out: &Path, recs: &[IoRecord], stderr: &str, shortest_ns: u64) {
    let no_completion = note(
        out,
        "capture: bios whose completion the kernel did not report (no latency)",
    );
    if recs.iter().all(|r| r.latency.is_some()) {
        assert_eq!(no_completion, None);
        for r in recs {
            let lat = r.latency.unwrap().0;
            assert!(
                lat >= shortest_ns && lat < 5_000_000_000,
                "latency {lat}: {r:?}"
            );
        }
    } else {
        assert!(recs.iter().all(|r| r.latency.is_none()), "{recs:?}");
        assert_eq!(no_completion, Some(recs.len() as u64));
        assert!(
            stderr.contains("the trace has no latencies"),
            "a capture without latencies must say so: {stderr}"
        );
    }
}

#[test]
fn zram_is_captured_through_its_bio_events_io_by_io() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    let Some(zram) = t.zram(256) else {
        return;
    };
    let name = zram.name();
    // Within its 256 MiB.
    let plan: [(Op, u64, u64, u64); 7] = [
        (Op::Write, 5 * MIB, 4 * KIB, 3),
        (Op::Write, 100 * MIB, 128 * KIB, 1),
        (Op::Read, 5 * MIB, 4 * KIB, 3),
        (Op::Write, 64 * MIB + 512 * KIB, 16 * KIB, 2),
        (Op::Read, 100 * MIB, 64 * KIB, 2),
        (Op::Read, 200 * MIB, 8 * KIB, 4),
        (Op::Write, 255 * MIB, 32 * KIB, 1),
    ];
    let (script, expected) = dd_plan(&zram.path, &plan);

    // The binary ring buffer.
    let raw_out = t.dir().join("zram.tmt");
    let (stdout, stderr) = capture_script(&zram.path, &raw_out, &[], &script);
    assert!(
        stdout.contains(&format!("{} I/Os on {name}", expected.len())),
        "{stdout}"
    );
    assert!(
        stdout.contains("; bio events; read from the binary ring buffer, ns times"),
        "{stdout}"
    );
    assert!(stdout.contains("lost events: 0"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "{name} is a bio-based device (no request queue): capturing its bio events"
        )),
        "the choice of events must be said: {stderr}"
    );
    t.assert_tracing_restored();
    let trace = TraceFile::open(&raw_out).unwrap();
    assert_eq!(trace.header().issue_event, IssueEvent::Queue);
    let info = trace.header().original_device.clone().unwrap();
    let (major, minor) = zram.dev_id();
    assert_eq!(
        (info.id.major, info.id.minor, info.name.as_str()),
        (major, minor, name.as_str())
    );
    assert_eq!(trace.footer().tail.skipped.count, 0);
    let raw = records(&raw_out);
    assert_eq!(
        ios(&raw),
        expected,
        "the zram capture differs from the workload"
    );
    assert!(raw.windows(2).all(|w| w[0].time <= w[1].time));
    assert!(raw.iter().all(|r| r.device == 0));
    check_bio_latencies(&raw_out, &raw, &stderr, 1);
    for key in [
        "completions without a matching request",
        "capture: completions without data or flush (end of a flush sequence; not paired)",
    ] {
        assert_eq!(note(&raw_out, key).unwrap_or(0), 0, "{key}");
    }

    // The text pipe: the same I/Os, microsecond times.
    let text_out = t.dir().join("zram-text.tmt");
    let (stdout, stderr) = capture_script(&zram.path, &text_out, &["--text-pipe"], &script);
    assert!(
        stdout.contains("; bio events; read from the text trace_pipe, µs times"),
        "{stdout}"
    );
    t.assert_tracing_restored();
    let text = records(&text_out);
    assert_eq!(ios(&text), expected, "the text pipe capture differs");
    assert!(text.iter().all(|r| r.time.0 % 1000 == 0));
    check_bio_latencies(&text_out, &text, &stderr, 0);

    // Request events of a bio-based device: refused, clearly, with nothing
    // written and nothing changed.
    let refused = t.dir().join("refused.tmt");
    let run = tracemark()
        .args(["capture", "--events", "request", "--device"])
        .arg(&zram.path)
        .arg("-o")
        .arg(&refused)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(&format!("/dev/{name}: {name} is a bio-based device"))
            && stderr.contains("--events bio"),
        "{stderr}"
    );
    assert!(!refused.exists());
    t.assert_tracing_restored();
}

#[test]
fn bio_events_of_a_loop_device_give_the_same_ios_as_its_request_events() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    let dev = t.loop_device(64);
    // One I/O in flight at a time, each smaller than the loop device's
    // largest request: nothing can merge or split.
    let plan: [(Op, u64, u64, u64); 6] = [
        (Op::Write, 2 * MIB, 4 * KIB, 4),
        (Op::Write, 9 * MIB, 64 * KIB, 2),
        (Op::Read, 2 * MIB, 4 * KIB, 4),
        (Op::Read, 30 * MIB, 16 * KIB, 3),
        (Op::Write, 47 * MIB + 256 * KIB, 128 * KIB, 1),
        (Op::Read, 9 * MIB, 128 * KIB, 1),
    ];
    let (script, expected) = dd_plan(&dev.path, &plan);

    let req_out = t.dir().join("request.tmt");
    let (stdout, _) = capture_script(&dev.path, &req_out, &["--events", "request"], &script);
    assert!(stdout.contains("; request events; read from"), "{stdout}");
    let bio_out = t.dir().join("bio.tmt");
    let (stdout, stderr) = capture_script(&dev.path, &bio_out, &["--events", "bio"], &script);
    assert!(
        stdout.contains("; bio events; read from the binary ring buffer"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "capturing the bio events of {} (asked for)",
            dev.name()
        )),
        "{stderr}"
    );
    t.assert_tracing_restored();

    let req = records(&req_out);
    let bio = records(&bio_out);
    assert_eq!(ios(&req), expected);
    assert_eq!(ios(&bio), ios(&req), "bio and request events disagree");
    assert_eq!(
        TraceFile::open(&req_out).unwrap().header().issue_event,
        IssueEvent::Issue
    );
    assert_eq!(
        TraceFile::open(&bio_out).unwrap().header().issue_event,
        IssueEvent::Queue
    );
    // A loop device's bios complete as requests: block_rq_complete gives
    // every bio its latency.
    for r in &bio {
        let lat = r.latency.expect("a bio without latency").0;
        assert!(lat > 0 && lat < 5_000_000_000, "latency {lat}");
    }
    for key in [
        "completions without a matching request",
        "requests without a completion (no latency)",
    ] {
        assert_eq!(note(&bio_out, key).unwrap_or(0), 0, "{key}");
    }
}

#[test]
fn bio_events_of_a_partition_keep_the_partition_and_map_offsets_into_it() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    // Partition 1: 16 MiB from sector 8192 (4 MiB) of a 32 MiB disk.
    let (disk, part) = t.loop_with_partition(32, 8192, 32768);
    let script = [
        dd(&part, Op::Write, MIB, 4 * KIB, 1),
        // Whole-disk I/O before and after the partition: not the partition's.
        dd(&disk.path, Op::Write, MIB, 4 * KIB, 1),
        dd(&disk.path, Op::Read, 24 * MIB, 16 * KIB, 1),
        dd(&part, Op::Read, 2 * MIB, 8 * KIB, 1),
        dd(&part, Op::Write, 15 * MIB, 32 * KIB, 1),
    ]
    .join(" && ");
    let out = t.dir().join("p.tmt");
    let (stdout, _) = capture_script(&part, &out, &["--events", "bio"], &script);
    assert!(stdout.contains("; bio events; "), "{stdout}");
    t.assert_tracing_restored();
    let recs = records(&out);
    assert_eq!(
        ios(&recs),
        vec![
            (Op::Write, MIB, 4 * KIB),
            (Op::Read, 2 * MIB, 8 * KIB),
            (Op::Write, 15 * MIB, 32 * KIB)
        ]
    );
    assert!(recs.iter().all(|r| r.latency.is_some()), "{recs:?}");
    assert_eq!(
        note(
            &out,
            "capture: I/O of the whole disk outside the partition (not kept)"
        ),
        None,
        "the kernel-side filter keeps the disk's other I/O out"
    );
}
