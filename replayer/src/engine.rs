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
//! the original) longer than the cap to the cap before scheduling.
//!
//! Submission is batched: SQEs are queued while further I/Os are due, and
//! submitted in one `io_uring_enter` before any wait. Waits for a future time
//! sleep in `io_uring_enter` with a timeout (reaping completions as they come)
//! and spin the last tens of microseconds. Buffers are registered once;
//! nothing is allocated per I/O.
//!
//! Discards go to block devices as `BLOCK_URING_CMD_DISCARD` (asynchronous,
//! Linux 6.12+); on files, on devices without support and on older kernels
//! they are skipped and counted. Write-zeroes have no asynchronous form and
//! are skipped and counted.

use crate::buffer::AlignedBuf;
use crate::clock::{now_ns, sleep_ns};
use crate::mapping::{AddressMap, TraceScan};
use crate::metrics::{new_histogram, OpStats, PassMetrics, PassOutcome, Skipped};
use crate::options::{Priority, ReplayOptions, TimingMode};
use crate::source::TraceSource;
use crate::target::{Target, TargetKind};
use crate::ReplayError;
use io_uring::{opcode, types, IoUring};
use trace_format::Op;

/// `_IO(0x12, 0)`: the block layer's asynchronous discard command.
const BLOCK_URING_CMD_DISCARD: u32 = 0x1200;
/// The last stretch before a deadline is spun, not slept.
const SPIN_NS: u64 = 50_000;
/// The same under `--priority high`: a real-time thread wakes from a sleep
/// within a few microseconds, and a shorter spin keeps it from using a
/// whole core at high rates (which would trip the kernel's real-time
/// throttling: a 50 ms stall every second).
const FIFO_SPIN_NS: u64 = 10_000;
/// Most completions between two progress callbacks.
const PROGRESS_EVERY: u64 = 4096;

/// A ring for a caller that issues as fast as it can (compressed mode) and
/// never spins waiting for a time, so completions may wait for its next
/// `io_uring_enter`: only this thread submits (SINGLE_ISSUER), completions do
/// not interrupt it (COOP_TASKRUN), and their task work runs in batches when it
/// waits (DEFER_TASKRUN, Linux 6.1+; without it, the first two alone).
/// Measured on zram, 4 KiB random reads at QD32, medians against fio's own
/// io_uring engine (which sets up its ring the same way): the default ring
/// 0.79x, COOP_TASKRUN 0.92x, DEFER_TASKRUN 1.0x (bench/README.md).
/// Realtime mode spins without system calls before a deadline, where a
/// deferred completion would be stamped late, so it keeps the default ring.
fn cooperative_ring(entries: u32) -> std::io::Result<IoUring> {
    let mut builder = IoUring::builder();
    builder
        .setup_submit_all()
        .setup_coop_taskrun()
        .setup_single_issuer();
    let mut deferred = builder.clone();
    deferred.setup_defer_taskrun();
    deferred.build(entries).or_else(|_| builder.build(entries))
}

/// For a target without non-blocking I/O (zram, brd), where io_uring runs
/// every request on io-wq worker threads. By default io-wq adds a worker only
/// when a running one sleeps; such drivers copy data synchronously and never
/// sleep, so one worker serves the whole queue on one CPU. SQEs flagged
/// IOSQE_ASYNC skip the inline attempt that is bound to fail and are
/// "concurrent" work, for which io-wq starts more workers; capping them at
/// one per online CPU keeps them from fighting over the device's locks.
/// Measured on zram, 70/30 random 4 KiB at QD32 (bench/README.md): median
/// 1.05x -> 1.18x fio's replay, where 8 uncapped workers gave 1.05x.
/// The cost of the cap: a driver that sleeps inside submission gets at most
/// one such submission per CPU at a time (the default allows four per CPU).
/// Failure to cap is harmless (the default limits stay).
fn share_punted_work(ring: &IoUring) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    // [bounded, unbounded]; 0 leaves a limit unchanged. Block-device and file
    // reads and writes are bounded work.
    let mut max = [cpus, 0];
    let _ = ring.submitter().register_iowq_max_workers(&mut max);
}

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
}

/// Hooks into a run: progress, per-I/O events, and when to stop.
pub trait Observer {
    fn pass_started(&mut self, _trace: &str, _pass: PassKind, _total_ios: u64) {}
    fn progress(&mut self, _completed_ios: u64) {}
    fn pass_finished(&mut self, _trace: &str, _pass: PassKind, _metrics: &PassMetrics) {}
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

/// The ring, the target and the registered buffers, reused across passes.
pub struct Engine<'t> {
    target: &'t Target,
    ring: IoUring,
    queue_depth: u32,
    slot_len: u64,
    read_bufs: AlignedBuf,
    write_buf: AlignedBuf,
    write_cursor: u64,
    /// Whether the buffers are registered (READ_FIXED/WRITE_FIXED); false where
    /// the memory-lock limit refused pinning them.
    fixed_buffers: bool,
    /// Per target: block device opened for writing, and no "not supported" yet.
    discard_supported: Vec<bool>,
    /// How long before a deadline the wait spins instead of sleeping.
    spin_ns: u64,
    /// Per target: no non-blocking I/O, so every request goes to io-wq;
    /// its SQEs carry IOSQE_ASYNC (see `Engine::new`).
    punted: Vec<bool>,
}

impl<'t> Engine<'t> {
    /// Sets up a ring for `queue_depth` I/Os of up to `max_len` bytes.
    /// `cooperative`: the caller issues as fast as it can (compressed mode)
    /// and never spins waiting for a time, so completions may wait for its
    /// next system call.
    pub fn new(
        target: &'t Target,
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
        let write_len = (2 * slot_len).max(16 << 20);
        let mut write_buf =
            AlignedBuf::new(write_len as usize).map_err(ring_err("cannot allocate buffers"))?;
        // Writes carry incompressible data; reads land in separate buffers,
        // so whatever the device returns never leaks into later writes.
        let mut rng = crate::rng::WyRand::from_entropy();
        rng.fill(write_buf.as_mut_slice());
        rng.fill(read_bufs.as_mut_slice());
        let mut iovecs: Vec<libc::iovec> = (0..queue_depth as usize)
            .map(|i| libc::iovec {
                // SAFETY: each slot lies inside read_bufs.
                iov_base: unsafe { read_bufs.as_mut_ptr().add(i * slot_len as usize) }.cast(),
                iov_len: slot_len as usize,
            })
            .collect();
        iovecs.push(write_buf.iovec());
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
        let punted: Vec<bool> = target.all().map(|t| !t.nowait).collect();
        if punted.contains(&true) {
            share_punted_work(&ring);
        }
        let fds: Vec<i32> = target.all().map(Target::fd).collect();
        ring.submitter()
            .register_files(&fds)
            .map_err(ring_err("cannot register the targets"))?;
        Ok(Engine {
            target,
            ring,
            queue_depth,
            slot_len,
            read_bufs,
            write_buf,
            write_cursor: 0,
            fixed_buffers,
            discard_supported: target
                .all()
                .map(|t| t.kind == TargetKind::BlockDevice && t.writable)
                .collect(),
            spin_ns: SPIN_NS,
            punted,
        })
    }

    /// Replays `source` once.
    #[allow(clippy::too_many_arguments)]
    pub fn run_pass(
        &mut self,
        trace: &str,
        source: &dyn TraceSource,
        scan: &TraceScan,
        map: &AddressMap,
        opts: &ReplayOptions,
        kind: PassKind,
        observer: &mut dyn Observer,
    ) -> Result<PassOutcome, ReplayError> {
        observer.pass_started(trace, kind, scan.summary.ios);
        // Records are decoded a chunk at a time; a decoder thread keeps that
        // pause away from the issuing loop.
        std::thread::scope(|scope| {
            let (mut records, producer) = crate::source::prefetch(source);
            scope.spawn(producer);
            // After the spawn: the decoder keeps the normal priority.
            let priority = PriorityGuard::apply(opts.priority);
            self.spin_ns = if priority.previous.is_some() {
                FIFO_SPIN_NS
            } else {
                SPIN_NS
            };
            self.replay_records(trace, &mut records, scan, map, opts, kind, observer)
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn replay_records(
        &mut self,
        trace: &str,
        records: &mut dyn Iterator<Item = Result<trace_format::IoRecord, ReplayError>>,
        scan: &TraceScan,
        map: &AddressMap,
        opts: &ReplayOptions,
        kind: PassKind,
        observer: &mut dyn Observer,
    ) -> Result<PassOutcome, ReplayError> {
        let realtime = opts.mode == TimingMode::Realtime;
        let open_loop = realtime && opts.open_loop;
        let deps = scan.has_completions() && !open_loop;
        let scale = opts.time_scale;
        let idle_cap = if realtime {
            opts.idle_cap.map(|c| c.0)
        } else {
            None
        };
        let log_events = observer.wants_io_events();
        let mut pass = Pass::new(
            self.queue_depth,
            kind == PassKind::Warmup,
            log_events,
            self.discard_supported.len(),
        );
        pass.original_duration_ns = scan.original_duration.0;

        let mut pending: Option<Pending> = None;
        let mut index = 0u64;
        let mut blocked = false;
        let mut shift = 0u64;
        let mut removed = 0u64;
        let mut orig_busy_until = 0u64;
        let mut first_v = 0u64;
        let mut failure: Option<ReplayError> = None;

        loop {
            if observer.should_stop() {
                pass.interrupted = true;
                break;
            }
            let p = match pending {
                Some(p) => p,
                None => {
                    let rec = match records.next() {
                        None => break,
                        Some(Err(e)) => {
                            failure = Some(e);
                            break;
                        }
                        Some(Ok(r)) => r,
                    };
                    let i = index;
                    index += 1;
                    let t = rec.time.0;
                    if let Some(cap) = idle_cap {
                        if i > 0 && t > orig_busy_until && t - orig_busy_until > cap {
                            removed += t - orig_busy_until - cap;
                        }
                    }
                    orig_busy_until = orig_busy_until.max(rec.completion().map_or(t, |c| c.0));
                    let v = t - removed.min(t);
                    if i == 0 {
                        first_v = v;
                    }
                    let target = map.target_of(rec.device);
                    if let Some(reason) = self.skip_reason(&rec, target, opts) {
                        reason(&mut pass.skipped);
                        pass.progress(observer);
                        continue;
                    }
                    let mapped = if rec.op == Op::Flush {
                        crate::mapping::Mapped {
                            target,
                            offset: 0,
                            len: 0,
                        }
                    } else {
                        map.map(rec.device, rec.offset.0, rec.len.0)
                    };
                    let np = Pending {
                        index: i,
                        op: rec.op,
                        virtual_ns: v,
                        orig_issue: t,
                        orig_completion: rec.completion().map_or(u64::MAX, |c| c.0),
                        target: mapped.target,
                        offset: mapped.offset,
                        len: mapped.len,
                    };
                    pending = Some(np);
                    np
                }
            };

            if pass.free.is_empty() || (deps && pass.min_inflight_completion() <= p.orig_issue) {
                if let Err(e) = self.submit(&mut pass) {
                    failure = Some(e);
                    break;
                }
                if let Err(e) = self.wait_completion(&mut pass, observer, opts) {
                    failure = Some(e);
                    break;
                }
                blocked = true;
                continue;
            }

            let now = now_ns();
            let start = *pass.start_ns.get_or_insert(now);
            let sched = if realtime {
                let offset = ((p.virtual_ns - first_v) as f64 / scale) as u64;
                let mut s = start + shift + offset;
                if blocked && !open_loop && now > s {
                    shift += now - s;
                    s = now;
                }
                s
            } else {
                now
            };
            if now < sched {
                if let Err(e) = self.submit(&mut pass) {
                    failure = Some(e);
                    break;
                }
                if let Err(e) = self.wait_until(&mut pass, sched, observer, opts) {
                    failure = Some(e);
                    break;
                }
                if now_ns() < sched {
                    continue; // stopped early
                }
            }
            if let Err(e) = self.issue(&mut pass, &p, sched) {
                failure = Some(e);
                break;
            }
            pending = None;
            blocked = false;
        }

        // Drain whatever is queued or in flight, also after an error.
        let drained = self.submit(&mut pass).and_then(|_| {
            while pass.inflight > 0 {
                self.wait_completion(&mut pass, &mut NeverStop(observer), opts)?;
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
        if let Some(e) = failure {
            return Err(e);
        }
        drained?;
        let outcome = pass.finish();
        observer.pass_finished(trace, kind, &outcome.metrics());
        Ok(outcome)
    }

    /// Why a record is not sent to the target, as a counter to bump.
    fn skip_reason(
        &self,
        rec: &trace_format::IoRecord,
        target: u32,
        opts: &ReplayOptions,
    ) -> Option<fn(&mut Skipped)> {
        let writes = !matches!(rec.op, Op::Read);
        if opts.read_only && writes {
            return Some(|s| s.read_only += 1);
        }
        if opts.skips(rec.op) {
            return Some(|s| s.by_option += 1);
        }
        let discards = self.discard_supported.get(target as usize) == Some(&true);
        match rec.op {
            Op::Read | Op::Write if rec.len.0 == 0 => Some(|s| s.empty += 1),
            Op::Discard if !discards || rec.len.0 == 0 => Some(|s| s.discards += 1),
            Op::WriteZeroes => Some(|s| s.write_zeroes += 1),
            _ => None,
        }
    }

    fn issue(&mut self, pass: &mut Pass, p: &Pending, sched: u64) -> Result<(), ReplayError> {
        let Some(slot) = pass.free.pop() else {
            return Ok(()); // unreachable: checked by the caller
        };
        let fd = types::Fixed(p.target);
        let len32 = p.len.min(u32::MAX as u64) as u32;
        let entry = match p.op {
            Op::Read => {
                // SAFETY: slot < queue_depth, so the slot lies inside read_bufs.
                let buf = unsafe {
                    self.read_bufs
                        .as_mut_ptr()
                        .add(slot as usize * self.slot_len as usize)
                };
                if self.fixed_buffers {
                    opcode::ReadFixed::new(fd, buf, len32, slot as u16)
                        .offset(p.offset)
                        .build()
                } else {
                    opcode::Read::new(fd, buf, len32).offset(p.offset).build()
                }
            }
            Op::Write => {
                let wlen = self.write_buf.len() as u64;
                if self.write_cursor + p.len > wlen {
                    self.write_cursor = 0;
                }
                // SAFETY: cursor + len <= the write buffer's length (len <= slot_len <= wlen / 2).
                let buf = unsafe { self.write_buf.as_mut_ptr().add(self.write_cursor as usize) };
                self.write_cursor += p.len.div_ceil(4096) * 4096;
                if self.fixed_buffers {
                    opcode::WriteFixed::new(fd, buf, len32, self.queue_depth as u16)
                        .offset(p.offset)
                        .build()
                } else {
                    opcode::Write::new(fd, buf, len32).offset(p.offset).build()
                }
            }
            Op::Flush => opcode::Fsync::new(fd).build(),
            Op::Discard => {
                let mut cmd = [0u8; 16];
                cmd[..8].copy_from_slice(&p.len.to_le_bytes());
                opcode::UringCmd16::new(fd, BLOCK_URING_CMD_DISCARD)
                    .addr(Some(p.offset))
                    .cmd(cmd)
                    .build()
            }
            Op::WriteZeroes => return Ok(()),
        }
        .user_data(slot as u64);
        let entry = if self.punted.get(p.target as usize) == Some(&true) {
            entry.flags(io_uring::squeue::Flags::ASYNC)
        } else {
            entry
        };
        // SAFETY: the buffers referenced stay valid until the completion.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            self.submit(pass)?;
        }
        if let Some(s) = pass.slots.get_mut(slot as usize) {
            *s = Slot {
                index: p.index,
                op: p.op,
                target: p.target,
                offset: p.offset,
                len: p.len,
                sched_ns: sched,
                submit_ns: 0,
                orig_completion: p.orig_completion,
                in_flight: true,
            };
        }
        pass.inflight += 1;
        pass.min_completion = pass.min_completion.min(p.orig_completion);
        pass.queued.push(slot);
        Ok(())
    }

    /// Submits the queued SQEs in one call, stamping their submission time.
    fn submit(&mut self, pass: &mut Pass) -> Result<(), ReplayError> {
        if pass.queued.is_empty() {
            return Ok(());
        }
        let now = now_ns();
        pass.stamp_submitted(now);
        loop {
            match self.ring.submit() {
                Ok(_) => break,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
                    ) =>
                {
                    continue
                }
                Err(source) => {
                    return Err(ReplayError::Ring {
                        what: "submit".into(),
                        source,
                    })
                }
            }
        }
        if self.ring.submission().is_empty() {
            return Ok(());
        }
        // A partial submit: the rest goes with the next call.
        Ok(())
    }

    fn reap(&mut self, pass: &mut Pass, observer: &mut dyn Observer) -> usize {
        let mut cq = self.ring.completion();
        if cq.is_empty() {
            return 0;
        }
        let now = now_ns();
        let mut n = 0;
        for cqe in &mut cq {
            pass.complete(cqe.user_data() as u32, cqe.result(), now, observer);
            n += 1;
        }
        n
    }

    /// Waits until at least one completion arrived (or the observer wants to
    /// stop); fails when nothing completes for the I/O timeout.
    fn wait_completion(
        &mut self,
        pass: &mut Pass,
        observer: &mut dyn Observer,
        opts: &ReplayOptions,
    ) -> Result<(), ReplayError> {
        loop {
            if self.reap(pass, observer) > 0 || pass.inflight == 0 {
                return Ok(());
            }
            self.enter_and_wait(50_000_000)?;
            if self.reap(pass, observer) > 0 {
                return Ok(());
            }
            if observer.should_stop() {
                return Ok(());
            }
            let idle = now_ns().saturating_sub(pass.last_activity_ns);
            if idle > opts.io_timeout.as_nanos() as u64 {
                return Err(ReplayError::DeviceTimeout {
                    path: self.target.path.clone(),
                    secs: opts.io_timeout.as_secs(),
                    in_flight: pass.inflight,
                });
            }
        }
    }

    /// One `io_uring_enter` that submits what is queued and waits for a
    /// completion, at most `timeout_ns`; a timeout or an interruption is no error.
    fn enter_and_wait(&mut self, timeout_ns: u32) -> Result<(), ReplayError> {
        let ts = types::Timespec::new().nsec(timeout_ns);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(source) => Err(ReplayError::Ring {
                what: "wait".into(),
                source,
            }),
        }
    }

    /// Waits until `deadline`, reaping completions meanwhile.
    fn wait_until(
        &mut self,
        pass: &mut Pass,
        deadline: u64,
        observer: &mut dyn Observer,
        opts: &ReplayOptions,
    ) -> Result<(), ReplayError> {
        loop {
            self.reap(pass, observer);
            if observer.should_stop() {
                return Ok(());
            }
            let now = now_ns();
            if now >= deadline {
                return Ok(());
            }
            let remain = deadline - now;
            if remain > self.spin_ns {
                let sleep = (remain - self.spin_ns).min(50_000_000);
                if pass.inflight > 0 {
                    self.enter_and_wait(sleep as u32)?;
                    let idle = now_ns().saturating_sub(pass.last_activity_ns);
                    if pass.inflight > 0 && idle > opts.io_timeout.as_nanos() as u64 {
                        return Err(ReplayError::DeviceTimeout {
                            path: self.target.path.clone(),
                            secs: opts.io_timeout.as_secs(),
                            in_flight: pass.inflight,
                        });
                    }
                } else {
                    sleep_ns(sleep);
                }
            } else {
                std::hint::spin_loop();
            }
        }
    }
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

/// While alive, the calling thread runs under the asked priority; the
/// previous policy comes back on drop. A refusal (no CAP_SYS_NICE) leaves the
/// thread as it was: callers check [`realtime_priority_available`] first to
/// tell the user.
struct PriorityGuard {
    previous: Option<(libc::c_int, libc::sched_param)>,
}

/// The `SCHED_FIFO` priority used by `--priority high`: above every normal
/// thread, below the kernel's own real-time threads (watchdogs, migration).
const FIFO_PRIORITY: libc::c_int = 10;

impl PriorityGuard {
    fn apply(priority: Priority) -> PriorityGuard {
        if priority == Priority::Normal {
            return PriorityGuard { previous: None };
        }
        // SAFETY: querying and setting the calling thread's (pid 0) policy
        // with a valid sched_param.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            let mut old = std::mem::zeroed::<libc::sched_param>();
            if policy < 0 || libc::sched_getparam(0, &mut old) != 0 {
                return PriorityGuard { previous: None };
            }
            let param = libc::sched_param {
                sched_priority: FIFO_PRIORITY,
            };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                return PriorityGuard { previous: None };
            }
            PriorityGuard {
                previous: Some((policy, old)),
            }
        }
    }
}

impl Drop for PriorityGuard {
    fn drop(&mut self) {
        if let Some((policy, param)) = self.previous.take() {
            // SAFETY: restoring the calling thread's earlier policy.
            unsafe {
                libc::sched_setscheduler(0, policy, &param);
            }
        }
    }
}

/// Whether this process may run a thread under `SCHED_FIFO` (tried on a
/// short-lived thread); the error says why not.
pub fn realtime_priority_available() -> std::io::Result<()> {
    std::thread::spawn(|| {
        let param = libc::sched_param {
            sched_priority: FIFO_PRIORITY,
        };
        // SAFETY: setting this short-lived thread's own policy.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    })
    .join()
    .unwrap_or_else(|_| Err(std::io::Error::other("the probe thread failed")))
}

/// Passes everything through but never asks to stop (for draining).
struct NeverStop<'a>(&'a mut dyn Observer);

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

#[derive(Debug, Clone, Copy)]
struct Pending {
    index: u64,
    op: Op,
    virtual_ns: u64,
    orig_issue: u64,
    orig_completion: u64,
    target: u32,
    offset: u64,
    len: u64,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    index: u64,
    op: Op,
    target: u32,
    offset: u64,
    len: u64,
    sched_ns: u64,
    submit_ns: u64,
    orig_completion: u64,
    in_flight: bool,
}

/// The state of one pass: slots, counters, histograms.
struct Pass {
    slots: Vec<Slot>,
    free: Vec<u32>,
    queued: Vec<u32>,
    inflight: u32,
    inflight_data: u32,
    /// Minimum original completion time over the in-flight slots (u64::MAX
    /// when unknown or none); recomputed lazily when its holder completes.
    min_completion: u64,
    min_stale: bool,
    start_ns: Option<u64>,
    first_submit_ns: Option<u64>,
    last_complete_ns: u64,
    last_activity_ns: u64,
    busy_start_ns: u64,
    busy_ns: u64,
    completed: u64,
    ops: [OpStats; 5],
    lateness: hdrhistogram::Histogram<u64>,
    skipped: Skipped,
    warmup: bool,
    interrupted: bool,
    original_duration_ns: u64,
    /// Per target: no "not supported" answer to a discard in this pass.
    discard_supported: Vec<bool>,
    log_events: bool,
}

impl Pass {
    fn new(queue_depth: u32, warmup: bool, log_events: bool, targets: usize) -> Pass {
        let empty = Slot {
            index: 0,
            op: Op::Read,
            target: 0,
            offset: 0,
            len: 0,
            sched_ns: 0,
            submit_ns: 0,
            orig_completion: u64::MAX,
            in_flight: false,
        };
        Pass {
            slots: vec![empty; queue_depth as usize],
            free: (0..queue_depth).rev().collect(),
            queued: Vec::with_capacity(queue_depth as usize),
            inflight: 0,
            inflight_data: 0,
            min_completion: u64::MAX,
            min_stale: false,
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
            warmup,
            interrupted: false,
            original_duration_ns: 0,
            discard_supported: vec![true; targets],
            log_events,
        }
    }

    fn min_inflight_completion(&mut self) -> u64 {
        if self.min_stale {
            self.min_completion = self
                .slots
                .iter()
                .filter(|s| s.in_flight)
                .map(|s| s.orig_completion)
                .min()
                .unwrap_or(u64::MAX);
            self.min_stale = false;
        }
        self.min_completion
    }

    fn progress(&mut self, observer: &mut dyn Observer) {
        self.completed += 1;
        if self.completed.is_multiple_of(PROGRESS_EVERY) {
            observer.progress(self.completed);
        }
    }

    fn stamp_submitted(&mut self, now: u64) {
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
                }
                self.inflight_data += 1;
            }
        }
        self.first_submit_ns.get_or_insert(now);
        self.last_activity_ns = now;
        self.queued.clear();
    }

    fn complete(&mut self, slot_index: u32, result: i32, now: u64, observer: &mut dyn Observer) {
        let Some(slot) = self.slots.get_mut(slot_index as usize) else {
            return;
        };
        if !slot.in_flight {
            return;
        }
        slot.in_flight = false;
        let slot = *slot;
        self.free.push(slot_index);
        self.inflight -= 1;
        if slot.orig_completion == self.min_completion {
            self.min_stale = true;
        }
        self.last_complete_ns = now;
        self.last_activity_ns = now;
        if slot.op.carries_data() {
            self.inflight_data -= 1;
            if self.inflight_data == 0 {
                self.busy_ns += now.saturating_sub(self.busy_start_ns);
            }
        }
        let unsupported = slot.op == Op::Discard
            && matches!(
                -result,
                libc::EOPNOTSUPP | libc::EINVAL | libc::ENOTTY | libc::ENXIO
            );
        if unsupported {
            if let Some(s) = self.discard_supported.get_mut(slot.target as usize) {
                *s = false;
            }
            self.skipped.discards += 1;
        } else if let Some(stats) = self.ops.get_mut(slot.op.code() as usize) {
            let latency = now.saturating_sub(slot.submit_ns);
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
            });
        }
        self.progress(observer);
    }

    fn finish(self) -> PassOutcome {
        PassOutcome {
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
        }
    }
}
