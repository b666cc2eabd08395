//! The state of one pass: slots in flight, counters, histograms.

use super::lanes::{LaneBoard, Predecessors};
use super::IoListener;
use super::{IoEvent, Observer, PROGRESS_EVERY};
use crate::host_time::now_ns;
use crate::metrics::{new_histogram, OpStats, PassOutcome};
use crate::prediction::{NoTaskTime, TaskObserver};
use crate::schedule::{DependencyGate, IssueSchedule};
use results::fleet::{PassClock, VolumeMetrics};
use results::schema::Skipped;
use trace_format::Op;

/// Passes everything through but never asks to stop (for draining).
pub(super) struct NeverStop<'a>(pub(super) &'a mut dyn Observer);

impl Observer for NeverStop<'_> {
    fn progress(&mut self, n: u64) {
        self.0.progress(n)
    }
    fn wants_io_events(&self) -> bool {
        self.0.wants_io_events()
    }
    fn io_completed(&mut self, e: &IoEvent) {
        self.0.io_completed(e)
    }
    fn should_stop(&self) -> bool {
        false
    }
}

/// The next I/O to issue, mapped.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pending {
    pub index: u64,
    pub op: Op,
    /// Time in the schedule (see [`IssueSchedule::admit`]).
    pub virtual_ns: u64,
    pub orig_issue: u64,
    /// `u64::MAX` when unknown.
    pub orig_completion: u64,
    pub target: u32,
    pub offset: u64,
    pub len: u64,
    /// The trace device (source volume) it comes from.
    pub device: u16,
    /// It had to wait for a slot or a dependency.
    pub waited: bool,
    /// With several rings: the other rings must have issued every record up
    /// to this index first.
    pub wait_past: Option<u64>,
    /// What a write asks of the drive's write cache.
    pub cache: CacheFlags,
}

/// A write's demands on the drive's write cache, as the trace recorded them
/// (REQ_PREFLUSH, REQ_FUA): a journal commit block carries both, and on a
/// drive with a volatile cache the flush it waits for can cost more than the
/// write. Replayed as a flush linked before the write and as `RWF_DSYNC`
/// (which the block layer sends as FUA, or as the write and a flush where
/// the drive has no FUA).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct CacheFlags {
    pub preflush: bool,
    pub fua: bool,
}

impl Pending {
    /// The original completion on the virtual clock (its latency is never
    /// idle time, so the idle cap does not cut it).
    pub fn virtual_completion(&self) -> u64 {
        self.virtual_ns
            .saturating_add(self.orig_completion.saturating_sub(self.orig_issue))
    }
}

/// An I/O in flight, by ring slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub index: u64,
    pub op: Op,
    pub target: u32,
    pub offset: u64,
    pub len: u64,
    pub device: u16,
    pub sched_ns: u64,
    pub submit_ns: u64,
    pub in_flight: bool,
    /// The original completion (`u64::MAX`: unknown) and its virtual time,
    /// for think pacing.
    pub orig_completion: u64,
    pub virtual_completion: u64,
    /// The result of the flush linked before this write, where it failed
    /// (0 otherwise): the write itself then completes as cancelled.
    pub preflush_result: i32,
}

/// What a pass is set up with.
pub(super) struct PassSetup {
    pub queue_depth: u32,
    pub warmup: bool,
    /// The observer wants every I/O.
    pub log_events: bool,
    pub targets: usize,
    /// With no completion for this long while I/O is in flight, fail.
    pub io_timeout_ns: u64,
    /// Count per source volume, named from this table (`None`: not
    /// counted, a single-device trace).
    pub volume_table: Option<Vec<trace_format::DeviceId>>,
}

/// The state of one pass: slots, counters, histograms.
pub(super) struct Pass<'b> {
    pub slots: Vec<Slot>,
    pub free: Vec<u32>,
    /// Slots whose SQEs are queued but not submitted.
    pub queued: Vec<u32>,
    pub inflight: u32,
    inflight_data: u32,
    /// The original completions in flight, for dependencies.
    pub gate: DependencyGate,
    /// Deadlines and virtual time.
    pub schedule: IssueSchedule,
    /// Records taken from the trace so far (skipped ones too).
    pub records_read: u64,
    pub io_timeout_ns: u64,
    /// The schedule's start: the base of `IoEvent` times.
    pub start_ns: Option<u64>,
    first_submit_ns: Option<u64>,
    last_complete_ns: u64,
    pub last_activity_ns: u64,
    busy_start_ns: u64,
    pub busy_ns: u64,
    completed: u64,
    ops: [OpStats; 5],
    lateness: hdrhistogram::Histogram<u64>,
    pub skipped: Skipped,
    /// Writes issued with their record's FUA or preflush.
    pub cache_flag_writes: u64,
    warmup: bool,
    pub interrupted: bool,
    pub original_duration_ns: u64,
    /// Time the issuing thread and its io_uring workers waited for a CPU
    /// (None where the kernel does not say).
    pub cpu_wait_ns: Option<u64>,
    /// Per target: no "not supported" answer to a discard in this pass.
    pub discard_supported: Vec<bool>,
    log_events: bool,
    /// With several rings: the shared board and this ring's number.
    pub lane: Option<(&'b LaneBoard, usize)>,
    /// With several rings: the other rings' records this ring waits for.
    pub predecessors: Predecessors,
    /// The task-time prediction, listening to the pass's I/O.
    pub task: TaskObserver,
    /// When the pass was ready to issue (monotonic ns).
    ready_ns: u64,
    /// The first issued I/O's deadline.
    first_sched_ns: Option<u64>,
    /// The last issued I/O's place on the trace's timeline (realtime, no
    /// closed-loop shift) and when it was submitted.
    pub last_timeline_ns: Option<u64>,
    last_submit_ns: u64,
    /// Per source volume (by device index), when counted.
    volumes: Vec<VolumeMetrics>,
    volume_table: Option<Vec<trace_format::DeviceId>>,
}

impl<'b> Pass<'b> {
    pub fn new(
        setup: PassSetup,
        schedule: IssueSchedule,
        lane: Option<(&'b LaneBoard, usize)>,
    ) -> Pass<'b> {
        let PassSetup {
            queue_depth,
            warmup,
            log_events,
            targets,
            io_timeout_ns,
            volume_table,
        } = setup;
        let empty = Slot {
            index: 0,
            op: Op::Read,
            target: 0,
            offset: 0,
            len: 0,
            device: 0,
            sched_ns: 0,
            submit_ns: 0,
            in_flight: false,
            orig_completion: u64::MAX,
            virtual_completion: u64::MAX,
            preflush_result: 0,
        };
        Pass {
            slots: vec![empty; queue_depth as usize],
            free: (0..queue_depth).rev().collect(),
            queued: Vec::with_capacity(queue_depth as usize),
            inflight: 0,
            inflight_data: 0,
            gate: DependencyGate::new(queue_depth as usize),
            schedule,
            records_read: 0,
            io_timeout_ns,
            start_ns: None,
            first_submit_ns: None,
            last_complete_ns: 0,
            last_activity_ns: now_ns(),
            busy_start_ns: 0,
            busy_ns: 0,
            completed: 0,
            ops: Default::default(),
            lateness: new_histogram(),
            skipped: Skipped::default(),
            cache_flag_writes: 0,
            warmup,
            interrupted: false,
            original_duration_ns: 0,
            cpu_wait_ns: None,
            discard_supported: vec![true; targets],
            log_events,
            lane,
            predecessors: Predecessors::default(),
            task: TaskObserver::Off(NoTaskTime::NotRealtime),
            ready_ns: now_ns(),
            first_sched_ns: None,
            last_timeline_ns: None,
            last_submit_ns: 0,
            volumes: Vec::new(),
            volume_table,
        }
    }

    pub fn progress(&mut self, observer: &mut dyn Observer) {
        self.completed += 1;
        if self.completed.is_multiple_of(PROGRESS_EVERY) {
            observer.progress(self.completed);
        }
    }

    pub fn stamp_submitted(&mut self, now: u64) {
        for &i in &self.queued {
            let Some(slot) = self.slots.get_mut(i as usize) else {
                continue;
            };
            slot.submit_ns = now;
            let _ = self
                .lateness
                .record(now.saturating_sub(slot.sched_ns).max(1));
            if slot.op.carries_data() {
                if self.inflight_data == 0 {
                    self.busy_start_ns = now;
                    if let Some((board, _)) = self.lane {
                        board.busy_edge(true, now);
                    }
                }
                self.inflight_data += 1;
            }
        }
        if self.first_submit_ns.is_none() {
            self.first_sched_ns = self
                .queued
                .first()
                .and_then(|&i| self.slots.get(i as usize))
                .map(|s| s.sched_ns);
        }
        self.first_submit_ns.get_or_insert(now);
        self.last_submit_ns = now;
        self.last_activity_ns = now;
        self.queued.clear();
    }

    /// The flush linked before the write in `slot_index` failed with
    /// `result`; the write's own completion (cancelled) follows.
    pub fn preflush_failed(&mut self, slot_index: u32, result: i32) {
        if let Some(slot) = self.slots.get_mut(slot_index as usize) {
            if slot.in_flight {
                slot.preflush_result = result;
            }
        }
    }

    pub fn complete(
        &mut self,
        slot_index: u32,
        result: i32,
        now: u64,
        observer: &mut dyn Observer,
    ) {
        let Some(slot) = self.slots.get_mut(slot_index as usize) else {
            return;
        };
        if !slot.in_flight {
            return;
        }
        slot.in_flight = false;
        // A write cancelled because the flush linked before it failed
        // reports the flush's error, the cause.
        let result = if result == -libc::ECANCELED && slot.preflush_result < 0 {
            slot.preflush_result
        } else {
            result
        };
        let slot = *slot;
        self.free.push(slot_index);
        self.inflight -= 1;
        self.gate.leave(slot_index as usize);
        self.schedule
            .completed(slot.orig_completion, slot.virtual_completion, now);
        if let Some((board, _)) = self.lane {
            board.release();
        }
        self.last_complete_ns = now;
        self.last_activity_ns = now;
        if slot.op.carries_data() {
            self.inflight_data -= 1;
            if self.inflight_data == 0 {
                self.busy_ns += now.saturating_sub(self.busy_start_ns);
                if let Some((board, _)) = self.lane {
                    board.busy_edge(false, now);
                }
            }
        }
        let unsupported = slot.op == Op::Discard
            && matches!(
                -result,
                libc::EOPNOTSUPP | libc::EINVAL | libc::ENOTTY | libc::ENXIO
            );
        if unsupported {
            self.task
                .completed(slot.index, now.saturating_sub(slot.submit_ns));
            if let Some(s) = self.discard_supported.get_mut(slot.target as usize) {
                *s = false;
            }
            self.skipped.discards += 1;
        } else if let Some(stats) = self.ops.get_mut(slot.op.code() as usize) {
            let latency = now.saturating_sub(slot.submit_ns);
            self.task.completed(slot.index, latency);
            let failed = result < 0 || (slot.op.carries_data() && (result as u64) < slot.len);
            if self.volume_table.is_some() {
                count_volume(&mut self.volumes, &slot, failed, result, latency);
            }
            stats.count += 1;
            if result < 0 || (slot.op.carries_data() && (result as u64) < slot.len) {
                stats.errors += 1;
                stats.bytes += result.max(0) as u64;
            } else {
                stats.bytes += slot.len;
                stats.latency_sum_ns += latency as u128;
                let _ = stats.latency.record(latency.max(1));
            }
        }
        if self.log_events {
            let base = self.start_ns.unwrap_or(0);
            observer.io_completed(&IoEvent {
                index: slot.index,
                op: slot.op,
                target: slot.target,
                offset: slot.offset,
                len: slot.len,
                scheduled_ns: slot.sched_ns.saturating_sub(base),
                submit_ns: slot.submit_ns.saturating_sub(base),
                complete_ns: now.saturating_sub(base),
                result,
                ring: self.lane.map_or(0, |(_, me)| me as u32),
            });
        }
        self.progress(observer);
    }

    /// With several rings: publishes the earliest original completion in
    /// flight (when dependencies apply).
    pub fn publish_min_completion(&mut self) {
        if let Some((board, me)) = self.lane {
            if self.schedule.rules().dependencies {
                board.publish_min_completion(me, self.gate.min_inflight_completion());
            }
        }
    }

    /// With several rings, after an issue: publishes the in-flight
    /// completions, then that every record before `next` is issued.
    pub fn publish_lane_state(&mut self, next: u64) {
        self.publish_min_completion();
        if let Some((board, me)) = self.lane {
            board.publish_next(me, next);
        }
    }

    /// Adds another ring's pass of the same trace (busy time excepted: the
    /// caller sets the union).
    pub fn absorb(&mut self, other: Pass<'_>) {
        for (a, b) in self.ops.iter_mut().zip(&other.ops) {
            a.count += b.count;
            a.bytes += b.bytes;
            a.errors += b.errors;
            a.latency_sum_ns += b.latency_sum_ns;
            let _ = a.latency.add(&b.latency);
        }
        let _ = self.lateness.add(&other.lateness);
        let (s, o) = (&mut self.skipped, &other.skipped);
        s.read_only += o.read_only;
        s.by_option += o.by_option;
        s.discards += o.discards;
        s.write_zeroes += o.write_zeroes;
        s.empty += o.empty;
        self.cache_flag_writes += other.cache_flag_writes;
        self.first_submit_ns = match (self.first_submit_ns, other.first_submit_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_complete_ns = self.last_complete_ns.max(other.last_complete_ns);
        self.ready_ns = self.ready_ns.max(other.ready_ns);
        self.first_sched_ns = match (self.first_sched_ns, other.first_sched_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if other.last_submit_ns > self.last_submit_ns {
            self.last_submit_ns = other.last_submit_ns;
            self.last_timeline_ns = other.last_timeline_ns;
        }
        for (i, v) in other.volumes.into_iter().enumerate() {
            if self.volumes.len() <= i {
                self.volumes.resize_with(i + 1, VolumeMetrics::default);
            }
            if let Some(mine) = self.volumes.get_mut(i) {
                mine.add(&v);
            }
        }
        self.completed += other.completed;
        self.interrupted |= other.interrupted;
        // Each ring saw only its own records.
        self.task = TaskObserver::Off(NoTaskTime::SeveralRings);
        // Rings run side by side: the longest wait is the pass's.
        self.cpu_wait_ns = match (self.cpu_wait_ns, other.cpu_wait_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    pub fn finish(self) -> PassOutcome {
        let wall = crate::host_time::WallClock::read();
        let clock = PassClock {
            ready_unix_ns: wall.to_unix(self.ready_ns),
            first_due_unix_ns: self.first_sched_ns.map(|t| wall.to_unix(t)),
            first_issue_unix_ns: self.first_submit_ns.map(|t| wall.to_unix(t)),
            last_complete_unix_ns: (self.last_complete_ns > 0)
                .then(|| wall.to_unix(self.last_complete_ns)),
            behind_schedule_ns: self
                .last_timeline_ns
                .map(|t| self.last_submit_ns.saturating_sub(t)),
        };
        let table = self.volume_table.unwrap_or_default();
        let volumes = self
            .volumes
            .into_iter()
            .enumerate()
            .filter(|(_, v)| v.ios > 0)
            .map(|(i, mut v)| {
                v.volume = crate::shard::volume_name(&table, i as u16);
                v
            })
            .collect();
        PassOutcome {
            clock,
            volumes,
            warmup: self.warmup,
            interrupted: self.interrupted,
            ops: self.ops,
            lateness: self.lateness,
            busy_ns: self.busy_ns,
            playback_ns: self
                .first_submit_ns
                .map_or(0, |f| self.last_complete_ns.saturating_sub(f)),
            original_duration_ns: self.original_duration_ns,
            skipped: self.skipped,
            cache_flag_writes: self.cache_flag_writes,
            task: if self.interrupted {
                Err(NoTaskTime::Interrupted)
            } else {
                self.task.finish()
            },
            cpu_wait_ns: self.cpu_wait_ns,
        }
    }
}

/// Adds one completed I/O to its volume's counters.
fn count_volume(
    volumes: &mut Vec<VolumeMetrics>,
    slot: &Slot,
    failed: bool,
    result: i32,
    latency: u64,
) {
    let i = slot.device as usize;
    if volumes.len() <= i {
        volumes.resize_with(i + 1, VolumeMetrics::default);
    }
    let Some(v) = volumes.get_mut(i) else { return };
    v.ios += 1;
    let bytes = if failed {
        result.max(0) as u64
    } else {
        slot.len
    };
    match slot.op {
        Op::Read => v.read_bytes += bytes,
        Op::Write => v.write_bytes += bytes,
        _ => {}
    }
    if failed {
        v.errors += 1;
    } else if slot.op.carries_data() {
        v.data_ios += 1;
        v.latency_sum_ns += latency;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ReplayOptions;
    use crate::schedule::ScheduleRules;
    use crate::IoLog;

    /// A pass with one 4 KiB write submitted and in flight; its slot.
    fn pass_with_a_write() -> (Pass<'static>, u32) {
        let setup = PassSetup {
            queue_depth: 2,
            warmup: false,
            log_events: true,
            targets: 1,
            io_timeout_ns: u64::MAX,
            volume_table: None,
        };
        let rules = ScheduleRules::new(&ReplayOptions::default(), false);
        let mut pass = Pass::new(setup, IssueSchedule::new(rules), None);
        let slot = pass.free.pop().expect("a free slot");
        pass.slots[slot as usize] = Slot {
            index: 0,
            op: Op::Write,
            target: 0,
            offset: 0,
            len: 4096,
            device: 0,
            sched_ns: 0,
            submit_ns: 0,
            in_flight: true,
            orig_completion: u64::MAX,
            virtual_completion: u64::MAX,
            preflush_result: 0,
        };
        pass.inflight += 1;
        pass.gate.enter(slot as usize, u64::MAX);
        pass.queued.push(slot);
        pass.stamp_submitted(now_ns());
        (pass, slot)
    }

    /// A write the kernel cancelled because the flush linked before it (its
    /// preflush) failed reports the flush's error, the cause, and counts as
    /// a failed write; a write cancelled otherwise keeps its own result.
    #[test]
    fn a_write_whose_preflush_failed_reports_the_flushs_error() {
        let (mut pass, slot) = pass_with_a_write();
        pass.preflush_failed(slot, -libc::EIO);
        let mut log = IoLog::default();
        pass.complete(slot, -libc::ECANCELED, now_ns(), &mut log);
        assert_eq!(log.0.len(), 1);
        assert_eq!(log.0[0].result, -libc::EIO);
        let writes = &pass.ops[Op::Write.code() as usize];
        assert_eq!((writes.count, writes.errors), (1, 1));
        assert_eq!(pass.inflight, 0);

        let (mut pass, slot) = pass_with_a_write();
        let mut log = IoLog::default();
        pass.complete(slot, -libc::ECANCELED, now_ns(), &mut log);
        assert_eq!(log.0[0].result, -libc::ECANCELED);
        // A report for a slot no longer in flight is not kept for the
        // slot's next request.
        pass.preflush_failed(slot, -libc::EIO);
        assert_eq!(pass.slots[slot as usize].preflush_result, 0);
    }
}
