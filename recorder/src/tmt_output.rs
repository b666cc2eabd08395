//! The `.tmt` a conversion or a capture writes: created before the work
//! starts (an output that cannot be written stops it early), filled with
//! normalised records, then committed into place in one step or discarded.
//!
//! The trace is written to an unnamed temporary file (`O_TMPFILE`) in the
//! output's folder and linked into place only on commit, so a failed, killed
//! or interrupted run leaves nothing behind, not even a temporary file. Where
//! the filesystem has no `O_TMPFILE`, a hidden `.NAME.tmp-PID` beside the
//! output is used instead (removed on failure; only a `kill -9` can leave it).
//! Either way the output appears complete or not at all (a rename).
//!
//! The output must be a regular file or not exist yet: a device node, FIFO,
//! socket or directory is refused, never replaced. A symbolic link is
//! followed (as a shell's `>` does): its target is written, the link stays.

use crate::error::{ConvertError, UsageKind};
use crate::normalize::RecordSink;
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use trace_format::{
    IoRecord, IssueEvent, Summary, TraceHeader, TraceTail, TraceWriter, WriterOptions,
};

fn io_error(path: &Path, source: io::Error) -> ConvertError {
    ConvertError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where the bytes go until commit.
enum Temp {
    /// An `O_TMPFILE` file in this folder: no name until it is linked.
    Unnamed { dir: PathBuf },
    /// A hidden file beside the output, removed unless committed.
    Named(PathBuf),
}

/// The file a trace is written to before it is committed to its output path.
pub struct OutputFile {
    /// The path the trace will have (a symlink's target, resolved).
    target: PathBuf,
    temp: Temp,
    committed: bool,
}

/// What is at `path` now, when it is something `-o` must not replace.
fn refused_kind(meta: &fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_dir() {
        Some("a directory")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// The path the trace is written to: `output`, or the file its symbolic
/// link(s) lead to. `Err` when that is not a regular file (or nothing).
fn resolve_target(output: &Path) -> Result<PathBuf, ConvertError> {
    let mut path = output.to_path_buf();
    for _ in 0..40 {
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path),
            Err(e) => return Err(io_error(&path, e)),
        };
        if meta.file_type().is_symlink() {
            let link = fs::read_link(&path).map_err(|e| io_error(&path, e))?;
            path = match path.parent() {
                Some(dir) if link.is_relative() => dir.join(link),
                _ => link,
            };
            continue;
        }
        if let Some(kind) = refused_kind(&meta) {
            let via = if path == output {
                String::new()
            } else {
                format!(" (the target of the link {})", output.display())
            };
            return Err(ConvertError::usage(
                UsageKind::BadOutput,
                format!(
                    "{} is {kind}{via}; the output must be a regular file or a new path \
                     (refusing to replace it)",
                    path.display()
                ),
            ));
        }
        return Ok(path);
    }
    Err(ConvertError::usage(
        UsageKind::BadOutput,
        format!("{}: too many levels of symbolic links", output.display()),
    ))
}

impl OutputFile {
    /// Checks `output` and opens the temporary file the trace is written to.
    pub fn create(output: &Path) -> Result<(OutputFile, File), ConvertError> {
        let target = resolve_target(output)?;
        let name = target
            .file_name()
            .ok_or_else(|| {
                ConvertError::usage(
                    UsageKind::BadOutput,
                    format!("{} is not a file name", output.display()),
                )
            })?
            .to_os_string();
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        match OpenOptions::new()
            .write(true)
            .mode(0o666)
            .custom_flags(libc::O_TMPFILE)
            .open(&dir)
        {
            Ok(file) => {
                return Ok((
                    OutputFile {
                        target,
                        temp: Temp::Unnamed { dir },
                        committed: false,
                    },
                    file,
                ))
            }
            // No O_TMPFILE on this filesystem (or kernel): a named file.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOSYS)
                ) => {}
            Err(e) => return Err(io_error(&dir, e)),
        }
        let temp = dir.join(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .map_err(|e| io_error(&temp, e))?;
        Ok((
            OutputFile {
                target,
                temp: Temp::Named(temp),
                committed: false,
            },
            file,
        ))
    }

    /// Flushes `file` (the one [`OutputFile::create`] returned) to disk and
    /// puts it at the output path, replacing what was there.
    pub fn commit(mut self, file: File) -> Result<(), ConvertError> {
        file.sync_all().map_err(|e| io_error(&self.target, e))?;
        let named = match &self.temp {
            Temp::Named(path) => path.clone(),
            Temp::Unnamed { dir } => {
                // linkat cannot replace a file: link under a hidden name,
                // then rename over the output.
                let hidden = dir.join(format!(
                    ".{}.tmp-{}",
                    self.target
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default(),
                    std::process::id()
                ));
                let _ = fs::remove_file(&hidden);
                link_unnamed(&file, &hidden).map_err(|e| io_error(&hidden, e))?;
                self.temp = Temp::Named(hidden.clone());
                hidden
            }
        };
        drop(file);
        fs::rename(&named, &self.target).map_err(|e| io_error(&self.target, e))?;
        self.committed = true;
        Ok(())
    }
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

impl Drop for OutputFile {
    fn drop(&mut self) {
        if !self.committed {
            if let Temp::Named(path) = &self.temp {
                let _ = fs::remove_file(path);
            }
        }
    }
}

/// Writes normalised records into a `.tmt`. The trace is started only once
/// the normaliser knows the issue event; `complete_header` then fills in
/// what else only the input could tell (its format, the capture's start
/// time). Dropped without [`TmtOutput::commit`], it leaves nothing.
pub struct TmtOutput<'h> {
    header: TraceHeader,
    complete_header: Box<dyn FnMut(&mut TraceHeader) + 'h>,
    options: WriterOptions,
    output: OutputFile,
    file: Option<BufWriter<File>>,
    writer: Option<TraceWriter<BufWriter<File>>>,
}

impl<'h> TmtOutput<'h> {
    /// Creates the output (see [`OutputFile::create`]) for a trace with
    /// `header`.
    pub fn create(
        path: &Path,
        header: TraceHeader,
        options: WriterOptions,
        complete_header: impl FnMut(&mut TraceHeader) + 'h,
    ) -> Result<TmtOutput<'h>, ConvertError> {
        Ok(TmtOutput::new(
            OutputFile::create(path)?,
            header,
            options,
            complete_header,
        ))
    }

    /// The trace writer for an output created earlier.
    pub fn new(
        (output, file): (OutputFile, File),
        header: TraceHeader,
        options: WriterOptions,
        complete_header: impl FnMut(&mut TraceHeader) + 'h,
    ) -> TmtOutput<'h> {
        TmtOutput {
            header,
            complete_header: Box::new(complete_header),
            options,
            output,
            file: Some(BufWriter::with_capacity(1 << 20, file)),
            writer: None,
        }
    }

    /// The header as written (complete once the first record came).
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// Writes the footer and puts the trace at its output path.
    pub fn commit(mut self, tail: &TraceTail) -> Result<Summary, ConvertError> {
        let writer = self.writer.take().ok_or_else(|| {
            ConvertError::usage(UsageKind::Internal, "the trace was never started")
        })?;
        let target = &self.output.target;
        let (buffered, summary) = writer
            .finish(tail)
            .map_err(|e| e.with_path(target.as_path()))?;
        let file = buffered
            .into_inner()
            .map_err(|e| io_error(&self.output.target, e.into_error()))?;
        self.output.commit(file)?;
        Ok(summary)
    }
}

impl RecordSink for TmtOutput<'_> {
    fn begin(&mut self, issue_event: IssueEvent) -> Result<(), ConvertError> {
        self.header.issue_event = issue_event;
        (self.complete_header)(&mut self.header);
        let file = self.file.take().ok_or_else(|| {
            ConvertError::usage(UsageKind::Internal, "trace output started twice")
        })?;
        self.writer = Some(
            TraceWriter::with_options(file, &self.header, self.options)
                .map_err(|e| e.with_path(self.output.target.as_path()))?,
        );
        Ok(())
    }

    fn record(&mut self, record: IoRecord) -> Result<(), ConvertError> {
        let writer = self.writer.as_mut().ok_or_else(|| {
            ConvertError::usage(UsageKind::Internal, "record before the trace header")
        })?;
        // A full disk or a failing write names the trace being written.
        writer
            .push(&record)
            .map_err(|e| e.with_path(self.output.target.as_path()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn nothing_appears_before_commit_and_nothing_stays_after_a_discard() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.tmt");
        let (output, mut file) = OutputFile::create(&out).unwrap();
        io::Write::write_all(&mut file, b"partial").unwrap();
        if matches!(output.temp, Temp::Unnamed { .. }) {
            assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
        }
        drop(output);
        drop(file);
        assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));

        let (output, mut file) = OutputFile::create(&out).unwrap();
        io::Write::write_all(&mut file, b"whole").unwrap();
        output.commit(file).unwrap();
        assert_eq!(entries(dir.path()), ["t.tmt"]);
        assert_eq!(fs::read(&out).unwrap(), b"whole");
        // A second commit replaces the first.
        let (output, mut file) = OutputFile::create(&out).unwrap();
        io::Write::write_all(&mut file, b"again").unwrap();
        output.commit(file).unwrap();
        assert_eq!(entries(dir.path()), ["t.tmt"]);
        assert_eq!(fs::read(&out).unwrap(), b"again");
    }

    #[test]
    fn a_symlink_is_followed_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.tmt");
        fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.tmt");
        std::os::unix::fs::symlink("real.tmt", &link).unwrap();
        let (output, mut file) = OutputFile::create(&link).unwrap();
        io::Write::write_all(&mut file, b"new").unwrap();
        output.commit(file).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
        // A dangling link gets its target created.
        let dangling = dir.path().join("dangling.tmt");
        std::os::unix::fs::symlink("made.tmt", &dangling).unwrap();
        let (output, file) = OutputFile::create(&dangling).unwrap();
        output.commit(file).unwrap();
        assert!(dir.path().join("made.tmt").is_file());
    }

    #[test]
    fn special_files_are_refused_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let err = OutputFile::create(dir.path()).err().unwrap();
        assert_eq!(err.usage_kind(), Some(UsageKind::BadOutput), "{err}");
        let err = OutputFile::create(Path::new("/dev/null")).err().unwrap();
        assert_eq!(err.usage_kind(), Some(UsageKind::BadOutput), "{err}");
        // The message says what the path is and that it is kept.
        assert_eq!(
            err.to_string(),
            "/dev/null is a character device; the output must be a regular file or a new \
             path (refusing to replace it)"
        );
        let fifo = dir.path().join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let link = dir.path().join("to-fifo.tmt");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let err = OutputFile::create(&link).err().unwrap();
        assert_eq!(err.usage_kind(), Some(UsageKind::BadOutput), "{err}");
        let err = err.to_string();
        assert!(
            err.contains("is a FIFO") && err.contains("(the target of the link"),
            "{err}"
        );
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
}
