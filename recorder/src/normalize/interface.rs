//! What the normaliser is told and what it tells: the options, the sink its
//! records go to, the outcome, and the note keys it counts under.

use crate::error::ConvertError;
use trace_format::{DeviceId, IoRecord, IssueEvent, Nanos, TraceTail};

/// Which block-layer event defines a record's issue time. On the command
/// line (`clap` feature): `issue` or `queue`, or blkparse's `D` or `Q`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EventChoice {
    /// The driver dispatch (blkparse `D`, tracefs `block_rq_issue`): what the
    /// device saw.
    #[cfg_attr(feature = "clap", value(alias = "D"))]
    Issue,
    /// The request's entry into the block layer (blkparse `Q`, tracefs
    /// `block_bio_queue`): what the application asked for, before merging.
    #[cfg_attr(feature = "clap", value(alias = "Q"))]
    Queue,
}

impl EventChoice {
    pub fn name(self) -> &'static str {
        match self {
            EventChoice::Issue => "issue",
            EventChoice::Queue => "queue",
        }
    }
}

/// How the normaliser filters, pairs and bounds its work.
#[derive(Debug, Clone)]
pub struct NormaliseOptions {
    /// `None`: issue where the input has issue events, else queue.
    pub event: Option<EventChoice>,
    /// Keep only this device.
    pub device: Option<DeviceId>,
    /// Keep records issued at or after this time since the trace start; output
    /// times are then relative to it.
    pub from: Option<Nanos>,
    /// Keep records issued at or before this time since the trace start.
    pub to: Option<Nanos>,
    /// Count bad input (keeping the first examples) instead of stopping.
    pub skip_bad: bool,
    /// A record whose completion has not come this long (trace time) after its
    /// issue is emitted without latency.
    pub completion_window: Nanos,
    /// Most records held waiting for completions; beyond it the oldest is
    /// emitted without latency.
    pub max_pending: usize,
    /// How far input time may run backwards (events from different CPUs); more
    /// is bad input.
    pub reorder_tolerance: Nanos,
}

impl Default for NormaliseOptions {
    fn default() -> Self {
        NormaliseOptions {
            event: None,
            device: None,
            from: None,
            to: None,
            skip_bad: false,
            completion_window: Nanos(60_000_000_000),
            max_pending: 1 << 18,
            reorder_tolerance: Nanos(1_000_000_000),
        }
    }
}

/// Where normalised records go.
pub trait RecordSink {
    /// Called once, before the first record (or at the end when there is
    /// none), when the issue event is known.
    fn begin(&mut self, _issue_event: IssueEvent) -> Result<(), ConvertError> {
        Ok(())
    }

    /// One record; records come in non-decreasing time.
    fn record(&mut self, record: IoRecord) -> Result<(), ConvertError>;

    /// A device entered the device table at `index` (records name devices by
    /// index); called before the first record on it.
    fn new_device(&mut self, _index: u16, _device: DeviceId) -> Result<(), ConvertError> {
        Ok(())
    }
}

impl RecordSink for Vec<IoRecord> {
    fn record(&mut self, record: IoRecord) -> Result<(), ConvertError> {
        self.push(record);
        Ok(())
    }
}

/// What the normaliser learnt, for the trace tail and the user.
#[derive(Debug, Clone, PartialEq)]
pub struct NormaliseOutcome {
    /// Device table, skipped input, notes and wall-clock start for the footer.
    pub tail: TraceTail,
    pub issue_event: IssueEvent,
    /// Records emitted.
    pub records: u64,
    /// Things the user should be told (an automatic choice, a suspicious input).
    pub messages: Vec<String>,
    /// What the user must be told about the input as a whole (inputs that
    /// may not be one capture).
    pub warnings: Vec<String>,
    /// With a device filter: every device of the input, kept or not.
    pub devices_seen: Vec<DeviceSeen>,
    /// The source time of the trace's time 0 (none without events).
    pub origin: Option<trace_format::Nanos>,
}

/// A device of the input and about how many I/Os it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSeen {
    pub device: DeviceId,
    pub ios: u64,
}

/// Note keys the normaliser uses (visible in `info`).
pub mod note {
    pub const UNUSED_QUEUE: &str = "unused events: queue (Q)";
    pub const UNUSED_ISSUE: &str = "unused events: issue (D)";
    pub const UNUSED_MERGE: &str = "merge events (M/F)";
    pub const UNUSED_SPLIT: &str = "split events (X)";
    pub const REMAP: &str = "remap events (A)";
    pub const REMAP_DROPPED: &str = "queued requests remapped to another device (counted there)";
    pub const UNUSED_OTHER: &str = "unused events: other";
    pub const OTHER_DEVICE: &str = "events of other devices (--device)";
    pub const BEFORE_FROM: &str = "requests before --from";
    pub const AFTER_TO: &str = "requests after --to";
    pub const NO_COMPLETION: &str = "requests without a completion (no latency)";
    pub const UNMATCHED_COMPLETION: &str = "completions without a matching request";
    pub const COMPLETION_ERROR: &str = "requests completed with an error";
    pub const REISSUE: &str = "re-issues after requeue (not new I/O)";
    pub const REQUEUE_UNMATCHED: &str = "requeues without a matching request";
    pub const REQUEUE_COMPLETED: &str =
        "requeued requests completed without a re-issue in the input (lost event?)";
    pub const ISSUE_WITHOUT_QUEUE: &str = "issues without a queued request (--event queue)";
    pub const CLAMPED: &str = "records moved later to keep time order";
    pub const EMPTY_REQUEST: &str = "requests of zero length (not replayed)";
}

#[cfg(all(test, feature = "clap"))]
mod tests {
    use super::EventChoice;
    use clap::ValueEnum;

    #[test]
    fn the_command_line_takes_the_names_and_blkparse_letters() {
        for e in [EventChoice::Issue, EventChoice::Queue] {
            assert_eq!(e.to_possible_value().unwrap().get_name(), e.name());
        }
        assert_eq!(EventChoice::from_str("D", false), Ok(EventChoice::Issue));
        assert_eq!(EventChoice::from_str("Q", false), Ok(EventChoice::Queue));
        assert!(EventChoice::from_str("A", false).is_err());
    }
}
