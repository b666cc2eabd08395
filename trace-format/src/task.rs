//! The captured task: where it starts and ends on the trace's clock, how long
//! it took untraced, and what a replay on the capture drive predicted for it.
//! Stored in the task section of a `.tmt` (format 1.1, see FORMAT.md); files
//! of format 1.0 carried the same values as notes of the tail, which the
//! reader still understands ([`TaskMarks::from_legacy_notes`]).

use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// Which earlier I/Os an I/O waits for in a predicted task time. The format
/// stores predictions per model, so the models' identity lives here; how
/// each is computed is the replayer's business.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DependencyModel {
    /// Every I/O that completed before it (the replay's own closed loop).
    All,
    /// Only I/Os an application waits for: reads, flushes and writes the
    /// application made synchronous (sync, FUA or preflush), and the plain
    /// writes (the kernel's writeback) a flush or preflush write covers.
    /// Other plain writes no application I/O waits for.
    Blocking,
    /// Blocking I/Os of the same issuing process, and synchronous writes and
    /// flushes of any process (a journal commit holds up every writer).
    Stream,
}

impl DependencyModel {
    pub const ALL: [DependencyModel; 3] = [
        DependencyModel::All,
        DependencyModel::Blocking,
        DependencyModel::Stream,
    ];

    /// The model a result's predicted task time uses.
    pub const PRIMARY: DependencyModel = DependencyModel::Blocking;

    /// The one spelling of the model's name (results, reports, notes).
    pub fn name(self) -> &'static str {
        match self {
            DependencyModel::All => "all",
            DependencyModel::Blocking => "blocking",
            DependencyModel::Stream => "stream",
        }
    }

    /// The model called `name` (as [`DependencyModel::name`] spells it).
    pub fn from_name(name: &str) -> Option<DependencyModel> {
        DependencyModel::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The model's place in [`DependencyModel::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A task time per dependency model, where known: the one type for a
/// prediction (a replay's, the capture drive's) in memory and in the file.
/// Stored as a sequence of (model, ns) pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(
    into = "Vec<(DependencyModel, Nanos)>",
    from = "Vec<(DependencyModel, Nanos)>"
)]
pub struct ModelTimes([Option<Nanos>; 3]);

impl ModelTimes {
    /// Every model's time from `f`.
    pub fn from_fn(mut f: impl FnMut(DependencyModel) -> Option<Nanos>) -> ModelTimes {
        ModelTimes(DependencyModel::ALL.map(&mut f))
    }

    pub fn get(&self, model: DependencyModel) -> Option<Nanos> {
        self.0[model.index()]
    }

    pub fn set(&mut self, model: DependencyModel, time: Option<Nanos>) {
        self.0[model.index()] = time;
    }

    /// Whether any model's time is known.
    pub fn is_set(&self) -> bool {
        self.0.iter().any(Option::is_some)
    }

    /// The known times, in the order of [`DependencyModel::ALL`].
    pub fn iter(&self) -> impl Iterator<Item = (DependencyModel, Nanos)> + '_ {
        DependencyModel::ALL
            .into_iter()
            .filter_map(|m| self.get(m).map(|t| (m, t)))
    }
}

impl From<ModelTimes> for Vec<(DependencyModel, Nanos)> {
    fn from(t: ModelTimes) -> Self {
        t.iter().collect()
    }
}

impl From<Vec<(DependencyModel, Nanos)>> for ModelTimes {
    fn from(pairs: Vec<(DependencyModel, Nanos)>) -> Self {
        let mut t = ModelTimes::default();
        for (m, ns) in pairs {
            t.set(m, Some(ns));
        }
        t
    }
}

/// Where the captured task starts and ends on the trace's clock, how long it
/// took untraced, and what a replay on the capture drive itself predicted.
/// `tracemark capture` writes the marks and the untraced time, `tracemark
/// calibrate` the capture drive's prediction; a replay's predicted task time
/// spans the marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskMarks {
    /// The task's start before the trace's time 0 (a task starts before its
    /// first I/O).
    pub start_before: Option<Nanos>,
    /// The task's start after the trace's time 0 (I/O before it belonged to
    /// something else).
    pub start_after: Option<Nanos>,
    /// The task's "done" point after the trace's time 0.
    pub end: Option<Nanos>,
    /// The task's time in an untraced run on the capture drive.
    pub untraced: Option<Nanos>,
    /// What a replay on the capture drive itself predicted, when the trace
    /// was calibrated. The capture's own latencies are one run's, stretched
    /// by tracing and by whatever else that run met; a replay on another
    /// drive is set against this replay instead, so the capture drive
    /// predicts the untraced time and only the drives' difference moves the
    /// prediction.
    pub capture_drive: ModelTimes,
    /// The CPU time the task's threads ran between its marks, as captured.
    /// Stored in a section of its own (the task section's payload predates
    /// it), so readers that do not know it keep the marks.
    #[serde(skip)]
    pub cpu: Option<TaskCpu>,
}

/// The CPU time a captured task's threads ran between its marks. A thread's
/// CPU work is a floor under the task's time on any drive: the copy whose
/// reads on the capture drive took longer than the work it did meanwhile
/// shows little think time in its trace, and only this says that the work
/// still takes its time where the reads take none. Stored in the task CPU
/// section (FORMAT.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskCpu {
    /// The CPU time of the task's busiest thread.
    pub busiest_thread: Nanos,
    /// The CPU time of all its threads together.
    pub total: Nanos,
    /// How many of its threads ran.
    pub threads: u32,
}

impl TaskCpu {
    /// What makes the figures impossible (a writer bug or a crafted file).
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.busiest_thread > self.total {
            return Err(format!(
                "its busiest thread ({} ns) ran longer than all its threads ({} ns)",
                self.busiest_thread.0, self.total.0
            ));
        }
        if self.threads == 0 && self.total > Nanos::ZERO {
            return Err("CPU time without a thread that ran".into());
        }
        Ok(())
    }
}

/// How a trace's calibration was made: each replay on the capture drive it
/// is the median of, and the settings they ran at. A later replay at other
/// settings is set against them all the same, and its difference from them
/// then holds the settings' effect as well as the drives'; the settings are
/// kept so that a reader can say so. Stored in the calibration section
/// (FORMAT.md); the median itself stays in [`TaskMarks::capture_drive`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CalibrationReplays {
    /// The replays' settings that change a replay's figures, as (setting,
    /// value) in the replayer's own spelling and order: the format keeps
    /// them, the replayer's comparability rule reads them.
    pub settings: Vec<(String, String)>,
    /// Each calibration replay's prediction on the capture drive, per model,
    /// in the order given to `calibrate`.
    pub predictions: Vec<ModelTimes>,
}

impl CalibrationReplays {
    /// What makes the calibration impossible: a median of no replay.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.predictions.is_empty() {
            return Err("it holds no replay".into());
        }
        Ok(())
    }
}

/// The note keys format 1.0 stored the task under.
mod legacy_note {
    pub const START_BEFORE: &str = "task: start, ns before time 0";
    pub const START_AFTER: &str = "task: start, ns after time 0";
    pub const END: &str = "task: done, ns after time 0";
    pub const UNTRACED: &str = "task: untraced time, ns";
    pub const CAPTURE_DRIVE: [&str; 3] = [
        "task: predicted on the capture drive (all), ns",
        "task: predicted on the capture drive (blocking), ns",
        "task: predicted on the capture drive (stream), ns",
    ];
}

impl TaskMarks {
    /// Whether nothing is known of the task.
    pub fn is_empty(&self) -> bool {
        *self == TaskMarks::default()
    }

    /// The task as format 1.0 stored it, in notes of the tail: takes the
    /// task's notes out of `notes` (the others stay, in order).
    pub fn from_legacy_notes(notes: &mut Vec<(String, u64)>) -> TaskMarks {
        let mut marks = TaskMarks::default();
        notes.retain(|(key, value)| {
            let value = Some(Nanos(*value));
            match key.as_str() {
                legacy_note::START_BEFORE => marks.start_before = value,
                legacy_note::START_AFTER => marks.start_after = value,
                legacy_note::END => marks.end = value,
                legacy_note::UNTRACED => marks.untraced = value,
                k => match legacy_note::CAPTURE_DRIVE.iter().position(|c| *c == k) {
                    Some(i) => marks.capture_drive.set(DependencyModel::ALL[i], value),
                    None => return true,
                },
            }
            false
        });
        marks
    }

    /// The task as format 1.0 notes (only what is set): what a writer of
    /// 1.0 files wrote, kept to build such files in tests.
    pub fn to_legacy_notes(&self) -> Vec<(String, u64)> {
        let mut notes = Vec::new();
        let mut add = |key: &str, v: Option<Nanos>| {
            if let Some(v) = v {
                notes.push((key.to_string(), v.0));
            }
        };
        add(legacy_note::START_BEFORE, self.start_before);
        add(legacy_note::START_AFTER, self.start_after);
        add(legacy_note::END, self.end);
        add(legacy_note::UNTRACED, self.untraced);
        for (m, key) in DependencyModel::ALL.iter().zip(legacy_note::CAPTURE_DRIVE) {
            add(key, self.capture_drive.get(*m));
        }
        notes
    }

    /// The task's span in the trace as captured: start to "done".
    pub fn captured(&self) -> Option<Nanos> {
        let end = self.end?.0;
        Some(Nanos(
            end.saturating_add(self.start_before.map_or(0, |n| n.0))
                .saturating_sub(self.start_after.map_or(0, |n| n.0)),
        ))
    }

    /// What makes the marks impossible (a writer bug or a crafted file).
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.start_before.is_some() && self.start_after.is_some() {
            return Err("the task starts both before and after time 0".into());
        }
        if let (Some(start), Some(end)) = (self.start_after, self.end) {
            if end < start {
                return Err(format!(
                    "the task is done ({} ns) before it starts ({} ns)",
                    end.0, start.0
                ));
            }
        }
        Ok(())
    }
}
