//! Faults a drive can have, and what a replay must do about them. A full
//! filesystem under a loop device (a sparse image on a private 4 MiB tmpfs)
//! fails most writes: the replay must exit 2, write its result marked
//! `"valid": false` with the reason, and `compare` must flag it and give no
//! ratio against it unless `--include-invalid`.

use crate::support::mount::Mount;
use crate::support::replay::*;
use crate::support::{read_json, require_root, require_tools};
use std::path::{Path, PathBuf};
use std::process::Command;
use trace_format::Op;

struct Loop(PathBuf);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

#[test]
fn a_replay_with_device_errors_exits_2_and_is_marked_not_valid() {
    if !require_root() || !require_tools(&["losetup", "mount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    let _tmpfs = Mount::tmpfs(&small, "4M");
    let image = small.join("img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&image)
        .output()
        .unwrap();
    assert!(out.status.success());
    let dev = Loop(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));

    // 32 MiB of writes into a 64 MiB device whose backing store holds 4 MiB.
    let recs: Vec<_> = (0..512u64)
        .map(|i| rec(i * 20, Op::Write, i * 64 * KIB, 64 * KIB))
        .collect();
    let trace = dir.path().join("fill.tmt");
    write_trace(&trace, "fill", &recs);
    let result = dir.path().join("bad.json");
    let out = replay(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--target",
            dev.0.to_str().unwrap(),
            "--allow-write",
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--json",
            result.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the result is not valid"), "{err}");
    let v = read_json(&result);
    assert_eq!(v["valid"], false);
    let reasons = v["invalid_reasons"].as_array().unwrap();
    assert!(
        reasons[0]
            .as_str()
            .unwrap()
            .contains("I/Os failed on the device (write:"),
        "{reasons:?}"
    );
    assert_eq!(v["traces"][0]["valid"], false);

    // A clean run of the same trace onto a file, then compare.
    let good = dir.path().join("good.json");
    let out = replay(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--target",
            dir.path().join("scratch.bin").to_str().unwrap(),
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--json",
            good.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        read_json(&good).get("valid").is_none(),
        "a valid result carries no mark"
    );
    let compare = |extra: &[&str]| {
        let out = crate::support::tracemark()
            .arg("compare")
            .arg(&good)
            .arg(&result)
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = compare(&[]);
    assert!(text.contains("is not a valid result"), "{text}");
    let score_row = |text: &str| {
        text.lines()
            .skip_while(|l| !l.starts_with("score"))
            .find(|l| l.starts_with("fill"))
            .unwrap()
            .to_string()
    };
    // One ratio (the reference's own 1.00x), none for the invalid column.
    assert_eq!(score_row(&text).matches("x)").count(), 1, "{text}");
    let text = compare(&["--include-invalid"]);
    assert_eq!(score_row(&text).matches("x)").count(), 2, "{text}");
}

/// A private tmpfs of `size`, in `dir`.
fn tmpfs(dir: &Path, size: &str) -> Mount {
    Mount::tmpfs(&dir.join(format!("tmpfs-{size}")), size)
}

/// A trace whose compact mapping needs `mib` MiB of scratch file.
fn wide_trace(dir: &Path, mib: u64) -> PathBuf {
    let recs: Vec<_> = (0..mib / 4)
        .map(|i| rec(i * 10, Op::Read, i * 4 * MIB, 4 * KIB))
        .collect();
    let p = dir.join("wide.tmt");
    write_trace(&p, "wide", &recs);
    p
}

#[test]
fn a_scratch_file_the_filesystem_cannot_hold_is_refused_before_filling() {
    if !require_root() || !require_tools(&["mount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fs = tmpfs(dir.path(), "8M");
    let trace = wide_trace(dir.path(), 64);
    let out = crate::support::tracemark()
        .current_dir(&fs.0)
        .args(["replay", trace.to_str().unwrap(), "--passes", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("MiB free"), "{err}");
    // Nothing was written: the filesystem is as empty as before.
    let used: u64 = std::fs::read_dir(&fs.0)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(used, 0, "{err}");
}

#[test]
fn ctrl_c_during_the_scratch_fill_stops_it_promptly() {
    if !require_root() || !require_tools(&["mount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fs = tmpfs(dir.path(), "3G");
    let trace = wide_trace(dir.path(), 2048);
    let child = crate::support::tracemark()
        .current_dir(&fs.0)
        .args(["replay", trace.to_str().unwrap(), "--passes", "1"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let scratch = fs.0.join(replayer::DEFAULT_SCRATCH_NAME);
    let began = std::time::Instant::now();
    while std::fs::metadata(&scratch).map_or(0, |m| m.len()) == 0 {
        assert!(began.elapsed().as_secs() < 60, "the fill never started");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let signalled = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    let took = signalled.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("interrupted after"), "{err}");
    let len = std::fs::metadata(&scratch).unwrap().len();
    assert!(len < 2048 << 20, "the fill ran to the end: {len}");
    assert!(took.as_secs() < 5, "stopping took {took:?}");
}

#[test]
fn a_full_disk_while_writing_the_result_keeps_the_old_one_whole() {
    if !require_root() || !require_tools(&["mount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fs = tmpfs(dir.path(), "64k");
    let result = fs.0.join("result.json");
    // The previous output, as tracemark left it.
    outfile::write(&result, b"{\"the\": \"previous result\"}\n").unwrap();
    // Fill the rest of the filesystem.
    let _ = std::fs::write(fs.0.join("filler"), vec![1u8; 64 << 10]);
    let trace = wide_trace(dir.path(), 16);
    let out = replay(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--target",
            dir.path().join("scratch.bin").to_str().unwrap(),
            "--passes",
            "1",
            "--mode",
            "compressed",
            "--json",
            result.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("result.json"),
        "the message names the file: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(&result).unwrap(),
        "{\"the\": \"previous result\"}\n",
        "the previous result was damaged"
    );
    let left: Vec<_> = std::fs::read_dir(&fs.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.contains(".tmp-") || n.starts_with(".tmk-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn a_full_disk_during_an_export_keeps_the_old_file_and_names_the_new_one() {
    if !require_root() || !require_tools(&["mount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fs = tmpfs(dir.path(), "64k");
    let csv = fs.0.join("export.csv");
    // The previous output, as tracemark left it.
    outfile::write(&csv, b"the previous export\n").unwrap();
    // About 40 bytes a row: 20,000 rows do not fit in what is left.
    let recs: Vec<_> = (0..20_000u64)
        .map(|i| rec(i * 10, Op::Read, i * 4 * KIB, 4 * KIB))
        .collect();
    let trace = dir.path().join("big.tmt");
    write_trace(&trace, "big", &recs);
    let out = crate::support::tracemark()
        .args(["export", trace.to_str().unwrap(), "--to", "csv", "-o"])
        .arg(&csv)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("export.csv"),
        "the message names the file: {err}"
    );
    assert!(err.contains("No space left"), "and the cause: {err}");
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "the previous export\n",
        "the previous export was damaged"
    );
    let names: Vec<_> = std::fs::read_dir(&fs.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names, vec!["export.csv".to_string()], "left behind");
}

#[test]
fn a_full_disk_while_writing_the_html_report_keeps_the_old_one() {
    if !require_root() || !require_tools(&["mount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let result =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/tests/fixtures/replay-file.json");
    let fs = tmpfs(dir.path(), "64k");
    let html = fs.0.join("report.html");
    // The previous output, as tracemark left it.
    outfile::write(&html, b"the previous report\n").unwrap();
    let _ = std::fs::write(fs.0.join("filler"), vec![1u8; 64 << 10]);
    let out = crate::support::tracemark()
        .arg("compare")
        .arg(&result)
        .arg(&result)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("report.html") && err.contains("No space left"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&html).unwrap(),
        "the previous report\n",
        "the previous report was damaged"
    );
    let left: Vec<_> = std::fs::read_dir(&fs.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.contains(".tmp-") || n.starts_with(".tmk-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn a_full_disk_while_converting_names_the_trace_and_leaves_nothing() {
    if !require_root() || !require_tools(&["mount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 50,000 random I/Os as blkparse text: a trace of far more than 16 KiB.
    let mut text = String::new();
    let mut rng = trace_format::rng::WyRand::new(1);
    for i in 0..50_000u64 {
        let x = rng.next_u64();
        let sector = (x >> 20) % (1 << 30);
        text.push_str(&format!(
            "  8,0    0 {} {}.{:09} 100  D   R {sector} + 8 [fio]\n",
            i + 1,
            i / 1000,
            (i % 1000) * 1_000_000
        ));
    }
    let input = dir.path().join("in.blkparse");
    std::fs::write(&input, text).unwrap();
    let fs = tmpfs(dir.path(), "64k");
    let _ = std::fs::write(fs.0.join("filler"), vec![1u8; 48 << 10]);
    let trace = fs.0.join("big.tmt");
    let out = crate::support::tracemark()
        .arg("convert")
        .arg(&input)
        .arg("-o")
        .arg(&trace)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("big.tmt") && err.contains("No space left"),
        "the message names the file and the cause: {err}"
    );
    let names: Vec<_> = std::fs::read_dir(&fs.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names, vec!["filler".to_string()], "left behind");
}
