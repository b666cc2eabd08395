//! The fleet result as a table for the terminal.

use super::result::FleetResult;
use crate::text::escape_control;
use std::fmt::Write;

/// The fleet's figures, then one row per rank and per volume, then what
/// made it not valid.
pub fn fleet_table(f: &FleetResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "fleet of {} ranks, trace {} ({} records, checksum {})",
        f.ranks,
        escape_control(&f.trace),
        f.trace_records,
        f.trace_checksum
    );
    let access = f.access_latency_us.map_or_else(
        || "-".to_string(),
        |l| format!("p50 {:.1} p99 {:.1} max {:.1}", l.p50, l.p99, l.max),
    );
    let _ = writeln!(
        out,
        "{} I/Os ({} errors) in {:.3} s: {:.0} IOPS, {:.2} MB/s; read+write latency µs: {access}",
        f.ios, f.errors, f.interval_s, f.iops, f.bandwidth_mb_s
    );
    if let Some(s) = &f.slowest_rank {
        let behind = s.behind_schedule_us.map_or_else(String::new, |b| {
            format!(", last I/O {b:.0} µs behind the timeline")
        });
        let _ = writeln!(
            out,
            "slowest rank {}: finished {:.3} s after the fastest{behind}",
            s.rank, s.after_fastest_s
        );
    }
    if let Some(e) = f.worst_start_error_us {
        let _ = writeln!(out, "worst start error {e:.0} µs");
    }
    let _ = writeln!(
        out,
        "{:>4}  {:<16} {:<20} {:>9} {:>10} {:>10} {:>10} {:>12}  volumes",
        "rank", "host", "target", "I/Os", "IOPS", "MB/s", "access µs", "start err µs"
    );
    for r in &f.per_rank {
        let start = r
            .start_error_us
            .map_or_else(|| "-".to_string(), |e| format!("{e:.0}"));
        let _ = writeln!(
            out,
            "{:>4}  {:<16} {:<20} {:>9} {:>10.0} {:>10.2} {:>10.1} {:>12}  {}",
            r.rank,
            escape_control(&r.hostname),
            escape_control(&r.target),
            r.ios,
            r.iops,
            r.bandwidth_mb_s,
            r.access_time_us,
            start,
            escape_control(&r.volumes.join(","))
        );
    }
    if !f.per_volume.is_empty() {
        let _ = writeln!(
            out,
            "{:>4}  {:<12} {:>9} {:>12} {:>12} {:>7} {:>10}",
            "rank", "volume", "I/Os", "read MB", "write MB", "errors", "mean µs"
        );
        for v in &f.per_volume {
            let m = &v.metrics;
            let _ = writeln!(
                out,
                "{:>4}  {:<12} {:>9} {:>12.2} {:>12.2} {:>7} {:>10.1}",
                v.rank,
                escape_control(&m.volume),
                m.ios,
                m.read_bytes as f64 / 1e6,
                m.write_bytes as f64 / 1e6,
                m.errors,
                v.mean_latency_us
            );
        }
    }
    for reason in &f.invalid_reasons {
        let _ = writeln!(out, "NOT VALID: {}", escape_control(reason));
    }
    out
}
