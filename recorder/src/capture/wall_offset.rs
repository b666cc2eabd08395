//! Clocks: trace-clock (CLOCK_MONOTONIC) times to wall-clock time.

use trace_format::Nanos;

/// Maps trace-clock times to wall-clock time.
#[derive(Debug, Clone, Copy)]
pub(super) struct ClockOffset {
    /// Unix ns minus trace-clock ns, when the trace clock is CLOCK_MONOTONIC.
    mono_to_unix: Option<i128>,
    /// Wall-clock time when tracing started (the fallback).
    start_unix_ns: i64,
}

pub(super) fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

impl ClockOffset {
    pub(super) fn measure(mono: bool) -> ClockOffset {
        let before = clock_ns(libc::CLOCK_MONOTONIC);
        let wall = clock_ns(libc::CLOCK_REALTIME);
        let after = clock_ns(libc::CLOCK_MONOTONIC);
        let mid = before + (after - before) / 2;
        ClockOffset {
            mono_to_unix: mono.then_some(wall - mid),
            start_unix_ns: i64::try_from(wall).unwrap_or(i64::MAX),
        }
    }

    pub(super) fn unix_ns(&self, trace_time: Option<Nanos>) -> i64 {
        match (self.mono_to_unix, trace_time) {
            (Some(offset), Some(t)) => {
                i64::try_from(i128::from(t.0) + offset).unwrap_or(self.start_unix_ns)
            }
            _ => self.start_unix_ns,
        }
    }
}

/// CLOCK_MONOTONIC now, in nanoseconds.
pub(super) fn mono_now_ns() -> u64 {
    u64::try_from(clock_ns(libc::CLOCK_MONOTONIC)).unwrap_or(0)
}
