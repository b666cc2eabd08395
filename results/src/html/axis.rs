//! The one axis every chart uses: a range fitted to the values with round
//! ticks (1, 2 or 5 times a power of ten), linear from zero or in decades.

/// Most ticks an axis draws, whatever the numbers.
const MAX_TICKS: usize = 50;

/// A fitted axis: positions of values along it and its ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    /// Range in axis units (log10 of the value on a log axis).
    lo: f64,
    hi: f64,
    /// Tick spacing in axis units (one decade on a log axis).
    step: f64,
    log: bool,
}

impl Axis {
    /// Fits the finite values (positive ones on a log axis): a linear axis
    /// starts at zero or below and ends at the first round tick at or above
    /// the largest value; a log axis spans whole decades. With no value, 0 to 1.
    pub fn fit(values: impl IntoIterator<Item = f64>, log: bool) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            let v = if log {
                if v > 0.0 {
                    v.log10()
                } else {
                    continue;
                }
            } else {
                v
            };
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if !lo.is_finite() {
            return Axis {
                lo: 0.0,
                hi: 1.0,
                step: 1.0,
                log,
            };
        }
        if log {
            let lo = lo.floor();
            return Axis {
                lo,
                hi: hi.ceil().max(lo + 1.0),
                step: 1.0,
                log,
            };
        }
        let lo = lo.min(0.0);
        let step = tick_step(hi - lo);
        let end = ((hi / step).ceil() * step).max(lo + step);
        if end.is_finite() {
            return Axis {
                lo,
                hi: end,
                step,
                log,
            };
        }
        // Values near the largest float: no round end above them.
        let span = (hi - lo).min(f64::MAX);
        Axis {
            lo,
            hi: lo + span,
            step: span / 5.0,
            log,
        }
    }

    /// Where `v` lies along the axis, 0 at its start and 1 at its end
    /// (clamped; a log axis puts values at or below zero at its start).
    pub fn fraction(&self, v: f64) -> f64 {
        let u = if self.log {
            if v > 0.0 {
                v.log10()
            } else {
                self.lo
            }
        } else {
            v
        };
        let f = (u - self.lo) / (self.hi - self.lo);
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The ticks as (fraction along the axis, label); at most [`MAX_TICKS`].
    pub fn ticks(&self) -> Vec<(f64, String)> {
        let mut out = Vec::new();
        let first = (self.lo / self.step).ceil();
        for k in 0..MAX_TICKS {
            let u = (first + k as f64) * self.step;
            if u.is_nan() || u > self.hi + self.step * 1e-6 {
                break;
            }
            let value = if self.log { 10f64.powf(u) } else { u };
            out.push((
                ((u - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0),
                short(value),
            ));
        }
        out
    }
}

/// Round tick step for a span (1, 2 or 5 times a power of ten, about five
/// ticks).
fn tick_step(span: f64) -> f64 {
    if !(span.is_finite() && span > 0.0) {
        return 1.0;
    }
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// A number for an axis label, short.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(1000.0), 200.0);
        assert_eq!(tick_step(7.0), 2.0);
        assert_eq!(tick_step(0.0), 1.0);
    }

    #[test]
    fn linear_axis_starts_at_zero_and_ends_on_a_tick() {
        let a = Axis::fit([120.0, 930.0], false);
        let labels: Vec<String> = a.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0", "200", "400", "600", "800", "1000"]);
        assert_eq!(a.fraction(500.0), 0.5);
        assert_eq!(a.fraction(-5.0), 0.0);
        assert_eq!(a.fraction(5000.0), 1.0);
    }

    #[test]
    fn log_axis_spans_decades() {
        let a = Axis::fit([35.0, 0.0, 4100.0], true);
        let labels: Vec<String> = a.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["10", "100", "1000", "10k"]);
        assert!((a.fraction(100.0) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(a.fraction(0.0), 0.0);
    }

    #[test]
    fn no_values_and_extreme_values_give_a_bounded_axis() {
        assert_eq!(Axis::fit([], false).ticks().len(), 2);
        assert_eq!(Axis::fit([f64::NAN], true).ticks().len(), 2);
        for vs in [
            [0.0, f64::MAX],
            [-f64::MAX, f64::MAX],
            [1.0, 1e300],
            [1e-300, 2e-300],
            [f64::MIN_POSITIVE, 1.0],
        ] {
            for log in [false, true] {
                let a = Axis::fit(vs, log);
                let ticks = a.ticks();
                assert!(
                    (1..=MAX_TICKS).contains(&ticks.len()),
                    "{vs:?} {log}: {a:?}"
                );
                assert!(ticks.iter().all(|t| t.0.is_finite()), "{vs:?} {log}: {a:?}");
                assert!(vs.iter().all(|&v| a.fraction(v).is_finite()), "{vs:?}");
            }
        }
    }
}
