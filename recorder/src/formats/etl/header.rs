//! The event header kinds an ETW buffer holds, told apart by the header type
//! byte every kind carries at its third byte:
//!
//! - system headers (`SYSTEM_TRACE_HEADER`, 32 bytes) and compact system
//!   headers (24 bytes) of classic kernel events: version, size, hook id
//!   (group and opcode), thread, process, time;
//! - perfinfo headers (16 bytes): size, hook id and time, no thread;
//! - full trace headers (`EVENT_TRACE_HEADER`, 48 bytes), as classic
//!   providers and relogged files write kernel events: size, opcode, version,
//!   thread, process, time and the provider's GUID;
//! - event headers (`EVENT_HEADER`, 80 bytes) of manifest providers, with
//!   their optional extended data items;
//! - instance, timed, error, WNODE and message headers, whose size is read
//!   so they are stepped over.
//!
//! Every kind comes in a 32-bit and a 64-bit form: the pointer size of the
//! logging system, which sizes the pointer fields of the event's data.

/// A provider GUID as it is stored (`Data1`, `Data2`, `Data3` little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Guid(pub [u8; 16]);

impl Guid {
    /// The GUID written `d1-d2-d3-d4`.
    pub const fn new(d1: u32, d2: u16, d3: u16, d4: [u8; 8]) -> Guid {
        let a = d1.to_le_bytes();
        let b = d2.to_le_bytes();
        let c = d3.to_le_bytes();
        Guid([
            a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d4[0], d4[1], d4[2], d4[3], d4[4],
            d4[5], d4[6], d4[7],
        ])
    }
}

/// Bytes of a pointer in the logging system (sizes `Irp`, `FileObject`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointerSize {
    Four,
    Eight,
}

impl PointerSize {
    pub fn bytes(self) -> usize {
        match self {
            PointerSize::Four => 4,
            PointerSize::Eight => 8,
        }
    }
}

/// Who logged an event: a kernel hook id (group in the high byte, opcode in
/// the low) for system-style headers, a provider GUID otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Hook(u16),
    Provider(Guid),
}

/// The header kinds, by their type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderKind {
    System,
    Compact,
    PerfInfo,
    Full,
    Event,
    /// Instance, timed, error, WNODE and message headers: stepped over.
    Other,
}

/// The header type byte's kind and pointer size; `None` for a value no ETW
/// header uses.
pub fn kind_of(type_byte: u8) -> Option<(HeaderKind, PointerSize)> {
    use HeaderKind::*;
    use PointerSize::*;
    Some(match type_byte {
        1 => (System, Four),
        2 => (System, Eight),
        3 => (Compact, Four),
        4 => (Compact, Eight),
        10 => (Full, Four),
        20 => (Full, Eight),
        11..=15 => (Other, Four),
        21 => (Other, Eight),
        16 => (PerfInfo, Four),
        17 => (PerfInfo, Eight),
        18 => (Event, Four),
        19 => (Event, Eight),
        _ => return None,
    })
}

/// One event as it sits in a buffer.
#[derive(Debug, Clone, Copy)]
pub struct EventView<'a> {
    pub kind: HeaderKind,
    pub pointer: PointerSize,
    pub origin: Origin,
    /// The event type (opcode) within its provider or hook group.
    pub opcode: u8,
    pub version: u16,
    /// `u32::MAX` where the header has none (perfinfo) or logged none.
    pub process: u32,
    /// Ticks of the log file's clock.
    pub time: u64,
    /// The event's own data, after the header (and any extended items).
    pub data: &'a [u8],
}

/// What was found at a position of a buffer.
#[derive(Debug, Clone, Copy)]
pub enum Found<'a> {
    /// An event; the next one starts at `next`.
    Event { event: EventView<'a>, next: usize },
    /// The rest of the buffer is padding (or there is no room for a header).
    End,
}

/// Why the bytes at a position are no event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError(pub String);

/// Bytes every header has before it can be told apart and sized.
const MIN_HEADER: usize = 8;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// Events start on 8-byte boundaries of the buffer.
pub const ALIGN: usize = 8;

/// Reads the event at `at` of `buffer` (`buffer[..end]` holds events).
pub fn read_event(buffer: &[u8], at: usize, end: usize) -> Result<Found<'_>, HeaderError> {
    let end = end.min(buffer.len());
    if at + MIN_HEADER > end {
        return Ok(Found::End);
    }
    let marker = u32_at(buffer, at);
    // Unused buffer space is filled with 0xFF bytes (or left zero).
    if marker == u32::MAX || marker == 0 {
        return Ok(Found::End);
    }
    let type_byte = buffer[at + 2];
    let Some((kind, pointer)) = kind_of(type_byte) else {
        return Err(HeaderError(format!(
            "unknown event header type {type_byte} (marker 0x{marker:08x})"
        )));
    };
    let (size, header_len) = match kind {
        HeaderKind::System => (u16_at(buffer, at + 4), 32),
        HeaderKind::Compact => (u16_at(buffer, at + 4), 24),
        HeaderKind::PerfInfo => (u16_at(buffer, at + 4), 16),
        HeaderKind::Full => (u16_at(buffer, at), 48),
        HeaderKind::Event => (u16_at(buffer, at), 80),
        HeaderKind::Other => (u16_at(buffer, at), MIN_HEADER),
    };
    let size = usize::from(size);
    if size < header_len {
        return Err(HeaderError(format!(
            "event size {size} is below its {header_len}-byte header"
        )));
    }
    if at + size > end {
        return Err(HeaderError(format!(
            "a {size}-byte event runs {} bytes past the buffer's end (events never cross buffers)",
            at + size - end
        )));
    }
    let e = &buffer[at..at + size];
    let next = (at + size).div_ceil(ALIGN) * ALIGN;
    let event = view(e, kind, pointer, header_len)?;
    Ok(Found::Event { event, next })
}

/// The fields of the event `e` (its whole bytes) of header `kind`.
fn view(
    e: &[u8],
    kind: HeaderKind,
    pointer: PointerSize,
    header_len: usize,
) -> Result<EventView<'_>, HeaderError> {
    Ok(match kind {
        HeaderKind::System | HeaderKind::Compact => {
            let hook = u16_at(e, 6);
            EventView {
                kind,
                pointer,
                origin: Origin::Hook(hook),
                opcode: (hook & 0xff) as u8,
                version: u16_at(e, 0),
                process: u32_at(e, 12),
                time: u64_at(e, 16),
                data: &e[header_len..],
            }
        }
        HeaderKind::PerfInfo => {
            let hook = u16_at(e, 6);
            EventView {
                kind,
                pointer,
                origin: Origin::Hook(hook),
                opcode: (hook & 0xff) as u8,
                version: u16_at(e, 0),
                process: u32::MAX,
                time: u64_at(e, 8),
                data: &e[header_len..],
            }
        }
        HeaderKind::Full => {
            let mut guid = [0u8; 16];
            guid.copy_from_slice(&e[24..40]);
            EventView {
                kind,
                pointer,
                origin: Origin::Provider(Guid(guid)),
                opcode: e[4],
                version: u16_at(e, 6),
                process: u32_at(e, 12),
                time: u64_at(e, 16),
                data: &e[header_len..],
            }
        }
        HeaderKind::Event => {
            let mut guid = [0u8; 16];
            guid.copy_from_slice(&e[24..40]);
            let flags = u16_at(e, 4);
            let data_at = if flags & EXTENDED_INFO != 0 {
                skip_extended_items(e, header_len)?
            } else {
                header_len
            };
            EventView {
                kind,
                pointer,
                origin: Origin::Provider(Guid(guid)),
                opcode: e[45],
                version: u16::from(e[42]),
                process: u32_at(e, 12),
                time: u64_at(e, 16),
                data: &e[data_at..],
            }
        }
        HeaderKind::Other => EventView {
            kind,
            pointer,
            origin: Origin::Hook(u16::MAX),
            opcode: 0,
            version: 0,
            process: u32::MAX,
            time: 0,
            data: &[],
        },
    })
}

/// `EVENT_HEADER_FLAG_EXTENDED_INFO`: extended data items follow the header.
const EXTENDED_INFO: u16 = 0x0001;

/// Steps over the extended data items after an event header: each is
/// `u16 reserved, u16 type, u16 linkage (bit 0: another item follows),
/// u16 size`, then `size` bytes, 8-byte aligned. Returns where the event's
/// own data starts.
fn skip_extended_items(e: &[u8], mut at: usize) -> Result<usize, HeaderError> {
    loop {
        if at + 8 > e.len() {
            return Err(HeaderError(
                "an extended data item runs past its event".into(),
            ));
        }
        let linkage = u16_at(e, at + 4);
        let size = usize::from(u16_at(e, at + 6));
        at = (at + 8 + size).div_ceil(ALIGN) * ALIGN;
        if at > e.len() {
            return Err(HeaderError(
                "an extended data item runs past its event".into(),
            ));
        }
        if linkage & 1 == 0 {
            return Ok(at);
        }
    }
}
