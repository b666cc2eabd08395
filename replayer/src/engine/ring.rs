//! Ring set-up, submission and the waits of the issuing loop.

use super::pass::Pass;
use super::{Engine, Observer};
use crate::host_time::{now_ns, sleep_ns};
use crate::ReplayError;
use io_uring::{types, IoUring};
use trace_format::Op;

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
/// TASKRUN_FLAG makes the kernel raise `IORING_SQ_TASKRUN` in the shared
/// ring when a completion waits for this thread, which is what
/// `completion_ready` polls.
pub(super) fn cooperative_ring(entries: u32) -> std::io::Result<IoUring> {
    let mut builder = IoUring::builder();
    builder
        .setup_submit_all()
        .setup_coop_taskrun()
        .setup_taskrun_flag()
        .setup_single_issuer();
    let mut deferred = builder.clone();
    deferred.setup_defer_taskrun();
    deferred.build(entries).or_else(|_| builder.build(entries))
}

/// Whether a completion is waiting: posted to the CQ, or (deferred and
/// cooperative rings) held as task work that the next `io_uring_enter` with
/// GETEVENTS runs. Reads shared memory only, no system call.
pub(super) fn completion_ready(ring: &mut IoUring) -> bool {
    ring.submission().taskrun() || !ring.completion().is_empty()
}

/// How long recent waits for a completion took, to poll only where it pays:
/// where completions come within the budget (a fast device, or a queue
/// kept busy). A wait that polled in vain slept after the budget, so
/// polling stops on a device slower than the budget; every
/// `PROBE_EVERY`th wait polls anyway, so it resumes when the device speeds
/// up. Only waits that polled are observed: one that slept carries the
/// wake-up, which is what polling removes.
#[derive(Debug, Clone, Copy)]
pub(super) struct CompletionWaits {
    /// The longest poll of one wait (0: never poll).
    pub budget_ns: u64,
    /// Moving average (1/8 weight) of the waits that polled.
    recent_ns: u64,
    waits: u32,
}

impl CompletionWaits {
    const PROBE_EVERY: u32 = 64;

    pub(super) fn new(budget_ns: u64) -> CompletionWaits {
        CompletionWaits {
            budget_ns,
            recent_ns: 0,
            waits: 0,
        }
    }

    /// Whether this wait should poll (counts it).
    pub(super) fn worth_polling(&mut self) -> bool {
        self.waits = self.waits.wrapping_add(1);
        self.budget_ns > 0
            && (self.recent_ns <= self.budget_ns || self.waits.is_multiple_of(Self::PROBE_EVERY))
    }

    /// Whether polling pays: it may poll, and the waits that polled lately
    /// ended within the budget on average.
    pub(super) fn paying(&self) -> bool {
        self.budget_ns > 0 && self.recent_ns <= self.budget_ns
    }

    /// A wait that polled took `ns` until its completion was reaped.
    pub(super) fn observe(&mut self, ns: u64) {
        self.recent_ns = (self.recent_ns * 7 + ns) / 8;
    }
}

/// For a target without non-blocking I/O (zram, brd), where io_uring runs
/// every request on io-wq worker threads. By default io-wq adds a worker only
/// when a running one sleeps; such drivers copy data synchronously and never
/// sleep, so one worker serves the whole queue on one CPU. SQEs flagged
/// IOSQE_ASYNC skip the inline attempt that is bound to fail and are
/// "concurrent" work, for which io-wq starts more workers. Measured on zram,
/// 70/30 random 4 KiB at QD32 (bench/README.md): median 1.05x -> 1.18x fio's
/// replay. Compressed mode flags only the requests that need more workers
/// (`CONCURRENT_WORK_FROM_INFLIGHT`): with a shallow queue and a polling
/// issuer one worker does better.
///
/// Compressed mode caps io-wq's *bounded* workers at one per online CPU.
/// Block-device reads and writes turned out to be *unbounded* work on this
/// kernel (6.18: three `iou-wrk` threads ran under a bounded cap of one, one
/// under a cap of both kinds), so that cap binds only regular files; it is
/// kept as measured.
///
/// `in_order` (realtime mode): one worker of either kind. Several workers
/// race, so requests issued close together reach the device out of issue
/// order (509 of 60,000 in a 20,000 IOPS replay on zram; 0 with
/// one worker, bench/replay_fidelity.sh). The cost: the device gets one
/// request at a time, which bounds a realtime replay on such a device to
/// what one CPU copies (zram: a few hundred thousand 4 KiB I/Os per second),
/// above the rates realtime traces ask for.
/// Failure to cap is harmless (the default limits stay).
pub(super) fn share_punted_work(ring: &IoUring, in_order: bool) {
    // [bounded, unbounded]; 0 leaves a limit unchanged.
    let mut max = if in_order {
        [1, 1]
    } else {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        [cpus, 0]
    };
    let _ = ring.submitter().register_iowq_max_workers(&mut max);
}

/// `io_uring_enter` flag: run completions (and wait for `min_complete`).
const IORING_ENTER_GETEVENTS: u32 = 1;

impl Engine<'_> {
    /// Submits the queued SQEs in one call, stamping their submission time.
    ///
    /// On a cooperative ring (compressed mode) the call always carries
    /// GETEVENTS, as fio's does: it then also runs the completions that came
    /// in meanwhile (deferred task work), so the next wait finds them in the
    /// CQ instead of entering the kernel, and often sleeping, for them. The
    /// io-uring crate's `submit` adds GETEVENTS only when the ring's
    /// `IORING_SQ_TASKRUN` flag is up as it reads it; with it always, a loop
    /// device at QD32 took 52k waits instead of 23k for 262,144 I/Os
    /// (`perf stat -e syscalls:sys_enter_io_uring_enter`), and compressed
    /// replay went from 0.93x to 1.05x fio's replay there (6 of 6 rounds
    /// ahead; loop QD8 0.97x -> 1.08x, zram QD8 1.11x -> 1.20x;
    /// docs/measurements/replay-engine.md).
    pub(super) fn submit(&mut self, pass: &mut Pass) -> Result<(), ReplayError> {
        if pass.queued.is_empty() {
            return Ok(());
        }
        let now = now_ns();
        pass.stamp_submitted(now);
        loop {
            let submitted = if self.cooperative {
                let pending = self.ring.submission().len() as u32;
                // SAFETY: no argument block is passed, and `pending` SQEs are
                // in the ring (the queue handle synced its tail on drop).
                unsafe {
                    self.ring.submitter().enter::<libc::sigset_t>(
                        pending,
                        0,
                        IORING_ENTER_GETEVENTS,
                        None,
                    )
                }
            } else {
                self.ring.submit()
            };
            match submitted {
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

    pub(super) fn reap(&mut self, pass: &mut Pass, observer: &mut dyn Observer) -> usize {
        let mut cq = self.ring.completion();
        if cq.is_empty() {
            return 0;
        }
        let now = now_ns();
        let mut n = 0;
        for cqe in &mut cq {
            let slot = cqe.user_data() as u32;
            if cqe.user_data() & super::issue::PREFLUSH_TAG != 0 {
                // The flush before a write: the write's own completion
                // follows and counts; a failure is kept as its cause.
                if cqe.result() < 0 {
                    pass.preflush_failed(slot, cqe.result());
                }
                continue;
            }
            if let Some(s) = pass.slots.get(slot as usize) {
                if s.in_flight && s.op == Op::Write {
                    self.write_data.renew(slot as usize, s.len as usize);
                }
            }
            pass.complete(slot, cqe.result(), now, observer);
            n += 1;
        }
        drop(cq);
        pass.publish_min_completion();
        n
    }

    /// Submits what is still queued and waits until at least one completion
    /// arrived (or the observer wants to stop); fails when nothing completes
    /// for the I/O timeout. A submission here rides on the wait's
    /// `io_uring_enter`: one system call where a separate submit makes two.
    ///
    /// With few I/Os in flight (`COMPLETION_SPIN_MAX_INFLIGHT`) it first polls
    /// the ring for up to its budget (`polls_for_completions`,
    /// `CompletionWaits`; compressed mode only, which has nothing queued).
    /// A thread that sleeps is woken by the completing CPU, and on a virtual
    /// machine whose idle CPUs halt that wake-up took 25-40 µs while a
    /// shallow queue left the device idle (docs/measurements/replay-engine.md). Deeper
    /// queues keep the device busy through the wake-up, so they sleep.
    pub(super) fn wait_completion(
        &mut self,
        pass: &mut Pass,
        observer: &mut dyn Observer,
    ) -> Result<(), ReplayError> {
        let spin = self.polls_for_completions(pass)
            && pass.inflight <= super::COMPLETION_SPIN_MAX_INFLIGHT
            && self.completion_waits.worth_polling();
        // Read only when polling: the clock is not free on this hot path.
        let started = if spin { now_ns() } else { 0 };
        loop {
            if pass.queued.is_empty() {
                if self.reap(pass, observer) > 0 || pass.inflight == 0 {
                    break;
                }
                if spin {
                    self.poll_for_completion(started + self.completion_waits.budget_ns);
                }
            } else {
                // Realtime mode only (compressed mode submits each request
                // as it is queued, `Engine::issue`): the queued SQEs ride on
                // the `io_uring_enter` below.
                pass.stamp_submitted(now_ns());
            }
            self.enter_and_wait(50_000_000)?;
            if self.reap(pass, observer) > 0 {
                break;
            }
            if observer.should_stop() {
                break;
            }
            let idle = now_ns().saturating_sub(pass.last_activity_ns);
            if idle > pass.io_timeout_ns {
                return Err(ReplayError::DeviceTimeout {
                    path: self.targets.primary().path.clone(),
                    secs: pass.io_timeout_ns / 1_000_000_000,
                    in_flight: pass.inflight,
                });
            }
        }
        if spin {
            self.completion_waits.observe(now_ns() - started);
        }
        Ok(())
    }

    /// Whether a wait with I/O in flight polls for a completion before it
    /// sleeps: only in compressed mode on two CPUs or more (budget 0
    /// otherwise), not under SCHED_FIFO (a real-time thread wakes within
    /// microseconds), not with several rings (one poller per CPU would
    /// starve the workers). `pinned` (realtime only) is checked as well: the
    /// thread then shares its CPU with the io-wq worker.
    pub(super) fn polls_for_completions(&self, pass: &Pass) -> bool {
        self.completion_waits.budget_ns > 0
            && !self.pinned
            && self.spin_ns != super::FIFO_SPIN_NS
            && pass.lane.is_none()
    }

    /// Spins until a completion is ready (true) or the clock reaches `until`.
    fn poll_for_completion(&mut self, until: u64) -> bool {
        loop {
            if completion_ready(&mut self.ring) {
                return true;
            }
            if now_ns() >= until {
                return false;
            }
            for _ in 0..16 {
                std::hint::spin_loop();
            }
        }
    }

    /// One `io_uring_enter` that submits what is queued and waits for a
    /// completion, at most `timeout_ns`; a timeout or an interruption is no error.
    pub(super) fn enter_and_wait(&mut self, timeout_ns: u32) -> Result<(), ReplayError> {
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
                what: "submit and wait".into(),
                source,
            }),
        }
    }

    /// Waits until `deadline`, reaping completions meanwhile: sleeps, then
    /// spins through the last stretch. With I/O in flight that stretch is
    /// the fixed spin, so completions are reaped (and timed) as they come;
    /// with none, it is as short as this thread's wake-ups allow (`IdleSpin`).
    pub(super) fn wait_until(
        &mut self,
        pass: &mut Pass,
        deadline: u64,
        observer: &mut dyn Observer,
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
            let spin_ns = if pass.inflight == 0 {
                self.idle_spin.spin_ns(self.spin_ns)
            } else {
                self.spin_ns
            };
            if remain > spin_ns {
                let sleep = (remain - spin_ns).min(50_000_000);
                if pass.inflight > 0 {
                    self.enter_and_wait(sleep as u32)?;
                    let idle = now_ns().saturating_sub(pass.last_activity_ns);
                    if pass.inflight > 0 && idle > pass.io_timeout_ns {
                        return Err(ReplayError::DeviceTimeout {
                            path: self.targets.primary().path.clone(),
                            secs: pass.io_timeout_ns / 1_000_000_000,
                            in_flight: pass.inflight,
                        });
                    }
                } else {
                    let asked_until = now + sleep;
                    sleep_ns(sleep);
                    let woke = now_ns();
                    if woke >= asked_until {
                        self.idle_spin.observe(woke - asked_until);
                    }
                }
            } else if self.pinned && pass.inflight > 0 {
                // The worker that serves the request in flight may be
                // waiting for this CPU.
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{completion_ready, cooperative_ring, CompletionWaits};
    use io_uring::{opcode, squeue, types};
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::time::{Duration, Instant};

    /// The poll before sleeping relies on this: a request completed on an
    /// io-wq worker (IOSQE_ASYNC) shows as ready in the shared ring while
    /// this thread makes no system call, although its CQE is posted only by
    /// the next `io_uring_enter` (task work, deferred on this ring).
    #[test]
    fn a_completion_on_another_thread_shows_without_a_system_call() {
        let mut ring = cooperative_ring(8).expect("a ring");
        let mut file = tempfile::tempfile().expect("a temporary file");
        file.write_all(&[0x5a; 4096]).expect("4 KiB written");
        let mut buf = vec![0u8; 4096];
        let read = opcode::Read::new(types::Fd(file.as_raw_fd()), buf.as_mut_ptr(), 4096)
            .offset(0)
            .build()
            .flags(squeue::Flags::ASYNC)
            .user_data(7);
        // SAFETY: the buffer and the file outlive the request (reaped below).
        unsafe { ring.submission().push(&read).expect("room in the SQ") };
        ring.submit().expect("submitted");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !completion_ready(&mut ring) {
            assert!(
                Instant::now() < deadline,
                "the completion never showed in the ring's flags or CQ"
            );
            std::hint::spin_loop();
        }
        ring.submit_and_wait(1).expect("the completion reaped");
        let cqe = ring.completion().next().expect("one CQE");
        assert_eq!((cqe.user_data(), cqe.result()), (7, 4096));
        assert!(buf.iter().all(|&b| b == 0x5a));
        assert!(!completion_ready(&mut ring), "nothing else is pending");
    }

    /// Polling stops on a device slower than the budget, probes now and
    /// then, and resumes when the probes find completions fast again.
    #[test]
    fn completion_waits_poll_only_while_it_pays() {
        let mut waits = CompletionWaits::new(50_000);
        assert!(waits.worth_polling(), "a fresh ring polls");
        // A slow device: every poll ran out and the wait slept on.
        for _ in 0..20 {
            waits.observe(400_000);
        }
        let polled: Vec<bool> = (0..128).map(|_| waits.worth_polling()).collect();
        assert_eq!(
            polled.iter().filter(|&&p| p).count(),
            2,
            "only the probes (one in 64) poll"
        );
        // The device sped up: the probes' waits are short again.
        for _ in 0..40 {
            waits.observe(8_000);
        }
        assert!((0..10).all(|_| waits.worth_polling()), "polling resumed");
        let mut never = CompletionWaits::new(0);
        assert!(
            (0..200).all(|_| !never.worth_polling()),
            "budget 0 never polls"
        );
    }
}
