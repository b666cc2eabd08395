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
    TargetRefused {
        path: PathBuf,
        kind: TargetProblem,
        reason: String,
    },
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
    #[error(transparent)]
    Written(#[from] outfile::OutputError),
}

/// Why a target was refused, for a caller (or a test) to act on without
/// reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetProblem {
    /// Neither a regular file nor a block device.
    NotFileOrDevice,
    /// A block device the traces would write, without `--allow-write`.
    WriteNotAllowed,
    /// Mounted, a holder's, backing a loop device, a swap file: someone's data.
    InUse,
    /// The kernel refused exclusive access (still claimed, perhaps only for
    /// a moment by an io_uring being torn down).
    Busy,
    /// The kernel's read-only flag is set and the traces write.
    ReadOnly,
    /// Too small for what is asked of it (`--target-offset` at or beyond
    /// its end, a consistency test under 2 MiB).
    TooSmall,
    /// The scratch file's filesystem lacks the space to grow it.
    NoSpace,
    /// Filling the scratch file was interrupted (Ctrl-C).
    FillInterrupted,
    /// A regular file that holds data tracemark did not write, which the
    /// run would write or grow, without `--allow-write`.
    NotScratch,
}

/// A combination of options that makes no sense; the message names the
/// option ([`crate::plan::validate`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidOptions(pub String);

impl From<InvalidOptions> for ReplayError {
    fn from(e: InvalidOptions) -> Self {
        ReplayError::Options(e.0)
    }
}
