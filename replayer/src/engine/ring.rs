//! Ring set-up, submission and the waits of the issuing loop.

use super::pass::Pass;
use super::{Engine, Observer};
use crate::clock::{now_ns, sleep_ns};
use crate::ReplayError;
use io_uring::{types, IoUring};

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
pub(super) fn cooperative_ring(entries: u32) -> std::io::Result<IoUring> {
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
/// "concurrent" work, for which io-wq starts more workers. Measured on zram,
/// 70/30 random 4 KiB at QD32 (bench/README.md): median 1.05x -> 1.18x fio's
/// replay.
///
/// Compressed mode caps io-wq's *bounded* workers at one per online CPU.
/// Block-device reads and writes turned out to be *unbounded* work on this
/// kernel (6.18: three `iou-wrk` threads ran under a bounded cap of one, one
/// under a cap of both kinds), so that cap binds only regular files; it is
/// kept as measured.
///
/// `in_order` (realtime mode): one worker of either kind. Several workers
/// race, so requests issued close together reach the device out of issue
/// order (509 of 60,000 in a 20,000 IOPS replay on zram, issue 12; 0 with
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

impl Engine<'_> {
    /// Submits the queued SQEs in one call, stamping their submission time.
    pub(super) fn submit(&mut self, pass: &mut Pass) -> Result<(), ReplayError> {
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

    pub(super) fn reap(&mut self, pass: &mut Pass, observer: &mut dyn Observer) -> usize {
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
        drop(cq);
        pass.publish_min_completion();
        n
    }

    /// Submits what is still queued and waits until at least one completion
    /// arrived (or the observer wants to stop); fails when nothing completes
    /// for the I/O timeout. A submission here rides on the wait's
    /// `io_uring_enter`: one system call where a separate submit makes two.
    pub(super) fn wait_completion(
        &mut self,
        pass: &mut Pass,
        observer: &mut dyn Observer,
    ) -> Result<(), ReplayError> {
        loop {
            if !pass.queued.is_empty() {
                pass.stamp_submitted(now_ns());
            } else if self.reap(pass, observer) > 0 || pass.inflight == 0 {
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
            if idle > pass.io_timeout_ns {
                return Err(ReplayError::DeviceTimeout {
                    path: self.target.path.clone(),
                    secs: pass.io_timeout_ns / 1_000_000_000,
                    in_flight: pass.inflight,
                });
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

    /// Waits until `deadline`, reaping completions meanwhile.
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
            if remain > self.spin_ns {
                let sleep = (remain - self.spin_ns).min(50_000_000);
                if pass.inflight > 0 {
                    self.enter_and_wait(sleep as u32)?;
                    let idle = now_ns().saturating_sub(pass.last_activity_ns);
                    if pass.inflight > 0 && idle > pass.io_timeout_ns {
                        return Err(ReplayError::DeviceTimeout {
                            path: self.target.path.clone(),
                            secs: pass.io_timeout_ns / 1_000_000_000,
                            in_flight: pass.inflight,
                        });
                    }
                } else {
                    sleep_ns(sleep);
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
