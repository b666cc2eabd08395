//! Per-rank rows of the fleet result and the rank that finished last.

use super::input::Rank;
use super::result::{RankRow, SlowestRank};

/// A rank's row from its result (its scored passes added up).
pub(super) fn rank_row(r: &Rank) -> RankRow {
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
pub(super) fn slowest(rows: &[RankRow]) -> Option<SlowestRank> {
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
