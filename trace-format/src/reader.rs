use crate::error::FormatError;
use crate::meta::{Summary, TraceHeader, TraceTail};
use crate::record::IoRecord;
use crate::units::Nanos;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;

/// Where a chunk is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkInfo {
    /// Byte offset of the chunk in the file.
    pub offset: u64,
    /// Bytes the chunk takes in the file, its frame included.
    pub stored_len: u32,
    pub records: u32,
    pub first_time: Nanos,
    pub last_time: Nanos,
}

/// The footer: chunk index, summary and tail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    pub chunks: Vec<ChunkInfo>,
    pub summary: Summary,
    pub tail: TraceTail,
}

/// A `.tmt` file opened through a memory map. Opening checks the header and the
/// footer; records are decoded (and their chunks checked) as they are read.
pub struct TraceFile {
    header: TraceHeader,
    footer: Footer,
}

impl TraceFile {
    pub fn open(_path: impl AsRef<Path>) -> Result<TraceFile, FormatError> {
        todo!()
    }

    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    pub fn summary(&self) -> &Summary {
        &self.footer.summary
    }

    /// All records, one chunk in memory at a time.
    pub fn records(&self) -> Records<'_> {
        todo!()
    }

    /// Decodes every chunk, checking every checksum.
    pub fn verify(&self) -> Result<(), FormatError> {
        todo!()
    }
}

/// Iterator over a trace's records; yields an error (once) for a corrupt chunk.
pub struct Records<'a> {
    _file: &'a TraceFile,
}

impl Iterator for Records<'_> {
    type Item = Result<IoRecord, FormatError>;
    fn next(&mut self) -> Option<Self::Item> {
        todo!()
    }
}

/// Reads a `.tmt` from any `Read` in one pass (a pipe, for instance). The
/// footer is available once every record has been read.
pub struct TraceReader<R: Read> {
    _input: R,
    header: TraceHeader,
}

impl<R: Read> TraceReader<R> {
    pub fn new(_input: R) -> Result<Self, FormatError> {
        todo!()
    }

    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The footer, after `next` has returned `None`.
    pub fn footer(&self) -> Option<&Footer> {
        todo!()
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<IoRecord, FormatError>;
    fn next(&mut self) -> Option<Self::Item> {
        todo!()
    }
}
