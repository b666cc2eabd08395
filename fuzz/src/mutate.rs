//! Mutations: byte-level (flips, interesting bytes and integers, inserts,
//! deletes, duplicated and spliced ranges) and text-aware (numbers replaced by
//! edge values, lines swapped or repeated). Several are stacked per input.

use trace_format::rng::WyRand;

/// Numbers that break parsers: zero, signs, the integer limits and one past
/// them, floats at the edges, words that float parsers accept.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "-0",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "5e-324",
    "NaN",
    "inf",
    "-inf",
    "0x",
    "0xffffffffffffffff",
    "",
    "1,5",
    "1.5",
];

const BYTES: &[u8] = &[
    0, 0xff, 0x7f, 0x80, 0x01, b'\n', b'\r', b',', b';', b' ', b'\t', b'-', b'9', b'"', b'{', b'}',
    b'[', b']', b':', 0x1b, 0xc3,
];

const INTS: &[u64] = &[
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x1_0000_0000,
    i64::MAX as u64,
    u64::MAX,
    u64::MAX - 1,
];

/// One to five stacked mutations of `input`; `other` is another corpus entry
/// to splice from.
pub fn mutate(rng: &mut WyRand, input: &[u8], other: &[u8], max_len: usize) -> Vec<u8> {
    let mut v = input.to_vec();
    let n = 1 + rng.below(5);
    for _ in 0..n {
        mutate_once(rng, &mut v, other);
    }
    v.truncate(max_len);
    v
}

fn mutate_once(rng: &mut WyRand, v: &mut Vec<u8>, other: &[u8]) {
    if v.is_empty() {
        v.push(BYTES[rng.below(BYTES.len())]);
        return;
    }
    let at = rng.below(v.len());
    match rng.below(12) {
        0 => v[at] ^= 1 << rng.below(8),
        1 => v[at] = BYTES[rng.below(BYTES.len())],
        2 => v[at] = rng.next_u64() as u8,
        3 => {
            let len = 1 + rng.below(8);
            for _ in 0..len {
                v.insert(at, rng.next_u64() as u8);
            }
        }
        4 => {
            let end = (at + 1 + rng.below(16)).min(v.len());
            v.drain(at..end);
        }
        5 => {
            let end = (at + 1 + rng.below(64)).min(v.len());
            let copy = v[at..end].to_vec();
            let to = rng.below(v.len() + 1);
            v.splice(to..to, copy);
        }
        6 => v.truncate(at),
        7 => {
            // An integer at the edge, little-endian, 1 to 8 bytes wide.
            let value = INTS[rng.below(INTS.len())].to_le_bytes();
            let width = [1, 2, 4, 8][rng.below(4)];
            for (i, b) in value[..width].iter().enumerate() {
                if let Some(slot) = v.get_mut(at + i) {
                    *slot = *b;
                }
            }
        }
        8 => replace_number(rng, v),
        9 => swap_or_repeat_line(rng, v),
        10 if !other.is_empty() => {
            let from = rng.below(other.len());
            let end = (from + 1 + rng.below(256)).min(other.len());
            let to = rng.below(v.len() + 1);
            v.splice(to..to, other[from..end].iter().copied());
        }
        _ => {
            let to = rng.below(v.len() + 1);
            v.splice(to..to, NUMBERS[rng.below(NUMBERS.len())].bytes());
        }
    }
}

/// Replaces a run of digits (a number in a text input) by an edge value.
fn replace_number(rng: &mut WyRand, v: &mut Vec<u8>) {
    let starts: Vec<usize> = (0..v.len())
        .filter(|&i| v[i].is_ascii_digit() && (i == 0 || !v[i - 1].is_ascii_digit()))
        .collect();
    if starts.is_empty() {
        return;
    }
    let start = starts[rng.below(starts.len())];
    let end = (start..v.len())
        .find(|&i| !v[i].is_ascii_digit())
        .unwrap_or(v.len());
    v.splice(start..end, NUMBERS[rng.below(NUMBERS.len())].bytes());
}

/// Swaps two lines, or repeats one (out-of-order and duplicate events).
fn swap_or_repeat_line(rng: &mut WyRand, v: &mut Vec<u8>) {
    let mut lines: Vec<Vec<u8>> = v.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.len() < 2 {
        return;
    }
    let a = rng.below(lines.len());
    let b = rng.below(lines.len());
    if rng.below(2) == 0 {
        lines.swap(a, b);
    } else {
        let line = lines[a].clone();
        lines.insert(b, line);
    }
    *v = lines.join(&b'\n');
}
