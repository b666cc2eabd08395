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
    #[error("{section} section is corrupt: {reason}")]
    CorruptSection {
        /// Which section (`task`).
        section: &'static str,
        reason: String,
    },
    #[error("chunk {chunk} (of {chunks}) is corrupt: {reason}")]
    CorruptChunk {
        chunk: usize,
        chunks: usize,
        /// [`FormatErrorKind::CorruptChunk`], or what is wrong in it.
        kind: FormatErrorKind,
        reason: String,
    },
    #[error("record {index}: {reason}")]
    BadRecord {
        index: u64,
        kind: FormatErrorKind,
        reason: String,
    },
    #[error("{path}: is {kind}, not a trace file")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("the file was changed by another program while being read (rewritten in place?); what was read of it cannot be trusted")]
    Changed,
    #[error("metadata could not be encoded: {0}")]
    Encode(String),
    #[error("metadata could not be encoded: a record names device {device} but the device table has {table} entries")]
    UnknownDevice { device: u16, table: usize },
}

/// What went wrong, for a caller (or a test) to act on without reading the
/// message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatErrorKind {
    /// Reading or writing the file failed.
    Io,
    NotATrace,
    NewerVersion,
    /// The file ends early.
    Truncated,
    CorruptHeader,
    CorruptFooter,
    CorruptChunk,
    /// A section (the task section) is damaged or impossible.
    CorruptSection,
    /// A record names a device the trace's device table does not have.
    UnknownDevice,
    /// A record's time is before the previous record's.
    RecordOutOfOrder,
    /// A request ends beyond 2^63 bytes.
    RecordBeyondRange,
    /// The path is a directory, a FIFO, a device: not a trace file.
    NotAFile,
    /// The file was rewritten while being read.
    Changed,
    Encode,
}

impl FormatError {
    pub fn kind(&self) -> FormatErrorKind {
        use FormatErrorKind as K;
        match self {
            FormatError::Io { .. } | FormatError::Stream(_) => K::Io,
            FormatError::NotATrace => K::NotATrace,
            FormatError::NewerVersion { .. } => K::NewerVersion,
            FormatError::Truncated(_) => K::Truncated,
            FormatError::CorruptHeader(_) => K::CorruptHeader,
            FormatError::CorruptFooter(_) => K::CorruptFooter,
            FormatError::CorruptSection { .. } => K::CorruptSection,
            FormatError::CorruptChunk { kind, .. } | FormatError::BadRecord { kind, .. } => *kind,
            FormatError::NotAFile { .. } => K::NotAFile,
            FormatError::Changed => K::Changed,
            FormatError::Encode(_) => K::Encode,
            FormatError::UnknownDevice { .. } => K::UnknownDevice,
        }
    }

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
