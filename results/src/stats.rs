//! The arithmetic of scores: the trace score, means and spreads.

use crate::schema::{Spread, SuiteSummary, TraceResult};

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

impl SuiteSummary {
    pub fn of(traces: &[TraceResult]) -> Option<SuiteSummary> {
        let get = |f: &dyn Fn(&TraceResult) -> f64| -> Vec<f64> { traces.iter().map(f).collect() };
        Some(SuiteSummary {
            score: geometric_mean(&get(&|t| t.score))?,
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
}
