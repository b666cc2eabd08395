//! Where the predicted task time goes, as text: per trace after a replay,
//! and against the first column in a comparison.

use super::escape::escape_control as esc;
use crate::breakdown::{Breakdown, Difference};
use crate::compare::{column_name, Comparison};
use std::fmt::Write;

/// Classes named one by one; the rest are summed.
const SHOWN: usize = 4;

/// A class's I/O count: whole where it is, else to one decimal (a mean over
/// passes where the class was on the path in some passes only: 0.3, not 0).
fn io_count(ios: f64) -> String {
    if (ios - ios.round()).abs() < 1e-9 {
        format!("{ios:.0}")
    } else {
        format!("{ios:.1}")
    }
}

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
            ", {} {:.3} s ({} I/O{})",
            w.class.label(),
            w.wait_s,
            io_count(w.ios),
            if w.ios == 1.0 { "" } else { "s" }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breakdown::{ClassWaits, WaitClass, WaitOp};

    #[test]
    fn a_class_on_the_path_in_some_passes_only_shows_its_mean_count() {
        let class = |len| WaitClass::of(WaitOp::Read, len, 1, false);
        let one = Breakdown {
            version: crate::breakdown::BREAKDOWN_VERSION,
            model: "blocking".into(),
            think_s: 1.0,
            waits: vec![
                ClassWaits {
                    class: class(4096),
                    ios: 2.0,
                    wait_s: 0.2,
                },
                ClassWaits {
                    class: class(16384),
                    ios: 1.0,
                    wait_s: 0.1,
                },
            ],
        };
        let mut other = one.clone();
        other.waits.truncate(1);
        let mean = Breakdown::mean(&[&one, &other, &other]).expect("one model");
        let line = trace_line("t", &mean);
        assert!(line.contains("(2 I/Os)"), "{line}");
        assert!(line.contains("(0.3 I/Os)"), "{line}");
        assert!(trace_line("t", &one).contains("(1 I/O)"));
    }
}
