//! tracefs for the tests: exclusive use of the top-level tracer among test
//! processes, tracefs kept mounted while a test uses it, private tracing
//! instances, settings written back on drop, and the snapshot of every
//! setting a test or a capture may touch.

use std::collections::BTreeMap;
use std::fs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where tracefs is (or gets) mounted; `tracemark capture` uses the same.
pub const TRACEFS_ROOT: &str = "/sys/kernel/tracing";
/// Taken by every test process (of any checkout) that uses tracefs.
const LOCK_FILE: &str = "/tmp/tracemark-tests-tracefs.lock";
/// `statfs` type of tracefs.
const TRACEFS_MAGIC: i64 = 0x7472_6163;
/// Prefix of the tests' tracing instances (`-PID-N` follows).
const INSTANCE_PREFIX: &str = "tracemark-test-";

/// Exclusive use of the kernel's top-level tracer (one test at a time, across
/// test processes), with tracefs mounted: a directory of it is held open so
/// that another program's unmount (a `tracemark capture` that mounted it, say)
/// cannot take it away mid-test. Unmounts on drop if it mounted it.
pub struct Tracefs {
    pub root: PathBuf,
    held: Option<fs::File>,
    mounted_here: bool,
    _lock: fs::File,
}

fn is_tracefs(dir: &fs::File) -> bool {
    // SAFETY: fstatfs writes into a zeroed struct we own, on a valid fd.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::fstatfs(dir.as_raw_fd(), &mut st) == 0 && st.f_type as i64 == TRACEFS_MAGIC
    }
}

impl Tracefs {
    pub fn acquire() -> std::io::Result<Tracefs> {
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_FILE)?;
        // SAFETY: flock on a valid fd; released when the file is closed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let root = PathBuf::from(TRACEFS_ROOT);
        let mut mounted_here = false;
        for _ in 0..10 {
            let dir = fs::File::open(&root)?;
            if is_tracefs(&dir) {
                remove_stale_instances(&root);
                return Ok(Tracefs {
                    root,
                    held: Some(dir),
                    mounted_here,
                    _lock: lock,
                });
            }
            drop(dir);
            let st = Command::new("mount")
                .args(["-t", "tracefs", "nodev"])
                .arg(&root)
                .status()?;
            mounted_here |= st.success();
        }
        Err(std::io::Error::other(format!(
            "could not mount tracefs at {}",
            root.display()
        )))
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        drop(self.held.take());
        if self.mounted_here {
            // Busy (someone else uses it now): it stays mounted for them.
            let _ = Command::new("umount").arg(&self.root).status();
        }
    }
}

/// A private tracing instance (`instances/tracemark-test-PID-N`), events and
/// tracing off and removed on drop.
pub struct TracingInstance {
    pub dir: PathBuf,
}

impl TracingInstance {
    pub fn create(tracefs: &Path) -> std::io::Result<TracingInstance> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("{INSTANCE_PREFIX}{}-{n}", std::process::id());
        let dir = tracefs.join("instances").join(&name);
        fs::create_dir(&dir)?;
        live_instances().insert(name);
        Ok(TracingInstance { dir })
    }
}

impl Drop for TracingInstance {
    fn drop(&mut self) {
        remove_instance(&self.dir);
        if let Some(name) = self.dir.file_name() {
            live_instances().remove(&*name.to_string_lossy());
        }
    }
}

/// The instances this process's tests hold right now: another test's live
/// instance (tests run in parallel threads) is not a change the checking test
/// made; one left behind after its owner was dropped is.
fn live_instances() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<String>> {
    static LIVE: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

fn remove_instance(dir: &Path) {
    let _ = fs::write(dir.join("tracing_on"), "0");
    let _ = fs::write(dir.join("events/enable"), "0");
    // rmdir is EBUSY while a reader still has one of the instance's files
    // open (a trace_pipe reader being released): retry for up to 2 s.
    for _ in 0..100 {
        if fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The process that owns a tracemark instance, when its name says
/// (`tracemark-PID`, `tracemark-PID-N`, `tracemark-test-PID-N`,
/// `tracemark-replay-PID`, any `tracemark-WORD-PID...`): the first number.
fn instance_owner(name: &str) -> Option<u32> {
    name.strip_prefix("tracemark-")?
        .split('-')
        .find_map(|part| part.parse().ok())
}

fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes the tracemark instances of processes that are gone (a test killed
/// before its instance was dropped, a capture killed by SIGKILL), so that a
/// capture's own clean-up of them cannot change a test's tracing state.
fn remove_stale_instances(tracefs: &Path) {
    let Ok(entries) = fs::read_dir(tracefs.join("instances")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if instance_owner(&name).is_some_and(|pid| !alive(pid)) {
            remove_instance(&entry.path());
        }
    }
}

/// A tracing file whose previous content is written back on drop.
pub struct TraceSetting {
    path: PathBuf,
    old: String,
}

impl TraceSetting {
    pub fn set(path: impl Into<PathBuf>, value: &str) -> std::io::Result<TraceSetting> {
        let path = path.into();
        let old = fs::read_to_string(&path)?;
        fs::write(&path, value)?;
        Ok(TraceSetting { path, old })
    }

    /// Like `set`, for files whose read-back text cannot be written back as it
    /// is (`trace_clock` reads `[local] global ...`, `filter` reads `none`):
    /// `restore` is written on drop.
    pub fn set_restoring(
        path: impl Into<PathBuf>,
        value: &str,
        restore: &str,
    ) -> std::io::Result<TraceSetting> {
        let path = path.into();
        fs::write(&path, value)?;
        Ok(TraceSetting {
            path,
            old: restore.to_string(),
        })
    }
}

impl Drop for TraceSetting {
    fn drop(&mut self) {
        // Files like current_tracer read back with a trailing newline; `set_event`
        // lists one event a line. Writing the old text back restores them,
        // except where the kernel reads back a form it does not take:
        // `trace_clock` lists every clock with the chosen one in brackets, and
        // an event `filter` without a filter reads `none` (cleared by `0`).
        let old = self.old.trim();
        let value = if old.starts_with('#') {
            ""
        } else if let Some(chosen) = old
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        {
            chosen
        } else if old == "none" && self.path.ends_with("filter") {
            "0"
        } else {
            old
        };
        // The kernel refuses some writes for a moment (a tracer switch is
        // EBUSY while a reader of its pipe is still being released): retry
        // for up to 2 s before leaving the setting to the restore check.
        for _ in 0..100 {
            if fs::write(&self.path, value).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// The top-level tracing settings a test or a capture may change, and the
/// tracemark instances that exist: what must be the same after a test.
/// Instances of other live processes (another test process, a capture
/// someone runs meanwhile) are not part of it: they come and go on their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracingState(BTreeMap<String, String>);

impl TracingState {
    pub fn read(root: &Path) -> TracingState {
        let mut state = BTreeMap::new();
        let mut read = |rel: &str| {
            let text = fs::read_to_string(root.join(rel)).unwrap_or_else(|e| format!("<{e}>"));
            state.insert(rel.to_string(), text);
        };
        for file in [
            "current_tracer",
            "tracing_on",
            "set_event",
            "buffer_size_kb",
            "trace_clock",
            "buffer_percent",
            "options/overwrite",
            "options/bin",
            "options/context-info",
            "options/blk_classic",
        ] {
            read(file);
        }
        let mut events: Vec<String> = fs::read_dir(root.join("events/block"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        events.sort();
        for e in events {
            read(&format!("events/block/{e}/enable"));
            read(&format!("events/block/{e}/filter"));
        }
        let me = std::process::id();
        let mut instances: Vec<String> = fs::read_dir(root.join("instances"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|name| {
                name.starts_with("tracemark-")
                    && !instance_owner(name).is_some_and(|pid| pid != me && alive(pid))
                    && !live_instances().contains(name)
            })
            .collect();
        instances.sort();
        state.insert("instances/".into(), instances.join(","));
        TracingState(state)
    }

    /// Whether `self` and `other` differ, and only in the list of instances.
    pub fn differs_only_in_instances(&self, other: &TracingState) -> bool {
        let keys: std::collections::BTreeSet<&String> =
            self.0.keys().chain(other.0.keys()).collect();
        let differing: Vec<&&String> = keys
            .iter()
            .filter(|k| !same_setting(k, self.0.get(**k), other.0.get(**k)))
            .collect();
        !differing.is_empty() && differing.iter().all(|k| k.as_str() == "instances/")
    }

    /// Panics naming the first setting that differs in `now`.
    pub fn assert_restored(&self, now: &TracingState) {
        for (k, v) in &self.0 {
            if !same_setting(k, Some(v), now.0.get(k)) {
                assert_eq!(Some(v), now.0.get(k), "tracing file {k} changed");
            }
        }
        assert_eq!(self.0.len(), now.0.len(), "tracing files differ");
    }
}

/// Whether a setting read before a test and after it is the same. The one
/// allowance: the top level's `buffer_size_kb` reads `7 (expanded: 1408)`
/// until some tracing first needs the buffer, and the kernel then expands it
/// to its default (read back as `1410`, page-rounded). Enabling events in any
/// instance does that on its own (the first test after boot), so it is no
/// change a test made; any other size is.
pub fn same_setting(key: &str, before: Option<&String>, now: Option<&String>) -> bool {
    if before == now {
        return true;
    }
    let (Some(before), Some(now)) = (before, now) else {
        return false;
    };
    if key != "buffer_size_kb" {
        return false;
    }
    let expanded = |v: &str| -> Option<u64> {
        v.split_once("(expanded:")?
            .1
            .trim()
            .strip_suffix(')')?
            .trim()
            .parse()
            .ok()
    };
    let plain = |v: &str| -> Option<u64> { v.trim().parse().ok() };
    match (expanded(before), plain(now)) {
        (Some(default), Some(size)) => default.abs_diff(size) <= 16,
        _ => false,
    }
}
