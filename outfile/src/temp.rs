//! Temporaries: their names, their removal on a stop signal, and the sweep
//! of those a killed run left.
//!
//! A temporary is named `.tmk-PID-START-N.tmp` (about 35 bytes, whatever the
//! output's name): PID and START (the process's start time in clock ticks
//! since boot, from `/proc/PID/stat`) say which process made it, so a later
//! run removes it only once that process is gone, never while it runs, even
//! when its PID has been reused.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;

const PREFIX: &str = ".tmk-";
const SUFFIX: &str = ".tmp";

/// A process's start time (field 22 of `/proc/PID/stat`); None when it does
/// not run.
fn start_time(pid: &str) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.get(stat.rfind(')')? + 2..)?;
    after.split(' ').nth(19)?.parse().ok()
}

fn own_start() -> u64 {
    static START: AtomicU64 = AtomicU64::new(u64::MAX);
    let s = START.load(Ordering::Relaxed);
    if s != u64::MAX {
        return s;
    }
    let s = start_time("self").unwrap_or(0);
    START.store(s, Ordering::Relaxed);
    s
}

/// A new temporary name in `dir`, unique in this process.
pub(crate) fn name(dir: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(
        "{PREFIX}{}-{}-{n}{SUFFIX}",
        std::process::id(),
        own_start()
    ))
}

/// The PID and start time a temporary's file name carries.
fn parse(file_name: &str) -> Option<(&str, u64)> {
    let inner = file_name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let mut parts = inner.split('-');
    let pid = parts.next()?;
    let start = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    if parts.next().is_some() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((pid, start))
}

/// Removes from `dir` the temporaries of processes that no longer run,
/// made by this user (a regular file with tracemark's name pattern only);
/// returns how many.
pub fn sweep(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(parse) else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if !meta.file_type().is_file() || meta.uid() != uid {
            continue;
        }
        if start_time(pid) == Some(start) {
            continue; // its process still runs
        }
        if fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Named temporaries of this process, for the signal handler: leaked
/// NUL-terminated paths (never freed, so the handler never reads freed
/// memory), null when free.
const SLOTS: usize = 64;
static LIVE: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// The signals whose default action ends the process; a temporary is
/// removed before it ends.
const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The dispositions in place before ours, per signal number.
static PREVIOUS: [AtomicU64; 32] = [const { AtomicU64::new(0) }; 32];

extern "C" fn on_signal(signal: libc::c_int) {
    let prev = PREVIOUS
        .get(signal as usize)
        .map_or(0, |p| p.load(Ordering::SeqCst)) as libc::sighandler_t;
    if prev != libc::SIG_DFL && prev != libc::SIG_IGN && prev != 0 {
        // Someone handles this signal and carries on (the replayer stops
        // at the next I/O and writes what it measured): the temporary
        // is still needed, and removed by the writer itself.
        // SAFETY: the handler installed before ours, of this signature.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev) };
        f(signal);
        return;
    }
    if prev == libc::SIG_IGN {
        return;
    }
    for slot in &LIVE {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a leaked, NUL-terminated path; unlink is
            // async-signal-safe.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: restore the default action and raise it again.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

fn install_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for signal in SIGNALS {
            // SAFETY: a zeroed sigaction whose handler only unlinks and
            // re-raises, or calls the previous handler.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                    continue;
                }
                PREVIOUS[signal as usize].store(old.sa_sigaction as u64, Ordering::SeqCst);
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                sa.sa_flags = 0;
                libc::sigaction(signal, &sa, std::ptr::null_mut());
            }
        }
    });
}

/// A named temporary, removed by a stop signal while registered.
pub(crate) struct Registered(Option<usize>);

pub(crate) fn register(path: &Path) -> Registered {
    install_once();
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return Registered(None);
    };
    let p = c.into_raw();
    for (i, slot) in LIVE.iter().enumerate() {
        if slot
            .compare_exchange(std::ptr::null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Registered(Some(i));
        }
    }
    Registered(None)
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            // The path stays allocated: a handler may be reading it.
            LIVE[i].store(std::ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_parse_back() {
        let n = name(Path::new("/d"));
        let f = n.file_name().unwrap().to_str().unwrap();
        assert!(f.len() < 48, "{f}");
        let (pid, start) = parse(f).unwrap();
        assert_eq!(pid, std::process::id().to_string());
        assert_eq!(start_time(pid), Some(start));
        assert!(parse(".tmk-1-2.tmp").is_none());
        assert!(parse(".tmk-x-2-3.tmp").is_none());
        assert!(parse("tmk-1-2-3.tmp").is_none());
    }

    #[test]
    fn sweep_removes_only_dead_processes_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        // Ours (alive): kept. A dead process's (PID 0 never runs here, and
        // a wrong start time is another process): removed. Other names: kept.
        let live = name(dir.path());
        fs::write(&live, b"x").unwrap();
        let dead = dir
            .path()
            .join(format!(".tmk-{}-1-0.tmp", std::process::id()));
        fs::write(&dead, b"x").unwrap();
        let gone = dir.path().join(".tmk-4194305-5-0.tmp");
        fs::write(&gone, b"x").unwrap();
        let other = dir.path().join(".tmk-notes.tmp");
        fs::write(&other, b"x").unwrap();
        let sub = dir.path().join(".tmk-4194305-5-1.tmp");
        fs::create_dir(&sub).unwrap();
        assert_eq!(sweep(dir.path()), 2);
        assert!(live.exists() && other.exists() && sub.exists());
        assert!(!dead.exists() && !gone.exists());
    }
}
