//! Shared helpers for the end-to-end tests: skipping (or, in CI, failing) when
//! root or a kernel feature is missing, loop devices and tracefs access that are
//! cleaned up also when a test fails.

pub mod replay;
pub mod result_fixture;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set by `.ci/run`: a test that would be skipped fails instead.
pub const NO_SKIP_ENV: &str = "TRACEMARK_NO_SKIP";

/// Returns false (after printing a SKIP line) when `what` is unavailable, or
/// panics when the environment says skips are failures.
pub fn skip(test: &str, why: &str) -> bool {
    if std::env::var_os(NO_SKIP_ENV).is_some_and(|v| v != "0" && !v.is_empty()) {
        panic!("{test}: would skip ({why}) but {NO_SKIP_ENV} is set");
    }
    eprintln!("SKIP {test}: {why}");
    false
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// True when the test may use root-only kernel features; otherwise prints SKIP.
pub fn require_root(test: &str) -> bool {
    if is_root() {
        true
    } else {
        skip(test, "needs root")
    }
}

/// True when `tool` is on PATH; otherwise prints SKIP.
pub fn require_tool(test: &str, tool: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    found || skip(test, &format!("`{tool}` is not installed"))
}

/// The built `tracemark` binary.
pub fn tracemark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracemark"))
}

/// A loop device over a sparse image file, detached (and the image removed) on drop.
pub struct LoopDevice {
    pub path: PathBuf,
    image: PathBuf,
}

impl LoopDevice {
    /// Creates a `size_mib` image in `dir` and attaches it with direct I/O.
    pub fn new(dir: &Path, size_mib: u64) -> std::io::Result<LoopDevice> {
        let image = dir.join(format!("loop-{}.img", std::process::id()));
        let f = fs::File::create(&image)?;
        f.set_len(size_mib << 20)?;
        drop(f);
        let out = Command::new("losetup")
            .args(["-f", "--show", "--direct-io=on"])
            .arg(&image)
            .output()?;
        if !out.status.success() {
            let _ = fs::remove_file(&image);
            return Err(std::io::Error::other(format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
        Ok(LoopDevice { path, image })
    }

    /// `MAJ:MIN` of the device.
    pub fn dev_id(&self) -> (u32, u32) {
        let name = self.path.file_name().unwrap().to_string_lossy().to_string();
        let dev = fs::read_to_string(format!("/sys/block/{name}/dev")).unwrap();
        let (a, b) = dev.trim().split_once(':').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    }

    pub fn name(&self) -> String {
        self.path.file_name().unwrap().to_string_lossy().to_string()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
        let _ = fs::remove_file(&self.image);
    }
}

/// Exclusive use of the kernel's tracing (one test at a time, across test
/// processes), with tracefs mounted; unmounts it on drop if it mounted it.
/// Callers restore the tracing files they change themselves (see `TraceSetting`).
pub struct TracefsLock {
    pub root: PathBuf,
    _lock: fs::File,
    mounted_here: bool,
}

impl TracefsLock {
    pub fn acquire() -> std::io::Result<TracefsLock> {
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open("/tmp/tracemark-tests-tracefs.lock")?;
        // SAFETY: flock on a valid fd.
        let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let root = PathBuf::from("/sys/kernel/tracing");
        let mut mounted_here = false;
        if !root.join("trace").exists() {
            let st = Command::new("mount")
                .args(["-t", "tracefs", "nodev"])
                .arg(&root)
                .status()?;
            if !st.success() {
                return Err(std::io::Error::other("mounting tracefs failed"));
            }
            mounted_here = true;
        }
        Ok(TracefsLock {
            root,
            _lock: lock,
            mounted_here,
        })
    }
}

impl Drop for TracefsLock {
    fn drop(&mut self) {
        if self.mounted_here {
            let _ = Command::new("umount").arg(&self.root).status();
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
        let _ = fs::write(&self.path, value);
    }
}

impl TraceSetting {
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

impl LoopDevice {
    /// A `size_mib` loop device (direct I/O) whose MBR holds one partition of
    /// `sectors` 512-byte sectors from `start_sector`; returns the device and
    /// the partition's node (`/dev/loopNp1`), waiting for the node to appear.
    pub fn with_partition(
        dir: &Path,
        size_mib: u64,
        start_sector: u32,
        sectors: u32,
    ) -> std::io::Result<(LoopDevice, PathBuf)> {
        let image = dir.join(format!("loop-part-{}.img", std::process::id()));
        let mut mbr = [0u8; 512];
        let entry = &mut mbr[446..462];
        entry[1..4].copy_from_slice(&[0xfe, 0xff, 0xff]);
        entry[4] = 0x83;
        entry[5..8].copy_from_slice(&[0xfe, 0xff, 0xff]);
        entry[8..12].copy_from_slice(&start_sector.to_le_bytes());
        entry[12..16].copy_from_slice(&sectors.to_le_bytes());
        mbr[510] = 0x55;
        mbr[511] = 0xaa;
        fs::write(&image, mbr)?;
        fs::OpenOptions::new()
            .write(true)
            .open(&image)?
            .set_len(size_mib << 20)?;
        let out = Command::new("losetup")
            .args(["-f", "--show", "-P", "--direct-io=on"])
            .arg(&image)
            .output()?;
        if !out.status.success() {
            let _ = fs::remove_file(&image);
            return Err(std::io::Error::other(format!(
                "losetup -P failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
        let dev = LoopDevice { path, image };
        let part = PathBuf::from(format!("{}p1", dev.path.display()));
        for attempt in 0..100 {
            if part.exists() {
                return Ok((dev, part));
            }
            if attempt == 10 {
                // Kernels without the MBR parser (CONFIG_MSDOS_PARTITION off)
                // find no partition: add it explicitly (BLKPG).
                let _ = Command::new("addpart")
                    .arg(&dev.path)
                    .args(["1", &start_sector.to_string(), &sectors.to_string()])
                    .status();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Err(std::io::Error::other(format!(
            "{} did not appear",
            part.display()
        )))
    }
}

/// `/dev/zram0`, a RAM block device without non-blocking I/O, for a test.
/// Shares the bench scripts' lock so only one user writes to it at a time.
/// When it has no size yet it is sized here and reset on drop; when it is
/// sized already, it is used as found unless it is mounted, swapped on or
/// held (then the test is skipped: it is someone's data).
pub struct ZramDevice {
    pub path: PathBuf,
    sized_here: bool,
    _lock: fs::File,
}

impl ZramDevice {
    pub fn acquire(test: &str) -> Option<ZramDevice> {
        use std::os::fd::AsRawFd;
        let sys = Path::new("/sys/block/zram0");
        if !sys.exists() {
            let _ = Command::new("modprobe").arg("zram").status();
        }
        if !sys.exists() {
            skip(test, "/dev/zram0 does not exist (no zram module)");
            return None;
        }
        let lock = match fs::File::create("/tmp/tracemark-bench-zram0.lock") {
            Ok(f) => f,
            Err(e) => {
                skip(test, &format!("cannot create the zram0 lock file: {e}"));
                return None;
            }
        };
        // SAFETY: flock on a file we own; released when it is closed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            skip(test, "cannot lock /tmp/tracemark-bench-zram0.lock");
            return None;
        }
        let in_use = fs::read_to_string("/proc/mounts")
            .unwrap_or_default()
            .lines()
            .chain(
                fs::read_to_string("/proc/swaps")
                    .unwrap_or_default()
                    .lines(),
            )
            .any(|l| l.starts_with("/dev/zram0 "))
            || fs::read_dir(sys.join("holders")).is_ok_and(|mut d| d.next().is_some());
        if in_use {
            skip(test, "/dev/zram0 is mounted, swapped on or held");
            return None;
        }
        let size = fs::read_to_string(sys.join("disksize")).unwrap_or_default();
        let sized_here = size.trim() == "0";
        if sized_here {
            if let Err(e) = fs::write(sys.join("disksize"), "256M") {
                skip(test, &format!("cannot size /dev/zram0: {e}"));
                return None;
            }
        }
        Some(ZramDevice {
            path: PathBuf::from("/dev/zram0"),
            sized_here,
            _lock: lock,
        })
    }

    pub fn dev_id(&self) -> (u32, u32) {
        let s = fs::read_to_string("/sys/block/zram0/dev").unwrap_or_default();
        let (a, b) = s.trim().split_once(':').unwrap_or(("0", "0"));
        (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
    }
}

impl Drop for ZramDevice {
    fn drop(&mut self) {
        if self.sized_here {
            let _ = fs::write("/sys/block/zram0/reset", "1");
        }
    }
}
