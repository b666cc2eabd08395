//! Safety on real block devices: a device in use (swap, a device-mapper
//! holder, a mounted partition) is refused even with --allow-write, and no
//! I/O ever goes past the target's end (or before --target-offset) in any
//! mapping mode — checked from the engine's per-I/O events and, from outside,
//! with the kernel's own record of the issued requests.

use crate::support::replay::*;
use crate::support::{self, SystemTest};
use replayer::{
    IoEvent, IoLog, MappingKind, MemorySource, ReplayError, ReplayOptions, TargetProblem,
    TimingMode,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use trace_format::{IoRecord, Op};

fn write_trace_file(dir: &Path) -> PathBuf {
    let recs: Vec<_> = (0..32u64)
        .map(|i| {
            let op = if i % 2 == 0 { Op::Write } else { Op::Read };
            rec(i * 100, op, (i % 8) * MIB, 64 * KIB)
        })
        .collect();
    let p = dir.join("w.tmt");
    write_trace(&p, "w", &recs);
    p
}

fn run(cmd: &mut Command) -> bool {
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

/// Turns swap off on drop.
struct SwapOn(PathBuf);
impl Drop for SwapOn {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
    }
}

/// Removes a device-mapper device on drop.
struct DmDevice(String);
impl Drop for DmDevice {
    fn drop(&mut self) {
        let _ = Command::new("dmsetup").arg("remove").arg(&self.0).status();
    }
}

/// Unmounts on drop.
struct Mounted(PathBuf);
impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Replays a writing trace onto `dev` with --allow-write and expects a
/// refusal whose message contains `why`; the device's first MiB must be
/// unchanged.
fn assert_refused(dir: &Path, dev: &Path, why: &str) {
    let before = read_head(dev);
    let trace = write_trace_file(dir);
    let out = replay(
        dir,
        &[
            trace.to_str().unwrap(),
            "--target",
            dev.to_str().unwrap(),
            "--allow-write",
            "--mode",
            "compressed",
            "--passes",
            "1",
        ],
    );
    assert!(!out.status.success(), "replay onto a busy device ran");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(why), "message lacks '{why}': {err}");
    assert!(err.contains("never writes to a device in use"), "{err}");
    assert_eq!(read_head(dev), before, "the device was written");
}

fn read_head(dev: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut buf = vec![0u8; MIB as usize];
    std::fs::File::open(dev)
        .unwrap()
        .read_exact(&mut buf)
        .unwrap();
    buf
}

#[test]
fn a_device_used_as_swap_is_refused() {
    let Some(t) = SystemTest::start(&["losetup", "mkswap", "swapon"]) else {
        return;
    };
    let dev = t.loop_device(16);
    assert!(run(Command::new("mkswap").arg("-q").arg(&dev.path)));
    assert!(run(Command::new("swapon").arg(&dev.path)), "swapon failed");
    let _swap = SwapOn(dev.path.clone());
    assert_refused(t.dir(), &dev.path, "is in use as swap");
}

#[test]
fn a_device_held_by_device_mapper_is_refused() {
    let Some(t) = SystemTest::start(&["losetup", "dmsetup"]) else {
        return;
    };
    let dev = t.loop_device(16);
    let name = format!("tracemark-test-{}", std::process::id());
    let out = Command::new("dmsetup")
        .args(["create", &name, "--table"])
        .arg(format!(
            "0 {} linear {} 0",
            16 * MIB / 512,
            dev.path.display()
        ))
        .output()
        .unwrap();
    if !out.status.success() {
        // A kernel without device-mapper (no /dev/mapper/control) cannot
        // have this holder; the holder rule itself is unit-tested in
        // replayer's target.rs on a fake sysfs.
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("device-mapper driver") || err.contains("/dev/mapper/control") {
            // (The one skip CI allows: see README, Tests.)
            eprintln!(
                "SKIP {}: the kernel has no device-mapper",
                support::test_name()
            );
            return;
        }
        panic!("dmsetup create failed: {err}");
    }
    let _dm = DmDevice(name);
    assert_refused(t.dir(), &dev.path, "is held by dm-");
}

#[test]
fn a_device_whose_partition_is_mounted_is_refused() {
    let Some(t) = SystemTest::start(&["losetup", "mkfs.ext4"]) else {
        return;
    };
    let (dev, part) = t.loop_with_partition(64, 2048, 96 * 1024);
    assert!(run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&part)));
    let mnt = t.dir().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    assert!(
        run(Command::new("mount").arg(&part).arg(&mnt)),
        "mount failed"
    );
    let _m = Mounted(mnt.clone());
    std::fs::write(mnt.join("keep.txt"), "data").unwrap();
    assert_refused(
        t.dir(),
        &dev.path,
        &format!("its partition {} is mounted at", part.display()),
    );
    assert_eq!(
        std::fs::read_to_string(mnt.join("keep.txt")).unwrap(),
        "data"
    );
}

/// Reads, writes and discards spread over 3 GiB, with requests straddling
/// region ends and the largest 1 MiB; `regions` distinct 1 MiB regions.
fn wide_trace(regions: u64) -> Vec<IoRecord> {
    let mut recs = Vec::new();
    for i in 0..300u64 {
        let region = (i * 7) % regions * (3 * 1024 / regions) + 1;
        let op = match i % 6 {
            0 => Op::Discard,
            1 | 2 => Op::Write,
            _ => Op::Read,
        };
        let len = match i % 5 {
            0 => MIB,
            1 => 3 * KIB, // not block-aligned: rounded up
            _ => 64 * KIB * (1 + i % 3),
        };
        // the last bytes of a region: crosses into the next one
        let within = if i % 4 == 0 {
            MIB - 8 * KIB
        } else {
            (i % 9) * 100 * KIB
        };
        recs.push(rec(i * 10, op, region * MIB + within, len));
    }
    recs
}

#[test]
fn no_io_goes_beyond_the_target_in_any_mapping_mode() {
    let Some(t) = SystemTest::with_tracefs(&["losetup"]) else {
        return;
    };
    let dev = t.loop_device(8);
    no_merges(&dev.name());
    let size = 8 * MIB;
    let (major, minor) = dev.dev_id();
    let tracer = IssueTracer::start(&t, major, minor);

    let base = ReplayOptions {
        mode: TimingMode::Compressed,
        passes: 1,
        warmup: false,
        allow_write: true,
        ..Default::default()
    };
    let replay_with = |recs: Vec<IoRecord>, mapping, offset| {
        let src = MemorySource::new("wide", recs);
        let o = ReplayOptions {
            mapping,
            target_offset: offset,
            ..base.clone()
        };
        let mut log = IoLog::default();
        let r = replayer::run_suite(&[&src], Some(&dev.path), &o, &mut log);
        (r, log.0)
    };
    let mut checked = 0;
    let mut check = |events: &[IoEvent], offset: u64, what: &str| {
        assert!(events.len() > 200, "{what}: {} I/Os", events.len());
        for e in events {
            assert!(
                e.offset >= offset && e.offset + e.len <= size,
                "{what}: {e:?} outside [{offset}, {size})"
            );
            assert_eq!(e.offset % 512, 0);
            assert!(e.result >= 0, "{what}: {e:?}");
        }
        checked += events.len();
    };

    // wrap: a 3 GiB span on 8 MiB, then on the 3 MiB after a 5 MiB offset
    for offset in [0, 5 * MIB] {
        let (r, ev) = replay_with(wide_trace(40), MappingKind::Wrap, offset);
        r.unwrap();
        check(&ev, offset, &format!("wrap, offset {offset}"));
    }
    // compact: 3 regions (6 with the crossings) fit with a 1 MiB offset; 40 are refused
    let (r, ev) = replay_with(wide_trace(3), MappingKind::Compact, MIB);
    r.unwrap();
    check(&ev, MIB, "compact, offset 1 MiB");
    let (r, ev) = replay_with(wide_trace(40), MappingKind::Compact, 0);
    assert!(matches!(r, Err(ReplayError::DoesNotFit { .. })), "{r:?}");
    assert!(ev.is_empty());
    // identity: refused when the trace (plus the offset) reaches past the
    // end, never wrapped; a trace inside the space keeps its offsets
    let (r, _) = replay_with(wide_trace(40), MappingKind::Identity, 0);
    assert!(matches!(r, Err(ReplayError::DoesNotFit { .. })), "{r:?}");
    let small: Vec<IoRecord> = (0..240u64)
        .map(|i| {
            let op = [Op::Read, Op::Write, Op::Discard][i as usize % 3];
            rec(i, op, (i % 12) * 512 * KIB, 128 * KIB)
        })
        .collect();
    let (r, _) = replay_with(small.clone(), MappingKind::Identity, 3 * MIB);
    assert!(matches!(r, Err(ReplayError::DoesNotFit { .. })), "{r:?}");
    let (r, ev) = replay_with(small.clone(), MappingKind::Identity, 2 * MIB);
    r.unwrap();
    for e in &ev {
        assert_eq!(e.offset, 2 * MIB + small[e.index as usize].offset.0);
    }
    check(&ev, 2 * MIB, "identity, offset 2 MiB");
    // --target-offset at or past the end
    let (r, _) = replay_with(small, MappingKind::Wrap, size);
    assert!(
        matches!(
            r,
            Err(ReplayError::TargetRefused {
                kind: TargetProblem::TooSmall,
                ..
            })
        ),
        "{r:?}"
    );

    // From outside: every request the block layer saw is inside the device.
    let issued = tracer.stop();
    assert!(
        issued.len() >= checked,
        "tracefs saw {} requests, the engine completed {checked}",
        issued.len()
    );
    for i in &issued {
        assert!(i.offset + i.len <= size, "issued past the end: {i:?}");
    }
}

/// A device that another program holds exclusively is refused; a claim
/// that ends within a moment (as one an io_uring's asynchronous teardown
/// releases after the replay before) is waited for, not refused.
#[test]
fn an_exclusive_claim_is_refused_and_one_being_released_is_waited_for() {
    let Some(t) = SystemTest::start(&["losetup"]) else {
        return;
    };
    let dev = t.loop_device(8);
    let writes: Vec<IoRecord> = (0..64u64)
        .map(|i| rec(i * 10, Op::Write, (i % 16) * 64 * KIB, 4 * KIB))
        .collect();
    let src = MemorySource::new("w", writes);
    let opts = ReplayOptions {
        mode: TimingMode::Compressed,
        passes: 1,
        warmup: false,
        allow_write: true,
        ..Default::default()
    };
    let claim = || {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(&dev.path)
            .expect("an exclusive claim on the test's loop device")
    };

    let held = claim();
    let err = replayer::run_suite(&[&src], Some(&dev.path), &opts, &mut IoLog::default())
        .expect_err("a claimed device was replayed");
    assert!(
        matches!(
            err,
            ReplayError::TargetRefused {
                kind: TargetProblem::Busy,
                ..
            }
        ),
        "{err}"
    );

    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(held);
    });
    let r = replayer::run_suite(&[&src], Some(&dev.path), &opts, &mut IoLog::default());
    release.join().expect("the releasing thread");
    let r = r.expect("a claim released within 200 ms should be waited for");
    assert_eq!(r.traces[0].ios, 64);
}

/// On a filesystem that keeps no user attributes (ramfs) tracemark cannot
/// mark its scratch file: a new one is its to fill, but a second run on it
/// is refused, saying why, until `--allow-write` gives it up.
#[test]
fn a_scratch_file_on_a_filesystem_without_attributes_needs_allow_write_again() {
    let Some(t) = SystemTest::start(&["mount", "umount"]) else {
        return;
    };
    let fs = t.dir().join("ramfs");
    std::fs::create_dir(&fs).unwrap();
    assert!(run(Command::new("mount")
        .args(["-t", "ramfs", "ramfs"])
        .arg(&fs)));
    let _mounted = Mounted(fs.clone());
    let trace = write_trace_file(t.dir());
    let replay = |extra: &[&str]| {
        support::tracemark()
            .arg("replay")
            .arg(&trace)
            .arg("--target")
            .arg(fs.join("scr.bin"))
            .args(["--allow-buffered", "--mode", "compressed", "--passes", "1"])
            .args(["--no-warmup", "--no-db", "--cpu-idle", "os"])
            .args(extra)
            .output()
            .unwrap()
    };
    let first = replay(&[]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let again = replay(&[]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{err}");
    assert!(err.contains("keeps no extended attributes"), "{err}");
    let given_up = replay(&["--allow-write"]);
    assert!(
        given_up.status.success(),
        "{}",
        String::from_utf8_lossy(&given_up.stderr)
    );
}
