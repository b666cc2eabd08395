//! The sink the parsing examples share.

use recorder::{BadReason, BlockEvent, ConvertError, Location, Sink, SourceIo};

/// Counts what the parser reports and nothing else.
#[derive(Default)]
pub struct Count {
    pub events: u64,
    pub notes: u64,
}

impl Sink for Count {
    fn event(&mut self, _: Location<'_>, _: BlockEvent) -> Result<(), ConvertError> {
        self.events += 1;
        Ok(())
    }
    fn io(&mut self, _: Location<'_>, _: SourceIo) -> Result<(), ConvertError> {
        Ok(())
    }
    fn bad_input(&mut self, at: Location<'_>, c: &str, r: &BadReason) -> Result<(), ConvertError> {
        Err(ConvertError::BadInput {
            location: at.to_string(),
            content: c.into(),
            reason: r.message.clone(),
            kind: r.kind,
        })
    }
    fn note(&mut self, _: &str) {
        self.notes += 1;
    }
}
