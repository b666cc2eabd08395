//! The tracefs side of a capture: root check, mounting tracefs when needed,
//! the private tracing instance (or the top level, with every setting
//! restored), and the per-CPU buffer statistics.

use super::device::{event_filter, traced_events, EventSet, TracedDevice};
use super::{tracefs_error, CaptureError, CaptureOptions, LostEvents};
use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The message for a user who is not root.
pub fn check_root() -> Result<(), CaptureError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(CaptureError::NotRoot);
    }
    Ok(())
}

/// tracefs where the capture reads it: the system's mount when there is
/// one, else a mount of the capture's own on a private directory, unmounted
/// (and the directory removed) on release. A private mount changes nothing
/// others see, and nobody else can hold it busy: a capture that mounted
/// tracefs at the system's place could not unmount it while another program
/// (a second capture, a test) had started using it there.
pub(super) struct TracefsMount {
    pub(super) root: PathBuf,
    mounted_here: bool,
}

impl TracefsMount {
    pub(super) fn ensure(system_root: &Path) -> Result<TracefsMount, CaptureError> {
        if system_root.join("trace").exists() {
            return Ok(TracefsMount {
                root: system_root.to_path_buf(),
                mounted_here: false,
            });
        }
        let filesystems = fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if !filesystems
            .lines()
            .any(|l| l.trim_end().ends_with("tracefs"))
        {
            return Err(CaptureError::NoTracefs(
                "this kernel has no tracefs (it needs CONFIG_TRACING)".into(),
            ));
        }
        let root = private_mount_point()?;
        let target = CString::new(root.as_os_str().as_bytes())
            .map_err(|_| CaptureError::Usage("tracefs path contains a NUL byte".into()))?;
        // SAFETY: all pointers are valid NUL-terminated strings; data is null.
        let rc = unsafe {
            libc::mount(
                c"nodev".as_ptr(),
                target.as_ptr(),
                c"tracefs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            let err = io::Error::last_os_error();
            let _ = fs::remove_dir(&root);
            return Err(CaptureError::NoTracefs(format!(
                "mounting tracefs at {} failed: {err}",
                root.display(),
            )));
        }
        Ok(TracefsMount {
            root,
            mounted_here: true,
        })
    }

    /// Unmounts (once); returns a message if that failed.
    pub(super) fn release(&mut self) -> Option<String> {
        if !std::mem::take(&mut self.mounted_here) {
            return None;
        }
        let target = CString::new(self.root.as_os_str().as_bytes()).ok()?;
        // SAFETY: valid NUL-terminated path.
        let rc = unsafe { libc::umount2(target.as_ptr(), 0) };
        if rc != 0 {
            return Some(format!(
                "could not unmount tracefs at {} (mounted by the capture): {}",
                self.root.display(),
                io::Error::last_os_error()
            ));
        }
        fs::remove_dir(&self.root).err().map(|e| {
            format!(
                "could not remove the capture's tracefs mount point {}: {e}",
                self.root.display()
            )
        })
    }
}

/// A new directory for a private tracefs mount: in /run (memory, root's)
/// where it is writable, else in the temporary directory; named for the
/// process and a count, so captures in one process each get their own.
fn private_mount_point() -> Result<PathBuf, CaptureError> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let run = Path::new("/run");
    // SAFETY: access reads a valid NUL-terminated path.
    let run_writable = unsafe { libc::access(c"/run".as_ptr(), libc::W_OK) } == 0;
    let parent = if run.is_dir() && run_writable {
        run.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!("tracemark-tracefs-{}-{n}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            // (left by a crashed capture of an earlier process with this pid)
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => continue,
            Err(e) => {
                return Err(CaptureError::NoTracefs(format!(
                    "cannot make a mount point for tracefs at {}: {e}",
                    dir.display()
                )))
            }
        }
    }
}

impl Drop for TracefsMount {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// The tracing directory the capture works in: a private instance (removed on
/// release) or the top level (every written file restored on release).
pub(super) struct TraceDir {
    pub(super) dir: PathBuf,
    pub(super) instance: bool,
    /// Instance only: its `tracing_on`, held open while the capture runs. An
    /// open file of an instance makes the kernel refuse its removal (EBUSY),
    /// so another capture's clean-up of dead captures' instances can never
    /// remove this one, even from a PID namespace where this PID looks dead.
    pin: Option<fs::File>,
    /// Top level only: (file, value to write back), in the order written.
    restore: Vec<(PathBuf, String)>,
    released: bool,
}

/// How long a capture keeps retrying the removal of its instance while the
/// kernel says it is busy (a file of it still open somewhere, for a moment).
const REMOVE_BUSY_FOR: Duration = Duration::from_secs(3);

/// The capture that made the instance `name`, when it is one of capture's
/// own names (`tracemark-PID` or `tracemark-PID-N`; the tests' and other
/// tools' instances have other names and are left alone).
pub(super) fn instance_owner(name: &str) -> Option<libc::pid_t> {
    let rest = name.strip_prefix("tracemark-")?;
    let (pid, n) = match rest.split_once('-') {
        Some((pid, n)) => (pid, Some(n)),
        None => (rest, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || n.is_some_and(|n| !digits(n)) {
        return None;
    }
    pid.parse().ok().filter(|&p: &libc::pid_t| p > 0)
}

/// Whether a process `pid` exists (EPERM: it does, owned by someone else).
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Switches an instance off and removes it; retries while the kernel says
/// it is busy, up to `busy_for`.
fn remove_instance(dir: &Path, busy_for: Duration) -> io::Result<()> {
    let _ = write_setting(&dir.join("tracing_on"), "0");
    let deadline = Instant::now() + busy_for;
    let mut pause = Duration::from_millis(10);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Removes the instances that captures killed without a chance to clean up
/// (SIGKILL, a crash, power cut before tracefs went away) left recording:
/// `tracemark-PID` whose PID no longer runs. Each removal, or why it failed,
/// is a message.
pub(super) fn remove_dead_instances(instances: &Path, messages: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(instances) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(instance_owner) else {
            continue;
        };
        if process_exists(pid) {
            continue;
        }
        let dir = entry.path();
        match remove_instance(&dir, Duration::ZERO) {
            Ok(()) => messages.push(format!(
                "removed the tracing instance {} left by capture process {pid}, which is gone",
                dir.display()
            )),
            Err(e) => messages.push(format!(
                "the tracing instance {} of capture process {pid}, which does not run here, \
                 could not be removed ({e}); if no capture runs, remove it with `rmdir {}`",
                dir.display(),
                dir.display()
            )),
        }
    }
}

/// What to write back to a tracing file to restore what reading it returned.
fn restore_value(file: &Path, old: &str) -> String {
    let old = old.trim();
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match name {
        // `[local] global counter ...`: the bracketed one is in use.
        "trace_clock" => old
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
            .unwrap_or("local")
            .to_string(),
        // `1410`, or `7 (expanded: 1410)` before first use: once written the
        // buffer is expanded, so the expanded size is what comes back.
        "buffer_size_kb" => old
            .split_once("(expanded:")
            .and_then(|(_, e)| e.trim().strip_suffix(')'))
            .or_else(|| old.split_whitespace().next())
            .unwrap_or("1410")
            .trim()
            .to_string(),
        // `none` means no filter; `0` clears one.
        "filter" if old == "none" || old.is_empty() => "0".to_string(),
        _ => old.to_string(),
    }
}

impl TraceDir {
    /// Creates the instance `tracemark-<pid>`, or falls back to the top level.
    pub(super) fn open(
        root: &Path,
        use_instance: bool,
        messages: &mut Vec<String>,
    ) -> Result<TraceDir, CaptureError> {
        let instances = root.join("instances");
        if !use_instance {
            messages.push("using the top-level tracer (asked for)".into());
        } else if instances.is_dir() {
            remove_dead_instances(&instances, messages);
            let pid = std::process::id();
            let mut last_error = None;
            for n in 0..8 {
                let name = if n == 0 {
                    format!("tracemark-{pid}")
                } else {
                    format!("tracemark-{pid}-{n}")
                };
                let dir = instances.join(name);
                match fs::create_dir(&dir) {
                    Ok(()) => {
                        let pin = fs::File::open(dir.join("tracing_on")).ok();
                        return Ok(TraceDir {
                            dir,
                            instance: true,
                            pin,
                            restore: Vec::new(),
                            released: false,
                        });
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => {
                        last_error = Some(e);
                        break;
                    }
                }
            }
            messages.push(format!(
                "could not create a tracing instance in {} ({}); using the top-level \
                 tracer and restoring its settings afterwards",
                instances.display(),
                last_error.map_or_else(|| "name taken".to_string(), |e| e.to_string())
            ));
        } else {
            messages.push(
                "this kernel has no tracing instances; using the top-level tracer and \
                 restoring its settings afterwards"
                    .into(),
            );
        }
        Ok(TraceDir {
            dir: root.to_path_buf(),
            instance: false,
            pin: None,
            restore: Vec::new(),
            released: false,
        })
    }

    pub(super) fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Writes `value` to `file`, remembering the old value at the top level.
    pub(super) fn set(&mut self, file: &str, value: &str) -> Result<(), CaptureError> {
        let path = self.path(file);
        if !self.instance {
            let old = fs::read_to_string(&path).map_err(|e| tracefs_error(&path, e))?;
            self.restore
                .push((path.clone(), restore_value(&path, &old)));
        }
        write_setting(&path, value)
    }

    /// Undoes everything (once); returns messages for what failed.
    pub(super) fn release(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.released, true) {
            return Vec::new();
        }
        let mut failed = Vec::new();
        if self.instance {
            // Its own pin first: the kernel refuses to remove an instance
            // with an open file. Tracing goes off before the removal, so an
            // instance that cannot be removed at least records nothing.
            drop(self.pin.take());
            if let Err(e) = remove_instance(&self.dir, REMOVE_BUSY_FOR) {
                failed.push(format!(
                    "could not remove the tracing instance {} ({e}; tracing in it is off); \
                     remove it with `rmdir {}`",
                    self.dir.display(),
                    self.dir.display()
                ));
            }
        } else {
            while let Some((path, value)) = self.restore.pop() {
                if let Err(e) = write_setting(&path, &value) {
                    failed.push(format!(
                        "could not restore {} to `{value}`: {e}",
                        path.display()
                    ));
                }
            }
        }
        failed
    }
}

impl Drop for TraceDir {
    /// On an error or a panic, nobody reads the release's messages: say here
    /// what could not be undone rather than leave it unseen.
    fn drop(&mut self) {
        for message in self.release() {
            eprintln!("tracemark: {message}");
        }
    }
}

pub(super) fn write_setting(path: &Path, value: &str) -> Result<(), CaptureError> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| tracefs_error(path, e))?;
    f.write_all(value.as_bytes())
        .map_err(|e| tracefs_error(path, e))
}

/// Sums `overrun`, `commit overrun` and `dropped events` over the CPUs.
pub(super) fn read_lost(dir: &Path) -> LostEvents {
    let mut lost = LostEvents::default();
    let Ok(cpus) = fs::read_dir(dir.join("per_cpu")) else {
        return lost;
    };
    for cpu in cpus.flatten() {
        let Ok(stats) = fs::read_to_string(cpu.path().join("stats")) else {
            continue;
        };
        for line in stats.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(n) = value.trim().parse::<u64>() else {
                continue;
            };
            match key.trim() {
                "overrun" | "commit overrun" => lost.overrun = lost.overrun.saturating_add(n),
                "dropped events" => lost.dropped = lost.dropped.saturating_add(n),
                _ => {}
            }
        }
    }
    lost
}

/// Per-CPU buffer size that fits: at most a quarter of the available memory
/// over all CPUs.
pub(super) fn fitting_buffer_kb(wanted_kb: u64, cpus: u64, messages: &mut Vec<String>) -> u64 {
    let available_kb = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(u64::MAX);
    let cap = (available_kb / 4) / cpus.max(1);
    if wanted_kb > cap {
        let kb = cap.max(1024);
        messages.push(format!(
            "using a {} MiB per-CPU trace buffer instead of {} MiB: {} CPUs would need more \
             than a quarter of the available memory",
            kb / 1024,
            wanted_kb / 1024,
            cpus
        ));
        kb
    } else {
        wanted_kb
    }
}

pub(super) fn online_cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

/// The tracing set up for one capture: tracefs mounted, the instance (or
/// top level) configured with tracing off, the events enabled with their
/// filter. [`Tracing::release`] (or dropping it) undoes all of it.
pub(super) struct Tracing {
    mount: TracefsMount,
    pub(super) dir: TraceDir,
    /// The `mono` trace clock is in use (times map to wall-clock time and
    /// the CPUs' buffers can be merged).
    pub(super) mono: bool,
    /// The events enabled, and the optional ones this kernel lacks.
    pub(super) enabled: Vec<&'static str>,
    pub(super) missing: Vec<&'static str>,
    /// The top level's buffer statistics before the capture.
    lost_before: LostEvents,
}

impl Tracing {
    /// Sets tracing up in `root` for `events` of `device`, tracing off.
    pub(super) fn set_up(
        root: &Path,
        opts: &CaptureOptions,
        device: &TracedDevice,
        events: EventSet,
        messages: &mut Vec<String>,
    ) -> Result<Tracing, CaptureError> {
        let mount = TracefsMount::ensure(root)?;
        let root = mount.root.clone();
        let root = root.as_path();
        let start_event = root.join("events/block").join(events.start_event());
        if !start_event.is_dir() {
            return Err(CaptureError::NoTracefs(format!(
                "{} is missing: this kernel has no block trace events",
                start_event.display()
            )));
        }
        let mut dir = TraceDir::open(root, opts.use_instance, messages)?;
        let lost_before = if dir.instance {
            LostEvents::default()
        } else {
            read_lost(&dir.dir)
        };
        dir.set("tracing_on", "0")?;
        let mono = match dir.set("trace_clock", "mono") {
            Ok(()) => true,
            Err(_) => {
                messages.push(
                    "the `mono` trace clock is unavailable; the start time is approximate".into(),
                );
                false
            }
        };
        let buffer_kb = fitting_buffer_kb(opts.buffer_kb_per_cpu, online_cpus(), messages);
        dir.set("buffer_size_kb", &buffer_kb.to_string())?;
        let filter = event_filter(device);
        let mut enabled = Vec::new();
        let mut missing = Vec::new();
        for event in traced_events(events, device.bio_based) {
            let event_dir = format!("events/block/{}", event.name);
            if !dir.path(&event_dir).is_dir() {
                if event.required {
                    return Err(CaptureError::NoTracefs(format!(
                        "{} is missing: this kernel has no {} event",
                        dir.path(&event_dir).display(),
                        event.name
                    )));
                }
                missing.push(event.name);
                continue;
            }
            dir.set(&format!("{event_dir}/filter"), &filter)?;
            dir.set(&format!("{event_dir}/enable"), "1")?;
            enabled.push(event.name);
        }
        // Empty the buffer (a new instance's is empty; the top level's may not be).
        if !dir.instance {
            write_setting(&dir.path("trace"), "")?;
        }
        Ok(Tracing {
            mount,
            dir,
            mono,
            enabled,
            missing,
            lost_before,
        })
    }

    /// Where tracefs is mounted for the capture.
    pub(super) fn root(&self) -> &Path {
        &self.mount.root
    }

    /// Switches tracing on or off.
    pub(super) fn switch(&mut self, on: bool) -> Result<(), CaptureError> {
        write_setting(&self.dir.path("tracing_on"), if on { "1" } else { "0" })
    }

    /// Events the kernel's statistics say were lost since the set-up.
    pub(super) fn lost_since_set_up(&self) -> LostEvents {
        let after = read_lost(&self.dir.dir);
        LostEvents {
            overrun: after.overrun.saturating_sub(self.lost_before.overrun),
            dropped: after.dropped.saturating_sub(self.lost_before.dropped),
            ..LostEvents::default()
        }
    }

    /// Restores everything; returns messages for what failed.
    pub(super) fn release(mut self) -> Vec<String> {
        let mut messages = self.dir.release();
        messages.extend(self.mount.release());
        messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_private_mount_point_is_a_new_directory_of_the_process() {
        let a = private_mount_point().unwrap();
        let b = private_mount_point().unwrap();
        assert_ne!(a, b);
        for dir in [&a, &b] {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                name.starts_with(&format!("tracemark-tracefs-{}-", std::process::id())),
                "{name}"
            );
            assert_eq!(fs::read_dir(dir).unwrap().count(), 0);
        }
        fs::remove_dir(&a).unwrap();
        fs::remove_dir(&b).unwrap();
    }

    #[test]
    fn without_a_system_mount_tracefs_is_mounted_privately_and_removed_after() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            assert!(
                std::env::var_os("TRACEMARK_NO_SKIP").is_none(),
                "needs root (TRACEMARK_NO_SKIP is set)"
            );
            eprintln!("SKIP: mounting tracefs needs root");
            return;
        }
        // A "system" place with no tracefs in it: the mount goes elsewhere.
        let system = tempfile::tempdir().unwrap();
        let mut mount = TracefsMount::ensure(system.path()).unwrap();
        assert!(mount.mounted_here);
        assert_ne!(mount.root, system.path());
        assert!(mount.root.join("trace").exists(), "{:?}", mount.root);
        assert!(!system.path().join("trace").exists());
        let root = mount.root.clone();
        assert_eq!(mount.release(), None);
        assert!(!root.exists(), "{root:?} left behind");
        // Released once: a second release (the drop) does nothing.
        assert_eq!(mount.release(), None);
    }

    #[test]
    fn restore_values() {
        let p = |s: &str| PathBuf::from(format!("/x/{s}"));
        assert_eq!(
            restore_value(&p("trace_clock"), "local global [mono] boot\n"),
            "mono"
        );
        assert_eq!(
            restore_value(&p("buffer_size_kb"), "7 (expanded: 1410)\n"),
            "1410"
        );
        assert_eq!(restore_value(&p("buffer_size_kb"), "2048\n"), "2048");
        assert_eq!(restore_value(&p("filter"), "none\n"), "0");
        assert_eq!(restore_value(&p("filter"), "dev == 5\n"), "dev == 5");
        assert_eq!(restore_value(&p("tracing_on"), "1\n"), "1");
    }

    #[test]
    fn only_capture_instance_names_have_an_owner() {
        assert_eq!(instance_owner("tracemark-4204"), Some(4204));
        assert_eq!(instance_owner("tracemark-4204-3"), Some(4204));
        for other in [
            "tracemark-test-4204-0",
            "tracemark-replay-4204",
            "tracemark-",
            "tracemark-0",
            "tracemark-12x",
            "tracemark-12-",
            "tracemark-12-3-4",
            "other-4204",
        ] {
            assert_eq!(instance_owner(other), None, "{other}");
        }
    }

    #[test]
    fn not_root_message() {
        assert_eq!(
            CaptureError::NotRoot.to_string(),
            "capture needs root to use tracefs; run it with sudo"
        );
    }

    #[test]
    fn stats_parse() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, text) in [
            (
                0,
                "entries: 5\noverrun: 3\ncommit overrun: 1\nbytes: 9\ndropped events: 0\n",
            ),
            (
                1,
                "entries: 5\noverrun: 0\ncommit overrun: 0\ndropped events: 7\n",
            ),
        ] {
            let d = dir.path().join(format!("per_cpu/cpu{cpu}"));
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("stats"), text).unwrap();
        }
        assert_eq!(
            read_lost(dir.path()),
            LostEvents {
                overrun: 4,
                dropped: 7,
                ..LostEvents::default()
            }
        );
    }
}
