//! Parser for the fio input format. See the crate docs for the contract.

use crate::error::ConvertError;
use crate::sink::Sink;
use std::io::BufRead;

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(_head: &[u8]) -> bool {
    false
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(_input: &mut dyn BufRead, _file: &str, _sink: &mut dyn Sink) -> Result<(), ConvertError> {
    Err(ConvertError::Usage("the fio parser is not written yet".into()))
}
