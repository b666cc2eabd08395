//! The log file container: a sequence of buffers, each a `WMI_BUFFER_HEADER`
//! (72 bytes) and the events one CPU logged into it, and the log file header
//! (`TRACE_LOGFILE_HEADER`) that the first buffer's first event carries.
//!
//! A buffer header starts with its size in the file and its saved offset
//! (the end of its events, header included). In a log written in compressed
//! mode (log file mode bit `0x04000000`, Windows 8 and later), a buffer whose
//! size in the file is below its saved offset holds its events compressed
//! with [MS-XCA] Plain LZ77; they expand to exactly `saved - 72` bytes. Other
//! buffers hold their events as they are, followed by padding up to their
//! size.

use super::header::{read_event, Found, Guid, Origin, PointerSize};
use super::xca;
use std::io::{ErrorKind, Read};

/// Bytes of a `WMI_BUFFER_HEADER`.
pub const BUFFER_HEADER: usize = 72;

/// The largest buffer read. ETW's buffers are at most 1 MiB (16 MiB on the
/// newest systems); a larger size is a corrupt header, and refusing it
/// bounds memory.
pub const MAX_BUFFER: usize = 16 << 20;

/// `EVENT_TRACE_COMPRESSED_MODE`.
pub const COMPRESSED_MODE: u32 = 0x0400_0000;

/// The provider of the log file header and of the session's own events.
pub const EVENT_TRACE_GUID: Guid = Guid::new(
    0x68fd_d900,
    0x4a3e,
    0x11d1,
    [0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3],
);

/// Where a buffer is: its index in the file and its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferPos {
    pub index: u64,
    pub file_offset: u64,
}

/// A container or header error, with the buffer and the byte it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerError {
    pub pos: BufferPos,
    /// Byte within the buffer (its decompressed contents when compressed).
    pub byte: u64,
    pub message: String,
}

impl std::fmt::Display for ContainerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "buffer {} (file byte {}), byte {} of the buffer: {}",
            self.pos.index, self.pos.file_offset, self.byte, self.message
        )
    }
}

/// The fields of a buffer header the reader uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferHeader {
    /// Bytes the buffer takes in the file.
    pub size: u32,
    /// End of its events, header included (decompressed).
    pub saved: u32,
    /// The CPU whose events it holds.
    pub cpu: u16,
    pub flags: u16,
}

/// `ETW_BUFFER_FLAG_EVENTS_LOST`, `ETW_BUFFER_FLAG_BUFFER_LOST`.
pub const FLAG_EVENTS_LOST: u16 = 0x0002;
pub const FLAG_BUFFER_LOST: u16 = 0x0004;

impl BufferHeader {
    pub fn parse(b: &[u8; BUFFER_HEADER]) -> BufferHeader {
        let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        // ETW_BUFFER_CONTEXT: processor number (one byte, or two on systems
        // with more than 256 CPUs, where the alignment byte is the high one).
        let cpu = u16::from_le_bytes([b[0x28], b[0x29]]);
        BufferHeader {
            size: u32_at(0),
            saved: u32_at(4),
            cpu,
            flags: u16::from_le_bytes([b[0x34], b[0x35]]),
        }
    }
}

/// The clock the events' times count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockType {
    /// `QueryPerformanceCounter` ticks at the header's frequency.
    Qpc,
    /// System time, 100 ns units.
    SystemTime,
    /// CPU cycles at the header's CPU speed.
    CpuCycles,
}

/// The log file header fields the reader uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogFileHeader {
    pub buffer_size: u32,
    pub cpus: u32,
    pub log_file_mode: u32,
    pub buffers_written: u32,
    pub pointer: PointerSize,
    pub events_lost: u32,
    pub buffers_lost: u32,
    pub cpu_mhz: u32,
    pub perf_freq: u64,
    pub clock: ClockType,
    /// Ticks per second of the clock.
    pub ticks_per_second: u64,
}

impl LogFileHeader {
    /// Ticks of the log's clock as nanoseconds.
    pub fn nanos(&self, ticks: u64) -> u64 {
        let ns = u128::from(ticks) * 1_000_000_000 / u128::from(self.ticks_per_second);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// Reads the header from `data` (the event data of the log file header
    /// event) logged by a system of `pointer` size.
    pub fn parse(data: &[u8], pointer: PointerSize) -> Result<LogFileHeader, String> {
        let p = pointer.bytes();
        // After the two name pointers: TIME_ZONE_INFORMATION (172 bytes),
        // then 8-byte aligned BootTime, PerfFreq, StartTime, ReservedFlags
        // (the clock type) and BuffersLost.
        let tz_end = 56 + 2 * p + 172;
        let boot = tz_end.div_ceil(8) * 8;
        let need = boot + 32;
        if data.len() < need {
            return Err(format!(
                "the log file header is {} bytes, {need} are needed",
                data.len()
            ));
        }
        let u32_at = |at: usize| u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
        let u64_at = |at: usize| u64::from(u32_at(at)) | (u64::from(u32_at(at + 4)) << 32);
        let perf_freq = u64_at(boot + 8);
        let cpu_mhz = u32_at(52);
        let clock_flag = u32_at(boot + 24);
        let (clock, ticks_per_second) = match clock_flag {
            1 => (ClockType::Qpc, perf_freq),
            2 => (ClockType::SystemTime, 10_000_000),
            3 => (ClockType::CpuCycles, u64::from(cpu_mhz) * 1_000_000),
            other => {
                return Err(format!(
                    "unknown clock type {other} in the log file header (1 QPC, 2 system time, 3 CPU cycles)"
                ))
            }
        };
        if ticks_per_second == 0 {
            return Err(format!("the log's {clock:?} clock has a frequency of 0"));
        }
        let header_pointer = u32_at(44);
        if header_pointer != 0 && header_pointer as usize != p {
            return Err(format!(
                "the log file header says {header_pointer}-byte pointers, its event header {p}"
            ));
        }
        Ok(LogFileHeader {
            buffer_size: u32_at(0),
            cpus: u32_at(12),
            log_file_mode: u32_at(32),
            buffers_written: u32_at(36),
            pointer,
            events_lost: u32_at(48),
            buffers_lost: u32_at(boot + 28),
            cpu_mhz,
            perf_freq,
            clock,
            ticks_per_second,
        })
    }
}

/// Whether an event is the log file header: the first event of a log, from
/// the kernel's header hook (0) or the EventTrace provider's type 0.
pub fn is_log_header(origin: Origin, opcode: u8) -> bool {
    match origin {
        Origin::Hook(h) => h == 0,
        Origin::Provider(g) => g == EVENT_TRACE_GUID && opcode == 0,
    }
}

/// One buffer's events, decompressed where needed.
pub struct Buffer {
    pub pos: BufferPos,
    pub header: BufferHeader,
    /// The whole buffer as it was in memory: header, then events up to
    /// `saved` (padding after it is dropped).
    pub bytes: Vec<u8>,
}

/// Reads the buffers of a log file one after the other from a stream.
pub struct BufferReader<R> {
    input: R,
    offset: u64,
    index: u64,
    compressed_mode: bool,
    stored: Vec<u8>,
}

impl<R: Read> BufferReader<R> {
    pub fn new(input: R) -> Self {
        BufferReader {
            input,
            offset: 0,
            index: 0,
            compressed_mode: false,
            stored: Vec::new(),
        }
    }

    /// Whether later buffers may be compressed (from the log file header).
    pub fn set_compressed_mode(&mut self, on: bool) {
        self.compressed_mode = on;
    }

    /// Reads the next buffer into `out`; `Ok(false)` at the end of the file.
    pub fn next_buffer(&mut self, out: &mut Buffer) -> Result<bool, ContainerError> {
        let pos = BufferPos {
            index: self.index,
            file_offset: self.offset,
        };
        let err = |byte: u64, message: String| ContainerError { pos, byte, message };
        let mut raw = [0u8; BUFFER_HEADER];
        let got = read_full(&mut self.input, &mut raw).map_err(|e| err(0, e.to_string()))?;
        if got == 0 {
            return Ok(false);
        }
        if got < BUFFER_HEADER {
            return Err(err(
                got as u64,
                format!("the file ends inside a buffer header ({got} of {BUFFER_HEADER} bytes)"),
            ));
        }
        let header = BufferHeader::parse(&raw);
        let size = header.size as usize;
        let saved = header.saved as usize;
        if !(BUFFER_HEADER..=MAX_BUFFER).contains(&size) {
            return Err(err(
                0,
                format!("buffer size {size} is outside {BUFFER_HEADER}..={MAX_BUFFER} bytes"),
            ));
        }
        if !(BUFFER_HEADER..=MAX_BUFFER).contains(&saved) {
            return Err(err(
                4,
                format!("saved offset {saved} is outside {BUFFER_HEADER}..={MAX_BUFFER} bytes"),
            ));
        }
        let compressed = self.compressed_mode && size < saved;
        if !compressed && saved > size {
            return Err(err(
                4,
                format!("saved offset {saved} is past the buffer's size {size}, and the log is not compressed"),
            ));
        }
        // Read what the file holds, growing with what arrives, so a size
        // from a corrupt header never allocates beyond the input.
        self.stored.clear();
        let want = (size - BUFFER_HEADER) as u64;
        let read = (&mut self.input)
            .take(want)
            .read_to_end(&mut self.stored)
            .map_err(|e| err(BUFFER_HEADER as u64, e.to_string()))?;
        if (read as u64) < want {
            return Err(err(
                (BUFFER_HEADER + read) as u64,
                format!("the file ends inside the buffer: {size} bytes announced, {} present", BUFFER_HEADER + read),
            ));
        }
        out.pos = pos;
        out.header = header;
        out.bytes.clear();
        out.bytes.extend_from_slice(&raw);
        if compressed {
            xca::decompress(&self.stored, saved - BUFFER_HEADER, &mut out.bytes).map_err(|e| {
                err(
                    BUFFER_HEADER as u64,
                    format!("compressed contents do not expand ([MS-XCA] Plain LZ77): {e}"),
                )
            })?;
        } else {
            out.bytes.extend_from_slice(&self.stored[..saved - BUFFER_HEADER]);
        }
        self.offset += size as u64;
        self.index += 1;
        Ok(true)
    }
}

impl Buffer {
    pub fn empty() -> Buffer {
        Buffer {
            pos: BufferPos {
                index: 0,
                file_offset: 0,
            },
            header: BufferHeader {
                size: 0,
                saved: 0,
                cpu: 0,
                flags: 0,
            },
            bytes: Vec::new(),
        }
    }

    /// The log file header, if this buffer's first event is one.
    pub fn log_header(&self) -> Result<LogFileHeader, ContainerError> {
        let err = |byte: usize, message: String| ContainerError {
            pos: self.pos,
            byte: byte as u64,
            message,
        };
        match read_event(&self.bytes, BUFFER_HEADER, self.bytes.len()) {
            Ok(Found::Event { event, .. }) if is_log_header(event.origin, event.opcode) => {
                LogFileHeader::parse(event.data, event.pointer).map_err(|m| err(BUFFER_HEADER, m))
            }
            Ok(_) => Err(err(
                BUFFER_HEADER,
                "the first event is not the log file header (not an ETW log file?)".into(),
            )),
            Err(e) => Err(err(BUFFER_HEADER, e.0)),
        }
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Writes the log read from `input` to `out` with every buffer stored
/// expanded (size = saved offset, compressed mode cleared in the log file
/// header): the form tools that do not decompress read, and the fuzzer's
/// seeds. Returns the number of buffers.
pub fn expand(input: &mut dyn Read, out: &mut dyn std::io::Write) -> Result<u64, ContainerError> {
    let mut reader = BufferReader::new(input);
    let mut buffer = Buffer::empty();
    let mut count = 0u64;
    while reader.next_buffer(&mut buffer)? {
        let pos = buffer.pos;
        let io_err = |e: std::io::Error| ContainerError {
            pos,
            byte: 0,
            message: e.to_string(),
        };
        let saved = buffer.header.saved;
        buffer.bytes[0..4].copy_from_slice(&saved.to_le_bytes());
        if count == 0 {
            let log = buffer.log_header()?;
            reader.set_compressed_mode(log.log_file_mode & COMPRESSED_MODE != 0);
            let data_at = match read_event(&buffer.bytes, BUFFER_HEADER, buffer.bytes.len()) {
                Ok(Found::Event { event, .. }) => {
                    event.data.as_ptr() as usize - buffer.bytes.as_ptr() as usize
                }
                _ => BUFFER_HEADER,
            };
            let mode = log.log_file_mode & !COMPRESSED_MODE;
            buffer.bytes[data_at + 32..data_at + 36].copy_from_slice(&mode.to_le_bytes());
        }
        out.write_all(&buffer.bytes).map_err(io_err)?;
        count += 1;
    }
    Ok(count)
}
