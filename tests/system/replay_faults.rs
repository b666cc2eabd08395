//! `tracemark replay` when it is stopped or its device fails: a stop signal
//! (INT, TERM, HUP, QUIT) mid-pass, a device that stops answering (a frozen
//! filesystem under the target, `--io-timeout`), a read-only device given
//! `--allow-write`, and a loop device whose backing file shrank under it.
//! Each gives its documented outcome: the exit code, a message naming the
//! cause, and where anything was measured a result file marked
//! `"valid": false` with the reason. Nothing is left mounted, frozen or
//! attached, also when a test fails.

use crate::support::replay::*;
use crate::support::{read_json, tracemark, LoopDevice, SystemTest};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use trace_format::Op;

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `tracemark replay ARGS` in `dir`, output piped.
fn spawn_replay(dir: &Path, args: &[&str]) -> Child {
    tracemark()
        .current_dir(dir)
        .arg("replay")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits at most `limit`; kills the child and fails after that.
fn finish_within(mut child: Child, limit: Duration) -> Output {
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if began.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("replay did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `slow.tmt` in `dir`: 6 s of realtime replay, one 4 KiB read every 200 ms,
/// long enough to stop it mid-pass.
fn slow_trace(dir: &Path) -> PathBuf {
    let recs: Vec<_> = (0..30u64)
        .map(|i| rec(i * 200_000, Op::Read, i * MIB, 4 * KIB))
        .collect();
    let trace = dir.join("slow.tmt");
    write_trace(&trace, "slow", &recs);
    trace
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

#[test]
fn a_stop_signal_mid_pass_writes_the_partial_result_marked_not_valid() {
    let dir = tempfile::tempdir().unwrap();
    let trace = slow_trace(dir.path());
    let target = dir.path().join("target.bin");
    for (sig, name, code) in [
        (libc::SIGINT, "SIGINT", 130),
        (libc::SIGTERM, "SIGTERM", 143),
        (libc::SIGHUP, "SIGHUP", 129),
        (libc::SIGQUIT, "SIGQUIT", 131),
    ] {
        let result = dir.path().join(format!("{name}.json"));
        let child = spawn_replay(
            dir.path(),
            &[
                trace.to_str().unwrap(),
                "--target",
                target.to_str().unwrap(),
                "--no-warmup",
                "--passes",
                "1",
                "--json",
                result.to_str().unwrap(),
            ],
        );
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let sent = Instant::now();
        let out = finish_within(child, Duration::from_secs(10));
        let err = text(&out.stderr);
        assert!(sent.elapsed() < Duration::from_secs(3), "{name}: slow stop");
        assert_eq!(out.status.code(), Some(code), "{name}: {err}");
        assert!(
            err.contains(&format!("interrupted by {name}")),
            "{name}: {err}"
        );
        let v = read_json(&result);
        assert_eq!(v["interrupted"], true, "{name}");
        assert_eq!(v["valid"], false, "{name}");
        assert_eq!(v["traces"][0]["valid"], false, "{name}");
        let reason = v["invalid_reasons"][0].as_str().unwrap();
        assert!(
            reason.contains(&format!("interrupted by {name} after 0 of 1 scored passes"))
                && reason.contains("a partial result (1 of 1 traces replayed)"),
            "{name}: {reason}"
        );
        let ios = v["traces"][0]["ios"].as_u64().unwrap();
        assert!(
            (1..30).contains(&ios),
            "{name}: {ios} I/Os in the partial pass"
        );
        assert!(text(&out.stdout).contains("interrupted"), "{name}");
    }
}

/// Thaws a frozen filesystem (first, when dropped before the unmount).
struct Frozen(PathBuf, std::cell::Cell<bool>);

impl Frozen {
    fn thaw(&self) {
        if !self.1.replace(true) {
            let _ = Command::new("fsfreeze").arg("-u").arg(&self.0).status();
        }
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        self.thaw();
    }
}

struct Mounted(PathBuf);

impl Drop for Mounted {
    /// The kernel drops an io_uring's files a moment after its process
    /// exits: busy is retried for 10 s.
    fn drop(&mut self) {
        for _ in 0..100 {
            let done = Command::new("umount")
                .arg(&self.0)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if done || !is_mount_point(&self.0) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("warning: {} is still mounted", self.0.display());
    }
}

fn is_mount_point(p: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(&*p.to_string_lossy()))
}

#[test]
fn a_frozen_device_times_out_and_the_result_is_written_marked_not_valid() {
    let Some(t) = SystemTest::start(&["losetup", "mkfs.ext4", "mount", "fsfreeze"]) else {
        return;
    };
    let dev = t.loop_device(64);
    run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&dev.path));
    let mnt = t.dir().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    run(Command::new("mount").arg(&dev.path).arg(&mnt));
    let mounted = Mounted(mnt.clone());
    let target = mnt.join("target.bin");
    std::fs::write(&target, vec![7u8; 4 << 20]).unwrap();
    run(&mut Command::new("sync"));

    // Writes: on a frozen filesystem each waits in the kernel until a thaw.
    let recs: Vec<_> = (0..64u64)
        .map(|i| rec(i * 10, Op::Write, i * 4 * KIB, 4 * KIB))
        .collect();
    let trace = t.dir().join("writes.tmt");
    write_trace(&trace, "writes", &recs);
    let result = t.dir().join("frozen.json");
    run(Command::new("fsfreeze").arg("-f").arg(&mnt));
    let frozen = Frozen(mnt.clone(), std::cell::Cell::new(false));
    let child = spawn_replay(
        t.dir(),
        &[
            trace.to_str().unwrap(),
            "--target",
            target.to_str().unwrap(),
            // The file holds data the test wrote, not tracemark.
            "--allow-write",
            "--mode",
            "compressed",
            "--no-warmup",
            "--passes",
            "2",
            "--precondition",
            "skip",
            "--io-timeout",
            "2s",
            "--json",
            result.to_str().unwrap(),
        ],
    );
    // The result is written while the writes still hang (the process can
    // only exit once they end): wait for it, then thaw.
    let began = Instant::now();
    while !result.exists() && began.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let written_after = began.elapsed();
    frozen.thaw();
    let out = finish_within(child, Duration::from_secs(30));
    let err = text(&out.stderr);
    assert!(result.exists(), "no result within 30 s: {err}");
    assert!(
        written_after < Duration::from_secs(15),
        "took {written_after:?}"
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the device stopped responding") && err.contains("--io-timeout"),
        "{err}"
    );
    drop(frozen);
    drop(mounted);
    assert!(!is_mount_point(&mnt), "the filesystem stayed mounted");
    let v = read_json(&result);
    assert_eq!(v["valid"], false);
    assert_eq!(v["traces"][0]["valid"], false);
    let reason = v["traces"][0]["invalid_reason"].as_str().unwrap();
    assert!(
        reason.contains("no I/O completed for 2 s")
            && reason.contains("scored pass 1 of 2 was cut short"),
        "{reason}"
    );
}

#[test]
fn writes_to_a_read_only_device_are_refused_with_the_cause_named() {
    let Some(t) = SystemTest::start(&["losetup"]) else {
        return;
    };
    let image = t.dir().join("ro.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show", "-r"])
        .arg(&image)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dev = ReadOnlyLoop(PathBuf::from(text(&out.stdout).trim()));
    let recs: Vec<_> = (0..16u64)
        .map(|i| rec(i * 10, Op::Write, i * 64 * KIB, 64 * KIB))
        .collect();
    let trace = t.dir().join("w.tmt");
    write_trace(&trace, "w", &recs);
    let result = t.dir().join("ro.json");
    let out = replay(
        t.dir(),
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
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(dev.0.to_str().unwrap()),
        "names the device: {err}"
    );
    assert!(err.contains("read-only"), "names the cause: {err}");
    assert!(!result.exists(), "nothing was measured: no result");
}

struct ReadOnlyLoop(PathBuf);

impl Drop for ReadOnlyLoop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

#[test]
fn a_loop_device_whose_file_shrank_gives_a_result_marked_not_valid() {
    let Some(t) = SystemTest::start(&["losetup"]) else {
        return;
    };
    let image = t.dir().join("shrink.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let dev = LoopDevice::over(&image, false).unwrap();
    // The device still says 64 MiB; its file now holds 4.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let recs: Vec<_> = (0..64u64)
        .map(|i| rec(i * 10, Op::Read, i * MIB, 4 * KIB))
        .collect();
    let trace = t.dir().join("r.tmt");
    write_trace(&trace, "r", &recs);
    let result = t.dir().join("shrunk.json");
    let out = replay(
        t.dir(),
        &[
            trace.to_str().unwrap(),
            "--target",
            dev.path.to_str().unwrap(),
            "--read-only",
            "--mapping",
            "identity",
            "--mode",
            "compressed",
            "--no-warmup",
            "--passes",
            "1",
            "--precondition",
            "skip",
            "--json",
            result.to_str().unwrap(),
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the result is not valid"), "{err}");
    let v = read_json(&result);
    assert_eq!(v["valid"], false);
    let reason = v["traces"][0]["invalid_reason"].as_str().unwrap();
    // Reads of the first 4 MiB succeed; the 60 beyond the file fail.
    assert!(
        reason.contains("60 I/Os failed on the device (read: 60)"),
        "{reason}"
    );
}

#[test]
fn sigkill_mid_pass_leaves_no_result_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = slow_trace(dir.path());
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let result = out_dir.join("killed.json");
    let mut child = spawn_replay(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--target",
            dir.path().join("target.bin").to_str().unwrap(),
            "--no-warmup",
            "--passes",
            "1",
            "--json",
            result.to_str().unwrap(),
        ],
    );
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    // Nothing half-written: the result either exists whole or not at all.
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn term_hup_and_quit_during_the_scratch_fill_stop_it_promptly() {
    let Some(t) = SystemTest::start(&["mount"]) else {
        return;
    };
    let fs = t.dir().join("fs");
    std::fs::create_dir(&fs).unwrap();
    run(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=3G", "tmpfs"])
        .arg(&fs));
    let _mounted = Mounted(fs.clone());
    // A compact mapping of 2 GiB: the fill takes several seconds.
    let recs: Vec<_> = (0..512u64)
        .map(|i| rec(i * 10, Op::Read, i * 4 * MIB, 4 * KIB))
        .collect();
    let trace = t.dir().join("wide.tmt");
    write_trace(&trace, "wide", &recs);
    let scratch = fs.join(replayer::DEFAULT_SCRATCH_NAME);
    for (sig, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGQUIT, "SIGQUIT"),
    ] {
        let _ = std::fs::remove_file(&scratch);
        let child = spawn_replay(&fs, &[trace.to_str().unwrap(), "--passes", "1"]);
        let began = Instant::now();
        while std::fs::metadata(&scratch).map_or(0, |m| m.len()) == 0 {
            assert!(
                began.elapsed().as_secs() < 60,
                "{name}: the fill never started"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let sent = Instant::now();
        let out = finish_within(child, Duration::from_secs(30));
        let took = sent.elapsed();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("interrupted after"), "{name}: {err}");
        assert!(
            took < Duration::from_secs(5),
            "{name}: stopping took {took:?}"
        );
        let len = std::fs::metadata(&scratch).unwrap().len();
        assert!(len < 2048 << 20, "{name}: the fill ran to the end: {len}");
    }
}

#[test]
fn a_stop_signal_while_preconditioning_stops_it_and_the_next_run_keeps_what_landed() {
    let Some(t) = SystemTest::start(&[]) else {
        return;
    };
    // 2 GiB written whole (`--precondition full`) takes about a second on
    // zram: the signal goes as soon as the first data lands.
    let Some(z) = t.zram(2048) else {
        return;
    };
    let recs: Vec<_> = (0..16u64)
        .map(|i| rec(i * 1000, Op::Read, i * 128 * MIB, 4 * KIB))
        .collect();
    let trace = t.dir().join("reads.tmt");
    write_trace(&trace, "reads", &recs);
    let state = t.dir().join("state");
    let dev = z.path.to_str().unwrap().to_string();
    let replay_args = |json: &Path| {
        let mut c = tracemark();
        c.current_dir(t.dir())
            .env("TRACEMARK_STATE_DIR", &state)
            .arg("replay")
            .arg(&trace)
            .args(["--target", &dev, "--allow-write", "--precondition", "full"])
            .args(["--no-warmup", "--passes", "1", "--json"])
            .arg(json)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };

    let first = t.dir().join("first.json");
    let child = replay_args(&first).spawn().unwrap();
    let began = Instant::now();
    while z.mm_stat()[0] == 0 {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "preconditioning never started"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let sent = Instant::now();
    let out = finish_within(child, Duration::from_secs(20));
    let err = text(&out.stderr);
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "slow stop: {:?}",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        err.contains("interrupted by SIGTERM while preconditioning"),
        "{err}"
    );
    let v = read_json(&first);
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["valid"], false);
    assert_eq!(v["traces"].as_array().unwrap().len(), 0, "nothing replayed");
    let p = &v["precondition"];
    assert_eq!(p["not_done"], "interrupted");
    let needed = p["needed_bytes"].as_u64().unwrap();
    let written = p["written_bytes"].as_u64().unwrap();
    assert_eq!(needed, 2048 * MIB);
    assert!(
        written > 0 && written < needed,
        "{written} of {needed} bytes written before the stop"
    );

    // The next run writes only what the first did not finish.
    let second = t.dir().join("second.json");
    let out = replay_args(&second).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let p = &read_json(&second)["precondition"];
    let already = p["already_bytes"].as_u64().unwrap();
    assert!(
        already > 0 && already <= written,
        "{already} bytes kept of {written} written by the stopped run"
    );
    assert_eq!(already + p["written_bytes"].as_u64().unwrap(), needed);
    assert_eq!(z.mm_stat()[0], needed, "every byte written once");
}
