//! Where a [`TraceFile`](super::TraceFile)'s bytes live, and how a rewrite
//! of the file under the reader is noticed.

use crate::error::FormatError;

/// Where a [`TraceFile`]'s bytes live.
pub(super) enum Backing {
    /// A file read with positioned reads (`pread`), one chunk at a time.
    File {
        file: std::fs::File,
        stamp: FileStamp,
    },
    /// Bytes already in memory (tests, fuzzing, small embedded traces).
    Memory(Vec<u8>),
}

/// What tells a file rewritten in place from the one that was opened: a
/// rewrite (`cp new.tmt live.tmt`, an editor saving) changes the length or the
/// modification or change time of the same inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileStamp {
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    pub(super) fn of(file: &std::fs::File) -> std::io::Result<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata()?;
        Ok(FileStamp {
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

impl Backing {
    pub(super) fn len(&self) -> u64 {
        match self {
            Backing::File { stamp, .. } => stamp.len,
            Backing::Memory(bytes) => bytes.len() as u64,
        }
    }

    /// Reads `len` bytes at `offset` into `out`; a range beyond the end (the
    /// file shrank) is a truncation.
    pub(super) fn read_at(
        &self,
        offset: u64,
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), FormatError> {
        out.clear();
        let end = offset
            .checked_add(len as u64)
            .filter(|&e| e <= self.len())
            .ok_or_else(|| {
                FormatError::Truncated("a block runs past the end of the file".into())
            })?;
        match self {
            Backing::Memory(bytes) => {
                out.extend_from_slice(&bytes[offset as usize..end as usize]);
                Ok(())
            }
            Backing::File { file, .. } => {
                use std::os::unix::fs::FileExt;
                out.resize(len, 0);
                let mut got = 0;
                while got < len {
                    match file.read_at(&mut out[got..], offset + got as u64) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(FormatError::Stream(e)),
                    }
                }
                self.check_unchanged()?;
                if got < len {
                    return Err(FormatError::Truncated(
                        "a block runs past the end of the file".into(),
                    ));
                }
                Ok(())
            }
        }
    }

    /// Fails when the file is no longer the one that was opened.
    pub(super) fn check_unchanged(&self) -> Result<(), FormatError> {
        if let Backing::File { file, stamp } = self {
            if FileStamp::of(file).map_err(FormatError::Stream)? != *stamp {
                return Err(FormatError::Changed);
            }
        }
        Ok(())
    }
}
