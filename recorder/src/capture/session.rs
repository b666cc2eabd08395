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

/// The message for a user who is not root.
pub fn check_root() -> Result<(), CaptureError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(CaptureError::NotRoot);
    }
    Ok(())
}

/// Unmounts tracefs on drop if this capture mounted it.
pub(super) struct TracefsMount {
    root: PathBuf,
    mounted_here: bool,
}

impl TracefsMount {
    pub(super) fn ensure(root: &Path) -> Result<TracefsMount, CaptureError> {
        if root.join("trace").exists() {
            return Ok(TracefsMount {
                root: root.to_path_buf(),
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
        if !root.is_dir() {
            return Err(CaptureError::NoTracefs(format!(
                "{} does not exist",
                root.display()
            )));
        }
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
            return Err(CaptureError::NoTracefs(format!(
                "mounting tracefs at {} failed: {}",
                root.display(),
                io::Error::last_os_error()
            )));
        }
        Ok(TracefsMount {
            root: root.to_path_buf(),
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
        (rc != 0).then(|| {
            format!(
                "could not unmount tracefs at {} (mounted by the capture): {}",
                self.root.display(),
                io::Error::last_os_error()
            )
        })
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
    /// Top level only: (file, value to write back), in the order written.
    restore: Vec<(PathBuf, String)>,
    released: bool,
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
                        return Ok(TraceDir {
                            dir,
                            instance: true,
                            restore: Vec::new(),
                            released: false,
                        })
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
            // Disable first: an instance with enabled events can still be
            // removed, but this keeps the kernel's work minimal if it cannot.
            let _ = write_setting(&self.path("tracing_on"), "0");
            if let Err(e) = fs::remove_dir(&self.dir) {
                failed.push(format!(
                    "could not remove the tracing instance {}: {e}",
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
    fn drop(&mut self) {
        let _ = self.release();
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
