//! The table people read.

use super::escape::escape_control as esc;
use crate::options::{CpuIdle, IoWorkerCpu, Priority, TimingMode};
use crate::schema::{IoPath, SuiteResult, TraceResult};
use std::fmt::Write;

fn spread(v: f64, min: f64, max: f64, n: usize, prec: usize) -> String {
    if n > 1 {
        format!("{v:.prec$} ±{:.prec$}", (max - min) / 2.0)
    } else {
        format!("{v:.prec$}")
    }
}

/// One row per trace (score, bandwidth, access time, playback time, read and
/// write MB, predicted task time), then the suite line; ± is half the range
/// over passes. Rows,
/// and the suite line, of figures that cannot be trusted end in `INVALID`
/// ([`crate::validity`]), with the reasons after the notes.
pub fn format_table(r: &SuiteResult) -> String {
    let mut out = String::new();
    header(&mut out, r);
    run_notes(&mut out, r);
    let verdict = crate::validity::judge(r);
    table(&mut out, r, &verdict);
    for t in &r.traces {
        notes(&mut out, r, t);
    }
    if r.interrupted {
        let _ = writeln!(out, "interrupted: partial result");
    }
    if !verdict.valid {
        let _ = writeln!(
            out,
            "INVALID: these figures are no measure of the drive: {}",
            esc(&crate::schema::sentences(&verdict.reasons))
        );
    }
    out
}

/// The target, mode and passes, then the drive, host and version lines.
fn header(out: &mut String, r: &SuiteResult) {
    let _ = writeln!(
        out,
        "target {}, mode {}, {} pass{} + {}",
        super::target::target_description(&r.target, 1),
        r.mode(),
        r.options.passes,
        if r.options.passes == 1 { "" } else { "es" },
        if r.options.warmup {
            "1 warm-up"
        } else {
            "no warm-up"
        },
    );
    for line in
        crate::identity::describe_lines(&r.target, &r.host, &r.tool.version, r.trace_set.as_deref())
    {
        let _ = writeln!(out, "{}", esc(&line));
    }
}

/// What the run did that bears on the figures: io_uring workers, CPU idle
/// states, the preconditioning.
fn run_notes(out: &mut String, r: &SuiteResult) {
    for t in std::iter::once(&r.target).chain(&r.target.others) {
        if t.io_path == Some(IoPath::IoWq) {
            let _ = writeln!(
                out,
                "note: {} takes no non-blocking I/O; the kernel runs every request on io_uring worker threads (one per CPU at most), as it would for any io_uring program",
                esc(&t.path)
            );
        }
    }
    let on_io_wq = std::iter::once(&r.target)
        .chain(&r.target.others)
        .any(|t| t.io_path == Some(IoPath::IoWq));
    if on_io_wq
        && r.mode() == TimingMode::Realtime
        && r.options.io_worker_cpu == IoWorkerCpu::Issuer
        && r.options.priority == Priority::Normal
    {
        let _ = writeln!(
            out,
            "note: the issuing thread and its io_uring workers are held on one CPU where the kernel allows (--io-worker-cpu any: left to the scheduler)"
        );
    }
    if r.options.cpu_idle == CpuIdle::Os {
        let _ = writeln!(
            out,
            "note: the CPUs kept their idle states (--cpu-idle os, or poll refused): access times include waking them"
        );
    }
    if let Some(p) = &r.precondition {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let _ = writeln!(
            out,
            "precondition ({}): {:.0} MiB to hold data, {:.0} MiB already written by tracemark, {:.0} MiB written in {:.1} s",
            p.policy.name(),
            mib(p.needed_bytes),
            mib(p.already_bytes),
            mib(p.written_bytes),
            p.seconds
        );
        if let Some(why) = &p.not_done {
            let _ = writeln!(out, "note: precondition not done: {}", esc(why));
        }
        if let Some(f) = &p.found {
            let _ = writeln!(
                out,
                "target state: space {} ({} of {} sampled blocks held data before the run); read regions {} before, {} when scoring started ({} of {})",
                f.space_before.state(),
                f.space_before.with_data,
                f.space_before.blocks,
                f.read_regions_before.state(),
                f.read_regions_at_start.state(),
                f.read_regions_at_start.with_data,
                f.read_regions_at_start.blocks
            );
        }
    }
}

/// The column heads, a row per trace, and the suite line.
fn table(out: &mut String, r: &SuiteResult, verdict: &crate::validity::Verdict) {
    // The predicted task time, where any trace has one (realtime mode).
    let task_column = r.traces.iter().any(|t| t.task.is_some());
    let _ = write!(
        out,
        "{:<24} {:>16} {:>18} {:>16} {:>11} {:>10} {:>10}",
        "trace", "score", "bandwidth MB/s", "access time µs", "playback s", "read MB", "write MB"
    );
    let _ = writeln!(
        out,
        "{}",
        if task_column {
            format!(" {:>16}", "task s")
        } else {
            String::new()
        }
    );
    for (t, why) in r.traces.iter().zip(&verdict.traces) {
        row(out, t, task_column, why.is_some());
    }
    match &r.suite {
        Some(s) => {
            let _ = writeln!(
                out,
                "{:<24} {:>16.0} {:>18.2} {:>16.1}{}",
                "suite (geometric mean)",
                s.score,
                s.bandwidth_mb_s,
                s.access_time_us,
                if verdict.valid { "" } else { "  INVALID" }
            );
        }
        None => {
            let _ = writeln!(out, "suite: no trace moved data; no score");
        }
    }
    let times: Vec<f64> = r
        .traces
        .iter()
        .filter_map(|t| t.task.as_ref().map(|k| k.predicted_s))
        .collect();
    if !times.is_empty() {
        let _ = writeln!(
            out,
            "suite task time: {:.3} s, the sum of the predicted task times of {} trace{}",
            times.iter().sum::<f64>(),
            times.len(),
            if times.len() == 1 { "" } else { "s" }
        );
    }
    no_task_times(out, r);
    let calibrated = r
        .traces
        .iter()
        .filter(|t| t.task.as_ref().is_some_and(is_calibrated))
        .count();
    if calibrated > 0 {
        let _ = writeln!(
            out,
            "task s: * calibrated ({calibrated} of {}): the task's untraced time on the capture drive plus this drive's difference from a replay there{}",
            times.len(),
            if calibrated < times.len() {
                "; unmarked: uncalibrated, from the capture's own timing"
            } else {
                ""
            }
        );
    }
}

/// Why traces have no predicted task time: one line per reason, naming the
/// traces unless it holds for all of them.
fn no_task_times(out: &mut String, r: &SuiteResult) {
    let mut reasons: Vec<(crate::schema::NoTaskTime, Vec<&str>)> = Vec::new();
    for t in r.traces.iter().filter(|t| t.task.is_none()) {
        let Some(why) = t.no_task_time else { continue };
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, names)) => names.push(&t.name),
            None => reasons.push((why, vec![&t.name])),
        }
    }
    for (why, names) in reasons {
        if names.len() == r.traces.len() {
            let _ = writeln!(out, "no predicted task time: {why}");
        } else {
            let names: Vec<String> = names.iter().map(|n| esc(n).into_owned()).collect();
            let _ = writeln!(
                out,
                "no predicted task time for {}: {why}",
                names.join(", ")
            );
        }
    }
}

/// Whether a prediction is set against a replay on the capture drive
/// (`tracemark calibrate`), which is what makes it hold across drives.
fn is_calibrated(task: &crate::schema::TaskTime) -> bool {
    task.uncalibrated.is_some()
}

/// One trace's row; `invalid` marks a trace whose figures cannot be trusted.
fn row(out: &mut String, t: &TraceResult, task_column: bool, invalid: bool) {
    let n = t.passes.len();
    let name: String = esc(&t.name).chars().take(24).collect();
    let _ = write!(
        out,
        "{:<24} {:>16} {:>18} {:>16} {:>11} {:>10.1} {:>10.1}",
        name,
        spread(t.score, t.score_spread.min, t.score_spread.max, n, 0),
        spread(
            t.bandwidth_mb_s,
            t.bandwidth_spread.min,
            t.bandwidth_spread.max,
            n,
            2
        ),
        spread(
            t.access_time_us,
            t.access_time_spread.min,
            t.access_time_spread.max,
            n,
            1
        ),
        format!("{:.3}", t.playback_s),
        t.read_bytes as f64 / 1e6,
        t.write_bytes as f64 / 1e6,
    );
    // The same width either way: a calibrated figure ends in `*`.
    let task = match (&t.task, task_column) {
        (Some(task), true) => {
            let figure = match &task.predicted_spread {
                Some(sp) => spread(task.predicted_s, sp.min, sp.max, n, 3),
                None => format!("{:.3}", task.predicted_s),
            };
            if is_calibrated(task) {
                format!(" {figure:>15}*")
            } else {
                format!(" {figure:>16}")
            }
        }
        (None, true) => format!(" {:>16}", "-"),
        (_, false) => String::new(),
    };
    let _ = writeln!(out, "{task}{}", if invalid { "  INVALID" } else { "" });
}

fn notes(out: &mut String, r: &SuiteResult, t: &TraceResult) {
    let mode = r.mode();
    let name = esc(&t.name);
    let errors: Vec<String> = t
        .errors
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(op, n)| format!("{n} {op}"))
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "{name}: device errors: {}", errors.join(", "));
    }
    let s = &t.skipped;
    if s.total() > 0 {
        let _ = writeln!(
            out,
            "{name}: skipped per pass: {} by --read-only, {} by --skip-ops, {} discards, {} write-zeroes, {} empty",
            s.read_only, s.by_option, s.discards, s.write_zeroes, s.empty
        );
    }
    let cautions = [
        crate::validity::cpu_wait_caution(t),
        crate::validity::unwritten_reads_caution(t),
        crate::validity::calibration_caution(r, t),
    ];
    for why in cautions.into_iter().flatten() {
        let _ = writeln!(out, "{name}: caution: {why}");
    }
    if mode == TimingMode::Realtime {
        let f = &t.fidelity;
        let _ = writeln!(
            out,
            "{name}: issue lateness p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs; duration {:.3} s vs {:.3} s original",
            f.lateness_us.p50, f.lateness_us.p99, f.lateness_us.max, f.achieved_s, f.original_s
        );
    }
    if let Some(task) = &t.task {
        let untraced = task
            .untraced_s
            .map(|u| format!(", untraced {u:.3} s"))
            .unwrap_or_default();
        // A calibrated trace's prediction is relative to the capture drive's
        // replay; the uncalibrated figure stays in sight.
        let calibrated = task
            .uncalibrated
            .as_ref()
            .and_then(|u| u.get(&task.model))
            .map(|u| format!("; calibrated on the capture drive, {u:.3} s uncalibrated"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{name}: predicted task time {:.3} s on this target (as captured {:.3} s{untraced}; {}; dependencies: {}{calibrated})",
            task.predicted_s, task.captured_s, task.span, task.model
        );
        // The floor held it: what the waits alone gave stays in sight.
        let held = task.cpu_floor_s.zip(
            task.unfloored
                .as_ref()
                .and_then(|u| u.get(&task.model).copied()),
        );
        if let Some((floor, below)) = held.filter(|(floor, below)| below < floor) {
            let _ = writeln!(
                out,
                "{name}: held at its busiest thread's CPU time at capture, {floor:.3} s (the waits alone give {below:.3} s)"
            );
        }
        if let Some(b) = &task.breakdown {
            out.push_str(&super::breakdown::trace_line(&name, b));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::TaskTime;

    #[test]
    fn the_suite_line_sums_the_traces_predicted_task_times() {
        let text = include_str!("../../tests/fixtures/suite-a.json");
        let mut r: SuiteResult = serde_json::from_str(text).unwrap();
        assert!(!format_table(&r).contains("suite task time"));
        for (i, t) in r.traces.iter_mut().enumerate() {
            t.task = Some(TaskTime {
                predicted_s: 1.5 * (i + 1) as f64,
                model: "blocking".into(),
                models: Default::default(),
                captured_s: 1.0,
                untraced_s: None,
                span: "task marks".into(),
                uncalibrated: None,
                cpu_floor_s: None,
                unfloored: None,
                calibrated_at: None,
                predicted_spread: None,
                breakdown: None,
            });
        }
        let n = r.traces.len() as f64;
        let want = format!("suite task time: {:.3} s", 1.5 * n * (n + 1.0) / 2.0);
        assert!(format_table(&r).contains(&want), "{}", format_table(&r));
        assert!(!format_table(&r).contains('*'), "{}", format_table(&r));
    }

    #[test]
    fn the_cpu_floor_is_named_only_where_it_held_the_primary_model_up() {
        let text = include_str!("../../tests/fixtures/suite-a.json");
        let mut r: SuiteResult = serde_json::from_str(text).unwrap();
        let task = |blocking_before: f64, predicted_s: f64| TaskTime {
            predicted_s,
            model: "blocking".into(),
            models: [("blocking".to_string(), predicted_s)].into(),
            captured_s: 1.0,
            untraced_s: Some(1.0),
            span: "task marks".into(),
            uncalibrated: None,
            cpu_floor_s: Some(0.5),
            unfloored: Some(
                [
                    ("blocking".to_string(), blocking_before),
                    ("all".to_string(), 0.25),
                ]
                .into(),
            ),
            calibrated_at: None,
            predicted_spread: None,
            breakdown: None,
        };
        r.traces[0].task = Some(task(0.25, 0.5));
        let held = format_table(&r);
        assert!(
            held.contains("held at its busiest thread's CPU time at capture, 0.500 s (the waits alone give 0.250 s)"),
            "{held}"
        );
        // Only another model was held up: nothing to say of this one.
        r.traces[0].task = Some(task(0.7, 0.7));
        let not_held = format_table(&r);
        assert!(!not_held.contains("busiest thread"), "{not_held}");
    }

    #[test]
    fn a_trace_without_a_task_time_says_why() {
        use crate::schema::NoTaskTime;
        let text = include_str!("../../tests/fixtures/suite-a.json");
        let mut r: SuiteResult = serde_json::from_str(text).unwrap();
        assert!(r.traces.len() >= 2, "the fixture needs two traces");
        for t in &mut r.traces {
            t.task = None;
            t.no_task_time = Some(NoTaskTime::NotRealtime);
        }
        let all = format_table(&r);
        assert!(
            all.contains("no predicted task time: the replay was not realtime"),
            "{all}"
        );
        r.traces[0].no_task_time = Some(NoTaskTime::NoOriginalCompletions);
        let some = format_table(&r);
        let first = format!(
            "no predicted task time for {}: the trace holds no original completion times",
            r.traces[0].name
        );
        assert!(some.contains(&first), "{some}");
        assert!(!some.contains("no predicted task time: "), "{some}");
        // Round trip: the reason is kept in the JSON, by a stable name.
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"no_task_time\":\"no_original_completions\""));
        let back: SuiteResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back.traces[0].no_task_time, r.traces[0].no_task_time);
    }

    /// The fixture with a task time per trace, 2.25 s for the first and a
    /// second more for each next; only the first calibrated, and with
    /// `first_spread` over its passes.
    fn timed_fixture(first_spread: Option<crate::schema::Spread>) -> SuiteResult {
        let text = include_str!("../../tests/fixtures/suite-a.json");
        let mut r: SuiteResult = serde_json::from_str(text).unwrap();
        assert!(r.traces.len() >= 2, "the fixture needs two traces");
        for (i, t) in r.traces.iter_mut().enumerate() {
            t.task = Some(TaskTime {
                predicted_s: 2.25 + i as f64,
                model: "blocking".into(),
                models: Default::default(),
                captured_s: 3.0,
                untraced_s: Some(2.0),
                span: "task marks".into(),
                uncalibrated: (i == 0).then(|| [("blocking".to_string(), 2.75)].into()),
                cpu_floor_s: None,
                unfloored: None,
                calibrated_at: None,
                predicted_spread: if i == 0 { first_spread } else { None },
                breakdown: None,
            });
        }
        r
    }

    #[test]
    fn calibrated_task_times_are_marked_and_the_mark_explained() {
        // Only the first trace was calibrated.
        let mut r = timed_fixture(None);
        let table = format_table(&r);
        let rows: Vec<&str> = table.lines().collect();
        let row_of = |name: &str| {
            *rows
                .iter()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no row {name}: {table}"))
        };
        let first = row_of(&r.traces[0].name);
        let second = row_of(&r.traces[1].name);
        assert!(first.ends_with("     2.250*"), "{first}");
        assert!(second.ends_with("      3.250"), "{second}");
        assert_eq!(first.chars().count(), second.chars().count());
        let n = r.traces.len();
        assert!(
            table.contains(&format!("task s: * calibrated (1 of {n})")),
            "{table}"
        );
        assert!(table.contains("unmarked: uncalibrated"), "{table}");
        // All calibrated: the footnote says so and nothing of uncalibrated.
        for t in &mut r.traces {
            t.task.as_mut().unwrap().uncalibrated = Some(Default::default());
        }
        let table = format_table(&r);
        assert!(
            table.contains(&format!("task s: * calibrated ({n} of {n})")),
            "{table}"
        );
        assert!(!table.contains("unmarked"), "{table}");
    }

    #[test]
    fn the_task_column_gives_half_the_range_over_the_passes() {
        // The first trace's passes predicted 2.0 to 2.5 s.
        let r = timed_fixture(Some(crate::schema::Spread {
            min: 2.0,
            max: 2.5,
            stddev: 0.25,
        }));
        assert!(r.traces[0].passes.len() > 1, "the fixture needs passes");
        let table = format_table(&r);
        let lines: Vec<&str> = table.lines().collect();
        let line_of = |start: &str| {
            *lines
                .iter()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no line {start}: {table}"))
        };
        let head = line_of("trace ");
        let first = line_of(&r.traces[0].name);
        let second = line_of(&r.traces[1].name);
        assert!(first.ends_with(" 2.250 ±0.250*"), "{first}");
        assert!(second.ends_with(" 3.250"), "{second}");
        assert!(head.ends_with(" task s"), "{head}");
        // One column: the head and both rows end at the same width.
        assert_eq!(first.chars().count(), second.chars().count(), "{table}");
        assert_eq!(head.chars().count(), first.chars().count(), "{table}");
    }
}
