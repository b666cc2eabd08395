//! What a pass tells the world: progress and per-I/O events for the caller
//! ([`Observer`]), and each record read and each completion for listeners
//! inside the replayer ([`IoListener`]: the task-time prediction).

use results::schema::PassMetrics;
use trace_format::{IoRecord, Op};

/// Which pass of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassKind {
    Warmup,
    /// Scored pass number, from 1.
    Scored(u32),
}

/// One completed I/O, for callers that check the engine from outside (tests,
/// per-I/O logs). Times are ns since the pass's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoEvent {
    /// Index of the record in the trace.
    pub index: u64,
    pub op: Op,
    /// Index of the target it went to (0: the first; see `Target::all`).
    pub target: u32,
    /// Target offset and length as issued.
    pub offset: u64,
    pub len: u64,
    pub scheduled_ns: u64,
    pub submit_ns: u64,
    pub complete_ns: u64,
    /// Bytes transferred, or a negative errno.
    pub result: i32,
    /// The ring (issuing thread) that issued it: 0 with one ring.
    pub ring: u32,
}

/// Hooks into a run: progress, per-I/O events, and when to stop.
pub trait Observer {
    fn pass_started(&mut self, _trace: &str, _pass: PassKind, _total_ios: u64) {}
    fn progress(&mut self, _completed_ios: u64) {}
    fn pass_finished(&mut self, _trace: &str, _pass: PassKind, _metrics: &PassMetrics) {}
    /// Preconditioning before the first pass: bytes written of `total`.
    fn precondition_progress(&mut self, _written: u64, _total: u64) {}
    /// Return true to receive `io_completed` for every I/O.
    fn wants_io_events(&self) -> bool {
        false
    }
    fn io_completed(&mut self, _event: &IoEvent) {}
    /// Checked between I/Os; true stops issuing (the pass drains and returns
    /// a partial result). Defaults to the SIGINT flag.
    fn should_stop(&self) -> bool {
        crate::interrupt::interrupted()
    }
}

/// Listens to one pass's I/O as the engine meets it: every record read,
/// in order (sent to the target, or skipped and keeping its original
/// latency), and every completion of a record sent. The engine only
/// reports; what a listener makes of it is its own.
pub trait IoListener {
    fn record_read(&mut self, index: u64, rec: &IoRecord, sent: bool);
    fn completed(&mut self, index: u64, latency_ns: u64);
}
