//! Exactness measured from outside: the kernel's own record of the requests
//! issued to a loop device during a replay must be the trace, mapped.

use crate::support::replay::*;
use crate::support::{self, SystemTest};
use std::collections::BTreeMap;
use trace_format::{IoRecord, Op};

/// One compressed pass and nothing else: the device sees the replay's I/O
/// only (no warm-up; preconditioning has its own test).
const ONE_PASS_ONLY: [&str; 7] = [
    "--mode",
    "compressed",
    "--passes",
    "1",
    "--no-warmup",
    "--precondition",
    "skip",
];

/// Reads and writes of 4–128 KiB on 24 distinct 1 MiB regions scattered over a
/// 2 TB "original disk", never adjacent (so nothing could merge).
fn scattered_trace() -> Vec<IoRecord> {
    let mut recs = Vec::new();
    let mut rng = trace_format::rng::WyRand::new(0x1234_5678);
    for i in 0..400u64 {
        let x = rng.next_u64();
        let region = (x % 24) * 83_711 + 5; // distinct, far apart regions
        let slot = (x >> 20) % 7; // 7 slots of 144 KiB inside the region
        let len = 4 * KIB * (1 + (x >> 40) % 32); // 4..128 KiB
        let op = if (x >> 33) % 10 < 6 {
            Op::Read
        } else {
            Op::Write
        };
        recs.push(rec(i * 50, op, region * MIB + slot * 144 * KIB, len));
    }
    recs
}

/// The compact mapping, computed independently: touched regions in order,
/// packed from offset 0.
fn expected_mapping(recs: &[IoRecord]) -> BTreeMap<u64, u64> {
    let mut regions: Vec<u64> = recs
        .iter()
        .flat_map(|r| (r.offset.0 / MIB)..=((r.offset.0 + r.len.0 - 1) / MIB))
        .collect();
    regions.sort();
    regions.dedup();
    regions
        .into_iter()
        .enumerate()
        .map(|(i, r)| (r, i as u64 * MIB))
        .collect()
}

fn expected_issues(recs: &[IoRecord], reads_only: bool) -> Vec<Issued> {
    let map = expected_mapping(recs);
    let mut v: Vec<Issued> = recs
        .iter()
        .filter(|r| !reads_only || r.op == Op::Read)
        .map(|r| Issued {
            op: r.op,
            offset: map[&(r.offset.0 / MIB)] + r.offset.0 % MIB,
            len: r.len.0,
        })
        .collect();
    v.sort();
    v
}

fn run_exactness(read_only: bool) {
    let Some(t) = SystemTest::with_tracefs(&["losetup"]) else {
        return;
    };
    let recs = scattered_trace();
    let trace = t.dir().join("scattered.tmt");
    write_trace(&trace, "scattered", &recs);
    let dev = t.loop_device(64);
    no_merges(&dev.name());
    let (major, minor) = dev.dev_id();
    let tracer = IssueTracer::start(&t, major, minor);
    let target = dev.path.to_string_lossy().to_string();
    let json = t.dir().join("r.json");
    let mut args = vec![trace.to_str().unwrap(), "--target", &target];
    args.extend(ONE_PASS_ONLY);
    args.extend(["--json", json.to_str().unwrap()]);
    args.push(if read_only {
        "--read-only"
    } else {
        "--allow-write"
    });
    let out = replay(t.dir(), &args);
    let mut issued = tracer.stop();
    assert!(out.status.success());
    issued.sort();
    let expected = expected_issues(&recs, read_only);
    assert!(!expected.is_empty());
    if read_only {
        assert!(
            issued.iter().all(|i| i.op == Op::Read),
            "writes reached the device in --read-only"
        );
        let skipped = recs.iter().filter(|r| r.op != Op::Read).count();
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{skipped} by --read-only")));
    }
    assert_eq!(issued.len(), expected.len(), "request count differs");
    assert_eq!(
        issued, expected,
        "issued requests differ from the mapped trace"
    );
    // A loop device is blk-mq: it takes non-blocking I/O, so io_uring issues
    // inline and the result says so.
    assert_eq!(result_json(&json)["target"]["io_path"], "inline");
}

fn result_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// zram takes no non-blocking I/O, so every request runs on io_uring's worker
/// threads, submitted with IOSQE_ASYNC: the bios zram receives must still be
/// the trace, mapped, each once (zram is bio-based, so its record is
/// `block_bio_queue`; each I/O here is at most 128 KiB, one bio), and the
/// result must name the path.
#[test]
fn on_a_device_without_nowait_every_io_still_reaches_it_once() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    let Some(zram) = t.zram(256) else {
        return;
    };
    let recs = scattered_trace();
    let trace = t.dir().join("scattered.tmt");
    write_trace(&trace, "scattered", &recs);
    let (major, minor) = zram.dev_id();
    let tracer = IssueTracer::start_event(&t, "block_bio_queue", major, minor);
    let json = t.dir().join("r.json");
    let mut args = vec![
        trace.to_str().unwrap(),
        "--target",
        zram.path.to_str().unwrap(),
        "--queue-depth",
        "16",
        "--allow-write",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(ONE_PASS_ONLY);
    let out = replay(t.dir(), &args);
    let mut issued = tracer.stop();
    assert!(out.status.success());
    issued.sort();
    let expected = expected_issues(&recs, false);
    assert_eq!(issued.len(), expected.len(), "bio count differs");
    assert_eq!(issued, expected, "bios differ from the mapped trace");
    let r = result_json(&json);
    assert_eq!(r["target"]["io_path"], "io-wq");
    assert_eq!(r["traces"][0]["ios"], recs.len());
    assert!(String::from_utf8_lossy(&out.stdout).contains("takes no non-blocking I/O"));
}

#[test]
fn every_io_reaches_the_device_once_as_recorded() {
    run_exactness(false);
}

#[test]
fn read_only_sends_the_reads_and_no_write() {
    run_exactness(true);
}

/// Discards go to a block device as `BLOCK_URING_CMD_DISCARD`: the kernel's
/// record must show them as discards (rwbs `D`) at their mapped place, and
/// the result must count them as issued; where the kernel refuses the
/// command, none may reach the device and the result must count them as
/// skipped. Either way the result says which.
#[test]
fn discards_reach_the_device_as_discards_or_are_reported_skipped() {
    let Some(t) = SystemTest::with_tracefs(&["losetup"]) else {
        return;
    };
    let mut recs = Vec::new();
    for r in 0..8u64 {
        recs.push(rec(r * 100, Op::Write, r * 100 * MIB, 64 * KIB));
    }
    for r in 0..8u64 {
        let len = 64 * KIB * (1 + r % 4);
        recs.push(rec(
            1000 + r * 100,
            Op::Discard,
            r * 100 * MIB + 256 * KIB,
            len,
        ));
    }
    let discards: Vec<Issued> = recs
        .iter()
        .filter(|r| r.op == Op::Discard)
        .map(|r| Issued {
            op: Op::Discard,
            // compact: region r*100 is the r-th touched region
            offset: r.offset.0 / (100 * MIB) * MIB + r.offset.0 % MIB,
            len: r.len.0,
        })
        .collect();
    let trace = t.dir().join("discards.tmt");
    write_trace(&trace, "discards", &recs);
    let dev = t.loop_device(16);
    no_merges(&dev.name());
    let (major, minor) = dev.dev_id();
    let tracer = IssueTracer::start(&t, major, minor);
    let json = t.dir().join("r.json");
    let target = dev.path.to_string_lossy().to_string();
    let out = replay(
        t.dir(),
        &[
            trace.to_str().unwrap(),
            "--target",
            &target,
            "--allow-write",
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--no-warmup",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let issued = tracer.stop();

    assert!(out.status.success());
    let v = crate::support::read_json(&json);
    let pass = &v["traces"][0]["passes"][0];
    let sent = pass["ops"]["discard"]["count"].as_u64().unwrap_or(0);
    let skipped = pass["skipped"]["discards"].as_u64().unwrap();
    let mut seen: Vec<Issued> = issued.into_iter().filter(|i| i.op == Op::Discard).collect();
    seen.sort();
    let n = discards.len() as u64;
    if sent == n {
        eprintln!("{}: {n} discards issued as discards", support::test_name());
        assert_eq!(skipped, 0);
        assert_eq!(pass["ops"]["discard"]["errors"], 0);
        // the block layer may split a discard; compare the covered bytes
        let mut want = discards.clone();
        want.sort();
        let merged = |v: &[Issued]| -> Vec<(u64, u64)> {
            let mut out: Vec<(u64, u64)> = Vec::new();
            for i in v {
                match out.last_mut() {
                    Some(last) if last.1 == i.offset => last.1 += i.len,
                    _ => out.push((i.offset, i.offset + i.len)),
                }
            }
            out
        };
        assert_eq!(
            merged(&seen),
            merged(&want),
            "discards differ from the trace"
        );
    } else {
        eprintln!(
            "{}: the kernel refused discards; {skipped} reported skipped",
            support::test_name()
        );
        assert_eq!(skipped, n, "every discard is either sent or skipped");
        // the first may have been tried and refused; none may have been done
        assert!(
            seen.is_empty(),
            "refused discards reached the device: {seen:?}"
        );
    }
}

/// A write's cache demands as the block layer saw the bios: a flush of no
/// data (`F` first, 0 bytes), or a write at an offset, with FUA (`F` after
/// the `W`) or without.
#[derive(Debug, PartialEq, Eq)]
enum Bio {
    Flush,
    Write { offset: u64, fua: bool },
}

fn bios(issued: &[(String, u64, u64)]) -> Vec<Bio> {
    issued
        .iter()
        .map(|(rwbs, offset, len)| match rwbs.find('W') {
            Some(w) if *len > 0 => Bio::Write {
                offset: *offset,
                fua: rwbs[w + 1..].contains('F'),
            },
            _ if *len == 0 && rwbs.starts_with('F') => Bio::Flush,
            _ => panic!("unexpected request {rwbs} {offset} + {len}"),
        })
        .collect()
}

fn replay_cache_flags(skip_flushes: bool) -> Option<Vec<Bio>> {
    let t = SystemTest::with_tracefs(&["losetup"])?;
    use trace_format::Flags;
    let recs = vec![
        rec(0, Op::Write, 0, 4 * KIB),
        with_flags(rec(50, Op::Write, 64 * KIB, 4 * KIB), Flags::FUA),
        with_flags(rec(100, Op::Write, 128 * KIB, 4 * KIB), Flags::PREFLUSH),
        with_flags(
            rec(150, Op::Write, 192 * KIB, 4 * KIB),
            Flags::PREFLUSH | Flags::FUA | Flags::SYNC,
        ),
        // A preflush of no data, as a format that keeps it a write has it.
        with_flags(rec(200, Op::Write, 256 * KIB, 0), Flags::PREFLUSH),
        rec(250, Op::Flush, 0, 0),
    ];
    let trace = t.dir().join("cache.tmt");
    write_trace(&trace, "cache", &recs);
    let dev = t.loop_device(16);
    // A loop device has a write-back cache and no FUA: the block layer keeps
    // both flags on the bios it is sent (a device without a cache has them
    // stripped before they are traced).
    let cache = std::fs::read_to_string(format!("/sys/block/{}/queue/write_cache", dev.name()))
        .unwrap_or_default();
    assert_eq!(cache.trim(), "write back", "the loop device's cache mode");
    let (major, minor) = dev.dev_id();
    let tracer = IssueTracer::start_event(&t, "block_bio_queue", major, minor);
    let target = dev.path.to_string_lossy().to_string();
    let mut args = vec![
        trace.to_str().unwrap(),
        "--target",
        &target,
        "--allow-write",
        "--queue-depth",
        "1",
        "--mapping",
        "identity",
    ];
    args.extend(ONE_PASS_ONLY);
    if skip_flushes {
        args.extend(["--skip-ops", "flush"]);
    }
    let out = replay(t.dir(), &args);
    let issued = tracer.stop_with_flags();
    assert!(out.status.success());
    Some(bios(&issued))
}

/// A write the trace recorded with FUA reaches the device with FUA; one with
/// a preflush comes after a flush of the device; a preflush of no data is a
/// flush. At queue depth 1 the order is the trace's.
#[test]
fn fua_and_preflush_writes_reach_the_device_as_recorded() {
    let Some(got) = replay_cache_flags(false) else {
        return;
    };
    let w = |k: u64, fua| Bio::Write {
        offset: k * KIB,
        fua,
    };
    assert_eq!(
        got,
        vec![
            w(0, false),
            w(64, true),
            Bio::Flush,
            w(128, false),
            Bio::Flush,
            w(192, true),
            Bio::Flush,
            Bio::Flush,
        ]
    );
}

/// `--skip-ops flush` leaves the cache alone: plain writes, no flush.
#[test]
fn skipping_flushes_drops_preflush_and_fua_too() {
    let Some(got) = replay_cache_flags(true) else {
        return;
    };
    let w = |k: u64| Bio::Write {
        offset: k * KIB,
        fua: false,
    };
    assert_eq!(got, vec![w(0), w(64), w(128), w(192)]);
}
