//! The `.tmt` a conversion or a capture writes: created before the work
//! starts (an output that cannot be written stops it early), filled with
//! normalised records, then committed into place in one step or discarded.
//!
//! The file itself is written by [`outfile::AtomicFile`], the workspace's one
//! writer: whole or absent, special files refused, a symbolic link followed.

use crate::error::{ConvertError, UsageKind};
use crate::normalize::RecordSink;
use outfile::{AtomicFile, OutputError};
use std::fs::File;
use std::io::{self, BufWriter};
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

/// An output the writer refused or failed to write, as a conversion error.
pub fn output_error(e: OutputError) -> ConvertError {
    match e {
        OutputError::Io { path, source } => ConvertError::Io { path, source },
        refused => ConvertError::usage(UsageKind::BadOutput, refused.to_string()),
    }
}

/// The file a trace is written to before it is committed to its output path
/// (the workspace's one writer, [`outfile::AtomicFile`]).
pub struct OutputFile {
    /// The path the trace will have (a symlink's target, resolved).
    target: PathBuf,
    file: AtomicFile,
}

impl OutputFile {
    /// Checks `output` and opens the temporary file the trace is written to.
    pub fn create(output: &Path) -> Result<(OutputFile, File), ConvertError> {
        let file = AtomicFile::create(output).map_err(output_error)?;
        let handle = file.file().try_clone().map_err(|e| io_error(output, e))?;
        Ok((
            OutputFile {
                target: file.target().to_path_buf(),
                file,
            },
            handle,
        ))
    }

    /// The path the trace will replace (the output's links followed).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes `file` (the one [`OutputFile::create`] returned) to disk and
    /// puts it at the output path, replacing what was there.
    pub fn commit(self, file: File) -> Result<(), ConvertError> {
        drop(file);
        self.file.commit().map_err(output_error)
    }

    /// Commits several traces as one set ([`AtomicFile::commit_all`]): none
    /// is in place unless every one was checked and synced.
    pub fn commit_all(outputs: Vec<(OutputFile, File)>) -> Result<(), ConvertError> {
        let files = outputs
            .into_iter()
            .map(|(output, file)| {
                drop(file);
                output.file
            })
            .collect();
        AtomicFile::commit_all(files).map_err(output_error)
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
    use std::ffi::CString;
    use std::fs;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileTypeExt;

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
        assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
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
        outfile::write(&real, b"old").unwrap();
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
            "/dev/null is a character device; an output must be a regular file or a new \
             path (refusing to replace it; `-` writes to standard output)"
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
            err.contains("is a FIFO") && err.contains("to-fifo.tmt"),
            "{err}"
        );
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
}
