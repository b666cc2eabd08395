//! The normaliser: turns the events and requests a parser reports into
//! `IoRecord`s, one per I/O, in non-decreasing issue time.
//!
//! What it does, in order:
//! - filters by device (`--device`), assigns device-table indexes otherwise;
//! - judges each input's time against the inputs before and after it (a
//!   look-ahead queue, `time_check.rs`), so one bad timestamp is that input's error,
//!   not the error of every good one after it; makes times relative to the
//!   first event, and refuses time running backwards by more than
//!   [`NormaliseOptions::reorder_tolerance`];
//! - picks the event that defines issue time (`--event issue|queue`; by default
//!   the driver dispatch `D` where the input has one, else the queue event `Q`);
//! - pairs completions with requests to get the original latency: with `issue`,
//!   a `C` completes the `D` at the same device and sector; with `queue`, a
//!   dispatched request covering `[sector, sector + len)` completes every queued
//!   bio that starts inside it (that is what back and front merges produce);
//!   a requeue (`R`) makes the next `D` of that request a re-issue, not a new I/O;
//! - holds records until they complete (bounded by a trace-time window and a
//!   count), then emits them in issue-time order;
//! - applies `--from/--to`, counts skipped input and unused events.
//!
//! Where each job lives: time judging in `time_check.rs` and `arrival.rs`, record
//! creation and the device table in `records.rs`, request pairing in
//! `pairing.rs`, emission in issue-time order here (`drain`), device counting
//! under a filter in `census.rs`, skipped-input examples in `examples.rs`.
//!
//! Memory is bounded by the requests in flight (and at most
//! [`NormaliseOptions::max_pending`] records), never by input length.

use crate::error::{BadInputKind, BadReason, ConvertError};
use crate::event::{Action, BlockEvent, Location, SourceIo};
use crate::sink::Sink;
use std::collections::{BTreeMap, VecDeque};
use trace_format::{
    Bytes, DeviceEntry, DeviceId, Flags, IoRecord, IssueEvent, Nanos, Op, SkippedExample,
    SkippedInput, TraceTail,
};

mod arrival;
mod census;
mod examples;
mod hasher;
mod interface;
mod pairing;
mod records;
mod time_check;
use examples::{describe_event, describe_io, shorten};
use hasher::FastMap;
pub use interface::{
    note, DeviceSeen, EventChoice, NormaliseOptions, NormaliseOutcome, RecordSink,
};
use pairing::{take_request, Pending, RequestTable, Slot, FLUSH_SLOT};
use time_check::{Arrival, Item, TimeCheck, Verdict};

/// Largest byte offset + length a record may have: 2^63 (the largest `off_t`).
pub const MAX_END: u64 = 1 << 63;

/// Largest length of one request the normaliser believes (1 TiB); anything larger
/// is garbage in the source.
pub const MAX_REQUEST_LEN: u64 = 1 << 40;

/// Longest content of a skipped line kept as an example.
const EXAMPLE_CHARS: usize = 200;

/// Events held while deciding, in automatic mode, whether the input has issue
/// events (the decision is made at the first `D`, or after this many events).
const DECIDE_AFTER_EVENTS: usize = 65_536;

type RecKey = (Nanos, u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Undecided,
    Issue,
    Queue,
    Source,
}

/// Turns parser output into records. Feed it as a [`Sink`], then call
/// [`Normaliser::finish`].
pub struct Normaliser<'o> {
    opts: NormaliseOptions,
    out: &'o mut dyn RecordSink,
    mode: Mode,
    begun: bool,
    /// Inputs waiting for their time to be judged.
    clock: TimeCheck,
    /// Events held while the mode is undecided.
    held: Vec<Arrival>,
    /// Every device of the input, when a device filter is set.
    census: Option<census::DeviceCensus>,
    saw_queue: bool,
    saw_issue: bool,
    /// Absolute source time of the trace start.
    origin: Option<Nanos>,
    /// Latest relative input time seen.
    max_time: Nanos,
    seq: u64,
    records: BTreeMap<RecKey, Pending>,
    queued: BTreeMap<(DeviceId, u64), VecDeque<RecKey>>,
    issued: RequestTable,
    requeued: RequestTable,
    device_index: FastMap<DeviceId, u16>,
    devices: Vec<DeviceEntry>,
    last_emitted: Nanos,
    emitted: u64,
    skipped: SkippedInput,
    /// Counts by key; sorted by key for the tail.
    notes: FastMap<String, u64>,
    wall_clock: Option<i64>,
    messages: Vec<String>,
    warnings: Vec<String>,
}

impl<'o> Normaliser<'o> {
    pub fn new(opts: NormaliseOptions, out: &'o mut dyn RecordSink) -> Normaliser<'o> {
        let clock = TimeCheck::new(opts.reorder_tolerance);
        let census = opts.device.map(|_| census::DeviceCensus::default());
        let mode = match opts.event {
            None => Mode::Undecided,
            Some(EventChoice::Issue) => Mode::Issue,
            Some(EventChoice::Queue) => Mode::Queue,
        };
        Normaliser {
            opts,
            out,
            mode,
            begun: false,
            clock,
            held: Vec::new(),
            census,
            saw_queue: false,
            saw_issue: false,
            origin: None,
            max_time: Nanos::ZERO,
            seq: 0,
            records: BTreeMap::new(),
            queued: BTreeMap::new(),
            issued: FastMap::default(),
            requeued: FastMap::default(),
            device_index: FastMap::default(),
            devices: Vec::new(),
            last_emitted: Nanos::ZERO,
            emitted: 0,
            skipped: SkippedInput::default(),
            notes: FastMap::default(),
            wall_clock: None,
            messages: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Records emitted so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// The issue event in force (`None` while still deciding).
    pub fn issue_event(&self) -> Option<IssueEvent> {
        match self.mode {
            Mode::Undecided => None,
            Mode::Issue => Some(IssueEvent::Issue),
            Mode::Queue => Some(IssueEvent::Queue),
            Mode::Source => Some(IssueEvent::Source),
        }
    }

    /// Emits everything still held and returns what was learnt.
    pub fn finish(mut self) -> Result<NormaliseOutcome, ConvertError> {
        self.flush_clock()?;
        if self.mode == Mode::Undecided {
            let mode = if self.saw_queue && !self.saw_issue {
                Mode::Queue
            } else {
                Mode::Issue
            };
            self.decide(mode)?;
        }
        self.drain(true)?;
        self.begin()?;
        if self.mode == Mode::Issue && !self.saw_issue && self.saw_queue {
            self.messages.push(
                "the input has queue (Q) events but no issue (D) events; \
                 use --event queue to take issue times from the queue events"
                    .to_string(),
            );
        }
        if self.mode == Mode::Queue && !self.saw_queue && self.saw_issue {
            self.messages.push(
                "the input has issue (D) events but no queue (Q) events; \
                 use --event issue"
                    .to_string(),
            );
        }
        let issue_event = self.issue_event().unwrap_or(IssueEvent::Issue);
        let mut notes: Vec<(String, u64)> = self.notes.into_iter().collect();
        notes.sort_unstable();
        let tail = TraceTail {
            devices: self.devices,
            skipped: self.skipped,
            notes,
            capture_start_unix_ns: self.wall_clock,
            task: trace_format::TaskMarks::default(),
            calibration: None,
        };
        Ok(NormaliseOutcome {
            tail,
            issue_event,
            records: self.emitted,
            messages: self.messages,
            warnings: self.warnings,
            devices_seen: self.census.map(|c| c.into_list()).unwrap_or_default(),
            origin: self.origin,
        })
    }

    fn add_note(&mut self, key: &str, n: u64) {
        if let Some(count) = self.notes.get_mut(key) {
            *count += n;
        } else {
            self.notes.insert(key.to_string(), n);
        }
    }

    /// Emits records from the oldest while they are complete and no earlier
    /// record can still arrive, or have waited too long; everything with `all`.
    pub(super) fn drain(&mut self, all: bool) -> Result<(), ConvertError> {
        if self.mode == Mode::Undecided {
            return Ok(());
        }
        let from = self.opts.from.unwrap_or(Nanos::ZERO).0;
        while let Some((&key, pending)) = self.records.first_key_value() {
            let rel = Nanos(key.0 .0.saturating_add(from));
            let settled = rel.0.saturating_add(self.opts.reorder_tolerance.0) <= self.max_time.0;
            let done = pending.slot == Slot::None;
            let expired = self.max_time.saturating_sub(rel) > self.opts.completion_window;
            let crowded = self.records.len() > self.opts.max_pending;
            if !(all || (done && settled) || expired || crowded) {
                break;
            }
            let Some(p) = self.records.remove(&key) else {
                break;
            };
            if p.slot != Slot::None {
                self.unslot(key, p.slot);
            }
            if p.record.latency.is_none() {
                self.add_note(note::NO_COMPLETION, 1);
            }
            self.begin()?;
            self.last_emitted = self.last_emitted.max(p.record.time);
            self.emitted += 1;
            self.out.record(p.record)?;
        }
        Ok(())
    }
}

impl Sink for Normaliser<'_> {
    fn event(&mut self, at: Location<'_>, event: BlockEvent) -> Result<(), ConvertError> {
        if let Some(census) = &mut self.census {
            census.event(&event);
        }
        if self.opts.device.is_some_and(|d| d != event.device) {
            self.add_note(note::OTHER_DEVICE, 1);
            return Ok(());
        }
        self.arrive(&at, Item::Event(event))
    }

    fn remap(
        &mut self,
        at: Location<'_>,
        event: BlockEvent,
        from: DeviceId,
        from_offset: Bytes,
    ) -> Result<(), ConvertError> {
        if self.opts.device.is_some_and(|d| d != event.device) {
            self.add_note(note::OTHER_DEVICE, 1);
            return Ok(());
        }
        self.arrive(&at, Item::Remap(event, from, from_offset))
    }

    fn io(&mut self, at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
        match self.mode {
            Mode::Undecided => self.decide(Mode::Source)?,
            Mode::Source => {}
            // --event given for a source without events: it has one time per
            // request, whatever it is.
            Mode::Issue | Mode::Queue => {
                if self.emitted == 0 && self.records.is_empty() && !self.begun {
                    self.mode = Mode::Source;
                }
            }
        }
        if let Some(census) = &mut self.census {
            census.io(&io);
        }
        if self.opts.device.is_some_and(|d| d != io.device) {
            self.add_note(note::OTHER_DEVICE, 1);
            return Ok(());
        }
        self.arrive(&at, Item::Io(io))
    }

    fn bad_input(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &BadReason,
    ) -> Result<(), ConvertError> {
        if self.opts.skip_bad {
            // In line with the inputs around it, so examples keep input order.
            let item = Item::Bad {
                content: content.to_string(),
                reason: reason.clone(),
            };
            return self.arrive(&at, item);
        }
        // The inputs before it may hold an earlier bad time.
        self.flush_clock()?;
        self.report_bad(at, content, reason)
    }

    fn note(&mut self, key: &str) {
        self.add_note(key, 1);
    }

    fn warning(&mut self, message: String) {
        self.warnings.push(message);
    }

    fn wall_clock(&mut self, unix_ns_at_source_zero: i64) {
        if self.wall_clock.is_none() {
            self.wall_clock = Some(unix_ns_at_source_zero);
        }
    }
}

#[cfg(test)]
mod tests;
