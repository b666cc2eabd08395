//! Whether a result's figures can be trusted, judged from the figures
//! themselves: a result file written before the `valid` key existed (or by
//! any other writer) says nothing of its own validity, yet its device errors,
//! skipped I/Os, interruption and issue lateness are all in it. Every reader
//! that ranks results (compare, the HTML report, the suite line) asks this
//! module, so a run whose I/Os failed never passes for a fast drive.

use crate::options::{ReplayOptions, TimingMode};
pub use crate::schema::{Problem, Problems, RunProblem, FAR_OFF_LATENESS_P50_US};
use crate::schema::{SuiteResult, TraceResult};

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

/// Share of a trace's sampled reads that may find no data as scoring
/// starts before reports say its read latencies are not a drive's in use.
/// Reads of files a task's own setup wrote and a drive restored since (a
/// copy of the files the previous copy made) found no data in 84 % of
/// cases on this project's study drive; a launch's reads of installed
/// files, in under 4 %.
pub const UNWRITTEN_READS_SHARE_FLAG: f64 = 0.10;

/// A caution about a trace's figures: more than
/// [`UNWRITTEN_READS_SHARE_FLAG`] of its sampled reads found no data when
/// scoring started (None otherwise, or when the result does not say).
pub fn unwritten_reads_caution(t: &TraceResult) -> Option<String> {
    let s = t.reads_found?;
    let empty = s.blocks.saturating_sub(s.with_data);
    (s.blocks > 0 && f64::from(empty) > UNWRITTEN_READS_SHARE_FLAG * f64::from(s.blocks)).then(|| {
        format!(
            "{empty} of {} sampled reads found no data when scoring started (blocks never written, trimmed or zeros): such reads can be answered without touching the medium, faster than on a drive in use (--precondition read-regions, the default, writes them first)",
            s.blocks
        )
    })
}

/// A caution about a trace's calibrated prediction: the replay ran at other
/// settings than the trace's calibration replays (queue depth, pacing, idle
/// policy, ...), so its difference from them, which moves the prediction,
/// holds the settings' effect as well as the drives'. None when they agree,
/// or when the trace does not record them.
pub fn calibration_caution(r: &SuiteResult, t: &TraceResult) -> Option<String> {
    let at = t.task.as_ref()?.calibrated_at.as_ref()?;
    let differ = crate::comparable::calibration_differences(r, at);
    (!differ.is_empty()).then(|| {
        let list: Vec<String> = differ
            .iter()
            .map(|(what, then, now)| format!("{what} {now} (calibrated at {then})"))
            .collect();
        format!(
            "its calibrated task time is set against replays at other settings: {}; the prediction holds their effect as well as the drive's",
            list.join(", ")
        )
    })
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

/// Which problems a judgement counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judging {
    /// As a replay writes its result: interruption is the caller's to mark,
    /// with its cause, and issue lateness is judged by readers only, so a
    /// loaded machine's replay still ends with its ordinary exit status.
    AtWrite,
    /// As every reader judges a result: everything its data shows, and
    /// what it recorded.
    Reading,
}

impl Judging {
    fn counts(self, p: &Problem) -> bool {
        self == Judging::Reading || !matches!(p, Problem::Interrupted | Problem::LateIssue { .. })
    }
}

// The writer's marking lives beside the judge, so the schema holds types only.
impl SuiteResult {
    /// Marks traces whose figures cannot be trusted (device errors, I/Os
    /// left out unasked), and the result with them, each with its reason:
    /// [`judge`] as the replay writes its result. A replay whose I/Os fail
    /// measures the failures, not the drive: its score must never pass for
    /// a real one.
    pub fn mark_validity(&mut self) {
        self.invalid_reasons.clear();
        apply_judgement(self, Judging::AtWrite);
    }
}

/// Marks a run that ended early in `trace` as not valid: the trace says
/// why (after any problem it had), and the result how much of the suite it
/// holds (`traces` in the suite).
pub fn mark_stopped(result: &mut SuiteResult, trace: &str, why: &str, traces: usize) {
    let why = Problem::Other(why.to_string());
    if let Some(t) = result.traces.iter_mut().rev().find(|t| t.name == trace) {
        t.valid = false;
        t.invalid_reason = Some(t.invalid_reason.take().unwrap_or_default().and(why.clone()));
    }
    result.invalid_reasons.push(RunProblem::Stopped {
        trace: trace.to_string(),
        why: Problems(vec![why]),
        replayed: result.traces.len(),
        traces,
    });
    result.valid = false;
}

/// The judgement of a whole result: valid or not, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub valid: bool,
    /// The result's reasons: those it recorded, then those found in its data.
    pub reasons: Vec<RunProblem>,
    /// Per trace (in the result's order): None when its figures hold.
    pub traces: Vec<Option<Problems>>,
}

/// Judges a result from its data and from what it recorded: a trace is not
/// valid when it was marked so or when [`trace_problems`] finds anything; the
/// result is not valid when it was marked so, was interrupted, or holds a
/// trace that is not. The one judge: replays mark their results with it
/// ([`SuiteResult::mark_validity`]) and every reader judges with it.
pub fn judge(r: &SuiteResult) -> Verdict {
    judge_as(r, Judging::Reading)
}

fn judge_as(r: &SuiteResult, judging: Judging) -> Verdict {
    let mut reasons = r.invalid_reasons.clone();
    let mut traces = Vec::with_capacity(r.traces.len());
    for t in &r.traces {
        if !t.valid {
            let why = t
                .invalid_reason
                .clone()
                .unwrap_or_else(|| Problems(vec![Problem::Other("marked not valid".into())]));
            // A trace the result already names keeps the result's words.
            if !reasons.iter().any(|p| p.trace() == Some(t.name.as_str())) {
                reasons.push(RunProblem::Trace {
                    trace: t.name.clone(),
                    problems: why.clone(),
                });
            }
            traces.push(Some(why));
            continue;
        }
        let problems: Vec<Problem> = trace_problems(t, r.mode(), &r.options)
            .into_iter()
            .filter(|p| judging.counts(p))
            .collect();
        if problems.is_empty() {
            traces.push(None);
            continue;
        }
        let why = Problems(problems);
        reasons.push(RunProblem::Trace {
            trace: t.name.clone(),
            problems: why.clone(),
        });
        traces.push(Some(why));
    }
    if judging == Judging::Reading {
        if r.interrupted && r.valid && !traces.iter().any(Option::is_some) {
            reasons.push(RunProblem::Interrupted);
        }
        if !r.valid && reasons.is_empty() {
            reasons.push(RunProblem::MarkedNotValid);
        }
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
    apply_judgement(r, Judging::Reading);
}

fn apply_judgement(r: &mut SuiteResult, judging: Judging) {
    let v = judge_as(r, judging);
    for (t, why) in r.traces.iter_mut().zip(v.traces) {
        if let Some(why) = why {
            t.valid = false;
            t.invalid_reason = Some(why);
        }
    }
    r.valid = v.valid;
    r.invalid_reasons = v.reasons;
}
