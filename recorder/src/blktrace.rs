//! Parser for blktrace binary files (per-CPU sets and `blkparse -d` dumps).

use crate::error::ConvertError;
use crate::sink::Sink;
use std::path::Path;

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like blktrace binary.
pub fn looks_like(_head: &[u8]) -> bool {
    false
}

/// Parses the files of one capture (the per-CPU files `NAME.blktrace.N` of a set,
/// merged by time, or a single dump), reporting to `sink` in time order.
pub fn parse_files(_paths: &[&Path], _sink: &mut dyn Sink) -> Result<(), ConvertError> {
    Err(ConvertError::Usage("the blktrace parser is not written yet".into()))
}
