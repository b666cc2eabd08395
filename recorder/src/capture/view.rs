//! The capture's view of the events between the parser and the normaliser:
//! a partition's events mapped into the partition, data-less completions set
//! aside, starts and completions counted, the first event time kept.

use super::device::TracedDevice;
use super::note;
use crate::error::ConvertError;
use crate::event::{Action, BlockEvent, Location, SourceIo};
use crate::sink::Sink;
use std::cell::Cell;
use std::rc::Rc;
use trace_format::{Bytes, DeviceId, Nanos, Op};

/// Sits between the parser and the normaliser: maps a partition's events into
/// the partition, sets aside completions that carry nothing to pair by,
/// counts what started and completed, and remembers the first event time
/// (the trace start).
pub(super) struct CaptureView<'n> {
    pub(super) inner: &'n mut dyn Sink,
    /// (disk, partition, first byte, end byte).
    pub(super) partition: Option<(DeviceId, DeviceId, u64, u64)>,
    pub(super) first_time: Rc<Cell<Option<Nanos>>>,
    /// Issue (or queue) events and completion events handed on.
    pub(super) starts: u64,
    pub(super) completions: u64,
}

impl<'n> CaptureView<'n> {
    /// The view of `device`'s events handed on to `inner`; the first event's
    /// time goes to `first_time`.
    pub(super) fn new(
        inner: &'n mut dyn Sink,
        device: &TracedDevice,
        first_time: Rc<Cell<Option<Nanos>>>,
    ) -> CaptureView<'n> {
        let partition = device.partition.map(|(start, len)| {
            (
                device.disk,
                device.info.id,
                start.0,
                start.0.saturating_add(len.0),
            )
        });
        CaptureView {
            inner,
            partition,
            first_time,
            starts: 0,
            completions: 0,
        }
    }

    /// The event as seen on the partition, or `None` when outside it.
    fn map(&self, mut e: BlockEvent) -> Option<BlockEvent> {
        let Some((disk, part, start, end)) = self.partition else {
            return Some(e);
        };
        if e.device != disk {
            return Some(e);
        }
        let starts_inside = e.offset.0 >= start && e.offset.0 < end;
        if e.len.0 > 0 {
            // Data outside the partition was issued to the whole disk.
            let ends_inside = e.offset.0.checked_add(e.len.0).is_some_and(|x| x <= end);
            if !(starts_inside && ends_inside) {
                return None;
            }
        }
        // A flush has no meaningful sector; it is kept as it is.
        if starts_inside {
            e.offset = Bytes(e.offset.0 - start);
        }
        e.device = part;
        Some(e)
    }
}

impl Sink for CaptureView<'_> {
    fn event(&mut self, at: Location<'_>, event: BlockEvent) -> Result<(), ConvertError> {
        if self.first_time.get().is_none() {
            self.first_time.set(Some(event.time));
        }
        match event.action {
            // The end of a flush sequence completes the original request
            // with no data and no flush op: its sector (0) would pair it
            // with whatever I/O at sector 0 is in flight.
            Action::Complete if event.len.0 == 0 && event.op != Op::Flush => {
                self.inner.note(note::EMPTY_COMPLETION);
                return Ok(());
            }
            Action::Complete => self.completions += 1,
            Action::Issue | Action::Queue => self.starts += 1,
            _ => {}
        }
        match self.map(event) {
            Some(e) => self.inner.event(at, e),
            None => {
                self.inner.note(note::OUTSIDE_PARTITION);
                Ok(())
            }
        }
    }

    fn io(&mut self, at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
        self.inner.io(at, io)
    }

    fn bad_input(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &crate::error::BadReason,
    ) -> Result<(), ConvertError> {
        self.inner.bad_input(at, content, reason)
    }

    fn note(&mut self, key: &str) {
        self.inner.note(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::{EventChoice, NormaliseOptions, Normaliser};
    use trace_format::Flags;

    fn event(device: DeviceId, offset: u64, len: u64) -> BlockEvent {
        BlockEvent {
            time: Nanos(1),
            device,
            action: crate::event::Action::Issue,
            op: trace_format::Op::Read,
            flags: Flags::default(),
            offset: Bytes(offset),
            len: Bytes(len),
            pid: None,
            error: 0,
        }
    }

    #[test]
    fn partition_mapping() {
        let disk = DeviceId { major: 8, minor: 0 };
        let part = DeviceId { major: 8, minor: 1 };
        let mut sink: Vec<trace_format::IoRecord> = Vec::new();
        let mut n = Normaliser::new(NormaliseOptions::default(), &mut sink);
        let view = CaptureView {
            inner: &mut n,
            partition: Some((disk, part, 1 << 20, 2 << 20)),
            first_time: Rc::new(Cell::new(None)),
            starts: 0,
            completions: 0,
        };
        let e = view.map(event(disk, (1 << 20) + 4096, 4096)).unwrap();
        assert_eq!((e.device, e.offset), (part, Bytes(4096)));
        assert!(view.map(event(disk, 0, 4096)).is_none());
        assert!(view.map(event(disk, (2 << 20) - 4096, 8192)).is_none());
        // A flush (no data) belongs to the partition, whatever its sector.
        let e = view.map(event(disk, u64::MAX - 511, 0)).unwrap();
        assert_eq!(e.device, part);
    }

    #[test]
    fn empty_completions_are_set_aside_and_the_rest_counted() {
        let disk = DeviceId { major: 7, minor: 0 };
        let mut out: Vec<trace_format::IoRecord> = Vec::new();
        let mut n = Normaliser::new(
            NormaliseOptions {
                event: Some(EventChoice::Queue),
                ..NormaliseOptions::default()
            },
            &mut out,
        );
        let mut view = CaptureView {
            inner: &mut n,
            partition: None,
            first_time: Rc::new(Cell::new(None)),
            starts: 0,
            completions: 0,
        };
        let at = Location::line("t", 1);
        let with = |action, op, offset, len, time| BlockEvent {
            action,
            op,
            time: Nanos(time),
            ..event(disk, offset, len)
        };
        // A write at sector 0 in flight while a flush sequence ends: the
        // data-less `WS 0 + 0` completion must not complete the write.
        view.event(at, with(Action::Queue, Op::Write, 0, 4096, 10))
            .unwrap();
        view.event(at, with(Action::Queue, Op::Flush, 0, 0, 11))
            .unwrap();
        view.event(at, with(Action::Complete, Op::Flush, 0, 0, 20))
            .unwrap();
        view.event(at, with(Action::Complete, Op::Write, 0, 0, 21))
            .unwrap();
        view.event(at, with(Action::Complete, Op::Write, 0, 4096, 50))
            .unwrap();
        assert_eq!((view.starts, view.completions), (2, 2));
        assert_eq!(view.first_time.get(), Some(Nanos(10)));
        let outcome = n.finish().unwrap();
        let got: Vec<(Op, Option<u64>)> =
            out.iter().map(|r| (r.op, r.latency.map(|l| l.0))).collect();
        assert_eq!(got, vec![(Op::Write, Some(40)), (Op::Flush, Some(9))]);
        let count = |key: &str| {
            outcome
                .tail
                .notes
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, n)| *n)
        };
        assert_eq!(count(note::EMPTY_COMPLETION), Some(1));
        assert_eq!(count(crate::normalize::note::UNMATCHED_COMPLETION), None);
    }
}
