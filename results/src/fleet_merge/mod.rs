//! `tracemark merge`: the result files of a fleet's ranks (one trace
//! replayed with `--shard` on each) added up into one fleet result.
//!
//! Counts and bytes are sums; latency percentiles come from the ranks'
//! histograms merged exactly (not an average of percentiles); IOPS and
//! bandwidth are over the common interval, from the earliest first issue
//! of any rank to the latest last completion. A rank that is missing, wrote
//! a failure instead of a result, or whose result is not valid makes the
//! fleet result not valid, and the result names it.

mod table;

pub use table::fleet_table;

use crate::fleet::{RankFailureFile, VolumeMetrics};
use crate::schema::{Percentiles, SuiteResult, ToolInfo};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

/// The fleet's result (`tracemark merge -o FLEET.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetResult {
    pub tool: ToolInfo,
    /// The trace (its name in the first rank's result), records and checksum.
    pub trace: String,
    pub trace_records: u64,
    pub trace_checksum: String,
    /// Ranks in the fleet.
    pub ranks: u32,
    /// False when any rank failed or is missing, or any I/O failed.
    pub valid: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_reasons: Vec<String>,
    /// The ranks that failed, by rank, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_ranks: Vec<FailedRank>,
    /// Earliest first issue to latest last completion over the ranks (wall
    /// clock, ns since the Unix epoch).
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub interval_s: f64,
    /// Sums over the ranks' scored passes.
    pub ios: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// Reads and writes completed per second of the common interval.
    pub iops: f64,
    /// Bytes read and written per second of the common interval, MB/s.
    pub bandwidth_mb_s: f64,
    /// Per operation, from the merged histograms.
    pub ops: BTreeMap<String, FleetOp>,
    /// Reads and writes together, from the merged histograms.
    pub access_latency_us: Option<Percentiles>,
    /// The rank that finished last.
    pub slowest_rank: Option<SlowestRank>,
    /// Over the ranks: the largest start error (first issue against the
    /// shared schedule), µs, by magnitude, signed (> 0 late).
    pub worst_start_error_us: Option<f64>,
    pub per_rank: Vec<RankRow>,
    pub per_volume: Vec<VolumeRow>,
}

/// One operation over the fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetOp {
    pub count: u64,
    pub bytes: u64,
    pub errors: u64,
    pub latency_us: Option<Percentiles>,
    /// The merged histogram (as in a rank's result), so fleets merge too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRank {
    /// `None` when the file that failed does not say its rank.
    pub rank: Option<u32>,
    /// The file it came from (absent for a rank no file speaks for).
    pub file: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowestRank {
    pub rank: u32,
    /// Its last completion after the first rank to finish, s.
    pub after_fastest_s: f64,
    /// Realtime: how far behind the trace's timeline it issued its last
    /// I/O, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_schedule_us: Option<f64>,
}

/// One rank's figures (its scored passes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    pub rank: u32,
    pub file: String,
    pub hostname: String,
    pub target: String,
    pub launcher: String,
    pub volumes: Vec<String>,
    pub ios: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// Over its own first issue to last completion.
    pub iops: f64,
    pub bandwidth_mb_s: f64,
    pub access_time_us: f64,
    pub first_issue_unix_ns: Option<u64>,
    pub last_complete_unix_ns: Option<u64>,
    pub start_error_us: Option<f64>,
    pub behind_schedule_us: Option<f64>,
    pub clock_synchronized: bool,
    pub valid: bool,
}

/// One volume over the fleet (each volume is on exactly one rank).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolumeRow {
    pub rank: u32,
    #[serde(flatten)]
    pub metrics: VolumeMetrics,
    pub mean_latency_us: f64,
}

/// A rank's result with the file it came from, checked.
struct Rank<'a> {
    file: &'a str,
    result: &'a SuiteResult,
    rank: u32,
}

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

/// The inputs sorted out: the ranks' results, the failures, the fleet's size.
struct Placed<'a> {
    ranks: Vec<Rank<'a>>,
    failed: Vec<FailedRank>,
    size: u32,
}

/// Sorts the inputs into results and failures, checking that every file
/// speaks of the same fleet, each rank once.
fn place_inputs(inputs: &[(String, RankInput)]) -> Result<Placed<'_>, MergeError> {
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
                    reason: format!("failed on {}: {}", f.hostname, f.error),
                });
            }
            RankInput::Unreadable(why) => failed.push(FailedRank {
                rank: None,
                file: Some(file.clone()),
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
fn check_one_trace(ranks: &[Rank]) -> Result<(), MergeError> {
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
fn missing_and_invalid_ranks(ranks: &[Rank], failed: &[FailedRank], size: u32) -> Vec<FailedRank> {
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
            reason: "no result among the inputs (the rank died or never wrote one)".into(),
        });
    let invalid = ranks
        .iter()
        .filter(|r| !r.result.valid)
        .map(|r| FailedRank {
            rank: Some(r.rank),
            file: Some(r.file.to_string()),
            reason: format!(
                "its result is not valid: {}",
                r.result.invalid_reasons.join("; ")
            ),
        });
    missing.chain(invalid).collect()
}

/// What the ranks' passes add up to, as they are read.
struct Totals {
    /// Per operation: the sums, the merged histogram, and the sum of the
    /// latencies (µs) for the mean.
    ops: BTreeMap<String, (FleetOp, Option<Histogram<u64>>, f64)>,
    /// Reads and writes together.
    access: Option<Histogram<u64>>,
    access_sum_us: f64,
    /// The first issue and the last completion, ns since the Unix epoch.
    start: u64,
    end: u64,
}

impl Totals {
    fn new() -> Totals {
        Totals {
            ops: BTreeMap::new(),
            access: None,
            access_sum_us: 0.0,
            start: u64::MAX,
            end: 0,
        }
    }

    /// Adds one pass of rank `r`: its clock, its operations; its volumes
    /// into `volumes`.
    fn add_pass(
        &mut self,
        r: &Rank,
        p: &crate::schema::PassMetrics,
        volumes: &mut BTreeMap<String, VolumeMetrics>,
    ) -> Result<(), MergeError> {
        if let Some(c) = p.clock {
            if let Some(t) = c.first_issue_unix_ns {
                self.start = self.start.min(t);
            }
            if let Some(t) = c.last_complete_unix_ns {
                self.end = self.end.max(t);
            }
        }
        for v in &p.volumes {
            volumes
                .entry(v.volume.clone())
                .or_insert_with(|| VolumeMetrics {
                    volume: v.volume.clone(),
                    ..VolumeMetrics::default()
                })
                .add(v);
        }
        for (name, m) in &p.ops {
            self.add_op(r.file, name, m)?;
        }
        Ok(())
    }

    /// Adds one operation's figures of a pass read from `file`.
    fn add_op(
        &mut self,
        file: &str,
        name: &str,
        m: &crate::schema::OpMetrics,
    ) -> Result<(), MergeError> {
        let entry = self.ops.entry(name.to_string()).or_insert_with(|| {
            (
                FleetOp {
                    count: 0,
                    bytes: 0,
                    errors: 0,
                    latency_us: None,
                    latency_hdr: None,
                },
                None,
                0.0,
            )
        });
        entry.0.count += m.count;
        entry.0.bytes += m.bytes;
        entry.0.errors += m.errors;
        let Some(text) = &m.latency_hdr else {
            if m.count > m.errors {
                return Err(MergeError::NoHistogram {
                    file: file.to_string(),
                    op: name.to_string(),
                    count: m.count,
                });
            }
            return Ok(());
        };
        let h = crate::hdr::decode(text).map_err(|source| MergeError::Histogram {
            file: file.to_string(),
            op: name.to_string(),
            source,
        })?;
        let weight = m.latency_us.map_or(0.0, |l| l.mean * h.len() as f64);
        entry.2 += weight;
        add_histogram(&mut entry.1, &h, file, name)?;
        if name == "read" || name == "write" {
            self.access_sum_us += weight;
            add_histogram(&mut self.access, &h, file, name)?;
        }
        Ok(())
    }

    /// Each operation's sums with its latency summary and histogram.
    fn op_results(&mut self) -> BTreeMap<String, FleetOp> {
        std::mem::take(&mut self.ops)
            .into_iter()
            .map(|(name, (mut op, h, sum_us))| {
                if let Some(h) = h {
                    op.latency_us = summary(&h, sum_us);
                    op.latency_hdr = crate::hdr::encode(&h);
                }
                (name, op)
            })
            .collect()
    }
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

/// Adds `h` into `into` (a copy of `h` when empty).
fn add_histogram(
    into: &mut Option<Histogram<u64>>,
    h: &Histogram<u64>,
    file: &str,
    op: &str,
) -> Result<(), MergeError> {
    match into {
        Some(total) => total.add(h).map_err(|e| MergeError::HistogramAdd {
            file: file.to_string(),
            op: op.to_string(),
            reason: format!("{e:?}"),
        }),
        None => {
            *into = Some(h.clone());
            Ok(())
        }
    }
}

/// Percentiles of a merged histogram of ns; the mean from the ranks' exact
/// sums (`sum_us`), not from the histogram's buckets.
fn summary(h: &Histogram<u64>, sum_us: f64) -> Option<Percentiles> {
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1e3;
    Some(Percentiles {
        mean: sum_us / h.len() as f64,
        p50: us(h.value_at_quantile(0.50)),
        p90: us(h.value_at_quantile(0.90)),
        p99: us(h.value_at_quantile(0.99)),
        p99_9: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    })
}

/// A rank's row from its result (its scored passes added up).
fn rank_row(r: &Rank) -> RankRow {
    let res = r.result;
    let passes: Vec<_> = res.traces.iter().flat_map(|t| t.passes.iter()).collect();
    let add = |f: fn(&crate::schema::PassMetrics) -> u64| passes.iter().map(|p| f(p)).sum::<u64>();
    let clocks: Vec<_> = passes.iter().filter_map(|p| p.clock).collect();
    let first = clocks.iter().filter_map(|c| c.first_issue_unix_ns).min();
    let last = clocks.iter().filter_map(|c| c.last_complete_unix_ns).max();
    let span_s = match (first, last) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => 0.0,
    };
    let data_ios: u64 = passes
        .iter()
        .flat_map(|p| ["read", "write"].into_iter().filter_map(|o| p.ops.get(o)))
        .map(|o| o.count)
        .sum();
    let (read_bytes, write_bytes) = (add(|p| p.read_bytes), add(|p| p.write_bytes));
    let fleet = res.fleet.as_ref();
    let accesses: Vec<(f64, u64)> = passes
        .iter()
        .map(|p| {
            let n: u64 = ["read", "write"]
                .iter()
                .filter_map(|o| p.ops.get(*o))
                .map(|o| o.count - o.errors)
                .sum();
            (p.access_time_us, n)
        })
        .collect();
    let n: u64 = accesses.iter().map(|a| a.1).sum();
    RankRow {
        rank: r.rank,
        file: r.file.to_string(),
        hostname: res.host.hostname.clone(),
        target: std::iter::once(res.target.path.clone())
            .chain(res.target.others.iter().map(|t| t.path.clone()))
            .collect::<Vec<_>>()
            .join(","),
        launcher: fleet.map_or_else(String::new, |f| f.launcher.clone()),
        volumes: Vec::new(),
        ios: add(|p| p.ios),
        read_bytes,
        write_bytes,
        errors: add(|p| p.errors),
        iops: if span_s > 0.0 {
            data_ios as f64 / span_s
        } else {
            0.0
        },
        bandwidth_mb_s: if span_s > 0.0 {
            (read_bytes + write_bytes) as f64 / span_s / 1e6
        } else {
            0.0
        },
        access_time_us: if n == 0 {
            0.0
        } else {
            accesses.iter().map(|(a, k)| a * *k as f64).sum::<f64>() / n as f64
        },
        first_issue_unix_ns: first,
        last_complete_unix_ns: last,
        start_error_us: fleet.and_then(|f| f.start_error_ns).map(|e| e as f64 / 1e3),
        behind_schedule_us: clocks
            .iter()
            .filter_map(|c| c.behind_schedule_ns)
            .max()
            .map(|b| b as f64 / 1e3),
        clock_synchronized: fleet.is_some_and(|f| f.clock.synchronized),
        valid: res.valid,
    }
}

/// The rank whose last completion came last, and by how much after the
/// first rank to finish.
fn slowest(rows: &[RankRow]) -> Option<SlowestRank> {
    let ends: Vec<(u32, u64)> = rows
        .iter()
        .filter_map(|r| Some((r.rank, r.last_complete_unix_ns?)))
        .collect();
    let fastest = ends.iter().map(|e| e.1).min()?;
    let (rank, end) = ends
        .iter()
        .copied()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))?;
    Some(SlowestRank {
        rank,
        after_fastest_s: (end - fastest) as f64 / 1e9,
        behind_schedule_us: rows
            .iter()
            .find(|r| r.rank == rank)
            .and_then(|r| r.behind_schedule_us),
    })
}

#[cfg(test)]
mod tests;
