//! The task time a replay predicts: how long the captured task would take on
//! the target, from the trace's own timing and the latencies the replay
//! measured there.
//!
//! The model is //TRACE's (Mesnier et al., FAST'07): the application's think
//! time between an I/O it waited for and its next I/O is kept, and only the
//! I/Os it waited for move its later work. An I/O `i` issued originally at
//! `t_i` depends on the I/Os that completed before `t_i` in the original; on
//! the target it is issued at `t_i + shift_i`, where `shift_i` is the largest
//! completion shift among those dependencies, and it completes shifted by
//! `delta_i = shift_i + (latency on the target - original latency)`. The task
//! ends at its "done" mark plus the shift of the I/Os it waited for by then.
//! Shifts may be negative: on a faster drive the task finishes sooner.
//!
//! Calibrated traces (`tracemark calibrate`) carry what a replay on the
//! capture drive itself predicted. The capture's latencies are one traced
//! run's, and the replay's latencies on the same drive can be far from them
//! (a copy's captured reads took 3.5 times what its replay's took on the same
//! drive, so the capture drive predicted 0.16 s for a task of 0.42 s). A
//! calibrated prediction is the untraced time plus this replay's difference
//! from the capture drive's replay: the same replayer on both sides, so what
//! both replays share cancels.
//!
//! Writeback a task waits for: the kernel makes a task wait for writes it
//! issued as buffered when it syncs (`sync`, `fsync`, `fdatasync`,
//! `syncfs`, a close that syncs, a journal commit). A block trace shows the
//! end of that wait as a durability point: a cache flush, or a write with
//! the preflush flag (a journal commit block), issued only after the writes
//! it covers have completed. So a flush or preflush write waits, in the
//! blocking and stream models, for the plain writes that completed since the
//! previous such point, and plain writes follow one another as the kernel's
//! flusher does (each after the completions it saw). Integrity writeback
//! (`WB_SYNC_ALL`: fsync, O_SYNC) and O_DIRECT writes carry the sync flag
//! and are waited for by themselves. Plain writes with no durability point
//! after them before the done mark (background writeback, and what follows
//! the task) move nothing.
//!
//! Which earlier I/Os count as dependencies is the [`DependencyModel`]; all
//! three are computed in one pass, so a study can compare them on the same
//! replay. The computation streams: it keeps the I/Os that were in flight in
//! the original at the current record, and the records admitted but not yet
//! completed in the replay (both bounded by queue depths).
//!
//! The engine does not call the model: [`TaskObserver`] listens to a pass's
//! I/O events (each record read, each completion) and feeds it. A pass
//! predicts only in realtime mode on one ring ([`NoTaskTime`] says why
//! not otherwise); the marks, untraced time and calibration come from the
//! trace's task section (`trace_format::TaskMarks`).

mod observer;

use crate::waits::{self, Path, Sequence};
pub use observer::TaskObserver;
use results::breakdown::{ClassWaits, WaitClass, WaitOp};
pub use results::NoTaskTime;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
pub use trace_format::{DependencyModel, ModelTimes, TaskMarks};
use trace_format::{Flags, IoRecord, Nanos, Op};

/// What one pass predicts.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskTimePrediction {
    /// The task's time in the trace as captured (its marks, or the trace's
    /// first issue to last completion).
    pub captured: Nanos,
    /// The untraced time the prediction starts from, when the trace has it.
    pub untraced: Option<Nanos>,
    /// Whether the span came from the capture's task marks.
    pub marked: bool,
    /// Predicted task time, every model set (calibrated where the trace
    /// carries the capture drive's prediction).
    pub predicted: ModelTimes,
    /// Before calibration: the untraced time plus this replay's shift from
    /// the captured latencies, every model set, not held up by the CPU floor
    /// (what a calibration sets later replays against); `None` for an
    /// uncalibrated trace.
    pub uncalibrated: Option<ModelTimes>,
    /// The primary model's path of waits to the task's end, per class of
    /// I/O (latencies on the target).
    pub waits: Vec<ClassWaits>,
    /// The CPU time of the task's busiest thread at capture, when the trace
    /// keeps it: no model's prediction goes below it.
    pub cpu_floor: Option<Nanos>,
    /// The prediction before that floor, every model set, when the floor
    /// held any model up.
    pub unfloored: Option<ModelTimes>,
}

impl TaskTimePrediction {
    pub fn predicted(&self, model: DependencyModel) -> Nanos {
        self.predicted.get(model).unwrap_or(Nanos::ZERO)
    }

    /// The prediction before calibration (the prediction itself for an
    /// uncalibrated trace).
    pub fn uncalibrated(&self, model: DependencyModel) -> Nanos {
        self.uncalibrated
            .unwrap_or(self.predicted)
            .get(model)
            .unwrap_or(Nanos::ZERO)
    }
}

/// Per model: `raw` as times.
fn model_times(raw: [u64; 3]) -> ModelTimes {
    ModelTimes::from_fn(|m| Some(Nanos(raw[m.index()])))
}

/// Sets raw predictions (`base` plus each model's shift) against the
/// capture drive's: `base + raw - capture drive`, per model that has one.
fn calibrate(raw: [u64; 3], base: u64, capture_drive: &ModelTimes) -> ModelTimes {
    ModelTimes::from_fn(|m| {
        let p = raw[m.index()];
        Some(Nanos(match capture_drive.get(m) {
            Some(c) => (base as i64 + p as i64 - c.0 as i64).max(0) as u64,
            None => p,
        }))
    })
}

/// Each model's time held at no less than `floor`. A thread's CPU work takes
/// its time whatever the drive: where the capture drive's reads took longer
/// than the work done under them, the trace shows waits and little think
/// time, and taking those waits off on a faster drive would leave less time
/// than the work itself.
fn floored(times: ModelTimes, floor: Option<Nanos>) -> ModelTimes {
    let Some(floor) = floor else {
        return times;
    };
    ModelTimes::from_fn(|m| times.get(m).map(|t| t.max(floor)))
}

/// How a record takes part in the dependencies of the blocking and stream
/// models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Reads, sync and FUA writes: the issuer waits for them.
    Blocking,
    /// A plain write: writeback, waited for only through a durability point.
    Writeback,
    /// A flush or a preflush write: waited for, and issued after the plain
    /// writes it makes durable completed.
    Durability,
    /// Discards and the rest: nobody waits for them.
    Other,
}

impl Role {
    fn of(rec: &IoRecord) -> Role {
        let write = matches!(rec.op, Op::Write | Op::WriteZeroes);
        if rec.op == Op::Flush || (write && rec.flags.contains(Flags::PREFLUSH)) {
            Role::Durability
        } else if rec.op == Op::Read
            || (write && (rec.flags.contains(Flags::SYNC) || rec.flags.contains(Flags::FUA)))
        {
            Role::Blocking
        } else if write {
            Role::Writeback
        } else {
            Role::Other
        }
    }

    fn blocking(self) -> bool {
        matches!(self, Role::Blocking | Role::Durability)
    }
}

/// A record admitted, waiting for its latency on the target.
#[derive(Debug, Clone, Copy)]
struct Admitted {
    time: u64,
    latency: u64,
    role: Role,
    shared: bool,
    stream: Option<u32>,
    /// Latency on the target, once known.
    replayed: Option<u64>,
    op: WaitOp,
    len: u64,
    sequential: bool,
}

/// An I/O in flight in the original: its completion and shifts.
#[derive(Debug, Clone, PartialEq, Eq)]
struct InFlight {
    completion: u64,
    order: u64,
    deltas: [i64; 3],
    role: Role,
    shared: bool,
    stream: Option<u32>,
    /// The primary model's path of waits up to and including this I/O.
    path: Path,
}

impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.completion, self.order).cmp(&(other.completion, other.order))
    }
}

impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// One model's shift: the shift of the latest I/O issued, and the largest
/// completion shift among the dependencies that completed since (in the
/// original). The next I/O takes the latter when there is one: its think
/// time runs from those completions; otherwise it was issued together with
/// the previous one and shares its shift. (Taking the largest shift of every
/// earlier completion instead would let an old dependency, whose gap to the
/// I/O spans other I/Os, hold a chain back when the drive speeds them up.)
#[derive(Debug, Clone, Default)]
struct Window {
    current: i64,
    fresh: Option<i64>,
    /// The paths of waits behind `current` and `fresh` (kept in the primary
    /// model's windows only).
    current_path: Path,
    fresh_path: Path,
}

impl Window {
    fn starting_at(current: i64) -> Window {
        Window {
            current,
            ..Window::default()
        }
    }

    fn saw(&mut self, delta: i64) {
        self.saw_on(delta, &None);
    }

    fn saw_on(&mut self, delta: i64, path: &Path) {
        if self.fresh.is_none_or(|f| delta > f) {
            self.fresh = Some(delta);
            self.fresh_path = path.clone();
        }
    }

    /// The shift of an I/O issued now.
    fn issue(&mut self) -> i64 {
        if let Some(f) = self.fresh.take() {
            self.current = f;
            self.current_path = self.fresh_path.take();
        }
        self.current
    }

    /// The shift of a point in time now, without issuing.
    fn peek(&self) -> i64 {
        self.fresh.unwrap_or(self.current)
    }

    /// The path behind [`Window::peek`].
    fn peek_path(&self) -> &Path {
        if self.fresh.is_some() {
            &self.fresh_path
        } else {
            &self.current_path
        }
    }
}

/// Plain writes completed since the last durability point: the latest
/// original completion, and the latest completion on the target.
#[derive(Debug, Clone, Default)]
struct Unflushed(Option<(u64, i64, Path)>);

impl Unflushed {
    fn add(&mut self, completion: u64, delta: i64, path: &Path) {
        let end = completion as i64 + delta;
        match &mut self.0 {
            None => self.0 = Some((completion, end, path.clone())),
            Some((c, e, p)) => {
                *c = (*c).max(completion);
                if end > *e {
                    *e = end;
                    *p = path.clone();
                }
            }
        }
    }

    /// The shift of a point that waited for all of them, and the path of
    /// the last to complete on the target: its gap to the last original
    /// completion is kept from that completion. (The largest shift among
    /// them would be a write's early in the burst, with the time the later
    /// ones took counted as a gap.)
    fn take(&mut self) -> Option<(i64, Path)> {
        self.0.take().map(|(c, e, p)| (e - c as i64, p))
    }
}

/// The models that follow writeback only through durability points, in the
/// order of [`Shifts::writeback`].
const WRITEBACK_MODELS: [DependencyModel; 2] = [DependencyModel::Blocking, DependencyModel::Stream];

/// The shifts of the three models; the stream model keeps one per stream
/// (records without a stream share one).
#[derive(Debug, Clone, Default)]
struct Shifts {
    all: Window,
    blocking: Window,
    per_stream: HashMap<u32, Window>,
    /// Per model of [`WRITEBACK_MODELS`]: the shift of the next plain write
    /// (it follows every completion before it, as the flusher's loop does).
    writeback: [Window; 2],
    /// Per model of [`WRITEBACK_MODELS`]: the plain writes completed since
    /// the last durability point.
    unflushed: [Unflushed; 2],
    /// The stream of the latest blocking I/O issued: the thread still at
    /// work when the task was done.
    last_blocking_stream: Option<u32>,
    /// The latest predicted completion (original completion plus its
    /// stream-model shift) of a blocking I/O absorbed so far, ns.
    latest_blocking_end: Option<i64>,
}

const NO_STREAM: u32 = u32::MAX;

impl Shifts {
    /// An I/O completed (in the original) before the current one was issued.
    fn absorb(&mut self, done: &InFlight) {
        self.all.saw(done.deltas[DependencyModel::All.index()]);
        for (k, m) in WRITEBACK_MODELS.iter().enumerate() {
            let d = done.deltas[m.index()];
            // The path is the primary (blocking) model's: kept in its windows.
            let path = if k == 0 { &done.path } else { &None };
            self.writeback[k].saw_on(d, path);
            if done.role == Role::Writeback {
                self.unflushed[k].add(done.completion, d, path);
            }
        }
        if !done.role.blocking() {
            return;
        }
        self.blocking
            .saw_on(done.deltas[DependencyModel::Blocking.index()], &done.path);
        let d = done.deltas[DependencyModel::Stream.index()];
        let end = done.completion as i64 + d;
        self.latest_blocking_end = Some(self.latest_blocking_end.map_or(end, |e| e.max(end)));
        if done.shared {
            for w in self.per_stream.values_mut() {
                w.saw(d);
            }
        } else if let Some(w) = self.per_stream.get_mut(&done.stream.unwrap_or(NO_STREAM)) {
            w.saw(d);
        }
    }

    /// The shift of an I/O of `stream` issued now, per model. A stream seen
    /// for the first time starts from the blocking model's shift (a thread
    /// is started by work that was itself held up).
    /// Also the primary model's path of waits behind its shift.
    fn issue(&mut self, stream: Option<u32>, role: Role) -> ([i64; 3], Path) {
        if role.blocking() {
            self.last_blocking_stream = Some(stream.unwrap_or(NO_STREAM));
        }
        let stream = stream.unwrap_or(NO_STREAM);
        if role == Role::Durability {
            // The writes it covers completed just before it: they count as
            // fresh completions.
            if let Some((c, path)) = self.unflushed[0].take() {
                self.blocking.saw_on(c, &path);
            }
            if let Some((c, _)) = self.unflushed[1].take() {
                let blocking = self.blocking.current;
                self.per_stream
                    .entry(stream)
                    .or_insert(Window::starting_at(blocking))
                    .saw(c);
            }
        }
        let all = self.all.issue();
        let blocking = self.blocking.issue();
        let own = self
            .per_stream
            .entry(stream)
            .or_insert(Window::starting_at(blocking))
            .issue();
        let writeback = [self.writeback[0].issue(), self.writeback[1].issue()];
        match role {
            Role::Writeback => (
                [all, writeback[0], writeback[1]],
                self.writeback[0].current_path.clone(),
            ),
            Role::Blocking | Role::Durability | Role::Other => {
                ([all, blocking, own], self.blocking.current_path.clone())
            }
        }
    }

    /// The shift of the task's end at `end` (ns, the records' clock). In
    /// the stream model the task is done when the stream of its latest
    /// blocking I/O is, and no sooner than every blocking I/O it saw
    /// completes on the target. A stream that stopped earlier does not carry
    /// its shift to the end: its work after its last I/O is not known to
    /// reach the done mark, and its old shift (from a few I/Os) used to set
    /// the end whenever it was the largest.
    fn at_end(&self, end: u64) -> ([i64; 3], Path) {
        let blocking = self.blocking.peek();
        let own = self
            .last_blocking_stream
            .and_then(|s| self.per_stream.get(&s))
            .map(Window::peek);
        let completions = self.latest_blocking_end.map(|e| e - end as i64);
        let stream = match (own, completions) {
            (Some(o), Some(c)) => o.max(c),
            (o, c) => o.or(c).unwrap_or(blocking),
        };
        (
            [self.all.peek(), blocking, stream],
            self.blocking.peek_path().clone(),
        )
    }
}

/// Streams a pass's records and their latencies on the target into a
/// [`TaskTimePrediction`].
#[derive(Debug, Clone)]
pub struct TaskTimeModel {
    marks: TaskMarks,
    /// Admitted records not yet processed, from index `next_index` on.
    admitted: VecDeque<Admitted>,
    next_index: u64,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    shifts: Shifts,
    first_time: Option<u64>,
    /// The end mark's shifts and path, once records past it were reached.
    end_shifts: Option<([i64; 3], Path)>,
    /// Without marks: the latest original and predicted completions.
    last_completion: u64,
    last_predicted: [i64; 3],
    /// The path of the latest predicted completion in the primary model.
    last_path: Path,
    sequence: Sequence,
    /// Why there can be no prediction, once known: a record without an
    /// original completion, or records admitted out of order.
    incomplete: Option<NoTaskTime>,
    processed: u64,
}

impl TaskTimeModel {
    pub fn new(marks: TaskMarks) -> TaskTimeModel {
        TaskTimeModel {
            marks,
            admitted: VecDeque::new(),
            next_index: 0,
            in_flight: BinaryHeap::new(),
            shifts: Shifts::default(),
            first_time: None,
            end_shifts: None,
            last_completion: 0,
            last_predicted: [i64::MIN; 3],
            last_path: None,
            sequence: Sequence::default(),
            incomplete: None,
            processed: 0,
        }
    }

    /// Takes the next record of the trace (every record, in order, with its
    /// index). `sent`: it goes to the target and its latency will follow;
    /// otherwise (skipped) it keeps its original latency.
    pub fn admit(&mut self, index: u64, rec: &IoRecord, sent: bool) {
        let Some(latency) = rec.latency.map(|l| l.0) else {
            self.incomplete
                .get_or_insert(NoTaskTime::NoOriginalCompletions);
            return;
        };
        if index != self.next_index + self.admitted.len() as u64 {
            // Out of order: the caller broke the contract; predict nothing.
            self.incomplete.get_or_insert(NoTaskTime::Unfinished);
            return;
        }
        let role = Role::of(rec);
        let shared = role == Role::Durability || (role == Role::Blocking && rec.op != Op::Read);
        self.admitted.push_back(Admitted {
            time: rec.time.0,
            latency,
            role,
            shared,
            stream: rec.stream,
            replayed: (!sent).then_some(latency),
            op: waits::wait_op(rec),
            len: rec.len.0,
            sequential: self.sequence.sequential(rec),
        });
        self.drain();
    }

    /// The record `index` completed on the target after `latency_ns`.
    pub fn completed(&mut self, index: u64, latency_ns: u64) {
        let Some(pos) = index.checked_sub(self.next_index) else {
            return;
        };
        if let Some(a) = self.admitted.get_mut(pos as usize) {
            a.replayed = Some(latency_ns);
        }
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(a) = self.admitted.front().copied() {
            let Some(replayed) = a.replayed else { break };
            self.admitted.pop_front();
            self.next_index += 1;
            self.process(a, replayed);
        }
    }

    /// Moves every original completion at or before `t` into the shifts.
    fn absorb_until(&mut self, t: u64) {
        while let Some(Reverse(top)) = self.in_flight.peek() {
            if top.completion > t {
                break;
            }
            let done = top.clone();
            self.in_flight.pop();
            self.shifts.absorb(&done);
        }
    }

    /// The "done" mark, on the records' clock.
    fn end_time(&self) -> Option<u64> {
        self.marks.end.map(|e| e.0)
    }

    fn take_end_if_passed(&mut self, t: u64) {
        if self.end_shifts.is_some() {
            return;
        }
        if let Some(end) = self.end_time() {
            if t > end {
                self.absorb_until(end);
                self.end_shifts = Some(self.shifts.at_end(end));
            }
        }
    }

    fn process(&mut self, a: Admitted, replayed: u64) {
        self.first_time.get_or_insert(a.time);
        self.take_end_if_passed(a.time);
        self.absorb_until(a.time);
        let queue_depth = self.in_flight.len() as u32 + 1;
        let (shifts, parent) = self.shifts.issue(a.stream, a.role);
        let change = replayed as i64 - a.latency as i64;
        let deltas = shifts.map(|s| s + change);
        let class = WaitClass::of(a.op, a.len, queue_depth, a.sequential);
        let path = waits::extend(&parent, class, replayed);
        let completion = a.time.saturating_add(a.latency);
        self.last_completion = self.last_completion.max(completion);
        let primary = DependencyModel::PRIMARY.index();
        if completion as i64 + deltas[primary] > self.last_predicted[primary] {
            self.last_path = path.clone();
        }
        for (p, d) in self.last_predicted.iter_mut().zip(deltas) {
            *p = (*p).max(completion as i64 + d);
        }
        self.in_flight.push(Reverse(InFlight {
            completion,
            order: self.processed,
            deltas,
            role: a.role,
            shared: a.shared,
            stream: a.stream,
            path,
        }));
        self.processed += 1;
    }

    /// The prediction, or why there is none: the trace lacks original
    /// completions, nothing was replayed, or some record's latency never came.
    pub fn finish(mut self) -> Result<TaskTimePrediction, NoTaskTime> {
        if let Some(why) = self.incomplete {
            return Err(why);
        }
        if !self.admitted.is_empty() {
            return Err(NoTaskTime::Unfinished);
        }
        let first = self.first_time.ok_or(NoTaskTime::Unfinished)?;
        let untraced = self.marks.untraced.map(|u| u.0);
        if let Some(end_rel) = self.end_time() {
            if self.end_shifts.is_none() {
                self.absorb_until(end_rel);
                self.end_shifts = Some(self.shifts.at_end(end_rel));
            }
            let (shifts, path) = self.end_shifts.take().unwrap_or_default();
            let captured = self.marks.captured().map_or(end_rel, |c| c.0);
            let base = untraced.unwrap_or(captured);
            let raw = shifts.map(|s| (base as i64 + s).max(0) as u64);
            Ok(self.prediction(captured, base, raw, true, &path))
        } else {
            let captured = self.last_completion.saturating_sub(first);
            let base = untraced.unwrap_or(captured);
            let raw = self
                .last_predicted
                .map(|p| (base as i64 + (p - self.last_completion as i64)).max(0) as u64);
            Ok(self.prediction(captured, base, raw, false, &self.last_path))
        }
    }

    fn prediction(
        &self,
        captured: u64,
        base: u64,
        raw: [u64; 3],
        marked: bool,
        path: &Path,
    ) -> TaskTimePrediction {
        let capture_drive = &self.marks.capture_drive;
        let cpu_floor = self.cpu_floor(marked, captured);
        let calibrated = calibrate(raw, base, capture_drive);
        let predicted = floored(calibrated, cpu_floor);
        TaskTimePrediction {
            captured: Nanos(captured),
            untraced: self.marks.untraced,
            marked,
            predicted,
            uncalibrated: capture_drive.is_set().then(|| model_times(raw)),
            waits: waits::class_waits(path),
            cpu_floor,
            unfloored: (predicted != calibrated).then_some(calibrated),
        }
    }

    /// The least time the task can take on any drive: the CPU time its
    /// busiest thread ran between the marks at capture, at the pace of the
    /// untraced runs the prediction starts from. A capture that took longer
    /// than the untraced time ran its work slower (the host's pace moves
    /// from run to run, tracing costs a little), so its CPU time is scaled by
    /// untraced / captured; a faster capture keeps its own. Only for a
    /// marked span (the time was measured between the marks).
    fn cpu_floor(&self, marked: bool, captured: u64) -> Option<Nanos> {
        let busiest = self.marks.cpu.filter(|_| marked)?.busiest_thread.0;
        let pace = match self.marks.untraced {
            Some(untraced) if untraced.0 < captured => (untraced.0, captured),
            _ => (1, 1),
        };
        Some(Nanos(
            (u128::from(busiest) * u128::from(pace.0) / u128::from(pace.1)) as u64,
        ))
    }
}

#[cfg(test)]
mod tests;
