//! The io_uring engine: one pass of one trace.
//!
//! One thread, one ring. Records stream in; each is mapped, then issued when
//! (1) a slot is free (the queue depth caps concurrency in every mode),
//! (2) its dependencies have completed, and (3) its scheduled time has come.
//!
//! Dependencies: when every record has an original completion time, an I/O
//! depends on every I/O that had completed before it was issued in the
//! original. Records are issued in order, so everything before an I/O has
//! been issued; what is left is to wait until no I/O still in flight in the
//! replay had an original completion at or before this I/O's original issue
//! time. That is one comparison against the minimum original completion time
//! of the in-flight set (at most queue-depth slots), no per-I/O sets. Without
//! completion times, the original order and the queue depth are all there is.
//!
//! Timing: `compressed` issues as soon as (1) and (2) allow. `realtime`
//! schedules record i at `start + shift + (t_i - t_0) / scale`; when waiting
//! on (1) or (2) made an I/O later than its schedule, `shift` grows by that
//! much (closed loop: a slow drive delays the rest, as it would the
//! application). `--open-loop` ignores completions (no dependencies, no
//! shift). `--idle-cap` shortens original idle periods (no I/O outstanding in
//! the original) longer than the cap to the cap before scheduling. These
//! rules live in [`crate::schedule`] (pure, unit-tested); this module asks
//! them and does the waiting.
//!
//! Files: `pass.rs` (per-pass state: slots, counters), `ring.rs` (ring
//! set-up, submission, waits), `priority.rs` (`--priority high`),
//! `placement.rs` (`--io-worker-cpu`), `lanes.rs` (several rings),
//! `issue.rs` (one request into the ring), `observer.rs` (what a pass
//! reports: to the caller, and to listeners such as the task prediction).
//!
//! Submission is batched: SQEs are queued while further I/Os are due, and
//! submitted in one `io_uring_enter` before any wait; when nothing else is in
//! flight, the wait's own `io_uring_enter` submits them (one call, not two).
//! Waits for a future time sleep in `io_uring_enter` with a timeout (reaping
//! completions as they come) and spin the last tens of microseconds. Buffers
//! are registered once; nothing is allocated per I/O.
//!
//! Discards go to block devices as `BLOCK_URING_CMD_DISCARD` (asynchronous,
//! Linux 6.12+); on files, on devices without support and on older kernels
//! they are skipped and counted. Write-zeroes have no asynchronous form and
//! are skipped and counted.

mod cpu_wait;
mod idle_spin;
mod issue;
mod lanes;
mod observer;
mod pass;
mod placement;
mod priority;
mod ring;
mod write_data;

pub use observer::{IoEvent, IoListener, Observer, PassKind};
pub use priority::realtime_priority_available;

use crate::buffer::AlignedBuf;
use crate::host_time::now_ns;
use crate::mapping::{AddressMap, TraceScan};
use crate::metrics::PassOutcome;
use crate::options::{IoWorkerCpu, ReplayOptions, TimingMode};
use crate::prediction::TaskObserver;
use crate::schedule::{IssueSchedule, ScheduleRules};
use crate::source::TraceSource;
use crate::target::{Target, TargetKind, Targets};
use crate::ReplayError;
use idle_spin::IdleSpin;
use io_uring::IoUring;
use lanes::LaneBoard;
use pass::{CacheFlags, NeverStop, Pass, PassSetup, Pending};
use placement::CpuPin;
use priority::PriorityGuard;
use ring::{cooperative_ring, share_punted_work, CompletionWaits};
use trace_format::{Flags, IoRecord, Op};
use write_data::WriteData;

/// `_IO(0x12, 0)`: the block layer's asynchronous discard command.
const BLOCK_URING_CMD_DISCARD: u32 = 0x1200;
/// The last stretch before a deadline is spun, not slept.
const SPIN_NS: u64 = 50_000;
/// The same under `--priority high`: a real-time thread wakes from a sleep
/// within a few microseconds, and a shorter spin keeps it from using a
/// whole core at high rates (which would trip the kernel's real-time
/// throttling: a 50 ms stall every second).
const FIFO_SPIN_NS: u64 = 10_000;
/// Compressed mode: how long a wait for a completion polls the ring before
/// it sleeps in the kernel (`Engine::wait_completion`). Realtime mode does
/// not poll: tried at 100 µs, game-launch-0ad on zram scored 0.86x (4
/// alternating pairs, lower in all 4; docs/measurements/replay-engine.md).
const COMPLETION_SPIN_NS: u64 = 50_000;
/// A wait for a completion polls only with at most this many I/Os in
/// flight: deeper, the device's queue covers the issuer's wake-up, and
/// polling would only cost CPU. The same on a target served by io-wq
/// workers: up to this depth io-wq runs one worker there
/// (`CONCURRENT_WORK_FROM_INFLIGHT`), so the poller does not take the
/// workers' CPU. (When every request was concurrent work, several workers,
/// polling beyond two per CPU had cost zram QD8 and QD16 0.93x and 0.96x.)
const COMPLETION_SPIN_MAX_INFLIGHT: u32 = 16;
/// Compressed mode, on a target without non-blocking I/O (`punted`): a
/// request goes to io-wq as "concurrent" work (IOSQE_ASYNC: io-wq starts a
/// worker for it when none is free) only with at least this many already in
/// flight, or where the completion waits do not poll or polling stopped
/// paying (`CompletionWaits::paying`). Otherwise it goes as ordinary work
/// (the inline attempt fails at once and punts it), which one worker serves
/// while it does not sleep, fed by the polling issuer: more workers only
/// compete with the two for the CPUs. Deeper, the issuer sleeps and the
/// workers use every CPU. Measured on zram, 2 CPUs, against fio's replay
/// (docs/measurements/replay-engine.md): full sweeps of 4 paired runs, always
/// concurrent -> ordinary below 16, QD4 0.79 -> 1.20, QD16 0.98 -> 1.27;
/// alternating rounds with the fallback below, QD4 0.80 -> 1.36, QD8 0.94 ->
/// 1.09. The fallback is for the runs where one worker went badly (a sweep
/// in some sweeps: QD2-4 at 18-23k IOPS against 150k+): completions then
/// come later than the polling budget, and concurrent work brings back the
/// workers that did not fail that way.
const CONCURRENT_WORK_FROM_INFLIGHT: u32 = COMPLETION_SPIN_MAX_INFLIGHT;
/// How long a ring waiting for another ring sleeps for its own completions.
const LANE_WAIT_NS: u32 = 20_000;
/// Most completions between two progress callbacks.
const PROGRESS_EVERY: u64 = 4096;

/// What one pass replays, and how.
pub struct PassPlan<'a> {
    /// The trace's name, for the observer.
    pub trace: &'a str,
    pub source: &'a dyn TraceSource,
    pub scan: &'a TraceScan,
    pub map: &'a AddressMap,
    pub opts: &'a ReplayOptions,
    pub kind: PassKind,
}

/// The ring, the target and the registered buffers, reused across passes.
pub struct Engine<'t> {
    targets: &'t Targets,
    ring: IoUring,
    queue_depth: u32,
    slot_len: u64,
    read_bufs: AlignedBuf,
    /// Each slot's write buffer (write_data.rs).
    write_data: WriteData,
    /// Whether the buffers are registered (READ_FIXED/WRITE_FIXED); false where
    /// the memory-lock limit refused pinning them.
    fixed_buffers: bool,
    /// Per target: block device opened for writing, and no "not supported" yet.
    discard_supported: Vec<bool>,
    /// How long before a deadline the wait spins instead of sleeping.
    spin_ns: u64,
    /// The same with nothing in flight: shorter, as far as this thread's
    /// measured wake-up lateness allows (idle_spin.rs).
    idle_spin: IdleSpin,
    /// Per target: no non-blocking I/O, so every request goes to io-wq;
    /// its SQEs carry IOSQE_ASYNC (see `Engine::new`).
    punted: Vec<bool>,
    /// Compressed mode's cooperative ring (see `Engine::new`). It also hands
    /// each request to the kernel as soon as it is queued (`Engine::issue`).
    cooperative: bool,
    /// `--io-worker-cpu issuer`: the CPU of the issuing thread and io-wq's
    /// workers, chosen at the first pass that asks (`Some(None)`: refused).
    worker_cpu: Option<Option<usize>>,
    /// This pass's thread is held on the workers' CPU: its spin before a
    /// deadline yields, so a worker with a request can run.
    pinned: bool,
    /// How long a wait polls for a completion before sleeping, and whether
    /// that has paid lately (see `Engine::wait_completion`).
    completion_waits: CompletionWaits,
}

impl<'t> Engine<'t> {
    /// Sets up a ring for `queue_depth` I/Os of up to `max_len` bytes.
    /// `cooperative`: the caller issues as fast as it can (compressed mode)
    /// and never spins waiting for a time, so completions may wait for its
    /// next system call.
    pub fn new(
        targets: &'t Targets,
        queue_depth: u32,
        max_len: u64,
        cooperative: bool,
    ) -> Result<Engine<'t>, ReplayError> {
        let ring_err = |what: &str| {
            let what = what.to_string();
            move |source| ReplayError::Ring { what, source }
        };
        let slot_len = max_len.max(4096).div_ceil(4096) * 4096;
        let read_total = slot_len.saturating_mul(queue_depth as u64);
        if read_total > 1 << 30 {
            return Err(ReplayError::Options(format!(
                "queue depth {queue_depth} times the largest request ({slot_len} bytes) needs more than 1 GiB of buffers; lower --queue-depth"
            )));
        }
        let entries = queue_depth.next_power_of_two().max(8);
        let ring = if cooperative {
            cooperative_ring(entries)
        } else {
            let mut builder = IoUring::builder();
            builder.setup_submit_all();
            builder.build(entries)
        }
        .or_else(|_| IoUring::new(entries))
        .map_err(ring_err("cannot create a ring (is io_uring disabled?)"))?;
        let mut read_bufs =
            AlignedBuf::new(read_total as usize).map_err(ring_err("cannot allocate buffers"))?;
        // Writes carry incompressible data from buffers of their own; reads
        // land in separate ones, so whatever the device returns never leaks
        // into later writes.
        let write_data = WriteData::new(queue_depth as usize, slot_len as usize)
            .map_err(ring_err("cannot allocate buffers"))?;
        trace_format::rng::WyRand::from_entropy().fill(read_bufs.as_mut_slice());
        let mut iovecs: Vec<libc::iovec> = (0..queue_depth as usize)
            .map(|i| libc::iovec {
                // SAFETY: each slot lies inside read_bufs.
                iov_base: unsafe { read_bufs.as_mut_ptr().add(i * slot_len as usize) }.cast(),
                iov_len: slot_len as usize,
            })
            .collect();
        iovecs.push(write_data.iovec());
        // SAFETY: the buffers outlive the ring (both are fields of Engine and
        // the ring is dropped first, as declared before them).
        // Registering pins the buffers, which counts against RLIMIT_MEMLOCK
        // (8 MiB for ordinary users on most systems): where it is refused, the
        // same buffers are used unregistered, with plain READ/WRITE.
        let fixed_buffers = match unsafe { ring.submitter().register_buffers(&iovecs) } {
            Ok(()) => true,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOMEM) | Some(libc::EPERM)) => false,
            Err(e) => return Err(ring_err("cannot register buffers")(e)),
        };
        let punted: Vec<bool> = targets.iter().map(|t| !t.nowait).collect();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        if punted.contains(&true) {
            share_punted_work(&ring, !cooperative);
        }
        let fds: Vec<i32> = targets.iter().map(Target::fd).collect();
        ring.submitter()
            .register_files(&fds)
            .map_err(ring_err("cannot register the targets"))?;
        Ok(Engine {
            targets,
            ring,
            queue_depth,
            slot_len,
            read_bufs,
            write_data,
            fixed_buffers,
            discard_supported: targets
                .iter()
                .map(|t| t.kind == TargetKind::BlockDevice && t.writable)
                .collect(),
            spin_ns: SPIN_NS,
            idle_spin: IdleSpin::new(),
            punted,
            cooperative,
            worker_cpu: None,
            pinned: false,
            // Polling needs a second CPU: on one, it would hold off the
            // worker (io-wq or the driver's) that completes the request.
            completion_waits: CompletionWaits::new(if cooperative && cpus >= 2 {
                COMPLETION_SPIN_NS
            } else {
                0
            }),
        })
    }

    /// Replays a trace once.
    pub fn run_pass(
        &mut self,
        plan: &PassPlan<'_>,
        observer: &mut dyn Observer,
    ) -> Result<PassOutcome, ReplayError> {
        observer.pass_started(plan.trace, plan.kind, plan.scan.summary.ios);
        let (lanes, split) = self.lane_plan(plan);
        let outcome = if lanes > 1 {
            self.run_lanes(plan, lanes, split, observer)?
        } else {
            self.run_stream(plan, None, observer)?.finish()
        };
        observer.pass_finished(plan.trace, plan.kind, &outcome.metrics());
        Ok(outcome)
    }

    /// Replays the records of `lane` (all records without one) on this ring.
    fn run_stream<'b>(
        &mut self,
        plan: &PassPlan<'_>,
        lane: Option<(&'b LaneBoard, usize)>,
        observer: &mut dyn Observer,
    ) -> Result<Pass<'b>, ReplayError> {
        // Records are decoded a chunk at a time; a decoder thread keeps that
        // pause away from the issuing loop.
        std::thread::scope(|scope| {
            let (mut records, producer) = crate::source::prefetch(plan.source);
            scope.spawn(producer);
            // After the spawn: the decoder keeps the normal priority.
            let priority = PriorityGuard::apply(plan.opts.priority);
            self.spin_ns = if priority.previous.is_some() {
                FIFO_SPIN_NS
            } else {
                SPIN_NS
            };
            let pin = self.cpu_pin(plan.opts, priority.previous.is_some());
            self.pinned = pin.active();
            // Here, where the thread has its priority and its CPU: both
            // move its wake-up latency. Compressed mode has no gaps to
            // sleep through, except those `--idle-cap` keeps, which are
            // longer than the fixed spin and measure themselves.
            if plan.opts.mode == TimingMode::Realtime {
                self.idle_spin.calibrate();
            }
            let replayed = self.replay_records(plan, &mut records, lane, observer);
            drop(pin);
            self.pinned = false;
            replayed
        })
    }

    /// `--io-worker-cpu issuer` where it applies (placement.rs): realtime
    /// mode, a target on io-wq, normal priority. Compressed mode keeps its
    /// workers on every CPU for throughput; a SCHED_FIFO issuer spinning
    /// before a deadline would hold off a worker sharing its CPU.
    fn cpu_pin(&mut self, opts: &ReplayOptions, fifo: bool) -> CpuPin {
        if opts.io_worker_cpu != IoWorkerCpu::Issuer
            || opts.mode != TimingMode::Realtime
            || fifo
            || !self.punted.contains(&true)
        {
            return CpuPin::none();
        }
        let ring = &self.ring;
        match *self
            .worker_cpu
            .get_or_insert_with(|| placement::choose_worker_cpu(ring))
        {
            Some(cpu) => CpuPin::apply(cpu),
            None => CpuPin::none(),
        }
    }

    /// The issuing loop: take the next record, wait for a slot, its
    /// dependencies and its deadline (reaping meanwhile), issue; then drain.
    fn replay_records<'b>(
        &mut self,
        plan: &PassPlan<'_>,
        records: &mut dyn Iterator<Item = Result<IoRecord, ReplayError>>,
        lane: Option<(&'b LaneBoard, usize)>,
        observer: &mut dyn Observer,
    ) -> Result<Pass<'b>, ReplayError> {
        let mut rules = ScheduleRules::new(plan.opts, plan.scan.has_completions());
        // Rings share one timeline: each keeps the trace's times.
        rules.think &= lane.is_none();
        let mut pass = Pass::new(
            PassSetup {
                queue_depth: self.queue_depth,
                warmup: plan.kind == PassKind::Warmup,
                log_events: observer.wants_io_events(),
                targets: self.discard_supported.len(),
                io_timeout_ns: plan.opts.io_timeout.as_nanos() as u64,
                volume_table: (plan.scan.device_max_end.len() > 1 || plan.opts.shard.is_some())
                    .then(|| plan.source.devices()),
            },
            match (lane, agreed_start_ns(plan.opts)) {
                (Some((board, _)), _) => IssueSchedule::new(rules).starting_at(board.start_ns),
                (None, Some(start)) => IssueSchedule::new(rules).starting_at(start),
                (None, None) => IssueSchedule::new(rules),
            },
            lane,
        );
        pass.original_duration_ns = plan.scan.original_duration.0;
        pass.task =
            TaskObserver::for_pass(rules.realtime, lane.is_some(), plan.source.task_marks());
        let cpu_wait = cpu_wait::CpuWaitStart::now();

        let mut pending: Option<Pending> = None;
        let failure = loop {
            if observer.should_stop() {
                pass.interrupted = true;
                break None;
            }
            let p = match pending.take() {
                Some(p) => p,
                None => match self.next_pending(&mut pass, records, plan, observer) {
                    Ok(Some(p)) => p,
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                },
            };
            match self.step(&mut pass, p, observer) {
                Ok(None) => {}
                Ok(Some(again)) => pending = Some(again),
                Err(e) => break Some(e),
            }
        };

        // Drain whatever is queued or in flight, also after an error.
        let drained = self.submit(&mut pass).and_then(|_| {
            while pass.inflight > 0 {
                self.wait_completion(&mut pass, &mut NeverStop(observer))?;
            }
            Ok(())
        });
        for (s, p) in self
            .discard_supported
            .iter_mut()
            .zip(&pass.discard_supported)
        {
            *s &= *p;
        }
        pass.cpu_wait_ns = cpu_wait.and_then(|w| w.elapsed_ns());
        if let Some(e) = failure {
            return Err(e);
        }
        drained?;
        Ok(pass)
    }

    /// Reads records until one is to be sent (every record advances the
    /// schedule's virtual time; skipped ones are counted), and maps it.
    fn next_pending(
        &self,
        pass: &mut Pass,
        records: &mut dyn Iterator<Item = Result<IoRecord, ReplayError>>,
        plan: &PassPlan<'_>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Pending>, ReplayError> {
        for rec in records {
            let rec = rec?;
            let index = pass.records_read;
            pass.records_read += 1;
            let completion = rec.completion().map(|c| c.0);
            let virtual_ns = pass.schedule.admit(rec.time.0, completion);
            let target = plan.map.target_of(rec.device);
            if let Some((board, me)) = pass.lane {
                let mine = board.lane_of(index, target) == me;
                pass.predecessors
                    .advance(rec.time.0, index, completion, mine);
                if !mine {
                    continue;
                }
            }
            let op = issue::replayed_op(&rec);
            let skip = self.skip_reason(&rec, op, target, plan.opts);
            pass.task.record_read(index, &rec, skip.is_none());
            if let Some(reason) = skip {
                reason(&mut pass.skipped);
                pass.progress(observer);
                continue;
            }
            // `--skip-ops flush` leaves the drive's cache alone altogether.
            let cache = if op == Op::Write && !plan.opts.skips(Op::Flush) {
                CacheFlags {
                    preflush: rec.flags.contains(Flags::PREFLUSH),
                    fua: rec.flags.contains(Flags::FUA),
                }
            } else {
                CacheFlags::default()
            };
            if cache != CacheFlags::default() {
                pass.cache_flag_writes += 1;
            }
            let mapped = if op == Op::Flush {
                crate::mapping::Mapped {
                    target,
                    offset: 0,
                    len: 0,
                }
            } else {
                plan.map.map(rec.device, rec.offset.0, rec.len.0)
            };
            if let Some((board, me)) = pass.lane {
                board.publish_next(me, index);
            }
            let wait_past = if pass.schedule.rules().dependencies {
                pass.predecessors.latest()
            } else {
                index.checked_sub(1)
            };
            return Ok(Some(Pending {
                wait_past,
                index,
                op,
                virtual_ns,
                orig_issue: rec.time.0,
                orig_completion: completion.unwrap_or(u64::MAX),
                target: mapped.target,
                offset: mapped.offset,
                len: mapped.len,
                device: rec.device,
                waited: false,
                cache,
            }));
        }
        Ok(None)
    }

    /// One step for the next I/O: wait for a slot or a dependency, or for its
    /// deadline, or issue it. Returns the I/O when it is still to be issued.
    fn step(
        &mut self,
        pass: &mut Pass,
        mut p: Pending,
        observer: &mut dyn Observer,
    ) -> Result<Option<Pending>, ReplayError> {
        let min_completion = pass.gate.min_inflight_completion();
        if pass.free.is_empty()
            || pass
                .schedule
                .waits_on_dependency(p.orig_issue, min_completion)
        {
            // Realtime mode (compressed mode submitted each request already):
            // with nothing else in flight the submission rides on the wait's
            // system call (no completion can be waiting to be reaped).
            // Otherwise it goes first, alone: merging every wait made
            // compressed replay on a loop device about 8 % slower at QD16-32,
            // merging only here kept QD1's gain (1.13x fio's replay against
            // 0.90x; docs/measurements/replay-engine.md).
            if pass.inflight > pass.queued.len() as u32 {
                self.submit(pass)?;
            }
            self.wait_completion(pass, observer)?;
            p.waited = true;
            return Ok(Some(p));
        }
        let now = now_ns();
        pass.schedule.follow_dependencies(p.orig_issue);
        let due = pass.schedule.deadline(p.virtual_ns, now, p.waited);
        if pass.start_ns.is_none() {
            pass.start_ns = pass.schedule.start_ns();
        }
        if now < due {
            self.submit(pass)?;
            self.wait_until(pass, due, observer)?;
            if now_ns() < due {
                return Ok(Some(p)); // stopped early
            }
        }
        if let Some((board, me)) = pass.lane {
            let deps = pass.schedule.rules().dependencies;
            if !(board.others_allow(me, p.wait_past, p.orig_issue, deps) && board.try_acquire()) {
                self.lane_wait(pass, observer)?;
                p.waited = true;
                return Ok(Some(p));
            }
        }
        self.issue(pass, &p, due)?;
        pass.publish_lane_state(p.index + 1);
        Ok(None)
    }
    /// Waits a little for other rings (reaping meanwhile).
    fn lane_wait(
        &mut self,
        pass: &mut Pass,
        observer: &mut dyn Observer,
    ) -> Result<(), ReplayError> {
        self.submit(pass)?;
        if self.reap(pass, observer) == 0 {
            if pass.inflight > 0 {
                self.enter_and_wait(LANE_WAIT_NS)?;
                self.reap(pass, observer);
            } else {
                std::thread::yield_now();
            }
        }
        Ok(())
    }
}

/// `--start-at` as a monotonic instant (the wall clock read now), for a
/// pass's schedule to start there.
fn agreed_start_ns(opts: &ReplayOptions) -> Option<u64> {
    opts.start_at_unix_ns
        .map(|unix| crate::host_time::WallClock::read().to_monotonic(unix))
}

/// Whether a request to io-wq goes as concurrent work (IOSQE_ASYNC), given
/// the ring's kind, the requests already in flight and whether the issuer's
/// completion waits poll and that pays (`CONCURRENT_WORK_FROM_INFLIGHT`).
fn concurrent_work(cooperative: bool, inflight: u32, polling_pays: bool) -> bool {
    !cooperative || inflight >= CONCURRENT_WORK_FROM_INFLIGHT || !polling_pays
}

impl Drop for Engine<'_> {
    /// Unregisters the targets first: a ring's teardown is asynchronous, and
    /// until it ends the kernel keeps the files open, so an exclusive open of
    /// the same device right after a run (a second run in one process) would
    /// fail with EBUSY. Unregistering waits for the files to be released.
    fn drop(&mut self) {
        let _ = self.ring.submitter().unregister_files();
    }
}

#[cfg(test)]
mod tests {
    use super::{concurrent_work, CONCURRENT_WORK_FROM_INFLIGHT};
    use crate::options::{ReplayOptions, TimingMode};
    use crate::{run_suite, IoLog, MemorySource};
    use std::collections::HashSet;
    use trace_format::{Bytes, Flags, IoRecord, Nanos, Op};

    /// 24 MiB written through 4 slots (a slot's buffer goes out 1,536
    /// times), then no 512-byte sector of the target repeats another: not
    /// among the writes, nor between them and the scratch file's fill.
    #[test]
    fn no_written_sector_repeats_another() {
        let writes = 6_144u64;
        let recs: Vec<IoRecord> = (0..writes)
            .map(|i| IoRecord {
                time: Nanos(i * 1_000),
                op: Op::Write,
                offset: Bytes(i * 4096),
                len: Bytes(4096),
                flags: Flags::NONE,
                latency: None,
                stream: None,
                device: 0,
            })
            .collect();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("target.bin");
        let opts = ReplayOptions {
            mode: TimingMode::Compressed,
            queue_depth: 4,
            passes: 1,
            warmup: false,
            ..ReplayOptions::default()
        };
        let src = MemorySource::new("writes", recs);
        let r = run_suite(&[&src], Some(&path), &opts, &mut IoLog::default()).expect("replayed");
        assert_eq!(r.traces[0].write_bytes, writes * 4096);
        let data = std::fs::read(&path).expect("the target read back");
        assert!(data.len() as u64 >= writes * 4096);
        let mut seen = HashSet::new();
        for (n, sector) in data.chunks(512).enumerate() {
            assert!(seen.insert(sector), "sector {n} repeats an earlier one");
        }
    }

    /// One io-wq worker serves a shallow compressed queue while polling
    /// pays; realtime mode, a deep queue, and waits that sleep (or whose
    /// polling stopped paying) ask io-wq for more workers.
    #[test]
    fn io_wq_gets_concurrent_work_only_where_one_worker_would_not_do() {
        let deep = CONCURRENT_WORK_FROM_INFLIGHT;
        assert!(!concurrent_work(true, 0, true));
        assert!(!concurrent_work(true, deep - 1, true));
        assert!(concurrent_work(true, deep, true));
        assert!(concurrent_work(true, 3, false), "polling stopped paying");
        assert!(concurrent_work(false, 0, true), "realtime mode");
    }
}
