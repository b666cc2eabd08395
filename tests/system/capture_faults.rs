//! `tracemark capture` under signals and killers: every stop signal a user or
//! a system sends (TERM, HUP, QUIT, as INT) ends a capture with the trace
//! written and tracing restored, at any stage; a capture killed outright
//! (SIGKILL) leaves an instance that the next capture removes; an instance
//! whose file someone holds open a moment is still removed, and one held
//! open for good is reported (exit 1), not left unseen. Needs root.

use crate::support::{tracemark, SystemTest};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use trace_format::{Op, TraceFile};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// A capture of `dev` for 30 s into `out`, with stdout and stderr piped.
fn start_capture(dev: &Path, out: &Path) -> Child {
    let mut command = tracemark();
    // SAFETY: setrlimit is async-signal-safe. No core file where a SIGQUIT
    // arrives before the handlers are in place (its default action).
    unsafe {
        command.pre_exec(|| {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    command
        .args(["capture", "--duration", "30s", "--device"])
        .arg(dev)
        .arg("-o")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads stderr up to the "tracing ..." line (tracing is on from then);
/// the reader is returned for the rest.
fn wait_until_tracing(child: &mut Child) -> BufReader<std::process::ChildStderr> {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "capture ended before tracing started"
        );
        if line.contains("tracemark: tracing") {
            return stderr;
        }
    }
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: signals our own child, not yet reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

/// Waits at most `limit` for the child (killed and failed after that).
fn wait_for(child: &mut Child, limit: Duration) -> ExitStatus {
    let began = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if began.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("capture did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn rest(r: Option<impl Read>) -> String {
    let mut s = String::new();
    if let Some(mut r) = r {
        r.read_to_string(&mut s).unwrap();
    }
    s
}

fn instance_of(t: &SystemTest, pid: u32) -> PathBuf {
    t.tracefs()
        .join("instances")
        .join(format!("tracemark-{pid}"))
}

fn read_ios(path: &Path) -> Vec<(Op, u64, u64)> {
    TraceFile::open(path)
        .unwrap()
        .records()
        .map(|r| r.unwrap())
        .map(|r| (r.op, r.offset.0, r.len.0))
        .collect()
}

fn dd_read(dev: &Path, offset: u64, bs: u64) {
    let st = std::process::Command::new("dd")
        .arg(format!("if={}", dev.display()))
        .args([
            "of=/dev/null",
            &format!("bs={bs}"),
            &format!("skip={}", offset / bs),
            "count=1",
            "iflag=direct",
            "status=none",
        ])
        .status()
        .unwrap();
    assert!(st.success());
}

/// Names in `dir` (what a capture left there).
fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn term_hup_and_quit_end_a_capture_like_ctrl_c() {
    let Some(t) = SystemTest::with_tracefs(&["dd"]) else {
        return;
    };
    let dev = t.loop_device(16);
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGQUIT, "QUIT"),
    ] {
        let out = t.dir().join(format!("{name}.tmt"));
        let mut child = start_capture(&dev.path, &out);
        let mut stderr = wait_until_tracing(&mut child);
        dd_read(&dev.path, 2 * MIB, 32 * KIB);
        std::thread::sleep(Duration::from_millis(300));
        let sent = Instant::now();
        signal(&child, sig);
        let status = wait_for(&mut child, Duration::from_secs(10));
        let took = sent.elapsed();
        let mut err = String::new();
        stderr.read_to_string(&mut err).unwrap();
        let stdout = rest(child.stdout.take());
        assert!(status.success(), "SIG{name}: {status:?}\n{err}");
        assert!(took < Duration::from_secs(3), "SIG{name}: took {took:?}");
        assert!(stdout.contains("interrupted"), "SIG{name}: {stdout}");
        assert!(
            !instance_of(&t, child.id()).exists(),
            "SIG{name}: the capture's instance is left"
        );
        t.assert_tracing_restored();
        assert_eq!(
            read_ios(&out),
            vec![(Op::Read, 2 * MIB, 32 * KIB)],
            "SIG{name}"
        );
    }
}

#[test]
fn a_stop_signal_at_any_stage_leaves_tracing_as_it_was() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    let dev = t.loop_device(16);
    // From before the handlers are in place (the default action then ends
    // the process before it changed anything) through set-up, tracing and
    // the drain: whatever the stage, nothing is left behind, and a trace
    // that exists is whole.
    for (i, delay_ms) in [0u64, 2, 5, 10, 20, 40, 80, 160].into_iter().enumerate() {
        for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            let dir = t.dir().join(format!("stage-{i}-{sig}"));
            fs::create_dir(&dir).unwrap();
            let out = dir.join("t.tmt");
            let mut child = start_capture(&dev.path, &out);
            std::thread::sleep(Duration::from_millis(delay_ms));
            signal(&child, sig);
            let status = wait_for(&mut child, Duration::from_secs(10));
            let err = rest(child.stderr.take());
            assert!(
                !instance_of(&t, child.id()).exists(),
                "signal {sig} after {delay_ms} ms left the instance: {status:?} {err}"
            );
            t.assert_tracing_restored();
            let left = files_in(&dir);
            if status.success() {
                assert_eq!(left, vec!["t.tmt".to_string()], "{err}");
                TraceFile::open(&out).unwrap().verify().unwrap();
            } else {
                // Killed by the default action before it had installed its
                // handlers: it had not begun.
                assert_eq!(status.code(), None, "{status:?} {err}");
                assert!(left.is_empty(), "signal {sig}: left {left:?}");
            }
        }
    }
}

#[test]
fn a_killed_captures_instance_is_removed_by_the_next_capture() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    let dev = t.loop_device(16);
    let killed_dir = t.dir().join("killed");
    fs::create_dir(&killed_dir).unwrap();
    let mut child = start_capture(&dev.path, &killed_dir.join("t.tmt"));
    let _stderr = wait_until_tracing(&mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let left = instance_of(&t, child.id());
    // What SIGKILL leaves: the instance, still tracing; no file at all.
    assert!(left.is_dir(), "SIGKILL left no instance to clean");
    assert_eq!(
        fs::read_to_string(left.join("tracing_on")).unwrap().trim(),
        "1"
    );
    assert!(
        files_in(&killed_dir).is_empty(),
        "{:?}",
        files_in(&killed_dir)
    );

    let out = t.dir().join("next.tmt");
    let next = tracemark()
        .args(["capture", "--duration", "300ms", "--device"])
        .arg(&dev.path)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{err}");
    assert!(
        !left.exists(),
        "the dead capture's instance is still there: {err}"
    );
    assert!(
        err.contains(&format!(
            "removed the tracing instance {} left by capture process {}",
            left.display(),
            child.id()
        )),
        "{err}"
    );
    t.assert_tracing_restored();
}

#[test]
fn an_instance_held_open_a_moment_is_still_removed_and_one_held_for_good_is_reported() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    let dev = t.loop_device(16);

    // Someone (a monitoring script, `cat`) has a file of the instance open
    // when the capture ends, and closes it half a second later.
    let out = t.dir().join("moment.tmt");
    let mut child = start_capture(&dev.path, &out);
    let mut stderr = wait_until_tracing(&mut child);
    let instance = instance_of(&t, child.id());
    let held = fs::File::open(instance.join("tracing_on")).unwrap();
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(500));
    drop(held);
    let status = wait_for(&mut child, Duration::from_secs(10));
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert!(status.success(), "{status:?} {err}");
    assert!(!instance.exists(), "instance left: {err}");
    assert!(!err.contains("could not remove"), "{err}");
    TraceFile::open(&out).unwrap().verify().unwrap();

    // Held open until long after the capture gave up: it says so, names
    // the instance, exits 1, and the trace is still written.
    let out = t.dir().join("held.tmt");
    let mut child = start_capture(&dev.path, &out);
    let mut stderr = wait_until_tracing(&mut child);
    let instance = instance_of(&t, child.id());
    let held = fs::File::open(instance.join("tracing_on")).unwrap();
    signal(&child, libc::SIGINT);
    let status = wait_for(&mut child, Duration::from_secs(20));
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    let still_there = instance.exists();
    drop(held);
    let _ = fs::remove_dir(&instance);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(still_there);
    assert!(
        err.contains(&format!(
            "warning: could not remove the tracing instance {}",
            instance.display()
        )),
        "{err}"
    );
    TraceFile::open(&out).unwrap().verify().unwrap();
    t.assert_tracing_restored();
}

#[test]
fn a_capture_under_nohup_keeps_running_through_a_hangup() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    let dev = t.loop_device(16);
    let out = t.dir().join("nohup.tmt");
    let mut command = tracemark();
    // SAFETY: signal is async-signal-safe; SIGHUP ignored, as `nohup` starts it.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = command
        .args(["capture", "--duration", "30s", "--device"])
        .arg(&dev.path)
        .arg("-o")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stderr = wait_until_tracing(&mut child);
    signal(&child, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "a hangup stopped a capture started with SIGHUP ignored"
    );
    signal(&child, libc::SIGTERM);
    let status = wait_for(&mut child, Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    TraceFile::open(&out).unwrap().verify().unwrap();
    t.assert_tracing_restored();
}
