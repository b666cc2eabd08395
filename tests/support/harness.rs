//! The harness of the tests that need root: one call checks root and the
//! tools, makes the test's temp dir and, for tracefs tests, takes the tracing
//! lock and snapshots every tracing setting; at the end the settings the test
//! set are written back and the snapshot is checked, before the lock goes.
//!
//! ```ignore
//! let Some(t) = SystemTest::with_tracefs(&["losetup"]) else { return };
//! let dev = t.loop_device(64);
//! ```

use crate::support::devices::{LoopDevice, Zram};
use crate::support::tracefs::{TraceSetting, Tracefs, TracingInstance, TracingState};
use crate::support::{require_root, require_tools, skip};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// One root test's environment; see the module doc.
pub struct SystemTest {
    // Dropped in this order (after `Drop::drop` restored and checked the
    // tracing state): the tracefs lock, then the temp dir.
    tracing: Option<Tracing>,
    dir: tempfile::TempDir,
}

struct Tracing {
    fs: Tracefs,
    /// The state when the test started.
    baseline: TracingState,
    /// Written back (last first) at the end, before the check.
    settings: RefCell<Vec<TraceSetting>>,
}

impl SystemTest {
    /// Root, `tools` on PATH and a private temp dir; `None` after the skip
    /// rule (a SKIP line, or a failure when `TRACEMARK_NO_SKIP=1`).
    pub fn start(tools: &[&str]) -> Option<SystemTest> {
        if !require_root() || !require_tools(tools) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        Some(SystemTest { tracing: None, dir })
    }

    /// As `start`, with tracefs: the lock on the top-level tracer, tracefs
    /// mounted, and the tracing state checked at the end.
    pub fn with_tracefs(tools: &[&str]) -> Option<SystemTest> {
        let mut t = Self::start(tools)?;
        let fs = Tracefs::acquire().unwrap_or_else(|e| panic!("tracefs: {e}"));
        let baseline = TracingState::read(&fs.root);
        t.tracing = Some(Tracing {
            fs,
            baseline,
            settings: RefCell::new(Vec::new()),
        });
        Some(t)
    }

    /// The test's temp dir, removed at the end.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn tracing(&self) -> &Tracing {
        self.tracing
            .as_ref()
            .expect("a tracefs test starts with SystemTest::with_tracefs")
    }

    /// The tracefs root (`/sys/kernel/tracing`).
    pub fn tracefs(&self) -> &Path {
        &self.tracing().fs.root
    }

    /// A private loop device over a `size_mib` image in the temp dir.
    pub fn loop_device(&self, size_mib: u64) -> LoopDevice {
        LoopDevice::new(self.dir(), size_mib).unwrap_or_else(|e| panic!("loop device: {e}"))
    }

    /// A private loop device with one partition; see `LoopDevice::with_partition`.
    pub fn loop_with_partition(
        &self,
        size_mib: u64,
        start_sector: u32,
        sectors: u32,
    ) -> (LoopDevice, PathBuf) {
        LoopDevice::with_partition(self.dir(), size_mib, start_sector, sectors)
            .unwrap_or_else(|e| panic!("partitioned loop device: {e}"))
    }

    /// A private zram device, or `None` after the skip rule when the kernel
    /// has no zram.
    pub fn zram(&self, size_mib: u64) -> Option<Zram> {
        if !Zram::available() {
            skip("the kernel cannot make zram devices (no zram module)");
            return None;
        }
        Some(Zram::new(size_mib).unwrap_or_else(|e| panic!("zram device: {e}")))
    }

    /// A private tracing instance, removed when dropped.
    pub fn instance(&self) -> TracingInstance {
        TracingInstance::create(self.tracefs()).unwrap_or_else(|e| panic!("tracing instance: {e}"))
    }

    /// Writes `value` to the tracing file `path`; the old value goes back at
    /// the end of the test (before the state is checked).
    pub fn set(&self, path: impl Into<PathBuf>, value: &str) {
        let path = path.into();
        let setting =
            TraceSetting::set(&path, value).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        self.tracing().settings.borrow_mut().push(setting);
    }

    /// As `set`, writing `restore` at the end (for files that read back in a
    /// form they do not take).
    pub fn set_restoring(&self, path: impl Into<PathBuf>, value: &str, restore: &str) {
        let path = path.into();
        let setting = TraceSetting::set_restoring(&path, value, restore)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        self.tracing().settings.borrow_mut().push(setting);
    }

    /// The tracing state now.
    pub fn tracing_state(&self) -> TracingState {
        TracingState::read(self.tracefs())
    }

    /// Panics unless the tracing state is what it was when the test started.
    pub fn assert_tracing_restored(&self) {
        let tracing = self.tracing();
        tracing
            .baseline
            .assert_restored(&settled_state(&tracing.fs.root, &tracing.baseline));
    }
}

impl Drop for SystemTest {
    fn drop(&mut self) {
        let Some(tracing) = &self.tracing else {
            return;
        };
        while let Some(setting) = tracing.settings.borrow_mut().pop() {
            drop(setting);
        }
        let now = settled_state(&tracing.fs.root, &tracing.baseline);
        if std::thread::panicking() {
            if now != tracing.baseline {
                eprintln!("warning: the failed test left the tracing state changed");
            }
        } else {
            tracing.baseline.assert_restored(&now);
        }
    }
}

/// The tracing state, read again for up to 5 s while it differs from
/// `baseline` in the list of instances only: a concurrent copy of the tests
/// kills a capture on purpose (SIGKILL leaves its instance) and its next
/// capture removes that instance a moment later. An instance this test
/// leaked stays, and fails the comparison.
fn settled_state(root: &Path, baseline: &TracingState) -> TracingState {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let now = TracingState::read(root);
        if now == *baseline
            || !now.differs_only_in_instances(baseline)
            || std::time::Instant::now() > deadline
        {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
