//! Real I/O on a loop device captured through tracefs — block events and the
//! `blk` tracer — converted through the library and read back: every I/O the
//! test made (op, offset, length) must appear exactly once, with its latency.

use crate::support;
use crate::support::{LoopDevice, SystemTest, TraceSetting};
use recorder::convert::{convert, ConvertOptions};
use recorder::normalize::EventChoice;
use std::path::{Path, PathBuf};
use std::process::Command;
use trace_format::{DeviceId, IoRecord, IssueEvent, Op, TraceFile};

const MIB: u64 = 1 << 20;

/// The I/O the test makes: (op, byte offset, byte length), all inside
/// [16 MiB, 48 MiB) of a 64 MiB device, away from where probes read.
const PLAN: [(Op, u64, u64); 7] = [
    (Op::Write, 16 * MIB, 4096),
    (Op::Write, 20 * MIB + 8192, 65536),
    (Op::Read, 16 * MIB, 4096),
    (Op::Read, 24 * MIB + 4096, 8192),
    (Op::Write, 30 * MIB, 131072),
    (Op::Read, 40 * MIB + 512 * 1024, 131072),
    (Op::Read, 47 * MIB, 512),
];
const PLANNED_RANGE: std::ops::Range<u64> = 16 * MIB..48 * MIB;

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the plan with direct I/O, then one fsync (a flush request).
fn do_io(dev: &Path) {
    for (op, offset, len) in PLAN {
        let mut dd = Command::new("dd");
        match op {
            Op::Write => dd.args([
                "if=/dev/zero".to_string(),
                format!("of={}", dev.display()),
                format!("seek={offset}"),
                "oflag=direct,seek_bytes".to_string(),
                "conv=notrunc".to_string(),
            ]),
            _ => dd.args([
                format!("if={}", dev.display()),
                "of=/dev/null".to_string(),
                format!("skip={offset}"),
                "iflag=direct,skip_bytes".to_string(),
            ]),
        };
        run(dd.args([format!("bs={len}"), "count=1".into(), "status=none".into()]));
    }
    // An fsync of the device: the block layer sends one flush.
    run(Command::new("dd").args([
        "if=/dev/zero".to_string(),
        format!("of={}", dev.display()),
        "count=0".to_string(),
        "conv=notrunc,fsync".to_string(),
        "status=none".to_string(),
    ]));
}

fn clear(root: &Path) {
    std::fs::write(root.join("trace"), "").expect("clear the trace buffer");
}

fn save_trace(root: &Path, to: &Path) {
    let text = std::fs::read(root.join("trace")).expect("read the trace");
    std::fs::write(to, text).expect("save the trace");
}

/// Captures the plan with block events of `dev` enabled, in a private
/// tracing instance.
fn capture_events(t: &SystemTest, dev: &LoopDevice, to: &Path) {
    let instance = t.instance();
    let root = &instance.dir;
    let events = root.join("events/block");
    let (major, minor) = dev.dev_id();
    std::fs::write(root.join("buffer_size_kb"), "8192").expect("buffer size");
    for e in [
        "block_bio_queue",
        "block_rq_insert",
        "block_rq_issue",
        "block_rq_requeue",
        "block_rq_complete",
    ] {
        let filter = format!("dev == {}", (major << 20) | minor);
        std::fs::write(events.join(e).join("filter"), filter).expect("event filter");
        std::fs::write(events.join(e).join("enable"), "1").expect("enable an event");
    }
    std::fs::write(root.join("tracing_on"), "1").expect("tracing on");
    do_io(&dev.path);
    std::fs::write(root.join("tracing_on"), "0").expect("tracing off");
    save_trace(root, to);
}

/// Captures the plan with the `blk` tracer on the device.
fn capture_blk_tracer(root: &Path, dev: &LoopDevice, to: &Path) {
    let _on = TraceSetting::set(root.join("tracing_on"), "1").unwrap();
    let _dev = TraceSetting::set(format!("/sys/block/{}/trace/enable", dev.name()), "1").unwrap();
    let _tracer = TraceSetting::set(root.join("current_tracer"), "blk").unwrap();
    clear(root);
    do_io(&dev.path);
    save_trace(root, to);
    drop(_tracer);
    clear(root);
}

fn read_records(path: &Path) -> (TraceFile, Vec<IoRecord>) {
    let trace = TraceFile::open(path).expect("trace opens");
    let recs = trace
        .records()
        .collect::<Result<Vec<_>, _>>()
        .expect("records decode");
    (trace, recs)
}

/// Every planned I/O appears exactly once with a latency; one flush; nothing
/// else but reads outside the planned range (udev or blkid probing).
fn check(what: &str, records: &[IoRecord]) {
    for (op, offset, len) in PLAN {
        let hits: Vec<_> = records
            .iter()
            .filter(|r| r.op == op && r.offset.0 == offset && r.len.0 == len)
            .collect();
        assert_eq!(hits.len(), 1, "{what}: {op} {offset}+{len}: {hits:?}");
        assert!(hits[0].latency.is_some(), "{what}: no latency: {hits:?}");
    }
    let flushes = records.iter().filter(|r| r.op == Op::Flush).count();
    assert_eq!(flushes, 1, "{what}: flushes");
    for r in records {
        let planned = PLAN
            .iter()
            .any(|&(op, off, len)| r.op == op && r.offset.0 == off && r.len.0 == len);
        let probe = r.op == Op::Read && !PLANNED_RANGE.contains(&r.offset.0);
        assert!(
            planned || probe || r.op == Op::Flush,
            "{what}: unexpected record {r:?}"
        );
    }
    assert!(records.windows(2).all(|w| w[0].time <= w[1].time));
}

fn convert_and_check(input: &Path, device: DeviceId, out_dir: &Path, label: &str) {
    for event in [EventChoice::Issue, EventChoice::Queue] {
        let out: PathBuf = out_dir.join(format!("{label}-{}.tmt", event.name()));
        let opts = ConvertOptions {
            event: Some(event),
            device: Some(device),
            ..Default::default()
        };
        let report =
            convert(&[input.to_path_buf()], &out, &opts).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(report.format.name(), "tracefs");
        assert_eq!(report.skipped.count, 0);
        let (trace, recs) = read_records(&out);
        assert_eq!(
            trace.header().issue_event,
            match event {
                EventChoice::Issue => IssueEvent::Issue,
                EventChoice::Queue => IssueEvent::Queue,
            }
        );
        assert_eq!(trace.header().source_format, "tracefs");
        assert_eq!(trace.footer().tail.devices.len(), 1);
        assert_eq!(trace.footer().tail.devices[0].id, device);
        check(&format!("{label} --event {}", event.name()), &recs);
    }
}

#[test]
fn real_loop_device_io_through_events_and_blk_tracer() {
    let Some(t) = SystemTest::with_tracefs(&["losetup"]) else {
        return;
    };
    let dev = t.loop_device(64);
    let (major, minor) = dev.dev_id();
    let device = DeviceId { major, minor };

    let events_txt = t.dir().join("events.txt");
    capture_events(&t, &dev, &events_txt);
    let blk_txt = t.dir().join("blk.txt");
    if t.tracefs().join("available_tracers").exists()
        && std::fs::read_to_string(t.tracefs().join("available_tracers"))
            .unwrap()
            .split_whitespace()
            .any(|t| t == "blk")
    {
        capture_blk_tracer(t.tracefs(), &dev, &blk_txt);
    } else {
        support::skip("the kernel has no blk tracer");
    }
    drop(dev);

    // Keep the captures for a failing run to be looked at.
    if let Ok(keep) = std::env::var("TRACEMARK_KEEP_CAPTURES") {
        let _ = std::fs::copy(&events_txt, Path::new(&keep).join("events.txt"));
        let _ = std::fs::copy(&blk_txt, Path::new(&keep).join("blk.txt"));
    }
    convert_and_check(&events_txt, device, t.dir(), "block events");
    if blk_txt.exists() {
        convert_and_check(&blk_txt, device, t.dir(), "blk tracer");
    }
}

#[test]
fn one_line_parser_is_public_for_live_capture() {
    use recorder::formats::block_events::Parsed;
    use recorder::formats::tracefs::{parse_line, TraceLine};
    let line = "  dd-1 [000] ..... 1.000001: block_rq_issue: 7,0 WS 4096 () 80 + 8 be,0,4 [dd]";
    let Ok(TraceLine::Parsed(Parsed::Event(e))) = parse_line(line) else {
        panic!("parse_line({line})");
    };
    assert_eq!((e.op, e.offset.0, e.len.0), (Op::Write, 80 * 512, 4096));
}
