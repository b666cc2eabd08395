//! Where records come from. The replayer streams them: a source is read once
//! to scan it and once per pass, never held in memory whole.

use crate::ReplayError;
use std::path::{Path, PathBuf};
use trace_format::{IoRecord, TraceFile};

pub type RecordIter<'a> = Box<dyn Iterator<Item = Result<IoRecord, ReplayError>> + 'a>;

/// A trace the replayer can play: a name and a way to stream its records.
pub trait TraceSource {
    fn name(&self) -> &str;
    /// The file it came from, if any (for the result file).
    fn path(&self) -> Option<&Path> {
        None
    }
    /// Every record, in time order, from the start.
    fn records(&self) -> RecordIter<'_>;
}

/// A `.tmt` trace file.
pub struct TmtSource {
    path: PathBuf,
    name: String,
    file: TraceFile,
}

impl TmtSource {
    pub fn open(path: impl AsRef<Path>) -> Result<TmtSource, ReplayError> {
        let path = path.as_ref().to_path_buf();
        let file = TraceFile::open(&path).map_err(|e| ReplayError::Trace {
            trace: path.display().to_string(),
            source: e,
        })?;
        let header_name = file.header().name.trim().to_string();
        let name = if header_name.is_empty() {
            path.file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| path.display().to_string())
        } else {
            header_name
        };
        Ok(TmtSource { path, name, file })
    }

    pub fn file(&self) -> &TraceFile {
        &self.file
    }
}

impl TraceSource for TmtSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn records(&self) -> RecordIter<'_> {
        let trace = self.path.display().to_string();
        Box::new(self.file.records().map(move |r| {
            r.map_err(|e| ReplayError::Trace {
                trace: trace.clone(),
                source: e,
            })
        }))
    }
}

/// Records in memory: for tests and for callers that synthesise workloads.
pub struct MemorySource {
    pub name: String,
    pub records: Vec<IoRecord>,
}

impl MemorySource {
    pub fn new(name: impl Into<String>, records: Vec<IoRecord>) -> MemorySource {
        MemorySource {
            name: name.into(),
            records,
        }
    }
}

impl TraceSource for MemorySource {
    fn name(&self) -> &str {
        &self.name
    }

    fn records(&self) -> RecordIter<'_> {
        Box::new(self.records.iter().copied().map(Ok))
    }
}
