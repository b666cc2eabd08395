//! Stop signals: a handler that only records the signal; the engine checks it
//! between I/Os, stops issuing, drains what is in flight and returns a
//! partial result, which is written (marked not valid) instead of lost.
//!
//! Handled: SIGINT (Ctrl-C), SIGTERM (`kill`, a scheduler's time limit),
//! SIGHUP (the terminal went away) and SIGQUIT (Ctrl-\).

use std::sync::atomic::{AtomicI32, Ordering};

/// The signals that stop a replay with its partial result written.
pub const STOP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The first stop signal received (0: none).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(signal: libc::c_int) {
    let _ = STOP_SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

/// Installs the handler for every [`STOP_SIGNALS`] (SA_RESTART off, so a
/// blocking wait returns EINTR).
pub fn install_stop_handlers() -> std::io::Result<()> {
    for signal in STOP_SIGNALS {
        // SAFETY: a zeroed sigaction with a handler that only touches an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            if libc::sigaction(signal, &sa, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

pub fn interrupted() -> bool {
    STOP_SIGNAL.load(Ordering::Relaxed) != 0
}

/// The signal that stopped the run, if one did.
pub fn stop_signal() -> Option<libc::c_int> {
    Some(STOP_SIGNAL.load(Ordering::Relaxed)).filter(|&s| s != 0)
}

/// `SIGTERM` for 15, and so on.
pub fn signal_name(signal: libc::c_int) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        other => format!("signal {other}"),
    }
}

/// Sets the flag as SIGINT would (for tests and for embedding callers).
pub fn request_interrupt() {
    let _ = STOP_SIGNAL.compare_exchange(0, libc::SIGINT, Ordering::SeqCst, Ordering::SeqCst);
}

pub fn clear_interrupt() {
    STOP_SIGNAL.store(0, Ordering::SeqCst);
}
