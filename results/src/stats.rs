//! The arithmetic of scores: the trace score, means and spreads.

use crate::schema::{Interval, Spread, SuiteSummary, TraceResult};

/// PCMark's trace score: the geometric mean of bandwidth (MB/s) and the
/// inverse of access time (s); 0 when the trace moved no data.
pub fn score(bandwidth_mb_s: f64, access_time_us: f64) -> f64 {
    if bandwidth_mb_s <= 0.0 || access_time_us <= 0.0 {
        return 0.0;
    }
    (bandwidth_mb_s / (access_time_us / 1e6)).sqrt()
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mean = mean(values);
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
        Spread {
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev: var.sqrt(),
        }
    }
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// Geometric mean of the positive values (None when there are none).
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    let pos: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
    if pos.is_empty() {
        return None;
    }
    Some((pos.iter().map(|v| v.ln()).sum::<f64>() / pos.len() as f64).exp())
}

/// Student's t, two-sided 95 %, for `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        _ => 1.96 + 2.4 / df as f64,
    }
}

/// 95 % confidence interval of the mean of `values` (Student's t, sample
/// standard deviation); None with fewer than two finite values.
pub fn mean_ci95(values: &[f64]) -> Option<Interval> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 2 {
        return None;
    }
    let m = mean(&v);
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    let half = t95(v.len() - 1) * (var / v.len() as f64).sqrt();
    Some(Interval {
        low: m - half,
        high: m + half,
    })
}

/// A trace's score interval: the recorded one, else from its passes.
pub fn trace_score_ci(t: &TraceResult) -> Option<Interval> {
    t.score_ci.or_else(|| {
        let scores: Vec<f64> = t.passes.iter().map(|p| p.score).collect();
        mean_ci95(&scores)
    })
}

/// The suite score's interval from the traces' (the suite score is a
/// geometric mean, so relative half-widths add in quadrature, divided by
/// the trace count); None when a scored trace has none.
pub fn suite_score_ci(traces: &[TraceResult], suite_score: f64) -> Option<Interval> {
    let scored: Vec<&TraceResult> = traces.iter().filter(|t| t.score > 0.0).collect();
    if scored.is_empty() || suite_score.is_nan() || suite_score <= 0.0 {
        return None;
    }
    let mut sum = 0.0;
    for t in &scored {
        let rel = trace_score_ci(t)?.half_width() / t.score;
        sum += rel * rel;
    }
    let rel = sum.sqrt() / scored.len() as f64;
    Some(Interval {
        low: suite_score * (1.0 - rel),
        high: suite_score * (1.0 + rel),
    })
}

impl SuiteSummary {
    pub fn of(traces: &[TraceResult]) -> Option<SuiteSummary> {
        let get = |f: &dyn Fn(&TraceResult) -> f64| -> Vec<f64> { traces.iter().map(f).collect() };
        let score = geometric_mean(&get(&|t| t.score))?;
        Some(SuiteSummary {
            score_ci: suite_score_ci(traces, score),
            score,
            bandwidth_mb_s: geometric_mean(&get(&|t| t.bandwidth_mb_s))?,
            access_time_us: geometric_mean(&get(&|t| t.access_time_us))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_is_sqrt_of_bandwidth_over_access_seconds() {
        // 400 MB/s at 100 µs: sqrt(400 / 1e-4) = 2000
        assert!((score(400.0, 100.0) - 2000.0).abs() < 1e-9);
        assert_eq!(score(0.0, 100.0), 0.0);
    }

    #[test]
    fn geometric_mean_and_spread() {
        assert!((geometric_mean(&[1.0, 100.0]).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(geometric_mean(&[0.0]), None);
        let s = Spread::of(&[1.0, 3.0]);
        assert_eq!((s.min, s.max, s.stddev), (1.0, 3.0, 1.0));
    }

    #[test]
    fn confidence_interval_of_a_mean() {
        // mean 10, sample sd 1, n 4: 10 ± 3.182 * 0.5
        let ci = mean_ci95(&[9.0, 11.0, 9.0, 11.0]).unwrap();
        let sd = (4.0f64 / 3.0).sqrt();
        assert!((ci.half_width() - 3.182 * sd / 2.0).abs() < 1e-9, "{ci:?}");
        assert!((ci.low + ci.high - 20.0).abs() < 1e-9);
        assert_eq!(mean_ci95(&[5.0]), None);
        let ci = mean_ci95(&[7.0, 7.0, 7.0]).unwrap();
        assert_eq!(ci.half_width(), 0.0);
        assert!(t95(1000) > 1.96 && t95(1000) < 1.97);
    }
}
