//! Puts the events of per-CPU buffers back in time order, streaming.
//!
//! Each buffer holds one CPU's events in time order, and one CPU's buffers
//! follow each other in time order, but buffers of different CPUs are
//! written to the file as they fill, so a quiet CPU's buffer arrives after
//! later events of busy ones. The merge keeps a queue per CPU and the time of
//! the last event each CPU's latest buffer held (its watermark: that CPU logs
//! nothing earlier from then on). The earliest queued event is released once
//! every CPU with an empty queue has a watermark at or past it, or when more
//! than a fixed number of events are held (a CPU silent for a long time):
//! memory stays bounded whatever the file's length.

use std::collections::VecDeque;

/// Events held at most before the earliest is released regardless.
pub const MAX_HELD: usize = 1 << 18;

/// The CPUs a merge tracks at most: Windows runs on at most 2048 logical
/// processors. A larger number from a corrupt header or buffer is folded
/// into the last queue, so each release looks at no more than this many
/// queues.
const MAX_CPUS: usize = 2048;

pub struct Merger<T> {
    queues: Vec<VecDeque<(u64, T)>>,
    /// Per CPU: the time of the last event of its latest buffer, or `None`
    /// for a CPU that has logged no buffer.
    watermarks: Vec<Option<u64>>,
    held: usize,
    max_held: usize,
}

impl<T> Merger<T> {
    pub fn new(max_held: usize) -> Self {
        Merger {
            queues: Vec::new(),
            watermarks: Vec::new(),
            held: 0,
            max_held,
        }
    }

    /// Declares CPUs `0..cpus` (the log file header's count): until a CPU's
    /// first buffer arrives, nothing later than the log's start is released.
    pub fn expect_cpus(&mut self, cpus: u32) {
        let n = (cpus as usize).min(MAX_CPUS);
        if self.queues.len() < n {
            self.queues.resize_with(n, VecDeque::new);
            self.watermarks.resize(n, Some(0));
        }
    }

    /// Adds the kept events of one buffer of `cpu` (in the buffer's order)
    /// and the time of its last event of any kind.
    pub fn push_buffer(&mut self, cpu: u16, events: impl IntoIterator<Item = (u64, T)>, last_time: Option<u64>) {
        let cpu = usize::from(cpu).min(MAX_CPUS - 1);
        if self.queues.len() <= cpu {
            self.queues.resize_with(cpu + 1, VecDeque::new);
            self.watermarks.resize(cpu + 1, None);
        }
        let queue = &mut self.queues[cpu];
        let before = queue.len();
        queue.extend(events);
        self.held += queue.len() - before;
        if let Some(t) = last_time {
            let w = &mut self.watermarks[cpu];
            *w = Some(w.map_or(t, |old| old.max(t)));
        }
    }

    /// The earliest held event, when it is safe to release (or `drain`: the
    /// input has ended, release everything).
    pub fn pop(&mut self, drain: bool) -> Option<(u64, T)> {
        let (cpu, time) = self
            .queues
            .iter()
            .enumerate()
            .filter_map(|(i, q)| q.front().map(|(t, _)| (i, *t)))
            .min_by_key(|&(i, t)| (t, i))?;
        let safe = drain
            || self.held > self.max_held
            || self
                .queues
                .iter()
                .zip(&self.watermarks)
                .all(|(q, w)| !q.is_empty() || w.is_none_or(|w| w >= time));
        if !safe {
            return None;
        }
        self.held -= 1;
        self.queues[cpu].pop_front()
    }

    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_by_time_and_waits_for_slow_cpus() {
        let mut m = Merger::new(100);
        m.push_buffer(0, [(10, 'a'), (30, 'c')], Some(30));
        // CPU 1 has logged nothing yet: it cannot hold anything earlier.
        assert_eq!(m.pop(false), Some((10, 'a')));
        m.push_buffer(1, [(20, 'b')], Some(25));
        assert_eq!(m.pop(false), Some((20, 'b')));
        // CPU 1's watermark (25) is below 30: it may still log 26..30.
        assert_eq!(m.pop(false), None);
        m.push_buffer(1, [(28, 'x')], Some(40));
        assert_eq!(m.pop(false), Some((28, 'x')));
        assert_eq!(m.pop(false), Some((30, 'c')));
        assert_eq!(m.pop(false), None);
        assert_eq!(m.held(), 0);
    }

    #[test]
    fn a_silent_cpu_does_not_hold_more_than_the_bound() {
        let mut m = Merger::new(3);
        m.push_buffer(0, [(5, 0)], Some(5));
        m.push_buffer(1, (10..20).map(|t| (t, t)), Some(19));
        // CPU 0 is silent past 5: only the bound releases CPU 1's events.
        let mut out = Vec::new();
        while let Some((t, _)) = m.pop(false) {
            out.push(t);
        }
        assert_eq!(out, vec![5, 10, 11, 12, 13, 14, 15, 16]);
        assert_eq!(m.held(), 3);
        while let Some((t, _)) = m.pop(true) {
            out.push(t);
        }
        assert_eq!(out.len(), 11);
    }
}
