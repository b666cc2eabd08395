//! Where the predicted task time goes: per trace, one stacked bar per drive
//! (think time, then the waits on each class of I/O along the path that set
//! the prediction), and which classes account for each drive's difference
//! from the first.
//!
//! Segments: `rect.seg[data-trace][data-drive][data-part]` (`data-part` is
//! `think`, a class's label, or `other`), each with `data-s` (its seconds).

use super::axis::Axis;
use super::page::{colour, esc};
use crate::breakdown::{Breakdown, Difference, WaitClass};
use crate::compare::{column_name, Comparison};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Classes drawn one by one per trace (the largest over the drives); the
/// rest are one `other` segment.
const SHOWN: usize = 6;
const THINK_COLOUR: &str = "#c8c8c8";
const OTHER_COLOUR: &str = "#777777";

/// A trace's breakdowns: (drive index, breakdown) of each drive that has one.
type Drives<'a> = Vec<(usize, &'a Breakdown)>;
/// A bar's segments: (part, colour, seconds).
type Segments<'a> = Vec<(String, &'a str, f64)>;

/// The section, or nothing when no result has a breakdown.
pub fn section(out: &mut String, c: &Comparison) {
    let per_trace: Vec<(usize, &String, Drives)> = c
        .traces
        .iter()
        .enumerate()
        .map(|(ti, name)| {
            let drives: Drives = (0..c.drives.len())
                .filter_map(|i| {
                    c.trace(i, name)
                        .and_then(|t| t.task.as_ref())
                        .and_then(|t| t.breakdown.as_ref())
                        .map(|b| (i, b))
                })
                .collect();
            (ti, name, drives)
        })
        .filter(|(_, _, d)| !d.is_empty())
        .collect();
    if per_trace.is_empty() {
        return;
    }
    out.push_str("<h2>Where the predicted task time goes</h2>\n<p class=\"note\">Per drive: think time (the task's own work between the I/Os it waited for), then the time waited on each class of I/O (operation, size, queue depth at issue, sequential or random) along the path of waits that set the prediction.</p>\n");
    for (ti, name, drives) in per_trace {
        let _ = writeln!(out, "<h3>{}</h3>", esc(name));
        stacked_bars(out, ti, name, &drives);
        if let Some(&(0, a)) = drives.first() {
            out.push_str("<ul class=\"note\">\n");
            for &(i, b) in drives.iter().skip(1) {
                let _ = writeln!(
                    out,
                    "<li>{}</li>",
                    esc(&Difference::between(a, b).sentence(&column_name(i)))
                );
            }
            out.push_str("</ul>\n");
        }
    }
}

/// The classes a trace's bars name, largest total wait first.
fn shown_classes(drives: &[(usize, &Breakdown)]) -> Vec<WaitClass> {
    let mut total: BTreeMap<WaitClass, f64> = BTreeMap::new();
    for (_, b) in drives {
        for w in &b.waits {
            *total.entry(w.class).or_default() += w.wait_s;
        }
    }
    let mut v: Vec<(WaitClass, f64)> = total.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.into_iter().take(SHOWN).map(|(c, _)| c).collect()
}

fn stacked_bars(out: &mut String, ti: usize, name: &str, drives: &[(usize, &Breakdown)]) {
    let classes = shown_classes(drives);
    let class_colour = |k: usize| colour(k + 1);
    // Each drive's segments: (part, colour, seconds).
    let rows: Vec<(usize, Segments)> = drives
        .iter()
        .map(|&(i, b)| {
            let mut segs = vec![("think".to_string(), THINK_COLOUR, b.think_s.max(0.0))];
            for (k, class) in classes.iter().enumerate() {
                let s: f64 = b
                    .waits
                    .iter()
                    .filter(|w| w.class == *class)
                    .map(|w| w.wait_s)
                    .sum();
                segs.push((class.label(), class_colour(k), s));
            }
            let other: f64 = b
                .waits
                .iter()
                .filter(|w| !classes.contains(&w.class))
                .map(|w| w.wait_s)
                .sum();
            segs.push(("other".to_string(), OTHER_COLOUR, other));
            (i, segs)
        })
        .collect();
    let axis = Axis::fit(
        rows.iter()
            .map(|(_, s)| s.iter().map(|x| x.2).sum::<f64>())
            .chain(std::iter::once(0.0)),
        false,
    );
    let (left, top, plot_w, row_h) = (60.0, 8.0, 780.0, 24.0);
    let plot_h = row_h * rows.len() as f64;
    let width = left + plot_w + 20.0;
    let height = top + plot_h + 40.0;
    let px = |v: f64| left + axis.fraction(v) * plot_w;
    let _ = writeln!(
        out,
        "<svg id=\"breakdown-{ti}\" class=\"chart breakdown\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"predicted task time of {} by part, per drive\">",
        esc(name)
    );
    for (f, label) in axis.ticks() {
        let x = left + f * plot_w;
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{:.1}\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            top + plot_h,
            top + plot_h + 14.0
        );
    }
    for (row, (i, segs)) in rows.iter().enumerate() {
        let y = top + row as f64 * row_h + 3.0;
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\"><tspan fill=\"{}\">&#9632;</tspan> {}</text>",
            left - 6.0,
            y + row_h / 2.0 + 1.0,
            colour(*i),
            column_name(*i)
        );
        let mut at = 0.0;
        for (part, fill, s) in segs {
            if *s <= 0.0 {
                continue;
            }
            let (x0, x1) = (px(at), px(at + s));
            at += s;
            let _ = writeln!(
                out,
                "<rect class=\"seg\" data-trace=\"{}\" data-drive=\"{i}\" data-part=\"{}\" data-s=\"{s:.6}\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{fill}\"><title>{}: {} {s:.3} s</title></rect>",
                esc(name),
                esc(part),
                (x1 - x0).max(0.0),
                row_h - 6.0,
                column_name(*i),
                esc(part)
            );
        }
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">predicted task time, s</text>\n</svg>",
        left + plot_w / 2.0,
        height - 6.0
    );
    legend(out, &classes);
}

/// The parts' colours.
fn legend(out: &mut String, classes: &[WaitClass]) {
    let class_colour = |k: usize| colour(k + 1);
    out.push_str("<p>");
    let _ = write!(
        out,
        "<span class=\"swatch\" style=\"background:{THINK_COLOUR}\"></span>think &nbsp; "
    );
    for (k, class) in classes.iter().enumerate() {
        let _ = write!(
            out,
            "<span class=\"swatch\" style=\"background:{}\"></span>{} &nbsp; ",
            class_colour(k),
            esc(&class.label())
        );
    }
    let _ = writeln!(
        out,
        "<span class=\"swatch\" style=\"background:{OTHER_COLOUR}\"></span>other classes</p>"
    );
}
