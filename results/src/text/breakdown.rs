//! Where the predicted task time goes, as text: per trace after a replay,
//! and against the first column in a comparison.

use super::escape_control as esc;
use crate::breakdown::{Breakdown, Difference};
use crate::compare::{column_name, Comparison};
use std::fmt::Write;

/// Classes named one by one; the rest are summed.
const SHOWN: usize = 4;

/// `NAME: where the time goes: think 1.203 s, 4 KiB random reads at QD1
/// 0.262 s (131 I/Os), ...` (the waits on the path that set the prediction).
pub fn trace_line(name: &str, b: &Breakdown) -> String {
    let mut s = format!(
        "{name}: where the time goes ({} path): think {:.3} s",
        b.model, b.think_s
    );
    for w in b.waits.iter().take(SHOWN) {
        let _ = write!(
            s,
            ", {} {:.3} s ({:.0} I/O{})",
            w.class.label(),
            w.wait_s,
            w.ios,
            if w.ios.round() == 1.0 { "" } else { "s" }
        );
    }
    if b.waits.len() > SHOWN {
        let rest: f64 = b.waits[SHOWN..].iter().map(|w| w.wait_s).sum();
        let _ = write!(s, ", {} other classes {rest:.3} s", b.waits.len() - SHOWN);
    }
    s.push('\n');
    s
}

/// For each trace and each column after the first that both have a
/// breakdown: how much longer or shorter the task is predicted there and
/// which classes account for it. Empty when no pair has one.
pub fn comparison(c: &Comparison) -> String {
    let mut out = String::new();
    for name in &c.traces {
        let Some(a) = c
            .trace(0, name)
            .and_then(|t| t.task.as_ref())
            .and_then(|t| t.breakdown.as_ref())
        else {
            continue;
        };
        for i in 1..c.drives.len() {
            let Some(b) = c
                .trace(i, name)
                .and_then(|t| t.task.as_ref())
                .and_then(|t| t.breakdown.as_ref())
            else {
                continue;
            };
            if out.is_empty() {
                let _ = writeln!(
                    out,
                    "\nwhere the predicted task time goes, against {}:",
                    column_name(0)
                );
            }
            let _ = writeln!(
                out,
                "  {}: {}",
                esc(name),
                Difference::between(a, b).sentence(&column_name(i))
            );
        }
    }
    out
}
