use std::path::PathBuf;

/// Why a conversion stopped. Every message names the file and the line or record.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("{location}: {reason}: `{content}`")]
    BadInput {
        location: String,
        content: String,
        reason: String,
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
    #[error("{0}")]
    Usage(String),
    #[error("writing the trace: {0}")]
    Format(#[from] trace_format::FormatError),
}
