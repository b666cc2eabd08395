//! Ctrl-C: a SIGINT handler that only sets a flag; the engine checks it between
//! I/Os, stops issuing, drains what is in flight and returns a partial result.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the handler (SA_RESTART off, so a blocking wait returns EINTR).
pub fn install_sigint_handler() -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction with a handler that only touches an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        if libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Sets the flag as SIGINT would (for tests and for embedding callers).
pub fn request_interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

pub fn clear_interrupt() {
    INTERRUPTED.store(false, Ordering::SeqCst);
}
