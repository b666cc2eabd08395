use crate::error::FormatError;
use crate::meta::{Summary, TraceHeader, TraceTail};
use crate::record::IoRecord;
use std::io::Write;

/// Writer settings.
#[derive(Debug, Clone, Copy)]
pub struct WriterOptions {
    pub chunk_records: u32,
    pub zstd_level: i32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            chunk_records: crate::DEFAULT_CHUNK_RECORDS,
            zstd_level: 9,
        }
    }
}

/// Streams records into a `.tmt` file; holds at most one chunk in memory.
pub struct TraceWriter<W: Write> {
    out: W,
    _opts: WriterOptions,
    summary: Summary,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the magic, version and header.
    pub fn new(out: W, header: &TraceHeader) -> Result<Self, FormatError> {
        Self::with_options(out, header, WriterOptions::default())
    }

    pub fn with_options(
        _out: W,
        _header: &TraceHeader,
        _opts: WriterOptions,
    ) -> Result<Self, FormatError> {
        todo!()
    }

    /// Appends a record. Records must come in non-decreasing time order.
    pub fn push(&mut self, _record: &IoRecord) -> Result<(), FormatError> {
        todo!()
    }

    /// Totals so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Flushes the last chunk and writes the footer; returns the output and the summary.
    pub fn finish(self, _tail: &TraceTail) -> Result<(W, Summary), FormatError> {
        let _ = &self.out;
        todo!()
    }
}
