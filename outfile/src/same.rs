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
    /// A path with nothing there yet: its folder (links resolved as far as
    /// it exists) and name.
    New(PathBuf),
}

/// What `-` stands for: standard input among a command's inputs, standard
/// output among its outputs.
#[derive(Debug, Clone, Copy)]
enum Role {
    Input,
    Output,
}

/// `path` without a trailing `/` or `.` (`results.db/.` opens
/// `results.db`, so it is that file).
fn normal(path: &Path) -> PathBuf {
    path.components().collect()
}

/// Device and inode of what `path` leads to (links followed), `-` as
/// `role` says. None when there is nothing there (or it cannot be looked
/// at: then it is not read either, and the open that reads it reports why).
fn identity(path: &Path, role: Role) -> Option<(u64, u64)> {
    if path.as_os_str() == "-" {
        return match role {
            Role::Input => crate::stdio::stdin_identity(),
            Role::Output => crate::stdio::stdout_identity(),
        };
    }
    let m = fs::metadata(normal(path)).ok()?;
    Some((m.dev(), m.ino()))
}

/// `dir` with its links resolved as far as it exists, the rest as written.
fn resolve_dir(dir: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    let mut at = dir.to_path_buf();
    loop {
        if let Ok(mut resolved) = fs::canonicalize(&at) {
            resolved.extend(rest.iter().rev());
            return Some(resolved);
        }
        rest.push(at.file_name()?.to_owned());
        at = match at.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
    }
}

/// Where `path` is, or will be made.
fn place(path: &Path, role: Role) -> Option<Place> {
    if let Some((dev, ino)) = identity(path, role) {
        return Some(Place::File(dev, ino));
    }
    if path.as_os_str() == "-" {
        return None;
    }
    let target = crate::target::follow_links(&normal(path)).ok()?;
    let name = target.file_name()?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(Place::New(resolve_dir(dir)?.join(name)))
}

/// The results database's files: the database, then SQLite's journals.
pub fn database_files(db: &Path) -> impl Iterator<Item = PathBuf> {
    let db = normal(db);
    std::iter::once(db.clone()).chain(["-wal", "-shm", "-journal"].into_iter().map(move |s| {
        let mut p = db.as_os_str().to_owned();
        p.push(s);
        PathBuf::from(p)
    }))
}

/// Whether `path` is, or will be, the file `input` names (`-`: the file
/// standard input reads).
pub fn is_input(path: &Path, input: &Path) -> bool {
    matches!((place(path, Role::Output), place(input, Role::Input)), (Some(p), Some(q)) if p == q)
}

/// Whether `path` is, or will be, the file `output` names (`-`: the file
/// standard output writes).
pub fn is_output(path: &Path, output: &Path) -> bool {
    matches!((place(path, Role::Output), place(output, Role::Output)), (Some(p), Some(q)) if p == q)
}

/// Whether `path` (`-`: the file standard output writes) is, or will be,
/// the results database `db` or one of its journals.
pub fn is_database(path: &Path, db: &Path) -> bool {
    let Some(p) = place(path, Role::Output) else {
        return false;
    };
    database_files(db).any(|f| place(&f, Role::Output).as_ref() == Some(&p))
}

/// `path` as a message shows it: `-` says which stream it is.
fn shown(path: &Path, stream: &str) -> PathBuf {
    if path.as_os_str() == "-" {
        PathBuf::from(format!("- ({stream})"))
    } else {
        path.to_path_buf()
    }
}

/// `Err` when `output` (`-`: the file standard output writes, when it is
/// one) is the same file as any of `inputs` (what the command reads; `-` is
/// standard input, when that is a file) or is, or will be, the results
/// database `db` or one of its journals.
pub fn refuse_inputs<I, P>(output: &Path, inputs: I, db: Option<&Path>) -> Result<(), OutputError>
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    if let Some(db) = db {
        if is_database(output, db) {
            return Err(OutputError::IsDatabase {
                output: output.to_path_buf(),
                db: db.to_path_buf(),
            });
        }
    }
    for input in inputs {
        let input = input.as_ref();
        if is_input(output, input) {
            return Err(OutputError::IsInput {
                output: shown(output, "standard output"),
                input: shown(input, "standard input"),
            });
        }
    }
    Ok(())
}

/// `Err` when two of one command's `outputs` are, or will be, the same
/// file: the second would replace the first. `-` is the file standard
/// output writes, and may repeat (standard output takes both).
pub fn refuse_same_outputs<'a>(
    outputs: impl IntoIterator<Item = &'a Path>,
) -> Result<(), OutputError> {
    let mut seen: Vec<(&Path, Place)> = Vec::new();
    for output in outputs {
        let stdout = output.as_os_str() == "-";
        let Some(p) = place(output, Role::Output) else {
            continue;
        };
        let same = seen
            .iter()
            .find(|(first, q)| *q == p && !(stdout && first.as_os_str() == "-"));
        if let Some((first, _)) = same {
            return Err(OutputError::SameOutput {
                first: first.to_path_buf(),
                second: output.to_path_buf(),
            });
        }
        seen.push((output, p));
    }
    Ok(())
}
