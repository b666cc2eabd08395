//! The consistency test's result file (`tracemark consistency --json`) and
//! its table and HTML report. The test itself runs in the replayer.

use crate::options::ReplayOptions;
use crate::schema::{HostInfo, TargetInfo, ToolInfo};
use serde::{Deserialize, Serialize};

/// One sequential fill of the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FillPass {
    pub pass: u32,
    pub seconds: f64,
    pub bytes: u64,
    pub mb_s: f64,
}

/// A trace's figures in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundTrace {
    pub name: String,
    pub score: f64,
    pub bandwidth_mb_s: f64,
    pub access_time_us: f64,
}

/// The stages of the consistency test after the precondition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Random writes of growing length, then a suite pass.
    Degradation,
    /// Random writes of fixed length, then a suite pass.
    Steady,
    /// Idle, then a suite pass.
    Recovery,
}

impl Phase {
    pub const ALL: [Phase; 3] = [Phase::Degradation, Phase::Steady, Phase::Recovery];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Degradation => "degradation",
            Phase::Steady => "steady",
            Phase::Recovery => "recovery",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// One round: what was done to the drive, then the suite's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub phase: Phase,
    /// From 1 within the phase.
    pub round: u32,
    /// Random writes before the suite pass (0 in recovery).
    pub write_s: f64,
    pub written_bytes: u64,
    pub write_mb_s: f64,
    /// Idle before the suite pass (recovery only).
    pub idle_s: f64,
    /// Suite figures (geometric means over the traces; 0 when none moved data).
    pub score: f64,
    pub bandwidth_mb_s: f64,
    pub access_time_us: f64,
    pub traces: Vec<RoundTrace>,
}

/// The durations used (after scaling), seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Durations {
    pub degrade_start_s: f64,
    pub degrade_step_s: f64,
    pub steady_s: f64,
    pub idle_s: f64,
    /// The unit the defaults were scaled from: one precondition pass.
    pub unit_s: f64,
}

/// The consistency result file (`--json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsistencyResult {
    /// As [`crate::SuiteResult::schema_version`].
    #[serde(
        default = "crate::schema::first_schema_version",
        skip_serializing_if = "crate::schema::is_first_schema_version"
    )]
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub host: HostInfo,
    pub target: TargetInfo,
    pub rounds_degrade: u32,
    pub rounds_steady: u32,
    pub rounds_recovery: u32,
    pub durations: Durations,
    pub write_queue_depth: u32,
    pub suite_options: ReplayOptions,
    /// Each suite-pass setting that differs from the one asked, and why
    /// (absent when none does, and in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings_changed: Vec<crate::options::SettingChange>,
    pub precondition: Vec<FillPass>,
    pub rounds: Vec<Round>,
    pub interrupted: bool,
    pub started_unix_s: u64,
}
