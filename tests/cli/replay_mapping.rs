//! Address mapping options: several targets (by order and by `--device-map`,
//! index or MAJ:MIN), `--target-offset`, `--skip-ops`. Checked I/O by I/O
//! from the engine's per-I/O events against mappings computed here
//! independently, on file targets (no root needed).

use crate::support::replay::*;
use replayer::options::{DeviceRoute, DeviceSelector};
use replayer::{IoEvent, IoLog, MappingKind, MemorySource, ReplayOptions, TimingMode};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trace_format::{DeviceEntry, DeviceId, IoRecord, Op, TraceHeader, TraceTail, TraceWriter};

fn opts() -> ReplayOptions {
    ReplayOptions {
        mode: TimingMode::Compressed,
        passes: 1,
        warmup: false,
        ..Default::default()
    }
}

/// Two source devices with reads and writes on scattered, far-apart 1 MiB
/// regions (device 0: 5 regions, device 1: 3), plus flushes on both.
fn two_device_trace() -> Vec<IoRecord> {
    let mut recs = Vec::new();
    for i in 0..120u64 {
        let device = (i % 3 == 0) as u16;
        let regions: &[u64] = if device == 0 {
            &[7, 900, 901, 40_000, 123_456]
        } else {
            &[3, 77_777, 500_000]
        };
        let region = regions[(i as usize / 3) % regions.len()];
        let op = match i % 7 {
            0 => Op::Flush,
            1 | 2 => Op::Write,
            _ => Op::Read,
        };
        let (offset, len) = if op == Op::Flush {
            (0, 0)
        } else {
            (region * MIB + (i % 5) * 96 * KIB, 4 * KIB * (1 + i % 8))
        };
        let mut r = rec(i * 20, op, offset, len);
        r.device = device;
        recs.push(r);
    }
    recs
}

/// Compact mapping of one device, computed independently: its touched
/// regions in order, packed from `start`.
fn compact_of(recs: &[IoRecord], device: u16, start: u64) -> BTreeMap<u64, u64> {
    let mut regions: Vec<u64> = recs
        .iter()
        .filter(|r| r.device == device && r.op.carries_data() && r.len.0 > 0)
        .flat_map(|r| (r.offset.0 / MIB)..=((r.offset.0 + r.len.0 - 1) / MIB))
        .collect();
    regions.sort();
    regions.dedup();
    regions
        .into_iter()
        .enumerate()
        .map(|(i, r)| (r, start + i as u64 * MIB))
        .collect()
}

fn check_routed(
    recs: &[IoRecord],
    events: &[IoEvent],
    target_of_device: impl Fn(u16) -> u32,
    start: u64,
) {
    let maps: Vec<BTreeMap<u64, u64>> = (0..2).map(|d| compact_of(recs, d, start)).collect();
    assert_eq!(events.len(), recs.len(), "every record issued once");
    for e in events {
        let r = recs[e.index as usize];
        assert_eq!(e.op, r.op, "{e:?}");
        assert_eq!(
            e.target,
            target_of_device(r.device),
            "record {}: {e:?}",
            e.index
        );
        assert!(e.result >= 0, "{e:?}");
        if r.op == Op::Flush {
            continue;
        }
        let map = &maps[r.device as usize];
        assert_eq!(
            e.offset,
            map[&(r.offset.0 / MIB)] + r.offset.0 % MIB,
            "record {} of device {}",
            e.index,
            r.device
        );
        assert_eq!(e.len, r.len.0);
    }
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

#[test]
fn several_targets_take_the_devices_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
    let recs = two_device_trace();
    let src = MemorySource::new("two", recs.clone());
    let o = ReplayOptions {
        extra_targets: vec![b.clone()],
        ..opts()
    };
    let mut log = IoLog::default();
    let r = replayer::run_suite(&[&src], Some(&a), &o, &mut log).unwrap();
    check_routed(&recs, &log.0, |d| d as u32, 0);
    // each file sized to its own device's regions (5 and 3 MiB), not the sum
    assert_eq!(file_len(&a), 5 * MIB);
    assert_eq!(file_len(&b), 3 * MIB);
    assert_eq!(r.traces[0].ios, recs.len() as u64);
    // flushes went to both files
    assert!(log.0.iter().any(|e| e.op == Op::Flush && e.target == 1));
    assert!(log.0.iter().any(|e| e.op == Op::Flush && e.target == 0));
}

#[test]
fn one_target_keeps_every_device_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.bin");
    let recs = two_device_trace();
    let src = MemorySource::new("two", recs.clone());
    let mut log = IoLog::default();
    replayer::run_suite(&[&src], Some(&a), &opts(), &mut log).unwrap();
    assert!(log.0.iter().all(|e| e.target == 0));
    // device 0's 5 regions, then device 1's 3
    let mut m = compact_of(&recs, 0, 0);
    let dev1 = compact_of(&recs, 1, 5 * MIB);
    for e in &log.0 {
        let r = recs[e.index as usize];
        if r.op == Op::Flush {
            continue;
        }
        let map = if r.device == 0 { &mut m } else { &dev1 };
        assert_eq!(e.offset, map[&(r.offset.0 / MIB)] + r.offset.0 % MIB);
    }
    assert_eq!(file_len(&a), 8 * MIB);
}

/// Writes `recs` as a `.tmt` whose device table is `devices`.
fn write_with_devices(path: &Path, recs: &[IoRecord], devices: &[(u32, u32, &str)]) {
    let out = std::fs::File::create(path).unwrap();
    let mut w = TraceWriter::new(
        std::io::BufWriter::new(out),
        &TraceHeader::new("multi", "test"),
    )
    .unwrap();
    for r in recs {
        w.push(r).unwrap();
    }
    let tail = TraceTail {
        devices: devices
            .iter()
            .map(|&(major, minor, name)| DeviceEntry {
                id: DeviceId { major, minor },
                name: name.into(),
            })
            .collect(),
        ..Default::default()
    };
    w.finish(&tail).unwrap();
}

#[test]
fn device_map_routes_by_major_minor_and_by_index() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
    let recs = two_device_trace();
    let path = dir.path().join("multi.tmt");
    write_with_devices(&path, &recs, &[(8, 16, "sdb"), (8, 32, "sdc")]);
    let src = replayer::TmtSource::open(&path).unwrap();
    // device 0 (8:16) onto b, device 1 (8:32) onto a: the reverse of the order
    let route = |s: &str| -> DeviceRoute { s.parse().unwrap() };
    let o = ReplayOptions {
        device_map: vec![
            route(&format!("8:16={}", b.display())),
            route(&format!("1={}", a.display())),
        ],
        ..opts()
    };
    let mut log = IoLog::default();
    replayer::run_suite(&[&src], Some(&a), &o, &mut log).unwrap();
    check_routed(&recs, &log.0, |d| if d == 0 { 1 } else { 0 }, 0);
    assert_eq!(file_len(&a), 3 * MIB);
    assert_eq!(file_len(&b), 5 * MIB);

    // a route naming no device of the trace is an error, not ignored
    let o = ReplayOptions {
        device_map: vec![route(&format!("8:48={}", b.display()))],
        ..opts()
    };
    let e = replayer::run_suite(&[&src], Some(&a), &o, &mut IoLog::default()).unwrap_err();
    assert!(e.to_string().contains("no trace has device 8:48"), "{e}");
    assert!(matches!(
        "x=/dev/sdb".parse::<DeviceRoute>(),
        Err(m) if m.contains("neither a device index")
    ));
    assert_eq!(
        "3=/tmp/t".parse::<DeviceRoute>().unwrap().source,
        DeviceSelector::Index(3)
    );
}

#[test]
fn target_offset_moves_every_mapping_and_sizes_the_file() {
    let recs: Vec<IoRecord> = two_device_trace()
        .into_iter()
        .map(|mut r| {
            r.device = 0;
            r
        })
        .collect();
    let off = 3 * MIB + 8 * KIB;
    for kind in [
        MappingKind::Compact,
        MappingKind::Wrap,
        MappingKind::Identity,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.bin");
        let mut recs = recs.clone();
        if kind == MappingKind::Identity {
            // keep the identity file small: offsets below 64 MiB
            for r in &mut recs {
                r.offset.0 %= 64 * MIB;
            }
        }
        let src = MemorySource::new("one", recs.clone());
        let o = ReplayOptions {
            mapping: kind,
            target_offset: off,
            ..opts()
        };
        let mut log = IoLog::default();
        let res = replayer::run_suite(&[&src], Some(&a), &o, &mut log).unwrap();
        let size = res.target.size_bytes;
        assert_eq!(size, file_len(&a));
        let compact = compact_of(&recs, 0, off);
        assert_eq!(log.0.len(), recs.len());
        for e in &log.0 {
            let r = recs[e.index as usize];
            if r.op == Op::Flush {
                continue;
            }
            assert!(
                e.offset >= off && e.offset + e.len <= size,
                "{kind:?}: {e:?}"
            );
            assert_eq!(e.offset % 4096, 0);
            let want = match kind {
                MappingKind::Compact => compact[&(r.offset.0 / MIB)] + r.offset.0 % MIB,
                MappingKind::Identity => off + r.offset.0,
                MappingKind::Wrap => off + r.offset.0 % (size - off),
            };
            // wrap may move a request back from the end; the others never need to
            if kind != MappingKind::Wrap || want + e.len <= size {
                assert_eq!(e.offset, want, "{kind:?}: {e:?}");
            }
        }
        match kind {
            MappingKind::Compact | MappingKind::Wrap => assert_eq!(size, off + 8 * MIB),
            MappingKind::Identity => {
                let end = recs.iter().map(|r| r.offset.0 + r.len.0).max().unwrap();
                assert_eq!(size, off + end.div_ceil(MIB) * MIB)
            }
        }
    }
}

#[test]
fn unaligned_offset_is_refused() {
    // (an offset at or past a device's end: tests/replay_safety.rs)
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.bin");
    let src = MemorySource::new("one", vec![rec(0, Op::Read, 0, 4096)]);
    let o = ReplayOptions {
        target_offset: 1000,
        ..opts()
    };
    let e = replayer::run_suite(&[&src], Some(&a), &o, &mut IoLog::default()).unwrap_err();
    assert!(e.to_string().contains("not a multiple"), "{e}");
}

#[test]
fn skipped_operations_are_counted_and_never_sent() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.bin");
    let mut recs = Vec::new();
    for i in 0..90u64 {
        let op = [Op::Read, Op::Write, Op::Flush, Op::Discard, Op::Read][i as usize % 5];
        let len = if op == Op::Flush { 0 } else { 8 * KIB };
        recs.push(rec(i * 10, op, (i % 9) * MIB, len));
    }
    let count = |op| recs.iter().filter(|r| r.op == op).count() as u64;
    let src = MemorySource::new("mixed", recs.clone());
    let o = ReplayOptions {
        skip_ops: vec![Op::Flush, Op::Write, Op::Discard],
        ..opts()
    };
    let mut log = IoLog::default();
    let r = replayer::run_suite(&[&src], Some(&a), &o, &mut log).unwrap();
    assert!(log.0.iter().all(|e| e.op == Op::Read), "only reads sent");
    assert_eq!(log.0.len() as u64, count(Op::Read));
    let t = &r.traces[0];
    let s = serde_json::to_value(t).unwrap();
    assert_eq!(
        s["skipped"]["by_option"],
        count(Op::Write) + count(Op::Flush) + count(Op::Discard)
    );
    assert_eq!(s["skipped"]["read_only"], 0);
    assert_eq!(s["skipped"]["discards"], 0);
    assert_eq!(t.write_bytes, 0);
    assert_eq!(t.read_bytes, count(Op::Read) * 8 * KIB);
}

/// `tracemark replay` with the new options, end to end: repeated --target,
/// --device-map with MAJ:MIN, --target-offset with a unit, --skip-ops.
#[test]
fn command_line_options_reach_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let recs = two_device_trace();
    let trace = dir.path().join("multi.tmt");
    write_with_devices(&trace, &recs, &[(8, 16, "sdb"), (8, 32, "sdc")]);
    let (a, b): (PathBuf, PathBuf) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
    let json = dir.path().join("r.json");
    let out = replay(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--no-warmup",
            "--device-map",
            &format!("8:32={}", b.display()),
            "--target",
            a.to_str().unwrap(),
            "--target-offset",
            "1M",
            "--skip-ops",
            "flush,write",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success());
    // a: offset + device 0's 5 regions; b: offset + device 1's 3
    assert_eq!(file_len(&a), MIB + 5 * MIB);
    assert_eq!(file_len(&b), MIB + 3 * MIB);
    let v = crate::support::read_json(&json);
    assert_eq!(v["options"]["target_offset"], MIB);
    assert_eq!(
        v["options"]["skip_ops"],
        serde_json::json!(["Flush", "Write"])
    );
    assert_eq!(v["options"]["device_map"][0]["source"]["id"]["major"], 8);
    let t = &v["traces"][0];
    let n = |op| recs.iter().filter(|r| r.op == op).count() as u64;
    assert_eq!(t["ios"], n(Op::Read));
    assert_eq!(t["skipped"]["by_option"], n(Op::Write) + n(Op::Flush));
    assert_eq!(t["skipped"]["read_only"], 0);
    // both targets are described, in order
    assert_eq!(v["target"]["path"], a.to_str().unwrap());
    assert_eq!(v["target"]["others"][0]["path"], b.to_str().unwrap());
    assert_eq!(v["target"]["others"].as_array().map(Vec::len), Some(1));

    // a bad route names the problem
    let out = replay(
        dir.path(),
        &[trace.to_str().unwrap(), "--device-map", "sdb=/tmp/x"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither a device index"));
}
