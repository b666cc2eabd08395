//! Where an output path leads: `-` (standard output), a regular file or a
//! path to create. A symbolic link is followed to its target (the target is
//! replaced, the link stays); a directory, device node, FIFO or socket is
//! refused.

use crate::error::OutputError;
use crate::mark::Replace;
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What an output path names once its links are followed.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// `-`: standard output.
    Stdout,
    /// A file path (existing regular file or nothing yet).
    File {
        /// The path written: the output, or the file its links lead to.
        target: PathBuf,
        /// The folder the temporary is made in (the target's).
        dir: PathBuf,
        /// The replaced file's metadata, when there is one.
        existing: Option<Box<fs::Metadata>>,
    },
}

/// What `meta` is, when it is something an output must not replace (or a
/// file must not be opened as a database): a directory, device node, FIFO
/// or socket. `None` for a regular file.
pub fn refused_kind(meta: &fs::Metadata) -> Option<&'static str> {
    special_kind(&meta.file_type())
}

/// What a file of type `t` is, when it is not a regular file or a link: the
/// one wording every message about such a path uses.
pub fn special_kind(t: &fs::FileType) -> Option<&'static str> {
    if t.is_dir() {
        Some("a directory")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// What a path that is not a regular file is, for an error message ("not a
/// regular file" for anything [`special_kind`] does not name).
pub fn kind_name(t: &fs::FileType) -> &'static str {
    special_kind(t).unwrap_or("not a regular file")
}

fn io_err(path: &Path, source: io::Error) -> OutputError {
    if source.raw_os_error() == Some(libc::ENAMETOOLONG) {
        let len = path.file_name().map_or(0, |n| n.as_bytes().len());
        return OutputError::NameTooLong {
            path: path.to_path_buf(),
            len,
            max: 255,
        };
    }
    OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Follows `output`'s links and checks what is there (an existing file must
/// be one tracemark may replace: see [`crate::mark`]), and that a file of
/// that name can be made in its folder (exists, is writable, allows the
/// name's length).
pub fn resolve(output: &Path) -> Result<Resolved, OutputError> {
    resolve_with(output, Replace::IfOurs)
}

/// [`resolve`], with the rule for an existing file given.
pub(crate) fn resolve_with(output: &Path, replace: Replace) -> Result<Resolved, OutputError> {
    if output.as_os_str() == "-" {
        return Ok(Resolved::Stdout);
    }
    // What the path leads to, links followed (as `>` in a shell does).
    match fs::metadata(output) {
        Ok(meta) => {
            if crate::stdio::stdout_identity() == Some((meta.dev(), meta.ino())) {
                return Ok(Resolved::Stdout);
            }
            if let Some(kind) = refused_kind(&meta) {
                let path = follow_links(output).unwrap_or_else(|_| output.to_path_buf());
                let via = if path == output {
                    String::new()
                } else {
                    format!(" (the target of the link {})", output.display())
                };
                return Err(OutputError::Special { path, kind, via });
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(output, e)),
    }
    let target = follow_links(output)?;
    let existing = match fs::metadata(&target) {
        Ok(m) => {
            crate::mark::check(output, &target, &m, replace)?;
            Some(Box::new(m))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(&target, e)),
    };
    let name = target
        .file_name()
        .ok_or_else(|| OutputError::NotAFileName {
            path: output.to_path_buf(),
        })?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    check_dir(&dir, name.as_bytes().len(), output)?;
    Ok(Resolved::File {
        target,
        dir,
        existing,
    })
}

/// The path `output`'s symbolic links lead to (the last one may dangle: the
/// file it names is created).
pub(crate) fn follow_links(output: &Path) -> Result<PathBuf, OutputError> {
    let mut path = output.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = fs::read_link(&path).map_err(|e| io_err(&path, e))?;
                path = match path.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path),
            Err(e) => return Err(io_err(&path, e)),
        }
    }
    Err(io_err(output, io::Error::from_raw_os_error(libc::ELOOP)))
}

/// The folder exists, is a folder, is writable, and its filesystem allows a
/// name of `name_len` bytes.
fn check_dir(dir: &Path, name_len: usize, output: &Path) -> Result<(), OutputError> {
    let meta = fs::metadata(dir).map_err(|e| io_err(dir, e))?;
    if !meta.is_dir() {
        return Err(io_err(dir, io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io_err(dir, io::Error::from(io::ErrorKind::InvalidInput)))?;
    // SAFETY: a valid NUL-terminated path and a zeroed out-parameter.
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut vfs) } != 0 {
        return Err(io_err(dir, io::Error::last_os_error()));
    }
    if vfs.f_flag & libc::ST_RDONLY != 0 {
        return Err(io_err(dir, io::Error::from_raw_os_error(libc::EROFS)));
    }
    let max = vfs.f_namemax as usize;
    if max > 0 && name_len > max {
        return Err(OutputError::NameTooLong {
            path: output.to_path_buf(),
            len: name_len,
            max,
        });
    }
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(io_err(dir, io::Error::last_os_error()));
    }
    Ok(())
}
