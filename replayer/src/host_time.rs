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

/// CLOCK_REALTIME in nanoseconds since the Unix epoch.
pub fn unix_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec.max(0) as u64)
}

/// The wall clock minus the monotonic one, ns, read as one pair (the
/// smallest gap of a few tries): a monotonic instant plus this is a Unix
/// time. Read once per pass, so a step of the wall clock during a pass does
/// not move its instants.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    offset_ns: i128,
}

impl WallClock {
    pub fn read() -> WallClock {
        let mut best: Option<(u64, i128)> = None;
        for _ in 0..5 {
            let a = now_ns();
            let wall = unix_now_ns();
            let b = now_ns();
            let gap = b.saturating_sub(a);
            let offset = wall as i128 - (a / 2 + b / 2) as i128;
            if best.is_none_or(|(g, _)| gap < g) {
                best = Some((gap, offset));
            }
        }
        WallClock {
            offset_ns: best.map_or(0, |(_, o)| o),
        }
    }

    /// The Unix time (ns) of monotonic instant `mono_ns`.
    pub fn to_unix(&self, mono_ns: u64) -> u64 {
        (mono_ns as i128 + self.offset_ns).clamp(0, u64::MAX as i128) as u64
    }

    /// The monotonic instant of Unix time `unix_ns`.
    pub fn to_monotonic(&self, unix_ns: u64) -> u64 {
        (unix_ns as i128 - self.offset_ns).clamp(0, u64::MAX as i128) as u64
    }
}

/// What the kernel says of the wall clock's discipline (`adjtimex`, read
/// only): synchronised or not, and its error estimates in µs.
pub fn wall_clock_source() -> results::fleet::ClockSource {
    // SAFETY: a zeroed timex with modes 0 only reads the kernel's state.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut tx) };
    results::fleet::ClockSource {
        name: "CLOCK_REALTIME".into(),
        synchronized: state >= 0 && state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
        max_error_us: tx.maxerror.max(0) as u64,
        est_error_us: tx.esterror.max(0) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_and_monotonic_instants_map_both_ways() {
        let w = WallClock::read();
        let mono = now_ns();
        let unix = w.to_unix(mono);
        let direct = unix_now_ns();
        // Read a moment apart: within 50 ms on a loaded machine.
        assert!(unix.abs_diff(direct) < 50_000_000, "{unix} vs {direct}");
        assert_eq!(w.to_monotonic(unix), mono);
    }
}
