//! The ranks' passes added up: sums per operation and latency histograms
//! merged exactly.

use super::error::MergeError;
use super::input::Rank;
use super::result::FleetOp;
use crate::fleet::VolumeMetrics;
use crate::schema::Percentiles;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// What the ranks' passes add up to, as they are read.
pub(super) struct Totals {
    /// Per operation: the sums, the merged histogram, and the sum of the
    /// latencies (µs) for the mean.
    ops: BTreeMap<String, (FleetOp, Option<Histogram<u64>>, f64)>,
    /// Reads and writes together.
    pub(super) access: Option<Histogram<u64>>,
    pub(super) access_sum_us: f64,
    /// The first issue and the last completion, ns since the Unix epoch.
    pub(super) start: u64,
    pub(super) end: u64,
}

impl Totals {
    pub(super) fn new() -> Totals {
        Totals {
            ops: BTreeMap::new(),
            access: None,
            access_sum_us: 0.0,
            start: u64::MAX,
            end: 0,
        }
    }

    /// Adds one pass of rank `r`: its clock, its operations; its volumes
    /// into `volumes`.
    pub(super) fn add_pass(
        &mut self,
        r: &Rank,
        p: &crate::schema::PassMetrics,
        volumes: &mut BTreeMap<String, VolumeMetrics>,
    ) -> Result<(), MergeError> {
        if let Some(c) = p.clock {
            if let Some(t) = c.first_issue_unix_ns {
                self.start = self.start.min(t);
            }
            if let Some(t) = c.last_complete_unix_ns {
                self.end = self.end.max(t);
            }
        }
        for v in &p.volumes {
            volumes
                .entry(v.volume.clone())
                .or_insert_with(|| VolumeMetrics {
                    volume: v.volume.clone(),
                    ..VolumeMetrics::default()
                })
                .add(v);
        }
        for (name, m) in &p.ops {
            self.add_op(r.file, name, m)?;
        }
        Ok(())
    }

    /// Adds one operation's figures of a pass read from `file`.
    fn add_op(
        &mut self,
        file: &str,
        name: &str,
        m: &crate::schema::OpMetrics,
    ) -> Result<(), MergeError> {
        let entry = self.ops.entry(name.to_string()).or_insert_with(|| {
            (
                FleetOp {
                    count: 0,
                    bytes: 0,
                    errors: 0,
                    latency_us: None,
                    latency_hdr: None,
                },
                None,
                0.0,
            )
        });
        entry.0.count += m.count;
        entry.0.bytes += m.bytes;
        entry.0.errors += m.errors;
        let Some(text) = &m.latency_hdr else {
            if m.count > m.errors {
                return Err(MergeError::NoHistogram {
                    file: file.to_string(),
                    op: name.to_string(),
                    count: m.count,
                });
            }
            return Ok(());
        };
        let h = crate::hdr::decode(text).map_err(|source| MergeError::Histogram {
            file: file.to_string(),
            op: name.to_string(),
            source,
        })?;
        let weight = m.latency_us.map_or(0.0, |l| l.mean * h.len() as f64);
        entry.2 += weight;
        add_histogram(&mut entry.1, &h, file, name)?;
        if name == "read" || name == "write" {
            self.access_sum_us += weight;
            add_histogram(&mut self.access, &h, file, name)?;
        }
        Ok(())
    }

    /// Each operation's sums with its latency summary and histogram.
    pub(super) fn op_results(&mut self) -> BTreeMap<String, FleetOp> {
        std::mem::take(&mut self.ops)
            .into_iter()
            .map(|(name, (mut op, h, sum_us))| {
                if let Some(h) = h {
                    op.latency_us = summary(&h, sum_us);
                    op.latency_hdr = crate::hdr::encode(&h);
                }
                (name, op)
            })
            .collect()
    }
}

/// Adds `h` into `into` (a copy of `h` when empty).
fn add_histogram(
    into: &mut Option<Histogram<u64>>,
    h: &Histogram<u64>,
    file: &str,
    op: &str,
) -> Result<(), MergeError> {
    match into {
        Some(total) => total.add(h).map_err(|e| MergeError::HistogramAdd {
            file: file.to_string(),
            op: op.to_string(),
            reason: format!("{e:?}"),
        }),
        None => {
            *into = Some(h.clone());
            Ok(())
        }
    }
}

/// Percentiles of a merged histogram of ns; the mean from the ranks' exact
/// sums (`sum_us`), not from the histogram's buckets.
pub(super) fn summary(h: &Histogram<u64>, sum_us: f64) -> Option<Percentiles> {
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1e3;
    Some(Percentiles {
        mean: sum_us / h.len() as f64,
        p50: us(h.value_at_quantile(0.50)),
        p90: us(h.value_at_quantile(0.90)),
        p99: us(h.value_at_quantile(0.99)),
        p99_9: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    })
}
