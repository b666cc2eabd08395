//! The consistency test's result file (`tracemark consistency --json`) and
//! its table and HTML report. The test itself runs in the replayer.

use crate::options::ReplayOptions;
use crate::schema::{HostInfo, TargetInfo, ToolInfo};
use serde::{Deserialize, Serialize};

/// One sequential fill of the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FillPass {
    pub pass: u32,
    pub seconds: f64,
    pub bytes: u64,
    pub mb_s: f64,
}

/// A trace's figures in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundTrace {
    pub name: String,
    pub score: f64,
    pub bandwidth_mb_s: f64,
    pub access_time_us: f64,
}

/// One round: what was done to the drive, then the suite's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// `degradation`, `steady` or `recovery`.
    pub phase: String,
    /// From 1 within the phase.
    pub round: u32,
    /// Random writes before the suite pass (0 in recovery).
    pub write_s: f64,
    pub written_bytes: u64,
    pub write_mb_s: f64,
    /// Idle before the suite pass (recovery only).
    pub idle_s: f64,
    /// Suite figures (geometric means over the traces; 0 when none moved data).
    pub score: f64,
    pub bandwidth_mb_s: f64,
    pub access_time_us: f64,
    pub traces: Vec<RoundTrace>,
}

/// The durations used (after scaling), seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Durations {
    pub degrade_start_s: f64,
    pub degrade_step_s: f64,
    pub steady_s: f64,
    pub idle_s: f64,
    /// The unit the defaults were scaled from: one precondition pass.
    pub unit_s: f64,
}

/// The consistency result file (`--json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsistencyResult {
    pub tool: ToolInfo,
    pub host: HostInfo,
    pub target: TargetInfo,
    pub rounds_degrade: u32,
    pub rounds_steady: u32,
    pub rounds_recovery: u32,
    pub durations: Durations,
    pub write_queue_depth: u32,
    pub suite_options: ReplayOptions,
    pub precondition: Vec<FillPass>,
    pub rounds: Vec<Round>,
    pub interrupted: bool,
    pub started_unix_s: u64,
}

/// The table people read: the precondition, then one line per round.
pub fn format_table(r: &ConsistencyResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "consistency test on {} ({}, {:.2} GB{})",
        r.target.path,
        r.target.kind.replace('_', " "),
        r.target.size_bytes as f64 / 1e9,
        r.target
            .model
            .as_deref()
            .map(|m| format!(", {m}"))
            .unwrap_or_default()
    );
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

/// The HTML report: score per round coloured by phase, bandwidth per round,
/// and the table.
pub fn html_report(r: &ConsistencyResult) -> String {
    use crate::html::{esc, RoundPoint};
    use std::fmt::Write;
    let points: Vec<RoundPoint> = r
        .rounds
        .iter()
        .map(|x| RoundPoint {
            phase: &x.phase,
            round: x.round,
            score: x.score,
            bandwidth_mb_s: x.bandwidth_mb_s,
        })
        .collect();
    let mut table = String::from("<table class=\"rounds\"><tr><th>phase</th><th>round</th><th>writes s</th><th>write MB/s</th><th>idle s</th><th>score</th><th>bandwidth MB/s</th><th>access time µs</th></tr>\n");
    for p in &r.precondition {
        let _ = writeln!(
            table,
            "<tr><td>precondition</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>-</td><td>-</td><td>-</td><td>-</td></tr>",
            p.pass, p.seconds, p.mb_s
        );
    }
    for x in &r.rounds {
        let _ = writeln!(
            table,
            "<tr class=\"round\" data-phase=\"{}\"><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td><td>{:.1}</td></tr>",
            esc(&x.phase),
            esc(&x.phase),
            x.round,
            x.write_s,
            x.write_mb_s,
            x.idle_s,
            x.score,
            x.bandwidth_mb_s,
            x.access_time_us
        );
    }
    table.push_str("</table>\n");
    let intro = format!(
        "Target {} ({}, {:.2} GB). Precondition: two sequential fills; degradation: {} rounds of random writes ({:.1} s, +{:.1} s per round) and a suite pass; steady state: {} rounds ({:.1} s of writes); recovery: {} rounds ({:.1} s idle).",
        r.target.path,
        r.target.model.as_deref().unwrap_or(&r.target.kind),
        r.target.size_bytes as f64 / 1e9,
        r.rounds_degrade,
        r.durations.degrade_start_s,
        r.durations.degrade_step_s,
        r.rounds_steady,
        r.durations.steady_s,
        r.rounds_recovery,
        r.durations.idle_s
    );
    crate::html::consistency_report("tracemark: consistency test", &intro, &points, &table)
}
