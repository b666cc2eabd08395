//! The normaliser: turns the events and requests a parser reports into
//! `IoRecord`s, one per I/O, in non-decreasing issue time.
//!
//! What it does, in order:
//! - filters by device (`--device`), assigns device-table indexes otherwise;
//! - judges each input's time against the inputs before and after it (a
//!   look-ahead queue, `clock.rs`), so one bad timestamp is that input's error,
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

mod census;
mod clock;
mod hasher;
mod interface;
use clock::{Arrival, Item, TimeCheck, Verdict};
use hasher::FastMap;
pub use interface::{
    note, DeviceSeen, EventChoice, NormaliseOptions, NormaliseOutcome, RecordSink,
};

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

/// Pairing slot of a flush (no sector).
const FLUSH_SLOT: u64 = u64::MAX;

/// Which pairing table holds a pending record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Completed or not waiting for anything.
    None,
    /// In `queued` at this offset (queue mode, not dispatched yet).
    Queued(DeviceId, u64),
    /// In `issued` at this request offset.
    Issued(DeviceId, u64),
    /// In `requeued` at this request offset.
    Requeued(DeviceId, u64),
}

struct Pending {
    record: IoRecord,
    slot: Slot,
}

/// A request handed to the driver: the operation and length that a requeue,
/// re-issue or completion of this same request shows, and the records it
/// completes (one in issue mode; the bios merged into it in queue mode).
struct Request {
    op: Op,
    len: Bytes,
    records: Vec<RecKey>,
}

impl Request {
    /// Whether `e` is an event of this very request (same operation and
    /// length), not another request at the same sector.
    fn is(&self, e: &BlockEvent) -> bool {
        self.op == e.op && self.len == e.len
    }
}

/// Requests by device and sector (several may share one sector).
type RequestTable = FastMap<(DeviceId, u64), VecDeque<Request>>;

/// Takes the oldest request at `key` that `wanted` accepts.
fn take_request(
    table: &mut RequestTable,
    key: (DeviceId, u64),
    wanted: impl Fn(&Request) -> bool,
) -> Option<Request> {
    let queue = table.get_mut(&key)?;
    let at = queue.iter().position(wanted)?;
    let request = queue.remove(at);
    if queue.is_empty() {
        table.remove(&key);
    }
    request
}

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

    fn begin(&mut self) -> Result<(), ConvertError> {
        if !self.begun {
            self.begun = true;
            let event = self.issue_event().unwrap_or(IssueEvent::Issue);
            self.out.begin(event)?;
        }
        Ok(())
    }

    /// Fixes the mode and replays the events held while undecided.
    fn decide(&mut self, mode: Mode) -> Result<(), ConvertError> {
        if self.mode != Mode::Undecided {
            return Ok(());
        }
        self.mode = mode;
        if mode == Mode::Queue {
            let msg = "the input has no issue (D) events; issue times are taken from \
                       queue (Q) events";
            self.messages.push(msg.to_string());
            self.add_note("issue time taken from queue events (no D events)", 1);
        }
        let held = std::mem::take(&mut self.held);
        for arrival in held {
            self.dispatch(arrival)?;
        }
        Ok(())
    }

    /// Queues an input for the time check, and takes in the input that
    /// leaves the look-ahead queue.
    fn arrive(&mut self, at: &Location<'_>, item: Item) -> Result<(), ConvertError> {
        match self.clock.push(at, item) {
            Some(arrival) => self.accept(arrival),
            None => Ok(()),
        }
    }

    /// Takes in every input still waiting for the time check.
    fn flush_clock(&mut self) -> Result<(), ConvertError> {
        while let Some(arrival) = self.clock.pop() {
            self.accept(arrival)?;
        }
        Ok(())
    }

    /// Takes in an input whose time is judged now: bad input when out of
    /// line, else held while the mode is undecided, else used.
    fn accept(&mut self, arrival: Arrival) -> Result<(), ConvertError> {
        if let Verdict::Bad(reason) = self.clock.judge(&arrival) {
            let content = match &arrival.item {
                Item::Event(e) | Item::Remap(e, _, _) => describe_event(e),
                Item::Io(io) => describe_io(io),
                Item::Bad { content, .. } => content.clone(),
            };
            let reason = BadReason::new(BadInputKind::TimeOrder, reason);
            return self.report_bad(arrival.location(), &content, &reason);
        }
        let event = match &arrival.item {
            Item::Event(e) | Item::Remap(e, _, _) if self.mode == Mode::Undecided => *e,
            _ => return self.dispatch(arrival),
        };
        match event.action {
            Action::Issue => {
                self.saw_issue = true;
                self.decide(Mode::Issue)?;
                return self.dispatch(arrival);
            }
            Action::Queue => self.saw_queue = true,
            _ => {}
        }
        self.held.push(arrival);
        if self.held.len() >= DECIDE_AFTER_EVENTS {
            let mode = if self.saw_queue {
                Mode::Queue
            } else {
                Mode::Issue
            };
            self.decide(mode)?;
        }
        Ok(())
    }

    /// Uses an input whose time is in line.
    fn dispatch(&mut self, arrival: Arrival) -> Result<(), ConvertError> {
        let at = arrival.location();
        match &arrival.item {
            Item::Event(e) => self.handle_event(at, *e),
            Item::Remap(e, from, off) => self.handle_remap(at, *e, *from, *off),
            Item::Io(io) => self.handle_io(at, *io),
            Item::Bad { content, reason } => self.report_bad(at, content, reason),
        }
    }

    /// Counts bad input with --skip-bad, else stops with it.
    fn report_bad(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &BadReason,
    ) -> Result<(), ConvertError> {
        let content = shorten(content);
        if self.opts.skip_bad {
            self.skipped.add(SkippedExample {
                location: at.to_string(),
                content,
                reason: reason.message.clone(),
            });
            Ok(())
        } else {
            Err(ConvertError::bad_input(&at, content, reason))
        }
    }

    /// Relative time of an absolute source time, checking it does not run
    /// backwards; `Ok(None)` when the event was reported as bad and skipped.
    fn relative_time(
        &mut self,
        at: &Location<'_>,
        time: Nanos,
        what: &dyn Fn() -> String,
    ) -> Result<Option<Nanos>, ConvertError> {
        // The trace starts at the earliest time of the first inputs (those
        // within the reorder tolerance before the first one), so that an input
        // a little out of order at the start keeps its place.
        let origin = match self.origin {
            Some(origin) => origin,
            None => *self.origin.insert(self.clock.earliest_near(time)),
        };
        let rel = time.saturating_sub(origin);
        if time < origin && origin.saturating_sub(time) > self.opts.reorder_tolerance {
            let reason = BadReason::new(BadInputKind::TimeOrder, format!(
                "time goes backwards by {} to before the trace start (more than the {} tolerated; `convert --reorder-window` widens it)",
                origin.saturating_sub(time),
                self.opts.reorder_tolerance
            ));
            self.report_bad(*at, &what(), &reason)?;
            return Ok(None);
        }
        if rel < self.max_time && self.max_time.saturating_sub(rel) > self.opts.reorder_tolerance {
            let reason = format!(
                "time goes backwards by {} (from {} to {} since the trace start; at most {} is tolerated; `convert --reorder-window` widens it)",
                self.max_time.saturating_sub(rel),
                self.max_time,
                rel,
                self.opts.reorder_tolerance
            );
            let reason = BadReason::new(BadInputKind::TimeOrder, reason);
            self.report_bad(*at, &what(), &reason)?;
            return Ok(None);
        }
        self.max_time = self.max_time.max(rel);
        Ok(Some(rel))
    }

    /// Checks the extent of an event; `Ok(false)` when reported as bad and skipped.
    fn check_extent(
        &mut self,
        at: &Location<'_>,
        op: Op,
        offset: Bytes,
        len: Bytes,
        what: &dyn Fn() -> String,
    ) -> Result<bool, ConvertError> {
        if op == Op::Flush {
            return Ok(true);
        }
        let reason = if len.0 > MAX_REQUEST_LEN && op != Op::Discard {
            format!("absurd request length {} bytes", len.0)
        } else {
            match offset.0.checked_add(len.0) {
                Some(end) if end <= MAX_END => return Ok(true),
                _ => format!(
                    "offset {} + length {} ends past 2^63 bytes",
                    offset.0, len.0
                ),
            }
        };
        let reason = BadReason::new(BadInputKind::OutOfRange, reason);
        self.report_bad(*at, &what(), &reason)?;
        Ok(false)
    }

    fn device_slot(&mut self, at: &Location<'_>, device: DeviceId) -> Result<u16, ConvertError> {
        if let Some(&i) = self.device_index.get(&device) {
            return Ok(i);
        }
        let i = u16::try_from(self.devices.len()).map_err(|_| ConvertError::Invalid {
            location: at.to_string(),
            reason: "more than 65536 devices in one trace; pick one with --device".into(),
        })?;
        self.device_index.insert(device, i);
        self.out.new_device(i, device)?;
        self.devices.push(DeviceEntry {
            id: device,
            name: String::new(),
        });
        Ok(i)
    }

    /// Creates a pending record at relative time `rel`, or `None` when --from/--to
    /// exclude it.
    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        at: &Location<'_>,
        rel: Nanos,
        device: DeviceId,
        op: Op,
        flags: Flags,
        offset: Bytes,
        len: Bytes,
        latency: Option<Nanos>,
        pid: Option<u32>,
        slot: Slot,
    ) -> Result<Option<RecKey>, ConvertError> {
        if self.opts.from.is_some_and(|f| rel < f) {
            self.add_note(note::BEFORE_FROM, 1);
            return Ok(None);
        }
        if self.opts.to.is_some_and(|t| rel > t) {
            self.add_note(note::AFTER_TO, 1);
            return Ok(None);
        }
        let dev = self.device_slot(at, device)?;
        let mut time = rel.saturating_sub(self.opts.from.unwrap_or(Nanos::ZERO));
        if time < self.last_emitted {
            // Only after a forced emission (window or count bound) can a record
            // arrive earlier than one already written.
            self.add_note(note::CLAMPED, 1);
            time = self.last_emitted;
        }
        let (offset, len) = if op == Op::Flush {
            (Bytes(0), Bytes(0))
        } else {
            (offset, len)
        };
        self.seq += 1;
        let key = (time, self.seq);
        self.records.insert(
            key,
            Pending {
                record: IoRecord {
                    time,
                    op,
                    offset,
                    len,
                    flags,
                    latency,
                    stream: pid,
                    device: dev,
                },
                slot,
            },
        );
        Ok(Some(key))
    }

    fn handle_io(&mut self, at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
        if self.opts.device.is_some_and(|d| d != io.device) {
            self.add_note(note::OTHER_DEVICE, 1);
            return Ok(());
        }
        let what = || describe_io(&io);
        let Some(rel) = self.relative_time(&at, io.time, &what)? else {
            return Ok(());
        };
        if !self.check_extent(&at, io.op, io.offset, io.len, &what)? {
            return Ok(());
        }
        if io.op != Op::Flush && io.len.0 == 0 {
            self.add_note(note::EMPTY_REQUEST, 1);
            return Ok(());
        }
        self.create(
            &at,
            rel,
            io.device,
            io.op,
            io.flags,
            io.offset,
            io.len,
            io.latency,
            io.pid,
            Slot::None,
        )?;
        self.drain(false)
    }

    fn handle_event(&mut self, at: Location<'_>, e: BlockEvent) -> Result<(), ConvertError> {
        if self.opts.device.is_some_and(|d| d != e.device) {
            self.add_note(note::OTHER_DEVICE, 1);
            return Ok(());
        }
        let what = || describe_event(&e);
        let Some(rel) = self.relative_time(&at, e.time, &what)? else {
            return Ok(());
        };
        if !self.check_extent(&at, e.op, e.offset, e.len, &what)? {
            return Ok(());
        }
        let slot_offset = if e.op == Op::Flush {
            FLUSH_SLOT
        } else {
            e.offset.0
        };
        let queue_mode = self.mode == Mode::Queue;
        match e.action {
            Action::Queue if queue_mode => {
                self.saw_queue = true;
                if e.op != Op::Flush && e.len.0 == 0 {
                    self.add_note(note::EMPTY_REQUEST, 1);
                } else {
                    let slot = Slot::Queued(e.device, slot_offset);
                    if let Some(key) = self.create(
                        &at, rel, e.device, e.op, e.flags, e.offset, e.len, None, e.pid, slot,
                    )? {
                        self.queued
                            .entry((e.device, slot_offset))
                            .or_default()
                            .push_back(key);
                    }
                }
            }
            Action::Queue => {
                self.saw_queue = true;
                self.add_note(note::UNUSED_QUEUE, 1);
            }
            Action::Issue => {
                self.saw_issue = true;
                self.issue(&at, rel, &e, slot_offset)?;
            }
            Action::Complete => self.complete(rel, &e, slot_offset),
            Action::Requeue => {
                let key = (e.device, slot_offset);
                // The dispatched request of that operation and length, else
                // of that operation (a partly done request goes back with
                // what is left of it).
                let request = take_request(&mut self.issued, key, |r| r.is(&e))
                    .or_else(|| take_request(&mut self.issued, key, |r| r.op == e.op));
                match request {
                    Some(mut request) => {
                        for k in &request.records {
                            if let Some(p) = self.records.get_mut(k) {
                                p.slot = Slot::Requeued(e.device, slot_offset);
                            }
                        }
                        // Its re-issue shows what went back to the queue.
                        request.len = e.len;
                        self.requeued.entry(key).or_default().push_back(request);
                    }
                    None => self.add_note(note::REQUEUE_UNMATCHED, 1),
                }
            }
            Action::BackMerge | Action::FrontMerge => self.add_note(note::UNUSED_MERGE, 1),
            Action::Split => self.add_note(note::UNUSED_SPLIT, 1),
            Action::Remap => self.add_note(note::REMAP, 1),
            Action::Other => self.add_note(note::UNUSED_OTHER, 1),
        }
        self.drain(false)
    }

    fn handle_remap(
        &mut self,
        at: Location<'_>,
        e: BlockEvent,
        from: DeviceId,
        from_offset: Bytes,
    ) -> Result<(), ConvertError> {
        // The bio goes on to be queued on the destination device; a record made
        // from its queue event on the source device would count it twice.
        if self.mode == Mode::Queue && self.opts.device.is_none() && from != e.device {
            let slot_key = (from, from_offset.0);
            if let Some(key) = self.queued.get_mut(&slot_key).and_then(|q| q.pop_back()) {
                self.cleanup_queued(slot_key);
                self.records.remove(&key);
                self.add_note(note::REMAP_DROPPED, 1);
            }
        }
        self.handle_event(at, e)
    }

    fn issue(
        &mut self,
        at: &Location<'_>,
        rel: Nanos,
        e: &BlockEvent,
        slot_offset: u64,
    ) -> Result<(), ConvertError> {
        let key = (e.device, slot_offset);
        // A re-issue is the requeued request itself: same operation and
        // length. Another request at that sector is new I/O, even when the
        // requeued one's re-issue is missing from the input.
        if let Some(request) = take_request(&mut self.requeued, key, |r| r.is(e)) {
            self.add_note(note::REISSUE, 1);
            for k in &request.records {
                if let Some(p) = self.records.get_mut(k) {
                    p.slot = Slot::Issued(e.device, slot_offset);
                }
            }
            self.issued.entry(key).or_default().push_back(request);
            return Ok(());
        }
        match self.mode {
            Mode::Queue => {
                let group = self.gather_queued(e, slot_offset);
                if group.is_empty() {
                    self.add_note(note::ISSUE_WITHOUT_QUEUE, 1);
                    return Ok(());
                }
                for k in &group {
                    if let Some(p) = self.records.get_mut(k) {
                        p.slot = Slot::Issued(e.device, slot_offset);
                    }
                }
                self.issued.entry(key).or_default().push_back(Request {
                    op: e.op,
                    len: e.len,
                    records: group,
                });
            }
            _ => {
                if e.op != Op::Flush && e.len.0 == 0 {
                    self.add_note(note::EMPTY_REQUEST, 1);
                    return Ok(());
                }
                let slot = Slot::Issued(e.device, slot_offset);
                if let Some(rk) = self.create(
                    at, rel, e.device, e.op, e.flags, e.offset, e.len, None, e.pid, slot,
                )? {
                    self.issued.entry(key).or_default().push_back(Request {
                        op: e.op,
                        len: e.len,
                        records: vec![rk],
                    });
                }
            }
        }
        Ok(())
    }

    /// Takes the queued records a request covers: bios starting inside
    /// `[offset, offset + len)` for data, the oldest queued flush for a flush.
    fn gather_queued(&mut self, e: &BlockEvent, slot_offset: u64) -> Vec<RecKey> {
        let mut group = Vec::new();
        if slot_offset == FLUSH_SLOT {
            let k = (e.device, FLUSH_SLOT);
            if let Some(key) = self.queued.get_mut(&k).and_then(|q| q.pop_front()) {
                group.push(key);
            }
            self.cleanup_queued(k);
            return group;
        }
        let end = e.offset.0.saturating_add(e.len.0.max(1));
        let slots: Vec<(DeviceId, u64)> = self
            .queued
            .range((e.device, e.offset.0)..(e.device, end))
            .map(|(k, _)| *k)
            .collect();
        for k in slots {
            if let Some(q) = self.queued.remove(&k) {
                group.extend(q);
            }
        }
        group
    }

    /// A completion of the very bio that was queued (a bio completion, or a
    /// request made of one bio): the oldest queued bio at the same sector with
    /// the same length. Concurrent bios of one sector then pair one by one,
    /// where a range would give the first completion all of them.
    fn take_queued_bio(&mut self, e: &BlockEvent, slot_offset: u64) -> Option<RecKey> {
        if slot_offset == FLUSH_SLOT {
            return None;
        }
        let slot = (e.device, slot_offset);
        let queue = self.queued.get_mut(&slot)?;
        let records = &self.records;
        let at = queue
            .iter()
            .position(|k| records.get(k).is_some_and(|p| p.record.len == e.len))?;
        let key = queue.remove(at);
        self.cleanup_queued(slot);
        key
    }

    fn complete(&mut self, rel: Nanos, e: &BlockEvent, slot_offset: u64) {
        let key = (e.device, slot_offset);
        // The dispatched request of this operation and length; else a
        // requeued one whose re-issue the input lacks (its completion ends
        // the requeue); else the oldest at the sector (a partial completion).
        let mut request = take_request(&mut self.issued, key, |r| r.is(e));
        if request.is_none() {
            request = take_request(&mut self.requeued, key, |r| r.is(e));
            if request.is_some() {
                self.add_note(note::REQUEUE_COMPLETED, 1);
            }
        }
        let request = request.or_else(|| take_request(&mut self.issued, key, |_| true));
        let group = match request {
            Some(r) => r.records,
            None if self.mode == Mode::Queue => match self.take_queued_bio(e, slot_offset) {
                Some(key) => vec![key],
                None => self.gather_queued(e, slot_offset),
            },
            None => Vec::new(),
        };
        if group.is_empty() {
            self.add_note(note::UNMATCHED_COMPLETION, 1);
            return;
        }
        if e.error != 0 {
            self.add_note(note::COMPLETION_ERROR, group.len() as u64);
        }
        let from = self.opts.from.unwrap_or(Nanos::ZERO);
        for k in group {
            if let Some(p) = self.records.get_mut(&k) {
                let issued_rel = Nanos(p.record.time.0.saturating_add(from.0));
                p.record.latency = Some(rel.saturating_sub(issued_rel));
                p.slot = Slot::None;
            }
        }
    }

    fn cleanup_queued(&mut self, key: (DeviceId, u64)) {
        if self.queued.get(&key).is_some_and(|q| q.is_empty()) {
            self.queued.remove(&key);
        }
    }

    /// Removes a record's key from whatever pairing table holds it.
    fn unslot(&mut self, key: RecKey, slot: Slot) {
        match slot {
            Slot::None => {}
            Slot::Queued(dev, off) => {
                if let Some(q) = self.queued.get_mut(&(dev, off)) {
                    q.retain(|k| *k != key);
                }
                self.cleanup_queued((dev, off));
            }
            Slot::Issued(dev, off) | Slot::Requeued(dev, off) => {
                let table = if matches!(slot, Slot::Issued(..)) {
                    &mut self.issued
                } else {
                    &mut self.requeued
                };
                if let Some(requests) = table.get_mut(&(dev, off)) {
                    for r in requests.iter_mut() {
                        r.records.retain(|k| *k != key);
                    }
                    requests.retain(|r| !r.records.is_empty());
                    if requests.is_empty() {
                        table.remove(&(dev, off));
                    }
                }
            }
        }
    }

    /// Emits records from the oldest while they are complete and no earlier
    /// record can still arrive, or have waited too long; everything with `all`.
    fn drain(&mut self, all: bool) -> Result<(), ConvertError> {
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

/// At most [`EXAMPLE_CHARS`] characters of `s`, without control characters.
fn shorten(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(EXAMPLE_CHARS)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.chars().nth(EXAMPLE_CHARS).is_some() {
        out.push('…');
    }
    out
}

fn describe_event(e: &BlockEvent) -> String {
    format!(
        "{:?} {} {} at byte {} length {} on {} at source time {}",
        e.action,
        e.op,
        e.flags.names(),
        e.offset.0,
        e.len.0,
        e.device,
        e.time
    )
}

fn describe_io(io: &SourceIo) -> String {
    format!(
        "{} {} at byte {} length {} on {} at source time {}",
        io.op,
        io.flags.names(),
        io.offset.0,
        io.len.0,
        io.device,
        io.time
    )
}

#[cfg(test)]
mod tests;
