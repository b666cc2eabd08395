//! The Plain LZ77 decompression of Microsoft's open specification [MS-XCA]
//! (section 2.4), which ETW uses for the buffers of a log file written in
//! compressed mode.
//!
//! The stream is a sequence of 32-bit flag words, each followed by the 32
//! items it describes, most significant bit first: a clear bit is one literal
//! byte, a set bit a match of two bytes (length in the low 3 bits, offset - 1
//! in the high 13), with longer lengths continued in a shared half byte, a
//! byte, then 2 or 4 more bytes. A set bit with no input left ends the stream.

use thiserror::Error;

/// Why a compressed buffer could not be expanded; `at` is the input byte.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum XcaError {
    #[error("compressed data ends inside an item (input byte {at})")]
    Truncated { at: usize },
    #[error("a match reaches {distance} bytes back, before the start of the output (input byte {at})")]
    BadOffset { at: usize, distance: usize },
    #[error("a match length encoded below its minimum (input byte {at})")]
    BadLength { at: usize },
    #[error("expands past the {limit} bytes the buffer header announces (input byte {at})")]
    TooLong { at: usize, limit: usize },
    #[error("expands to {got} bytes, but the buffer header announces {expected}")]
    WrongLength { got: usize, expected: usize },
}

fn u16_at(input: &[u8], at: usize) -> Result<u16, XcaError> {
    match input.get(at..at + 2) {
        Some(b) => Ok(u16::from_le_bytes([b[0], b[1]])),
        None => Err(XcaError::Truncated { at }),
    }
}

fn u32_at(input: &[u8], at: usize) -> Result<u32, XcaError> {
    match input.get(at..at + 4) {
        Some(b) => Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(XcaError::Truncated { at }),
    }
}

fn byte_at(input: &[u8], at: usize) -> Result<u8, XcaError> {
    input.get(at).copied().ok_or(XcaError::Truncated { at })
}

/// Appends the expansion of `input` to `out`, which must end up exactly
/// `expected` bytes longer. Never writes more than `expected` bytes, so a
/// hostile stream cannot make memory grow beyond what the caller allowed.
pub fn decompress(input: &[u8], expected: usize, out: &mut Vec<u8>) -> Result<(), XcaError> {
    let base = out.len();
    let limit = base + expected;
    out.reserve(expected.min(input.len().saturating_mul(8).max(64)));
    let mut ip = 0usize;
    let mut flags = 0u32;
    let mut flag_count = 0u32;
    let mut half_byte_at: Option<usize> = None;
    loop {
        if flag_count == 0 {
            if ip == input.len() {
                break;
            }
            flags = u32_at(input, ip)?;
            ip += 4;
            flag_count = 32;
        }
        flag_count -= 1;
        if flags & (1 << flag_count) == 0 {
            let Some(&b) = input.get(ip) else {
                break;
            };
            if out.len() >= limit {
                return Err(XcaError::TooLong { at: ip, limit: expected });
            }
            out.push(b);
            ip += 1;
            continue;
        }
        if ip == input.len() {
            break;
        }
        let item_at = ip;
        let match_bytes = u16_at(input, ip)?;
        ip += 2;
        let distance = usize::from(match_bytes >> 3) + 1;
        let mut length = usize::from(match_bytes & 7);
        if length == 7 {
            length = match half_byte_at.take() {
                None => {
                    half_byte_at = Some(ip);
                    let b = byte_at(input, ip)?;
                    ip += 1;
                    usize::from(b & 0x0f)
                }
                Some(at) => usize::from(byte_at(input, at)? >> 4),
            };
            if length == 15 {
                length = usize::from(byte_at(input, ip)?);
                ip += 1;
                if length == 255 {
                    length = usize::from(u16_at(input, ip)?);
                    ip += 2;
                    if length == 0 {
                        length = usize::try_from(u32_at(input, ip)?).unwrap_or(usize::MAX);
                        ip += 4;
                    }
                    length = length
                        .checked_sub(15 + 7)
                        .ok_or(XcaError::BadLength { at: item_at })?;
                }
                length += 15;
            }
            length += 7;
        }
        length += 3;
        let produced = out.len() - base;
        if distance > produced {
            return Err(XcaError::BadOffset { at: item_at, distance });
        }
        if length > limit - out.len() {
            return Err(XcaError::TooLong { at: item_at, limit: expected });
        }
        let from = out.len() - distance;
        if distance >= length {
            out.extend_from_within(from..from + length);
        } else {
            for i in 0..length {
                let b = out[from + i];
                out.push(b);
            }
        }
    }
    let got = out.len() - base;
    if got != expected {
        return Err(XcaError::WrongLength { got, expected });
    }
    Ok(())
}

/// A Plain LZ77 compressor (greedy, one hash chain link), for building
/// compressed test inputs and fuzz seeds: real files come from Windows.
pub fn compress(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2 + 8);
    let mut flag_pos = out.len();
    out.extend_from_slice(&[0; 4]);
    let mut flags: u32 = 0;
    let mut count = 0u32;
    let mut half_byte_at: Option<usize> = None;
    let mut table = vec![usize::MAX; 1 << 12];
    let hash = |d: &[u8]| {
        (usize::from(d[0]) << 4 ^ usize::from(d[1]) << 2 ^ usize::from(d[2])) & 0xfff
    };
    let push_flag = |out: &mut Vec<u8>, bit: u32, flags: &mut u32, count: &mut u32, flag_pos: &mut usize| {
        *flags |= bit << (31 - *count);
        *count += 1;
        if *count == 32 {
            out[*flag_pos..*flag_pos + 4].copy_from_slice(&flags.to_le_bytes());
            *flag_pos = out.len();
            out.extend_from_slice(&[0; 4]);
            *flags = 0;
            *count = 0;
        }
    };
    let mut i = 0;
    while i < data.len() {
        let mut best = 0usize;
        let mut best_distance = 0usize;
        if i + 3 <= data.len() {
            let h = hash(&data[i..]);
            let candidate = table[h];
            table[h] = i;
            if candidate != usize::MAX && i - candidate <= 8192 {
                let max = (data.len() - i).min(70_000);
                let mut n = 0;
                while n < max && data[candidate + n] == data[i + n] {
                    n += 1;
                }
                if n >= 3 {
                    best = n;
                    best_distance = i - candidate;
                }
            }
        }
        if best < 3 {
            out.push(data[i]);
            push_flag(&mut out, 0, &mut flags, &mut count, &mut flag_pos);
            i += 1;
            continue;
        }
        let length = best - 3;
        let distance = (best_distance - 1) << 3;
        if length < 7 {
            out.extend_from_slice(&((distance | length) as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&((distance | 7) as u16).to_le_bytes());
            let rest = length - 7;
            let nibble = rest.min(15) as u8;
            match half_byte_at.take() {
                None => {
                    half_byte_at = Some(out.len());
                    out.push(nibble);
                }
                Some(at) => out[at] |= nibble << 4,
            }
            if rest >= 15 {
                let rest = rest - 15;
                if rest < 255 {
                    out.push(rest as u8);
                } else {
                    out.push(255);
                    let total = rest + 15 + 7;
                    if total <= 0xffff {
                        out.extend_from_slice(&(total as u16).to_le_bytes());
                    } else {
                        out.extend_from_slice(&[0, 0]);
                        out.extend_from_slice(&(total as u32).to_le_bytes());
                    }
                }
            }
        }
        push_flag(&mut out, 1, &mut flags, &mut count, &mut flag_pos);
        i += best;
    }
    // The end: a set flag bit with no input after it.
    flags |= 1 << (31 - count);
    out[flag_pos..flag_pos + 4].copy_from_slice(&flags.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: &[u8]) {
        let packed = compress(data);
        let mut out = Vec::new();
        decompress(&packed, data.len(), &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn round_trips_literals_short_and_long_matches() {
        round_trip(b"");
        round_trip(b"abc");
        round_trip(&b"abcdefgh".repeat(3));
        let mut long = Vec::new();
        for i in 0..5000u32 {
            long.extend_from_slice(&(i % 7).to_le_bytes());
        }
        long.extend(std::iter::repeat_n(9u8, 100_000));
        long.extend((0..3000u32).map(|i| (i * 31 % 251) as u8));
        long.extend(std::iter::repeat_n(1u8, 300));
        long.extend(std::iter::repeat_n(2u8, 24));
        round_trip(&long);
    }

    /// The worked example of [MS-XCA] 2.5: "abcdefghijklmnopqrstuvwxyz"
    /// as 26 literals, and "abcabcabc..." with one overlapping match.
    #[test]
    fn decodes_the_specification_examples() {
        let mut literal = vec![0x3f, 0x00, 0x00, 0x00];
        literal.extend_from_slice(b"abcdefghijklmnopqrstuvwxyz");
        let mut out = Vec::new();
        decompress(&literal, 26, &mut out).unwrap();
        assert_eq!(out, b"abcdefghijklmnopqrstuvwxyz");
        // "abc" then a match of 297 bytes at distance 3 (length 7 + nibble 15
        // + byte 255 + u16 300 - 22 ... encoded as the specification shows).
        let repeated = [
            0xff, 0xff, 0xff, 0x1f, b'a', b'b', b'c', 0x17, 0x00, 0x0f, 0xff, 0x26, 0x01,
        ];
        let mut out = Vec::new();
        decompress(&repeated, 300, &mut out).unwrap();
        assert_eq!(out, b"abc".repeat(100));
    }

    #[test]
    fn corrupt_streams_are_errors_not_panics() {
        let mut out = Vec::new();
        // A match before any output.
        assert!(matches!(
            decompress(&[0, 0, 0, 0x80, 0x08, 0x00], 10, &mut out),
            Err(XcaError::BadOffset { .. })
        ));
        // Announced length too small for what the stream makes.
        out.clear();
        let packed = compress(&[7u8; 1000]);
        assert!(matches!(
            decompress(&packed, 100, &mut out),
            Err(XcaError::TooLong { .. })
        ));
        // Truncated inside a flag word, and a stream shorter than announced.
        out.clear();
        assert!(decompress(&[0, 0], 1, &mut out).is_err());
        out.clear();
        assert!(matches!(
            decompress(&packed[..packed.len() / 2], 1000, &mut out),
            Err(XcaError::WrongLength { .. } | XcaError::Truncated { .. })
        ));
    }
}
