use std::path::PathBuf;

/// Everything that stops a replay. Messages name the trace, record or target
/// so a user knows what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{trace}: {source}")]
    Trace {
        trace: String,
        #[source]
        source: trace_format::FormatError,
    },
    #[error("{trace}: record {index}: {reason}")]
    BadRecord {
        trace: String,
        index: u64,
        reason: String,
    },
    #[error("{path}: {what}: {source}")]
    TargetIo {
        path: PathBuf,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    TargetRefused { path: PathBuf, reason: String },
    #[error("{path}: the filesystem does not support O_DIRECT; rerun with --allow-buffered to replay through the page cache (results will then measure the cache, not the drive)")]
    NoDirectIo { path: PathBuf },
    #[error("{trace}: {reason}")]
    DoesNotFit { trace: String, reason: String },
    #[error("io_uring: {what}: {source}")]
    Ring {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: no I/O completed for {secs} s with {in_flight} in flight; the device stopped responding")]
    DeviceTimeout {
        path: PathBuf,
        secs: u64,
        in_flight: u32,
    },
    #[error("invalid option: {0}")]
    Options(String),
    #[error("{path}: {source}")]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<results::options::InvalidOptions> for ReplayError {
    fn from(e: results::options::InvalidOptions) -> Self {
        ReplayError::Options(e.0)
    }
}
