//! Stop signals: the capture ends cleanly (drains, restores, writes) instead
//! of dying.

use super::CaptureError;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(super) static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// CLOCK_MONOTONIC ns of the first SIGUSR2 (the task's start) and SIGUSR1
/// (its "done" point) the command sent; 0: none yet.
static TASK_START_MONO: AtomicU64 = AtomicU64::new(0);
static TASK_DONE_MONO: AtomicU64 = AtomicU64::new(0);

extern "C" fn mark_task(signal: libc::c_int) {
    // clock_gettime is async-signal-safe; 0 means "no mark", hence max(1).
    let now = super::wall_offset::mono_now_ns().max(1);
    let slot = if signal == libc::SIGUSR2 {
        &TASK_START_MONO
    } else {
        &TASK_DONE_MONO
    };
    let _ = slot.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst);
}

extern "C" fn request_stop(_signal: libc::c_int) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// The signals that end a capture cleanly: Ctrl-C, `kill`, a closed terminal
/// (SIGHUP: an ssh session that drops) and Ctrl-\ (SIGQUIT). Left at their
/// default, the last two killed the capture with its tracing instance still
/// recording every block I/O into a large buffer.
pub(super) const STOP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The signals a traced command sends to mark its task: SIGUSR2 its start,
/// SIGUSR1 its "done" point (the first of each counts).
pub(super) const TASK_MARK_SIGNALS: [libc::c_int; 2] = [libc::SIGUSR2, libc::SIGUSR1];

/// Each of [`STOP_SIGNALS`] sets a flag (the main loop then stops, drains and
/// restores) instead of killing the process; the old handlers come back on drop.
/// A SIGHUP the process was started with ignored stays ignored: `nohup` asked
/// for that. (SIGINT and SIGQUIT, which a script's background jobs start with
/// ignored, still stop it: `kill -INT` is how such a script ends a capture.)
pub(super) struct StopSignals {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

/// The marks the command sent, CLOCK_MONOTONIC ns: (start, done).
pub(super) fn task_marks_sent() -> (Option<u64>, Option<u64>) {
    let get = |a: &AtomicU64| Some(a.load(Ordering::SeqCst)).filter(|&t| t != 0);
    (get(&TASK_START_MONO), get(&TASK_DONE_MONO))
}

impl StopSignals {
    pub(super) fn install() -> Result<StopSignals, CaptureError> {
        STOP_REQUESTED.store(false, Ordering::SeqCst);
        TASK_START_MONO.store(0, Ordering::SeqCst);
        TASK_DONE_MONO.store(0, Ordering::SeqCst);
        let mut guard = StopSignals { old: Vec::new() };
        let handlers = STOP_SIGNALS
            .into_iter()
            .map(|s| (s, request_stop as extern "C" fn(libc::c_int) as usize))
            .chain(
                TASK_MARK_SIGNALS
                    .into_iter()
                    .map(|s| (s, mark_task as extern "C" fn(libc::c_int) as usize)),
            );
        for (signal, handler) in handlers {
            // SAFETY: a zeroed sigaction is valid; the handler only stores an atomic.
            unsafe {
                let mut current: libc::sigaction = std::mem::zeroed();
                if signal == libc::SIGHUP
                    && libc::sigaction(signal, std::ptr::null(), &mut current) == 0
                    && current.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler;
                libc::sigemptyset(&mut action.sa_mask);
                // No SA_RESTART for a stop: it wakes the poll at once. A mark
                // restarts whatever it interrupted.
                action.sa_flags = if TASK_MARK_SIGNALS.contains(&signal) {
                    libc::SA_RESTART
                } else {
                    0
                };
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) != 0 {
                    return Err(CaptureError::Usage(format!(
                        "cannot install a signal handler: {}",
                        io::Error::last_os_error()
                    )));
                }
                guard.old.push((signal, old));
            }
        }
        Ok(guard)
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for (signal, old) in self.old.drain(..).rev() {
            // SAFETY: restores a sigaction previously returned by the kernel.
            unsafe {
                libc::sigaction(signal, &old, std::ptr::null_mut());
            }
        }
    }
}
