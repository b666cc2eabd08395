//! The drive comparison page.

use super::axis::Axis;
use super::chart::{line_chart, AxisSpec, Line};
use super::page::{colour, esc, page_end, page_start};
use crate::compare::{column_name, Comparison, Metric, INVALID, NOT_SIGNIFICANT};
use crate::schema::Timeline;
use std::fmt::Write;

fn legend(out: &mut String, c: &Comparison) {
    out.push_str("<p>");
    for (i, d) in c.drives.iter().enumerate() {
        let _ = write!(
            out,
            "<span class=\"swatch\" style=\"background:{}\"></span>{} = {}{} &nbsp; ",
            colour(i),
            column_name(i),
            esc(&d.label),
            if c.drive_invalid(i) {
                format!(" <span class=\"flag invalid\">({INVALID}: not a valid result)</span>")
            } else {
                String::new()
            }
        );
    }
    out.push_str("</p>\n");
}

/// Horizontal grouped bars: one group per trace (and the suite), one bar
/// per drive that has the trace.
fn bar_chart(out: &mut String, c: &Comparison, metric: Metric) {
    /// (key for `data-trace`, label, bars as (drive, value)).
    type Group = (String, String, Vec<(usize, f64)>);
    let mut groups: Vec<Group> = Vec::new();
    for name in &c.traces {
        let bars = (0..c.drives.len())
            .filter_map(|i| Some((i, metric.of_trace(c.trace(i, name)?)?)))
            .collect();
        groups.push((name.clone(), name.clone(), bars));
    }
    let suite: Vec<(usize, f64)> = c
        .drives
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((i, metric.of_suite(&d.result)?)))
        .collect();
    let suite_label = match metric {
        Metric::Playback | Metric::TaskTime => "suite (total)",
        _ => "suite (geometric mean)",
    };
    groups.push(("suite".into(), suite_label.into(), suite));
    let axis = Axis::fit(groups.iter().flat_map(|g| g.2.iter().map(|b| b.1)), false);
    let (left, plot_w, bar_h, gap, top) = (190.0, 640.0, 14.0, 12.0, 10.0);
    let n = c.drives.len().max(1) as f64;
    let group_h = n * bar_h + gap;
    let height = top + groups.len() as f64 * group_h + 30.0;
    let width = left + plot_w + 110.0;
    let _ = writeln!(
        out,
        "<svg id=\"bars-{}\" class=\"chart bars\" data-metric=\"{}\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"{} per trace\">",
        metric.key(),
        metric.key(),
        esc(metric.title())
    );
    let x = |v: f64| left + axis.fraction(v) * plot_w;
    let bottom = top + groups.len() as f64 * group_h;
    for (f, label) in axis.ticks() {
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{0:.1}\" y1=\"{top}\" x2=\"{0:.1}\" y2=\"{bottom:.1}\"/><text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"middle\">{2}</text>",
            left + f * plot_w,
            bottom + 14.0,
            label
        );
    }
    for (g, (key, title, bars)) in groups.iter().enumerate() {
        let gy = top + g as f64 * group_h;
        let label: String = title.chars().take(30).collect();
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            gy + n * bar_h / 2.0 + 4.0,
            esc(&label)
        );
        for &(i, v) in bars {
            let y = gy + i as f64 * bar_h;
            let w = (x(v) - left).max(0.5);
            let prec = metric.precision();
            let invalid = if c.drive_invalid(i) {
                format!(" {INVALID}")
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "<rect class=\"bar\" data-metric=\"{}\" data-trace=\"{}\" data-drive=\"{}\" x=\"{left}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {} {}</title></rect><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                metric.key(),
                esc(key),
                i,
                bar_h - 2.0,
                colour(i),
                esc(c.drives.get(i).map_or("", |d| d.label.as_str())),
                esc(metric.title()),
                format_args!("{v:.prec$}{invalid}"),
                left + w + 4.0,
                y + bar_h - 4.0,
                format_args!("{v:.prec$}{invalid}"),
            );
        }
    }
    let _ = writeln!(
        out,
        "<line class=\"axis\" x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{bottom:.1}\"/>\n</svg>"
    );
}

fn metric_table(out: &mut String, c: &Comparison, metric: Metric) {
    let _ = writeln!(
        out,
        "<table class=\"metric\" data-metric=\"{}\"><caption>{} ({} is better)</caption>\n<tr><th>trace</th>",
        metric.key(),
        esc(metric.title()),
        if metric.lower_is_better() { "lower" } else { "higher" }
    );
    for (i, _) in c.drives.iter().enumerate() {
        let _ = write!(
            out,
            "<th>{}{}</th>",
            column_name(i),
            if c.drive_flagged(i) {
                " <span class=\"flag\">!</span>"
            } else {
                ""
            }
        );
    }
    out.push_str("</tr>\n");
    for name in &c.traces {
        let _ = write!(out, "<tr><td>{}</td>", esc(name));
        let reference = c.trace(0, name).and_then(|t| metric.of_trace(t));
        for i in 0..c.drives.len() {
            let value = c.trace(i, name).and_then(|t| metric.of_trace(t));
            let flag = if c.trace_flagged(i, name) {
                " <span class=\"flag\">≠</span>"
            } else {
                ""
            };
            let _ = write!(
                out,
                "<td>{}{}{flag}</td>",
                esc(&c.cell(i, value, reference, metric.precision())),
                not_significant(c, metric, i, Some(name))
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("<tr><th>suite</th>");
    let reference = c.drives.first().and_then(|d| metric.of_suite(&d.result));
    for (i, d) in c.drives.iter().enumerate() {
        let _ = write!(
            out,
            "<th>{}{}</th>",
            esc(&c.cell(i, metric.of_suite(&d.result), reference, metric.precision())),
            not_significant(c, metric, i, None)
        );
    }
    out.push_str("</tr>\n</table>\n");
    if metric == Metric::Score {
        let _ = writeln!(
            out,
            "<p class=\"note\"><span class=\"ns\">{NOT_SIGNIFICANT}</span>: not significant, the difference to the first column is within their combined 95 % confidence intervals (from the passes, and from the runs where several results are of one drive by serial or WWN).</p>"
        );
    }
}

/// The mark of a score cell whose difference to the first column is not
/// significant (empty otherwise).
fn not_significant(c: &Comparison, metric: Metric, drive: usize, trace: Option<&str>) -> String {
    if c.significant(metric, drive, trace) == Some(false) {
        format!(" <span class=\"ns\">{NOT_SIGNIFICANT}</span>")
    } else {
        String::new()
    }
}

/// What each result says about its drive, filesystem and host (results
/// older than schema version 2 have nothing to show: no table then).
fn identity_table(out: &mut String, c: &Comparison) {
    let lines: Vec<Vec<String>> = c
        .drives
        .iter()
        .map(|d| {
            let r = &d.result;
            crate::identity::describe_lines(
                &r.target,
                &r.host,
                &r.tool.version,
                r.trace_set.as_deref(),
            )
        })
        .collect();
    if lines.iter().all(Vec::is_empty) {
        return;
    }
    out.push_str("<table class=\"identity\"><tr><th>column</th><th>drive and machine</th></tr>\n");
    for (i, l) in lines.iter().enumerate() {
        let cell: Vec<String> = l.iter().map(|s| esc(s)).collect();
        let _ = writeln!(
            out,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td>{}</td></tr>",
            colour(i),
            column_name(i),
            cell.join("<br>")
        );
    }
    out.push_str("</table>\n");
}

/// The comparison report: drives, warnings, tables, bar charts of score and
/// bandwidth, and per trace the latency CDFs and the timelines.
pub fn compare_report(c: &Comparison) -> String {
    let mut out = String::new();
    page_start(&mut out, "tracemark: drive comparison");
    drives_table(&mut out, c);
    mismatches(&mut out, c);
    pools(&mut out, c);
    out.push_str("<h2>Scores</h2>\n");
    legend(&mut out, c);
    out.push_str("<h3>Score per trace (higher is better)</h3>\n");
    bar_chart(&mut out, c, Metric::Score);
    out.push_str("<h3>Bandwidth per trace, MB/s (higher is better)</h3>\n");
    bar_chart(&mut out, c, Metric::Bandwidth);
    out.push_str("<h2>Tables</h2>\n<p class=\"note\">Ratios are to the first column. A dash: the trace is not in that result.</p>\n");
    if c.has_task_time() {
        out.push_str("<h3>Predicted task time per trace, s (lower is better)</h3>\n");
        bar_chart(&mut out, c, Metric::TaskTime);
    }
    for m in Metric::ALL {
        if m == Metric::TaskTime && !c.has_task_time() {
            continue;
        }
        metric_table(&mut out, c, m);
    }
    out.push_str("<h2>Per trace</h2>\n<p class=\"note\">Latency distribution over the scored passes (solid: reads, dashed: writes). Timelines: the last scored pass, per interval of playback.</p>\n");
    for (ti, name) in c.traces.iter().enumerate() {
        let _ = writeln!(out, "<h3 id=\"trace-{ti}\">{}</h3>", esc(name));
        legend(&mut out, c);
        let lines = TraceLines::of(c, name);
        cdf_chart(&mut out, ti, &lines.cdfs);
        timeline_charts(&mut out, ti, &lines);
    }
    super::breakdown::section(&mut out, c);
    page_end(&mut out);
    out
}

/// One row per drive: label, target, mode, options, host, result file.
fn drives_table(out: &mut String, c: &Comparison) {
    out.push_str("<h2>Drives</h2>\n<table class=\"drives\"><tr><th>column</th><th>label</th><th>target</th><th>size</th><th>mode</th><th>options</th><th>host</th><th>result file</th></tr>\n");
    for (i, d) in c.drives.iter().enumerate() {
        let r = &d.result;
        let o = &r.options;
        let _ = writeln!(
            out,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}{}</td><td>{}</td><td>{} ({})</td><td>{:.1} GB</td><td>{}</td><td>QD {}, scale {}, idle cap {}, {} pass(es){}</td><td>{} ({} CPUs, {})</td><td>{}</td></tr>",
            colour(i),
            column_name(i),
            if c.drive_flagged(i) { " <span class=\"flag\">!</span>" } else { "" },
            esc(&d.label),
            esc(&r.target.path),
            r.target.kind.name(),
            r.target.size_bytes as f64 / 1e9,
            r.mode(),
            o.queue_depth,
            o.time_scale,
            o.idle_cap.map_or("none".to_string(), |n| format!("{} ms", n.0 as f64 / 1e6)),
            o.passes,
            if o.read_only { ", read-only" } else { "" },
            esc(&r.host.hostname),
            r.host.cpus,
            esc(&r.host.kernel),
            esc(&d.file.display().to_string()),
        );
    }
    out.push_str("</table>\n");
    identity_table(out, c);
}

/// Why the results are not fully comparable, when they are not.
/// Which columns were pooled as runs of one drive, and why.
fn pools(out: &mut String, c: &Comparison) {
    let notes = c.pool_notes();
    if notes.is_empty() {
        return;
    }
    out.push_str("<div class=\"note\" id=\"pools\"><strong>Pooled as runs of one drive</strong> (<code>--no-pool</code> keeps them apart):<ul>\n");
    for n in notes {
        let _ = writeln!(out, "<li class=\"pool\">{}</li>", esc(&n));
    }
    out.push_str("</ul></div>\n");
}

fn mismatches(out: &mut String, c: &Comparison) {
    if c.mismatches.is_empty() {
        return;
    }
    out.push_str("<div class=\"warn\" id=\"mismatches\"><strong>These results are not fully comparable</strong> (columns marked <span class=\"flag\">!</span>, cells marked <span class=\"flag\">≠</span>):<ul>\n");
    for m in &c.mismatches {
        let _ = writeln!(out, "<li class=\"mismatch\">{}</li>", esc(&m.message));
    }
    out.push_str("</ul></div>\n");
}

/// A trace's chart lines over the drives that have it.
struct TraceLines {
    /// Latency CDFs, reads solid and writes dashed.
    cdfs: Vec<Line<'static>>,
    /// Bandwidth per timeline interval.
    bandwidth: Vec<Line<'static>>,
    /// Mean latency per timeline interval (intervals with no completion left out).
    latency: Vec<Line<'static>>,
    /// Each drive's timeline interval, `A 0.5 s`.
    intervals: Vec<String>,
}

impl TraceLines {
    fn of(c: &Comparison, name: &str) -> TraceLines {
        let mut lines = TraceLines {
            cdfs: Vec::new(),
            bandwidth: Vec::new(),
            latency: Vec::new(),
            intervals: Vec::new(),
        };
        for i in 0..c.drives.len() {
            let Some(t) = c.trace(i, name) else { continue };
            for op in ["read", "write"] {
                if let Some(points) = t.latency_cdf_us.get(op) {
                    lines.cdfs.push(Line {
                        class: "cdf",
                        attrs: format!(
                            "data-trace=\"{}\" data-drive=\"{i}\" data-op=\"{op}\"",
                            esc(name)
                        ),
                        colour: colour(i),
                        dashed: op == "write",
                        points: points.iter().map(|p| (p[1], p[0])).collect(),
                    });
                }
            }
            if let Some(tl) = &t.timeline {
                lines.add_timeline(i, name, tl);
            }
        }
        lines
    }

    fn add_timeline(&mut self, i: usize, name: &str, tl: &Timeline) {
        self.intervals
            .push(format!("{} {} s", column_name(i), tl.interval_s));
        let mk = |metric: &str, ys: &[f64], keep: &dyn Fn(usize) -> bool| Line {
            class: "timeline",
            attrs: format!(
                "data-trace=\"{}\" data-drive=\"{i}\" data-metric=\"{metric}\"",
                esc(name)
            ),
            colour: colour(i),
            dashed: false,
            points: tl
                .t_s
                .iter()
                .copied()
                .zip(ys.iter().copied())
                .enumerate()
                .filter(|(k, _)| keep(*k))
                .map(|(_, p)| p)
                .collect(),
        };
        self.bandwidth
            .push(mk("bandwidth", &tl.bandwidth_mb_s, &|_| true));
        // Intervals where nothing completed have no latency: left out.
        self.latency.push(mk("latency", &tl.mean_latency_us, &|k| {
            tl.ios.get(k).is_some_and(|n| *n > 0)
        }));
    }
}

/// The latency CDFs of trace number `ti`, or a note that there are none.
fn cdf_chart(out: &mut String, ti: usize, cdfs: &[Line<'_>]) {
    if cdfs.is_empty() {
        out.push_str("<p class=\"note\">No latency distribution in these results.</p>\n");
        return;
    }
    line_chart(
        out,
        &format!("cdf-{ti}"),
        AxisSpec {
            title: "latency µs (log)",
            log: true,
        },
        AxisSpec {
            title: "fraction of I/Os",
            log: false,
        },
        cdfs,
    );
}

/// Bandwidth and mean latency over playback time, or a note that there is
/// no timeline.
fn timeline_charts(out: &mut String, ti: usize, lines: &TraceLines) {
    if lines.bandwidth.is_empty() {
        out.push_str("<p class=\"note\">No timeline in these results.</p>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">Timeline intervals: {}. Mean latency is left out where nothing completed.</p>",
        esc(&lines.intervals.join(", "))
    );
    let time = || AxisSpec {
        title: "playback time s",
        log: false,
    };
    line_chart(
        out,
        &format!("timeline-bandwidth-{ti}"),
        time(),
        AxisSpec {
            title: "bandwidth MB/s",
            log: false,
        },
        &lines.bandwidth,
    );
    line_chart(
        out,
        &format!("timeline-latency-{ti}"),
        time(),
        AxisSpec {
            title: "mean latency µs",
            log: false,
        },
        &lines.latency,
    );
}
