//! Statistics of a trace that need one pass over its records (what `info`
//! shows beyond the footer's summary). Memory is bounded by the number of
//! requests in flight at once in the original, not by the trace's length.

use crate::codec::gcd;
use crate::record::{IoRecord, Op};
use crate::units::Nanos;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A histogram over fixed bucket bounds: `counts[i]` counts values `<= bounds[i]`
/// (and above the previous bound); the last count is everything above the last bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histogram {
    pub bounds: Vec<u64>,
    pub counts: Vec<u64>,
}

impl Histogram {
    fn new(bounds: Vec<u64>) -> Histogram {
        let n = bounds.len() + 1;
        Histogram {
            bounds,
            counts: vec![0; n],
        }
    }

    fn add(&mut self, v: u64) {
        let i = self.bounds.partition_point(|&b| b < v);
        self.counts[i] += 1;
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The one-pass statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceStats {
    /// Request sizes in bytes of reads and of writes (bounds 4 KiB, 8 KiB, ... 1 MiB).
    pub read_sizes: Histogram,
    pub write_sizes: Histogram,
    /// Reads and writes that start where the previous read or write (of the same
    /// device) ended.
    pub sequential: u64,
    pub data_requests: u64,
    /// Requests in flight in the original when each request was issued,
    /// itself included (only records with a known latency).
    pub queue_depth: Option<Histogram>,
    /// Time with at least one request in flight in the original (needs latencies).
    pub busy: Option<Nanos>,
    /// Gaps in ns between one request's issue and the next one's (bounds 100 µs,
    /// 1 ms, 10 ms, 100 ms, 1 s, 10 s).
    pub issue_gaps: Histogram,
    /// Time without any request in flight (or, without latencies, the sum of
    /// inter-issue gaps above 1 ms), the part of the trace a compressed replay removes.
    pub idle: Nanos,
    /// The largest unit that divides every record's time (counted from the
    /// first record) and every latency: the trace's time resolution, e.g.
    /// 1 µs for a source that gives microseconds, 1 ns for a ring-buffer
    /// capture. None when there is nothing to measure (one record, no latency).
    pub time_step: Option<Nanos>,
}

impl TraceStats {
    pub const SIZE_BOUNDS: [u64; 9] = [
        4096,
        8192,
        16384,
        32768,
        65536,
        131072,
        262144,
        524288,
        1 << 20,
    ];
    pub const GAP_BOUNDS: [u64; 6] = [
        100_000,
        1_000_000,
        10_000_000,
        100_000_000,
        1_000_000_000,
        10_000_000_000,
    ];
    pub const QD_BOUNDS: [u64; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
    /// Without latencies, only gaps longer than this count as idle.
    pub const IDLE_GAP: Nanos = Nanos(1_000_000);

    /// Share of reads and writes that are sequential, 0..=1.
    pub fn sequential_share(&self) -> f64 {
        if self.data_requests == 0 {
            0.0
        } else {
            self.sequential as f64 / self.data_requests as f64
        }
    }
}

/// Accumulates `TraceStats` record by record.
pub struct StatsBuilder {
    stats: TraceStats,
    last_end: Vec<Option<u64>>,
    in_flight: BinaryHeap<Reverse<u64>>,
    with_latency: u64,
    busy_start: u64,
    busy_end: Option<u64>,
    busy_total: u64,
    idle_total: u64,
    prev_time: Option<u64>,
    gap_idle_total: u64,
    first_time: Option<u64>,
    /// GCD of the times from the first and of the latencies (0: none yet).
    time_gcd: u64,
}

impl Default for StatsBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl StatsBuilder {
    pub fn new() -> StatsBuilder {
        StatsBuilder {
            stats: TraceStats {
                read_sizes: Histogram::new(TraceStats::SIZE_BOUNDS.to_vec()),
                write_sizes: Histogram::new(TraceStats::SIZE_BOUNDS.to_vec()),
                sequential: 0,
                data_requests: 0,
                queue_depth: None,
                busy: None,
                issue_gaps: Histogram::new(TraceStats::GAP_BOUNDS.to_vec()),
                idle: Nanos::ZERO,
                time_step: None,
            },
            last_end: Vec::new(),
            in_flight: BinaryHeap::new(),
            with_latency: 0,
            busy_start: 0,
            busy_end: None,
            busy_total: 0,
            idle_total: 0,
            prev_time: None,
            gap_idle_total: 0,
            first_time: None,
            time_gcd: 0,
        }
    }

    pub fn add(&mut self, r: &IoRecord) {
        let t = r.time.0;
        if let Some(prev) = self.prev_time {
            let gap = t - prev.min(t);
            self.stats.issue_gaps.add(gap);
            if gap > TraceStats::IDLE_GAP.0 {
                self.gap_idle_total += gap;
            }
        }
        self.prev_time = Some(t);
        let first = *self.first_time.get_or_insert(t);
        self.time_gcd = gcd(self.time_gcd, t.abs_diff(first));
        if let Some(lat) = r.latency {
            self.time_gcd = gcd(self.time_gcd, lat.0);
        }
        if r.op.carries_data() {
            self.stats.data_requests += 1;
            match r.op {
                Op::Read => self.stats.read_sizes.add(r.len.0),
                _ => self.stats.write_sizes.add(r.len.0),
            }
            let dev = usize::from(r.device);
            if self.last_end.len() <= dev {
                self.last_end.resize(dev + 1, None);
            }
            if self.last_end[dev] == Some(r.offset.0) {
                self.stats.sequential += 1;
            }
            self.last_end[dev] = r.end().map(|e| e.0);
        }
        if let Some(done) = r.completion() {
            self.with_latency += 1;
            while self.in_flight.peek().is_some_and(|Reverse(c)| *c <= t) {
                self.in_flight.pop();
            }
            self.in_flight.push(Reverse(done.0));
            let depth = self.in_flight.len() as u64;
            self.stats
                .queue_depth
                .get_or_insert_with(|| Histogram::new(TraceStats::QD_BOUNDS.to_vec()))
                .add(depth);
            match self.busy_end {
                Some(end) if t <= end => self.busy_end = Some(end.max(done.0)),
                Some(end) => {
                    self.busy_total += end - self.busy_start;
                    self.idle_total += t - end;
                    self.busy_start = t;
                    self.busy_end = Some(done.0);
                }
                None => {
                    self.idle_total += t;
                    self.busy_start = t;
                    self.busy_end = Some(done.0);
                }
            }
        }
    }

    /// The statistics; `total_records` is the trace's record count (to tell
    /// whether every record had a latency).
    pub fn finish(mut self, total_records: u64) -> TraceStats {
        self.stats.time_step = (self.time_gcd > 0).then_some(Nanos(self.time_gcd));
        if self.with_latency > 0 && self.with_latency == total_records {
            if let Some(end) = self.busy_end {
                self.busy_total += end - self.busy_start;
            }
            self.stats.busy = Some(Nanos(self.busy_total));
            self.stats.idle = Nanos(self.idle_total);
        } else {
            self.stats.queue_depth = None;
            self.stats.idle = Nanos(self.gap_idle_total);
        }
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Flags;
    use crate::units::Bytes;

    fn rec(t: u64, op: Op, off: u64, len: u64, lat: Option<u64>) -> IoRecord {
        IoRecord {
            time: Nanos(t),
            op,
            offset: Bytes(off),
            len: Bytes(len),
            flags: Flags::NONE,
            latency: lat.map(Nanos),
            stream: None,
            device: 0,
        }
    }

    #[test]
    fn busy_idle_and_depth_follow_the_intervals() {
        // [0,100) and [50,120) overlap: busy 120; idle 120..1000; [1000,1010).
        let recs = [
            rec(0, Op::Read, 0, 4096, Some(100)),
            rec(50, Op::Read, 4096, 4096, Some(70)),
            rec(1000, Op::Write, 0, 8192, Some(10)),
        ];
        let mut b = StatsBuilder::new();
        recs.iter().for_each(|r| b.add(r));
        let s = b.finish(3);
        assert_eq!(s.busy, Some(Nanos(130)));
        assert_eq!(s.idle, Nanos(880));
        assert_eq!(s.sequential, 1);
        let qd = s.queue_depth.unwrap();
        assert_eq!(qd.counts[0], 2); // depth 1 twice
        assert_eq!(qd.counts[1], 1); // depth 2 once
        assert_eq!(s.read_sizes.counts[0], 2);
        assert_eq!(s.write_sizes.counts[1], 1);
    }

    #[test]
    fn without_latencies_idle_is_the_long_gaps() {
        let recs = [
            rec(0, Op::Read, 0, 4096, None),
            rec(500, Op::Read, 0, 4096, None),
            rec(5_000_500, Op::Read, 0, 4096, None),
        ];
        let mut b = StatsBuilder::new();
        recs.iter().for_each(|r| b.add(r));
        let s = b.finish(3);
        assert_eq!(s.busy, None);
        assert_eq!(s.queue_depth, None);
        assert_eq!(s.idle, Nanos(5_000_000));
        assert_eq!(s.issue_gaps.total(), 2);
        assert_eq!(s.time_step, Some(Nanos(500)));
    }

    #[test]
    fn time_step_is_the_resolution_of_times_and_latencies() {
        let step = |recs: &[IoRecord]| {
            let mut b = StatsBuilder::new();
            recs.iter().for_each(|r| b.add(r));
            b.finish(recs.len() as u64).time_step
        };
        // Microsecond times offset from zero, microsecond latencies.
        let us = [
            rec(1_234_567_000, Op::Read, 0, 4096, Some(3_000)),
            rec(1_234_569_000, Op::Read, 0, 4096, Some(17_000)),
            rec(1_234_600_000, Op::Write, 0, 4096, Some(250_000)),
        ];
        assert_eq!(step(&us), Some(Nanos(1_000)));
        // One nanosecond-exact latency brings it to 1 ns.
        let mut ns = us;
        ns[1].latency = Some(Nanos(17_001));
        assert_eq!(step(&ns), Some(Nanos(1)));
        // Nothing to measure: one record without a latency.
        assert_eq!(
            step(
                &us[..1]
                    .iter()
                    .map(|r| IoRecord {
                        latency: None,
                        ..*r
                    })
                    .collect::<Vec<_>>()
            ),
            None
        );
    }
}
