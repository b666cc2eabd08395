//! The consistency test's page: score and bandwidth per round, coloured by
//! phase, and the table of rounds.

use super::axis::Axis;
use super::page::{esc, page_end, page_start, points_attr};
use crate::consistency::{ConsistencyResult, Phase, Round};
use std::fmt::Write;

/// Phase colours of the consistency chart.
fn phase_colour(phase: Phase) -> &'static str {
    match phase {
        Phase::Degradation => "#d55e00",
        Phase::Steady => "#0072b2",
        Phase::Recovery => "#009e73",
    }
}

/// The HTML report: score per round coloured by phase, bandwidth per round,
/// and the table.
pub fn consistency_report(r: &ConsistencyResult) -> String {
    let mut out = String::new();
    page_start(&mut out, "tracemark: consistency test");
    let intro = format!(
        "Target {} ({}, {:.2} GB). Precondition: two sequential fills; degradation: {} rounds of random writes ({:.1} s, +{:.1} s per round) and a suite pass; steady state: {} rounds ({:.1} s of writes); recovery: {} rounds ({:.1} s idle).",
        r.target.path,
        r.target.model.as_deref().unwrap_or(r.target.kind.label()),
        r.target.size_bytes as f64 / 1e9,
        r.rounds_degrade,
        r.durations.degrade_start_s,
        r.durations.degrade_step_s,
        r.rounds_steady,
        r.durations.steady_s,
        r.rounds_recovery,
        r.durations.idle_s
    );
    let _ = writeln!(out, "<p>{}</p>", esc(&intro));
    for line in crate::identity::describe_lines(&r.target, &r.host, &r.tool.version, None) {
        let _ = writeln!(out, "<p class=\"identity\">{}</p>", esc(&line));
    }
    out.push_str("<p>");
    for phase in Phase::ALL {
        let _ = write!(
            out,
            "<span class=\"swatch\" style=\"background:{}\"></span>{phase} &nbsp; ",
            phase_colour(phase)
        );
    }
    out.push_str("</p>\n<h2>Score per round</h2>\n");
    round_charts(&mut out, &r.rounds);
    out.push_str("<h2>Rounds</h2>\n");
    out.push_str("<table class=\"rounds\"><tr><th>phase</th><th>round</th><th>writes s</th><th>write MB/s</th><th>idle s</th><th>score</th><th>bandwidth MB/s</th><th>access time µs</th></tr>\n");
    for p in &r.precondition {
        let _ = writeln!(
            out,
            "<tr><td>precondition</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>-</td><td>-</td><td>-</td><td>-</td></tr>",
            p.pass, p.seconds, p.mb_s
        );
    }
    for x in &r.rounds {
        let _ = writeln!(
            out,
            "<tr class=\"round\" data-phase=\"{}\"><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td><td>{:.1}</td></tr>",
            x.phase,
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
    out.push_str("</table>\n");
    page_end(&mut out);
    out
}

/// Score per round (a line, points coloured by phase) and bandwidth per
/// round (bars coloured by phase).
fn round_charts(out: &mut String, rounds: &[Round]) {
    let (left, top, plot_w, plot_h) = (70.0, 10.0, 800.0, 240.0);
    let width = left + plot_w + 20.0;
    let height = top + plot_h + 45.0;
    let n = rounds.len().max(1) as f64;
    let px = |i: usize| left + (i as f64 + 0.5) / n * plot_w;
    for (key, label, get) in [
        ("score", "score", (|r: &Round| r.score) as fn(&Round) -> f64),
        ("bandwidth", "bandwidth MB/s", |r: &Round| r.bandwidth_mb_s),
    ] {
        if key == "bandwidth" {
            out.push_str("<h2>Bandwidth per round</h2>\n");
        }
        let axis = Axis::fit(rounds.iter().map(get), false);
        let py = |v: f64| top + plot_h - axis.fraction(v) * plot_h;
        let _ = writeln!(
            out,
            "<svg id=\"consistency-{key}\" class=\"chart consistency\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"{label} per round\">"
        );
        for (f, label) in axis.ticks() {
            let y = top + plot_h - f * plot_h;
            let _ = writeln!(
                out,
                "<line class=\"grid\" x1=\"{left}\" y1=\"{y:.1}\" x2=\"{0:.1}\" y2=\"{y:.1}\"/><text x=\"{1:.1}\" y=\"{2:.1}\" text-anchor=\"end\">{label}</text>",
                left + plot_w,
                left - 6.0,
                y + 4.0,
            );
        }
        for (i, r) in rounds.iter().enumerate() {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}{}</text>",
                px(i),
                top + plot_h + 14.0,
                r.phase
                    .name()
                    .chars()
                    .next()
                    .unwrap_or('?')
                    .to_ascii_uppercase(),
                r.round
            );
        }
        if key == "score" {
            let pts: Vec<(f64, f64)> = rounds
                .iter()
                .enumerate()
                .map(|(i, r)| (px(i), py(get(r))))
                .collect();
            let _ = writeln!(
                out,
                "<polyline class=\"round-line\" data-points=\"{}\" stroke=\"#888\" points=\"{}\"/>",
                pts.len(),
                points_attr(&pts)
            );
            for (i, r) in rounds.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "<circle class=\"round-point\" data-phase=\"{}\" data-round=\"{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"{}\"><title>{} {}: score {:.1}</title></circle>",
                    r.phase,
                    r.round,
                    px(i),
                    py(r.score),
                    phase_colour(r.phase),
                    r.phase,
                    r.round,
                    r.score
                );
            }
        } else {
            let bw = (plot_w / n * 0.7).max(1.0);
            for (i, r) in rounds.iter().enumerate() {
                let y = py(r.bandwidth_mb_s);
                let _ = writeln!(
                    out,
                    "<rect class=\"bar\" data-metric=\"bandwidth\" data-phase=\"{}\" data-round=\"{}\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {}: {:.2} MB/s</title></rect>",
                    r.phase,
                    r.round,
                    px(i) - bw / 2.0,
                    (top + plot_h - y).max(0.5),
                    phase_colour(r.phase),
                    r.phase,
                    r.round,
                    r.bandwidth_mb_s
                );
            }
        }
        let _ = writeln!(
            out,
            "<line class=\"axis\" x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\"/><line class=\"axis\" x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{0:.1}\"/>\n</svg>",
            top + plot_h,
            left + plot_w
        );
    }
}
