//! Why figures cannot be trusted, typed: a trace's [`Problem`]s and a
//! result's [`RunProblem`]s. The file holds them as the sentences their
//! `Display` writes (`invalid_reason`, `invalid_reasons`); reading a file
//! parses each sentence back into its variant, and text of any other
//! writer is kept as [`Problem::Other`] / [`RunProblem::Other`], so every
//! string reads and writes back byte for byte.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Realtime replay's issue lateness median beyond which a trace's timing
/// was not kept, µs. Replay aims at a p99 under 50 µs; a median of 10 ms is
/// the replayer's own lateness (the closed-loop shift already takes out
/// waits for a slow drive). Medians of 1-2 ms occur on a machine whose CPUs
/// are shared with other work: those results carry their CPU wait instead
/// (`crate::validity::cpu_wait_caution`).
pub const FAR_OFF_LATENESS_P50_US: f64 = 10_000.0;

/// One reason a trace's figures cannot be trusted.
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
    /// Realtime issue lateness far from the schedule (the median, µs).
    LateIssue { p50_us: f64 },
    /// In the words of whoever found it: the replay's own cause for a stop
    /// (a signal, a device that stopped answering), or a file's own text.
    Other(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
            Problem::Interrupted => f.write_str(INTERRUPTED),
            Problem::LateIssue { p50_us } => write!(
                f,
                "realtime issue lateness median {p50_us:.0} µs (over {FAR_OFF_LATENESS_P50_US:.0} µs): the trace's timing was not kept"
            ),
            Problem::Other(text) => f.write_str(text),
        }
    }
}

const INTERRUPTED: &str = "interrupted: a partial pass";

/// The whole of `s` is `head`, a number, then `tail`.
fn number_between<T: FromStr>(s: &str, head: &str, tail: &str) -> Option<T> {
    s.strip_prefix(head)?.strip_suffix(tail)?.parse().ok()
}

impl Problem {
    /// The variant whose sentence `s` is, or [`Problem::Other`].
    fn parse(s: &str) -> Problem {
        Problem::parse_known(s)
            .filter(|p| p.to_string() == s)
            .unwrap_or_else(|| Problem::Other(s.to_string()))
    }

    fn parse_known(s: &str) -> Option<Problem> {
        if s == INTERRUPTED {
            return Some(Problem::Interrupted);
        }
        if let Some((total, rest)) = s.split_once(" I/Os failed on the device (") {
            let per_op = rest.strip_suffix(')')?;
            let per_op = per_op
                .split(", ")
                .map(|p| {
                    let (op, n) = p.rsplit_once(": ")?;
                    Some((op.to_string(), n.parse().ok()?))
                })
                .collect::<Option<Vec<_>>>()?;
            return Some(Problem::DeviceErrors {
                total: total.parse().ok()?,
                per_op,
            });
        }
        if let Some((skipped, rest)) = s.split_once(" of ") {
            let of = number_between(
                rest,
                "",
                " I/Os per pass were left out without being asked for",
            )?;
            return Some(Problem::Skipped {
                skipped: skipped.parse().ok()?,
                of,
            });
        }
        let tail =
            format!(" µs (over {FAR_OFF_LATENESS_P50_US:.0} µs): the trace's timing was not kept");
        number_between(s, "realtime issue lateness median ", &tail)
            .map(|p50_us| Problem::LateIssue { p50_us })
    }
}

/// A trace's problems, as its `invalid_reason` holds them (`; ` between).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Problems(pub Vec<Problem>);

impl Problems {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// These problems, then `more`.
    pub fn and(mut self, more: Problem) -> Problems {
        self.0.push(more);
        self
    }
}

impl From<Vec<Problem>> for Problems {
    fn from(v: Vec<Problem>) -> Problems {
        Problems(v)
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(SEPARATOR)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

const SEPARATOR: &str = "; ";

impl FromStr for Problems {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Problems, Self::Err> {
        if s.is_empty() {
            return Ok(Problems(vec![Problem::Other(String::new())]));
        }
        Ok(Problems(s.split(SEPARATOR).map(Problem::parse).collect()))
    }
}

/// One reason a whole result is not valid, as its `invalid_reasons` holds
/// it.
#[derive(Debug, Clone, PartialEq)]
pub enum RunProblem {
    /// A trace's problems: `TRACE: PROBLEMS`.
    Trace { trace: String, problems: Problems },
    /// The run stopped in `trace` (why), after `replayed` of `traces`
    /// traces: `TRACE: WHY; a partial result (N of M traces replayed)`.
    Stopped {
        trace: String,
        why: Problems,
        replayed: usize,
        traces: usize,
    },
    /// A fleet rank was ready to issue `late_s` after the fleet's shared
    /// start (`--start-at`).
    LateStart { rank: u32, late_s: f64 },
    /// Interrupted, with no trace to say where.
    Interrupted,
    /// Marked not valid, saying no more.
    MarkedNotValid,
    /// Any other sentence (a run stopped before its first trace, a fleet
    /// rank's late start, a file's own text).
    Other(String),
}

impl RunProblem {
    /// The trace this problem is about, when it is about one.
    pub fn trace(&self) -> Option<&str> {
        match self {
            RunProblem::Trace { trace, .. } | RunProblem::Stopped { trace, .. } => Some(trace),
            _ => None,
        }
    }

    /// The variant whose sentence `s` is, or [`RunProblem::Other`]. A trace
    /// name is what comes before the first `: `.
    fn parse(s: &str) -> RunProblem {
        let known = match s {
            RUN_INTERRUPTED => Some(RunProblem::Interrupted),
            MARKED_NOT_VALID => Some(RunProblem::MarkedNotValid),
            _ => RunProblem::parse_late_start(s).or_else(|| RunProblem::parse_trace(s)),
        };
        known
            .filter(|p| p.to_string() == s)
            .unwrap_or_else(|| RunProblem::Other(s.to_string()))
    }

    fn parse_late_start(s: &str) -> Option<RunProblem> {
        let (rank, rest) = s.strip_prefix("rank ")?.split_once(": ready to issue ")?;
        Some(RunProblem::LateStart {
            rank: rank.parse().ok()?,
            late_s: number_between(rest, "", LATE_START_TAIL)?,
        })
    }

    fn parse_trace(s: &str) -> Option<RunProblem> {
        let (trace, rest) = s.split_once(": ")?;
        let trace = trace.to_string();
        if let Some((why, counts)) = rest.rsplit_once("; a partial result (") {
            let (replayed, traces) = counts
                .strip_suffix(" traces replayed)")?
                .split_once(" of ")?;
            return Some(RunProblem::Stopped {
                trace,
                why: why.parse().ok()?,
                replayed: replayed.parse().ok()?,
                traces: traces.parse().ok()?,
            });
        }
        Some(RunProblem::Trace {
            trace,
            problems: rest.parse().ok()?,
        })
    }
}

impl FromStr for RunProblem {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<RunProblem, Self::Err> {
        Ok(RunProblem::parse(s))
    }
}

const LATE_START_TAIL: &str =
    " s after --start-at; its schedule started late (choose a later --start-at)";
const RUN_INTERRUPTED: &str = "the run was interrupted: a partial result";
const MARKED_NOT_VALID: &str = "marked not valid";

impl fmt::Display for RunProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunProblem::Trace { trace, problems } => write!(f, "{trace}: {problems}"),
            RunProblem::Stopped {
                trace,
                why,
                replayed,
                traces,
            } => write!(
                f,
                "{trace}: {why}; a partial result ({replayed} of {traces} traces replayed)"
            ),
            RunProblem::LateStart { rank, late_s } => {
                write!(
                    f,
                    "rank {rank}: ready to issue {late_s:.3}{LATE_START_TAIL}"
                )
            }
            RunProblem::Interrupted => f.write_str(RUN_INTERRUPTED),
            RunProblem::MarkedNotValid => f.write_str(MARKED_NOT_VALID),
            RunProblem::Other(text) => f.write_str(text),
        }
    }
}

/// The sentences of a result's problems, `; ` between (as reports print
/// them).
pub fn sentences(problems: &[RunProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(SEPARATOR)
}

macro_rules! as_sentence {
    ($t:ty, $parse:expr) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                let text = String::deserialize(d)?;
                Ok($parse(&text))
            }
        }
    };
}

as_sentence!(Problem, Problem::parse);
as_sentence!(Problems, |s: &str| s
    .parse::<Problems>()
    .unwrap_or_default());
as_sentence!(RunProblem, RunProblem::parse);

#[cfg(test)]
mod tests;
