//! The marks of outputs on filesystems that keep no user attributes (vfat,
//! exFAT, ramfs), kept instead in a ledger in tracemark's state folder, by
//! device and inode: a second run onto its own unchanged output there
//! replaces it as anywhere else, and a file of the user's stays refused.
//!
//! The ledger only ever lets tracemark replace less than it may: an entry
//! lost (a race of two runs, an unknown state folder, a remount that gives
//! new device or inode numbers) makes a later run refuse its own output and
//! ask for `--overwrite`.

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// The ledger's file name in the state folder.
const LEDGER: &str = "outputs-without-attributes";

/// Entries kept; the oldest go first. A mark forgotten costs one
/// `--overwrite`, never a file.
const MAX_ENTRIES: usize = 4096;

/// Where tracemark keeps state between runs: `$TRACEMARK_STATE_DIR`, else
/// `$XDG_STATE_HOME/tracemark`, else `~/.local/state/tracemark` (None:
/// nowhere known).
pub fn state_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = env("TRACEMARK_STATE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = env("XDG_STATE_HOME") {
        return Some(PathBuf::from(d).join("tracemark"));
    }
    env("HOME").map(|h| PathBuf::from(h).join(".local/state/tracemark"))
}

/// The key of a file's entry: its device and inode.
fn key(meta: &fs::Metadata) -> String {
    format!("{} {} ", meta.dev(), meta.ino())
}

/// The ledger's lock, held (while the file stays open) as it is read,
/// changed and written back.
fn lock(dir: &std::path::Path) -> Option<File> {
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("{LEDGER}.lock")))
        .ok()?;
    // SAFETY: takes a lock on our own open descriptor.
    (unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0).then_some(f)
}

fn entries(path: &std::path::Path) -> Vec<String> {
    fs::read_to_string(path)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Records the file in state `meta` as tracemark's output in state `state`
/// (the mark's value). Best effort.
pub(crate) fn record(meta: &fs::Metadata, state: &[u8]) {
    let Some(dir) = state_dir() else {
        return;
    };
    if fs::create_dir_all(&dir).is_err() {
        return;
    }
    let Some(_lock) = lock(&dir) else {
        return;
    };
    let path = dir.join(LEDGER);
    let key = key(meta);
    let mut lines = entries(&path);
    lines.retain(|l| !l.starts_with(&key));
    lines.push(format!("{key}{}", String::from_utf8_lossy(state)));
    let drop = lines.len().saturating_sub(MAX_ENTRIES);
    let text: String = lines[drop..].iter().map(|l| format!("{l}\n")).collect();
    let _ = crate::write_own(&path, text.as_bytes());
}

/// The state the ledger records for the file in state `meta`, if any.
pub(crate) fn recorded(meta: &fs::Metadata) -> Option<Vec<u8>> {
    let path = state_dir()?.join(LEDGER);
    let key = key(meta);
    entries(&path)
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix(&key).map(|s| s.as_bytes().to_vec()))
}
