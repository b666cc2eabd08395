//! The per-CPU merge of the ring-buffer reader: each CPU's events arrive in
//! time order, and a request issued on one CPU is often completed on another,
//! so events are held per CPU and released in time order up to a watermark
//! every CPU has passed. Pure: no files, no clocks.

use crate::error::ConvertError;
use crate::event::BlockEvent;
use std::collections::VecDeque;

/// A decoded event waiting for the other CPUs' watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct HeldEvent {
    /// Record number and stream byte offset on its CPU (for messages).
    pub(super) record: u64,
    pub(super) byte: u64,
    /// Its time is `event.time`.
    pub(super) event: BlockEvent,
}

/// One CPU's place in the merge.
#[derive(Debug, Default)]
struct CpuQueue {
    /// Decoded events in reading (and so, per CPU, time) order.
    held: VecDeque<HeldEvent>,
    /// Time of the last record read.
    last_time: u64,
    /// Every event of this CPU stamped at or before this time has been read.
    watermark: u64,
    /// The kernel has no buffer for this CPU (offline): nothing to wait for.
    gone: bool,
}

/// Merges the CPUs' event streams into one in time order.
#[derive(Debug)]
pub(super) struct CpuMerge {
    cpus: Vec<CpuQueue>,
}

impl CpuMerge {
    /// A merge of `cpus` streams, numbered from 0.
    pub(super) fn new(cpus: usize) -> CpuMerge {
        CpuMerge {
            cpus: (0..cpus).map(|_| CpuQueue::default()).collect(),
        }
    }

    /// A record stamped `time` was read from CPU `cpu` (an event or not).
    pub(super) fn saw(&mut self, cpu: usize, time: u64) {
        if let Some(q) = self.cpus.get_mut(cpu) {
            q.last_time = time;
        }
    }

    /// Holds an event read from CPU `cpu`, after those read before it.
    pub(super) fn hold(&mut self, cpu: usize, held: HeldEvent) {
        if let Some(q) = self.cpus.get_mut(cpu) {
            q.last_time = held.event.time.0;
            q.held.push_back(held);
        }
    }

    /// CPU `cpu` has no buffer any more: it holds no other CPU back.
    pub(super) fn gone(&mut self, cpu: usize) {
        if let Some(q) = self.cpus.get_mut(cpu) {
            q.gone = true;
        }
    }

    /// The end of CPU `cpu`'s turn in a read round: read to empty (`drained`),
    /// everything it stamped up to `drained_upto` is read; otherwise up to
    /// its last record.
    pub(super) fn end_turn(&mut self, cpu: usize, drained: bool, drained_upto: u64) {
        if let Some(q) = self.cpus.get_mut(cpu) {
            let reached = if drained { drained_upto } else { q.last_time };
            q.watermark = q.watermark.max(reached);
        }
    }

    /// The time up to which every CPU's events have been read.
    pub(super) fn watermark(&self) -> u64 {
        self.cpus
            .iter()
            .map(|q| if q.gone { u64::MAX } else { q.watermark })
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Events held, over all CPUs.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.cpus.iter().map(|q| q.held.len()).sum()
    }

    /// Hands the held events stamped at or before `upto` to `emit` (with
    /// their CPU), oldest first: a merge of the CPUs' queues, each in time
    /// order. The CPU with the oldest event gives events until another CPU's
    /// is older.
    pub(super) fn release(
        &mut self,
        upto: u64,
        emit: &mut dyn FnMut(usize, HeldEvent) -> Result<(), ConvertError>,
    ) -> Result<(), ConvertError> {
        loop {
            // The oldest front, and the oldest front of the other CPUs.
            let mut best: Option<(u64, usize)> = None;
            let mut second = u64::MAX;
            for (i, q) in self.cpus.iter().enumerate() {
                let Some(t) = q.held.front().map(|h| h.event.time.0) else {
                    continue;
                };
                match best {
                    Some((b, _)) if t >= b => second = second.min(t),
                    _ => {
                        if let Some((b, _)) = best {
                            second = second.min(b);
                        }
                        best = Some((t, i));
                    }
                }
            }
            let Some((t, i)) = best else {
                return Ok(());
            };
            if t > upto {
                return Ok(());
            }
            let limit = upto.min(second);
            let Some(q) = self.cpus.get_mut(i) else {
                return Ok(());
            };
            // The oldest of all goes, then this CPU's events while no other
            // CPU has an older one.
            let mut first = true;
            while first || q.held.front().is_some_and(|h| h.event.time.0 <= limit) {
                first = false;
                let Some(h) = q.held.pop_front() else {
                    break;
                };
                emit(i, h)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::UsageKind;
    use crate::event::Action;
    use trace_format::{Bytes, DeviceId, Flags, Nanos, Op};

    fn held(time: u64, record: u64) -> HeldEvent {
        HeldEvent {
            record,
            byte: 0,
            event: BlockEvent {
                time: Nanos(time),
                device: DeviceId { major: 7, minor: 0 },
                action: Action::Issue,
                op: Op::Read,
                flags: Flags::NONE,
                offset: Bytes(0),
                len: Bytes(512),
                pid: None,
                error: 0,
            },
        }
    }

    fn release(m: &mut CpuMerge, upto: u64) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        m.release(upto, &mut |cpu, h| {
            out.push((cpu, h.event.time.0));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn interleaved_cpus_come_out_in_time_order() {
        let mut m = CpuMerge::new(3);
        for (cpu, t) in [(0, 10), (0, 40), (0, 41), (1, 20), (1, 30), (2, 5), (2, 50)] {
            m.hold(cpu, held(t, 0));
        }
        assert_eq!(
            release(&mut m, u64::MAX),
            [(2, 5), (0, 10), (1, 20), (1, 30), (0, 40), (0, 41), (2, 50)]
        );
        assert_eq!(m.held(), 0);
    }

    #[test]
    fn nothing_past_the_watermark_is_released() {
        let mut m = CpuMerge::new(2);
        m.hold(0, held(10, 0));
        m.hold(0, held(30, 1));
        m.hold(1, held(20, 0));
        assert_eq!(release(&mut m, 25), [(0, 10), (1, 20)]);
        assert_eq!(m.held(), 1);
        assert_eq!(release(&mut m, 29), []);
        assert_eq!(release(&mut m, 30), [(0, 30)]);
    }

    #[test]
    fn the_slowest_cpu_sets_the_watermark() {
        let mut m = CpuMerge::new(2);
        assert_eq!(m.watermark(), 0);
        m.hold(0, held(100, 0));
        m.end_turn(0, false, 500);
        // CPU 1 was read to empty in a round that started at 400.
        m.end_turn(1, true, 400);
        assert_eq!(m.watermark(), 100);
        m.end_turn(0, true, 450);
        assert_eq!(m.watermark(), 400);
        // A watermark never goes back.
        m.end_turn(1, true, 300);
        assert_eq!(m.watermark(), 400);
        // A CPU that is gone holds nobody back.
        m.gone(1);
        assert_eq!(m.watermark(), 450);
        // A record that is no event still moves a CPU's last time.
        m.saw(0, 900);
        m.end_turn(0, false, 0);
        assert_eq!(m.watermark(), 900);
    }

    #[test]
    fn an_emit_error_stops_the_release() {
        let mut m = CpuMerge::new(1);
        m.hold(0, held(1, 0));
        m.hold(0, held(2, 1));
        let err = m
            .release(u64::MAX, &mut |_, _| {
                Err(ConvertError::usage(UsageKind::Stopped, "stop"))
            })
            .unwrap_err();
        assert_eq!(err.usage_kind(), Some(UsageKind::Stopped));
        assert_eq!(err.to_string(), "stop");
        assert_eq!(m.held(), 1);
    }
}
