//! Writes small ETW log files from a list of disk requests, following the
//! format (not a captured file): for the reader's tests, the fuzzer's seeds
//! and the speed bench, which need logs no Windows machine made.

use super::container::{BUFFER_HEADER, COMPRESSED_MODE, EVENT_TRACE_GUID};
use super::header::Guid;
use super::kernel::{self, DISK_IO_GUID, LOST_EVENT_GUID, SYSTEM_CONFIG_GUID};
use super::xca;
use trace_format::Op;

/// The event header kind the log's kernel events use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// System headers (a kernel session).
    System,
    /// Compact system headers.
    Compact,
    /// Full trace headers with provider GUIDs (a relogged file).
    Full,
}

/// How the log is written.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub pointer64: bool,
    pub compressed: bool,
    /// The log file header's clock type (1 QPC, 2 system time, 3 CPU cycles).
    pub clock_type: u32,
    /// QPC frequency (clock type 1).
    pub perf_freq: u64,
    /// CPU speed in MHz (clock type 3).
    pub cpu_mhz: u32,
    pub buffer_size: u32,
    pub style: Style,
    pub events_lost: u32,
    pub buffers_lost: u32,
    /// Marker flags byte of every header (ETW writes 0xC0).
    pub marker_flags: u8,
    /// The byte unused buffer space is filled with (ETW writes 0xFF).
    pub fill: u8,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pointer64: true,
            compressed: false,
            clock_type: 1,
            perf_freq: 10_000_000,
            cpu_mhz: 3000,
            buffer_size: 4096,
            style: Style::System,
            events_lost: 0,
            buffers_lost: 0,
            marker_flags: 0xc0,
            fill: 0xff,
        }
    }
}

/// One disk request: its Init event (when `with_init`) on `issue_cpu` at
/// `issued`, its completion on `complete_cpu` at `completed` (ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub disk: u32,
    pub offset: u64,
    pub size: u32,
    pub irp: u64,
    pub irp_flags: u32,
    pub issued: u64,
    pub completed: u64,
    pub issue_cpu: u16,
    pub complete_cpu: u16,
    pub process: u32,
    pub thread: u32,
    pub with_init: bool,
}

/// Another event of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extra {
    /// A lost-event record (RTLostEvent).
    Lost { cpu: u16, time: u64 },
    /// A PhyDisk configuration event.
    PhyDisk { cpu: u16, time: u64, disk: u32, sector: u32, model: String },
    /// An event of no interest, `len` bytes of data.
    Noise { cpu: u16, time: u64, len: usize },
}

struct Event {
    cpu: u16,
    time: u64,
    bytes: Vec<u8>,
}

impl Options {
    fn pointer(&self) -> usize {
        if self.pointer64 {
            8
        } else {
            4
        }
    }

    fn ptr(&self, out: &mut Vec<u8>, v: u64) {
        if self.pointer64 {
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            out.extend_from_slice(&(v as u32).to_le_bytes());
        }
    }

    /// One event: `guid`/`group` name the provider; `data` its data.
    #[allow(clippy::too_many_arguments)]
    fn event(&self, style: Style, group: u8, guid: Guid, opcode: u8, version: u16, thread: u32, process: u32, time: u64, data: &[u8]) -> Vec<u8> {
        let p64 = self.pointer64;
        let mut e = Vec::new();
        match style {
            Style::System | Style::Compact => {
                let (ty, len) = match (style, p64) {
                    (Style::System, false) => (1u8, 32usize),
                    (Style::System, true) => (2, 32),
                    (_, false) => (3, 24),
                    (_, true) => (4, 24),
                };
                e.extend_from_slice(&version.to_le_bytes());
                e.push(ty);
                e.push(self.marker_flags);
                e.extend_from_slice(&((len + data.len()) as u16).to_le_bytes());
                e.extend_from_slice(&(u16::from(group) << 8 | u16::from(opcode)).to_le_bytes());
                e.extend_from_slice(&thread.to_le_bytes());
                e.extend_from_slice(&process.to_le_bytes());
                e.extend_from_slice(&time.to_le_bytes());
                if style == Style::System {
                    e.extend_from_slice(&[0; 8]);
                }
            }
            Style::Full => {
                e.extend_from_slice(&((48 + data.len()) as u16).to_le_bytes());
                e.push(if p64 { 20 } else { 10 });
                e.push(self.marker_flags);
                e.push(opcode);
                e.push(0);
                e.extend_from_slice(&version.to_le_bytes());
                e.extend_from_slice(&thread.to_le_bytes());
                e.extend_from_slice(&process.to_le_bytes());
                e.extend_from_slice(&time.to_le_bytes());
                e.extend_from_slice(&guid.0);
                e.extend_from_slice(&[0; 8]);
            }
        }
        e.extend_from_slice(data);
        e
    }

    fn log_header(&self) -> Vec<u8> {
        let p = self.pointer();
        let mut d = Vec::new();
        let mode = 1 | if self.compressed { COMPRESSED_MODE } else { 0 };
        for v in [self.buffer_size, 0x0002_0206, 9200, 2, 0, 0, 15_625, 0, mode, 0, 1, p as u32, self.events_lost, self.cpu_mhz] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        // EndTime (8 bytes) sits at 16: the loop wrote it as two zeros.
        self.ptr(&mut d, 0);
        self.ptr(&mut d, 0);
        d.resize(56 + 2 * p + 172, 0);
        d.resize(d.len().div_ceil(8) * 8, 0);
        d.extend_from_slice(&0u64.to_le_bytes());
        d.extend_from_slice(&self.perf_freq.to_le_bytes());
        d.extend_from_slice(&0u64.to_le_bytes());
        d.extend_from_slice(&self.clock_type.to_le_bytes());
        d.extend_from_slice(&self.buffers_lost.to_le_bytes());
        for c in "tracemark\0".encode_utf16() {
            d.extend_from_slice(&c.to_le_bytes());
        }
        d
    }

    fn buffer(&self, cpu: u16, events: &[u8], size: usize, compress: bool) -> Vec<u8> {
        let saved = BUFFER_HEADER + events.len();
        let mut h = vec![0u8; BUFFER_HEADER];
        h[4..8].copy_from_slice(&(saved as u32).to_le_bytes());
        h[0x28..0x2a].copy_from_slice(&cpu.to_le_bytes());
        h[0x30..0x34].copy_from_slice(&(saved as u32).to_le_bytes());
        let packed = compress.then(|| xca::compress(events)).filter(|c| BUFFER_HEADER + c.len() < saved);
        let body = match packed {
            Some(c) => c,
            None => {
                let mut b = events.to_vec();
                b.resize(size.max(saved) - BUFFER_HEADER, self.fill);
                b
            }
        };
        let total = BUFFER_HEADER + body.len();
        h[0..4].copy_from_slice(&(total as u32).to_le_bytes());
        h.extend_from_slice(&body);
        h
    }

    /// The whole log file.
    pub fn write(&self, requests: &[Request], extras: &[Extra]) -> Vec<u8> {
        let style = self.style;
        let mut events = Vec::new();
        let p = self.pointer();
        for r in requests {
            let (opcode, init_op) = match r.op {
                Op::Read => (kernel::READ, kernel::READ_INIT),
                Op::Write => (kernel::WRITE, kernel::WRITE_INIT),
                _ => (kernel::FLUSH, kernel::FLUSH_INIT),
            };
            if r.with_init {
                let mut d = Vec::new();
                self.ptr(&mut d, r.irp);
                d.extend_from_slice(&r.thread.to_le_bytes());
                let bytes = self.event(style, 0x01, DISK_IO_GUID, init_op, 3, r.thread, r.process, r.issued, &d);
                events.push(Event { cpu: r.issue_cpu, time: r.issued, bytes });
            }
            let elapsed = r.completed - r.issued;
            let mut d = Vec::new();
            d.extend_from_slice(&r.disk.to_le_bytes());
            d.extend_from_slice(&r.irp_flags.to_le_bytes());
            if opcode == kernel::FLUSH {
                d.extend_from_slice(&elapsed.to_le_bytes());
                self.ptr(&mut d, r.irp);
            } else {
                d.extend_from_slice(&r.size.to_le_bytes());
                d.extend_from_slice(&0u32.to_le_bytes());
                d.extend_from_slice(&r.offset.to_le_bytes());
                self.ptr(&mut d, 0xf11e);
                self.ptr(&mut d, r.irp);
                d.extend_from_slice(&elapsed.to_le_bytes());
            }
            d.extend_from_slice(&r.thread.to_le_bytes());
            let bytes = self.event(style, 0x01, DISK_IO_GUID, opcode, 3, r.thread, r.process, r.completed, &d);
            events.push(Event { cpu: r.complete_cpu, time: r.completed, bytes });
        }
        for x in extras {
            let (cpu, time, bytes) = match x {
                Extra::Lost { cpu, time } => {
                    let s = if style == Style::Full { Style::Full } else { Style::Full };
                    (*cpu, *time, self.event(s, 0, LOST_EVENT_GUID, 32, 2, 0, 0, *time, &[]))
                }
                Extra::PhyDisk { cpu, time, disk, sector, model } => {
                    let mut d = Vec::new();
                    for v in [*disk, *sector, 63, 255] {
                        d.extend_from_slice(&v.to_le_bytes());
                    }
                    d.extend_from_slice(&1000u64.to_le_bytes());
                    d.extend_from_slice(&[0; 16]);
                    let mut name: Vec<u16> = model.encode_utf16().collect();
                    name.resize(256, 0);
                    for c in name {
                        d.extend_from_slice(&c.to_le_bytes());
                    }
                    d.extend_from_slice(&[0; 16]);
                    (*cpu, *time, self.event(style, 0x0b, SYSTEM_CONFIG_GUID, kernel::PHY_DISK, 2, 0, 0, *time, &d))
                }
                Extra::Noise { cpu, time, len } => {
                    let d = vec![0x5a; *len];
                    (*cpu, *time, self.event(style, 0x05, Guid([7; 16]), 1, 2, 1, 1, *time, &d))
                }
            };
            events.push(Event { cpu, time, bytes });
        }
        let _ = p;
        events.sort_by_key(|e| (e.cpu, e.time));
        // The first buffer: the log file header alone.
        let head_style = if style == Style::Full { Style::Full } else { Style::System };
        let header = self.event(head_style, 0, EVENT_TRACE_GUID, 0, 2, 0, 0, 0, &self.log_header());
        let mut first = header.clone();
        first.resize(first.len().div_ceil(8) * 8, 0);
        let mut out = self.buffer(0, &first, self.buffer_size as usize, false);
        // Per CPU, fill buffers in time order; a buffer is written when full,
        // so the file holds them in the order of their last event.
        let cap = self.buffer_size as usize - BUFFER_HEADER;
        let mut buffers: Vec<(u64, u16, Vec<u8>)> = Vec::new();
        let mut current: Option<(u16, Vec<u8>, u64)> = None;
        for e in &events {
            let padded = e.bytes.len().div_ceil(8) * 8;
            let fits = matches!(&current, Some((c, b, _)) if *c == e.cpu && b.len() + padded <= cap);
            if !fits {
                if let Some((c, b, t)) = current.take() {
                    buffers.push((t, c, b));
                }
                current = Some((e.cpu, Vec::new(), e.time));
            }
            if let Some((_, b, t)) = current.as_mut() {
                b.extend_from_slice(&e.bytes);
                b.resize(b.len().div_ceil(8) * 8, 0);
                *t = e.time;
            }
        }
        if let Some((c, b, t)) = current.take() {
            buffers.push((t, c, b));
        }
        buffers.sort_by_key(|(t, c, _)| (*t, *c));
        for (_, cpu, b) in buffers {
            out.extend(self.buffer(cpu, &b, self.buffer_size as usize, self.compressed));
        }
        out
    }
}

/// A read and a write on disk 0, both with Init events, in a log whose every
/// byte is below 0x80 (so it is a `str`): the format's example.
pub const EXAMPLE: &str = "";
