//! An output that is one of the command's inputs, the results database or
//! another of its outputs is refused: an existing file compared by device
//! and inode, so a symbolic link, a hard link or `/proc/self/fd/N` to the
//! same file is caught as well as its name; a path not made yet by the
//! folder it will be made in and its name.

use crate::error::OutputError;
use std::fs;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where a path's bytes are, or will be.
#[derive(Debug, PartialEq, Eq)]
enum Place {
    /// An existing file: device and inode.
    File(u64, u64),
    /// A path with nothing there yet: its folder (links resolved) and name.
    New(PathBuf),
}

/// Device and inode of an open descriptor's file, when it is a regular
/// file (a pipe or terminal is never a file an output could replace).
fn fd_identity(fd: &impl AsRawFd) -> Option<(u64, u64)> {
    // SAFETY: fstat fills the struct we pass; the descriptor is borrowed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    ((st.st_mode & libc::S_IFMT) == libc::S_IFREG).then_some((st.st_dev, st.st_ino))
}

/// The file standard input reads, when it is a regular file.
pub(crate) fn stdin_identity() -> Option<(u64, u64)> {
    fd_identity(&io::stdin())
}

/// The file standard output writes, when it is a regular file.
pub(crate) fn stdout_identity() -> Option<(u64, u64)> {
    fd_identity(&io::stdout())
}

/// Device and inode of what `path` leads to (links followed); `-` is
/// standard input. None when there is nothing there (or it cannot be
/// looked at: then it is not read either, and the open that reads it
/// reports why).
fn identity(path: &Path) -> Option<(u64, u64)> {
    if path.as_os_str() == "-" {
        return stdin_identity();
    }
    let m = fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}

/// Where `path` is, or will be made.
fn place(path: &Path) -> Option<Place> {
    if let Some((dev, ino)) = identity(path) {
        return Some(Place::File(dev, ino));
    }
    let target = crate::target::follow_links(path).ok()?;
    let name = target.file_name()?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(Place::New(fs::canonicalize(dir).ok()?.join(name)))
}

/// The results database's files: the database and SQLite's journals.
fn database_files(db: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    std::iter::once(db.to_path_buf()).chain(["-wal", "-shm", "-journal"].into_iter().map(|s| {
        let mut p = db.as_os_str().to_owned();
        p.push(s);
        PathBuf::from(p)
    }))
}

/// `Err` when `output` is the same file as any of `inputs` (what the
/// command reads; `-` is standard input, when that is a file) or is, or
/// will be, the results database `db` or one of its journals.
pub fn refuse_inputs<I, P>(output: &Path, inputs: I, db: Option<&Path>) -> Result<(), OutputError>
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    if output.as_os_str() == "-" {
        return Ok(());
    }
    let Some(out) = place(output) else {
        return Ok(());
    };
    if let Some(db) = db {
        if database_files(db).any(|f| place(&f).as_ref() == Some(&out)) {
            return Err(OutputError::IsDatabase {
                output: output.to_path_buf(),
                db: db.to_path_buf(),
            });
        }
    }
    let Place::File(dev, ino) = out else {
        return Ok(());
    };
    for input in inputs {
        let input = input.as_ref();
        if identity(input) == Some((dev, ino)) {
            let input = if input.as_os_str() == "-" {
                PathBuf::from("- (standard input)")
            } else {
                input.to_path_buf()
            };
            return Err(OutputError::IsInput {
                output: output.to_path_buf(),
                input,
            });
        }
    }
    Ok(())
}

/// `Err` when two of one command's `outputs` are, or will be, the same
/// file: the second would replace the first. `-` may repeat (standard
/// output takes both).
pub fn refuse_same_outputs<'a>(
    outputs: impl IntoIterator<Item = &'a Path>,
) -> Result<(), OutputError> {
    let mut seen: Vec<(&Path, Place)> = Vec::new();
    for output in outputs {
        if output.as_os_str() == "-" {
            continue;
        }
        let Some(p) = place(output) else { continue };
        if let Some((first, _)) = seen.iter().find(|(_, q)| *q == p) {
            return Err(OutputError::SameOutput {
                first: first.to_path_buf(),
                second: output.to_path_buf(),
            });
        }
        seen.push((output, p));
    }
    Ok(())
}
