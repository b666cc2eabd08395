//! Windows ETW log files (`.etl`), as Windows Performance Recorder (`wpr`),
//! `xperf` and relogging tools (PerfView, `tracerpt`) write them, read
//! directly: the disk requests of the kernel's DiskIo events.
//!
//! - `container`: the buffers (`WMI_BUFFER_HEADER`), compressed ones
//!   expanded, and the log file header with the clock;
//! - `xca`: the [MS-XCA] Plain LZ77 decompressor of compressed logs;
//! - `header`: the event header kinds (system, compact, perfinfo, full trace
//!   and event headers; 32- and 64-bit);
//! - `kernel`: DiskIo, SystemConfig disk and lost-event decoding, and the
//!   pairing of Init events with completions;
//! - `merge`: the per-CPU buffers put back in time order, streaming.
//!
//! Each Read/Write/FlushBuffers completion becomes one request: DiskNumber
//! is the device (`0:N`, as the xperf text form has it), ByteOffset and
//! TransferSize the extent, the issue time that of the ReadInit/WriteInit/
//! FlushInit event with the same IRP where the log has one (else completion
//! minus the response time), the latency the response time, the process that
//! of the Init event (else of the completion's header). IRP flags: a
//! synchronous API or synchronous paging request is marked `SYNC`; paging
//! I/O is counted in the notes. DiskIo's IRP flags carry no write-through or
//! FUA bit (those are in the I/O stack location, which the kernel does not
//! log), so no record is marked `FUA`.

mod container;
mod header;
mod kernel;
mod merge;
pub mod xca;
pub mod zip;

pub mod synth;

use crate::error::{bad, BadInputKind, ConvertError};
use crate::event::{Location, SourceIo};
use crate::formats::{FormatSpec, Reader};
use crate::sink::Sink;
use container::{
    Buffer, BufferReader, ContainerError, LogFileHeader, BUFFER_HEADER, COMPRESSED_MODE,
    FLAG_BUFFER_LOST, FLAG_EVENTS_LOST,
};
pub use container::expand;
use header::{read_event, Found, HeaderKind};
use kernel::{decode, Kernel, Pairing};
use merge::Merger;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Flags, Nanos};

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "etw-etl",
    aliases: &["etl", "wpr"],
    about: "Windows ETW log files (.etl from wpr, xperf, PerfView; compressed or not): DiskIo events",
    looks_like,
    reader: Reader::Text(parse),
    example: synth::EXAMPLE,
};

/// Whether `head` starts like an ETW log file: a buffer header whose sizes
/// are sane, then the log file header event (the kernel's header hook, or
/// the EventTrace provider's type 0).
pub fn looks_like(head: &[u8]) -> bool {
    let Some(raw) = head.get(..BUFFER_HEADER) else {
        return false;
    };
    let size = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize;
    let saved = u32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]) as usize;
    if !(BUFFER_HEADER + 8..=container::MAX_BUFFER).contains(&size) || saved > size || saved < BUFFER_HEADER + 8 {
        return false;
    }
    let end = saved.min(head.len());
    matches!(
        read_event(head, BUFFER_HEADER, end),
        Ok(Found::Event { event, .. })
            if event.kind != HeaderKind::Other && container::is_log_header(event.origin, event.opcode)
    )
}

fn container_error(file: &str, e: ContainerError) -> ConvertError {
    ConvertError::Invalid {
        location: file.to_string(),
        reason: e.to_string(),
    }
}

/// Up to 32 bytes at `at` of `bytes`, as hex, for a bad-input message.
fn hex_at(bytes: &[u8], at: usize) -> String {
    let end = (at + 32).min(bytes.len());
    bytes
        .get(at..end)
        .unwrap_or(&[])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads a log file from `input` (`file` names it) into `sink`.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let mut reader = BufferReader::new(input);
    let mut buffer = Buffer::empty();
    if !reader.next_buffer(&mut buffer).map_err(|e| container_error(file, e))? {
        return Err(ConvertError::Invalid {
            location: file.to_string(),
            reason: "the log file is empty".into(),
        });
    }
    let log = buffer.log_header().map_err(|e| container_error(file, e))?;
    reader.set_compressed_mode(log.log_file_mode & COMPRESSED_MODE != 0);
    if log.events_lost > 0 || log.buffers_lost > 0 {
        sink.warning(format!(
            "{file}: Windows lost {} events and {} buffers while recording (the log file header says so); their requests are missing",
            log.events_lost, log.buffers_lost
        ));
    }
    let mut reading = Reading {
        file,
        log,
        merger: Merger::new(merge::MAX_HELD),
        pairing: Pairing::default(),
        kept: Vec::new(),
    };
    reading.merger.expect_cpus(log.cpus);
    loop {
        reading.buffer(&buffer, sink)?;
        reading.release(sink, false)?;
        if !reader.next_buffer(&mut buffer).map_err(|e| container_error(file, e))? {
            break;
        }
    }
    reading.release(sink, true)?;
    for _ in 0..reading.pairing.unpaired_inits + reading.pairing.in_flight() as u64 {
        sink.note("etl DiskIo init without completion");
    }
    Ok(())
}

/// The state of one log's reading.
struct Reading<'f> {
    file: &'f str,
    log: LogFileHeader,
    merger: Merger<(container::BufferPos, Kernel)>,
    pairing: Pairing,
    /// One buffer's kept events (reused).
    kept: Vec<(u64, (container::BufferPos, Kernel))>,
}

impl Reading<'_> {
    /// Decodes one buffer's events into the merge.
    fn buffer(&mut self, buffer: &Buffer, sink: &mut dyn Sink) -> Result<(), ConvertError> {
        if buffer.header.flags & FLAG_EVENTS_LOST != 0 {
            sink.note("etl buffer marked as having lost events");
        }
        if buffer.header.flags & FLAG_BUFFER_LOST != 0 {
            sink.note("etl buffer marked as lost");
        }
        let bytes = &buffer.bytes;
        let mut at = BUFFER_HEADER;
        let mut last_time = None;
        self.kept.clear();
        loop {
            let event = match read_event(bytes, at, bytes.len()) {
                Ok(Found::End) => break,
                Ok(Found::Event { event, next }) => {
                    let here = at;
                    at = next;
                    if event.kind == HeaderKind::Other {
                        sink.note("etl other event");
                        continue;
                    }
                    (here, event)
                }
                Err(e) => {
                    let reason = bad(
                        BadInputKind::Corrupt,
                        format!(
                            "buffer {}, byte {} of the buffer: {}; the rest of the buffer is skipped",
                            buffer.pos.index, at, e.0
                        ),
                    );
                    let loc = Location::record(self.file, buffer.pos.index, buffer.pos.file_offset);
                    sink.bad_input(loc, &hex_at(bytes, at), &reason)?;
                    break;
                }
            };
            let (here, event) = event;
            last_time = Some(last_time.map_or(event.time, |t: u64| t.max(event.time)));
            // The log file header event itself.
            if buffer.pos.index == 0 && here == BUFFER_HEADER {
                continue;
            }
            match decode(&event) {
                Ok(Kernel::Other(key)) => sink.note(key),
                Ok(Kernel::Lost(key)) => sink.note(key),
                Ok(k) => {
                    self.kept.push((event.time, (buffer.pos, k)));
                }
                Err(e) => {
                    let reason = bad(
                        BadInputKind::Truncated,
                        format!(
                            "buffer {}, byte {} of the buffer: {}",
                            buffer.pos.index, here, e.0
                        ),
                    );
                    let loc = Location::record(self.file, buffer.pos.index, buffer.pos.file_offset);
                    sink.bad_input(loc, &hex_at(bytes, here), &reason)?;
                }
            }
        }
        self.merger
            .push_buffer(buffer.header.cpu, self.kept.drain(..), last_time);
        Ok(())
    }

    /// Hands the events the merge releases to the pairing and the sink.
    fn release(&mut self, sink: &mut dyn Sink, drain: bool) -> Result<(), ConvertError> {
        while let Some((time, (pos, k))) = self.merger.pop(drain) {
            match k {
                Kernel::Init { irp, process, name } => {
                    sink.note(name);
                    self.pairing.init(irp, time, process);
                }
                Kernel::Complete(c) => {
                    let r = self.pairing.complete(c, time);
                    let flags = c.irp_flags;
                    if flags & kernel::IRP_PAGING_IO != 0 {
                        sink.note("etl paging io");
                    }
                    if !r.from_init {
                        sink.note("etl io without init event (issue time = completion - response time)");
                    }
                    let sync = flags & kernel::IRP_SYNCHRONOUS_API != 0
                        || (flags & kernel::IRP_PAGING_IO != 0
                            && flags & kernel::IRP_SYNCHRONOUS_PAGING_IO != 0);
                    let issued = self.log.nanos(r.issued);
                    let latency = c
                        .elapsed
                        .map(|e| self.log.nanos(e))
                        .unwrap_or_else(|| self.log.nanos(r.completed).saturating_sub(issued));
                    let io = SourceIo {
                        time: Nanos(issued),
                        device: DeviceId {
                            major: 0,
                            minor: c.disk,
                        },
                        op: c.op,
                        flags: if sync { Flags::SYNC } else { Flags::NONE },
                        offset: Bytes(c.offset),
                        len: Bytes(u64::from(c.size)),
                        latency: Some(Nanos(latency)),
                        pid: r.process,
                    };
                    sink.io(Location::record(self.file, pos.index, pos.file_offset), io)?;
                }
                Kernel::Disk(note) => sink.note(&note),
                Kernel::Lost(key) | Kernel::Other(key) => sink.note(key),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod conformance;
#[cfg(test)]
mod tests;
