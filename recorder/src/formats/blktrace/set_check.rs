//! Whether the files given as one blktrace capture can be one: the per-CPU
//! files of a capture each hold one CPU's events, so two files with events
//! of the same CPU on the same device are two captures (or one given twice:
//! two `blkparse -d` dumps), refused; a set numbered with a gap (`.32`, then
//! `.34`) lacks a CPU's events, and files whose wall clocks disagree come
//! from different runs: both warned of.

use super::{category, wall_clock_of, RawRecord};
use crate::error::{ConvertError, UsageKind};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Wall clocks of one capture's files agree to within this (blktrace sets
/// its devices up one after another within milliseconds).
const SAME_RUN_NS: i64 = 1_000_000_000;

/// Per-CPU files missing from the numbering of each set among `files`: one
/// warning per set, naming the gaps.
pub(super) fn numbering_gaps(files: &[PathBuf]) -> Vec<String> {
    let mut sets: BTreeMap<PathBuf, Vec<u64>> = BTreeMap::new();
    for path in files {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some((stem, cpu)) = name.rsplit_once(".blktrace.") else {
            continue;
        };
        if let Ok(cpu) = cpu.parse::<u64>() {
            let prefix = path.with_file_name(stem);
            sets.entry(prefix).or_default().push(cpu);
        }
    }
    let mut warnings = Vec::new();
    for (prefix, mut cpus) in sets {
        cpus.sort_unstable();
        cpus.dedup();
        let Some(&last) = cpus.last() else { continue };
        let missing: Vec<String> = (0..last)
            .filter(|c| cpus.binary_search(c).is_err())
            .take(8)
            .map(|c| format!(".{c}"))
            .collect();
        if !missing.is_empty() {
            warnings.push(format!(
                "{}.blktrace.N: the set has no file {} below .{last}; if that CPU was \
                 online during the capture its events are lost, and requests it issued \
                 or completed stay unpaired",
                prefix.display(),
                missing.join(", ")
            ));
        }
    }
    warnings
}

/// Follows the records of each file as they are merged.
pub(super) struct SetCheck {
    /// The file that holds each (device, CPU) pair's events.
    owner: HashMap<(u32, u32), usize>,
    /// The pair of each file's last record (most files have one pair).
    last: Vec<Option<(u32, u32)>>,
    /// The first wall clock found, and in which file.
    wall: Option<(i64, usize)>,
    warned_wall: bool,
    /// Per file: the time of its last record so far, and whether it ended.
    last_time: Vec<Option<u64>>,
    ended: Vec<bool>,
    warned_disjoint: bool,
}

impl SetCheck {
    pub fn new(files: usize) -> SetCheck {
        SetCheck {
            owner: HashMap::new(),
            last: vec![None; files],
            wall: None,
            warned_wall: false,
            last_time: vec![None; files],
            ended: vec![false; files],
            warned_disjoint: false,
        }
    }

    /// File `i` has no more records.
    pub fn ended(&mut self, i: usize) {
        if let Some(e) = self.ended.get_mut(i) {
            *e = true;
        }
    }

    /// A file whose first record comes after every file before it ended:
    /// the files do not overlap in time, as one capture's files do.
    fn disjoint(&mut self, i: usize, rec: &RawRecord, names: &dyn Fn(usize) -> String) -> Option<String> {
        let first = self.last_time.get(i).is_some_and(Option::is_none);
        if let Some(t) = self.last_time.get_mut(i) {
            *t = Some(t.map_or(rec.time, |t| t.max(rec.time)));
        }
        if !first || self.warned_disjoint {
            return None;
        }
        let mut latest: Option<(u64, usize)> = None;
        for (j, t) in self.last_time.iter().enumerate() {
            let Some(t) = *t else { continue };
            if j == i {
                continue;
            }
            if !self.ended.get(j).copied().unwrap_or(false) {
                return None;
            }
            if latest.is_none_or(|(l, _)| t > l) {
                latest = Some((t, j));
            }
        }
        let (end, j) = latest?;
        let gap = rec.time.saturating_sub(end);
        if gap <= SAME_RUN_NS.unsigned_abs() {
            return None;
        }
        self.warned_disjoint = true;
        Some(format!(
            "{} starts {:.1} s after {} and the files before it ended: the inputs do not \
             overlap in time as the per-CPU files of one capture do; if they are separate \
             captures, convert them one by one",
            names(i),
            gap as f64 / 1e9,
            names(j)
        ))
    }

    /// Checks record `rec` of file `i` (`names` names the files); a warning
    /// when one is due.
    pub fn record(
        &mut self,
        i: usize,
        rec: &RawRecord,
        payload: &[u8],
        names: &dyn Fn(usize) -> String,
    ) -> Result<Option<String>, ConvertError> {
        if rec.categories() & category::NOTIFY != 0 {
            return Ok(self.wall_clock(i, rec, payload, names));
        }
        let disjoint = self.disjoint(i, rec, names);
        let pair = (rec.device, rec.cpu);
        if self.last.get(i).copied().flatten() == Some(pair) {
            return Ok(disjoint);
        }
        if let Some(last) = self.last.get_mut(i) {
            *last = Some(pair);
        }
        match self.owner.get(&pair) {
            Some(&j) if j != i => Err(ConvertError::usage(UsageKind::SeveralCaptures, format!(
                "{} and {} both hold events of CPU {} on device {}: they are two captures \
                 (or one given twice), not the per-CPU files of one; convert them one by one",
                names(j),
                names(i),
                rec.cpu,
                rec.device_id()
            ))),
            Some(_) => Ok(disjoint),
            None => {
                self.owner.insert(pair, i);
                Ok(disjoint)
            }
        }
    }

    fn wall_clock(
        &mut self,
        i: usize,
        rec: &RawRecord,
        payload: &[u8],
        names: &dyn Fn(usize) -> String,
    ) -> Option<String> {
        if rec.action_code() != super::action::NOTIFY_TIMESTAMP || self.warned_wall {
            return None;
        }
        let payload = if rec.has_cgroup() {
            payload.get(8..).unwrap_or(&[])
        } else {
            payload
        };
        let wall = wall_clock_of(rec, payload)?;
        let Some((first, j)) = self.wall else {
            self.wall = Some((wall, i));
            return None;
        };
        let apart = wall.abs_diff(first);
        if j == i || apart <= SAME_RUN_NS.unsigned_abs() {
            return None;
        }
        self.warned_wall = true;
        Some(format!(
            "{} and {} were captured {:.1} s apart by their wall clocks: they are not one \
             capture, and their times, both counted from their own start, overlap",
            names(j),
            names(i),
            apart as f64 / 1e9
        ))
    }
}
