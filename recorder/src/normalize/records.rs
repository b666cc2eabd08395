//! Records made from inputs: extents checked, devices given table slots,
//! `--from/--to` applied, and source I/Os, block events and remaps handled.

use super::*;

impl Normaliser<'_> {
    /// Checks the extent of an event; `Ok(false)` when reported as bad and skipped.
    pub(super) fn check_extent(
        &mut self,
        at: &Location<'_>,
        op: Op,
        offset: Bytes,
        len: Bytes,
        what: &dyn Fn() -> String,
    ) -> Result<bool, ConvertError> {
        if op == Op::Flush {
            return Ok(true);
        }
        let reason = if len.0 > MAX_REQUEST_LEN && op != Op::Discard {
            format!("absurd request length {} bytes", len.0)
        } else {
            match offset.0.checked_add(len.0) {
                Some(end) if end <= MAX_END => return Ok(true),
                _ => format!(
                    "offset {} + length {} ends past 2^63 bytes",
                    offset.0, len.0
                ),
            }
        };
        let reason = BadReason::new(BadInputKind::OutOfRange, reason);
        self.report_bad(*at, &what(), &reason)?;
        Ok(false)
    }

    pub(super) fn device_slot(
        &mut self,
        at: &Location<'_>,
        device: DeviceId,
    ) -> Result<u16, ConvertError> {
        if let Some(&i) = self.device_index.get(&device) {
            return Ok(i);
        }
        let i = u16::try_from(self.devices.len()).map_err(|_| ConvertError::Invalid {
            location: at.to_string(),
            reason: "more than 65536 devices in one trace; pick one with --device".into(),
        })?;
        self.device_index.insert(device, i);
        self.out.new_device(i, device)?;
        self.devices.push(DeviceEntry {
            id: device,
            name: String::new(),
        });
        Ok(i)
    }

    /// Creates a pending record at relative time `rel`, or `None` when --from/--to
    /// exclude it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn create(
        &mut self,
        at: &Location<'_>,
        rel: Nanos,
        device: DeviceId,
        op: Op,
        flags: Flags,
        offset: Bytes,
        len: Bytes,
        latency: Option<Nanos>,
        pid: Option<u32>,
        slot: Slot,
    ) -> Result<Option<RecKey>, ConvertError> {
        if self.opts.from.is_some_and(|f| rel < f) {
            self.add_note(note::BEFORE_FROM, 1);
            return Ok(None);
        }
        if self.opts.to.is_some_and(|t| rel > t) {
            self.add_note(note::AFTER_TO, 1);
            return Ok(None);
        }
        let dev = self.device_slot(at, device)?;
        let mut time = rel.saturating_sub(self.opts.from.unwrap_or(Nanos::ZERO));
        if time < self.last_emitted {
            // Only after a forced emission (window or count bound) can a record
            // arrive earlier than one already written.
            self.add_note(note::CLAMPED, 1);
            time = self.last_emitted;
        }
        let (offset, len) = if op == Op::Flush {
            (Bytes(0), Bytes(0))
        } else {
            (offset, len)
        };
        self.seq += 1;
        let key = (time, self.seq);
        self.records.insert(
            key,
            Pending {
                record: IoRecord {
                    time,
                    op,
                    offset,
                    len,
                    flags,
                    latency,
                    stream: pid,
                    device: dev,
                },
                slot,
            },
        );
        Ok(Some(key))
    }

    pub(super) fn handle_io(&mut self, at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
        if self.opts.device.is_some_and(|d| d != io.device) {
            self.add_note(note::OTHER_DEVICE, 1);
            return Ok(());
        }
        let what = || describe_io(&io);
        let Some(rel) = self.relative_time(&at, io.time, &what)? else {
            return Ok(());
        };
        if !self.check_extent(&at, io.op, io.offset, io.len, &what)? {
            return Ok(());
        }
        if io.op != Op::Flush && io.len.0 == 0 {
            self.add_note(note::EMPTY_REQUEST, 1);
            return Ok(());
        }
        self.create(
            &at,
            rel,
            io.device,
            io.op,
            io.flags,
            io.offset,
            io.len,
            io.latency,
            io.pid,
            Slot::None,
        )?;
        self.drain(false)
    }

    pub(super) fn handle_event(
        &mut self,
        at: Location<'_>,
        e: BlockEvent,
    ) -> Result<(), ConvertError> {
        if self.opts.device.is_some_and(|d| d != e.device) {
            self.add_note(note::OTHER_DEVICE, 1);
            return Ok(());
        }
        let what = || describe_event(&e);
        let Some(rel) = self.relative_time(&at, e.time, &what)? else {
            return Ok(());
        };
        if !self.check_extent(&at, e.op, e.offset, e.len, &what)? {
            return Ok(());
        }
        let slot_offset = if e.op == Op::Flush {
            FLUSH_SLOT
        } else {
            e.offset.0
        };
        let queue_mode = self.mode == Mode::Queue;
        match e.action {
            Action::Queue if queue_mode => {
                self.saw_queue = true;
                if e.op != Op::Flush && e.len.0 == 0 {
                    self.add_note(note::EMPTY_REQUEST, 1);
                } else {
                    let slot = Slot::Queued(e.device, slot_offset);
                    if let Some(key) = self.create(
                        &at, rel, e.device, e.op, e.flags, e.offset, e.len, None, e.pid, slot,
                    )? {
                        self.queued
                            .entry((e.device, slot_offset))
                            .or_default()
                            .push_back(key);
                    }
                }
            }
            Action::Queue => {
                self.saw_queue = true;
                self.add_note(note::UNUSED_QUEUE, 1);
            }
            Action::Issue => {
                self.saw_issue = true;
                self.issue(&at, rel, &e, slot_offset)?;
            }
            Action::Complete => self.complete(rel, &e, slot_offset),
            Action::Requeue => {
                let key = (e.device, slot_offset);
                // The dispatched request of that operation and length, else
                // of that operation (a partly done request goes back with
                // what is left of it).
                let request = take_request(&mut self.issued, key, |r| r.is(&e))
                    .or_else(|| take_request(&mut self.issued, key, |r| r.op == e.op));
                match request {
                    Some(mut request) => {
                        for k in &request.records {
                            if let Some(p) = self.records.get_mut(k) {
                                p.slot = Slot::Requeued(e.device, slot_offset);
                            }
                        }
                        // Its re-issue shows what went back to the queue.
                        request.len = e.len;
                        self.requeued.entry(key).or_default().push_back(request);
                    }
                    None => self.add_note(note::REQUEUE_UNMATCHED, 1),
                }
            }
            Action::BackMerge | Action::FrontMerge => self.add_note(note::UNUSED_MERGE, 1),
            Action::Split => self.add_note(note::UNUSED_SPLIT, 1),
            Action::Remap => self.add_note(note::REMAP, 1),
            Action::Other => self.add_note(note::UNUSED_OTHER, 1),
        }
        self.drain(false)
    }

    pub(super) fn handle_remap(
        &mut self,
        at: Location<'_>,
        e: BlockEvent,
        from: DeviceId,
        from_offset: Bytes,
    ) -> Result<(), ConvertError> {
        // The bio goes on to be queued on the destination device; a record made
        // from its queue event on the source device would count it twice.
        if self.mode == Mode::Queue && self.opts.device.is_none() && from != e.device {
            let slot_key = (from, from_offset.0);
            if let Some(key) = self.queued.get_mut(&slot_key).and_then(|q| q.pop_back()) {
                self.cleanup_queued(slot_key);
                self.records.remove(&key);
                self.add_note(note::REMAP_DROPPED, 1);
            }
        }
        self.handle_event(at, e)
    }
}
