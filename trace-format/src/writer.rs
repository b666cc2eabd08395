use crate::codec::encode_chunk;
use crate::error::{FormatError, FormatErrorKind};
use crate::meta::{Summary, TraceHeader, TraceTail};
use crate::reader::{ChunkInfo, Footer};
use crate::record::IoRecord;
use crate::units::Nanos;
use crate::{frame, END_MAGIC, MAGIC, VERSION_MAJOR, VERSION_MINOR};
use std::io::Write;

/// Writer settings.
#[derive(Debug, Clone, Copy)]
pub struct WriterOptions {
    /// Records per chunk: the unit of compression, checksumming and seeking.
    pub chunk_records: u32,
    /// zstd level of the chunk payloads.
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
    opts: WriterOptions,
    /// Bytes written so far: the offset of the next chunk.
    position: u64,
    pending: Vec<IoRecord>,
    chunks: Vec<ChunkInfo>,
    summary: Summary,
    payload: Vec<u8>,
    /// One compression context for all chunks: creating one per chunk costs
    /// more than compressing a chunk at low levels. Output is the same.
    compressor: zstd::bulk::Compressor<'static>,
    last_time: Nanos,
    /// The highest device index pushed, checked against the table at the end.
    max_device: u16,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the magic, version and header.
    pub fn new(out: W, header: &TraceHeader) -> Result<Self, FormatError> {
        Self::with_options(out, header, WriterOptions::default())
    }

    pub fn with_options(
        mut out: W,
        header: &TraceHeader,
        opts: WriterOptions,
    ) -> Result<Self, FormatError> {
        let header_bytes = frame::encode_meta(header)?;
        let mut head = Vec::with_capacity(header_bytes.len() + 20);
        head.extend_from_slice(&MAGIC);
        head.extend_from_slice(&VERSION_MAJOR.to_le_bytes());
        head.extend_from_slice(&VERSION_MINOR.to_le_bytes());
        head.extend_from_slice(&(header_bytes.len() as u32).to_le_bytes());
        head.extend_from_slice(&header_bytes);
        let crc = crc32c::crc32c(&head);
        head.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&head)?;
        let chunk_records = opts.chunk_records.clamp(1, frame::MAX_CHUNK_RECORDS);
        let compressor = zstd::bulk::Compressor::new(opts.zstd_level)?;
        Ok(TraceWriter {
            out,
            opts: WriterOptions {
                chunk_records,
                ..opts
            },
            position: head.len() as u64,
            pending: Vec::with_capacity(chunk_records as usize),
            chunks: Vec::new(),
            summary: Summary::default(),
            payload: Vec::new(),
            compressor,
            last_time: Nanos::ZERO,
            max_device: 0,
        })
    }

    /// Appends a record. Records must come in non-decreasing time order and end
    /// at or below 2^63 bytes.
    pub fn push(&mut self, record: &IoRecord) -> Result<(), FormatError> {
        let index = self.summary.ios;
        if record.time < self.last_time {
            return Err(FormatError::BadRecord {
                index,
                kind: FormatErrorKind::RecordOutOfOrder,
                reason: format!(
                    "time {} is before the previous record's {}",
                    record.time, self.last_time
                ),
            });
        }
        if record.end().is_none_or(|e| e.0 > i64::MAX as u64) {
            return Err(FormatError::BadRecord {
                index,
                kind: FormatErrorKind::RecordBeyondRange,
                reason: format!(
                    "request at offset {} of {} bytes ends beyond 2^63",
                    record.offset.0, record.len.0
                ),
            });
        }
        self.last_time = record.time;
        self.max_device = self.max_device.max(record.device);
        self.summary.add(record);
        self.pending.push(*record);
        if self.pending.len() >= self.opts.chunk_records as usize {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Totals so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    fn flush_chunk(&mut self) -> Result<(), FormatError> {
        let (Some(first), Some(last)) = (self.pending.first(), self.pending.last()) else {
            return Ok(());
        };
        let (first_time, last_time) = (first.time, last.time);
        encode_chunk(&self.pending, first_time, &mut self.payload);
        let compressed = self.compressor.compress(&self.payload)?;
        let frame = frame::chunk_frame(
            self.pending.len() as u32,
            self.payload.len() as u32,
            first_time,
            &compressed,
        );
        self.out.write_all(&frame)?;
        self.chunks.push(ChunkInfo {
            offset: self.position,
            stored_len: frame.len() as u32,
            records: self.pending.len() as u32,
            first_time,
            last_time,
        });
        self.position += frame.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Flushes the last chunk and writes the task section (when
    /// `tail.task` holds anything), the calibration section (when
    /// `tail.calibration` is set), the task CPU section (when
    /// `tail.task.cpu` is), the footer and the trailer; returns the
    /// output and the summary.
    /// Fails if a record names a device beyond `tail.devices` (a trace
    /// without a device table may only use device 0).
    pub fn finish(mut self, tail: &TraceTail) -> Result<(W, Summary), FormatError> {
        let table = tail.devices.len();
        if usize::from(self.max_device) >= table.max(1) {
            return Err(FormatError::UnknownDevice {
                device: self.max_device,
                table,
            });
        }
        self.flush_chunk()?;
        let mut sections = Vec::new();
        if !tail.task.is_empty() {
            sections.push(crate::section::task_section(&tail.task)?);
        }
        if let Some(replays) = &tail.calibration {
            // What a reader would refuse is never written.
            if !tail.task.capture_drive.is_set() || replays.predictions.is_empty() {
                return Err(FormatError::Encode(
                    "a calibration section needs the task's capture drive prediction and at least one replay".into(),
                ));
            }
            sections.push(crate::section::calibration_section(replays)?);
        }
        if let Some(cpu) = &tail.task.cpu {
            if tail.task.end.is_none() {
                return Err(FormatError::Encode(
                    "a task CPU section needs the task's \"done\" mark".into(),
                ));
            }
            cpu.check().map_err(FormatError::Encode)?;
            sections.push(crate::section::task_cpu_section(cpu)?);
        }
        for section in sections {
            self.out.write_all(&section)?;
            self.position += section.len() as u64;
        }
        let footer = Footer {
            chunks: std::mem::take(&mut self.chunks),
            summary: self.summary.clone(),
            tail: tail.clone(),
        };
        let bytes = frame::encode_meta(&footer)?;
        let mut out = Vec::with_capacity(bytes.len() + 32);
        out.extend_from_slice(&frame::FOOTER_MAGIC);
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&bytes);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        // Trailer: where the footer starts, its length, a checksum of both, end magic.
        let mut trailer = Vec::with_capacity(frame::TRAILER_LEN);
        trailer.extend_from_slice(&self.position.to_le_bytes());
        trailer.extend_from_slice(&(out.len() as u32).to_le_bytes());
        trailer.extend_from_slice(&crc32c::crc32c(&trailer).to_le_bytes());
        trailer.extend_from_slice(&END_MAGIC);
        out.extend_from_slice(&trailer);
        self.out.write_all(&out)?;
        self.out.flush()?;
        Ok((self.out, self.summary))
    }
}
