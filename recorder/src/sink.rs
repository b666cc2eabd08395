//! The interface between a parser and the rest of the recorder.

use crate::error::{BadInputKind, BadReason, ConvertError};
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
        reason: &BadReason,
    ) -> Result<(), ConvertError>;

    /// Something in the input that is understood but is no I/O (a notify record,
    /// a scheduler message, the blkparse summary): counted under `key` for `info`.
    fn note(&mut self, key: &str);

    /// The wall-clock time (ns since the Unix epoch) of source time zero, when the
    /// source tells it (blktrace notify records).
    fn wall_clock(&mut self, _unix_ns_at_source_zero: i64) {}

    /// Something the user must be told about the input as a whole (inputs
    /// that may not be one capture); the conversion goes on.
    fn warning(&mut self, _message: String) {}
}

/// A line or record a parser could not read, as a [`Collector`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput {
    /// Where (`FILE:LINE`, `FILE: record N, byte B`).
    pub location: String,
    pub content: String,
    pub reason: String,
    pub kind: BadInputKind,
}

/// Keeps everything a parser reports, in order: for tests and tools that look
/// at a parser's own output (a conversion hands it to the normaliser instead).
#[derive(Debug, Default)]
pub struct Collector {
    pub events: Vec<BlockEvent>,
    pub ios: Vec<SourceIo>,
    pub bad: Vec<BadInput>,
    /// Count per note key.
    pub notes: std::collections::BTreeMap<String, u64>,
    pub wall_clock: Option<i64>,
    pub warnings: Vec<String>,
    /// Whether bad input is skipped (as with `--skip-bad`) or stops the parser.
    pub skip_bad: bool,
}

impl Collector {
    /// A collector that skips bad input (and keeps it in `bad`).
    pub fn skipping_bad_input() -> Collector {
        Collector {
            skip_bad: true,
            ..Default::default()
        }
    }
}

impl Sink for Collector {
    fn event(&mut self, _at: Location<'_>, event: BlockEvent) -> Result<(), ConvertError> {
        self.events.push(event);
        Ok(())
    }

    fn io(&mut self, _at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
        self.ios.push(io);
        Ok(())
    }

    fn bad_input(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &BadReason,
    ) -> Result<(), ConvertError> {
        self.bad.push(BadInput {
            location: at.to_string(),
            content: content.to_string(),
            reason: reason.message.clone(),
            kind: reason.kind,
        });
        if self.skip_bad {
            Ok(())
        } else {
            Err(ConvertError::bad_input(&at, content.to_string(), reason))
        }
    }

    fn note(&mut self, key: &str) {
        *self.notes.entry(key.to_string()).or_default() += 1;
    }

    fn wall_clock(&mut self, unix_ns_at_source_zero: i64) {
        self.wall_clock = Some(unix_ns_at_source_zero);
    }

    fn warning(&mut self, message: String) {
        self.warnings.push(message);
    }
}
