//! The consistency test's table.

use crate::consistency::ConsistencyResult;
use std::fmt::Write;

/// The table people read: the precondition, then one line per round.
pub fn format_table(r: &ConsistencyResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "consistency test on {} ({}, {:.2} GB{})",
        super::escape_control(&r.target.path),
        r.target.kind.label(),
        r.target.size_bytes as f64 / 1e9,
        r.target
            .model
            .as_deref()
            .map(|m| format!(", {m}"))
            .unwrap_or_default()
    );
    for line in crate::identity::describe_lines(&r.target, &r.host, &r.tool.version, None) {
        let _ = writeln!(out, "{}", super::escape_control(&line));
    }
    let d = &r.durations;
    let _ = writeln!(
        out,
        "durations: degradation {:.1} s + {:.1} s per round, steady {:.1} s, idle {:.1} s (unit: one fill, {:.2} s)",
        d.degrade_start_s, d.degrade_step_s, d.steady_s, d.idle_s, d.unit_s
    );
    let _ = writeln!(
        out,
        "{:<13} {:>5} {:>9} {:>11} {:>7} {:>10} {:>15} {:>15}",
        "phase",
        "round",
        "writes s",
        "write MB/s",
        "idle s",
        "score",
        "bandwidth MB/s",
        "access time µs"
    );
    for p in &r.precondition {
        let _ = writeln!(
            out,
            "{:<13} {:>5} {:>9.1} {:>11.1} {:>7} {:>10} {:>15} {:>15}",
            "precondition", p.pass, p.seconds, p.mb_s, "-", "-", "-", "-"
        );
    }
    for x in &r.rounds {
        let _ = writeln!(
            out,
            "{:<13} {:>5} {:>9.1} {:>11.1} {:>7.1} {:>10.1} {:>15.2} {:>15.1}",
            x.phase,
            x.round,
            x.write_s,
            x.write_mb_s,
            x.idle_s,
            x.score,
            x.bandwidth_mb_s,
            x.access_time_us
        );
    }
    if r.interrupted {
        let _ = writeln!(out, "interrupted: partial result");
    }
    out
}
