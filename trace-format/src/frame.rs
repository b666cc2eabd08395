//! The byte framing of a `.tmt` file: header block, chunk frames, footer block,
//! trailer. See FORMAT.md.

use crate::codec::decode_chunk;
use crate::error::FormatError;
use crate::record::IoRecord;
use crate::units::Nanos;
use serde::{de::DeserializeOwned, Serialize};

pub(crate) const CHUNK_MAGIC: [u8; 4] = *b"TMCK";
pub(crate) const FOOTER_MAGIC: [u8; 4] = *b"TMFT";
/// magic, records, raw length, stored length, first time.
pub(crate) const CHUNK_HEAD_LEN: usize = 24;
/// Chunk head and the CRC after the payload.
pub(crate) const CHUNK_OVERHEAD: usize = CHUNK_HEAD_LEN + 4;
/// Footer offset, footer length, CRC, end magic.
pub(crate) const TRAILER_LEN: usize = 24;
/// Magic, version, header length (before the header bytes).
pub(crate) const PREAMBLE_LEN: usize = 16;
/// Bound on records per chunk, so a reader's memory stays bounded.
pub(crate) const MAX_CHUNK_RECORDS: u32 = 1 << 20;
/// Bound on the encoded size of one record (see FORMAT.md), so a reader never
/// allocates more than the records of a chunk can need.
const MAX_RECORD_BYTES: usize = 10 + 1 + 10 + 10 + 10 + 5 + 3;
const MAX_META_BYTES: usize = 64 << 20;

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_META_BYTES>()
}

pub(crate) fn encode_meta<T: Serialize>(value: &T) -> Result<Vec<u8>, FormatError> {
    bincode::serde::encode_to_vec(value, bincode_config())
        .map_err(|e| FormatError::Encode(e.to_string()))
}

/// Decodes header or footer bytes; `Err` carries the reason.
pub(crate) fn decode_meta<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let (value, used) = bincode::serde::decode_from_slice(bytes, bincode_config())
        .map_err(describe_decode_error)?;
    if used != bytes.len() {
        return Err(format!("{} bytes left over", bytes.len() - used));
    }
    Ok(value)
}

/// A sentence for a bincode decoding error (whose own `Display` prints its
/// debug form, `UnexpectedEnd { additional: 1 }`).
fn describe_decode_error(e: bincode::error::DecodeError) -> String {
    use bincode::error::DecodeError as E;
    match e {
        E::UnexpectedEnd { .. } => "its encoded fields end before the block does".into(),
        E::LimitExceeded => {
            "a field declares a length beyond the 64 MiB a header or footer may hold".into()
        }
        E::Utf8 { .. } => "a text field is not valid UTF-8".into(),
        E::UnexpectedVariant { found, .. } => {
            format!("a field holds the unknown choice number {found}")
        }
        E::InvalidBooleanValue(v) => format!("a yes/no field holds {v}"),
        E::InvalidCharEncoding(_) => "a character field is not a valid character".into(),
        E::OutsideUsizeRange(v) => format!("a length of {v} is too large"),
        _ => "its fields cannot be decoded".into(),
    }
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// A whole chunk frame: head, compressed payload, CRC-32C of both.
pub(crate) fn chunk_frame(
    records: u32,
    raw_len: u32,
    first_time: Nanos,
    compressed: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(CHUNK_OVERHEAD + compressed.len());
    f.extend_from_slice(&CHUNK_MAGIC);
    f.extend_from_slice(&records.to_le_bytes());
    f.extend_from_slice(&raw_len.to_le_bytes());
    f.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
    f.extend_from_slice(&first_time.0.to_le_bytes());
    f.extend_from_slice(compressed);
    let crc = crc32c::crc32c(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

/// The fields of a chunk head.
pub(crate) struct ChunkHead {
    pub records: u32,
    pub raw_len: u32,
    pub stored_len: u32,
    pub first_time: Nanos,
}

/// Parses a chunk head (the first `CHUNK_HEAD_LEN` bytes of a frame).
pub(crate) fn parse_chunk_head(head: &[u8]) -> Result<ChunkHead, String> {
    if head.len() < CHUNK_HEAD_LEN {
        return Err("chunk head is cut short".into());
    }
    if head[..4] != CHUNK_MAGIC {
        return Err("no chunk magic where a chunk should start".into());
    }
    let h = ChunkHead {
        records: u32_at(head, 4),
        raw_len: u32_at(head, 8),
        stored_len: u32_at(head, 12),
        first_time: Nanos(u64_at(head, 16)),
    };
    if h.records == 0 || h.records > MAX_CHUNK_RECORDS {
        return Err(format!("implausible record count {}", h.records));
    }
    if h.raw_len as usize > h.records as usize * MAX_RECORD_BYTES + 128 {
        return Err(format!("implausible payload size {}", h.raw_len));
    }
    // zstd never expands data by more than its block overhead (ZSTD_compressBound).
    if h.stored_len as usize > h.raw_len as usize + h.raw_len as usize / 128 + 1024 {
        return Err(format!(
            "implausible compressed size {} for a payload of {} bytes",
            h.stored_len, h.raw_len
        ));
    }
    Ok(h)
}

/// Checks a whole frame (head, payload, CRC) and decodes its records into `out`.
pub(crate) fn decode_frame(frame: &[u8], out: &mut Vec<IoRecord>) -> Result<ChunkHead, String> {
    let head = parse_chunk_head(frame)?;
    let total = CHUNK_OVERHEAD + head.stored_len as usize;
    if frame.len() != total {
        return Err(format!(
            "frame is {} bytes where its head says {}",
            frame.len(),
            total
        ));
    }
    let body_end = total - 4;
    let stored_crc = u32_at(frame, body_end);
    if crc32c::crc32c(&frame[..body_end]) != stored_crc {
        return Err("checksum mismatch".into());
    }
    let payload = zstd::bulk::decompress(&frame[CHUNK_HEAD_LEN..body_end], head.raw_len as usize)
        .map_err(|e| format!("payload does not decompress: {e}"))?;
    if payload.len() != head.raw_len as usize {
        return Err(format!(
            "payload decompresses to {} bytes, not {}",
            payload.len(),
            head.raw_len
        ));
    }
    decode_chunk(&payload, head.records as usize, head.first_time, out)?;
    Ok(head)
}
