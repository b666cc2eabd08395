//! A capture's per-CPU files: finding the members of a set, and merging
//! their records by time.

use super::{deliver, set_check, RawRecord, RecordPosition, RecordReader};
use crate::error::ConvertError;
use crate::event::Location;
use crate::sink::Sink;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

/// The files of a per-CPU set `PREFIX.blktrace.N`, in CPU order; empty when
/// there are none.
pub fn set_members(prefix: &Path) -> Result<Vec<PathBuf>, ConvertError> {
    let dir = match prefix.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(stem) = prefix.file_name().and_then(|s| s.to_str()) else {
        return Ok(Vec::new());
    };
    let wanted = format!("{stem}.blktrace.");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ConvertError::Io { path: dir, source }),
    };
    let mut members = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| ConvertError::Io {
            path: dir.clone(),
            source,
        })?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(cpu) = name.strip_prefix(&wanted) {
            if !cpu.is_empty() && cpu.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(n) = cpu.parse::<u64>() {
                    members.push((n, dir.join(name)));
                }
            }
        }
    }
    members.sort();
    Ok(members.into_iter().map(|(_, p)| p).collect())
}

/// The files named by the user: each path is a file, or the prefix `NAME` of a
/// set `NAME.blktrace.N`.
pub fn resolve_inputs(paths: &[&Path]) -> Result<Vec<PathBuf>, ConvertError> {
    let mut files = Vec::new();
    for &path in paths {
        if path.is_file() {
            files.push(path.to_path_buf());
            continue;
        }
        let members = set_members(path)?;
        if members.is_empty() {
            return Err(ConvertError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    ErrorKind::NotFound,
                    "no such file, and no per-CPU files NAME.blktrace.N with this prefix",
                ),
            });
        }
        files.extend(members);
    }
    Ok(files)
}

/// K-way merge of the readers by record time (ties: earlier reader first);
/// returns the number of records delivered.
pub(super) fn merge<R: Read>(
    readers: &mut [RecordReader<R>],
    sink: &mut dyn Sink,
) -> Result<u64, ConvertError> {
    let mut heads: Vec<Option<(RawRecord, RecordPosition)>> = Vec::with_capacity(readers.len());
    let mut queue = BinaryHeap::with_capacity(readers.len());
    for (i, reader) in readers.iter_mut().enumerate() {
        let head = reader.next_record(sink)?;
        if let Some((rec, _)) = &head {
            queue.push(Reverse((rec.time, i)));
        }
        heads.push(head);
    }
    let mut delivered = 0u64;
    let names: Vec<String> = readers.iter().map(|r| r.name().to_string()).collect();
    let name = |i: usize| names.get(i).cloned().unwrap_or_default();
    let mut check = set_check::SetCheck::new(readers.len());
    let several = readers.len() > 1;
    while let Some(Reverse((_, i))) = queue.pop() {
        let (Some(reader), Some(slot)) = (readers.get_mut(i), heads.get_mut(i)) else {
            continue;
        };
        if let Some((rec, pos)) = slot.take() {
            if several {
                if let Some(warning) = check.record(i, &rec, reader.pdu(), &name)? {
                    sink.warning(warning);
                }
            }
            let at = Location::record(reader.name(), pos.index, pos.byte_offset);
            deliver(&rec, reader.pdu(), at, sink)?;
            delivered += 1;
        }
        let next = reader.next_record(sink)?;
        match &next {
            Some((rec, _)) => queue.push(Reverse((rec.time, i))),
            None => check.ended(i),
        }
        *slot = next;
    }
    Ok(delivered)
}

