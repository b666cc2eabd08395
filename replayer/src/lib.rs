//! Replays tracemark traces against a drive with io_uring and scores it.
//!
//! The pieces, in the order a replay uses them:
//! - [`source`]: where records come from (a `.tmt` file, or records in memory
//!   for tests); the replayer knows nothing of input formats.
//! - [`mapping`]: a first streaming pass over a trace ([`mapping::TraceScan`])
//!   and the address map from trace offsets to target offsets (`compact`,
//!   `identity`, `wrap`).
//! - [`target`]: opening the target (block device or file, scratch file by
//!   default), the safety checks, filling the scratch file.
//! - [`identity`]: the drive, filesystem and host a result was measured on.
//! - [`cpu_idle`]: keeping the CPUs out of idle states while a run lasts.
//! - [`precondition`]: writing what the traces will read before scoring, so
//!   reads touch data.
//! - [`schedule`]: the timing and dependency rules of the modes (virtual
//!   time, idle cap, time scale, closed-loop shift, dependency gate), pure.
//! - [`engine`]: the io_uring engine that runs one pass of a trace, asking
//!   the schedule when each I/O may go.
//! - [`prediction`]: the task time a replay predicts for the target, from
//!   the trace's timing and the latencies measured there.
//! - [`calibration`]: a trace calibrated on its capture drive (the task time
//!   a replay there predicted, stored in the trace).
//! - [`metrics`]: per-pass figures and their aggregation over passes, into
//!   the result schema of the `results` crate.
//! - [`shard`]: a fleet replay's part for one rank (whole volumes) and
//!   where rank and size come from (the launcher's environment).
//! - [`plan`]: a run's effective settings, resolved once from the request,
//!   the suite file and the system, with why each that differs does.
//! - [`suite`]: [`suite::run_suite`], the function both `tracemark replay` and
//!   `tracemark suite` call.

pub mod buffer;
pub mod calibration;
pub mod consistency;
pub mod cpu_idle;
pub mod engine;
pub mod error;
pub mod host_time;
pub mod identity_probe;
pub mod in_use;
pub mod interrupt;
pub mod mapping;
pub mod metrics;
pub mod plan;
pub mod precondition;
pub mod prediction;
pub mod schedule;
pub mod shard;
pub mod source;
pub mod suite;
pub mod suite_file;
pub mod target;
pub mod waits;

pub use engine::{IoEvent, Observer, PassKind};
pub use error::{ReplayError, TargetProblem};
pub use options::{MappingKind, ReplayOptions, TimingMode};
pub use results::options;
pub use results::{PassMetrics, SuiteResult, SuiteSummary, TraceResult};
pub use source::{MemorySource, TmtSource, TraceSource};
pub use suite::{run_suite, IoLog, NoObserver};
pub use target::{Target, TargetKind, Targets, DEFAULT_SCRATCH_NAME};
