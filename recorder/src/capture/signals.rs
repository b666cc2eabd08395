//! Stop signals: the capture ends cleanly (drains, restores, writes) instead
//! of dying.

use super::CaptureError;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

pub(super) static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_signal: libc::c_int) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// The signals that end a capture cleanly: Ctrl-C, `kill`, a closed terminal
/// (SIGHUP: an ssh session that drops) and Ctrl-\ (SIGQUIT). Left at their
/// default, the last two killed the capture with its tracing instance still
/// recording every block I/O into a large buffer.
pub(super) const STOP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Each of [`STOP_SIGNALS`] sets a flag (the main loop then stops, drains and
/// restores) instead of killing the process; the old handlers come back on drop.
/// A SIGHUP the process was started with ignored stays ignored: `nohup` asked
/// for that. (SIGINT and SIGQUIT, which a script's background jobs start with
/// ignored, still stop it: `kill -INT` is how such a script ends a capture.)
pub(super) struct StopSignals {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl StopSignals {
    pub(super) fn install() -> Result<StopSignals, CaptureError> {
        STOP_REQUESTED.store(false, Ordering::SeqCst);
        let mut guard = StopSignals { old: Vec::new() };
        for signal in STOP_SIGNALS {
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
                action.sa_sigaction = request_stop as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                // No SA_RESTART: a signal wakes the poll at once.
                action.sa_flags = 0;
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
