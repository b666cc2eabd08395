//! Plumbing shared by the one-line-per-request text parsers (MSR, xperf, WPA,
//! fio, SPC, CloudPhysics, MQSim): a byte-line reader with a length cap (memory
//! stays bounded whatever the input), field splitting without allocation,
//! strict number parsing, and the sanity limits every parser applies.

use crate::error::{bad, BadInputKind as K, BadReason, ConvertError};
use crate::event::Location;
use crate::sink::Sink;
use std::io::{ErrorKind, Read};
use std::ops::Range;
use std::path::PathBuf;
use trace_format::{Bytes, Nanos, Sectors};

/// Longest line kept; the rest of a longer line is discarded and the line
/// reported as bad, so one runaway line cannot exhaust memory.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;

/// Most bytes a line may run without a line end before the input is given
/// up as not line text (`/dev/zero`, a binary file, a pipe that never ends
/// a line): the limit is applied while reading, so such an input is one
/// error within a fraction of a second, not a read that never ends.
pub(crate) const MAX_RUNAWAY_BYTES: u64 = 16 * 1024 * 1024;

/// Largest time or latency a source may give: 2^62 ns, about 146 years. Source
/// clocks are relative or Unix-based after conversion, so anything larger is
/// garbage, and staying below it keeps every later sum far from overflow.
pub(crate) const MAX_TIME: Nanos = Nanos(1 << 62);

/// Largest end (offset + length) of a byte range: 2^63, the largest `off_t`.
pub(crate) const MAX_END: u64 = 1 << 63;

/// One line of input, without its line ending.
pub(crate) struct Line<'b> {
    /// 1-based line number.
    pub number: u64,
    /// For an over-long line (only ever handed to `report_too_long`), its
    /// first [`MAX_LINE_BYTES`].
    pub bytes: &'b [u8],
}

/// Reads lines as bytes (never assuming UTF-8), strips `\r\n` / `\n` and a
/// UTF-8 byte order mark at the start of the input.
///
/// Reads the input in large blocks into a buffer of its own and lends lines
/// from there (no copy, no call into the input per line); it may read past the
/// last line it returned, so the input is for it alone.
pub(crate) struct LineReader<'a> {
    input: &'a mut dyn Read,
    file: &'a str,
    /// Input bytes read and not yet returned are `block[start..end]`.
    block: Vec<u8>,
    start: usize,
    end: usize,
    at_eof: bool,
    /// The kept start of an over-long line.
    long: Vec<u8>,
    number: u64,
    /// Whether any line so far had non-whitespace content.
    pub saw_content: bool,
    /// Whether lines starting with `#` are skipped (and counted as comments).
    skip_comments: bool,
    /// The rest of the over-long line just returned is still to be skipped
    /// (after it was reported, so a sink that stops stops before the skip).
    skip_pending: bool,
}

/// The note comment lines are counted under.
pub(crate) const COMMENT_NOTE: &str = "comment lines (#)";

/// Whether a line is a comment: its first non-blank byte is `#` (after a
/// UTF-8 byte order mark). No line-per-request format starts a request with
/// `#`, and public datasets put their column legends in such lines.
pub(crate) fn is_comment(line: &[u8]) -> bool {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.trim_ascii_start().first() == Some(&b'#')
}

/// Size of the read block; larger than [`MAX_LINE_BYTES`], so a line that does
/// not fit in a block is over-long.
const BLOCK_BYTES: usize = 256 * 1024;

/// Position of the first `\n` in `s`, eight bytes at a time.
fn find_newline(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NEWLINES: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut chunks = s.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ NEWLINES;
        // The lowest set bit marks the first zero byte exactly (false
        // positives can only appear above a real zero byte).
        let zero = x.wrapping_sub(ONES) & !x & HIGHS;
        if zero != 0 {
            return Some(base + (zero.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|p| base + p)
}

/// What the reader found next in its block.
enum Found {
    /// A line `block[start..start + len]`, then its `\n`.
    Line(usize),
    /// The last line, without a `\n`, of this length.
    Last(usize),
    /// An over-long line, its start kept in `long`, the rest skipped.
    Long,
    End,
}

impl<'a> LineReader<'a> {
    pub fn new(input: &'a mut dyn Read, file: &'a str) -> Self {
        LineReader {
            input,
            file,
            block: vec![0; BLOCK_BYTES],
            start: 0,
            end: 0,
            at_eof: false,
            long: Vec::new(),
            number: 0,
            saw_content: false,
            skip_comments: true,
            skip_pending: false,
        }
    }

    /// Hands `#` lines to the parser instead of skipping them (tracefs text,
    /// whose `#` lines are its own header).
    pub fn keeping_comments(mut self) -> Self {
        self.skip_comments = false;
        self
    }

    /// Reads more after the unread bytes (moved to the front when the block is
    /// full); false at the end of the input.
    fn refill(&mut self) -> Result<bool, ConvertError> {
        if self.at_eof {
            return Ok(false);
        }
        if self.end == self.block.len() || self.start == self.end {
            self.block.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        loop {
            let free = self.block.get_mut(self.end..).unwrap_or(&mut []);
            if free.is_empty() {
                return Ok(true);
            }
            match self.input.read(free) {
                Ok(0) => {
                    self.at_eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ConvertError::Io {
                        path: PathBuf::from(self.file),
                        source,
                    })
                }
            }
        }
    }

    /// Skips the rest of an over-long line (through its `\n`); an error
    /// once the line has run [`MAX_RUNAWAY_BYTES`] without one.
    fn skip_rest_of_line(&mut self) -> Result<(), ConvertError> {
        let mut skipped = MAX_LINE_BYTES as u64;
        loop {
            let unread = self.block.get(self.start..self.end).unwrap_or(&[]);
            if let Some(i) = find_newline(unread) {
                self.start += i + 1;
                return Ok(());
            }
            skipped += unread.len() as u64;
            if skipped > MAX_RUNAWAY_BYTES {
                return Err(ConvertError::Invalid {
                    location: Location::line(self.file, self.number.max(1)).to_string(),
                    reason: format!(
                        "no line end in the first {} MiB of this line: the input is not \
                         line text (a binary file, a device, or a stream that never ends a line)",
                        MAX_RUNAWAY_BYTES >> 20
                    ),
                });
            }
            self.start = self.end;
            if !self.refill()? {
                return Ok(());
            }
        }
    }

    fn find(&mut self) -> Result<Found, ConvertError> {
        loop {
            let unread = self.block.get(self.start..self.end).unwrap_or(&[]);
            let len = unread.len();
            match find_newline(unread) {
                Some(i) if i <= MAX_LINE_BYTES => return Ok(Found::Line(i)),
                Some(_) => break,
                None if len > MAX_LINE_BYTES => break,
                None => {
                    if self.refill()? {
                        continue;
                    }
                    return Ok(if len == 0 {
                        Found::End
                    } else {
                        Found::Last(len)
                    });
                }
            }
        }
        // More than MAX_LINE_BYTES before the newline: keep the start.
        let unread = self.block.get(self.start..self.end).unwrap_or(&[]);
        self.long.clear();
        self.long
            .extend_from_slice(unread.get(..MAX_LINE_BYTES).unwrap_or(unread));
        self.start += self.long.len();
        self.skip_pending = true;
        Ok(Found::Long)
    }

    /// The next line of at most [`MAX_LINE_BYTES`], or `None` at the end of
    /// the input. An over-long line is reported to `sink` as bad input (which
    /// stops the parse unless the sink goes on) and skipped: every parser
    /// treats it so. A comment line is counted as a note and skipped (unless
    /// [`keeping_comments`](Self::keeping_comments)).
    pub fn next_line(&mut self, sink: &mut dyn Sink) -> Result<Option<Line<'_>>, ConvertError> {
        let file = self.file;
        loop {
            match self.advance()? {
                None => return Ok(None),
                Some(None) => report_too_long(sink, file, &self.line(None))?,
                Some(Some(range)) => {
                    let raw = self.block.get(range.clone()).unwrap_or(&[]);
                    if self.skip_comments && is_comment(raw) {
                        sink.note(COMMENT_NOTE);
                        continue;
                    }
                    return Ok(Some(self.line(Some(range))));
                }
            }
        }
    }

    /// Moves to the next line: `None` at the end of the input, else where its
    /// bytes are in the block, `None` for an over-long line (its start is in
    /// `long`).
    fn advance(&mut self) -> Result<Option<Option<Range<usize>>>, ConvertError> {
        if std::mem::take(&mut self.skip_pending) {
            self.skip_rest_of_line()?;
        }
        let range = match self.find()? {
            Found::End => return Ok(None),
            Found::Line(len) => {
                let range = self.start..self.start + len;
                self.start += len + 1;
                Some(range)
            }
            Found::Last(len) => {
                let range = self.start..self.start + len;
                self.start += len;
                Some(range)
            }
            Found::Long => None,
        };
        self.number += 1;
        Ok(Some(range))
    }

    /// The line `advance` moved to.
    fn line(&mut self, range: Option<Range<usize>>) -> Line<'_> {
        let raw = match range {
            Some(r) => self.block.get(r).unwrap_or(&[]),
            None => &self.long,
        };
        Line {
            number: self.number,
            bytes: clean_line(raw, self.number, &mut self.saw_content),
        }
    }

    /// Reports an input without any content as bad (`what` names the format).
    pub fn report_if_empty(&self, sink: &mut dyn Sink, what: &str) -> Result<(), ConvertError> {
        if self.saw_content {
            return Ok(());
        }
        let reason = bad(K::Empty, format!("empty input: no {what} lines"));
        sink.bad_input(Location::line(self.file, self.number.max(1)), "", &reason)
    }
}

/// A line without its `\r` (and, on line 1, a UTF-8 byte order mark); notes
/// whether it has content.
fn clean_line<'l>(line: &'l [u8], number: u64, saw_content: &mut bool) -> &'l [u8] {
    let mut bytes = line.strip_suffix(b"\r").unwrap_or(line);
    if number == 1 {
        bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    }
    if !bytes.trim_ascii().is_empty() {
        *saw_content = true;
    }
    bytes
}

/// Reports `line` as bad input with `reason`.
pub(crate) fn report_bad(
    sink: &mut dyn Sink,
    file: &str,
    number: u64,
    line: &[u8],
    reason: &BadReason,
) -> Result<(), ConvertError> {
    sink.bad_input(
        Location::line(file, number),
        &crate::formats::printable(line, 200),
        reason,
    )
}

/// Reports an over-long line as bad input.
fn report_too_long(sink: &mut dyn Sink, file: &str, line: &Line<'_>) -> Result<(), ConvertError> {
    let message = format!("line longer than {MAX_LINE_BYTES} bytes");
    let reason = bad(K::TooLong, message);
    report_bad(sink, file, line.number, line.bytes, &reason)
}

/// Fields of one line split on `separator`, trimmed of ASCII whitespace; a field
/// that starts with `"` runs to the matching `"` (a doubled `""` inside is kept
/// as is), so quoted separators do not split. Holds up to `N` fields and counts
/// the rest.
pub(crate) struct Fields<'l, const N: usize> {
    fields: [&'l [u8]; N],
    count: usize,
}

impl<'l, const N: usize> Fields<'l, N> {
    pub fn split(line: &'l [u8], separator: u8) -> Self {
        let mut fields: [&'l [u8]; N] = [&[]; N];
        let mut count = 0;
        let mut rest = line;
        loop {
            let (field, next) = split_one(rest, separator);
            if let Some(slot) = fields.get_mut(count) {
                *slot = field;
            }
            count += 1;
            match next {
                Some(n) => rest = n,
                None => break,
            }
        }
        Fields { fields, count }
    }

    /// Number of fields on the line (may exceed `N`).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Field `i`, or an empty slice past the end.
    pub fn get(&self, i: usize) -> &'l [u8] {
        if i < self.count {
            self.fields.get(i).copied().unwrap_or(&[])
        } else {
            &[]
        }
    }
}

/// One field and what follows its separator (`None` at the end of the line).
fn split_one(s: &[u8], separator: u8) -> (&[u8], Option<&[u8]>) {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let body = &s[start..];
    if body.first() == Some(&b'"') {
        // Find the closing quote (a `""` pair is an escaped quote).
        let mut i = 1;
        while i < body.len() {
            if body[i] == b'"' {
                if body.get(i + 1) == Some(&b'"') {
                    i += 2;
                    continue;
                }
                let inner = &body[1..i];
                let after = &body[i + 1..];
                return match after.iter().position(|&b| b == separator) {
                    Some(p) => (inner, Some(&after[p + 1..])),
                    None => (inner, None),
                };
            }
            i += 1;
        }
        // Unterminated quote: the rest of the line is the field.
        return (body.get(1..).unwrap_or(&[]).trim_ascii(), None);
    }
    match body.iter().position(|&b| b == separator) {
        Some(p) => (body[..p].trim_ascii(), Some(&body[p + 1..])),
        None => (body.trim_ascii(), None),
    }
}

/// Text of a field for messages.
pub(crate) fn show(field: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(field)
}

fn missing(what: &str) -> BadReason {
    bad(K::Missing, format!("missing {what}"))
}

fn negative(what: &str, field: &[u8]) -> BadReason {
    bad(K::Negative, format!("negative {what} `{}`", show(field)))
}

fn not_a_number(what: &str, field: &[u8]) -> BadReason {
    let message = format!("{what} `{}` is not a number", show(field));
    bad(K::NotANumber, message)
}

fn too_large(what: &str, field: &[u8]) -> BadReason {
    let message = format!("{what} `{}` is too large", show(field));
    bad(K::OutOfRange, message)
}

/// A non-negative decimal integer. Says "negative" for a leading minus sign,
/// "missing" for an empty field.
pub(crate) fn parse_u64(field: &[u8], what: &str) -> Result<u64, BadReason> {
    let digits = field.strip_prefix(b"+").unwrap_or(field);
    if digits.is_empty() {
        return Err(missing(what));
    }
    if field.first() == Some(&b'-') {
        return Err(negative(what, field));
    }
    let mut value: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            let message = format!("{what} `{}` is not a whole number", show(field));
            return Err(bad(K::NotANumber, message));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| too_large(what, field))?;
    }
    Ok(value)
}

/// A hexadecimal integer, with or without `0x`.
pub(crate) fn parse_hex_u64(field: &[u8], what: &str) -> Result<u64, BadReason> {
    if field.is_empty() {
        return Err(missing(what));
    }
    if field.first() == Some(&b'-') {
        return Err(negative(what, field));
    }
    let digits = field
        .strip_prefix(b"0x")
        .or_else(|| field.strip_prefix(b"0X"))
        .unwrap_or(field);
    if digits.is_empty() || digits.len() > 16 {
        let message = format!(
            "{what} `{}` is not a 64-bit hexadecimal number",
            show(field)
        );
        return Err(bad(K::NotANumber, message));
    }
    let mut value: u64 = 0;
    for &b in digits {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => {
                let message = format!("{what} `{}` is not a hexadecimal number", show(field));
                return Err(bad(K::NotANumber, message));
            }
        };
        value = (value << 4) | u64::from(d);
    }
    Ok(value)
}

/// How a source writes decimal numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NumberStyle {
    pub decimal: u8,
    /// Thousands separator, if the source uses one (groups must be 3 digits).
    pub group: Option<u8>,
}

impl NumberStyle {
    /// `1234.5`
    pub const PLAIN: NumberStyle = NumberStyle {
        decimal: b'.',
        group: None,
    };
}

/// A non-negative fixed-point decimal, returned as an integer multiple of
/// 10^-`scale` (e.g. seconds with scale 9 give nanoseconds), exactly, without
/// going through floating point. Extra fraction digits are rounded half up.
/// Also accepts exponent notation (`1.5e-3`) through `f64`.
pub(crate) fn parse_fixed(
    field: &[u8],
    what: &str,
    scale: u32,
    style: NumberStyle,
) -> Result<u64, BadReason> {
    if field.is_empty() {
        return Err(missing(what));
    }
    if field.first() == Some(&b'-') {
        return Err(negative(what, field));
    }
    let body = field.strip_prefix(b"+").unwrap_or(field);
    if body.iter().any(|&b| b == b'e' || b == b'E') {
        return parse_exponent(field, body, what, scale, style);
    }
    let too_large = || too_large(what, field);
    let malformed = || not_a_number(what, field);
    let (int_part, frac_part) = match body.iter().position(|&b| b == style.decimal) {
        Some(p) => (&body[..p], Some(&body[p + 1..])),
        None => (body, None),
    };
    let mut value: u64 = 0;
    let mut digits_seen = 0usize;
    let mut group_len: Option<usize> = None;
    for &b in int_part {
        if Some(b) == style.group {
            // Leading group of 1-3 digits, later groups exactly 3.
            let ok = match group_len {
                None => (1..=3).contains(&digits_seen),
                Some(n) => n == 3,
            };
            if !ok {
                return Err(malformed());
            }
            group_len = Some(0);
            continue;
        }
        if !b.is_ascii_digit() {
            return Err(malformed());
        }
        digits_seen += 1;
        if let Some(n) = group_len.as_mut() {
            *n += 1;
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(too_large)?;
    }
    if group_len.is_some_and(|n| n != 3) {
        return Err(malformed());
    }
    let frac = frac_part.unwrap_or(&[]);
    if digits_seen == 0 && frac.is_empty() {
        return Err(malformed());
    }
    let mut scaled = value;
    let mut round_up = false;
    for i in 0..scale as usize {
        let digit = match frac.get(i) {
            Some(&b) if b.is_ascii_digit() => u64::from(b - b'0'),
            Some(_) => return Err(malformed()),
            None => 0,
        };
        scaled = scaled
            .checked_mul(10)
            .and_then(|v| v.checked_add(digit))
            .ok_or_else(too_large)?;
    }
    for (i, &b) in frac.iter().enumerate().skip(scale as usize) {
        if !b.is_ascii_digit() {
            return Err(malformed());
        }
        if i == scale as usize {
            round_up = b >= b'5';
        }
    }
    if round_up {
        scaled = scaled.checked_add(1).ok_or_else(too_large)?;
    }
    Ok(scaled)
}

fn parse_exponent(
    field: &[u8],
    body: &[u8],
    what: &str,
    scale: u32,
    style: NumberStyle,
) -> Result<u64, BadReason> {
    let text: String = body
        .iter()
        .map(|&b| {
            if b == style.decimal {
                '.'
            } else {
                char::from(b)
            }
        })
        .collect();
    let value: f64 = text.parse().map_err(|_| not_a_number(what, field))?;
    let scaled = value * 10f64.powi(scale as i32);
    if !scaled.is_finite() || scaled >= u64::MAX as f64 {
        return Err(too_large(what, field));
    }
    if scaled < 0.0 {
        return Err(negative(what, field));
    }
    Ok(scaled.round() as u64)
}

/// Checks that a time or latency is below [`MAX_TIME`].
pub(crate) fn check_time(what: &str, t: Nanos) -> Result<Nanos, BadReason> {
    if t >= MAX_TIME {
        let message =
            format!("absurd {what} {t}: more than 146 years after the source's time zero");
        Err(bad(K::OutOfRange, message))
    } else {
        Ok(t)
    }
}

/// Checks that `offset + len` fits in [`MAX_END`].
pub(crate) fn check_extent(offset: u64, len: u64) -> Result<(), BadReason> {
    match offset.checked_add(len) {
        Some(end) if end <= MAX_END => Ok(()),
        _ => {
            let message = format!("offset {offset} + length {len} ends past 2^63 bytes");
            Err(bad(K::OutOfRange, message))
        }
    }
}

/// `count` 512-byte sectors in bytes; past 2^64 bytes is out of range, said
/// as `{what} {count} {unit} is past 2^64 bytes` (`unit` the word the format
/// counts in, or empty for none).
pub(crate) fn sectors_to_bytes(count: u64, what: &str, unit: &str) -> Result<Bytes, BadReason> {
    Sectors(count).to_bytes().ok_or_else(|| {
        let counted = match unit {
            "" => count.to_string(),
            unit => format!("{count} {unit}"),
        };
        bad(
            K::OutOfRange,
            format!("{what} {counted} is past 2^64 bytes"),
        )
    })
}

/// Multiplies a count of `unit_ns` nanoseconds, reporting overflow as absurd.
pub(crate) fn nanos_from(value: u64, unit_ns: u64, what: &str) -> Result<Nanos, BadReason> {
    let overflow = || format!("absurd {what} {value}: overflows 64-bit nanoseconds");
    let ns = value
        .checked_mul(unit_ns)
        .ok_or_else(|| bad(K::OutOfRange, overflow()))?;
    check_time(what, Nanos(ns))
}

/// The first few non-blank, non-comment lines of `head` (an input's first bytes), without a
/// byte order mark or `\r`; the last line is dropped when `head` was cut
/// mid-line. Used by the `looks_like` functions.
pub(crate) fn head_lines(head: &[u8], max: usize) -> impl Iterator<Item = &[u8]> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let complete = match head.iter().rposition(|&b| b == b'\n') {
        // Keep a final unterminated line only if it is the whole head (short files).
        Some(p) if head.len() >= MAX_LINE_BYTES => &head[..p],
        _ => head,
    };
    complete
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.trim_ascii().is_empty() && !is_comment(l))
        .take(max)
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line as (number, bytes, over-long), over-long ones included.
    fn all_lines(r: &mut LineReader<'_>) -> Vec<(u64, Vec<u8>, bool)> {
        let mut got = Vec::new();
        while let Some(range) = r.advance().unwrap() {
            let too_long = range.is_none();
            let l = r.line(range);
            got.push((l.number, l.bytes.to_vec(), too_long));
        }
        got
    }

    #[test]
    fn lines_strip_crlf_bom_and_cap_length() {
        let mut data = b"\xEF\xBB\xBFone\r\ntwo\n\nthree".to_vec();
        let mut input: &[u8] = &data;
        let mut r = LineReader::new(&mut input, "f");
        assert_eq!(
            all_lines(&mut r),
            vec![
                (1, b"one".to_vec(), false),
                (2, b"two".to_vec(), false),
                (3, b"".to_vec(), false),
                (4, b"three".to_vec(), false)
            ]
        );
        data = vec![b'x'; MAX_LINE_BYTES * 3];
        data.extend_from_slice(b"\nnext\n");
        let mut input = std::io::BufReader::with_capacity(1000, &data[..]);
        let mut r = LineReader::new(&mut input, "f");
        assert_eq!(
            all_lines(&mut r),
            vec![
                (1, vec![b'x'; MAX_LINE_BYTES], true),
                (2, b"next".to_vec(), false)
            ]
        );
    }

    /// `next_line` reports an over-long line to the sink, once, as bad input
    /// naming the limit, and goes on with the next line when the sink does;
    /// a sink that stops makes it fail.
    #[test]
    fn over_long_lines_are_reported_and_skipped() {
        let mut data = b"first\n".to_vec();
        data.extend(vec![b'x'; MAX_LINE_BYTES + 10]);
        data.extend_from_slice(b"\nlast\n");
        let mut input: &[u8] = &data;
        let mut r = LineReader::new(&mut input, "f");
        let mut sink = testing::Collect::skipping();
        let mut got = Vec::new();
        while let Some(l) = r.next_line(&mut sink).unwrap() {
            got.push((l.number, l.bytes.to_vec()));
        }
        assert_eq!(got, vec![(1, b"first".to_vec()), (3, b"last".to_vec())]);
        assert_eq!(sink.bad.len(), 1);
        let (line, content, reason) = &sink.bad[0];
        assert_eq!(*line, 2);
        // Shown shortened: the first 200 characters and a mark.
        assert_eq!(content, &format!("{}…", "x".repeat(200)));
        assert_eq!(reason, &format!("line longer than {MAX_LINE_BYTES} bytes"));

        let mut input: &[u8] = &data;
        let mut r = LineReader::new(&mut input, "f");
        let mut sink = testing::Collect::default();
        assert!(r.next_line(&mut sink).unwrap().is_some());
        assert!(r.next_line(&mut sink).is_err());
    }

    /// An input that never ends a line (`/dev/zero`, a pipe): it panics
    /// once far more than the limit has been read, so a reader that waits
    /// for the line end fails here instead of running forever.
    struct Endless {
        read: u64,
    }

    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.read += buf.len() as u64;
            assert!(
                self.read < 4 * MAX_RUNAWAY_BYTES,
                "read on past the line limit"
            );
            buf.fill(0);
            Ok(buf.len())
        }
    }

    /// A line that never ends is one error while reading: at the line
    /// limit when the sink stops at bad input, at [`MAX_RUNAWAY_BYTES`]
    /// (naming the line) when it skips bad lines.
    #[test]
    fn an_endless_line_is_an_error_not_a_read_forever() {
        let mut input = Endless { read: 0 };
        let mut r = LineReader::new(&mut input, "/dev/zero");
        let mut sink = testing::Collect::default();
        assert!(r.next_line(&mut sink).is_err());
        assert!(input.read <= 2 * BLOCK_BYTES as u64, "{}", input.read);

        let mut input = Endless { read: 0 };
        let mut r = LineReader::new(&mut input, "/dev/zero");
        let mut sink = testing::Collect::skipping();
        let err = r.next_line(&mut sink).err().expect("an error");
        let text = err.to_string();
        assert!(
            text.contains("/dev/zero") && text.contains("no line end"),
            "{text}"
        );
        assert_eq!(sink.bad.len(), 1);
    }

    /// Hands out at most a few bytes per read, to exercise refills at every
    /// position of a line.
    struct Trickle<'d> {
        data: &'d [u8],
        step: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// What the reader must return for `data`: split at `\n`, a last line
    /// without one, `\r` and (line 1) BOM removed after capping at the limit.
    fn reference(data: &[u8]) -> Vec<(u64, Vec<u8>, bool)> {
        let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        if data.is_empty() || data.ends_with(b"\n") {
            lines.pop();
        }
        let mut out = Vec::new();
        for (i, l) in lines.into_iter().enumerate() {
            let too_long = l.len() > MAX_LINE_BYTES;
            let mut b = &l[..l.len().min(MAX_LINE_BYTES)];
            b = b.strip_suffix(b"\r").unwrap_or(b);
            if i == 0 {
                b = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b);
            }
            out.push((i as u64 + 1, b.to_vec(), too_long));
        }
        out
    }

    #[test]
    fn reader_matches_reference_on_random_inputs() {
        let mut rng = trace_format::rng::WyRand::new(0x2545_F491_4F6C_DD1D);
        let mut next = move |n: usize| rng.below(n);
        let lengths = [
            0,
            1,
            7,
            8,
            80,
            MAX_LINE_BYTES - 1,
            MAX_LINE_BYTES,
            MAX_LINE_BYTES + 1,
            3 * MAX_LINE_BYTES,
            BLOCK_BYTES + 5,
        ];
        for round in 0..60 {
            let mut data = Vec::new();
            if round % 5 == 0 {
                data.extend_from_slice(b"\xEF\xBB\xBF");
            }
            for _ in 0..next(12) {
                let len = if next(4) == 0 {
                    lengths[next(lengths.len())]
                } else {
                    next(120)
                };
                data.extend((0..len).map(|_| b"ab \r\xff"[next(5)]));
                if next(3) == 0 {
                    data.push(b'\r');
                }
                data.push(b'\n');
            }
            if next(2) == 0 {
                data.extend_from_slice(b"tail");
            }
            for step in [1, 3, 4096, usize::MAX] {
                if step < 100 && data.len() > 20_000 {
                    continue; // rescanning a long partial line per byte is slow
                }
                let mut input = Trickle { data: &data, step };
                let mut r = LineReader::new(&mut input, "f");
                assert_eq!(
                    all_lines(&mut r),
                    reference(&data),
                    "round {round}, step {step}"
                );
            }
        }
    }

    #[test]
    fn fields_split_trim_and_quote() {
        let f = Fields::<8>::split(b" a , \"b,c\" ,d,", b',');
        assert_eq!(f.len(), 4);
        assert_eq!(f.get(0), b"a");
        assert_eq!(f.get(1), b"b,c");
        assert_eq!(f.get(2), b"d");
        assert_eq!(f.get(3), b"");
        assert_eq!(f.get(9), b"");
        let many = Fields::<2>::split(b"1,2,3,4", b',');
        assert_eq!(many.len(), 4);
        assert_eq!(many.get(1), b"2");
        assert_eq!(many.get(2), b"");
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u64(b"18446744073709551615", "x"), Ok(u64::MAX));
        let kind = |r: Result<u64, BadReason>| r.unwrap_err().kind;
        assert_eq!(kind(parse_u64(b"18446744073709551616", "x")), K::OutOfRange);
        let negative = parse_u64(b"-5", "size").unwrap_err();
        assert!(negative.message.contains("negative size"));
        assert_eq!(kind(parse_u64(b"", "size")), K::Missing);
        assert_eq!(kind(parse_u64(b"12a", "size")), K::NotANumber);
        assert_eq!(parse_hex_u64(b"0x00000000000001FF", "o"), Ok(511));
        assert_eq!(parse_hex_u64(b"ffffFFFFffffFFFF", "o"), Ok(u64::MAX));
        assert!(parse_hex_u64(b"0x1FFFFFFFFFFFFFFFF", "o").is_err());
        assert!(parse_hex_u64(b"0x", "o").is_err());
        assert!(parse_hex_u64(b"0xg", "o").is_err());
    }

    #[test]
    fn fixed_point() {
        let de = NumberStyle {
            decimal: b',',
            group: Some(b'.'),
        };
        let en = NumberStyle {
            decimal: b'.',
            group: Some(b','),
        };
        assert_eq!(parse_fixed(b"1,079943800", "t", 9, de), Ok(1_079_943_800));
        assert_eq!(parse_fixed(b"1.795,900", "t", 3, de), Ok(1_795_900));
        assert_eq!(parse_fixed(b"16.384", "s", 0, de), Ok(16_384));
        assert_eq!(parse_fixed(b"1,234,567.5", "s", 1, en), Ok(12_345_675));
        assert!(parse_fixed(b"1.5", "s", 0, de).is_err(), "bad grouping");
        assert!(
            parse_fixed(b"1234.567", "s", 0, de).is_err(),
            "bad grouping"
        );
        assert!(parse_fixed(b"12.3456", "s", 0, de).is_err(), "bad grouping");
        assert_eq!(parse_fixed(b"0.0000005", "t", 6, NumberStyle::PLAIN), Ok(1));
        assert_eq!(parse_fixed(b".5", "t", 1, NumberStyle::PLAIN), Ok(5));
        assert_eq!(parse_fixed(b"3", "t", 3, NumberStyle::PLAIN), Ok(3000));
        assert_eq!(
            parse_fixed(b"1.5e-3", "t", 9, NumberStyle::PLAIN),
            Ok(1_500_000)
        );
        let kind = |f: &[u8]| parse_fixed(f, "t", 9, NumberStyle::PLAIN).unwrap_err().kind;
        assert_eq!(kind(b"1e300"), K::OutOfRange);
        assert_eq!(kind(b"-0.5"), K::Negative);
        assert!(parse_fixed(b"nan", "t", 9, NumberStyle::PLAIN).is_err());
        assert!(parse_fixed(b".", "t", 9, NumberStyle::PLAIN).is_err());
        assert!(parse_fixed(b"1.2.3", "t", 9, NumberStyle::PLAIN).is_err());
        assert!(parse_fixed(b"99999999999999999999", "t", 9, NumberStyle::PLAIN).is_err());
    }

    #[test]
    fn limits() {
        assert!(check_extent(0, 1 << 63).is_ok());
        assert!(check_extent(1, 1 << 63).is_err());
        assert!(check_extent(u64::MAX, 2).is_err());
        assert!(check_time("t", Nanos((1 << 62) - 1)).is_ok());
        assert!(check_time("t", MAX_TIME).is_err());
        assert!(nanos_from(u64::MAX / 10, 100, "t").is_err());
        assert_eq!(nanos_from(5, 100, "t"), Ok(Nanos(500)));
    }

    #[test]
    fn head_lines_skip_partial_last_line_only_when_cut() {
        let lines: Vec<_> = head_lines(b"\xEF\xBB\xBFa\r\n\nb\nc", 5).collect();
        assert_eq!(lines, vec![&b"a"[..], b"b", b"c"]);
        let mut big = b"a\n".to_vec();
        big.resize(MAX_LINE_BYTES, b'x');
        let lines: Vec<_> = head_lines(&big, 5).collect();
        assert_eq!(lines, vec![&b"a"[..]]);
    }
}
