//! Parser for blktrace binary files: per-CPU sets `NAME.blktrace.N` (merged by
//! time), `blkparse -d` dumps, and the ftrace `blk` tracer's binary output.
//!
//! A file is a sequence of `struct blk_io_trace` records, each followed by
//! `pdu_len` bytes of payload. Two record layouts exist (see the kernel's
//! `include/uapi/linux/blktrace_api.h`):
//!
//! | version | size | layout after `magic, sequence: u32; time, sector: u64; bytes: u32` |
//! |---------|------|--------------------------------------------------------------------|
//! | 7       | 48   | `action: u32, pid, device, cpu: u32, error, pdu_len: u16`           |
//! | 8       | 64   | `pid: u32, action: u64, device, cpu: u32, error, pdu_len: u16, pad[12]` |
//!
//! Records are in the byte order of the machine that captured them; the magic
//! (`0x65617400 | version`) tells which. The action's low 16 bits are the action
//! code, the bits above are category flags (read, write, sync, ...).


mod deliver;
mod reader;
mod record;
mod set;
mod set_check;
mod time_jump;
#[cfg(test)]
mod tests;

pub use deliver::*;
pub use reader::*;
pub use record::*;
pub use set::*;

use crate::error::ConvertError;
use crate::event::Location;
use crate::formats::{FormatSpec, Reader};
use crate::sink::Sink;
use std::io::{BufReader, Read};
use std::path::Path;

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "blktrace",
    aliases: &[],
    about: "blktrace binary: NAME.blktrace.N per-CPU sets (give NAME or the files), blkparse -d dumps",
    looks_like,
    reader: Reader::FileSet {
        parse: parse_files,
        members: set_members,
    },
    example: "",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like
/// blktrace binary: a record magic of version 7 or 8 in either byte order, and,
/// when the whole header is there, a sane payload length.
pub fn looks_like(head: &[u8]) -> bool {
    let Some(first) = head.get(..4).and_then(|s| <[u8; 4]>::try_from(s).ok()) else {
        return false;
    };
    let Some((_, version)) = magic_of(first) else {
        return false;
    };
    match decode_header(head) {
        Some(rec) => rec.pdu_len <= MAX_PDU_LEN,
        None => header_len(version).is_some_and(|len| head.len() < len),
    }
}

/// Parses one stream of records (a single file, a `blkparse -d` dump, or live
/// ftrace output) in stream order, reporting to `sink`. Returns the number of
/// records read. Live capture reuses this with [`Framing::FtraceBin`].
pub fn parse_reader<R: Read>(
    reader: R,
    name: &str,
    framing: Framing,
    sink: &mut dyn Sink,
) -> Result<u64, ConvertError> {
    let mut records = RecordReader::new(reader, name, framing);
    let mut count = 0;
    while let Some((rec, pos)) = records.next_record(sink)? {
        count += 1;
        let at = Location::record(name, pos.index, pos.byte_offset);
        deliver(&rec, records.pdu(), at, sink)?;
    }
    Ok(count)
}

/// Parses the files of one capture (the per-CPU files `NAME.blktrace.N` of a set,
/// merged by time, or a single dump), reporting to `sink` in time order. A path
/// may also be the set's prefix `NAME`. Memory holds one record per file.
pub fn parse_files(paths: &[&Path], sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let files = resolve_inputs(paths)?;
    for warning in set_check::numbering_gaps(&files) {
        sink.warning(warning);
    }
    let mut readers = Vec::with_capacity(files.len());
    for path in &files {
        let (_, file) = crate::decompress::open(path)?;
        readers.push(RecordReader::new(
            BufReader::with_capacity(64 * 1024, file),
            path.display().to_string(),
            Framing::Blktrace,
        ));
    }
    let total = merge(&mut readers, sink)?;
    if total == 0 {
        let first = files
            .first()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let what = if files.len() > 1 {
            format!(
                "{first} (and the other {} files of the set)",
                files.len() - 1
            )
        } else {
            first
        };
        return Err(ConvertError::Invalid {
            location: Location::record(&what, 0, 0).to_string(),
            reason: "no blktrace records: the input is empty".into(),
        });
    }
    Ok(())
}

