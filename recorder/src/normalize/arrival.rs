//! Inputs as they arrive: judged against their neighbours' times, held until
//! the issue event is decided, made relative to the trace's start, and
//! reported as skipped where they are bad.

use super::*;

impl Normaliser<'_> {
    pub(super) fn begin(&mut self) -> Result<(), ConvertError> {
        if !self.begun {
            self.begun = true;
            let event = self.issue_event().unwrap_or(IssueEvent::Issue);
            self.out.begin(event)?;
        }
        Ok(())
    }

    /// Fixes the mode and replays the events held while undecided.
    pub(super) fn decide(&mut self, mode: Mode) -> Result<(), ConvertError> {
        if self.mode != Mode::Undecided {
            return Ok(());
        }
        self.mode = mode;
        if mode == Mode::Queue {
            let msg = "the input has no issue (D) events; issue times are taken from \
                       queue (Q) events";
            self.messages.push(msg.to_string());
            self.add_note("issue time taken from queue events (no D events)", 1);
        }
        let held = std::mem::take(&mut self.held);
        for arrival in held {
            self.dispatch(arrival)?;
        }
        Ok(())
    }

    /// Queues an input for the time check, and takes in the input that
    /// leaves the look-ahead queue.
    pub(super) fn arrive(&mut self, at: &Location<'_>, item: Item) -> Result<(), ConvertError> {
        match self.clock.push(at, item) {
            Some(arrival) => self.accept(arrival),
            None => Ok(()),
        }
    }

    /// Takes in every input still waiting for the time check.
    pub(super) fn flush_clock(&mut self) -> Result<(), ConvertError> {
        while let Some(arrival) = self.clock.pop() {
            self.accept(arrival)?;
        }
        Ok(())
    }

    /// Takes in an input whose time is judged now: bad input when out of
    /// line, else held while the mode is undecided, else used.
    pub(super) fn accept(&mut self, arrival: Arrival) -> Result<(), ConvertError> {
        if let Verdict::Bad(reason) = self.clock.judge(&arrival) {
            let content = match &arrival.item {
                Item::Event(e) | Item::Remap(e, _, _) => describe_event(e),
                Item::Io(io) => describe_io(io),
                Item::Bad { content, .. } => content.clone(),
            };
            let reason = BadReason::new(BadInputKind::TimeOrder, reason);
            return self.report_bad(arrival.location(), &content, &reason);
        }
        let event = match &arrival.item {
            Item::Event(e) | Item::Remap(e, _, _) if self.mode == Mode::Undecided => *e,
            _ => return self.dispatch(arrival),
        };
        match event.action {
            Action::Issue => {
                self.saw_issue = true;
                self.decide(Mode::Issue)?;
                return self.dispatch(arrival);
            }
            Action::Queue => self.saw_queue = true,
            _ => {}
        }
        self.held.push(arrival);
        if self.held.len() >= DECIDE_AFTER_EVENTS {
            let mode = if self.saw_queue {
                Mode::Queue
            } else {
                Mode::Issue
            };
            self.decide(mode)?;
        }
        Ok(())
    }

    /// Uses an input whose time is in line.
    pub(super) fn dispatch(&mut self, arrival: Arrival) -> Result<(), ConvertError> {
        let at = arrival.location();
        match &arrival.item {
            Item::Event(e) => self.handle_event(at, *e),
            Item::Remap(e, from, off) => self.handle_remap(at, *e, *from, *off),
            Item::Io(io) => self.handle_io(at, *io),
            Item::Bad { content, reason } => self.report_bad(at, content, reason),
        }
    }

    /// Counts bad input with --skip-bad, else stops with it.
    pub(super) fn report_bad(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &BadReason,
    ) -> Result<(), ConvertError> {
        let content = shorten(content);
        if self.opts.skip_bad {
            self.skipped.add(SkippedExample {
                location: at.to_string(),
                content,
                reason: reason.message.clone(),
            });
            Ok(())
        } else {
            Err(ConvertError::bad_input(&at, content, reason))
        }
    }

    /// Relative time of an absolute source time, checking it does not run
    /// backwards; `Ok(None)` when the event was reported as bad and skipped.
    pub(super) fn relative_time(
        &mut self,
        at: &Location<'_>,
        time: Nanos,
        what: &dyn Fn() -> String,
    ) -> Result<Option<Nanos>, ConvertError> {
        // The trace starts at the earliest time of the first inputs (those
        // within the reorder tolerance before the first one), so that an input
        // a little out of order at the start keeps its place.
        let origin = match self.origin {
            Some(origin) => origin,
            None => *self.origin.insert(self.clock.earliest_near(time)),
        };
        let rel = time.saturating_sub(origin);
        if time < origin && origin.saturating_sub(time) > self.opts.reorder_tolerance {
            let reason = BadReason::new(BadInputKind::TimeOrder, format!(
                "time goes backwards by {} to before the trace start (more than the {} tolerated; `convert --reorder-window` widens it)",
                origin.saturating_sub(time),
                self.opts.reorder_tolerance
            ));
            self.report_bad(*at, &what(), &reason)?;
            return Ok(None);
        }
        if rel < self.max_time && self.max_time.saturating_sub(rel) > self.opts.reorder_tolerance {
            let reason = format!(
                "time goes backwards by {} (from {} to {} since the trace start; at most {} is tolerated; `convert --reorder-window` widens it)",
                self.max_time.saturating_sub(rel),
                self.max_time,
                rel,
                self.opts.reorder_tolerance
            );
            let reason = BadReason::new(BadInputKind::TimeOrder, reason);
            self.report_bad(*at, &what(), &reason)?;
            return Ok(None);
        }
        self.max_time = self.max_time.max(rel);
        Ok(Some(rel))
    }
}
