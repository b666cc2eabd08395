//! A set of byte ranges, kept as disjoint, non-adjacent intervals: what a
//! trace has touched (its footprint) or written. Memory grows with the number
//! of separate extents, not with the number of records: a trace that rewrites
//! the same files stays small, and a set is at most footprint / smallest
//! request intervals long.

use std::collections::BTreeMap;

/// Disjoint half-open ranges `[start, end)`, keyed by start.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IntervalSet {
    ranges: BTreeMap<u64, u64>,
    covered: u64,
}

impl IntervalSet {
    pub fn new() -> IntervalSet {
        IntervalSet::default()
    }

    /// Bytes covered by the set.
    pub fn covered(&self) -> u64 {
        self.covered
    }

    /// Number of separate extents (what the memory grows with).
    pub fn extents(&self) -> usize {
        self.ranges.len()
    }

    /// Bytes of `[start, end)` already in the set.
    pub fn overlap(&self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let mut total = 0;
        // The range starting at or before `start` may reach into [start, end).
        let first = self.ranges.range(..=start).next_back();
        let rest = self.ranges.range(start.saturating_add(1)..end);
        for (&s, &e) in first.into_iter().chain(rest) {
            let lo = s.max(start);
            let hi = e.min(end);
            if hi > lo {
                total += hi - lo;
            }
        }
        total
    }

    /// Adds `[start, end)`, merging with the ranges it overlaps or touches.
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let mut lo = start;
        let mut hi = end;
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back() {
            if e >= start {
                lo = s;
                hi = hi.max(e);
            }
        }
        // Every range starting within [lo, hi] merges into the new one.
        let merged: Vec<(u64, u64)> = self.ranges.range(lo..=hi).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in merged {
            self.ranges.remove(&s);
            self.covered -= e - s;
            hi = hi.max(e);
        }
        self.ranges.insert(lo, hi);
        self.covered += hi - lo;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_merge_overlapping_and_adjacent_ranges() {
        let mut s = IntervalSet::new();
        s.insert(100, 200);
        s.insert(300, 400);
        assert_eq!((s.covered(), s.extents()), (200, 2));
        s.insert(200, 250); // adjacent to the first
        assert_eq!((s.covered(), s.extents()), (250, 2));
        s.insert(150, 350); // bridges both
        assert_eq!((s.covered(), s.extents()), (300, 1));
        s.insert(120, 130); // inside
        assert_eq!((s.covered(), s.extents()), (300, 1));
        s.insert(0, 1000); // swallows everything
        assert_eq!((s.covered(), s.extents()), (1000, 1));
        s.insert(5, 5); // empty
        assert_eq!((s.covered(), s.extents()), (1000, 1));
    }

    #[test]
    fn overlap_counts_only_bytes_in_the_set() {
        let mut s = IntervalSet::new();
        s.insert(100, 200);
        s.insert(300, 400);
        assert_eq!(s.overlap(0, 100), 0);
        assert_eq!(s.overlap(0, 101), 1);
        assert_eq!(s.overlap(150, 350), 50 + 50);
        assert_eq!(s.overlap(0, 1000), 200);
        assert_eq!(s.overlap(199, 300), 1);
        assert_eq!(s.overlap(400, 500), 0);
        assert_eq!(s.overlap(120, 130), 10);
        assert_eq!(s.overlap(130, 120), 0);
    }

    /// Against a byte map, on a pseudo-random mix of inserts and queries.
    #[test]
    fn agrees_with_a_byte_map() {
        let mut s = IntervalSet::new();
        let mut bytes = vec![false; 2000];
        let mut rng = crate::rng::WyRand::new(12345);
        let mut next = |m: u64| rng.next_u64() % m;
        for _ in 0..500 {
            let a = next(1990);
            let b = a + next(2000 - a);
            let want = bytes[a as usize..b as usize].iter().filter(|&&v| v).count() as u64;
            assert_eq!(s.overlap(a, b), want, "[{a},{b})");
            if next(2) == 0 {
                s.insert(a, b);
                bytes[a as usize..b as usize]
                    .iter_mut()
                    .for_each(|v| *v = true);
            }
            assert_eq!(s.covered(), bytes.iter().filter(|&&v| v).count() as u64);
        }
    }
}
