//! Whether a result's figures can be trusted, judged from the figures
//! themselves: a result file written before the `valid` key existed (or by
//! any other writer) says nothing of its own validity, yet its device errors,
//! skipped I/Os, interruption and issue lateness are all in it. Every reader
//! that ranks results (compare, the HTML report, the suite line) asks this
//! module, so a run whose I/Os failed never passes for a fast drive.

use crate::options::{ReplayOptions, TimingMode};
use crate::schema::{SuiteResult, TraceResult};

/// Realtime replay aims at an issue lateness p99 under 50 µs; a median of
/// 10 ms means the trace's timing was not kept (the closed-loop shift
/// already takes out waits for a slow drive, so this is the replayer's own
/// lateness). Medians of 1-2 ms occur on a machine whose CPUs are shared
/// with other work (tests running beside each other): those results carry
/// their CPU wait instead ([`cpu_wait_caution`]).
pub const FAR_OFF_LATENESS_P50_US: f64 = 10_000.0;

/// Share of a trace's I/Os that may be left out without being asked for
/// (discards on a file, write-zeroes, empty requests) before the replay no
/// longer stands for the trace.
pub const UNASKED_SKIPPED_SHARE: f64 = 0.01;

/// Share of a pass's playback its threads may have waited for a CPU before
/// reports say the machine's other load is in the figures (a caution, not
/// a verdict: on a shared machine every run waits a little).
pub const CPU_WAIT_SHARE_FLAG: f64 = 0.05;

/// A caution about a trace's figures: its replay waited for a CPU for more
/// than [`CPU_WAIT_SHARE_FLAG`] of its playback (None otherwise, or when the
/// result does not say).
pub fn cpu_wait_caution(t: &TraceResult) -> Option<String> {
    let share = t.fidelity.cpu_wait_share()?;
    (share > CPU_WAIT_SHARE_FLAG).then(|| {
        format!(
            "its replay waited {:.0} ms for a CPU ({:.0} % of the playback): the machine's other load is in these figures",
            t.fidelity.cpu_wait_s.unwrap_or(0.0) * 1e3,
            share * 100.0
        )
    })
}

/// Why one trace's figures cannot be trusted.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// I/Os the device failed, per operation (the warm-up's included).
    DeviceErrors {
        total: u64,
        per_op: Vec<(String, u64)>,
    },
    /// I/Os left out that the options did not ask to leave out.
    Skipped { skipped: u64, of: u64 },
    /// A pass, or the run, stopped before the trace's end.
    Interrupted,
    /// Realtime issue lateness far from the schedule.
    LateIssue { p50_us: f64 },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::DeviceErrors { total, per_op } => {
                let per_op: Vec<String> =
                    per_op.iter().map(|(op, n)| format!("{op}: {n}")).collect();
                write!(f, "{total} I/Os failed on the device ({})", per_op.join(", "))
            }
            Problem::Skipped { skipped, of } => write!(
                f,
                "{skipped} of {of} I/Os per pass were left out without being asked for"
            ),
            Problem::Interrupted => write!(f, "interrupted: a partial pass"),
            Problem::LateIssue { p50_us } => write!(
                f,
                "realtime issue lateness median {p50_us:.0} µs (over {FAR_OFF_LATENESS_P50_US:.0} µs): the trace's timing was not kept"
            ),
        }
    }
}

/// Everything wrong with one trace's figures, from its data alone.
pub fn trace_problems(t: &TraceResult, mode: TimingMode, options: &ReplayOptions) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut per_op: Vec<(String, u64)> = t
        .errors
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(op, n)| (op.clone(), *n))
        .collect();
    let mut total: u64 = per_op.iter().map(|(_, n)| n).sum();
    // Older writers summed errors over the scored passes only: a warm-up
    // whose I/Os failed counts too.
    if total == 0 {
        for p in t.warmup.iter().chain(&t.passes) {
            for (op, m) in &p.ops {
                if m.errors > 0 {
                    per_op.push((op.clone(), m.errors));
                    total += m.errors;
                }
            }
            if p.errors > 0 && p.ops.values().all(|m| m.errors == 0) {
                per_op.push(("all".into(), p.errors));
                total += p.errors;
            }
        }
    }
    if total > 0 {
        problems.push(Problem::DeviceErrors { total, per_op });
    }
    let s = &t.skipped;
    let mut unasked = s.discards + s.write_zeroes + s.empty;
    if !options.read_only {
        unasked += s.read_only;
    }
    if options.skip_ops.is_empty() {
        unasked += s.by_option;
    }
    let of = t.passes.first().map_or(t.ios, |p| p.ios) + s.total();
    if unasked > 0 && unasked as f64 > UNASKED_SKIPPED_SHARE * of as f64 {
        problems.push(Problem::Skipped {
            skipped: unasked,
            of,
        });
    }
    if t.interrupted || t.passes.iter().any(|p| p.interrupted) {
        problems.push(Problem::Interrupted);
    }
    let p50 = t.fidelity.lateness_us.p50;
    if mode == TimingMode::Realtime && !options.open_loop && p50 > FAR_OFF_LATENESS_P50_US {
        problems.push(Problem::LateIssue { p50_us: p50 });
    }
    problems
}

// The writer's marking lives beside the judge, so the schema holds types only.
impl SuiteResult {
    /// Marks traces whose figures cannot be trusted (device errors, I/Os
    /// left out unasked: [`crate::validity`]), and the result with them,
    /// each with its reason. A replay whose I/Os fail measures the failures,
    /// not the drive: its score must never pass for a real one.
    /// Interruption is the caller's to mark, with its cause; issue lateness
    /// is judged by readers only, so a loaded machine's replay still ends
    /// with its ordinary exit status.
    pub fn mark_validity(&mut self) {
        self.invalid_reasons.clear();
        for t in &mut self.traces {
            let problems: Vec<String> = trace_problems(t, self.options.mode, &self.options)
                .into_iter()
                .filter(|p| !matches!(p, Problem::Interrupted | Problem::LateIssue { .. }))
                .map(|p| p.to_string())
                .collect();
            if !problems.is_empty() {
                let reason = problems.join("; ");
                t.valid = false;
                self.invalid_reasons.push(format!("{}: {reason}", t.name));
                t.invalid_reason = Some(reason);
            }
        }
        self.valid = self.traces.iter().all(|t| t.valid);
    }
}

/// The judgement of a whole result: valid or not, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub valid: bool,
    /// The result's reasons: those it recorded, then those found in its data.
    pub reasons: Vec<String>,
    /// Per trace (in the result's order): None when its figures hold.
    pub traces: Vec<Option<String>>,
}

/// Judges a result from its data and from what it recorded: a trace is not
/// valid when it was marked so or when [`trace_problems`] finds anything; the
/// result is not valid when it was marked so, was interrupted, or holds a
/// trace that is not.
pub fn judge(r: &SuiteResult) -> Verdict {
    let mut reasons = r.invalid_reasons.clone();
    let mut traces = Vec::with_capacity(r.traces.len());
    for t in &r.traces {
        if !t.valid {
            let why = t
                .invalid_reason
                .clone()
                .unwrap_or_else(|| "marked not valid".to_string());
            if !reasons
                .iter()
                .any(|r| r.starts_with(&format!("{}: ", t.name)))
            {
                reasons.push(format!("{}: {why}", t.name));
            }
            traces.push(Some(why));
            continue;
        }
        let problems = trace_problems(t, r.mode(), &r.options);
        if problems.is_empty() {
            traces.push(None);
            continue;
        }
        let why = problems
            .iter()
            .map(Problem::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        reasons.push(format!("{}: {why}", t.name));
        traces.push(Some(why));
    }
    if r.interrupted && r.valid && !traces.iter().any(Option::is_some) {
        reasons.push("the run was interrupted: a partial result".to_string());
    }
    if !r.valid && reasons.is_empty() {
        reasons.push("marked not valid".to_string());
    }
    Verdict {
        valid: reasons.is_empty(),
        reasons,
        traces,
    }
}

/// Writes the [`judge`]ment into the result: `valid`, the reasons, and each
/// trace's mark. Idempotent: a result judged before keeps its reasons.
pub fn apply(r: &mut SuiteResult) {
    let v = judge(r);
    for (t, why) in r.traces.iter_mut().zip(v.traces) {
        if let Some(why) = why {
            t.valid = false;
            t.invalid_reason = Some(why);
        }
    }
    r.valid = v.valid;
    r.invalid_reasons = v.reasons;
}
