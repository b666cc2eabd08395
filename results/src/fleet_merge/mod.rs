//! `tracemark merge`: the result files of a fleet's ranks (one trace
//! replayed with `--shard` on each) added up into one fleet result.
//!
//! Counts and bytes are sums; latency percentiles come from the ranks'
//! histograms merged exactly (not an average of percentiles); IOPS and
//! bandwidth are over the common interval, from the earliest first issue
//! of any rank to the latest last completion. A rank that is missing, wrote
//! a failure instead of a result, or whose result is not valid makes the
//! fleet result not valid, and the result names it.

mod error;
mod input;
mod result;
mod rows;
mod table;
mod totals;

pub use error::MergeError;
pub use input::RankInput;
pub use result::{
    FailedRank, FleetOp, FleetResult, RankFailureKind, RankRow, SlowestRank, VolumeRow,
};
pub use table::fleet_table;

use crate::fleet::VolumeMetrics;
use crate::schema::ToolInfo;
use input::{check_one_trace, missing_and_invalid_ranks, place_inputs, Placed, Rank};
use rows::{rank_row, slowest};
use std::collections::BTreeMap;
use totals::{summary, Totals};

/// Merges the inputs (file name, content). Fails only where the files
/// cannot be one fleet's (different traces or fleet sizes, a rank twice,
/// an unreadable histogram); failed and missing ranks are named in the
/// result, which is then not valid.
pub fn merge(inputs: &[(String, RankInput)]) -> Result<FleetResult, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::Nothing);
    }
    let Placed {
        mut ranks,
        mut failed,
        size,
    } = place_inputs(inputs)?;
    check_one_trace(&ranks)?;
    failed.extend(missing_and_invalid_ranks(&ranks, &failed, size));
    failed.sort_by_key(|f| (f.rank.unwrap_or(u32::MAX), f.file.clone()));
    ranks.sort_by_key(|r| r.rank);
    add_up(&ranks, failed, size)
}

/// The sums, merged histograms and rows of checked ranks.
fn add_up(ranks: &[Rank], failed: Vec<FailedRank>, size: u32) -> Result<FleetResult, MergeError> {
    let mut totals = Totals::new();
    let mut per_rank = Vec::new();
    let mut per_volume = Vec::new();
    for r in ranks {
        let mut row = rank_row(r);
        let mut volumes: BTreeMap<String, VolumeMetrics> = BTreeMap::new();
        for p in r.result.traces.iter().flat_map(|t| t.passes.iter()) {
            totals.add_pass(r, p, &mut volumes)?;
        }
        for (_, v) in volumes {
            per_volume.push(VolumeRow {
                rank: r.rank,
                mean_latency_us: v.mean_latency_us(),
                metrics: v,
            });
        }
        row.volumes = r
            .result
            .fleet
            .as_ref()
            .map(|f| f.volumes.clone())
            .unwrap_or_default();
        per_rank.push(row);
    }
    let ops = totals.op_results();
    let sum = |f: fn(&RankRow) -> u64| per_rank.iter().map(f).sum::<u64>();
    let (ios, read_bytes, write_bytes, errors) = (
        sum(|r| r.ios),
        sum(|r| r.read_bytes),
        sum(|r| r.write_bytes),
        sum(|r| r.errors),
    );
    let (start, end) = (totals.start.min(totals.end), totals.end);
    let interval_s = (end - start) as f64 / 1e9;
    let data_ios: u64 = ["read", "write"]
        .iter()
        .filter_map(|o| ops.get(*o))
        .map(|o| o.count)
        .sum();
    let per_s = |x: f64| {
        if interval_s > 0.0 {
            x / interval_s
        } else {
            0.0
        }
    };
    let first = ranks.first().map(|r| r.result);
    let fleet = first.and_then(|r| r.fleet.as_ref());
    let invalid_reasons = invalid_reasons(&failed, errors);
    let slowest_rank = slowest(&per_rank);
    let worst_start_error_us = per_rank
        .iter()
        .filter_map(|r| r.start_error_us)
        .max_by(|a, b| a.abs().total_cmp(&b.abs()));
    Ok(FleetResult {
        tool: ToolInfo {
            name: "tracemark".into(),
            version: first.map_or_else(String::new, |r| r.tool.version.clone()),
        },
        trace: first
            .and_then(|r| r.traces.first())
            .map_or_else(String::new, |t| t.name.clone()),
        trace_records: fleet.map_or(0, |f| f.trace_records),
        trace_checksum: fleet.map_or_else(String::new, |f| f.trace_checksum.clone()),
        ranks: size,
        valid: invalid_reasons.is_empty(),
        invalid_reasons,
        failed_ranks: failed,
        start_unix_ns: start,
        end_unix_ns: end,
        interval_s,
        ios,
        read_bytes,
        write_bytes,
        errors,
        iops: per_s(data_ios as f64),
        bandwidth_mb_s: per_s((read_bytes + write_bytes) as f64) / 1e6,
        ops,
        access_latency_us: totals
            .access
            .as_ref()
            .and_then(|h| summary(h, totals.access_sum_us)),
        slowest_rank,
        worst_start_error_us,
        per_rank,
        per_volume,
    })
}

/// Why the merged result is not valid: each failed rank, and the targets'
/// I/O errors where no rank failed.
fn invalid_reasons(failed: &[FailedRank], errors: u64) -> Vec<String> {
    let mut reasons: Vec<String> = failed
        .iter()
        .map(|f| match (f.rank, &f.file) {
            (Some(rank), Some(file)) => format!("rank {rank} ({file}): {}", f.reason),
            (Some(rank), None) => format!("rank {rank}: {}", f.reason),
            (None, Some(file)) => format!("{file}: {}", f.reason),
            (None, None) => f.reason.clone(),
        })
        .collect();
    if errors > 0 && failed.is_empty() {
        reasons.push(format!("{errors} I/Os failed on the ranks' targets"));
    }
    reasons
}

#[cfg(test)]
mod tests;
