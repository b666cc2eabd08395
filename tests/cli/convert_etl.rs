//! `tracemark convert` on Windows ETW logs (`.etl`, `.etl.zip`): detection
//! from the bytes, `info` naming the source, errors that name the buffer,
//! and a converted log that replays. The logs are written from the format
//! by the recorder's synthetic writer; the public sample in
//! `../shared/samples/windows-etw-etl` is converted too when present (a
//! SKIP line otherwise).

use crate::support;
use recorder::formats::etl::synth::{Options, Request};
use std::path::{Path, PathBuf};
use std::process::Output;
use trace_format::Op;

fn requests(n: u64) -> Vec<Request> {
    (0..n)
        .map(|i| Request {
            op: if i % 4 == 3 { Op::Write } else { Op::Read },
            disk: 0,
            offset: 65_536 * (i * 13 % 256),
            size: 4096 * (1 + (i % 4) as u32),
            irp: 0xffff_fa80_0000_1000 + 0x100 * (i % 8),
            irp_flags: 0x43,
            issued: 1_000_000 + 2_000 * i,
            completed: 1_000_000 + 2_000 * i + 800,
            issue_cpu: (i % 2) as u16,
            complete_cpu: ((i + 1) % 2) as u16,
            process: 1234,
            thread: 5678,
            with_init: true,
        })
        .collect()
}

fn write_log(dir: &Path, name: &str, compressed: bool) -> PathBuf {
    let path = dir.join(name);
    let log = Options {
        compressed,
        ..Options::default()
    }
    .write(&requests(200), &[]);
    std::fs::write(&path, log).unwrap();
    path
}

fn run(dir: &Path, args: &[&str]) -> Output {
    support::tracemark()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// The first number after `label` on the line of `info` that starts with it.
fn count(info: &str, label: &str) -> Option<u64> {
    info.lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(label) && l[label.len()..].starts_with(' '))?
        .split_whitespace()
        .nth(label.split_whitespace().count())?
        .parse()
        .ok()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn an_etl_log_is_detected_converted_and_named_etw_by_info() {
    let dir = tempfile::tempdir().unwrap();
    // No `.etl` in the name: detection reads the bytes.
    let log = write_log(dir.path(), "capture.bin", true);
    let out = run(
        dir.path(),
        &["convert", log.to_str().unwrap(), "-o", "a.tmt"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("200 I/Os from etw-etl input"),
        "{}",
        text(&out)
    );
    let info = run(dir.path(), &["info", "a.tmt"]);
    let shown = text(&info);
    assert!(shown.contains("source: etw-etl "), "{shown}");
    assert!(shown.contains("capture.bin"), "{shown}");
    assert_eq!(count(&shown, "reads"), Some(150), "{shown}");
    assert_eq!(count(&shown, "writes"), Some(50), "{shown}");
    assert!(shown.contains("etl DiskIo ReadInit event"), "{shown}");
    // `--format etl` and the zip form give the same trace.
    let zip = dir.path().join("capture.etl.zip");
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(
        &zip,
        recorder::formats::etl::zip::write_zip(
            &[("LogFile.txt", b"log\n"), ("app.etl", &bytes)],
            true,
        ),
    )
    .unwrap();
    let out = run(
        dir.path(),
        &[
            "convert",
            zip.to_str().unwrap(),
            "--format",
            "etl",
            "-o",
            "z.tmt",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    for (t, csv) in [("a.tmt", "a.csv"), ("z.tmt", "z.csv")] {
        let out = run(dir.path(), &["export", t, "--to", "csv", "-o", csv]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let a = std::fs::read_to_string(dir.path().join("a.csv")).unwrap();
    assert_eq!(
        a,
        std::fs::read_to_string(dir.path().join("z.csv")).unwrap()
    );
    assert_eq!(a.lines().count(), 201, "{a}");
}

#[test]
fn a_truncated_log_is_one_error_naming_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "full.etl", false);
    let bytes = std::fs::read(&log).unwrap();
    let cut = dir.path().join("cut.etl");
    std::fs::write(&cut, &bytes[..bytes.len() - 1000]).unwrap();
    let out = run(
        dir.path(),
        &["convert", cut.to_str().unwrap(), "-o", "c.tmt"],
    );
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(msg.contains("cut.etl: buffer "), "{msg}");
    assert!(msg.contains("(file byte "), "{msg}");
    assert!(msg.contains("the file ends inside the buffer"), "{msg}");
    assert_eq!(msg.trim().lines().count(), 1, "{msg}");
    assert!(!msg.contains("panicked"), "{msg}");
}

#[test]
fn a_converted_log_replays() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "app.etl", true);
    let out = run(
        dir.path(),
        &["convert", log.to_str().unwrap(), "-o", "app.tmt"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = support::replay::replay(
        dir.path(),
        &[
            "app.tmt",
            "--no-db",
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--no-warmup",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let shown = text(&out);
    // The trace's row: its read and write MB are those of the 200 requests.
    let row: Vec<&str> = shown
        .lines()
        .find(|l| l.starts_with("app "))
        .unwrap_or_else(|| panic!("no row for the trace: {shown}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[row.len() - 2..], ["1.2", "0.8"], "{shown}");
}

/// The public sample as it is (`.etl.zip`): `info` counts what PerfView's
/// baseline counts.
#[test]
fn the_public_sample_converts_as_its_zip_with_the_baselines_counts() {
    let dir_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/samples/windows-etw-etl");
    let Some(zip) = std::fs::read_dir(&dir_in).ok().and_then(|d| {
        d.filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".etl.zip"))
    }) else {
        eprintln!("SKIP: no ETW sample in {}", dir_in.display());
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["convert", zip.to_str().unwrap(), "-o", "s.tmt"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let shown = text(&run(dir.path(), &["info", "s.tmt"]));
    for (label, n) in [("reads", 2339), ("writes", 50), ("flushes", 4)] {
        assert_eq!(count(&shown, label), Some(n), "{label}: {shown}");
    }
    for (key, n) in [("ReadInit", 2339), ("WriteInit", 50), ("FlushInit", 4)] {
        let line = shown
            .lines()
            .find(|l| l.contains(&format!("etl DiskIo {key} event")))
            .unwrap_or_else(|| panic!("no {key} note: {shown}"));
        assert!(line.trim_end().ends_with(&format!(" {n}")), "{line}");
    }
    assert!(shown.contains("model `Virtual HD ATA Device`"), "{shown}");
}
