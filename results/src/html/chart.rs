//! The x/y line chart (latency CDFs, timelines).

use super::axis::Axis;
use super::page::{esc, points_attr};
use std::fmt::Write;

/// One line of a line chart.
pub struct Line<'a> {
    pub class: &'a str,
    /// Extra attributes, already escaped (`data-…="…"`).
    pub attrs: String,
    pub colour: &'a str,
    pub dashed: bool,
    /// (x, y) in data units.
    pub points: Vec<(f64, f64)>,
}

/// What an axis of a line chart shows.
pub struct AxisSpec<'a> {
    pub title: &'a str,
    /// Decades (log10 of positive values) instead of a linear scale.
    pub log: bool,
}

/// An x/y line chart; non-finite points are left out.
pub fn line_chart(out: &mut String, id: &str, x_spec: AxisSpec, y_spec: AxisSpec, lines: &[Line]) {
    let (left, top, plot_w, plot_h) = (70.0, 10.0, 800.0, 220.0);
    let width = left + plot_w + 20.0;
    let height = top + plot_h + 45.0;
    let finite = || {
        lines
            .iter()
            .flat_map(|l| l.points.iter().copied())
            .filter(|(a, b)| a.is_finite() && b.is_finite())
    };
    let x_axis = Axis::fit(finite().map(|p| p.0), x_spec.log);
    let y_axis = Axis::fit(finite().map(|p| p.1), y_spec.log);
    let px = |f: f64| left + f * plot_w;
    let py = |f: f64| top + plot_h - f * plot_h;
    let _ = writeln!(
        out,
        "<svg id=\"{}\" class=\"chart lines\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"{} by {}\">",
        esc(id),
        esc(y_spec.title),
        esc(x_spec.title)
    );
    for (f, label) in x_axis.ticks() {
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{0:.1}\" y1=\"{top}\" x2=\"{0:.1}\" y2=\"{1:.1}\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{3}</text>",
            px(f),
            top + plot_h,
            top + plot_h + 14.0,
            label
        );
    }
    for (f, label) in y_axis.ticks() {
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\"/><text x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\">{4}</text>",
            py(f),
            left + plot_w,
            left - 6.0,
            py(f) + 4.0,
            label
        );
    }
    let _ = writeln!(
        out,
        "<line class=\"axis\" x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\"/><line class=\"axis\" x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{0:.1}\"/>",
        top + plot_h,
        left + plot_w
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text><text transform=\"translate(14,{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        left + plot_w / 2.0,
        height - 6.0,
        esc(x_spec.title),
        top + plot_h / 2.0,
        esc(y_spec.title)
    );
    for l in lines {
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .filter(|(a, b)| a.is_finite() && b.is_finite())
            .map(|&(a, b)| (px(x_axis.fraction(a)), py(y_axis.fraction(b))))
            .collect();
        let _ = writeln!(
            out,
            "<polyline class=\"{}\" {} data-points=\"{}\" stroke=\"{}\"{} points=\"{}\"/>",
            l.class,
            l.attrs,
            pts.len(),
            l.colour,
            if l.dashed {
                " stroke-dasharray=\"5,3\""
            } else {
                ""
            },
            points_attr(&pts)
        );
    }
    out.push_str("</svg>\n");
}
