//! Calibrating a trace on its capture drive (`tracemark calibrate`): the
//! task time a replay there predicted goes into the trace's task section,
//! and every later replay's predicted task time is set against it (see
//! [`crate::prediction`]). The capture's latencies are those of one traced
//! run; a replay measures the same drive's latencies its own way, and only a
//! replay set against a replay leaves the drives' difference alone.

use results::options::PreconditionPolicy;
use results::schema::{SuiteResult, TraceResult};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use trace_format::RecordChecksum;
use trace_format::{
    CalibrationReplays, DependencyModel, ModelTimes, Nanos, TraceFile, TraceWriter,
};

/// What went wrong, for callers that act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CalibrationProblem {
    /// The result holds no replay of this trace (no trace with its identity).
    NotThisTrace,
    /// The result's replay of the trace predicted no task time (not
    /// realtime, or a trace without original completions).
    NoPrediction,
    /// The result's replay of the trace is not valid (errors, skipped I/O,
    /// interrupted): it measured something else than the drive.
    NotValid,
    /// The result's replay of the trace waited for a CPU for more than
    /// [`results::validity::CPU_WAIT_SHARE_FLAG`] of its playback: the
    /// machine's other load is in its prediction, and a calibration carries
    /// it into every later prediction of the trace.
    CpuWait,
    /// More than [`results::validity::UNWRITTEN_READS_SHARE_FLAG`] of the
    /// replay's sampled reads found no data: they were answered without
    /// touching the medium, and a user's replay (preconditioned by default)
    /// reads data there, so the calibration would move every prediction.
    /// Also a replay at `--precondition skip`, which samples nothing.
    UnwrittenReads,
    /// The replays ran at different settings (queue depth, pacing, idle
    /// policy, ...): their median mixes the settings' effects.
    MixedSettings,
}

/// Which doubtful calibration replays are taken anyway. The default
/// refuses both: a loaded calibration replay moves every later prediction
/// (one made at load 8-13 predicted 2.5x a task's untraced time), and so
/// does one whose reads found no data (a copy's replay on its capture
/// drive, reading files its task's setup had written and a restore had
/// removed, predicted 0.45 s for a task of 0.55 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Accept {
    /// Take a replay that waited for a CPU (a machine that is never quiet).
    pub cpu_wait: bool,
    /// Take a replay whose reads found no data (reads of a drive that is
    /// never written before use).
    pub unwritten_reads: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    #[error("{trace}: {source}")]
    Trace {
        trace: PathBuf,
        #[source]
        source: trace_format::FormatError,
    },
    #[error("{result}: {reason}")]
    Result {
        result: PathBuf,
        kind: CalibrationProblem,
        reason: String,
    },
    #[error("{path}: cannot write the calibrated trace: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no result to calibrate from")]
    NoReplay,
    #[error(transparent)]
    Output(#[from] outfile::OutputError),
}

impl CalibrationError {
    pub fn problem(&self) -> Option<CalibrationProblem> {
        match self {
            CalibrationError::Result { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// What `calibrate` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The trace's name in the result.
    pub name: String,
    /// How many replays the calibration is the median of.
    pub replays: usize,
    /// The capture drive's predictions now in the trace.
    pub capture_drive: ModelTimes,
    /// The lowest and highest of the replays' predictions (primary model),
    /// where there are several: how far the capture drive's draws lie
    /// apart, which every later prediction of the trace carries.
    pub range: Option<(Nanos, Nanos)>,
    /// The untraced time the predictions start from (when the trace has
    /// one).
    pub untraced: Option<Nanos>,
    /// The trace held an earlier calibration, now replaced.
    pub replaced: bool,
}

/// The replay of the trace whose records have `checksum` in `result`.
fn replay_of<'a>(
    result: &'a SuiteResult,
    records: u64,
    checksum: &str,
    result_path: &Path,
    accept: Accept,
) -> Result<&'a TraceResult, CalibrationError> {
    let refuse = |kind, reason: String| CalibrationError::Result {
        result: result_path.to_path_buf(),
        kind,
        reason,
    };
    let Some(index) = result.traces.iter().position(|t| {
        t.trace_id
            .as_ref()
            .is_some_and(|id| id.checksum == checksum && id.records == records)
    }) else {
        let names: Vec<&str> = result.traces.iter().map(|t| t.name.as_str()).collect();
        return Err(refuse(
            CalibrationProblem::NotThisTrace,
            format!(
                "holds no replay of this trace (no trace with its {records} records and checksum {checksum}; it replayed {})",
                if names.is_empty() { "nothing".to_string() } else { names.join(", ") }
            ),
        ));
    };
    let t = &result.traces[index];
    let verdict = results::validity::judge(result);
    if let Some(Some(why)) = verdict.traces.get(index) {
        return Err(refuse(
            CalibrationProblem::NotValid,
            format!(
                "its replay of {} is not valid ({why}): replay it again",
                t.name
            ),
        ));
    }
    if t.task.is_none() {
        return Err(refuse(
            CalibrationProblem::NoPrediction,
            format!(
                "its replay of {} predicted no task time (a realtime replay of a trace with original completions does)",
                t.name
            ),
        ));
    }
    if let (false, Some(why)) = (accept.cpu_wait, results::validity::cpu_wait_caution(t)) {
        return Err(refuse(
            CalibrationProblem::CpuWait,
            format!(
                "{why}; a calibration carries that into every later prediction of {}: replay it again on a quiet machine, or pass --accept-cpu-wait",
                t.name
            ),
        ));
    }
    if let (false, Some(why)) = (
        accept.unwritten_reads,
        results::validity::unwritten_reads_caution(t),
    ) {
        return Err(refuse(
            CalibrationProblem::UnwrittenReads,
            format!(
                "its replay of {}: {why}; a calibration carries that into every later prediction: replay it on a copy of the drive with its read regions preconditioned, or pass --accept-unwritten-reads",
                t.name
            ),
        ));
    }
    // At `skip` nothing is sampled, so the check above cannot see holes.
    if !accept.unwritten_reads
        && result.options.precondition == PreconditionPolicy::Skip
        && t.read_bytes > 0
    {
        return Err(refuse(
            CalibrationProblem::UnwrittenReads,
            format!(
                "its replay of {} ran at --precondition skip, which does not look whether its reads found data; a calibration carries what they found into every later prediction: replay it with its read regions preconditioned (the default), or pass --accept-unwritten-reads",
                t.name
            ),
        ));
    }
    Ok(t)
}

/// The capture drive's uncalibrated prediction per model: the result's
/// seconds per model name, read back through the one spelling of the names.
fn capture_drive_prediction(t: &TraceResult) -> ModelTimes {
    let Some(task) = &t.task else {
        return ModelTimes::default();
    };
    // A replay of a trace that was calibrated before: its uncalibrated
    // figures are the ones set against the capture's latencies. Either way
    // the model's own figures, not the CPU floor that held them up.
    let models = task
        .uncalibrated
        .as_ref()
        .or(task.unfloored.as_ref())
        .unwrap_or(&task.models);
    ModelTimes::from_fn(|m| {
        models
            .get(m.name())
            .filter(|s| s.is_finite() && **s >= 0.0)
            .map(|s| Nanos::from_secs_f64(*s))
    })
}

/// Per model, the median of several calibration replays' predictions: one
/// replay carries its own draw of the drive's latency (on a loop over a
/// file of a virtual disk, replays minutes apart predicted 10-17 % apart).
fn median(all: &[ModelTimes]) -> ModelTimes {
    ModelTimes::from_fn(|m| {
        let mut v: Vec<u64> = all.iter().filter_map(|t| t.get(m)).map(|n| n.0).collect();
        v.sort_unstable();
        let k = v.len();
        match k {
            0 => None,
            _ if k % 2 == 1 => Some(Nanos(v[k / 2])),
            _ => Some(Nanos(v[k / 2 - 1].midpoint(v[k / 2]))),
        }
    })
}

/// The lowest and highest of `model`'s predictions, where two or more have
/// one.
fn range(all: &[ModelTimes], model: DependencyModel) -> Option<(Nanos, Nanos)> {
    let v: Vec<Nanos> = all.iter().filter_map(|t| t.get(model)).collect();
    let (lo, hi) = (v.iter().min()?, v.iter().max()?);
    (v.len() > 1).then_some((*lo, *hi))
}

/// Writes `trace` to `out` (which may be `trace` itself) with the task time
/// that `results`, replays of it on its capture drive (each with the path
/// it was read from), predicted: the median per model where there are
/// several. Records, header and every other note are kept.
pub fn calibrate(
    trace: &Path,
    results: &[(&SuiteResult, &Path)],
    out: &Path,
    accept: Accept,
) -> Result<Calibration, CalibrationError> {
    let format_error = |source| CalibrationError::Trace {
        trace: trace.to_path_buf(),
        source,
    };
    // The output may be the trace itself (calibrated in place), never the
    // result it is calibrated from; checked before any work.
    outfile::refuse_inputs(out, results.iter().map(|(_, p)| p), None)?;
    // In place, the trace's own records and notes are written back: the
    // file is the user's and stays theirs. Elsewhere an existing file must
    // be one tracemark may replace.
    let replace = if outfile::is_input(out, trace) {
        outfile::Replace::Always
    } else {
        outfile::Replace::IfOurs
    };
    outfile::check_with(out, replace)?;
    let file = TraceFile::open(trace).map_err(format_error)?;
    let mut sum = RecordChecksum::default();
    for r in file.records() {
        sum.add(&r.map_err(format_error)?);
    }
    let mut replays = Vec::with_capacity(results.len());
    for (result, path) in results {
        replays.push(replay_of(
            result,
            file.summary().ios,
            &sum.hex(),
            path,
            accept,
        )?);
    }
    let Some(first) = replays.first() else {
        return Err(CalibrationError::NoReplay);
    };
    let name = first.name.clone();
    // Every replay at the first's settings, which the trace keeps: a later
    // replay at others is told its difference holds theirs too.
    let settings = results::comparable::settings(results[0].0);
    for (result, path) in &results[1..] {
        let differ = results::comparable::differences(results[0].0, result);
        if let Some((what, a, b)) = differ.first() {
            return Err(CalibrationError::Result {
                result: path.to_path_buf(),
                kind: CalibrationProblem::MixedSettings,
                reason: format!(
                    "its replay ran at {what} {b}, {} at {what} {a}: a median of replays at different settings mixes their effects; calibrate from replays at one setting",
                    results[0].1.display()
                ),
            });
        }
    }
    let predictions: Vec<ModelTimes> = replays
        .iter()
        .map(|t| capture_drive_prediction(t))
        .collect();
    let capture_drive = median(&predictions);
    let range = range(&predictions, DependencyModel::PRIMARY);

    let mut tail = file.footer().tail.clone();
    let before = tail.task;
    tail.task.capture_drive = capture_drive;
    tail.calibration = capture_drive.is_set().then(|| CalibrationReplays {
        settings: settings
            .into_iter()
            .map(|(what, value)| (what.to_string(), value))
            .collect(),
        predictions,
    });

    write_calibrated(&file, trace, &tail, out, replace)?;
    Ok(Calibration {
        name,
        replays: replays.len(),
        capture_drive,
        range,
        untraced: before.untraced,
        replaced: before.capture_drive.is_set(),
    })
}

/// Writes `file`'s header and records with `tail` to `out` through one
/// temporary, read back whole before it replaces anything.
fn write_calibrated(
    file: &TraceFile,
    trace: &Path,
    tail: &trace_format::TraceTail,
    out: &Path,
    replace: outfile::Replace,
) -> Result<(), CalibrationError> {
    let format_error = |source| CalibrationError::Trace {
        trace: trace.to_path_buf(),
        source,
    };
    let write_error = |source| CalibrationError::Write {
        path: out.to_path_buf(),
        source,
    };
    // A failing write (a full disk) names the output, not the trace read.
    let out_error = |source| CalibrationError::Trace {
        trace: out.to_path_buf(),
        source,
    };
    let mut output = outfile::AtomicFile::create_replacing(out, replace)?;
    let mut w =
        TraceWriter::new(std::io::BufWriter::new(&mut output), file.header()).map_err(out_error)?;
    for r in file.records() {
        w.push(&r.map_err(format_error)?).map_err(out_error)?;
    }
    let (buf, _) = w.finish(tail).map_err(out_error)?;
    buf.into_inner().map_err(|e| write_error(e.into_error()))?;
    // The copy is read back whole before it replaces anything.
    let written = PathBuf::from(format!("/proc/self/fd/{}", output.file().as_raw_fd()));
    TraceFile::open(&written)
        .and_then(|t| t.verify())
        .map_err(out_error)?;
    output.commit()?;
    Ok(())
}
