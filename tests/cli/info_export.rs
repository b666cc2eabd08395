//! `tracemark info` and `tracemark export` on traces with known content: the
//! JSON keys docs/input-formats.md fixes, the CSV columns, and a fio iolog that fio replays.

use crate::support;
use std::path::Path;
use trace_format::*;

/// A trace with every op, flags and latencies, written through the library.
fn write_trace(path: &Path) -> Vec<IoRecord> {
    let mut header = TraceHeader::new("known", "test");
    header.description = "every op once or more".into();
    let mut w = TraceWriter::new(std::fs::File::create(path).unwrap(), &header).unwrap();
    let mut records = Vec::new();
    let ops = [
        Op::Read,
        Op::Write,
        Op::Read,
        Op::Flush,
        Op::Discard,
        Op::Write,
        Op::WriteZeroes,
    ];
    for i in 0..700u64 {
        let op = ops[(i % 7) as usize];
        let (offset, len) = if op == Op::Flush {
            (0, 0)
        } else {
            ((i * 37 % 500) * 4096, 4096 * (1 + i % 4))
        };
        let r = IoRecord {
            time: Nanos(i * 250_000),
            op,
            offset: Bytes(offset),
            len: Bytes(len),
            flags: if op == Op::Write && i % 2 == 0 {
                Flags::FUA | Flags::SYNC
            } else {
                Flags::NONE
            },
            latency: (i % 5 != 0).then_some(Nanos(80_000 + i)),
            stream: Some(42),
            device: 0,
        };
        w.push(&r).unwrap();
        records.push(r);
    }
    w.finish(&TraceTail::default()).unwrap();
    records
}

#[test]
fn info_json_has_the_spec_keys_with_independent_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tmt");
    let records = write_trace(&path);
    let out = support::tracemark()
        .args(["info", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let count = |op: Op| records.iter().filter(|r| r.op == op).count() as u64;
    let bytes = |op: Op| {
        records
            .iter()
            .filter(|r| r.op == op)
            .map(|r| r.len.0)
            .sum::<u64>()
    };
    assert_eq!(v["ios"], 700);
    assert_eq!(v["reads"], count(Op::Read));
    assert_eq!(v["writes"], count(Op::Write));
    assert_eq!(v["flushes"], count(Op::Flush));
    assert_eq!(v["discards"], count(Op::Discard));
    assert_eq!(v["read_bytes"], bytes(Op::Read));
    assert_eq!(v["write_bytes"], bytes(Op::Write));
    let last = records
        .iter()
        .map(|r| r.time.0 + r.latency.map_or(0, |l| l.0))
        .max()
        .unwrap();
    assert_eq!(v["duration_ns"], last);
    assert_eq!(v["skipped"], 0);
    // times are multiples of 250 µs, but latencies are ns-exact (80,001 ns)
    assert_eq!(v["time_step_ns"], 1);

    let human = support::tracemark()
        .arg("info")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("Read sizes") && text.contains("Skipped input: none"),
        "{text}"
    );
}

/// A source with microsecond times (a fio v3 iolog) gives a 1 µs time step;
/// the human output says so too.
#[test]
fn info_shows_the_time_resolution_of_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("t.iolog");
    let mut text = String::from("fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n");
    for i in 0..50u64 {
        // irregular whole microseconds: no step coarser than 1 µs divides them
        text.push_str(&format!(
            "{} /dev/x read {} 4096\n",
            3 + i * 17 + i * i % 5,
            i * 8192
        ));
    }
    text.push_str("900 /dev/x close\n");
    std::fs::write(&log, text).unwrap();
    let tmt = dir.path().join("t.tmt");
    let conv = support::tracemark()
        .arg("convert")
        .arg(&log)
        .arg("-o")
        .arg(&tmt)
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    let out = support::tracemark()
        .args(["info", "--json"])
        .arg(&tmt)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ios"], 50);
    assert_eq!(v["time_step_ns"], 1000);
    let human = support::tracemark().arg("info").arg(&tmt).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("time step") && l.contains("1.0 µs")),
        "{text}"
    );
}

#[test]
fn csv_export_has_one_line_per_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tmt");
    let records = write_trace(&path);
    let out = support::tracemark()
        .args(["export", "--to", "csv"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("time_ns,op,offset,length,latency_ns,flags")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), records.len());
    for (row, r) in rows.iter().zip(&records) {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f.len(), 6, "{row}");
        assert_eq!(f[0].parse::<u64>().unwrap(), r.time.0);
        assert_eq!(Op::from_name(f[1]), Some(r.op));
        assert_eq!(f[2].parse::<u64>().unwrap(), r.offset.0);
        assert_eq!(f[3].parse::<u64>().unwrap(), r.len.0);
        assert_eq!(f[4].parse::<u64>().ok(), r.latency.map(|l| l.0));
        assert_eq!(f[5], r.flags.names());
    }
}

#[test]
fn fio_export_replays_in_fio() {
    if !support::require_tool("fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tmt");
    let records = write_trace(&path);
    let target = dir.path().join("target.bin");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let log = dir.path().join("t.iolog");
    let out = support::tracemark()
        .args(["export", "--to", "fio", "--fio-file"])
        .arg(&target)
        .arg("-o")
        .arg(&log)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("fio version 3 iolog\n"));
    let fio = std::process::Command::new("fio")
        .args([
            "--name=replay",
            "--ioengine=psync",
            "--replay_no_stall=1",
            "--output-format=json",
        ])
        .arg(format!("--read_iolog={}", log.display()))
        .output()
        .unwrap();
    assert!(
        fio.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&fio.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&fio.stdout).unwrap();
    let job = &v["jobs"][0];
    let count = |op: Op| records.iter().filter(|r| r.op == op).count() as u64;
    let bytes = |op: Op| {
        records
            .iter()
            .filter(|r| r.op == op)
            .map(|r| r.len.0)
            .sum::<u64>()
    };
    assert_eq!(job["read"]["total_ios"], count(Op::Read));
    assert_eq!(job["write"]["total_ios"], count(Op::Write));
    assert_eq!(job["read"]["io_bytes"], bytes(Op::Read));
    assert_eq!(job["write"]["io_bytes"], bytes(Op::Write));
    // Discards and write-zeroes both go out as trims. fio 3.33 (Debian 12)
    // prints "bad ddir: 2" for a replayed trim and goes on, so count the lines.
    let trims = text
        .lines()
        .filter(|l| l.split(' ').nth(2) == Some("trim"))
        .count() as u64;
    assert_eq!(trims, count(Op::Discard) + count(Op::WriteZeroes));
    let syncs = text
        .lines()
        .filter(|l| l.split(' ').nth(2) == Some("sync"))
        .count() as u64;
    assert_eq!(syncs, count(Op::Flush));
}

#[test]
fn a_corrupt_trace_gives_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tmt");
    write_trace(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    for args in [vec!["info"], vec!["export", "--to", "csv"]] {
        let out = support::tracemark()
            .args(&args)
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("t.tmt") && err.contains("chunk 0") && !err.contains("panicked"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_closed_pipe_ends_info_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tmt");
    write_trace(&path);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' info '{}' | head -n 1",
            env!("CARGO_BIN_EXE_tracemark"),
            path.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.is_empty(), "stderr: {err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}
