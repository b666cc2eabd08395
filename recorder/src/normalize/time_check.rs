//! The time check: whether an input time is in line with the input around it.
//!
//! One line with a wildly wrong timestamp must cost that line only. Judged
//! against the records before it alone, a bogus time far ahead would become
//! the trace's latest time, and every good record after it would look like
//! time running backwards. So each input waits in a short look-ahead queue
//! and is judged against the records before it *and* the ones after it: a
//! jump (forward or backward, by more than the reorder tolerance) that most of
//! the following records do not follow is a bad timestamp, reported at that
//! input; a backward step the following records do follow is an input out of
//! time order, reported as such at its first record.

use crate::event::{BlockEvent, Location, Position, SourceIo};
use std::collections::VecDeque;
use std::rc::Rc;
use trace_format::{Bytes, DeviceId, Nanos};

/// How many inputs wait to be judged. A run of bad timestamps shorter than
/// half of this is told from a real jump in time.
pub(super) const LOOK_AHEAD: usize = 1024;

/// How many of the queued records a jump is judged by.
const SAMPLES: usize = 64;

/// One input as the parser reported it.
pub(super) enum Item {
    Event(BlockEvent),
    Remap(BlockEvent, DeviceId, Bytes),
    Io(SourceIo),
    /// Bad input (with --skip-bad), kept in line so that the skipped examples
    /// stay in input order.
    Bad {
        content: String,
        reason: crate::error::BadReason,
    },
}

impl Item {
    fn time(&self) -> Option<Nanos> {
        match self {
            Item::Event(e) | Item::Remap(e, _, _) => Some(e.time),
            Item::Io(io) => Some(io.time),
            Item::Bad { .. } => None,
        }
    }
}

/// An input and where it was found.
pub(super) struct Arrival {
    pub file: Rc<str>,
    pub position: Position,
    pub item: Item,
}

impl Arrival {
    pub fn location(&self) -> Location<'_> {
        Location {
            file: &self.file,
            position: self.position,
        }
    }
}

/// What the check says of an input's time.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    InLine,
    /// Bad input, for this reason.
    Bad(String),
}

/// The look-ahead queue and the latest time judged in line.
pub(super) struct TimeCheck {
    queue: VecDeque<Arrival>,
    tolerance: Nanos,
    /// The first and the latest time judged in line.
    first: Option<Nanos>,
    latest: Option<Nanos>,
    file: Option<Rc<str>>,
}

impl TimeCheck {
    pub fn new(tolerance: Nanos) -> TimeCheck {
        TimeCheck {
            queue: VecDeque::new(),
            tolerance,
            first: None,
            latest: None,
            file: None,
        }
    }

    /// Queues an input; returns the oldest one once the queue is full.
    pub fn push(&mut self, at: &Location<'_>, item: Item) -> Option<Arrival> {
        let file = match &self.file {
            Some(f) if &**f == at.file => f.clone(),
            _ => {
                let f: Rc<str> = Rc::from(at.file);
                self.file = Some(f.clone());
                f
            }
        };
        self.queue.push_back(Arrival {
            file,
            position: at.position,
            item,
        });
        if self.queue.len() > LOOK_AHEAD {
            self.queue.pop_front()
        } else {
            None
        }
    }

    /// The oldest queued input (at the end of the input, or before an error).
    pub fn pop(&mut self) -> Option<Arrival> {
        self.queue.pop_front()
    }

    /// The earliest of `t` and the times still queued that are before it by
    /// no more than the tolerance.
    pub fn earliest_near(&self, t: Nanos) -> Nanos {
        self.queue
            .iter()
            .filter_map(|a| a.item.time())
            .filter(|&f| f < t && f.0.saturating_add(self.tolerance.0) >= t.0)
            .min()
            .unwrap_or(t)
    }

    /// Judges the time of `arrival`, taken from the front of the queue,
    /// against the inputs judged before it and the ones still queued after it.
    pub fn judge(&mut self, arrival: &Arrival) -> Verdict {
        let Some(t) = arrival.item.time() else {
            return Verdict::InLine;
        };
        // The records after it, evenly sampled (at most about `SAMPLES`), so
        // that a trace whose every record follows an idle gap (sparse I/O)
        // costs a few dozen comparisons a record, not the whole queue.
        let stride = self.queue.len().div_ceil(SAMPLES).max(1);
        let next = (0..self.queue.len())
            .step_by(stride)
            .filter_map(|i| self.queue.get(i).and_then(|a| a.item.time()));
        let verdict = match self.latest {
            None => self.judge_first(t, next),
            Some(m) if !self.reaches(m, t) => self.judge_jump(t, m, next, stride),
            Some(m) if !self.reaches(t, m) => self.judge_step(t, m, next),
            Some(_) => Verdict::InLine,
        };
        if verdict == Verdict::InLine {
            self.first.get_or_insert(t);
            self.latest = Some(self.latest.map_or(t, |m| m.max(t)));
        }
        verdict
    }

    /// `a` is not before `b` by more than the tolerance.
    fn reaches(&self, a: Nanos, b: Nanos) -> bool {
        a.0.saturating_add(self.tolerance.0) >= b.0
    }

    /// `x` against the trace start (the first time judged in line, else `t`).
    fn since_start(&self, x: Nanos, t: Nanos) -> String {
        let first = self.first.unwrap_or(t);
        if x < first {
            format!("{} before the trace start", first.saturating_sub(x))
        } else {
            format!("{} since the trace start", x.saturating_sub(first))
        }
    }

    /// The first time `t`: out of line only when clearly more of the `next`
    /// records are before it than not.
    fn judge_first(&self, t: Nanos, next: impl Iterator<Item = Nanos>) -> Verdict {
        let tol = self.tolerance;
        let (mut before, mut with) = (0usize, 0usize);
        for f in next {
            if self.reaches(f, t) {
                with += 1;
            } else {
                before += 1;
            }
        }
        if before > with + 1 {
            Verdict::Bad(format!(
                "time {t} is out of line: {before} of {} records sampled after it are \
                 more than {tol} before it (a bad timestamp)",
                before + with
            ))
        } else {
            Verdict::InLine
        }
    }

    /// A jump forward from the latest time `m` to `t`: real (an idle gap)
    /// when the `next` records follow it, a bad timestamp when most stay
    /// where the records before it were.
    fn judge_jump(
        &self,
        t: Nanos,
        m: Nanos,
        next: impl Iterator<Item = Nanos>,
        stride: usize,
    ) -> Verdict {
        let tol = self.tolerance;
        let (mut back, mut with) = (0usize, 0usize);
        for f in next {
            if self.reaches(f, t) {
                with += 1;
            } else if self.reaches(f, m) {
                back += 1;
            }
        }
        if back > with {
            Verdict::Bad(format!(
                "time jumps ahead by {} to {}, and {back} of {} records \
                 sampled from the next {} are back before it by more than \
                 {tol}: a bad timestamp",
                t.saturating_sub(m),
                self.since_start(t, t),
                self.queue.len().div_ceil(stride),
                self.queue.len()
            ))
        } else {
            Verdict::InLine
        }
    }

    /// A step backward from the latest time `m` to `t`: one bad timestamp
    /// when the `next` records are back in line, an input out of time order
    /// when they follow it.
    fn judge_step(&self, t: Nanos, m: Nanos, next: impl Iterator<Item = Nanos>) -> Verdict {
        let tol = self.tolerance;
        let (mut in_line, mut with) = (0usize, 0usize);
        for f in next {
            if self.reaches(f, m) {
                in_line += 1;
            } else if self.reaches(f, t) {
                with += 1;
            }
        }
        let step = format!(
            "time goes backwards by {} (from {} to {}; at most \
             {tol} is tolerated; `convert --reorder-window` widens it)",
            m.saturating_sub(t),
            self.since_start(m, t),
            self.since_start(t, t)
        );
        Verdict::Bad(if in_line >= with {
            format!("{step}; the records after it are back in line: a bad timestamp")
        } else {
            format!(
                "{step}, and {with} of the records sampled after it stay there: the input is not \
                 in time order (several captures one after the other? convert them \
                 one by one)"
            )
        })
    }
}
