//! The one way tracemark writes a file. Every output (traces, result files,
//! reports, exports, markers) goes through [`AtomicFile`] or [`write`], so
//! every output follows the same rules:
//!
//! - `-` is standard output;
//! - a symbolic link is followed: its target is replaced, the link stays;
//! - a directory, device node, FIFO or socket is refused, never replaced
//!   or written into;
//! - an existing file is replaced only when tracemark wrote it and nobody
//!   changed it since, or it is empty, or the run was told `--overwrite`
//!   ([`allow_overwrite`]); a user's file is refused before any work;
//! - the bytes go to a temporary in the output's folder (an unnamed
//!   `O_TMPFILE` file, or a short `.tmk-PID-START-N.tmp` where the
//!   filesystem has none, so any valid output name works), which is synced,
//!   renamed over the output, and the folder synced: a reader, a crash, a
//!   full disk or a kill sees the old file or the whole new one;
//! - a replaced file keeps its mode and owner;
//! - a named temporary is removed by SIGINT, SIGTERM, SIGHUP and SIGQUIT,
//!   and the next write into the folder sweeps those a SIGKILL left (only
//!   tracemark's names, only this user's, only of processes that are gone).
//!
//! - a path that names the file standard output already writes (as
//!   `/dev/stdout` does) is standard output: the bytes go where the shell
//!   sent them (`>>` appends), the file is not replaced.
//!
//! [`refuse_inputs`] refuses an output that is one of the command's inputs
//! or the results database, by device and inode; [`refuse_same_outputs`]
//! two outputs of one command that are one file.

mod error;
mod ledger;
mod mark;
mod same;
mod stdio;
mod target;
mod temp;
pub mod xattr;

pub use error::{NotOurs, OutputError};
pub use ledger::state_dir;
pub use mark::{allow_overwrite, Replace};
pub use same::{
    database_files, is_database, is_input, is_output, refuse_inputs, refuse_same_outputs,
};
pub use stdio::divert_text_to_stderr;
pub use target::{kind_name, refused_kind, resolve, special_kind, Resolved};
pub use temp::sweep;

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Checks, before any work, that `output` can be written: what it names
/// (see [`resolve`]) and its folder (exists, writable, allows the name).
pub fn check(output: &Path) -> Result<(), OutputError> {
    resolve(output).map(|_| ())
}

/// [`check`], with the rule for an existing file given.
pub fn check_with(output: &Path, replace: Replace) -> Result<(), OutputError> {
    target::resolve_with(output, replace).map(|_| ())
}

/// Where the bytes are until commit.
enum Temp {
    Stdout,
    /// Renamed over the output: nothing left to remove.
    Renamed,
    /// An `O_TMPFILE` file in `dir`: no name until it is linked.
    Unnamed {
        dir: PathBuf,
    },
    /// A named temporary in the output's folder.
    Named {
        path: PathBuf,
        _signal: temp::Registered,
    },
}

/// An output being written: [`AtomicFile::commit`] puts it in place whole;
/// dropped without commit, it leaves the old file and no temporary.
pub struct AtomicFile {
    file: File,
    /// The path replaced on commit (links followed).
    target: PathBuf,
    /// The path as given (for messages).
    requested: PathBuf,
    dir: PathBuf,
    temp: Temp,
    replace: Replace,
}

fn io_err(path: &Path, source: io::Error) -> OutputError {
    OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl AtomicFile {
    /// Checks `output` and opens the temporary its bytes go to.
    pub fn create(output: &Path) -> Result<AtomicFile, OutputError> {
        AtomicFile::create_with(output, true, Replace::IfOurs)
    }

    /// [`AtomicFile::create`], with the rule for an existing file given.
    pub fn create_replacing(output: &Path, replace: Replace) -> Result<AtomicFile, OutputError> {
        AtomicFile::create_with(output, true, replace)
    }

    /// [`AtomicFile::create`], with `O_TMPFILE` tried or not (tests use the
    /// named temporary of filesystems without it) and the rule for an
    /// existing file.
    fn create_with(
        output: &Path,
        unnamed: bool,
        replace: Replace,
    ) -> Result<AtomicFile, OutputError> {
        let (target, dir, existing) = match target::resolve_with(output, replace)? {
            Resolved::Stdout => {
                let fd = stdio::result_out().map_err(|e| io_err(output, e))?;
                return Ok(AtomicFile {
                    file: File::from(fd),
                    target: output.to_path_buf(),
                    requested: output.to_path_buf(),
                    dir: PathBuf::new(),
                    temp: Temp::Stdout,
                    replace,
                });
            }
            Resolved::File {
                target,
                dir,
                existing,
            } => (target, dir, existing),
        };
        temp::sweep(&dir);
        let tried = if unnamed {
            OpenOptions::new()
                .write(true)
                .mode(0o666)
                .custom_flags(libc::O_TMPFILE)
                .open(&dir)
        } else {
            Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
        };
        let (file, temp) = match tried {
            Ok(file) => (file, Temp::Unnamed { dir: dir.clone() }),
            // No O_TMPFILE on this filesystem (or kernel): a named file.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOSYS)
                ) =>
            {
                let path = temp::name(&dir);
                let signal = temp::register(&path);
                let file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o666)
                    .open(&path)
                    .map_err(|e| io_err(output, e))?;
                (
                    file,
                    Temp::Named {
                        path,
                        _signal: signal,
                    },
                )
            }
            Err(e) => return Err(io_err(output, e)),
        };
        if let Some(old) = existing {
            keep_mode_and_owner(&file, &old).map_err(|e| io_err(&target, e))?;
        }
        Ok(AtomicFile {
            file,
            target,
            requested: output.to_path_buf(),
            dir,
            temp,
            replace,
        })
    }

    /// The open temporary (for writers that need a [`File`]).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The path replaced on commit (the output's links followed).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// An error about this output, naming it.
    pub fn error(&self, source: io::Error) -> OutputError {
        io_err(&self.requested, source)
    }

    /// Syncs the temporary, renames it over the output and syncs the
    /// folder: the output is now the whole new file.
    pub fn commit(mut self) -> Result<(), OutputError> {
        if self.prepare()? {
            self.rename()?;
            sync_dir(&self.dir).map_err(|e| io_err(&self.dir, e))?;
        }
        Ok(())
    }

    /// Commits `files` as one set: every temporary is synced and its output
    /// checked before any is renamed, so a file refused at one output (put
    /// there while the run worked) leaves every output as it was; then all
    /// are renamed and each folder synced once.
    pub fn commit_all(mut files: Vec<AtomicFile>) -> Result<(), OutputError> {
        let mut renamed = Vec::with_capacity(files.len());
        for f in &mut files {
            renamed.push(f.prepare()?);
        }
        for (f, named) in files.iter_mut().zip(renamed) {
            if named {
                f.rename()?;
            }
        }
        let mut dirs: Vec<&Path> = Vec::new();
        for f in files.iter().filter(|f| matches!(f.temp, Temp::Renamed)) {
            if !dirs.contains(&f.dir.as_path()) {
                dirs.push(&f.dir);
            }
        }
        for dir in dirs {
            sync_dir(dir).map_err(|e| io_err(dir, e))?;
        }
        Ok(())
    }

    /// Everything before the rename: the temporary marked, synced and
    /// named, the output checked once more. False for standard output
    /// (flushed; nothing to rename).
    fn prepare(&mut self) -> Result<bool, OutputError> {
        if let Temp::Stdout = self.temp {
            self.file.flush().map_err(|e| io_err(&self.requested, e))?;
            return Ok(false);
        }
        mark::set(&self.file, self.replace);
        self.file
            .sync_all()
            .map_err(|e| io_err(&self.requested, e))?;
        // What is at the output now must still be replaceable (a user may
        // have put a file there while the run worked).
        if let Ok(meta) = fs::metadata(&self.target) {
            if let Some(kind) = target::refused_kind(&meta) {
                return Err(OutputError::Special {
                    path: self.requested.clone(),
                    kind,
                    via: String::new(),
                });
            }
            mark::check(&self.requested, &self.target, &meta, self.replace)?;
        }
        if let Temp::Unnamed { dir } = &self.temp {
            // linkat cannot replace a file: link under a temporary name,
            // then rename over the output.
            let path = temp::name(dir);
            let signal = temp::register(&path);
            link_unnamed(&self.file, &path).map_err(|e| io_err(&self.requested, e))?;
            self.temp = Temp::Named {
                path,
                _signal: signal,
            };
        }
        Ok(true)
    }

    /// Renames the prepared temporary over the output.
    fn rename(&mut self) -> Result<(), OutputError> {
        let Temp::Named { path, .. } = &self.temp else {
            unreachable!("a prepared temporary is named");
        };
        fs::rename(path, &self.target).map_err(|e| io_err(&self.requested, e))?;
        self.temp = Temp::Renamed;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Temp::Named { path, .. } = &self.temp {
            let _ = fs::remove_file(path);
        }
    }
}

/// The new file gets the mode and owner of the one it replaces (the owner
/// only where this process may give it).
fn keep_mode_and_owner(file: &File, old: &fs::Metadata) -> io::Result<()> {
    file.set_permissions(fs::Permissions::from_mode(old.mode() & 0o7777))?;
    let new = file.metadata()?;
    if new.uid() != old.uid() || new.gid() != old.gid() {
        // SAFETY: a valid open descriptor.
        let rc = unsafe { libc::fchown(file.as_raw_fd(), old.uid(), old.gid()) };
        if rc == 0 {
            // chown clears set-id bits: set the mode again.
            file.set_permissions(fs::Permissions::from_mode(old.mode() & 0o7777))?;
        }
    }
    Ok(())
}

/// Gives an `O_TMPFILE` file the name `path`.
fn link_unnamed(file: &File, path: &Path) -> io::Result<()> {
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let to = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: both are valid NUL-terminated paths.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes `bytes` as the whole of `output` (see [`AtomicFile`]).
pub fn write(output: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_with(output, |w| w.write_all(bytes))
}

/// Writes `bytes` as the whole of `path`, a file in tracemark's own cache or
/// state folder that replaces whatever is there (see [`Replace::Always`]).
pub fn write_own(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut file = AtomicFile::create_replacing(path, Replace::Always)?;
    file.write_all(bytes).map_err(|e| io_err(path, e))?;
    file.commit()
}

/// Writes `output` with `fill` (through a buffer), then commits it; an
/// error from `fill` leaves the old file.
pub fn write_with(
    output: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), OutputError> {
    let mut file = AtomicFile::create(output)?;
    {
        let mut w = io::BufWriter::with_capacity(1 << 16, &mut file);
        fill(&mut w).map_err(|e| io_err(output, e))?;
        w.flush().map_err(|e| io_err(output, e))?;
    }
    file.commit()
}

#[cfg(test)]
mod tests;
