//! The first streaming pass over a trace, and the map from trace offsets to
//! target offsets.
//!
//! `compact` (the default) keeps the order and locality of what the trace
//! touched but closes the gaps it never touched: the scan notes every 1 MiB
//! region a read or write touched (per source device), and the map lays those
//! regions out back to back, runs of adjacent regions kept adjacent. A trace
//! that touched 1 GB of a 16 GB disk so needs about 1 GB of target. Memory is
//! bounded by the number of distinct regions, not by the number of records.
//!
//! Discards and write-zeroes do not size the map (a trim of a whole disk would
//! otherwise demand the whole disk); they land in the run at or before their
//! offset and are clipped to the target's end.

use crate::ReplayError;
use std::collections::{BTreeMap, BTreeSet};
use trace_format::{IoRecord, Nanos, Summary};

/// Granularity of the compact map.
pub const REGION_BYTES: u64 = 1 << 20;

/// Largest single read or write the engine accepts (its buffers are sized to
/// the largest request times the queue depth).
pub const MAX_REQUEST_BYTES: u64 = 64 << 20;

/// What one streaming pass learns about a trace.
#[derive(Debug, Clone, Default)]
pub struct TraceScan {
    /// Counts and bytes per operation, as the trace's footer has them (but
    /// counted from the records actually read).
    pub summary: Summary,
    pub first_time: Nanos,
    /// First issue to last issue or completion.
    pub original_duration: Nanos,
    /// Largest read or write.
    pub max_data_len: u64,
    /// Highest end of any read or write.
    pub max_end: u64,
    /// Every source device with any record, and its highest read or write end.
    pub device_max_end: BTreeMap<u16, u64>,
    /// Largest read or write per source device.
    pub device_max_len: BTreeMap<u16, u64>,
    regions: BTreeSet<(u16, u64)>,
}

impl TraceScan {
    /// Reads every record once.
    pub fn scan(
        trace: &str,
        records: impl Iterator<Item = Result<IoRecord, ReplayError>>,
    ) -> Result<TraceScan, ReplayError> {
        let mut s = TraceScan::default();
        let mut last_time = 0u64;
        let mut end_time = 0u64;
        for (index, rec) in records.enumerate() {
            let rec = rec?;
            let index = index as u64;
            let bad = |reason: String| ReplayError::BadRecord {
                trace: trace.to_string(),
                index,
                reason,
            };
            if index == 0 {
                s.first_time = rec.time;
            } else if rec.time.0 < last_time {
                return Err(bad(format!(
                    "issue time {} is earlier than the previous record's ({})",
                    rec.time,
                    Nanos(last_time)
                )));
            }
            last_time = rec.time.0;
            s.device_max_end.entry(rec.device).or_insert(0);
            end_time = end_time.max(rec.completion().unwrap_or(rec.time).0);
            s.summary.add(&rec);
            if rec.op.carries_data() && rec.len.0 > 0 {
                if rec.len.0 > MAX_REQUEST_BYTES {
                    return Err(bad(format!(
                        "a {} of {} bytes is larger than the {} MiB the replayer handles",
                        rec.op,
                        rec.len.0,
                        MAX_REQUEST_BYTES >> 20
                    )));
                }
                let end = rec
                    .end()
                    .ok_or_else(|| bad("offset + length overflows".into()))?;
                s.max_data_len = s.max_data_len.max(rec.len.0);
                s.max_end = s.max_end.max(end.0);
                if let Some(m) = s.device_max_end.get_mut(&rec.device) {
                    *m = (*m).max(end.0);
                }
                let l = s.device_max_len.entry(rec.device).or_insert(0);
                *l = (*l).max(rec.len.0);
                let first = rec.offset.0 / REGION_BYTES;
                let last = (end.0 - 1) / REGION_BYTES;
                for region in first..=last {
                    s.regions.insert((rec.device, region));
                }
            }
        }
        s.original_duration = Nanos(end_time.saturating_sub(s.first_time.0));
        Ok(s)
    }

    /// Bytes the compact map needs.
    pub fn compact_bytes(&self) -> u64 {
        self.regions.len() as u64 * REGION_BYTES
    }

    /// Whether every record knows its original completion (dependencies are
    /// then taken from completion times; otherwise original order and the
    /// queue depth).
    pub fn has_completions(&self) -> bool {
        self.summary.ios > 0 && self.summary.with_latency == self.summary.ios
    }

    /// Target bytes `kind` needs for this trace (the scratch file is sized so).
    pub fn required_bytes(&self, kind: crate::MappingKind) -> u64 {
        self.required_bytes_for(kind, |_| true)
    }

    /// Target bytes `kind` needs for the devices `on` selects (those routed
    /// to one target), not counting any `--target-offset`.
    pub fn required_bytes_for(&self, kind: crate::MappingKind, on: impl Fn(u16) -> bool) -> u64 {
        match kind {
            crate::MappingKind::Identity => {
                let end = self
                    .device_max_end
                    .iter()
                    .filter(|(d, _)| on(**d))
                    .map(|(_, e)| *e)
                    .max()
                    .unwrap_or(0);
                end.div_ceil(REGION_BYTES) * REGION_BYTES
            }
            crate::MappingKind::Compact | crate::MappingKind::Wrap => {
                self.regions.iter().filter(|(d, _)| on(*d)).count() as u64 * REGION_BYTES
            }
        }
    }
}

/// The part of one target a replay may use: `[start, end)`, in units of its
/// logical block size (`start` and `end` are multiples of `block`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetSpace {
    pub start: u64,
    pub end: u64,
    pub block: u64,
}

impl TargetSpace {
    /// The whole of a target of `size` bytes.
    pub fn whole(size: u64, block: u64) -> TargetSpace {
        let block = block.max(1);
        TargetSpace {
            start: 0,
            end: size / block * block,
            block,
        }
    }

    fn size(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// One run of adjacent touched regions of one source device.
#[derive(Debug, Clone, Copy)]
struct Run {
    device: u16,
    first_region: u64,
    regions: u64,
    /// Absolute offset in the device's target.
    target_start: u64,
}

/// Trace offset → (target, target offset), aligned to the target's block
/// size and kept inside the target's space.
#[derive(Debug, Clone)]
pub struct AddressMap {
    kind: crate::MappingKind,
    runs: Vec<Run>,
    spaces: Vec<TargetSpace>,
    /// (source device, index into `spaces`), sorted; devices not listed go to
    /// target 0.
    routes: Vec<(u16, u32)>,
}

/// A mapped request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapped {
    /// Index of the target (0: the first).
    pub target: u32,
    pub offset: u64,
    pub len: u64,
}

impl AddressMap {
    /// Builds the map of `scan` onto one target of `target_size` bytes with
    /// logical block size `block`; fails when the trace cannot fit.
    pub fn new(
        trace: &str,
        scan: &TraceScan,
        kind: crate::MappingKind,
        target_size: u64,
        block: u64,
    ) -> Result<AddressMap, ReplayError> {
        AddressMap::with_targets(
            trace,
            scan,
            kind,
            &[TargetSpace::whole(target_size, block)],
            &[],
        )
    }

    /// Builds the map of `scan` onto several targets: `routes` sends a source
    /// device to an index of `spaces` (unlisted devices go to the first).
    /// Fails when the devices routed to a target cannot fit in its space.
    pub fn with_targets(
        trace: &str,
        scan: &TraceScan,
        kind: crate::MappingKind,
        spaces: &[TargetSpace],
        routes: &[(u16, u32)],
    ) -> Result<AddressMap, ReplayError> {
        let does_not_fit = |reason: String| ReplayError::DoesNotFit {
            trace: trace.into(),
            reason,
        };
        if spaces.is_empty() {
            return Err(does_not_fit("there is no target".into()));
        }
        let mut routes = routes.to_vec();
        routes.sort_unstable();
        routes.dedup_by_key(|r| r.0);
        let mut map = AddressMap {
            kind,
            runs: Vec::new(),
            spaces: spaces.to_vec(),
            routes,
        };
        let mut next: Vec<u64> = spaces.iter().map(|s| s.start).collect();
        for (index, space) in spaces.iter().enumerate() {
            let on = |d: u16| map.target_of(d) as usize == index;
            let devices: Vec<u16> = scan
                .device_max_end
                .keys()
                .copied()
                .filter(|d| on(*d))
                .collect();
            if devices.is_empty() {
                continue;
            }
            let which = if spaces.len() > 1 {
                format!("target {index} ")
            } else {
                String::new()
            };
            let size = space.size();
            let block = space.block.max(1);
            let largest = devices
                .iter()
                .filter_map(|d| scan.device_max_len.get(d))
                .copied()
                .max()
                .unwrap_or(0);
            let max_len = largest.div_ceil(block) * block;
            if max_len > size {
                return Err(does_not_fit(format!(
                    "its largest request ({max_len} bytes) is larger than the {which}space ({size} bytes)"
                )));
            }
            let need = scan.required_bytes_for(kind, on);
            match kind {
                crate::MappingKind::Compact if need > size => {
                    return Err(does_not_fit(format!(
                        "it touches {} MiB but the {which}space has {} MiB; use a larger target or --mapping wrap",
                        need >> 20,
                        size >> 20
                    )));
                }
                crate::MappingKind::Identity => {
                    let end = devices
                        .iter()
                        .filter_map(|d| scan.device_max_end.get(d))
                        .copied()
                        .max()
                        .unwrap_or(0);
                    if end > size {
                        return Err(does_not_fit(format!(
                            "it reaches offset {end} but the {which}space has {size} bytes; use --mapping compact or wrap"
                        )));
                    }
                }
                _ => {}
            }
        }
        if kind == crate::MappingKind::Compact {
            for &(device, region) in &scan.regions {
                let t = map.target_of(device) as usize;
                let Some(at) = next.get_mut(t) else { continue };
                match map.runs.last_mut() {
                    Some(r) if r.device == device && r.first_region + r.regions == region => {
                        r.regions += 1;
                    }
                    _ => map.runs.push(Run {
                        device,
                        first_region: region,
                        regions: 1,
                        target_start: *at,
                    }),
                }
                *at += REGION_BYTES;
            }
        }
        Ok(map)
    }

    /// The index of the target `device` is routed to.
    pub fn target_of(&self, device: u16) -> u32 {
        self.routes
            .binary_search_by_key(&device, |r| r.0)
            .ok()
            .and_then(|i| self.routes.get(i))
            .map_or(0, |r| r.1)
    }

    /// Maps a request; `len` is rounded up to the block size and the result
    /// never leaves the target's space (`[--target-offset, end)`).
    pub fn map(&self, device: u16, offset: u64, len: u64) -> Mapped {
        let target = self.target_of(device);
        let space = self
            .spaces
            .get(target as usize)
            .or(self.spaces.first())
            .copied()
            .unwrap_or(TargetSpace {
                start: 0,
                end: 0,
                block: 1,
            });
        let size = space.size();
        let block = space.block.max(1);
        let raw = match self.kind {
            crate::MappingKind::Identity => space.start.saturating_add(offset),
            crate::MappingKind::Wrap => space.start + offset % size.max(1),
            crate::MappingKind::Compact => self.compact(device, offset, space.start),
        };
        let len = len
            .div_ceil(block)
            .saturating_mul(block)
            .min(size / block * block);
        let mut start = raw / block * block;
        if start.saturating_add(len) > space.end {
            start = space.end.saturating_sub(len) / block * block;
        }
        Mapped {
            target,
            offset: start.max(space.start),
            len,
        }
    }

    /// Compact position of `offset` of `device`; requests outside any run
    /// (discards, write-zeroes) go to the run at or before them, or to the
    /// device's first run, or to the start of the space.
    fn compact(&self, device: u16, offset: u64, space_start: u64) -> u64 {
        let region = offset / REGION_BYTES;
        let idx = self
            .runs
            .partition_point(|r| (r.device, r.first_region) <= (device, region));
        if let Some(run) = idx.checked_sub(1).and_then(|i| self.runs.get(i)) {
            if run.device == device {
                let within = offset - run.first_region * REGION_BYTES;
                return run.target_start + within.min(run.regions * REGION_BYTES - 1);
            }
        }
        // Before the device's first run: that run's start.
        match self.runs.get(idx) {
            Some(run) if run.device == device => run.target_start,
            _ => space_start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MappingKind;
    use trace_format::{Bytes, Flags, Op};

    fn rec(t: u64, op: Op, offset: u64, len: u64) -> IoRecord {
        IoRecord {
            time: Nanos(t),
            op,
            offset: Bytes(offset),
            len: Bytes(len),
            flags: Flags::NONE,
            latency: None,
            stream: None,
            device: 0,
        }
    }

    fn scan(recs: &[IoRecord]) -> TraceScan {
        TraceScan::scan("t", recs.iter().copied().map(Ok)).unwrap()
    }

    #[test]
    fn compact_closes_gaps_and_keeps_order_and_locality() {
        const GIB: u64 = 1 << 30;
        let s = scan(&[
            rec(0, Op::Read, 10 * GIB + 4096, 8192),
            rec(1, Op::Write, 2 * GIB, 4096),
            rec(2, Op::Read, 2 * GIB + REGION_BYTES + 512, 4096), // adjacent region
            rec(3, Op::Read, 15 * GIB, 4096),
        ]);
        assert_eq!(s.compact_bytes(), 4 * REGION_BYTES);
        let m = AddressMap::new("t", &s, MappingKind::Compact, 4 * REGION_BYTES, 4096).unwrap();
        assert_eq!(m.map(0, 2 * GIB, 4096).offset, 0);
        // locality inside a run kept (512 aligned down to the block)
        assert_eq!(
            m.map(0, 2 * GIB + REGION_BYTES + 512, 4096).offset,
            REGION_BYTES
        );
        assert_eq!(
            m.map(0, 10 * GIB + 4096, 8192),
            Mapped {
                target: 0,
                offset: 2 * REGION_BYTES + 4096,
                len: 8192
            }
        );
        assert_eq!(m.map(0, 15 * GIB, 4096).offset, 3 * REGION_BYTES);
        // too small a target is refused with a reason
        assert!(AddressMap::new("t", &s, MappingKind::Compact, 3 * REGION_BYTES, 4096).is_err());
    }

    #[test]
    fn requests_never_pass_the_end_and_are_aligned() {
        let s = scan(&[rec(0, Op::Read, 0, 4096), rec(1, Op::Read, 100 << 20, 1000)]);
        let m = AddressMap::new("t", &s, MappingKind::Wrap, 10 << 20, 4096).unwrap();
        for off in (0..(300u64 << 20)).step_by(777_777) {
            let r = m.map(0, off, 1000);
            assert_eq!(r.len, 4096);
            assert_eq!(r.offset % 4096, 0);
            assert!(r.offset + r.len <= 10 << 20);
        }
        assert!(AddressMap::new("t", &s, MappingKind::Identity, 10 << 20, 4096).is_err());
        let id = AddressMap::new("t", &s, MappingKind::Identity, 200 << 20, 512).unwrap();
        assert_eq!(
            id.map(0, (100 << 20) + 513, 1000),
            Mapped {
                target: 0,
                offset: (100 << 20) + 512,
                len: 1024
            }
        );
    }

    #[test]
    fn scan_rejects_time_going_backwards() {
        let e = TraceScan::scan(
            "t",
            [rec(5, Op::Read, 0, 512), rec(4, Op::Read, 0, 512)]
                .into_iter()
                .map(Ok),
        )
        .unwrap_err();
        assert!(matches!(e, ReplayError::BadRecord { index: 1, .. }), "{e}");
    }
}
