//! Statistics of a trace that need one pass over its records (what `info`
//! shows beyond the footer's summary). Memory does not grow with the trace's
//! length: it is bounded by the most requests in flight at once in the
//! original (queue depth) plus the extents of the footprint (two interval
//! sets, of touched and of written bytes: one entry per separate extent, so
//! at most footprint / smallest request entries, typically far fewer).

mod intervals;

pub use intervals::IntervalSet;

use crate::codec::gcd;
use crate::record::{IoRecord, Op};
use crate::units::{Bytes, Nanos};
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

/// Idle periods (no request in flight) by length: how many, and how much
/// time they hold, per bucket of [`TraceStats::IDLE_BOUNDS`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdlePeriods {
    pub bounds: Vec<u64>,
    pub counts: Vec<u64>,
    /// Nanoseconds of idle in each bucket.
    pub ns: Vec<u64>,
    /// For each cap of [`TraceStats::IDLE_CAPS`]: the idle time left when
    /// every period is shortened to at most the cap (what a realtime replay
    /// with that idle cap waits in total).
    pub kept_ns_at_cap: Vec<u64>,
}

impl IdlePeriods {
    fn new() -> IdlePeriods {
        let n = TraceStats::IDLE_BOUNDS.len() + 1;
        IdlePeriods {
            bounds: TraceStats::IDLE_BOUNDS.to_vec(),
            counts: vec![0; n],
            ns: vec![0; n],
            kept_ns_at_cap: vec![0; TraceStats::IDLE_CAPS.len()],
        }
    }

    fn add(&mut self, gap: u64) {
        if gap == 0 {
            return;
        }
        let i = self.bounds.partition_point(|&b| b < gap);
        self.counts[i] += 1;
        self.ns[i] += gap;
        for (kept, cap) in self.kept_ns_at_cap.iter_mut().zip(TraceStats::IDLE_CAPS) {
            *kept += gap.min(cap);
        }
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
    /// Reads that start where the previous read (of the same device) ended;
    /// the other reads are random. Likewise for writes.
    pub sequential_reads: u64,
    pub random_reads: u64,
    pub sequential_writes: u64,
    pub random_writes: u64,
    /// Sequential reads and writes together, and all reads and writes.
    pub sequential: u64,
    pub data_requests: u64,
    /// Requests in flight in the original when each request was issued,
    /// itself included (only records with a known latency).
    pub queue_depth: Option<Histogram>,
    /// The same, exactly: `queue_depth_counts[d]` requests were issued at depth `d`.
    pub queue_depth_counts: Option<Vec<u64>>,
    /// Idle periods by length (with latencies: time with nothing in flight;
    /// without: inter-issue gaps above [`TraceStats::IDLE_GAP`]).
    pub idle_periods: IdlePeriods,
    /// Distinct bytes read or written (per device, summed).
    pub footprint: Bytes,
    /// Distinct bytes written.
    pub written_footprint: Bytes,
    /// Bytes read that the trace itself wrote earlier (by issue order),
    /// counted on every read.
    pub read_after_write: Bytes,
    /// The most separate extents the footprint had (what its memory grew with).
    pub footprint_extents: usize,
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
    /// Idle period buckets: 1 ms, 10 ms, 100 ms, 1 s, 10 s.
    pub const IDLE_BOUNDS: [u64; 5] = [
        1_000_000,
        10_000_000,
        100_000_000,
        1_000_000_000,
        10_000_000_000,
    ];
    /// The idle caps [`IdlePeriods::kept_ns_at_cap`] is given for: 10 ms, 100 ms, 1 s.
    pub const IDLE_CAPS: [u64; 3] = [10_000_000, 100_000_000, 1_000_000_000];
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

    /// Share of requests issued at queue depth 1 (alone in flight), 0..=1.
    pub fn qd1_share(&self) -> Option<f64> {
        let c = self.queue_depth_counts.as_ref()?;
        let total: u64 = c.iter().sum();
        (total > 0).then(|| c.get(1).copied().unwrap_or(0) as f64 / total as f64)
    }

    /// The queue depth at issue below or at which a share `p` (0..=1) of the
    /// requests were issued: 0.5 gives the median, 0.9 the 90th percentile.
    pub fn queue_depth_percentile(&self, p: f64) -> Option<u64> {
        let c = self.queue_depth_counts.as_ref()?;
        let total: u64 = c.iter().sum();
        if total == 0 {
            return None;
        }
        let want = ((p.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (depth, &n) in c.iter().enumerate() {
            seen += n;
            if seen >= want {
                return Some(depth as u64);
            }
        }
        Some(c.len() as u64 - 1)
    }
}

/// Accumulates `TraceStats` record by record.
pub struct StatsBuilder {
    stats: TraceStats,
    /// Per device: where the last read and the last write ended.
    last_read_end: Vec<Option<u64>>,
    last_write_end: Vec<Option<u64>>,
    /// Per device: bytes touched, bytes written.
    touched: Vec<IntervalSet>,
    written: Vec<IntervalSet>,
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
    /// Idle periods as inter-issue gaps (used when latencies are missing).
    gap_idle: IdlePeriods,
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
                sequential_reads: 0,
                random_reads: 0,
                sequential_writes: 0,
                random_writes: 0,
                sequential: 0,
                data_requests: 0,
                queue_depth: None,
                queue_depth_counts: None,
                idle_periods: IdlePeriods::new(),
                footprint: Bytes(0),
                written_footprint: Bytes(0),
                read_after_write: Bytes(0),
                footprint_extents: 0,
                busy: None,
                issue_gaps: Histogram::new(TraceStats::GAP_BOUNDS.to_vec()),
                idle: Nanos::ZERO,
                time_step: None,
            },
            last_read_end: Vec::new(),
            last_write_end: Vec::new(),
            touched: Vec::new(),
            written: Vec::new(),
            gap_idle: IdlePeriods::new(),
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
                self.gap_idle.add(gap);
            }
        }
        self.prev_time = Some(t);
        let first = *self.first_time.get_or_insert(t);
        self.time_gcd = gcd(self.time_gcd, t.abs_diff(first));
        if let Some(lat) = r.latency {
            self.time_gcd = gcd(self.time_gcd, lat.0);
        }
        if r.op.carries_data() {
            self.add_data(r);
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
            let counts = self.stats.queue_depth_counts.get_or_insert_with(Vec::new);
            if counts.len() <= depth as usize {
                counts.resize(depth as usize + 1, 0);
            }
            counts[depth as usize] += 1;
            match self.busy_end {
                Some(end) if t <= end => self.busy_end = Some(end.max(done.0)),
                Some(end) => {
                    self.busy_total += end - self.busy_start;
                    self.idle_total += t - end;
                    self.stats.idle_periods.add(t - end);
                    self.busy_start = t;
                    self.busy_end = Some(done.0);
                }
                None => {
                    self.idle_total += t;
                    self.stats.idle_periods.add(t);
                    self.busy_start = t;
                    self.busy_end = Some(done.0);
                }
            }
        }
    }

    /// Sizes, sequential or random, footprint and read-after-write of a read or write.
    fn add_data(&mut self, r: &IoRecord) {
        let st = &mut self.stats;
        st.data_requests += 1;
        let dev = usize::from(r.device);
        if self.touched.len() <= dev {
            self.touched.resize_with(dev + 1, IntervalSet::new);
            self.written.resize_with(dev + 1, IntervalSet::new);
            self.last_read_end.resize(dev + 1, None);
            self.last_write_end.resize(dev + 1, None);
        }
        let start = r.offset.0;
        let end = r.end().map_or(u64::MAX, |e| e.0);
        let is_read = r.op == Op::Read;
        let last_end = if is_read {
            st.read_sizes.add(r.len.0);
            &mut self.last_read_end[dev]
        } else {
            st.write_sizes.add(r.len.0);
            &mut self.last_write_end[dev]
        };
        let sequential = *last_end == Some(start);
        *last_end = Some(end);
        match (is_read, sequential) {
            (true, true) => st.sequential_reads += 1,
            (true, false) => st.random_reads += 1,
            (false, true) => st.sequential_writes += 1,
            (false, false) => st.random_writes += 1,
        }
        st.sequential += u64::from(sequential);
        if is_read {
            st.read_after_write.0 += self.written[dev].overlap(start, end);
        } else {
            self.written[dev].insert(start, end);
        }
        self.touched[dev].insert(start, end);
        let extents: usize = self.touched.iter().map(IntervalSet::extents).sum();
        st.footprint_extents = st.footprint_extents.max(extents);
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
            self.stats.queue_depth_counts = None;
            self.stats.idle = Nanos(self.gap_idle_total);
            self.stats.idle_periods = self.gap_idle;
        }
        self.stats.footprint = Bytes(self.touched.iter().map(IntervalSet::covered).sum());
        self.stats.written_footprint = Bytes(self.written.iter().map(IntervalSet::covered).sum());
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

    #[test]
    fn sequential_and_random_are_counted_per_operation() {
        // A read stream interleaved with a write stream: each stays sequential.
        let recs = [
            rec(0, Op::Read, 0, 4096, None),
            rec(1, Op::Write, 1 << 20, 8192, None),
            rec(2, Op::Read, 4096, 4096, None), // follows the read
            rec(3, Op::Write, (1 << 20) + 8192, 4096, None), // follows the write
            rec(4, Op::Read, 1 << 30, 4096, None), // jumps
            rec(5, Op::Flush, 0, 0, None),      // not data: ignored
            rec(6, Op::Read, (1 << 30) + 4096, 4096, None),
            rec(7, Op::Write, 0, 4096, None), // jumps
        ];
        let mut b = StatsBuilder::new();
        recs.iter().for_each(|r| b.add(r));
        let s = b.finish(recs.len() as u64);
        assert_eq!((s.sequential_reads, s.random_reads), (2, 2));
        assert_eq!((s.sequential_writes, s.random_writes), (1, 2));
        assert_eq!((s.sequential, s.data_requests), (3, 7));
    }

    #[test]
    fn footprint_and_read_after_write_count_distinct_and_rewritten_bytes() {
        let recs = [
            rec(0, Op::Read, 0, 8192, None),     // reads [0, 8K): not written yet
            rec(1, Op::Write, 4096, 8192, None), // writes [4K, 12K)
            rec(2, Op::Read, 0, 16384, None),    // [4K, 12K) of it was written: 8K
            rec(3, Op::Read, 8192, 4096, None),  // [8K, 12K): 4K again
            rec(4, Op::Write, 1 << 20, 4096, None), // a second extent
            rec(5, Op::Discard, 0, 1 << 30, None), // not data
        ];
        let mut b = StatsBuilder::new();
        recs.iter().for_each(|r| b.add(r));
        let s = b.finish(recs.len() as u64);
        assert_eq!(s.footprint, Bytes(16384 + 4096));
        assert_eq!(s.written_footprint, Bytes(8192 + 4096));
        assert_eq!(s.read_after_write, Bytes(8192 + 4096));
        assert_eq!(s.footprint_extents, 2);
        // Devices are separate address spaces.
        let mut other = recs[2];
        other.device = 1;
        let mut b = StatsBuilder::new();
        [recs[1], other].iter().for_each(|r| b.add(r));
        let s = b.finish(2);
        assert_eq!(s.read_after_write, Bytes(0));
        assert_eq!(s.footprint, Bytes(8192 + 16384));
    }

    #[test]
    fn queue_depth_share_median_and_p90() {
        // Ten requests alone (depth 1), then a burst of 10 issued together
        // (depths 1..=10), each lasting 1 ms.
        let mut recs = Vec::new();
        for i in 0..10u64 {
            recs.push(rec(
                i * 10_000_000,
                Op::Read,
                i * 4096,
                4096,
                Some(1_000_000),
            ));
        }
        for i in 0..10u64 {
            recs.push(rec(
                200_000_000 + i,
                Op::Read,
                i * 4096,
                4096,
                Some(1_000_000),
            ));
        }
        let mut b = StatsBuilder::new();
        recs.iter().for_each(|r| b.add(r));
        let s = b.finish(recs.len() as u64);
        // Depth 1 eleven times, then 2..=10 once each.
        assert_eq!(s.qd1_share(), Some(11.0 / 20.0));
        assert_eq!(s.queue_depth_percentile(0.5), Some(1));
        assert_eq!(s.queue_depth_percentile(0.9), Some(8));
        assert_eq!(s.queue_depth_percentile(1.0), Some(10));
        let c = s.queue_depth_counts.as_ref().unwrap();
        assert_eq!(c.iter().sum::<u64>(), 20);
        assert_eq!(c[1], 11);
    }

    #[test]
    fn idle_periods_are_bucketed_and_capped() {
        // Busy [0, 1 ms); idle 4 ms; busy [5, 6 ms); idle 2 s; busy 1 ms.
        let recs = [
            rec(0, Op::Read, 0, 4096, Some(1_000_000)),
            rec(5_000_000, Op::Read, 0, 4096, Some(1_000_000)),
            rec(2_006_000_000, Op::Read, 0, 4096, Some(1_000_000)),
        ];
        let mut b = StatsBuilder::new();
        recs.iter().for_each(|r| b.add(r));
        let s = b.finish(3);
        let p = &s.idle_periods;
        assert_eq!(p.total(), 2);
        assert_eq!(p.counts[1], 1); // 4 ms: in (1 ms, 10 ms]
        assert_eq!(p.ns[1], 4_000_000);
        assert_eq!(p.counts[4], 1); // 2 s: in (1 s, 10 s]
        assert_eq!(p.ns[4], 2_000_000_000);
        assert_eq!(p.ns.iter().sum::<u64>(), s.idle.0);
        // Caps 10 ms, 100 ms, 1 s: the 4 ms period stays whole.
        assert_eq!(
            p.kept_ns_at_cap,
            vec![14_000_000, 104_000_000, 1_004_000_000]
        );
        // Without latencies: the inter-issue gaps above 1 ms.
        let mut b = StatsBuilder::new();
        recs.iter()
            .map(|r| IoRecord {
                latency: None,
                ..*r
            })
            .for_each(|r| b.add(&r));
        let s = b.finish(3);
        assert_eq!(s.idle_periods.total(), 2);
        assert_eq!(s.idle_periods.ns[1], 5_000_000);
        assert_eq!(s.qd1_share(), None);
    }
}
