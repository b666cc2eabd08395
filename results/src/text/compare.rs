//! The comparison as text: one table per metric, ratios to the first column.

use super::escape::escape_control as esc;
use crate::compare::{column_name, Comparison, Metric, INVALID, NOT_SIGNIFICANT};
use std::fmt::Write;

/// The tables people read: the columns, the comparability warnings, then
/// one table per metric. `!` marks a column whose mode or options differ
/// from the first; `≠` a cell whose trace is another version; `n.s.` a score
/// whose difference to the first column is not significant; `INVALID` every
/// cell of a result whose figures cannot be trusted (no ratio).
pub fn format_tables(c: &Comparison) -> String {
    let mut out = String::new();
    columns(&mut out, c);
    warnings(&mut out, c);
    pools(&mut out, c);
    let name_width = c
        .traces
        .iter()
        .map(|t| esc(t).chars().count())
        .chain(std::iter::once(22))
        .max()
        .unwrap_or(22)
        .min(40);
    for metric in Metric::ALL {
        if metric == Metric::TaskTime && !c.has_task_time() {
            continue;
        }
        metric_table(&mut out, c, metric, name_width);
    }
    out.push_str(&super::breakdown::comparison(c));
    out
}

/// Width of a figure's column.
const COL_WIDTH: usize = 20;

/// What each column is: label, mode, queue depth, passes, host, file.
fn columns(out: &mut String, c: &Comparison) {
    let _ = writeln!(out, "columns (ratios are to the first):");
    for (i, d) in c.drives.iter().enumerate() {
        let r = &d.result;
        let _ = writeln!(
            out,
            "  {}{} = {}: {} mode, queue depth {}, {} pass{}, {} ({})",
            column_name(i),
            if c.drive_flagged(i) { "!" } else { "" },
            esc(&d.label),
            r.mode(),
            r.options.queue_depth,
            r.options.passes,
            if r.options.passes == 1 { "" } else { "es" },
            esc(&r.host.hostname),
            esc(&d.file.display().to_string())
        );
    }
}

/// Why the results are not fully comparable, when they are not.
fn warnings(out: &mut String, c: &Comparison) {
    if c.mismatches.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "WARNING: these results are not fully comparable (marked ! and ≠ below):"
    );
    for m in &c.mismatches {
        let _ = writeln!(out, "  - {}", esc(&m.message));
    }
}

/// Which columns were pooled as runs of one drive, and why.
fn pools(out: &mut String, c: &Comparison) {
    let notes = c.pool_notes();
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "pooled as runs of one drive (--no-pool keeps them apart):"
    );
    for n in notes {
        let _ = writeln!(out, "  - {}", esc(&n));
    }
}

/// One metric: title, column heads, a row per trace, the suite row.
fn metric_table(out: &mut String, c: &Comparison, metric: Metric, name_width: usize) {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{}{}",
        metric.title(),
        if metric.lower_is_better() {
            " (lower is better)"
        } else {
            " (higher is better)"
        }
    );
    let _ = write!(out, "{:<name_width$}", "trace");
    for (i, _) in c.drives.iter().enumerate() {
        let head = format!(
            "{}{}",
            column_name(i),
            if c.drive_flagged(i) { "!" } else { "" }
        );
        let _ = write!(out, " {head:>COL_WIDTH$}");
    }
    let _ = writeln!(out);
    for name in &c.traces {
        trace_row(out, c, metric, name, name_width);
    }
    suite_row(out, c, metric, name_width);
    if metric == Metric::Score && (0..c.drives.len()).any(|i| c.drive_invalid(i)) {
        let _ = writeln!(
            out,
            "{INVALID}: the result is not valid (see the warnings above); its figures are no measure of the drive"
        );
    }
    if metric == Metric::TaskTime {
        let _ = writeln!(
            out,
            "{NOT_SIGNIFICANT}: not significant, the difference to the first column is within the 95 % intervals of their passes' predictions{}",
            task_ratio_note(c)
        );
    }
    if metric == Metric::Score {
        let _ = writeln!(
            out,
            "{NOT_SIGNIFICANT}: not significant, the difference to the first column is within their combined 95 % confidence intervals (from the passes, and from the runs where several results are of one drive by serial or WWN)"
        );
    }
}

/// The geometric mean over the traces of each column's task-time ratio to
/// the first, for the traces both predict.
fn task_ratio_note(c: &Comparison) -> String {
    let ratios: Vec<String> = (1..c.drives.len())
        .filter_map(|i| {
            let r: Vec<f64> = c
                .traces
                .iter()
                .filter_map(|n| {
                    let a = Metric::TaskTime.of_trace(c.trace(0, n)?)?;
                    let b = Metric::TaskTime.of_trace(c.trace(i, n)?)?;
                    (a > 0.0 && b > 0.0).then(|| b / a)
                })
                .collect();
            crate::stats::geometric_mean(&r).map(|g| format!("{} {g:.2}x", column_name(i)))
        })
        .collect();
    if ratios.is_empty() {
        String::new()
    } else {
        format!(
            "\ntask time ratio to A, geometric mean over the traces: {}",
            ratios.join(", ")
        )
    }
}

fn trace_row(out: &mut String, c: &Comparison, metric: Metric, name: &str, name_width: usize) {
    let shown: String = esc(name).chars().take(name_width).collect();
    let _ = write!(out, "{shown:<name_width$}");
    let reference = c.trace(0, name).and_then(|t| metric.of_trace(t));
    for i in 0..c.drives.len() {
        let value = c.trace(i, name).and_then(|t| metric.of_trace(t));
        let mut text = c.cell(i, value, reference, metric.precision());
        if c.significant(metric, i, Some(name)) == Some(false) {
            text = format!("{text} {NOT_SIGNIFICANT}");
        }
        if c.trace_flagged(i, name) {
            text.push('≠');
        }
        let _ = write!(out, " {text:>COL_WIDTH$}");
    }
    let _ = writeln!(out);
}

fn suite_row(out: &mut String, c: &Comparison, metric: Metric, name_width: usize) {
    let label = match metric {
        Metric::Playback | Metric::TaskTime => "suite (total)",
        _ => "suite (geometric mean)",
    };
    let _ = write!(out, "{label:<name_width$}");
    let reference = c.drives.first().and_then(|d| metric.of_suite(&d.result));
    for (i, d) in c.drives.iter().enumerate() {
        let mut text = c.cell(i, metric.of_suite(&d.result), reference, metric.precision());
        if c.significant(metric, i, None) == Some(false) {
            text = format!("{text} {NOT_SIGNIFICANT}");
        }
        let _ = write!(out, " {text:>COL_WIDTH$}");
    }
    let _ = writeln!(out);
}
