//! A record far ahead of its file's times so far is an idle gap when the
//! records after it follow it, and a bad timestamp when most of them are back
//! with the records before it. Believed at once, a bad one would make every
//! good record after it look like time going backwards (and stall its file in
//! the merge of a per-CPU set until every other file had passed it). Judged by
//! the next record alone, a run of two bad timestamps would pass as an idle
//! gap; so the jump is judged by up to [`JUMP_LOOK_AHEAD`] records after it,
//! which wait, unjudged, until it is decided.

use super::{category, encode_for_dump, hex_dump, RawRecord, RecordPosition, RecordReader, Step};
use super::MAX_BACKWARDS;
use crate::error::{bad, BadInputKind, ConvertError};
use crate::event::Location;
use crate::sink::Sink;
use std::io::Read;

/// How many records after a jump ahead in time decide it: a run of bad
/// timestamps shorter than half of this is told from an idle gap. Memory is
/// this many headers and payloads (at most 4 KiB each).
pub(super) const JUMP_LOOK_AHEAD: usize = 64;

impl Step {
    /// Whether nothing can be read after this step.
    fn ends_stream(&self) -> bool {
        matches!(
            self,
            Step::End | Step::Truncated { .. } | Step::Bad { resumable: false, .. }
        )
    }
}

impl<R: Read> RecordReader<R> {
    /// Decides on a jump ahead by the records after it: the jumping record
    /// when it is believed (the file's time moves to it), `None` when it was
    /// reported as bad and skipped.
    pub(super) fn settle_jump(
        &mut self,
        rec: RawRecord,
        pos: RecordPosition,
        sink: &mut dyn Sink,
    ) -> Result<Option<(RawRecord, RecordPosition)>, ConvertError> {
        let before = self.last_time.unwrap_or(0);
        while self.ahead.len() < JUMP_LOOK_AHEAD
            && !self.ahead.back().is_some_and(|(step, _)| step.ends_stream())
        {
            self.read_ahead()?;
        }
        // `a` is not before `b` by more than the tolerance.
        let reaches = |a: u64, b: u64| a.saturating_add(MAX_BACKWARDS.0) >= b;
        let (mut back, mut with) = (0usize, 0usize);
        for (step, _) in &self.ahead {
            let Step::Record(next, _) = step else {
                continue;
            };
            if next.categories() & category::NOTIFY != 0 {
                continue;
            }
            if reaches(next.time, rec.time) {
                with += 1;
            } else if reaches(next.time, before) {
                back += 1;
            }
        }
        if back <= with {
            // An idle gap: the records after it follow it, or there are none
            // to tell otherwise.
            self.last_time = Some(rec.time);
            return Ok(Some((rec, pos)));
        }
        let at = Location::record(&self.name, pos.index, pos.byte_offset);
        sink.bad_input(
            at,
            &hex_dump(&encode_for_dump(&rec)),
            &bad(BadInputKind::TimeOrder, format!(
                "time jumps ahead by {} ns (from {before} to {}) and {back} of the {} records \
                 after it are back before it: a bad timestamp",
                rec.time - before,
                rec.time,
                back + with
            )),
        )?;
        Ok(None)
    }

    /// Reads one more record into the look-ahead queue, keeping the payload
    /// of the record last returned in `pdu`.
    fn read_ahead(&mut self) -> Result<(), ConvertError> {
        let mut pdu = self.spare_pdus.pop().unwrap_or_default();
        std::mem::swap(&mut self.pdu, &mut pdu);
        let step = self.read_one();
        std::mem::swap(&mut self.pdu, &mut pdu);
        self.ahead.push_back((step?, pdu));
        Ok(())
    }
}
