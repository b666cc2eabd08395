//! The one comparability rule: which settings change a result's figures,
//! so that results differing in any of them are never ranked side by side.
//! `compare` and `results compare` flag such columns; the leaderboard puts
//! them on separate boards, each naming its settings.

use crate::options::TimingMode;
use crate::schema::{IoPath, SuiteResult};

/// The settings that change the figures, as (what, value), in a fixed
/// order: mode, time scale, idle cap, queue depth, open loop, pacing, read-only,
/// mapping, direct I/O, CPU idle policy, and the io worker CPU where
/// requests run on io-wq.
pub fn settings(r: &SuiteResult) -> Vec<(&'static str, String)> {
    let o = &r.options;
    let cap = o
        .idle_cap
        .map_or("none".to_string(), |n| format!("{} ms", n.0 as f64 / 1e6));
    let mut out = vec![
        ("mode", r.mode().to_string()),
        ("time scale", format!("{}", o.time_scale)),
        ("idle cap", cap),
        ("queue depth", o.queue_depth.to_string()),
        ("open loop", o.open_loop.to_string()),
        ("pacing", pacing(r).to_string()),
        ("read-only", o.read_only.to_string()),
        ("mapping", o.mapping.name().to_string()),
        ("direct I/O", r.target.direct_io.to_string()),
        ("cpu idle", o.cpu_idle.name().to_string()),
    ];
    // Only where requests run on io-wq does the workers' CPU change figures.
    if r.target.io_path == Some(IoPath::IoWq) {
        out.push((
            "io worker cpu",
            format!("{:?}", o.io_worker_cpu).to_lowercase(),
        ));
    }
    out
}

/// The pacing that applied: only a realtime closed loop has one.
fn pacing(r: &SuiteResult) -> &'static str {
    if r.mode() == TimingMode::Realtime && !r.options.open_loop {
        r.options.pacing.name()
    } else {
        "none"
    }
}

/// The settings that differ, as (what, first's, other's).
pub fn differences(a: &SuiteResult, b: &SuiteResult) -> Vec<(&'static str, String, String)> {
    let (mut sa, mut sb) = (settings(a), settings(b));
    // The io worker's CPU counts when either ran on io-wq.
    let io_wq = |r: &SuiteResult| r.target.io_path == Some(IoPath::IoWq);
    if io_wq(a) != io_wq(b) {
        let worker = |r: &SuiteResult| {
            (
                "io worker cpu",
                format!("{:?}", r.options.io_worker_cpu).to_lowercase(),
            )
        };
        if !io_wq(a) {
            sa.push(worker(a));
        } else {
            sb.push(worker(b));
        }
    }
    sa.into_iter()
        .zip(sb)
        .filter(|(x, y)| x.1 != y.1)
        .map(|(x, y)| (x.0, x.1, y.1))
        .collect()
}

/// Whether two results may be ranked together: the same trace set and the
/// same [`settings`].
pub fn comparable(a: &SuiteResult, b: &SuiteResult) -> bool {
    a.trace_set_hash() == b.trace_set_hash() && differences(a, b).is_empty()
}

/// The settings as people read them, one line: `realtime mode, time scale
/// 1, idle cap 1000 ms, queue depth 32, ...`.
pub fn describe(r: &SuiteResult) -> String {
    settings(r)
        .into_iter()
        .map(|(what, v)| match what {
            "mode" => format!("{v} mode"),
            _ => format!("{what} {v}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Pacing;

    #[test]
    fn results_differing_only_in_a_setting_are_not_comparable() {
        let text = include_str!("../tests/fixtures/suite-a.json");
        let a: SuiteResult = serde_json::from_str(text).unwrap();
        assert!(comparable(&a, &a.clone()));
        let mut b = a.clone();
        b.options.idle_cap = Some(trace_format::Nanos(10_000_000));
        let mut c = a.clone();
        c.options.idle_cap = Some(trace_format::Nanos(1_000_000_000));
        assert!(!comparable(&b, &c));
        assert_eq!(
            differences(&b, &c),
            vec![("idle cap", "10 ms".to_string(), "1000 ms".to_string())]
        );
        let mut d = a.clone();
        d.options.queue_depth += 1;
        assert!(!comparable(&a, &d));
        // Pacing counts where it applies: in a realtime closed loop.
        let mut think = a.clone();
        think.options.mode = TimingMode::Realtime;
        think.options.open_loop = false;
        think.options.pacing = Pacing::Think;
        let mut trace = think.clone();
        trace.options.pacing = Pacing::Trace;
        assert_eq!(
            differences(&think, &trace),
            vec![("pacing", "think".to_string(), "trace".to_string())]
        );
        think.options.mode = TimingMode::Compressed;
        trace.options.mode = TimingMode::Compressed;
        assert!(comparable(&think, &trace), "compressed mode has no pacing");
        assert!(
            describe(&c).contains("idle cap 1000 ms"),
            "{}",
            describe(&c)
        );
    }
}
