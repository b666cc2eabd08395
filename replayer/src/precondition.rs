//! Preconditioning: before scoring, every region the traces will read is
//! written once with incompressible data, so reads touch data as on a drive
//! in use. A never-written block of a fresh or trimmed SSD, or of a fresh
//! zram, is answered without touching any (zram returns zeros), and reads
//! several times faster than the same block once it holds data.
//!
//! - `read-regions` (the default): the 1 MiB regions of the target that the
//!   traces read under the replay's address mapping, except where the trace
//!   itself wrote the data before reading it (those reads stay as they are).
//! - `full`: the whole space the replay may use.
//! - `skip`: the target as it is.
//!
//! Writes are O_DIRECT, sequential, [`WRITE_BYTES`] each. A small marker file
//! per target (in the state directory: `$TRACEMARK_STATE_DIR`, else
//! `$XDG_STATE_HOME/tracemark`, else `~/.local/state/tracemark`) lists the
//! regions tracemark wrote; a later run writes only the regions not listed.
//! The marker is believed only while the target has the same size and a
//! sample of its regions still holds data (a reset zram or a trimmed SSD
//! reads zeros), so a device emptied behind tracemark's back is written again.
//!
//! The record also says what the run found (`found`): blocks sampled from the
//! whole space and from the read regions before anything is written, and
//! from the read regions again as scoring starts. Preconditioning makes a
//! reset device's reads find data as a filled one's do, but the rest of the
//! device still differs, and two results can say so.

use crate::buffer::AlignedBuf;
use crate::mapping::AddressMap;
use crate::options::{PreconditionPolicy, ReplayOptions};
use crate::source::TraceSource;
use crate::target::{Target, Targets};
use crate::ReplayError;
use results::schema::{FoundState, Precondition, Sampled};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::PathBuf;
use std::time::Instant;
use trace_format::rng::WyRand;
use trace_format::Op;

/// Granularity of what is preconditioned and remembered.
pub const REGION_BYTES: u64 = 1 << 20;
/// Bytes per write.
pub const WRITE_BYTES: u64 = 8 << 20;
/// Regions read back to check that a marker still tells the truth.
const SAMPLES: usize = 16;
/// Blocks read per target and region set to record the state a run found.
const STATE_SAMPLES: usize = 64;

/// Regions of one target, by index (`offset / REGION_BYTES`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegionSet(BTreeSet<u64>);

impl RegionSet {
    /// Adds every region that `[offset, offset + len)` touches.
    pub fn insert_range(&mut self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let first = offset / REGION_BYTES;
        let last = (offset + len - 1) / REGION_BYTES;
        self.0.extend(first..=last);
    }

    pub fn len(&self) -> u64 {
        self.0.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, region: u64) -> bool {
        self.0.contains(&region)
    }

    /// Runs of adjacent regions as `(first, count)`.
    pub fn runs(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for &r in &self.0 {
            match out.last_mut() {
                Some((first, count)) if *first + *count == r => *count += 1,
                _ => out.push((r, 1)),
            }
        }
        out
    }

    fn from_runs(runs: &[(u64, u64)]) -> RegionSet {
        RegionSet(runs.iter().flat_map(|&(f, n)| f..f + n).collect())
    }

    fn difference(&self, other: &RegionSet) -> RegionSet {
        RegionSet(self.0.difference(&other.0).copied().collect())
    }

    fn union_with(&mut self, other: &RegionSet) {
        self.0.extend(other.0.iter().copied());
    }
}

/// Byte ranges written so far, merged: `start -> end`.
#[derive(Debug, Default)]
struct Written(BTreeMap<u64, u64>);

impl Written {
    fn add(&mut self, mut start: u64, mut end: u64) {
        if start >= end {
            return;
        }
        // Merge with every range that touches [start, end).
        let touching: Vec<(u64, u64)> = self
            .0
            .range(..=end)
            .rev()
            .take_while(|(_, &e)| e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.0.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.0.insert(start, end);
    }

    /// The parts of `[start, end)` not written.
    fn unwritten(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = start;
        let first = self
            .0
            .range(..=start)
            .next_back()
            .map(|(&s, &e)| (s, e))
            .into_iter();
        for (s, e) in first.chain(self.0.range(start + 1..end).map(|(&s, &e)| (s, e))) {
            if e <= at {
                continue;
            }
            if s > at {
                out.push((at, s.min(end)));
            }
            at = at.max(e);
            if at >= end {
                break;
            }
        }
        if at < end {
            out.push((at, end));
        }
        out
    }
}

/// Reads sampled per trace to tell whether they find data.
pub const READ_SAMPLES: usize = 64;

/// A read sampled to see whether it finds data: the target's index and the
/// first byte of the read that the trace had not written before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampledRead {
    pub target: usize,
    pub offset: u64,
}

/// What the traces read, under the address maps.
#[derive(Debug, Clone, Default)]
pub struct ReadPlan {
    /// The regions each target must hold data in before scoring, one set per
    /// target (the map's target *i* is index *i*).
    pub regions: Vec<RegionSet>,
    /// Per trace, up to [`READ_SAMPLES`] of its reads, drawn evenly over
    /// them (the same ones on every run of the trace).
    pub samples: Vec<Vec<SampledRead>>,
}

/// Keeps a uniform sample of at most [`READ_SAMPLES`] of the items offered
/// (reservoir sampling, seeded so a trace samples the same reads each run).
struct Reservoir {
    seen: usize,
    rng: WyRand,
    kept: Vec<SampledRead>,
}

impl Reservoir {
    fn new() -> Reservoir {
        Reservoir {
            seen: 0,
            rng: WyRand::new(0x7261_6d70_6c65),
            kept: Vec::new(),
        }
    }

    fn offer(&mut self, read: SampledRead) {
        self.seen += 1;
        if self.kept.len() < READ_SAMPLES {
            self.kept.push(read);
        } else {
            let k = self.rng.below(self.seen);
            if let Some(slot) = self.kept.get_mut(k) {
                *slot = read;
            }
        }
    }
}

/// The regions each target must hold data in before scoring (reads under
/// the address map, less what the trace itself wrote before reading it),
/// and a sample of each trace's reads. Streams each trace once; memory
/// grows with the distinct extents written, not the records.
pub fn read_plan(
    traces: &[&dyn TraceSource],
    maps: &[AddressMap],
    targets: usize,
    opts: &ReplayOptions,
) -> Result<ReadPlan, ReplayError> {
    let mut sets = vec![RegionSet::default(); targets];
    let mut samples = Vec::with_capacity(traces.len());
    let writes_replayed = !opts.read_only && !opts.skips(Op::Write);
    for (t, map) in traces.iter().zip(maps) {
        let mut written: Vec<Written> = (0..targets).map(|_| Written::default()).collect();
        let mut reservoir = Reservoir::new();
        for r in t.records() {
            let r = r?;
            let read = r.op == Op::Read && !opts.skips(Op::Read);
            let write = r.op == Op::Write && writes_replayed;
            if !(read || write) || r.len.0 == 0 {
                continue;
            }
            let m = map.map(r.device, r.offset.0, r.len.0);
            let i = m.target as usize;
            let (Some(set), Some(w)) = (sets.get_mut(i), written.get_mut(i)) else {
                continue;
            };
            if write {
                w.add(m.offset, m.offset + m.len);
            } else {
                let unwritten = w.unwritten(m.offset, m.offset + m.len);
                if let Some(&(s, _)) = unwritten.first() {
                    reservoir.offer(SampledRead {
                        target: i,
                        offset: s,
                    });
                }
                for (s, e) in unwritten {
                    set.insert_range(s, e - s);
                }
            }
        }
        samples.push(reservoir.kept);
    }
    Ok(ReadPlan {
        regions: sets,
        samples,
    })
}

/// Reads the block each sampled read starts in: how many hold anything but
/// zeros. A block past a target's end, or of a target not open, is left
/// out; one that cannot be read counts as holding no data.
pub fn reads_found(targets: &Targets, reads: &[SampledRead]) -> Sampled {
    let mut out = Sampled::default();
    for (i, t) in targets.iter().enumerate() {
        let offsets = reads.iter().filter(|r| r.target == i).map(|r| r.offset);
        out.add(sample_blocks(t, offsets));
    }
    out
}

/// Every region of the space a replay may use on `target`.
fn whole_space(target: &Target, offset: u64) -> RegionSet {
    let mut s = RegionSet::default();
    s.insert_range(offset, target.size.saturating_sub(offset));
    s
}

/// The marker of one target: its size and the regions tracemark wrote.
#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    size: u64,
    region_bytes: u64,
    /// `(first region, count)`.
    runs: Vec<(u64, u64)>,
}

/// The marker file of a target: by device number for a block device, by
/// filesystem and inode for a file.
fn marker_path(target: &Target) -> Option<PathBuf> {
    let meta = std::fs::metadata(&target.path).ok()?;
    let id = if meta.file_type().is_block_device() {
        let rdev = meta.rdev();
        format!("block-{}-{}", libc::major(rdev), libc::minor(rdev))
    } else {
        format!("file-{}-{}", meta.dev(), meta.ino())
    };
    Some(outfile::state_dir()?.join(format!("precondition-{id}.json")))
}

/// The regions the marker vouches for: none when it is missing, for another
/// size, or any sampled region reads as zeros.
fn marked_regions(target: &Target) -> RegionSet {
    let Some(path) = marker_path(target) else {
        return RegionSet::default();
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return RegionSet::default();
    };
    let Ok(m) = serde_json::from_str::<Marker>(&text) else {
        return RegionSet::default();
    };
    if m.size != target.size || m.region_bytes != REGION_BYTES {
        return RegionSet::default();
    }
    let set = RegionSet::from_runs(&m.runs);
    if holds_data(target, &set) {
        set
    } else {
        RegionSet::default()
    }
}

/// Whether sampled regions of `set` (spread over it) read as non-zero data.
fn holds_data(target: &Target, set: &RegionSet) -> bool {
    if set.is_empty() {
        return true;
    }
    let block = target.logical_block_size.max(512) as usize;
    let Ok(mut buf) = AlignedBuf::new(block) else {
        return false;
    };
    let regions: Vec<u64> = set.0.iter().copied().collect();
    let step = (regions.len() / SAMPLES).max(1);
    regions.iter().step_by(step).take(SAMPLES + 1).all(|&r| {
        // The middle of the region: its first block may be a trace's write.
        let offset = (r * REGION_BYTES + REGION_BYTES / 2) / block as u64 * block as u64;
        if offset + block as u64 > target.size {
            return true;
        }
        block_holds_data(target, &mut buf.as_mut_slice()[..block], offset)
    })
}

/// One block from the middle of each of at most `max` regions spread evenly
/// over `set`, and how many of them hold anything but zeros.
fn sample(target: &Target, set: &RegionSet, max: usize) -> Sampled {
    let n = set.0.len();
    let picks = max.min(n);
    let mut regions = set.0.iter().copied();
    let mut at = 0usize;
    let chosen = (0..picks).filter_map(move |k| {
        // The k-th of `picks` evenly spaced indexes into the set.
        let want = k * n / picks;
        let r = regions.nth(want - at)?;
        at = want + 1;
        Some(r)
    });
    sample_regions(target, chosen)
}

/// As [`sample`] over every region from `offset` to the end of the target,
/// without listing them (a large drive has millions).
fn sample_space(target: &Target, offset: u64, max: usize) -> Sampled {
    let first = offset / REGION_BYTES;
    let end = target.size.div_ceil(REGION_BYTES);
    let n = end.saturating_sub(first);
    let picks = (max as u64).min(n);
    sample_regions(target, (0..picks).map(|k| first + k * n / picks))
}

/// Reads one block from the middle of each region; a block that cannot be
/// read counts as sampled without data.
fn sample_regions(target: &Target, regions: impl Iterator<Item = u64>) -> Sampled {
    sample_blocks(target, regions.map(|r| r * REGION_BYTES + REGION_BYTES / 2))
}

/// Reads the logical block each byte offset falls in: how many hold
/// anything but zeros. A block past the target's end is left out; one that
/// cannot be read counts as sampled without data.
fn sample_blocks(target: &Target, offsets: impl Iterator<Item = u64>) -> Sampled {
    let mut out = Sampled::default();
    let block = target.logical_block_size.max(512) as usize;
    let Ok(mut buf) = AlignedBuf::new(block) else {
        return out;
    };
    for at in offsets {
        let offset = at / block as u64 * block as u64;
        if offset + block as u64 > target.size {
            continue;
        }
        out.blocks += 1;
        if block_holds_data(target, &mut buf.as_mut_slice()[..block], offset) {
            out.with_data += 1;
        }
    }
    out
}

/// The regions that must hold data on target `i` before scoring.
fn needed_regions(t: &Target, i: usize, regions: &[RegionSet], opts: &ReplayOptions) -> RegionSet {
    match opts.precondition {
        PreconditionPolicy::Full => whole_space(t, opts.target_offset),
        _ => regions.get(i).cloned().unwrap_or_default(),
    }
}

/// Samples the regions target `i` needs (the whole space, for `full`).
fn sample_needed(t: &Target, i: usize, regions: &[RegionSet], opts: &ReplayOptions) -> Sampled {
    match opts.precondition {
        PreconditionPolicy::Full => sample_space(t, opts.target_offset, STATE_SAMPLES),
        _ => regions
            .get(i)
            .map(|r| sample(t, r, STATE_SAMPLES))
            .unwrap_or_default(),
    }
}

/// Samples every target's whole space and needed regions: the state the
/// run found, before it writes.
fn found_before(targets: &Targets, regions: &[RegionSet], opts: &ReplayOptions) -> FoundState {
    let mut found = FoundState::default();
    for (i, t) in targets.iter().enumerate() {
        found
            .space_before
            .add(sample_space(t, opts.target_offset, STATE_SAMPLES));
        found
            .read_regions_before
            .add(sample_needed(t, i, regions, opts));
    }
    found
}

/// The same blocks of the needed regions read again, as scoring starts.
fn found_at_start(
    targets: &Targets,
    regions: &[RegionSet],
    opts: &ReplayOptions,
    mut found: FoundState,
) -> FoundState {
    found.read_regions_at_start = Sampled::default();
    for (i, t) in targets.iter().enumerate() {
        found
            .read_regions_at_start
            .add(sample_needed(t, i, regions, opts));
    }
    found
}

fn save_marker(target: &Target, set: &RegionSet) {
    let Some(path) = marker_path(target) else {
        return;
    };
    let m = Marker {
        size: target.size,
        region_bytes: REGION_BYTES,
        runs: set.runs(),
    };
    // The marker only saves time: a run that cannot write it still counts.
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(text) = serde_json::to_string(&m) {
        let _ = outfile::write_own(&path, text.as_bytes());
    }
}

/// Writes what `opts.precondition` asks on every target (`regions`: from
/// [`read_plan`], one set per target). None for `skip`.
/// `progress(written, total)` is told how far it is, in bytes.
pub fn precondition(
    targets: &Targets,
    regions: &[RegionSet],
    opts: &ReplayOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Option<Precondition>, ReplayError> {
    if opts.precondition == PreconditionPolicy::Skip {
        return Ok(None);
    }
    let started = Instant::now();
    let mut record = Precondition {
        policy: opts.precondition,
        needed_bytes: 0,
        already_bytes: 0,
        written_bytes: 0,
        seconds: 0.0,
        region_bytes: REGION_BYTES,
        not_done: None,
        found: None,
    };
    let found = found_before(targets, regions, opts);
    let plans = plan(targets, regions, opts, &mut record);
    let total: u64 = plans.iter().map(|p| p.2.len() * REGION_BYTES).sum();
    let mut buf =
        AlignedBuf::new(WRITE_BYTES as usize).map_err(|source| ReplayError::TargetIo {
            path: targets.primary().path.clone(),
            what: "cannot allocate the precondition buffer".into(),
            source,
        })?;
    let mut rng = WyRand::from_entropy();
    let mut done = 0u64;
    progress(0, total);
    for (t, mut marked, todo) in plans {
        let end_of_target = t.size / t.logical_block_size.max(1) * t.logical_block_size.max(1);
        for (first, count) in todo.runs() {
            let mut at = first * REGION_BYTES;
            let end = ((first + count) * REGION_BYTES).min(end_of_target);
            while at < end {
                if crate::interrupt::interrupted() {
                    record.not_done = Some("interrupted".into());
                    // The whole regions written so far count as done: the
                    // next run does not write them again.
                    let whole = at / REGION_BYTES - first;
                    if whole > 0 && t.file().sync_data().is_ok() {
                        marked.union_with(&RegionSet::from_runs(&[(first, whole)]));
                    }
                    save_marker(t, &marked);
                    record.seconds = started.elapsed().as_secs_f64();
                    record.found = Some(found_at_start(targets, regions, opts, found));
                    return Ok(Some(record));
                }
                let n = (end - at).min(WRITE_BYTES) as usize;
                rng.fill(&mut buf.as_mut_slice()[..n]);
                write_all_at(t, &buf.as_slice()[..n], at)?;
                at += n as u64;
                done += n as u64;
                record.written_bytes += n as u64;
                progress(done, total);
            }
            marked.union_with(&RegionSet::from_runs(&[(first, count)]));
        }
        if let Err(source) = t.file().sync_data() {
            return Err(ReplayError::TargetIo {
                path: t.path.clone(),
                what: "cannot flush the precondition writes".into(),
                source,
            });
        }
        save_marker(t, &marked);
    }
    record.seconds = started.elapsed().as_secs_f64();
    record.found = Some(found_at_start(targets, regions, opts, found));
    Ok(Some(record))
}

/// One target's regions still to write, with those its marker says are
/// written.
type Plan<'t> = (&'t Target, RegionSet, RegionSet);

/// What each target still needs written. Counts in `record` what is needed
/// and what was already written, and says there why a target that needs
/// writes gets none.
fn plan<'t>(
    targets: &'t Targets,
    regions: &[RegionSet],
    opts: &ReplayOptions,
    record: &mut Precondition,
) -> Vec<Plan<'t>> {
    let mut plans = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let needed = needed_regions(t, i, regions, opts);
        if needed.is_empty() {
            continue;
        }
        record.needed_bytes += needed.len() * REGION_BYTES;
        if !t.writable || opts.read_only {
            record.not_done = Some(format!(
                "{}: not writable in this replay ({}); its never-written blocks may read faster than in use",
                t.path.display(),
                if opts.read_only {
                    "--read-only"
                } else {
                    "--allow-write not given"
                }
            ));
            continue;
        }
        // Checking the marker reads a few blocks: only where it may spare writes.
        let marked = marked_regions(t);
        let todo = needed.difference(&marked);
        record.already_bytes += (needed.len() - todo.len()) * REGION_BYTES;
        if !todo.is_empty() {
            plans.push((t, marked, todo));
        }
    }
    plans
}

fn write_all_at(t: &Target, data: &[u8], offset: u64) -> Result<(), ReplayError> {
    t.file()
        .write_all_at(data, offset)
        .map_err(|source| ReplayError::TargetIo {
            path: t.path.clone(),
            what: format!("precondition write at byte {offset}"),
            source,
        })
}

/// Whether the block at `offset` reads whole and holds anything but zeros
/// (`buf` is one logical block, aligned for O_DIRECT).
fn block_holds_data(target: &Target, buf: &mut [u8], offset: u64) -> bool {
    matches!(target.file().read_at(buf, offset), Ok(n) if n == buf.len())
        && buf.iter().any(|&b| b != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_of_a_range_and_their_runs() {
        let mut s = RegionSet::default();
        s.insert_range(REGION_BYTES - 4096, 8192); // regions 0 and 1
        s.insert_range(5 * REGION_BYTES, REGION_BYTES); // region 5 only
        s.insert_range(9 * REGION_BYTES, 0); // nothing
        assert_eq!(s.runs(), vec![(0, 2), (5, 1)]);
        assert_eq!(RegionSet::from_runs(&s.runs()), s);
    }

    #[test]
    fn unwritten_parts_of_a_read() {
        let mut w = Written::default();
        w.add(100, 200);
        w.add(300, 400);
        w.add(190, 310); // merges all three
        assert_eq!(w.0.len(), 1);
        assert_eq!(w.unwritten(0, 50), vec![(0, 50)]);
        assert_eq!(w.unwritten(150, 350), vec![]);
        assert_eq!(w.unwritten(50, 450), vec![(50, 100), (400, 450)]);
        w.add(500, 600);
        assert_eq!(w.unwritten(350, 700), vec![(400, 500), (600, 700)]);
        assert_eq!(w.unwritten(600, 650), vec![(600, 650)]);
        assert_eq!(w.unwritten(499, 501), vec![(499, 500)]);
    }

    use crate::mapping::TraceScan;
    use crate::MemorySource;
    use trace_format::{Bytes, Flags, IoRecord, Nanos};

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

    #[test]
    fn reads_of_data_the_trace_wrote_first_are_not_preconditioned() {
        let mib = REGION_BYTES;
        let src = MemorySource::new(
            "t",
            vec![
                rec(1, Op::Write, 10 * mib, mib),        // written first...
                rec(2, Op::Read, 10 * mib, 4096),        // ...then read: left alone
                rec(3, Op::Read, 20 * mib, 4096),        // read first: preconditioned
                rec(4, Op::Write, 20 * mib, 4096),       // (written after: no matter)
                rec(5, Op::Read, 30 * mib - 4096, 8192), // spans regions
            ],
        );
        let scan = TraceScan::scan("t", src.records()).unwrap();
        let opts = ReplayOptions {
            mapping: crate::MappingKind::Identity,
            ..Default::default()
        };
        let map = AddressMap::new("t", &scan, opts.mapping, 64 * mib, 4096).unwrap();
        let plan = read_plan(&[&src], &[map], 1, &opts).unwrap();
        assert_eq!(plan.regions[0].runs(), vec![(20, 1), (29, 2)]);
        // The reads sampled: not the one of what the trace wrote first.
        let offsets: Vec<u64> = plan.samples[0].iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![20 * mib, 30 * mib - 4096]);
        // Read-only: the trace's writes are not replayed, so its reads of
        // them read whatever the target holds.
        let ro = ReplayOptions {
            read_only: true,
            ..opts.clone()
        };
        let map = AddressMap::new("t", &scan, ro.mapping, 64 * mib, 4096).unwrap();
        let plan = read_plan(&[&src], &[map], 1, &ro).unwrap();
        assert_eq!(plan.regions[0].runs(), vec![(10, 1), (20, 1), (29, 2)]);
        assert_eq!(plan.samples[0].len(), 3);
    }

    #[test]
    fn a_long_trace_samples_a_bounded_even_spread_of_its_reads_the_same_each_time() {
        let mib = REGION_BYTES;
        let reads = 10_000u64;
        let src = MemorySource::new(
            "t",
            (0..reads)
                .map(|k| rec(k, Op::Read, k * 4096, 4096))
                .collect(),
        );
        let scan = TraceScan::scan("t", src.records()).unwrap();
        let opts = ReplayOptions {
            mapping: crate::MappingKind::Identity,
            ..Default::default()
        };
        let plan = |_| {
            let map = AddressMap::new("t", &scan, opts.mapping, 64 * mib, 4096).unwrap();
            read_plan(&[&src], &[map], 1, &opts)
                .unwrap()
                .samples
                .remove(0)
        };
        let first = plan(());
        assert_eq!(first.len(), READ_SAMPLES);
        assert_eq!(first, plan(()), "the same reads each run");
        // Spread over the trace: as many from each half, within chance.
        let early = first.iter().filter(|r| r.offset < reads / 2 * 4096).count();
        assert!(
            (16..=48).contains(&early),
            "{early} of {READ_SAMPLES} from the first half"
        );
    }
}
