//! The consistency test's table.

use crate::consistency::ConsistencyResult;
use std::fmt::Write;

/// The table people read: the precondition, then one line per round.
pub fn format_table(r: &ConsistencyResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "consistency test on {}",
        super::target::target_description(&r.target, 2)
    );
    for line in crate::identity::describe_lines(&r.target, &r.host, &r.tool.version, None) {
        let _ = writeln!(out, "{}", super::escape::escape_control(&line));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consistency::Durations;
    use crate::options::ReplayOptions;
    use crate::schema::{HostInfo, TargetInfo, TargetKind, ToolInfo};

    fn result_on(model: &str) -> ConsistencyResult {
        ConsistencyResult {
            schema_version: crate::schema::SCHEMA_VERSION,
            tool: ToolInfo {
                name: "tracemark".into(),
                version: "0".into(),
            },
            host: HostInfo {
                hostname: "h".into(),
                kernel: "k".into(),
                cpus: 1,
                cpu_model: None,
                memory_bytes: None,
            },
            target: TargetInfo {
                path: "/dev/sdz".into(),
                kind: TargetKind::BlockDevice,
                size_bytes: 2_000_000_000,
                model: Some(model.into()),
                logical_block_size: 512,
                direct_io: true,
                io_path: None,
                others: Vec::new(),
                drive: None,
                filesystem: None,
            },
            rounds_degrade: 0,
            rounds_steady: 0,
            rounds_recovery: 0,
            durations: Durations {
                degrade_start_s: 1.0,
                degrade_step_s: 1.0,
                steady_s: 1.0,
                idle_s: 1.0,
                unit_s: 1.0,
            },
            write_queue_depth: 1,
            suite_options: ReplayOptions::default(),
            settings_changed: Vec::new(),
            precondition: Vec::new(),
            rounds: Vec::new(),
            interrupted: false,
            started_unix_s: 0,
        }
    }

    /// The device model comes from the result file (input): a terminal
    /// escape in it is shown, not obeyed, as in the suite's table.
    #[test]
    fn the_device_model_is_escaped_in_the_header() {
        let table = format_table(&result_on("SSD\u{1b}]0;pwned\u{7}"));
        let header = table.lines().next().unwrap();
        assert_eq!(
            header,
            "consistency test on /dev/sdz (block device, 2.00 GB, SSD\\u{1b}]0;pwned\\u{7})"
        );
        assert!(!table.contains('\u{1b}'), "{table:?}");
    }
}
