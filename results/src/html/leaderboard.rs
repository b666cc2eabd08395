//! The leaderboard page: drives ranked by suite score, with confidence
//! intervals, groups of drives whose differences are not significant, the
//! runs behind each line (linked to their reports) and per-trace scores.
//!
//! Elements a reader (or a test) can find: `table.leaderboard` with one
//! `tr.drive[data-rank][data-group][data-score]` per drive (the name in
//! `td.name`, the runs as `a.run` links, the predicted task time in
//! `td.task` when a ranked run predicts one); `rect.bar[data-drive]` and
//! `line.ci[data-drive]` in the chart, one per drive.

use super::page::{colour, esc, page_end, page_start};
use crate::leaderboard::Leaderboard;
use std::fmt::Write;

fn fmt_score(v: f64) -> String {
    format!("{v:.0}")
}

/// The whole page.
pub fn leaderboard_report(b: &Leaderboard) -> String {
    let mut out = String::new();
    let title = if b.suite_name.is_empty() {
        "tracemark leaderboard".to_string()
    } else {
        format!("tracemark leaderboard: {}", b.suite_name)
    };
    page_start(&mut out, &title);
    let runs: usize = b.drives.iter().map(|d| d.runs.len()).sum();
    let _ = writeln!(
        out,
        "<p>{} drives, {} runs; trace set <code>{}</code> ({} traces), {} mode; settings: {}. Scores are means over each drive's runs; ± is the 95&nbsp;% confidence interval (over the runs, or a single run's passes).</p>",
        b.drives.len(),
        runs,
        esc(&b.trace_set),
        b.traces.len(),
        esc(&b.mode),
        esc(&b.settings)
    );
    if b.drives.is_empty() {
        out.push_str("<p class=\"warn\">No valid run of this trace set to rank.</p>\n");
    } else {
        chart(&mut out, b);
        table(&mut out, b);
        let shared: Vec<&String> = b
            .groups
            .iter()
            .enumerate()
            .filter(|(g, _)| b.drives.iter().filter(|d| d.group == *g).count() > 1)
            .map(|(_, name)| name)
            .collect();
        let _ = writeln!(
            out,
            "<p class=\"note\">Group: drives with one letter are not significantly different from the group's first drive (their difference is within the intervals combined); {}.</p>",
            if shared.is_empty() {
                "here every drive differs significantly from the one above it".to_string()
            } else {
                format!(
                    "here group{} {} hold{} more than one drive",
                    if shared.len() == 1 { "" } else { "s" },
                    shared.iter().map(|s| esc(s)).collect::<Vec<_>>().join(", "),
                    if shared.len() == 1 { "s" } else { "" }
                )
            }
        );
    }
    if !b.left_out.is_empty() {
        out.push_str("<h2>Not ranked</h2>\n<ul class=\"left-out\">\n");
        for (id, why) in &b.left_out {
            let _ = writeln!(out, "<li>run {id}: {}</li>", esc(why));
        }
        out.push_str("</ul>\n");
    }
    page_end(&mut out);
    out
}

/// Horizontal bars, one per drive, with the interval as a whisker.
fn chart(out: &mut String, b: &Leaderboard) {
    let (label_w, bar_w, row_h) = (260.0, 560.0, 26.0);
    let max = b
        .drives
        .iter()
        .map(|d| d.ci.map_or(d.score, |c| c.high.max(d.score)))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let height = row_h * b.drives.len() as f64 + 10.0;
    let x = |v: f64| label_w + bar_w * (v.max(0.0) / max);
    let _ = writeln!(
        out,
        "<svg class=\"leaderboard-chart\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"suite scores\">",
        label_w + bar_w + 80.0
    );
    for (i, d) in b.drives.iter().enumerate() {
        let y = 5.0 + row_h * i as f64;
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}. {}</text>",
            label_w - 6.0,
            y + row_h * 0.65,
            d.rank,
            esc(&d.name)
        );
        let _ = writeln!(
            out,
            "<rect class=\"bar\" data-drive=\"{}\" x=\"{label_w:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {}</title></rect>",
            esc(&d.name),
            y + 3.0,
            (x(d.score) - label_w).max(0.5),
            row_h - 8.0,
            colour(d.group),
            esc(&d.name),
            fmt_score(d.score)
        );
        if let Some(ci) = d.ci {
            let _ = writeln!(
                out,
                "<line class=\"ci\" data-drive=\"{}\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#222\" stroke-width=\"2\"/>",
                esc(&d.name),
                x(ci.low),
                x(ci.high),
                y + row_h / 2.0 - 1.0,
                y + row_h / 2.0 - 1.0
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x(d.ci.map_or(d.score, |c| c.high.max(d.score))) + 6.0,
            y + row_h * 0.65,
            fmt_score(d.score)
        );
    }
    out.push_str("</svg>\n");
}

fn table(out: &mut String, b: &Leaderboard) {
    // The column only where some run predicts a task time.
    let task = b.drives.iter().any(|d| d.task_s.is_some());
    out.push_str("<table class=\"leaderboard\">\n<tr><th>#</th><th>group</th><th>drive</th><th>score</th><th>95&nbsp;% interval</th>");
    if task {
        out.push_str("<th class=\"task\" title=\"predicted task time of the suite, mean over the drive's runs\">task s</th>");
    }
    out.push_str("<th>runs</th>");
    for t in &b.traces {
        let _ = write!(out, "<th class=\"trace\">{}</th>", esc(t));
    }
    out.push_str("</tr>\n");
    for d in &b.drives {
        let group = b.groups.get(d.group).map_or("", String::as_str);
        let _ = write!(
            out,
            "<tr class=\"drive\" data-rank=\"{}\" data-group=\"{}\" data-score=\"{:.3}\"><td>{}</td><td class=\"group\">{}</td><td class=\"name\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td class=\"score\">{}</td><td>{}</td>",
            d.rank,
            esc(group),
            d.score,
            d.rank,
            esc(group),
            colour(d.group),
            esc(&d.name),
            fmt_score(d.score),
            d.ci.map_or("-".to_string(), |c| format!(
                "{} – {}",
                fmt_score(c.low),
                fmt_score(c.high)
            )),
        );
        if task {
            let _ = write!(
                out,
                "<td class=\"task\">{}</td>",
                d.task_s.map_or("-".to_string(), |t| format!("{t:.3}"))
            );
        }
        out.push_str("<td class=\"runs\">");
        for (i, r) in d.runs.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let text = format!("#{} ({})", r.id, fmt_score(r.score));
            match &r.report_href {
                Some(href) => {
                    let _ = write!(
                        out,
                        "<a class=\"run\" href=\"{}\">{}</a>",
                        esc(href),
                        esc(&text)
                    );
                }
                None => out.push_str(&esc(&text)),
            }
        }
        out.push_str("</td>");
        for t in &b.traces {
            let _ = write!(
                out,
                "<td class=\"trace\">{}</td>",
                d.traces.get(t).map_or("-".to_string(), |v| fmt_score(*v))
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}
