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
    let mut out: Vec<_> = sa
        .into_iter()
        .zip(sb)
        .filter(|(x, y)| x.1 != y.1)
        .map(|(x, y)| (x.0, x.1, y.1))
        .collect();
    out.extend(cache_flags_difference(a, b));
    out
}

/// The settings of `r` that differ from those a trace's calibration replays
/// ran at (`calibrated_at`, as [`settings`] named them), as (what,
/// calibration's, this replay's). Left out: the idle cap (a suite file's
/// 1 s shortens the playback, while the predicted task time keeps the
/// trace's idle whole), the mapping (a calibration is made at `identity` on
/// the capture drive, a user replays anywhere at `compact`, both keeping
/// the trace's order and locality) and what the target decides (direct
/// I/O, the io worker CPU): the drives' difference is what a prediction
/// measures.
pub fn calibration_differences(
    r: &SuiteResult,
    calibrated_at: &std::collections::BTreeMap<String, String>,
) -> Vec<(&'static str, String, String)> {
    const NOT_COMPARED: [&str; 4] = ["idle cap", "mapping", "direct I/O", "io worker cpu"];
    settings(r)
        .into_iter()
        .filter(|(what, _)| !NOT_COMPARED.contains(what))
        .filter_map(|(what, value)| {
            let then = calibrated_at.get(what)?;
            (*then != value).then(|| (what, then.clone(), value))
        })
        .collect()
}

/// What a trace's FUA and preflush writes were replayed as.
const CACHE_FLAGS: &str = "FUA and preflush writes";

/// A result from before the replay honoured FUA and preflush replayed such
/// writes as plain writes, faster on a drive with a volatile cache. It
/// cannot say whether its traces had any; a result of the same trace from
/// after can, and where it counts some the two are not compared.
fn cache_flags_difference(
    a: &SuiteResult,
    b: &SuiteResult,
) -> Option<(&'static str, String, String)> {
    let said = |n: Option<u64>| match n {
        Some(n) => format!("honoured ({n} per pass)"),
        None => "replayed as plain writes".to_string(),
    };
    a.traces.iter().find_map(|x| {
        let y = b.traces.iter().find(|y| y.name == x.name)?;
        match (x.cache_flag_writes, y.cache_flag_writes) {
            (Some(n), None) | (None, Some(n)) if n > 0 => Some((
                CACHE_FLAGS,
                format!("{} in {}", said(x.cache_flag_writes), x.name),
                format!("{} in {}", said(y.cache_flag_writes), y.name),
            )),
            _ => None,
        }
    })
}

/// Whether two results may be ranked together: the same trace set and the
/// same [`settings`].
pub fn comparable(a: &SuiteResult, b: &SuiteResult) -> bool {
    a.trace_set_hash() == b.trace_set_hash() && differences(a, b).is_empty()
}

/// The settings as people read them, one line: `realtime mode, time scale
/// 1, idle cap 1000 ms, queue depth 32, ...`.
pub fn describe(r: &SuiteResult) -> String {
    let mut parts: Vec<String> = settings(r)
        .into_iter()
        .map(|(what, v)| match what {
            "mode" => format!("{v} mode"),
            _ => format!("{what} {v}"),
        })
        .collect();
    // Said only where a trace has such writes: results from before cannot
    // tell, and a board of them is kept apart by `comparable`.
    if r.traces.iter().any(|t| t.cache_flag_writes > Some(0)) {
        parts.push(format!("{CACHE_FLAGS} honoured"));
    }
    parts.join(", ")
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

    #[test]
    fn older_results_stand_apart_where_a_trace_has_fua_or_preflush_writes() {
        let text = include_str!("../tests/fixtures/suite-a.json");
        let old: SuiteResult = serde_json::from_str(text).unwrap();
        assert!(old.traces.iter().all(|t| t.cache_flag_writes.is_none()));
        let mut none = old.clone();
        for t in &mut none.traces {
            t.cache_flag_writes = Some(0);
        }
        // Traces without such writes replay the same either way.
        assert!(comparable(&old, &none));
        assert!(!describe(&none).contains(CACHE_FLAGS));
        let mut some = none.clone();
        some.traces[0].cache_flag_writes = Some(12);
        let name = some.traces[0].name.clone();
        assert!(!comparable(&old, &some));
        assert!(!comparable(&some, &old));
        assert_eq!(
            differences(&old, &some),
            vec![(
                CACHE_FLAGS,
                format!("replayed as plain writes in {name}"),
                format!("honoured (12 per pass) in {name}")
            )]
        );
        // Two results that both honoured them compare.
        assert!(comparable(&some, &some.clone()));
        assert!(describe(&some).ends_with("FUA and preflush writes honoured"));
    }
}
