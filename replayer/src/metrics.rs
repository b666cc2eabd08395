//! Measuring a pass (counters, histograms, timelines) and summarising it
//! into the result schema of the `results` crate.

use crate::prediction::{DependencyModel, TaskTimePrediction};
use hdrhistogram::Histogram;
use results::schema::{
    Dependencies, Fidelity, Lateness, OpMetrics, PassMetrics, Percentiles, Skipped, Spread,
    TaskTime, Timeline, TraceResult,
};
use results::stats::{mean, mean_ci95, score};
use std::collections::BTreeMap;
use trace_format::{Nanos, Op};

/// Latencies are recorded in nanoseconds, up to an hour, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    // Bounds are constants that hdrhistogram accepts.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| unreachable_histogram()))
}

#[cold]
fn unreachable_histogram() -> Histogram<u64> {
    // hdrhistogram only refuses sigfig > 5 or bad bounds; ours are fixed.
    panic!("hdrhistogram refused constant bounds")
}

/// Raw counters of one operation in one pass.
#[derive(Debug, Clone)]
pub struct OpStats {
    pub count: u64,
    pub bytes: u64,
    pub errors: u64,
    pub latency_sum_ns: u128,
    /// Latency of successful I/Os, ns.
    pub latency: Histogram<u64>,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats {
            count: 0,
            bytes: 0,
            errors: 0,
            latency_sum_ns: 0,
            latency: new_histogram(),
        }
    }
}

/// Everything measured in one pass, before it is summarised.
#[derive(Debug, Clone)]
pub struct PassOutcome {
    pub warmup: bool,
    pub interrupted: bool,
    /// Indexed by `Op::code()`.
    pub ops: [OpStats; 5],
    /// Issue lateness against the schedule, ns.
    pub lateness: Histogram<u64>,
    pub busy_ns: u64,
    /// First submission to last completion.
    pub playback_ns: u64,
    pub original_duration_ns: u64,
    pub skipped: Skipped,
    /// Writes issued with their record's FUA or preflush.
    pub cache_flag_writes: u64,
    /// The task time the pass predicts (realtime, one ring, original
    /// completions known), or why it predicts none.
    pub task: Result<TaskTimePrediction, results::NoTaskTime>,
    /// The pass's instants on the wall clock.
    pub clock: results::fleet::PassClock,
    /// Per source volume (empty for a single-device trace).
    pub volumes: Vec<results::fleet::VolumeMetrics>,
    /// Time the replay's threads waited for a CPU (engine/cpu_wait.rs).
    pub cpu_wait_ns: Option<u64>,
}

/// A pass's prediction in the result schema.
pub fn task_time(p: &TaskTimePrediction) -> TaskTime {
    let secs = |ns: Nanos| ns.as_secs_f64();
    TaskTime {
        predicted_s: secs(p.predicted(DependencyModel::PRIMARY)),
        model: DependencyModel::PRIMARY.name().to_string(),
        models: DependencyModel::ALL
            .iter()
            .map(|m| (m.name().to_string(), secs(p.predicted(*m))))
            .collect(),
        captured_s: secs(p.captured),
        untraced_s: p.untraced.map(secs),
        span: if p.marked { "task marks" } else { "trace span" }.to_string(),
        uncalibrated: p.uncalibrated.is_some().then(|| {
            DependencyModel::ALL
                .iter()
                .map(|m| (m.name().to_string(), secs(p.uncalibrated(*m))))
                .collect()
        }),
        cpu_floor_s: p.cpu_floor.map(secs),
        unfloored: p.unfloored.map(|u| {
            u.iter()
                .map(|(m, ns)| (m.name().to_string(), secs(ns)))
                .collect()
        }),
        calibrated_at: None,
        predicted_spread: None,
        breakdown: Some(results::breakdown::Breakdown::new(
            DependencyModel::PRIMARY.name(),
            secs(p.predicted(DependencyModel::PRIMARY)),
            p.waits.clone(),
        )),
    }
}

/// The mean per model of `per_pass` (each pass's map), over the passes that
/// have the model.
fn mean_models(per_pass: &[&BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let Some(first) = per_pass.first() else {
        return BTreeMap::new();
    };
    first
        .keys()
        .map(|k| {
            let v: Vec<f64> = per_pass.iter().filter_map(|m| m.get(k).copied()).collect();
            (k.clone(), mean(&v))
        })
        .collect()
}

/// The mean of the passes' predictions, with the spread of the primary one.
fn mean_task_time(passes: &[TaskTime]) -> Option<TaskTime> {
    let first = passes.first()?;
    let predicted: Vec<f64> = passes.iter().map(|t| t.predicted_s).collect();
    let models = mean_models(&passes.iter().map(|t| &t.models).collect::<Vec<_>>());
    let uncalibrated: Option<Vec<&BTreeMap<String, f64>>> =
        passes.iter().map(|t| t.uncalibrated.as_ref()).collect();
    // Held up in some pass: the mean of each pass's figure before the floor.
    let unfloored = passes.iter().any(|t| t.unfloored.is_some()).then(|| {
        mean_models(
            &passes
                .iter()
                .map(|t| t.unfloored.as_ref().unwrap_or(&t.models))
                .collect::<Vec<_>>(),
        )
    });
    Some(TaskTime {
        predicted_s: mean(&predicted),
        models,
        uncalibrated: uncalibrated.map(|u| mean_models(&u)),
        unfloored,
        predicted_spread: Some(Spread::of(&predicted)),
        breakdown: passes
            .iter()
            .map(|t| t.breakdown.as_ref())
            .collect::<Option<Vec<_>>>()
            .and_then(|b| results::breakdown::Breakdown::mean(&b)),
        ..first.clone()
    })
}

impl PassOutcome {
    pub fn op(&self, op: Op) -> &OpStats {
        &self.ops[op.code() as usize % 5]
    }

    pub fn data_bytes(&self) -> u64 {
        self.op(Op::Read).bytes + self.op(Op::Write).bytes
    }

    /// Mean read/write latency, µs (0 with no reads or writes).
    pub fn access_time_us(&self) -> f64 {
        let (r, w) = (self.op(Op::Read), self.op(Op::Write));
        let n = r.latency.len() + w.latency.len();
        if n == 0 {
            return 0.0;
        }
        (r.latency_sum_ns + w.latency_sum_ns) as f64 / n as f64 / 1e3
    }

    pub fn bandwidth_mb_s(&self) -> f64 {
        if self.busy_ns == 0 {
            return 0.0;
        }
        self.data_bytes() as f64 / (self.busy_ns as f64 / 1e9) / 1e6
    }

    pub fn metrics(&self) -> PassMetrics {
        let bandwidth = self.bandwidth_mb_s();
        let access = self.access_time_us();
        let data_ios = self.op(Op::Read).count + self.op(Op::Write).count;
        let mut ops = BTreeMap::new();
        for op in Op::ALL {
            let s = self.op(op);
            if s.count == 0 && s.errors == 0 {
                continue;
            }
            ops.insert(
                op.name().to_string(),
                OpMetrics {
                    count: s.count,
                    bytes: s.bytes,
                    errors: s.errors,
                    latency_us: percentiles(&s.latency, s.latency_sum_ns),
                    latency_hdr: (!s.latency.is_empty())
                        .then(|| results::hdr::encode(&s.latency))
                        .flatten(),
                },
            );
        }
        PassMetrics {
            warmup: self.warmup,
            interrupted: self.interrupted,
            score: score(bandwidth, access),
            bandwidth_mb_s: bandwidth,
            access_time_us: access,
            playback_s: self.playback_ns as f64 / 1e9,
            busy_s: self.busy_ns as f64 / 1e9,
            iops: if self.busy_ns == 0 {
                0.0
            } else {
                data_ios as f64 / (self.busy_ns as f64 / 1e9)
            },
            ios: self.ops.iter().map(|s| s.count).sum(),
            read_bytes: self.op(Op::Read).bytes,
            write_bytes: self.op(Op::Write).bytes,
            errors: self.ops.iter().map(|s| s.errors).sum(),
            ops,
            skipped: self.skipped,
            fidelity: Fidelity {
                lateness_us: lateness(&self.lateness),
                original_s: self.original_duration_ns as f64 / 1e9,
                achieved_s: self.playback_ns as f64 / 1e9,
                cpu_wait_s: self.cpu_wait_ns.map(|ns| ns as f64 / 1e9),
            },
            task: self.task.as_ref().ok().map(task_time),
            no_task_time: self.task.as_ref().err().copied(),
            clock: Some(self.clock),
            volumes: self.volumes.clone(),
        }
    }
}

/// Latency summary of a histogram of nanoseconds (None when it is empty).
pub fn percentiles(h: &Histogram<u64>, sum_ns: u128) -> Option<Percentiles> {
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1e3;
    Some(Percentiles {
        mean: sum_ns as f64 / h.len() as f64 / 1e3,
        p50: us(h.value_at_quantile(0.50)),
        p90: us(h.value_at_quantile(0.90)),
        p99: us(h.value_at_quantile(0.99)),
        p99_9: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    })
}

/// Lateness summary of a histogram of nanoseconds.
pub fn lateness(h: &Histogram<u64>) -> Lateness {
    if h.is_empty() {
        return Lateness::default();
    }
    Lateness {
        p50: h.value_at_quantile(0.5) as f64 / 1e3,
        p99: h.value_at_quantile(0.99) as f64 / 1e3,
        max: h.max() as f64 / 1e3,
    }
}

/// The quantiles of the latency CDF in the result file: every 2% up to 90%,
/// then finer towards the tail.
pub const CDF_QUANTILES: [f64; 60] = {
    let mut q = [0.0; 60];
    let mut i = 0;
    while i <= 45 {
        q[i] = i as f64 * 0.02;
        i += 1;
    }
    let tail = [
        0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9999, 1.0,
    ];
    let mut j = 0;
    while j < tail.len() {
        q[46 + j] = tail[j];
        j += 1;
    }
    q
};

/// `[quantile, µs]` points of a histogram (empty when it is).
pub fn cdf_points(h: &Histogram<u64>) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    CDF_QUANTILES
        .iter()
        .map(|&q| {
            let ns = if q <= 0.0 {
                h.min()
            } else if q >= 1.0 {
                h.max()
            } else {
                h.value_at_quantile(q)
            };
            [q, ns as f64 / 1e3]
        })
        .collect()
}

/// Collects a [`Timeline`] from completions, in memory bounded by the
/// playback time (fine buckets are merged as the pass goes on).
#[derive(Debug, Clone)]
pub struct TimelineBuilder {
    /// Current bucket width, ns (a power of ten, 1 ms to 1 s).
    width_ns: u64,
    buckets: Vec<Bucket>,
    end_ns: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    read_bytes: u64,
    write_bytes: u64,
    ios: u64,
    latency_sum_ns: u128,
}

impl Bucket {
    fn merge(&mut self, o: &Bucket) {
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.ios += o.ios;
        self.latency_sum_ns += o.latency_sum_ns;
    }
}

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
/// Fine buckets kept before they are merged tenfold.
const MAX_FINE_BUCKETS: usize = 10_000;

impl Default for TimelineBuilder {
    fn default() -> Self {
        TimelineBuilder {
            width_ns: MS,
            buckets: Vec::new(),
            end_ns: 0,
        }
    }
}

impl TimelineBuilder {
    /// One successful read or write that completed `complete_ns` after the
    /// pass started.
    pub fn add(&mut self, op: Op, bytes: u64, latency_ns: u64, complete_ns: u64) {
        self.end_ns = self.end_ns.max(complete_ns);
        while self.width_ns < SEC && (complete_ns / self.width_ns) as usize >= MAX_FINE_BUCKETS {
            self.coarsen();
        }
        let i = (complete_ns / self.width_ns) as usize;
        if self.buckets.len() <= i {
            self.buckets.resize(i + 1, Bucket::default());
        }
        if let Some(b) = self.buckets.get_mut(i) {
            match op {
                Op::Read => b.read_bytes += bytes,
                _ => b.write_bytes += bytes,
            }
            b.ios += 1;
            b.latency_sum_ns += latency_ns as u128;
        }
    }

    fn coarsen(&mut self) {
        let merged = self
            .buckets
            .chunks(10)
            .map(|c| {
                let mut m = Bucket::default();
                c.iter().for_each(|b| m.merge(b));
                m
            })
            .collect();
        self.buckets = merged;
        self.width_ns *= 10;
    }

    /// The timeline at the interval the pass's length calls for.
    pub fn finish(mut self, pass: u32, playback_ns: u64) -> Timeline {
        let end = self.end_ns.max(playback_ns).max(1);
        let mut want = SEC;
        while want > MS && end / want < 10 {
            want /= 10;
        }
        while self.width_ns < want {
            self.coarsen();
        }
        let width_s = self.width_ns as f64 / 1e9;
        let n = (end.div_ceil(self.width_ns) as usize).max(self.buckets.len());
        let mut t = Timeline {
            interval_s: width_s,
            pass,
            t_s: Vec::with_capacity(n),
            read_mb_s: Vec::with_capacity(n),
            write_mb_s: Vec::with_capacity(n),
            bandwidth_mb_s: Vec::with_capacity(n),
            ios: Vec::with_capacity(n),
            mean_latency_us: Vec::with_capacity(n),
        };
        for i in 0..n {
            let b = self.buckets.get(i).copied().unwrap_or_default();
            let start = i as u64 * self.width_ns;
            let span = (end.saturating_sub(start)).min(self.width_ns).max(1);
            let secs = span as f64 / 1e9;
            t.t_s.push(start as f64 / 1e9);
            let (r, w) = (
                b.read_bytes as f64 / secs / 1e6,
                b.write_bytes as f64 / secs / 1e6,
            );
            t.read_mb_s.push(r);
            t.write_mb_s.push(w);
            t.bandwidth_mb_s.push(r + w);
            t.ios.push(b.ios);
            t.mean_latency_us.push(if b.ios == 0 {
                0.0
            } else {
                b.latency_sum_ns as f64 / b.ios as f64 / 1e3
            });
        }
        t
    }
}

/// Summarises the passes; `scored` may be empty after an early Ctrl-C,
/// in which case the warm-up's figures stand in.
pub fn trace_result(
    name: &str,
    path: Option<String>,
    dependencies: Dependencies,
    warmup: Option<&PassOutcome>,
    scored: &[PassOutcome],
) -> TraceResult {
    let basis: Vec<&PassOutcome> = if scored.is_empty() {
        warmup.into_iter().collect()
    } else {
        scored.iter().collect()
    };
    let metrics: Vec<PassMetrics> = basis.iter().map(|p| p.metrics()).collect();
    let pick = |f: &dyn Fn(&PassMetrics) -> f64| -> Vec<f64> { metrics.iter().map(f).collect() };
    let scores = pick(&|m| m.score);
    let bws = pick(&|m| m.bandwidth_mb_s);
    let ats = pick(&|m| m.access_time_us);
    let pbs = pick(&|m| m.playback_s);
    let mut latency_us = BTreeMap::new();
    let mut latency_cdf_us = BTreeMap::new();
    let mut errors = BTreeMap::new();
    for op in Op::ALL {
        let mut h = new_histogram();
        let mut sum = 0u128;
        let mut errs = 0u64;
        for p in &basis {
            let _ = h.add(&p.op(op).latency);
            sum += p.op(op).latency_sum_ns;
            errs += p.op(op).errors;
        }
        if let Some(pc) = percentiles(&h, sum) {
            latency_us.insert(op.name().to_string(), pc);
            latency_cdf_us.insert(op.name().to_string(), cdf_points(&h));
        }
        if errs > 0 || op.carries_data() {
            errors.insert(op.name().to_string(), errs);
        }
    }
    let mut late = new_histogram();
    for p in &basis {
        let _ = late.add(&p.lateness);
    }
    let n = basis.len().max(1) as u64;
    let avg_u64 = |f: &dyn Fn(&PassMetrics) -> u64| metrics.iter().map(f).sum::<u64>() / n;
    let skipped = basis.first().map(|p| p.skipped).unwrap_or_default();
    TraceResult {
        name: name.to_string(),
        path,
        dependencies,
        warmup: warmup.map(|w| w.metrics()),
        passes: scored.iter().map(|p| p.metrics()).collect(),
        score: mean(&scores),
        score_spread: Spread::of(&scores),
        // Only scored passes say how repeatable the score is.
        score_ci: if scored.is_empty() {
            None
        } else {
            mean_ci95(&scores)
        },
        bandwidth_mb_s: mean(&bws),
        bandwidth_spread: Spread::of(&bws),
        access_time_us: mean(&ats),
        access_time_spread: Spread::of(&ats),
        playback_s: mean(&pbs),
        playback_spread: Spread::of(&pbs),
        busy_s: mean(&pick(&|m| m.busy_s)),
        iops: mean(&pick(&|m| m.iops)),
        read_bytes: avg_u64(&|m| m.read_bytes),
        write_bytes: avg_u64(&|m| m.write_bytes),
        ios: avg_u64(&|m| m.ios),
        errors,
        skipped,
        latency_us,
        fidelity: Fidelity {
            lateness_us: lateness(&late),
            original_s: metrics.first().map_or(0.0, |m| m.fidelity.original_s),
            achieved_s: mean(&pick(&|m| m.fidelity.achieved_s)),
            // The worst pass: one pass that waited moves the mean score.
            cpu_wait_s: metrics
                .iter()
                .filter_map(|m| m.fidelity.cpu_wait_s)
                .reduce(f64::max),
        },
        interrupted: basis.iter().any(|p| p.interrupted) || scored.is_empty(),
        trace_id: None,
        reads_found: None,
        cache_flag_writes: basis.first().map(|p| p.cache_flag_writes),
        latency_cdf_us,
        timeline: None,
        valid: true,
        invalid_reason: None,
        task: if metrics.iter().all(|m| m.task.is_some()) {
            let tasks: Vec<TaskTime> = metrics.iter().filter_map(|m| m.task.clone()).collect();
            mean_task_time(&tasks)
        } else {
            None
        },
        no_task_time: metrics.iter().find_map(|m| m.no_task_time),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_buckets_by_second_and_by_fraction_for_short_passes() {
        let mut b = TimelineBuilder::default();
        // 25 s: 1 MB read completing in each second, 100 µs each.
        for s in 0..25u64 {
            b.add(Op::Read, 1_000_000, 100_000, s * SEC + SEC / 2);
        }
        b.add(Op::Write, 2_000_000, 300_000, 3 * SEC + 1);
        let t = b.finish(3, 25 * SEC);
        assert_eq!(t.interval_s, 1.0);
        assert_eq!(t.t_s.len(), 25);
        assert!((t.bandwidth_mb_s[0] - 1.0).abs() < 1e-9);
        assert!((t.bandwidth_mb_s[3] - 3.0).abs() < 1e-9);
        assert!((t.write_mb_s[3] - 2.0).abs() < 1e-9);
        assert!((t.mean_latency_us[3] - 200.0).abs() < 1e-9);
        assert_eq!(t.ios.iter().sum::<u64>(), 26);

        let mut b = TimelineBuilder::default();
        for ms in 0..250u64 {
            b.add(Op::Write, 4096, 50_000, ms * MS);
        }
        let t = b.finish(1, 250 * MS);
        assert!((t.interval_s - 0.01).abs() < 1e-12, "{}", t.interval_s);
        assert_eq!(t.t_s.len(), 25);
        assert_eq!(t.ios.iter().sum::<u64>(), 250);
    }

    #[test]
    fn cdf_points_are_monotonic_and_end_at_the_max() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let c = cdf_points(&h);
        assert_eq!(c.len(), CDF_QUANTILES.len());
        assert!(c
            .windows(2)
            .all(|w| w[0][0] < w[1][0] && w[0][1] <= w[1][1]));
        assert!((c[c.len() - 1][1] - 1000.0).abs() < 1.0);
        assert!((c[25][1] - 500.0).abs() < 2.0, "{:?}", c[25]);
    }
}
