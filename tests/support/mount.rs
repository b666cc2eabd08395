//! A filesystem mounted on a private folder for one test, unmounted when
//! dropped (also when the test fails).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder a test mounted something on.
pub struct Mount(pub PathBuf);

impl Mount {
    /// Makes the folder `at` and runs `mount ARGS... AT`.
    pub fn new<I, S>(args: I, at: &Path) -> Mount
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount").args(args).arg(at).output().unwrap();
        assert!(
            out.status.success(),
            "mount on {}: {}",
            at.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Mount(at.to_path_buf())
    }

    /// A tmpfs of `size` (`64k`, `4M`) at the new folder `at`.
    pub fn tmpfs(at: &Path, size: &str) -> Mount {
        Mount::new(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"], at)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
