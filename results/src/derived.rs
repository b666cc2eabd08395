//! What the result's types compute from their own fields (totals, shares,
//! names for people), beside the schema rather than inside it, so
//! `schema` holds the types and their serde only.

use crate::schema::{Dependencies, Fidelity, Interval, Sampled, Skipped, TargetKind};

impl Skipped {
    pub fn total(&self) -> u64 {
        self.read_only + self.discards + self.write_zeroes + self.empty + self.by_option
    }
}

impl Fidelity {
    /// `cpu_wait_s` as a share of the playback (None without either).
    pub fn cpu_wait_share(&self) -> Option<f64> {
        let w = self.cpu_wait_s?;
        (self.achieved_s > 0.0).then(|| w / self.achieved_s)
    }
}

impl Interval {
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }
}

impl Dependencies {
    pub fn name(self) -> &'static str {
        match self {
            Dependencies::Completion => "completion",
            Dependencies::Order => "order",
        }
    }
}

impl TargetKind {
    /// As the result file writes it.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::File => "file",
            TargetKind::BlockDevice => "block_device",
        }
    }

    /// As people read it: `file`, `block device`.
    pub fn label(self) -> &'static str {
        match self {
            TargetKind::File => "file",
            TargetKind::BlockDevice => "block device",
        }
    }
}

impl Sampled {
    pub fn add(&mut self, other: Sampled) {
        self.blocks += other.blocks;
        self.with_data += other.with_data;
    }

    /// What the blocks say about the place they were read from.
    pub fn state(&self) -> &'static str {
        match (self.with_data, self.blocks) {
            (_, 0) => "not sampled",
            (0, _) => "never written",
            (d, b) if d == b => "holding data",
            _ => "partly written",
        }
    }
}
