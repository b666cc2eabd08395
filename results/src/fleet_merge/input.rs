//! The merge's inputs: rank results and failure files read, placed by rank,
//! checked to be one fleet's replay of one trace.

use super::error::MergeError;
use super::result::{FailedRank, RankFailureKind};
use crate::fleet::RankFailureFile;
use crate::schema::SuiteResult;
use std::collections::BTreeMap;

/// One input of a merge: a file name and what it held.
#[derive(Debug, Clone)]
pub enum RankInput {
    /// A rank's result.
    Result(Box<SuiteResult>),
    /// A rank's failure file.
    Failure(RankFailureFile),
    /// The file could not be read or is neither (the reason).
    Unreadable(String),
}

impl RankInput {
    /// Reads `text` as a rank's result or failure file.
    pub fn parse(text: &str) -> RankInput {
        if let Ok(f) = serde_json::from_str::<RankFailureFile>(text) {
            return RankInput::Failure(f);
        }
        match serde_json::from_str::<SuiteResult>(text) {
            Ok(r) => RankInput::Result(Box::new(r)),
            Err(e) => RankInput::Unreadable(format!("not a tracemark result: {e}")),
        }
    }
}

/// A rank's result with the file it came from, checked.
pub(super) struct Rank<'a> {
    pub(super) file: &'a str,
    pub(super) result: &'a SuiteResult,
    pub(super) rank: u32,
}

/// The inputs sorted out: the ranks' results, the failures, the fleet's size.
pub(super) struct Placed<'a> {
    pub(super) ranks: Vec<Rank<'a>>,
    pub(super) failed: Vec<FailedRank>,
    pub(super) size: u32,
}

/// Sorts the inputs into results and failures, checking that every file
/// speaks of the same fleet, each rank once.
pub(super) fn place_inputs(inputs: &[(String, RankInput)]) -> Result<Placed<'_>, MergeError> {
    let mut failed: Vec<FailedRank> = Vec::new();
    let mut ranks: Vec<Rank> = Vec::new();
    let mut fleet_size: Option<(u32, String)> = None;
    let mut first_file_of_rank: BTreeMap<u32, String> = BTreeMap::new();
    let mut place = |file: &str, rank: u32, size: u32| -> Result<(), MergeError> {
        match &fleet_size {
            Some((n, other)) if *n != size => {
                return Err(MergeError::RanksDiffer {
                    file: file.to_string(),
                    rank,
                    ranks: size,
                    other: other.clone(),
                    other_ranks: *n,
                })
            }
            Some(_) => {}
            None => fleet_size = Some((size, file.to_string())),
        }
        match first_file_of_rank.insert(rank, file.to_string()) {
            Some(other) => Err(MergeError::DuplicateRank {
                file: file.to_string(),
                other,
                rank,
            }),
            None => Ok(()),
        }
    };
    for (file, input) in inputs {
        match input {
            RankInput::Result(r) => {
                let Some(f) = &r.fleet else {
                    return Err(MergeError::NotFleet { file: file.clone() });
                };
                place(file, f.rank, f.ranks)?;
                ranks.push(Rank {
                    file,
                    result: r,
                    rank: f.rank,
                });
            }
            RankInput::Failure(f) => {
                let f = &f.failed_rank;
                place(file, f.rank, f.ranks)?;
                failed.push(FailedRank {
                    rank: Some(f.rank),
                    file: Some(file.clone()),
                    kind: Some(RankFailureKind::Failed),
                    reason: format!("failed on {}: {}", f.hostname, f.error),
                });
            }
            RankInput::Unreadable(why) => failed.push(FailedRank {
                rank: None,
                file: Some(file.clone()),
                kind: Some(RankFailureKind::Unreadable),
                reason: why.clone(),
            }),
        }
    }
    Ok(Placed {
        ranks,
        failed,
        size: fleet_size.map_or(0, |(n, _)| n),
    })
}

/// Fails unless every rank replayed the same trace.
pub(super) fn check_one_trace(ranks: &[Rank]) -> Result<(), MergeError> {
    let mut identity: Option<(&str, &str, u64)> = None;
    for r in ranks {
        let Some(f) = &r.result.fleet else { continue };
        match identity {
            Some((other, sum, records))
                if sum != f.trace_checksum || records != f.trace_records =>
            {
                return Err(MergeError::TracesDiffer {
                    file: r.file.to_string(),
                    checksum: f.trace_checksum.clone(),
                    records: f.trace_records,
                    other: other.to_string(),
                    other_checksum: sum.to_string(),
                    other_records: records,
                })
            }
            Some(_) => {}
            None => identity = Some((r.file, &f.trace_checksum, f.trace_records)),
        }
    }
    Ok(())
}

/// The ranks of `0..size` no input speaks for, then the ranks whose result
/// is not valid.
pub(super) fn missing_and_invalid_ranks(
    ranks: &[Rank],
    failed: &[FailedRank],
    size: u32,
) -> Vec<FailedRank> {
    let present: Vec<u32> = ranks
        .iter()
        .map(|r| r.rank)
        .chain(failed.iter().filter_map(|f| f.rank))
        .collect();
    let missing = (0..size)
        .filter(|rank| !present.contains(rank))
        .map(|rank| FailedRank {
            rank: Some(rank),
            file: None,
            kind: Some(RankFailureKind::Missing),
            reason: "no result among the inputs (the rank died or never wrote one)".into(),
        });
    let invalid = ranks
        .iter()
        .filter(|r| !r.result.valid)
        .map(|r| FailedRank {
            rank: Some(r.rank),
            file: Some(r.file.to_string()),
            kind: Some(RankFailureKind::Invalid),
            reason: format!(
                "its result is not valid: {}",
                crate::schema::sentences(&r.result.invalid_reasons)
            ),
        });
    missing.chain(invalid).collect()
}
