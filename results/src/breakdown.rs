//! Where a predicted task time goes: think time, and the waits on each class
//! of I/O along the path of waits that set the prediction (the I/Os whose
//! completions moved the task's end, each after the one before it). Against
//! a second result of the same trace, which classes account for the
//! difference.
//!
//! The waits are the target's latencies of the I/Os on that path; think time
//! is the rest of the predicted time (the task's own work between them, and
//! what calibration and overlapping writeback add or take away), so the
//! parts sum to the prediction.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of [`Breakdown`]'s layout in a result file; readers skip a
/// breakdown of a version they do not know.
pub const BREAKDOWN_VERSION: u32 = 1;

/// The operation of a class of waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitOp {
    Read,
    /// A plain write: writeback, waited for through a flush.
    Write,
    /// A write with the sync or FUA flag (fsync's writeback, O_SYNC, O_DIRECT).
    SyncWrite,
    /// A cache flush, or a write with the preflush flag (a journal commit).
    Flush,
    Discard,
    WriteZeroes,
}

impl WaitOp {
    pub fn name(self) -> &'static str {
        match self {
            WaitOp::Read => "reads",
            WaitOp::Write => "writes",
            WaitOp::SyncWrite => "sync writes",
            WaitOp::Flush => "flushes",
            WaitOp::Discard => "discards",
            WaitOp::WriteZeroes => "write-zeroes",
        }
    }
}

/// Request size buckets: the largest size of each, bytes.
pub const SIZE_BUCKETS: [u64; 5] = [4096, 16384, 65536, 262_144, 1 << 20];
/// Queue depth at issue buckets: the largest depth of each.
pub const QD_BUCKETS: [u32; 4] = [1, 4, 16, 64];

/// Whether a request continued the previous one on its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    Sequential,
    Random,
    /// Flushes: no offset.
    None,
}

/// A class of waits: operation, size bucket, queue depth at issue (in the
/// original), sequential or random.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WaitClass {
    pub op: WaitOp,
    /// Index into [`SIZE_BUCKETS`]; `SIZE_BUCKETS.len()` for larger ones.
    pub size_bucket: u8,
    /// Index into [`QD_BUCKETS`]; `QD_BUCKETS.len()` for deeper ones.
    pub qd_bucket: u8,
    pub pattern: Pattern,
}

fn kib(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b >> 10)
    }
}

impl WaitClass {
    pub fn of(op: WaitOp, len: u64, queue_depth: u32, sequential: bool) -> WaitClass {
        let size_bucket = SIZE_BUCKETS
            .iter()
            .position(|&m| len <= m)
            .unwrap_or(SIZE_BUCKETS.len()) as u8;
        let qd_bucket = QD_BUCKETS
            .iter()
            .position(|&m| queue_depth <= m)
            .unwrap_or(QD_BUCKETS.len()) as u8;
        let pattern = match (op, sequential) {
            (WaitOp::Flush, _) if len == 0 => Pattern::None,
            (_, true) => Pattern::Sequential,
            (_, false) => Pattern::Random,
        };
        WaitClass {
            op,
            size_bucket,
            qd_bucket,
            pattern,
        }
    }

    /// The size bucket in words: `4 KiB`, `16 KiB`, `> 1 MiB` (each up to
    /// its size, above the previous one).
    pub fn size(&self) -> String {
        match SIZE_BUCKETS.get(self.size_bucket as usize) {
            Some(&m) => kib(m),
            None => format!("> {}", kib(SIZE_BUCKETS[SIZE_BUCKETS.len() - 1])),
        }
    }

    /// The queue depth bucket in words: `QD1`, `QD2-4`, `QD>64`.
    pub fn queue_depth(&self) -> String {
        let i = self.qd_bucket as usize;
        match (i.checked_sub(1).map(|p| QD_BUCKETS[p]), QD_BUCKETS.get(i)) {
            (None, Some(m)) => format!("QD{m}"),
            (Some(lo), Some(m)) => format!("QD{}-{m}", lo + 1),
            (Some(lo), None) => format!("QD>{lo}"),
            (None, None) => "QD?".to_string(),
        }
    }

    /// `4 KiB random reads at QD1`; a flush: `flushes at QD1`.
    pub fn label(&self) -> String {
        match self.pattern {
            Pattern::None => format!("{} at {}", self.op.name(), self.queue_depth()),
            p => format!(
                "{} {} {} at {}",
                self.size(),
                if p == Pattern::Sequential {
                    "sequential"
                } else {
                    "random"
                },
                self.op.name(),
                self.queue_depth()
            ),
        }
    }
}

/// The waits on one class along the path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassWaits {
    #[serde(flatten)]
    pub class: WaitClass,
    /// I/Os of the class on the path (a mean over passes).
    pub ios: f64,
    /// Their latencies on the target, s.
    pub wait_s: f64,
}

/// A predicted task time, broken down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// [`BREAKDOWN_VERSION`] when written.
    pub version: u32,
    /// The dependency model of the path (the prediction's primary one).
    pub model: String,
    /// The predicted time less the waits, s.
    pub think_s: f64,
    /// Per class, largest wait first.
    pub waits: Vec<ClassWaits>,
}

impl Breakdown {
    /// Builds one from the path's waits and the prediction they are part of.
    pub fn new(model: &str, predicted_s: f64, waits: Vec<ClassWaits>) -> Breakdown {
        let total: f64 = waits.iter().map(|w| w.wait_s).sum();
        let mut b = Breakdown {
            version: BREAKDOWN_VERSION,
            model: model.to_string(),
            think_s: predicted_s - total,
            waits,
        };
        b.sort();
        b
    }

    fn sort(&mut self) {
        self.waits.sort_by(|a, b| {
            b.wait_s
                .total_cmp(&a.wait_s)
                .then_with(|| a.class.cmp(&b.class))
        });
    }

    /// Total time waited on I/O, s.
    pub fn wait_s(&self) -> f64 {
        self.waits.iter().map(|w| w.wait_s).sum()
    }

    /// The mean of several passes' breakdowns (a class a pass lacks counts
    /// as 0 there); `None` without any, or when they follow other models.
    pub fn mean(passes: &[&Breakdown]) -> Option<Breakdown> {
        let first = passes.first()?;
        if passes.iter().any(|b| b.model != first.model) {
            return None;
        }
        let n = passes.len() as f64;
        let mut classes: BTreeMap<WaitClass, (f64, f64)> = BTreeMap::new();
        for b in passes {
            for w in &b.waits {
                let e = classes.entry(w.class).or_default();
                e.0 += w.ios / n;
                e.1 += w.wait_s / n;
            }
        }
        let mut b = Breakdown {
            version: BREAKDOWN_VERSION,
            model: first.model.clone(),
            think_s: passes.iter().map(|b| b.think_s).sum::<f64>() / n,
            waits: classes
                .into_iter()
                .map(|(class, (ios, wait_s))| ClassWaits { class, ios, wait_s })
                .collect(),
        };
        b.sort();
        Some(b)
    }
}

/// Reads a result's breakdown when its version is this reader's, and none
/// otherwise (a later layout must not make the whole result unreadable).
pub fn known_version<'de, D>(d: D) -> Result<Option<Breakdown>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(v.filter(|v| v["version"] == BREAKDOWN_VERSION)
        .and_then(|v| serde_json::from_value(v).ok()))
}

/// One part of the difference between two breakdowns.
#[derive(Debug, Clone, PartialEq)]
pub struct DifferencePart {
    /// `None`: think time.
    pub class: Option<WaitClass>,
    /// B's time less A's, s.
    pub delta_s: f64,
}

impl DifferencePart {
    pub fn label(&self) -> String {
        self.class
            .map_or_else(|| "think time".to_string(), |c| c.label())
    }
}

/// B's predicted time less A's, and the parts (think time and each class),
/// largest in size first.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub delta_s: f64,
    pub parts: Vec<DifferencePart>,
}

impl Difference {
    pub fn between(a: &Breakdown, b: &Breakdown) -> Difference {
        let mut per: BTreeMap<WaitClass, f64> = BTreeMap::new();
        for w in &a.waits {
            *per.entry(w.class).or_default() -= w.wait_s;
        }
        for w in &b.waits {
            *per.entry(w.class).or_default() += w.wait_s;
        }
        let mut parts: Vec<DifferencePart> = per
            .into_iter()
            .map(|(c, d)| DifferencePart {
                class: Some(c),
                delta_s: d,
            })
            .collect();
        parts.push(DifferencePart {
            class: None,
            delta_s: b.think_s - a.think_s,
        });
        parts.sort_by(|x, y| y.delta_s.abs().total_cmp(&x.delta_s.abs()));
        let delta_s = (b.think_s + b.wait_s()) - (a.think_s + a.wait_s());
        Difference { delta_s, parts }
    }

    /// `+0.31 s on B; 0.26 s of it in 4 KiB random reads at QD1` (the part
    /// that moved the same way most; a second one when the first covers
    /// less than two thirds).
    pub fn sentence(&self, b_name: &str) -> String {
        let mut s = format!("{:+.2} s on {b_name}", self.delta_s);
        if self.delta_s.abs() < 0.0005 {
            return s;
        }
        let same_way: Vec<&DifferencePart> = self
            .parts
            .iter()
            .filter(|p| p.delta_s * self.delta_s > 0.0)
            .collect();
        let mut covered = 0.0;
        for (i, p) in same_way.iter().take(2).enumerate() {
            if i == 1 && covered >= self.delta_s.abs() * 2.0 / 3.0 {
                break;
            }
            s.push_str(if i == 0 { "; " } else { ", " });
            s.push_str(&format!(
                "{:.2} s {}in {}",
                p.delta_s.abs(),
                if i == 0 { "of it " } else { "" },
                p.label()
            ));
            covered += p.delta_s.abs();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(op: WaitOp, len: u64, qd: u32, seq: bool, ios: f64, wait_s: f64) -> ClassWaits {
        ClassWaits {
            class: WaitClass::of(op, len, qd, seq),
            ios,
            wait_s,
        }
    }

    #[test]
    fn classes_are_named_by_bucket() {
        assert_eq!(
            WaitClass::of(WaitOp::Read, 4096, 1, false).label(),
            "4 KiB random reads at QD1"
        );
        assert_eq!(
            WaitClass::of(WaitOp::Write, 300_000, 20, true).label(),
            "1 MiB sequential writes at QD17-64"
        );
        assert_eq!(
            WaitClass::of(WaitOp::SyncWrite, 4 << 20, 200, true).label(),
            "> 1 MiB sequential sync writes at QD>64"
        );
        assert_eq!(
            WaitClass::of(WaitOp::Flush, 0, 3, false).label(),
            "flushes at QD2-4"
        );
    }

    #[test]
    fn the_parts_sum_to_the_prediction_and_the_difference_names_its_cause() {
        let a = Breakdown::new(
            "blocking",
            1.0,
            vec![
                w(WaitOp::Read, 4096, 1, false, 100.0, 0.10),
                w(WaitOp::Read, 131072, 8, true, 10.0, 0.05),
            ],
        );
        assert!((a.think_s - 0.85).abs() < 1e-9);
        assert_eq!(a.waits[0].class.op, WaitOp::Read);
        let b = Breakdown::new(
            "blocking",
            1.31,
            vec![
                w(WaitOp::Read, 4096, 1, false, 100.0, 0.36),
                w(WaitOp::Read, 131072, 8, true, 10.0, 0.10),
            ],
        );
        let d = Difference::between(&a, &b);
        assert!((d.delta_s - 0.31).abs() < 1e-9);
        assert_eq!(
            d.sentence("B"),
            "+0.31 s on B; 0.26 s of it in 4 KiB random reads at QD1"
        );
        // Think time differs when the paths differ.
        let c = Breakdown::new(
            "blocking",
            0.9,
            vec![w(WaitOp::Flush, 0, 1, false, 1.0, 0.05)],
        );
        let d = Difference::between(&a, &c);
        assert_eq!(
            d.sentence("C"),
            "-0.10 s on C; 0.10 s of it in 4 KiB random reads at QD1"
        );
    }

    #[test]
    fn passes_average_per_class() {
        let p1 = Breakdown::new(
            "blocking",
            1.0,
            vec![w(WaitOp::Read, 4096, 1, false, 10.0, 0.2)],
        );
        let p2 = Breakdown::new(
            "blocking",
            2.0,
            vec![w(WaitOp::Flush, 0, 1, false, 2.0, 0.4)],
        );
        let m = Breakdown::mean(&[&p1, &p2]).unwrap();
        assert_eq!(m.waits.len(), 2);
        assert!((m.waits[0].wait_s - 0.2).abs() < 1e-9);
        assert_eq!(m.waits[0].class.op, WaitOp::Flush);
        assert!((m.think_s - (0.8 + 1.6) / 2.0).abs() < 1e-9);
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["waits"][0]["op"], "flush");
        assert_eq!(json["waits"][0]["pattern"], "none");
        let back: Breakdown = serde_json::from_value(json).unwrap();
        assert_eq!(back, m);
    }
}
