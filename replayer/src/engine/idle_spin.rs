//! How long before a deadline an issuer with nothing in flight spins
//! instead of sleeping.
//!
//! A sleep ends late by the timer's wake-up latency: a few µs on a quiet
//! machine, tens of µs on a busy or virtual one. The spin has to cover that
//! or the next I/O goes out late; anything longer only burns a CPU (at
//! 20,000 IOPS a fixed 50 µs spin is the whole of one). So the spin follows
//! the measured lateness of this thread's own sleeps: their p99 over the
//! recent ones plus a margin, never more than the fixed spin. With I/O in
//! flight the fixed spin stays: the spin also reaps completions as they
//! come, and the access times are measured by that reaping.

use crate::host_time::{now_ns, sleep_ns};

/// Width of one histogram bucket.
const BUCKET_NS: u64 = 1_000;
/// Buckets of lateness 0-1 µs, ..., 63-64 µs; one more counts the later ones.
const BUCKETS: usize = 64;
/// Sleeps observed before the measured lateness is trusted: enough that
/// the p99 is not simply the latest of them.
const MIN_SAMPLES: u32 = 256;
/// At this many samples every count is halved, so the estimate follows
/// the machine as its load changes (a half-life of about 2,000 sleeps).
const HALVE_AT: u32 = 4_096;
/// The spin covers all but this fraction of the sleeps' lateness.
const TAIL_PER_MILLE: u32 = 10;
/// Added to the measured p99: the histogram is coarse, and a sleep's end is
/// followed by a clock read and a loop turn before the spin starts.
const MARGIN_NS: u64 = 3_000;
/// Never less than this, whatever the measurement says.
const MIN_SPIN_NS: u64 = 5_000;
/// The length of one calibration sleep (`IdleSpin::calibrate`).
const CALIBRATION_SLEEP_NS: u64 = 20_000;
/// Calibration stops after this long (7 ms on a quiet machine; on a loaded
/// one each sleep can take milliseconds, and 256 of them would hold a
/// pass's start back by as much as half a second).
const CALIBRATION_BUDGET_NS: u64 = 20_000_000;
/// Late sleeps (past the histogram) among `MIN_SAMPLES` beyond which the
/// estimate can only say "the fixed spin": calibration stops there.
const HOPELESS_LATE: u32 = MIN_SAMPLES * TAIL_PER_MILLE / 1_000;

/// The measured lateness of recent sleeps, and the spin it asks for.
#[derive(Debug, Clone)]
pub(super) struct IdleSpin {
    counts: [u32; BUCKETS + 1],
    total: u32,
    /// The spin the histogram asks for; `u64::MAX` until it is trusted.
    spin_ns: u64,
}

impl IdleSpin {
    pub(super) fn new() -> IdleSpin {
        IdleSpin {
            counts: [0; BUCKETS + 1],
            total: 0,
            spin_ns: u64::MAX,
        }
    }

    /// The spin before a deadline with nothing in flight: the measured one,
    /// at most `cap` (the fixed spin, which holds until enough sleeps were
    /// measured).
    pub(super) fn spin_ns(&self, cap: u64) -> u64 {
        self.spin_ns.min(cap)
    }

    /// Records how late a sleep ended (its end minus the time asked for).
    pub(super) fn observe(&mut self, lateness_ns: u64) {
        let bucket = ((lateness_ns / BUCKET_NS) as usize).min(BUCKETS);
        self.counts[bucket] += 1;
        self.total += 1;
        if self.total >= HALVE_AT {
            self.total = 0;
            for count in &mut self.counts {
                *count /= 2;
                self.total += *count;
            }
        }
        if self.total >= MIN_SAMPLES {
            self.spin_ns = self.covering_spin();
        }
    }

    /// The spin that covers all but `TAIL_PER_MILLE` of the recorded
    /// lateness, plus the margin; `u64::MAX` when the tail reaches past the
    /// histogram (later than 64 µs).
    fn covering_spin(&self) -> u64 {
        let allowed = self.total * TAIL_PER_MILLE / 1_000;
        let mut later = 0u32;
        for bucket in (0..=BUCKETS).rev() {
            later += self.counts[bucket];
            if later > allowed {
                if bucket == BUCKETS {
                    return u64::MAX;
                }
                let upper = (bucket as u64 + 1) * BUCKET_NS;
                return (upper + MARGIN_NS).max(MIN_SPIN_NS);
            }
        }
        MIN_SPIN_NS
    }

    /// Whether too few sleeps were measured to trust the estimate.
    pub(super) fn needs_calibration(&self) -> bool {
        self.total < MIN_SAMPLES
    }

    /// Forgets what was measured and measures this thread's wake-up
    /// lateness afresh with short sleeps (about 7 ms). Once per realtime
    /// pass, so every pass starts from the machine as it is: a trace whose
    /// gaps are all shorter than the spin never sleeps, and would never
    /// learn that it could (or that it no longer can). It stops early, the
    /// fixed spin kept, where the wake-ups are too late for a shorter spin
    /// or the time budget is spent.
    pub(super) fn calibrate(&mut self) {
        *self = IdleSpin::new();
        let started = now_ns();
        // Bounded in count too: a sleep cut short by a signal measures nothing.
        for _ in 0..4 * MIN_SAMPLES {
            if !self.needs_calibration()
                || self.counts[BUCKETS] > HOPELESS_LATE
                || now_ns().saturating_sub(started) > CALIBRATION_BUDGET_NS
            {
                break;
            }
            let asked_until = now_ns() + CALIBRATION_SLEEP_NS;
            sleep_ns(CALIBRATION_SLEEP_NS);
            let woke = now_ns();
            if woke >= asked_until {
                self.observe(woke - asked_until);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: u64 = 50_000;

    #[test]
    fn the_fixed_spin_holds_until_enough_sleeps_were_measured() {
        let mut spin = IdleSpin::new();
        for _ in 0..MIN_SAMPLES - 1 {
            spin.observe(2_000);
        }
        assert_eq!(spin.spin_ns(CAP), CAP);
        spin.observe(2_000);
        assert_eq!(spin.spin_ns(CAP), 3_000 + MARGIN_NS);
    }

    #[test]
    fn the_spin_covers_the_p99_of_lateness_not_the_median() {
        let mut spin = IdleSpin::new();
        // 98 % at 6 µs, 2 % at 30 µs: the p99 is among the late ones.
        for i in 0..1_000 {
            spin.observe(if i % 50 == 0 { 30_500 } else { 6_200 });
        }
        assert_eq!(spin.spin_ns(CAP), 31_000 + MARGIN_NS);
        // Under 1 % late: the spin covers the usual lateness only.
        let mut spin = IdleSpin::new();
        for i in 0..1_000 {
            spin.observe(if i % 200 == 0 { 30_500 } else { 6_200 });
        }
        assert_eq!(spin.spin_ns(CAP), 7_000 + MARGIN_NS);
    }

    #[test]
    fn a_tail_past_the_histogram_keeps_the_fixed_spin() {
        let mut spin = IdleSpin::new();
        for i in 0..1_000 {
            spin.observe(if i % 20 == 0 { 200_000 } else { 6_000 });
        }
        assert_eq!(spin.spin_ns(CAP), CAP);
    }

    #[test]
    fn the_estimate_follows_the_machine_when_wake_ups_get_later() {
        let mut spin = IdleSpin::new();
        for _ in 0..HALVE_AT {
            spin.observe(4_000);
        }
        assert_eq!(spin.spin_ns(CAP), 5_000 + MARGIN_NS);
        // The machine gets busy: after a few hundred late wake-ups the spin
        // covers them, long before the old samples are forgotten.
        for _ in 0..200 {
            spin.observe(40_000);
        }
        assert_eq!(spin.spin_ns(CAP), 41_000 + MARGIN_NS);
        // Never below the floor, never above the cap.
        let mut spin = IdleSpin::new();
        for _ in 0..MIN_SAMPLES {
            spin.observe(0);
        }
        assert_eq!(spin.spin_ns(CAP), MIN_SPIN_NS);
        assert_eq!(spin.spin_ns(4_000), 4_000);
    }

    #[test]
    fn calibration_measures_real_sleeps() {
        let mut spin = IdleSpin::new();
        assert!(spin.needs_calibration());
        // What an earlier pass measured is forgotten.
        for _ in 0..MIN_SAMPLES * 2 {
            spin.observe(1_000_000);
        }
        let started = now_ns();
        spin.calibrate();
        let took = now_ns() - started;
        assert!(
            (1..=MIN_SAMPLES).contains(&spin.total),
            "{} sleeps",
            spin.total
        );
        assert_eq!(spin.counts.iter().sum::<u32>(), spin.total);
        if spin.total == MIN_SAMPLES {
            assert!(
                took >= u64::from(MIN_SAMPLES) * CALIBRATION_SLEEP_NS,
                "{MIN_SAMPLES} sleeps of {CALIBRATION_SLEEP_NS} ns took only {took} ns"
            );
        } else {
            // A loaded machine: stopped early, and the fixed spin holds.
            assert!(
                spin.counts[BUCKETS] > HOPELESS_LATE || took > CALIBRATION_BUDGET_NS,
                "stopped after {} sleeps in {took} ns for no reason",
                spin.total
            );
            assert_eq!(spin.spin_ns(CAP), CAP);
        }
    }
}
