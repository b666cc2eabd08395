use std::path::PathBuf;

/// Why a conversion stopped. Every message names the file and the line or
/// record; a bad line or record also says what is wrong with it as a
/// [`BadInputKind`]. More cases may come.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    #[error("{location}: {reason}: `{content}`")]
    BadInput {
        location: String,
        content: String,
        reason: String,
        /// What is wrong with the line or record, for callers that act on it.
        kind: BadInputKind,
    },
    #[error("{location}: {reason}")]
    Invalid { location: String, reason: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot tell the input format ({reason}); name it with --format", path.display())]
    UnknownFormat { path: PathBuf, reason: String },
    /// What the inputs, options or output ask for cannot be done (no line
    /// or record is at fault).
    #[error("{message}")]
    Usage { kind: UsageKind, message: String },
    #[error("writing the trace: {0}")]
    Format(#[from] trace_format::FormatError),
}

impl ConvertError {
    pub fn usage(kind: UsageKind, message: impl Into<String>) -> Self {
        ConvertError::Usage {
            kind,
            message: message.into(),
        }
    }

    /// The error that stops a conversion at bad input: the line or record
    /// `at`, what it holds, and why it is bad.
    pub fn bad_input(at: &crate::event::Location<'_>, content: String, reason: &BadReason) -> Self {
        ConvertError::BadInput {
            location: at.to_string(),
            content,
            reason: reason.message.clone(),
            kind: reason.kind,
        }
    }

    /// Why the conversion was refused, when the error is a usage error.
    pub fn usage_kind(&self) -> Option<UsageKind> {
        match self {
            ConvertError::Usage { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// What is wrong with the input, when the error is a bad line or record.
    pub fn bad_input_kind(&self) -> Option<BadInputKind> {
        match self {
            ConvertError::BadInput { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// Why a conversion was refused as asked, so that a caller (or a test) can
/// tell without reading the message. More kinds may come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UsageKind {
    /// No input was named.
    NoInputs,
    /// An input that is neither a file nor the prefix of a blktrace capture.
    NotAnInput,
    /// A binary format on standard input: it is read from named files.
    BinaryOnStdin,
    /// Text and binary inputs named together.
    MixedFormats,
    /// Files that hold the same CPU of the same device: two captures (or one
    /// given twice), not the per-CPU files of one.
    SeveralCaptures,
    /// An archive or compression the recorder does not read (tar, zip, 7z, ...).
    UnreadableContainer,
    /// Options that contradict each other (`--from` after `--to`,
    /// `--split-by volume` with a device filter).
    ConflictingOptions,
    /// A device filter that matches no device of the input.
    NoSuchDevice,
    /// No I/O to write: `--skip-bad` skipped everything, or nothing to split.
    NoIo,
    /// An output that is not a regular file or a new path, or is also an input.
    BadOutput,
    /// A feature this build was made without (Parquet).
    NotBuilt,
    /// The library called out of order or with a format its reader does not
    /// take: a bug of the caller, not of the input.
    Internal,
    /// A record sink stopped the conversion (a limit of its own).
    Stopped,
}

/// What is wrong with a bad line or record, so that a caller (or a test) can
/// tell without reading the message. More kinds may come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BadInputKind {
    /// Not the shape of the format: wrong number of fields, no such line.
    Syntax,
    /// A field the format requires is empty or absent.
    Missing,
    /// A field that must be a number is not one.
    NotANumber,
    /// A negative number where only zero or more makes sense.
    Negative,
    /// A number beyond what the format or a trace can hold (too large, past
    /// 2^63 bytes, an absurd time).
    OutOfRange,
    /// An operation or action (read, write, RWBS, command, event action) the
    /// format does not define.
    UnknownOp,
    /// A line or record that ends before its last field.
    Truncated,
    /// A binary record that fails a check (bad magic, an impossible value).
    Corrupt,
    /// A line longer than the recorder keeps.
    TooLong,
    /// A line that is not UTF-8 text where text is required.
    NotText,
    /// An input without any content.
    Empty,
    /// A time that runs backwards beyond what reordering tolerates.
    TimeOrder,
}

/// Why a line or record is bad: its kind and the message the user reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadReason {
    pub kind: BadInputKind,
    pub message: String,
}

impl BadReason {
    pub fn new(kind: BadInputKind, message: impl Into<String>) -> Self {
        BadReason {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for BadReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A [`BadReason`] of `kind`: what the parsers build their errors with.
pub(crate) fn bad(kind: BadInputKind, message: impl Into<String>) -> BadReason {
    BadReason::new(kind, message)
}
