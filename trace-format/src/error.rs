use std::path::PathBuf;

/// Everything that can go wrong reading or writing a `.tmt` file. Messages name
/// the part of the file (header, chunk N, footer) so a user knows where.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("I/O error: {0}")]
    Stream(#[from] std::io::Error),
    #[error("not a tracemark trace (bad magic bytes)")]
    NotATrace,
    #[error("trace format version {major}.{minor} is newer than this tracemark understands ({}.x); upgrade tracemark", crate::VERSION_MAJOR)]
    NewerVersion { major: u16, minor: u16 },
    #[error("file is truncated: {0}")]
    Truncated(String),
    #[error("header is corrupt: {0}")]
    CorruptHeader(String),
    #[error("footer is corrupt: {0}")]
    CorruptFooter(String),
    #[error("chunk {chunk} (of {chunks}) is corrupt: {reason}")]
    CorruptChunk {
        chunk: usize,
        chunks: usize,
        reason: String,
    },
    #[error("record {index}: {reason}")]
    BadRecord { index: u64, reason: String },
    #[error("{path}: is {kind}, not a trace file")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("the file was changed by another program while being read (rewritten in place?); what was read of it cannot be trusted")]
    Changed,
    #[error("metadata could not be encoded: {0}")]
    Encode(String),
}

impl FormatError {
    /// Attaches a path to a bare I/O error.
    pub fn with_path(self, path: impl Into<PathBuf>) -> FormatError {
        match self {
            FormatError::Stream(source) => FormatError::Io {
                path: path.into(),
                source,
            },
            other => other,
        }
    }
}
