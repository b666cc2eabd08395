//! The interface between a parser and the rest of the recorder.

use crate::error::ConvertError;
use crate::event::{BlockEvent, Location, SourceIo};
use trace_format::{Bytes, DeviceId};

/// Receives what a parser finds, in input order. Parsers know nothing of
/// normalisation, filtering or output; they call these and stop at the first
/// `Err` they get back.
pub trait Sink {
    /// A block-layer event.
    fn event(&mut self, at: Location<'_>, event: BlockEvent) -> Result<(), ConvertError>;

    /// A remap event (blkparse `A`, tracefs `block_bio_remap`): `event` is on the
    /// destination device; `from` and `from_offset` say where the bio came from,
    /// so the normaliser can avoid counting it on both devices. Parsers that do
    /// not know the source may report a remap through `event` instead.
    fn remap(
        &mut self,
        at: Location<'_>,
        event: BlockEvent,
        _from: DeviceId,
        _from_offset: Bytes,
    ) -> Result<(), ConvertError> {
        self.event(at, event)
    }

    /// A whole request.
    fn io(&mut self, at: Location<'_>, io: SourceIo) -> Result<(), ConvertError>;

    /// A line or record that could not be parsed. Returns `Err` (stop) unless the
    /// user asked to skip bad input, in which case it is counted and the parser
    /// goes on. `content` is the offending text (lossily decoded, shortened by the
    /// sink) or a hex dump of a binary record.
    fn bad_input(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &str,
    ) -> Result<(), ConvertError>;

    /// Something in the input that is understood but is no I/O (a notify record,
    /// a scheduler message, the blkparse summary): counted under `key` for `info`.
    fn note(&mut self, key: &str);

    /// The wall-clock time (ns since the Unix epoch) of source time zero, when the
    /// source tells it (blktrace notify records).
    fn wall_clock(&mut self, _unix_ns_at_source_zero: i64) {}
}
