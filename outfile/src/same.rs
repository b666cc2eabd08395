//! An output that is one of the command's inputs, the results database or
//! another of its outputs is refused: an existing file compared by device
//! and inode, so a symbolic link, a hard link or `/proc/self/fd/N` to the
//! same file is caught as well as its name; a path not made yet by the
//! folder it will be made in and its name.

use crate::error::OutputError;
use std::fs;
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

/// Device and inode of what `path` leads to (links followed); `-` is
/// standard input. None when there is nothing there (or it cannot be
/// looked at: then it is not read either, and the open that reads it
/// reports why).
fn identity(path: &Path) -> Option<(u64, u64)> {
    if path.as_os_str() == "-" {
        return crate::stdio::stdin_identity();
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

/// Whether `a` and `b` are, or will be, one file (`-` is standard input).
pub fn same_file(a: &Path, b: &Path) -> bool {
    matches!((place(a), place(b)), (Some(p), Some(q)) if p == q)
}

/// Whether `path` is, or will be, the results database `db` or one of its
/// journals.
pub fn is_database(path: &Path, db: &Path) -> bool {
    let Some(p) = place(path) else {
        return false;
    };
    database_files(db).any(|f| place(&f).as_ref() == Some(&p))
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
        if is_database(output, db) {
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
