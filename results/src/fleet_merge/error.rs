//! What cannot be merged at all.

/// What cannot be merged at all (as opposed to a failed rank, which is
/// merged and marks the result not valid). More cases may come.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    #[error("no result files to merge")]
    Nothing,
    #[error("{file}: not a fleet rank's result (replayed without --shard)")]
    NotFleet { file: String },
    #[error("{file}: rank {rank} of {ranks}, but {other} says the fleet has {other_ranks} ranks")]
    RanksDiffer {
        file: String,
        rank: u32,
        ranks: u32,
        other: String,
        other_ranks: u32,
    },
    #[error("{file}: replayed trace {checksum} ({records} records), but {other} replayed {other_checksum} ({other_records}); ranks of different traces do not add up")]
    TracesDiffer {
        file: String,
        checksum: String,
        records: u64,
        other: String,
        other_checksum: String,
        other_records: u64,
    },
    #[error("{file} and {other} are both rank {rank}")]
    DuplicateRank {
        file: String,
        other: String,
        rank: u32,
    },
    #[error("{file}: the {op} latency histogram: {source}")]
    Histogram {
        file: String,
        op: String,
        #[source]
        source: crate::hdr::HdrError,
    },
    #[error("{file}: the {op} latency histogram cannot be added: {reason}")]
    HistogramAdd {
        file: String,
        op: String,
        reason: String,
    },
    #[error("{file}: {op}: {count} I/Os but no latency histogram (a result of a version before `merge`); replay with this version")]
    NoHistogram {
        file: String,
        op: String,
        count: u64,
    },
}
