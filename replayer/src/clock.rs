//! The monotonic clock in nanoseconds, and precise sleeping.

/// CLOCK_MONOTONIC in nanoseconds (a vDSO call, no syscall).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Asks the kernel for 1 ns timer slack (the default is 50 µs), so sleeps end
/// when asked: realtime replay aims at an issue lateness p99 under 50 µs.
pub fn use_fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Sleeps for `ns` nanoseconds (interrupted sleeps just return early).
pub fn sleep_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: nanosleep reads a valid timespec; the remainder pointer may be null.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}
