//! Why an output was not written.

use std::io;
use std::path::PathBuf;

/// Why an output was not written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{} is {kind}{via}; an output must be a regular file or a new path (refusing to replace it; `-` writes to standard output)", path.display())]
    Special {
        path: PathBuf,
        kind: &'static str,
        /// " (the target of the link L)" when the output was a link.
        via: String,
    },
    #[error("{} is not a file name", path.display())]
    NotAFileName { path: PathBuf },
    #[error("{}: the file name is {len} bytes, longer than the {max} its filesystem allows", path.display())]
    NameTooLong {
        path: PathBuf,
        len: usize,
        max: usize,
    },
    #[error("{} is the same file as the input {}; refusing to write an output over an input (give another output path)", output.display(), input.display())]
    IsInput { output: PathBuf, input: PathBuf },
    #[error("{} is the results database {}; refusing to write an output over it (give another output path)", output.display(), db.display())]
    IsDatabase { output: PathBuf, db: PathBuf },
    #[error("{} and {} are the same file; refusing to write one output over another (give each its own path)", first.display(), second.display())]
    SameOutput { first: PathBuf, second: PathBuf },
    #[error("{}{via} {why} ({len} bytes); refusing to replace it (give another output path, or pass --overwrite to replace it)", path.display())]
    NotOurs {
        path: PathBuf,
        /// " (the target of the link L)" when the output was a link.
        via: String,
        why: NotOurs,
        len: u64,
    },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Why an existing file is not one tracemark may replace on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotOurs {
    #[error("is a file tracemark did not write")]
    Unmarked,
    #[error("was written by tracemark and has been changed since (or is a copy of such a file)")]
    Changed,
    #[error("is on a filesystem that keeps no extended attributes, and tracemark's record of its outputs there does not name it")]
    NoAttributes,
}

impl OutputError {
    /// Whether the output was refused for what it names (a special file,
    /// an input, a bad name), not for a failure while writing.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, OutputError::Io { .. })
    }
}
