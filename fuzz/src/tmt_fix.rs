//! Structure-aware help for the `.tmt` targets: after a byte-level mutation,
//! sometimes mutate inside a decompressed chunk payload (the columnar record
//! encoding) and recompress it, then recompute every checksum, every chunk
//! offset in the index and the trailer, so the input reaches the decoders and
//! the consistency checks behind the CRCs instead of stopping at the first
//! checksum.

use trace_format::rng::WyRand;
use trace_format::Footer;

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ 64 << 20 }>()
}

/// A chunk frame as found: where it starts and its whole bytes.
struct Frame {
    bytes: Vec<u8>,
}

pub fn recompress_and_checksum(rng: &mut WyRand, input: Vec<u8>) -> Vec<u8> {
    let Some(header_len) = u32_at(&input, 12).map(|l| l as usize) else {
        return input;
    };
    let data_start = 16 + header_len + 4;
    if data_start > input.len() {
        return input;
    }
    let mut header = input[..data_start].to_vec();
    let crc = crc32c::crc32c(&header[..data_start - 4]);
    put_u32(&mut header, data_start - 4, crc);

    // Chunk frames, as long as they parse.
    let mut frames = Vec::new();
    let mut pos = data_start;
    while input.get(pos..pos + 4) == Some(b"TMCK") {
        let Some(stored) = u32_at(&input, pos + 12) else {
            break;
        };
        let end = pos + 24 + stored as usize + 4;
        if end > input.len() {
            break;
        }
        frames.push(Frame {
            bytes: input[pos..end].to_vec(),
        });
        pos = end;
    }
    if frames.is_empty() || input.get(pos..pos + 4) != Some(b"TMFT") {
        return input;
    }
    let Some(footer_len) = u32_at(&input, pos + 4).map(|l| l as usize) else {
        return input;
    };
    let Some(footer_bytes) = input.get(pos + 8..pos + 8 + footer_len) else {
        return input;
    };
    let footer: Option<Footer> = bincode::serde::decode_from_slice(footer_bytes, bincode_config())
        .ok()
        .map(|(f, _)| f);

    // Half the time, mutate one chunk's records inside the compression.
    if rng.below(2) == 0 {
        let i = rng.below(frames.len());
        mutate_payload(rng, &mut frames[i]);
    }
    for f in &mut frames {
        let n = f.bytes.len();
        let crc = crc32c::crc32c(&f.bytes[..n - 4]);
        put_u32(&mut f.bytes, n - 4, crc);
    }

    let mut out = header;
    let mut offsets = Vec::new();
    for f in &frames {
        offsets.push((out.len() as u64, f.bytes.len() as u32));
        out.extend_from_slice(&f.bytes);
    }
    let footer_at = out.len() as u64;
    let encoded = match footer {
        Some(mut footer) => {
            // Keep the index in step with the frames (their sizes may have changed).
            for (c, (offset, len)) in footer.chunks.iter_mut().zip(&offsets) {
                c.offset = *offset;
                c.stored_len = *len;
            }
            bincode::serde::encode_to_vec(&footer, bincode_config())
                .unwrap_or_else(|_| footer_bytes.to_vec())
        }
        None => footer_bytes.to_vec(),
    };
    let mut block = b"TMFT".to_vec();
    block.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
    block.extend_from_slice(&encoded);
    let crc = crc32c::crc32c(&block);
    block.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&block);
    let mut trailer = footer_at.to_le_bytes().to_vec();
    trailer.extend_from_slice(&(block.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c(&trailer);
    trailer.extend_from_slice(&crc.to_le_bytes());
    trailer.extend_from_slice(b"TMTEND\0\0");
    out.extend_from_slice(&trailer);
    out
}

/// Decompresses a frame's payload, changes a few bytes of the columns, and
/// recompresses it into the frame (head lengths updated).
fn mutate_payload(rng: &mut WyRand, frame: &mut Frame) {
    let b = &frame.bytes;
    let Some(raw_len) = u32_at(b, 8) else { return };
    let Ok(mut payload) = zstd::bulk::decompress(&b[24..b.len() - 4], raw_len as usize) else {
        return;
    };
    if payload.is_empty() {
        return;
    }
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(payload.len());
        match rng.below(4) {
            0 => payload[at] ^= 1 << rng.below(8),
            1 => payload[at] = 0xff,
            2 => payload[at] = 0x80,
            _ => payload[at] = rng.next_u64() as u8,
        }
    }
    let Ok(compressed) = zstd::bulk::compress(&payload, 1) else {
        return;
    };
    let mut f = b[..24].to_vec();
    put_u32(&mut f, 8, payload.len() as u32);
    put_u32(&mut f, 12, compressed.len() as u32);
    f.extend_from_slice(&compressed);
    f.extend_from_slice(&[0; 4]);
    frame.bytes = f;
}
