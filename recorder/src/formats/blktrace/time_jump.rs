//! A record far ahead of its file's times so far is an idle gap when the
//! next record follows it, and one bad timestamp when the next record is back
//! with the records before it. Believed at once, a bad one would make every
//! good record after it look like time going backwards (and stall its file in
//! the merge of a per-CPU set until every other file had passed it).

use super::{category, encode_for_dump, hex_dump, RawRecord, RecordPosition, RecordReader, Step};
use super::MAX_BACKWARDS;
use crate::error::ConvertError;
use crate::event::Location;
use crate::sink::Sink;
use std::io::Read;

impl<R: Read> RecordReader<R> {
    /// Decides on a jump ahead by reading the next record: the jumping record
    /// when it is believed (the next one waits in `pending`), `None` when it
    /// was reported as bad and skipped.
    pub(super) fn settle_jump(
        &mut self,
        rec: RawRecord,
        pos: RecordPosition,
        sink: &mut dyn Sink,
    ) -> Result<Option<(RawRecord, RecordPosition)>, ConvertError> {
        let before = self.last_time.unwrap_or(0);
        // Read ahead; the jumping record's payload stays in `pdu`.
        std::mem::swap(&mut self.pdu, &mut self.pending_pdu);
        let next = self.read_one()?;
        std::mem::swap(&mut self.pdu, &mut self.pending_pdu);
        let back_in_line = match &next {
            Step::Record(n, _) => n.categories() & category::NOTIFY == 0,
            _ => false,
        };
        if !back_in_line {
            // An idle gap: the next record follows it, or there is none to
            // tell otherwise.
            self.last_time = Some(rec.time);
            self.pending = Some(match next {
                // Judged again against the new time.
                Step::Jump(n, p) if n.time <= rec.time.saturating_add(MAX_BACKWARDS.0) => {
                    self.last_time = Some(n.time.max(rec.time));
                    Step::Record(n, p)
                }
                other => other,
            });
            return Ok(Some((rec, pos)));
        }
        let next_time = match &next {
            Step::Record(n, _) => n.time,
            _ => before,
        };
        // `pending` holds the next record, in line with the ones before.
        self.pending = Some(next);
        let at = Location::record(&self.name, pos.index, pos.byte_offset);
        sink.bad_input(
            at,
            &hex_dump(&encode_for_dump(&rec)),
            &format!(
                "time jumps ahead by {} ns (from {before} to {}) and the next record is back at \
                 {next_time}: a bad timestamp",
                rec.time - before,
                rec.time
            ),
        )?;
        Ok(None)
    }
}
