//! Pairing: which request an issue, requeue or completion belongs to, and
//! the queued bios a dispatched request completes.

use super::*;

/// Pairing slot of a flush (no sector).
pub(super) const FLUSH_SLOT: u64 = u64::MAX;

/// Which pairing table holds a pending record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// Completed or not waiting for anything.
    None,
    /// In `queued` at this offset (queue mode, not dispatched yet).
    Queued(DeviceId, u64),
    /// In `issued` at this request offset.
    Issued(DeviceId, u64),
    /// In `requeued` at this request offset.
    Requeued(DeviceId, u64),
}

pub(super) struct Pending {
    pub(super) record: IoRecord,
    pub(super) slot: Slot,
}

/// A request handed to the driver: the operation and length that a requeue,
/// re-issue or completion of this same request shows, and the records it
/// completes (one in issue mode; the bios merged into it in queue mode).
pub(super) struct Request {
    pub(super) op: Op,
    pub(super) len: Bytes,
    pub(super) records: Vec<RecKey>,
}

impl Request {
    /// Whether `e` is an event of this very request (same operation and
    /// length), not another request at the same sector.
    pub(super) fn is(&self, e: &BlockEvent) -> bool {
        self.op == e.op && self.len == e.len
    }
}

/// Requests by device and sector (several may share one sector).
pub(super) type RequestTable = FastMap<(DeviceId, u64), VecDeque<Request>>;

/// Takes the oldest request at `key` that `wanted` accepts.
pub(super) fn take_request(
    table: &mut RequestTable,
    key: (DeviceId, u64),
    wanted: impl Fn(&Request) -> bool,
) -> Option<Request> {
    let queue = table.get_mut(&key)?;
    let at = queue.iter().position(wanted)?;
    let request = queue.remove(at);
    if queue.is_empty() {
        table.remove(&key);
    }
    request
}

impl Normaliser<'_> {
    pub(super) fn issue(
        &mut self,
        at: &Location<'_>,
        rel: Nanos,
        e: &BlockEvent,
        slot_offset: u64,
    ) -> Result<(), ConvertError> {
        let key = (e.device, slot_offset);
        // A re-issue is the requeued request itself: same operation and
        // length. Another request at that sector is new I/O, even when the
        // requeued one's re-issue is missing from the input.
        if let Some(request) = take_request(&mut self.requeued, key, |r| r.is(e)) {
            self.add_note(note::REISSUE, 1);
            for k in &request.records {
                if let Some(p) = self.records.get_mut(k) {
                    p.slot = Slot::Issued(e.device, slot_offset);
                }
            }
            self.issued.entry(key).or_default().push_back(request);
            return Ok(());
        }
        match self.mode {
            Mode::Queue => {
                let group = self.gather_queued(e, slot_offset);
                if group.is_empty() {
                    self.add_note(note::ISSUE_WITHOUT_QUEUE, 1);
                    return Ok(());
                }
                for k in &group {
                    if let Some(p) = self.records.get_mut(k) {
                        p.slot = Slot::Issued(e.device, slot_offset);
                    }
                }
                self.issued.entry(key).or_default().push_back(Request {
                    op: e.op,
                    len: e.len,
                    records: group,
                });
            }
            _ => {
                if e.op != Op::Flush && e.len.0 == 0 {
                    self.add_note(note::EMPTY_REQUEST, 1);
                    return Ok(());
                }
                let slot = Slot::Issued(e.device, slot_offset);
                if let Some(rk) = self.create(
                    at, rel, e.device, e.op, e.flags, e.offset, e.len, None, e.pid, slot,
                )? {
                    self.issued.entry(key).or_default().push_back(Request {
                        op: e.op,
                        len: e.len,
                        records: vec![rk],
                    });
                }
            }
        }
        Ok(())
    }

    /// Takes the queued records a request covers: bios starting inside
    /// `[offset, offset + len)` for data, the oldest queued flush for a flush.
    pub(super) fn gather_queued(&mut self, e: &BlockEvent, slot_offset: u64) -> Vec<RecKey> {
        let mut group = Vec::new();
        if slot_offset == FLUSH_SLOT {
            let k = (e.device, FLUSH_SLOT);
            if let Some(key) = self.queued.get_mut(&k).and_then(|q| q.pop_front()) {
                group.push(key);
            }
            self.cleanup_queued(k);
            return group;
        }
        let end = e.offset.0.saturating_add(e.len.0.max(1));
        let slots: Vec<(DeviceId, u64)> = self
            .queued
            .range((e.device, e.offset.0)..(e.device, end))
            .map(|(k, _)| *k)
            .collect();
        for k in slots {
            if let Some(q) = self.queued.remove(&k) {
                group.extend(q);
            }
        }
        group
    }

    /// A completion of the very bio that was queued (a bio completion, or a
    /// request made of one bio): the oldest queued bio at the same sector with
    /// the same length. Concurrent bios of one sector then pair one by one,
    /// where a range would give the first completion all of them.
    pub(super) fn take_queued_bio(&mut self, e: &BlockEvent, slot_offset: u64) -> Option<RecKey> {
        if slot_offset == FLUSH_SLOT {
            return None;
        }
        let slot = (e.device, slot_offset);
        let queue = self.queued.get_mut(&slot)?;
        let records = &self.records;
        let at = queue
            .iter()
            .position(|k| records.get(k).is_some_and(|p| p.record.len == e.len))?;
        let key = queue.remove(at);
        self.cleanup_queued(slot);
        key
    }

    pub(super) fn complete(&mut self, rel: Nanos, e: &BlockEvent, slot_offset: u64) {
        let key = (e.device, slot_offset);
        // The dispatched request of this operation and length; else a
        // requeued one whose re-issue the input lacks (its completion ends
        // the requeue); else the oldest at the sector (a partial completion).
        let mut request = take_request(&mut self.issued, key, |r| r.is(e));
        if request.is_none() {
            request = take_request(&mut self.requeued, key, |r| r.is(e));
            if request.is_some() {
                self.add_note(note::REQUEUE_COMPLETED, 1);
            }
        }
        let request = request.or_else(|| take_request(&mut self.issued, key, |_| true));
        let group = match request {
            Some(r) => r.records,
            None if self.mode == Mode::Queue => match self.take_queued_bio(e, slot_offset) {
                Some(key) => vec![key],
                None => self.gather_queued(e, slot_offset),
            },
            None => Vec::new(),
        };
        if group.is_empty() {
            self.add_note(note::UNMATCHED_COMPLETION, 1);
            return;
        }
        if e.error != 0 {
            self.add_note(note::COMPLETION_ERROR, group.len() as u64);
        }
        let from = self.opts.from.unwrap_or(Nanos::ZERO);
        for k in group {
            if let Some(p) = self.records.get_mut(&k) {
                let issued_rel = Nanos(p.record.time.0.saturating_add(from.0));
                p.record.latency = Some(rel.saturating_sub(issued_rel));
                p.slot = Slot::None;
            }
        }
    }

    pub(super) fn cleanup_queued(&mut self, key: (DeviceId, u64)) {
        if self.queued.get(&key).is_some_and(|q| q.is_empty()) {
            self.queued.remove(&key);
        }
    }

    /// Removes a record's key from whatever pairing table holds it.
    pub(super) fn unslot(&mut self, key: RecKey, slot: Slot) {
        match slot {
            Slot::None => {}
            Slot::Queued(dev, off) => {
                if let Some(q) = self.queued.get_mut(&(dev, off)) {
                    q.retain(|k| *k != key);
                }
                self.cleanup_queued((dev, off));
            }
            Slot::Issued(dev, off) | Slot::Requeued(dev, off) => {
                let table = if matches!(slot, Slot::Issued(..)) {
                    &mut self.issued
                } else {
                    &mut self.requeued
                };
                if let Some(requests) = table.get_mut(&(dev, off)) {
                    for r in requests.iter_mut() {
                        r.records.retain(|k| *k != key);
                    }
                    requests.retain(|r| !r.records.is_empty());
                    if requests.is_empty() {
                        table.remove(&(dev, off));
                    }
                }
            }
        }
    }
}
