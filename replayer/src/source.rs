//! Where records come from. The replayer streams them: a source is read once
//! to scan it and once per pass, never held in memory whole.

use crate::ReplayError;
use std::path::{Path, PathBuf};
use trace_format::{IoRecord, TraceFile};

pub type RecordIter<'a> = Box<dyn Iterator<Item = Result<IoRecord, ReplayError>> + 'a>;

/// A trace the replayer can play: a name and a way to stream its records.
pub trait TraceSource: Sync {
    fn name(&self) -> &str;
    /// The file it came from, if any (for the result file).
    fn path(&self) -> Option<&Path> {
        None
    }
    /// Every record, in time order, from the start.
    fn records(&self) -> RecordIter<'_>;
    /// The trace's device table (`IoRecord::device` indexes it), for
    /// `--device-map MAJ:MIN=...`; empty when unknown.
    fn devices(&self) -> Vec<trace_format::DeviceId> {
        Vec::new()
    }
    /// Where the captured task starts and ends, from the trace's notes.
    fn task_marks(&self) -> crate::prediction::TaskMarks {
        crate::prediction::TaskMarks::default()
    }
    /// The replays the trace's calibration was made from, where it records
    /// them.
    fn calibration(&self) -> Option<trace_format::CalibrationReplays> {
        None
    }
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

    fn devices(&self) -> Vec<trace_format::DeviceId> {
        self.file
            .footer()
            .tail
            .devices
            .iter()
            .map(|d| d.id)
            .collect()
    }

    fn task_marks(&self) -> crate::prediction::TaskMarks {
        self.file.footer().tail.task
    }

    fn calibration(&self) -> Option<trace_format::CalibrationReplays> {
        self.file.footer().tail.calibration.clone()
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

/// Records per batch handed from the decoder thread to the engine.
const PREFETCH_BATCH: usize = 4096;
/// Batches the decoder may run ahead.
const PREFETCH_DEPTH: usize = 8;

enum Batch {
    Records(Vec<IoRecord>),
    Failed(ReplayError),
}

/// The engine's side of a prefetching reader: an iterator over batches that a
/// decoder thread fills. Batch vectors go back to the decoder for reuse, so
/// the steady state allocates nothing.
pub struct Prefetched {
    rx: std::sync::mpsc::Receiver<Batch>,
    recycle: std::sync::mpsc::SyncSender<Vec<IoRecord>>,
    current: Vec<IoRecord>,
    pos: usize,
    finished: bool,
}

impl Iterator for Prefetched {
    type Item = Result<IoRecord, ReplayError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.current.get(self.pos) {
                self.pos += 1;
                return Some(Ok(*r));
            }
            if self.finished {
                return None;
            }
            match self.rx.recv() {
                Ok(Batch::Records(v)) => {
                    let old = std::mem::replace(&mut self.current, v);
                    let _ = self.recycle.try_send(old);
                    self.pos = 0;
                }
                Ok(Batch::Failed(e)) => {
                    self.finished = true;
                    return Some(Err(e));
                }
                Err(_) => {
                    self.finished = true;
                    return None;
                }
            }
        }
    }
}

/// Splits reading `source` into an iterator for the engine and a closure to
/// run on a decoder thread (it ends when the records do or the iterator is
/// dropped).
pub fn prefetch(source: &dyn TraceSource) -> (Prefetched, impl FnOnce() + Send + '_) {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(PREFETCH_DEPTH);
    let (recycle, reuse) = std::sync::mpsc::sync_channel::<Vec<IoRecord>>(PREFETCH_DEPTH + 2);
    let producer = move || {
        let mut records = source.records();
        loop {
            let mut batch = reuse
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(PREFETCH_BATCH));
            batch.clear();
            let mut failure = None;
            while batch.len() < PREFETCH_BATCH {
                match records.next() {
                    Some(Ok(r)) => batch.push(r),
                    Some(Err(e)) => {
                        failure = Some(e);
                        break;
                    }
                    None => break,
                }
            }
            let end = batch.len() < PREFETCH_BATCH;
            if !batch.is_empty() && tx.send(Batch::Records(batch)).is_err() {
                return;
            }
            if let Some(e) = failure {
                let _ = tx.send(Batch::Failed(e));
                return;
            }
            if end {
                return;
            }
        }
    };
    (
        Prefetched {
            rx,
            recycle,
            current: Vec::new(),
            pos: 0,
            finished: false,
        },
        producer,
    )
}
