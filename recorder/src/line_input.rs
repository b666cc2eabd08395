//! Plumbing shared by the one-line-per-request text parsers (MSR, xperf, WPA,
//! fio, SPC, CloudPhysics, MQSim): a byte-line reader with a length cap (memory
//! stays bounded whatever the input), field splitting without allocation,
//! strict number parsing, and the sanity limits every parser applies.

use crate::error::ConvertError;
use crate::event::Location;
use crate::sink::Sink;
use std::io::{BufRead, ErrorKind};
use std::path::PathBuf;
use trace_format::Nanos;

/// Longest line kept; the rest of a longer line is discarded and the line
/// reported as bad, so one runaway line cannot exhaust memory.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;

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
    pub bytes: &'b [u8],
    /// The line was longer than [`MAX_LINE_BYTES`]; `bytes` holds its start.
    pub too_long: bool,
}

/// Reads lines as bytes (never assuming UTF-8), strips `\r\n` / `\n` and a
/// UTF-8 byte order mark at the start of the input.
pub(crate) struct LineReader<'a> {
    input: &'a mut dyn BufRead,
    file: &'a str,
    buf: Vec<u8>,
    number: u64,
    /// Bytes of the input buffer the last line (borrowed in place) still
    /// occupies; consumed at the next call.
    pending_consume: usize,
    /// Whether any line so far had non-whitespace content.
    pub saw_content: bool,
}

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

impl<'a> LineReader<'a> {
    pub fn new(input: &'a mut dyn BufRead, file: &'a str) -> Self {
        LineReader {
            input,
            file,
            buf: Vec::with_capacity(256),
            number: 0,
            pending_consume: 0,
            saw_content: false,
        }
    }

    /// The next line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<Line<'_>>, ConvertError> {
        if self.pending_consume > 0 {
            self.input.consume(self.pending_consume);
            self.pending_consume = 0;
        }
        // Usually the whole line is in the input's buffer: lend it from there.
        let in_buffer = find_newline(self.fill()?).filter(|&i| i <= MAX_LINE_BYTES);
        if let Some(end) = in_buffer {
            self.pending_consume = end + 1;
            let available = filled(&mut *self.input, self.file)?;
            let line = available.get(..end).unwrap_or(&[]);
            self.number += 1;
            let bytes = clean_line(line, self.number, &mut self.saw_content);
            return Ok(Some(Line {
                number: self.number,
                bytes,
                too_long: false,
            }));
        }
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ConvertError::Io {
                        path: PathBuf::from(self.file),
                        source,
                    })
                }
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let (chunk, consumed, done) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            let room = MAX_LINE_BYTES.saturating_sub(self.buf.len());
            if chunk.len() > room {
                too_long = true;
                self.buf.extend_from_slice(&chunk[..room]);
            } else {
                self.buf.extend_from_slice(chunk);
            }
            self.input.consume(consumed);
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        let bytes = clean_line(&self.buf, self.number, &mut self.saw_content);
        Ok(Some(Line {
            number: self.number,
            bytes,
            too_long,
        }))
    }

    /// The input's buffered bytes (empty at the end).
    fn fill(&mut self) -> Result<&[u8], ConvertError> {
        fill(&mut *self.input, self.file)
    }

    /// Reports an input without any content as bad (`what` names the format).
    pub fn report_if_empty(&self, sink: &mut dyn Sink, what: &str) -> Result<(), ConvertError> {
        if self.saw_content {
            return Ok(());
        }
        let reason = format!("empty input: no {what} lines");
        sink.bad_input(Location::line(self.file, self.number.max(1)), "", &reason)
    }
}

/// `input.fill_buf()`, retried when interrupted. Once it has succeeded, the
/// next `fill_buf` returns the same bytes without reading.
fn fill<'i>(input: &'i mut dyn BufRead, file: &str) -> Result<&'i [u8], ConvertError> {
    loop {
        match input.fill_buf() {
            Ok(_) => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(ConvertError::Io {
                    path: PathBuf::from(file),
                    source,
                })
            }
        }
    }
    filled(input, file)
}

/// The buffer of an input that [`fill`] has filled.
fn filled<'i>(input: &'i mut dyn BufRead, file: &str) -> Result<&'i [u8], ConvertError> {
    input.fill_buf().map_err(|source| ConvertError::Io {
        path: PathBuf::from(file),
        source,
    })
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
    reason: &str,
) -> Result<(), ConvertError> {
    sink.bad_input(
        Location::line(file, number),
        &String::from_utf8_lossy(line),
        reason,
    )
}

/// Reports an over-long line as bad input.
pub(crate) fn report_too_long(
    sink: &mut dyn Sink,
    file: &str,
    line: &Line<'_>,
) -> Result<(), ConvertError> {
    let reason = format!("line longer than {MAX_LINE_BYTES} bytes");
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

/// A non-negative decimal integer. Says "negative" for a leading minus sign,
/// "missing" for an empty field.
pub(crate) fn parse_u64(field: &[u8], what: &str) -> Result<u64, String> {
    let digits = field.strip_prefix(b"+").unwrap_or(field);
    if digits.is_empty() {
        return Err(format!("missing {what}"));
    }
    if field.first() == Some(&b'-') {
        return Err(format!("negative {what} `{}`", show(field)));
    }
    let mut value: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return Err(format!("{what} `{}` is not a whole number", show(field)));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| format!("{what} `{}` is too large", show(field)))?;
    }
    Ok(value)
}

/// A hexadecimal integer, with or without `0x`.
pub(crate) fn parse_hex_u64(field: &[u8], what: &str) -> Result<u64, String> {
    if field.is_empty() {
        return Err(format!("missing {what}"));
    }
    if field.first() == Some(&b'-') {
        return Err(format!("negative {what} `{}`", show(field)));
    }
    let digits = field
        .strip_prefix(b"0x")
        .or_else(|| field.strip_prefix(b"0X"))
        .unwrap_or(field);
    if digits.is_empty() || digits.len() > 16 {
        return Err(format!(
            "{what} `{}` is not a 64-bit hexadecimal number",
            show(field)
        ));
    }
    let mut value: u64 = 0;
    for &b in digits {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => {
                return Err(format!(
                    "{what} `{}` is not a hexadecimal number",
                    show(field)
                ))
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
) -> Result<u64, String> {
    if field.is_empty() {
        return Err(format!("missing {what}"));
    }
    if field.first() == Some(&b'-') {
        return Err(format!("negative {what} `{}`", show(field)));
    }
    let body = field.strip_prefix(b"+").unwrap_or(field);
    if body.iter().any(|&b| b == b'e' || b == b'E') {
        return parse_exponent(field, body, what, scale, style);
    }
    let too_large = || format!("{what} `{}` is too large", show(field));
    let malformed = || format!("{what} `{}` is not a number", show(field));
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
) -> Result<u64, String> {
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
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{what} `{}` is not a number", show(field)))?;
    let scaled = value * 10f64.powi(scale as i32);
    if !scaled.is_finite() || scaled >= u64::MAX as f64 {
        return Err(format!("{what} `{}` is too large", show(field)));
    }
    if scaled < 0.0 {
        return Err(format!("negative {what} `{}`", show(field)));
    }
    Ok(scaled.round() as u64)
}

/// Checks that a time or latency is below [`MAX_TIME`].
pub(crate) fn check_time(what: &str, t: Nanos) -> Result<Nanos, String> {
    if t >= MAX_TIME {
        Err(format!(
            "absurd {what} {t}: more than 146 years after the source's time zero"
        ))
    } else {
        Ok(t)
    }
}

/// Checks that `offset + len` fits in [`MAX_END`].
pub(crate) fn check_extent(offset: u64, len: u64) -> Result<(), String> {
    match offset.checked_add(len) {
        Some(end) if end <= MAX_END => Ok(()),
        _ => Err(format!(
            "offset {offset} + length {len} ends past 2^63 bytes"
        )),
    }
}

/// Multiplies a count of `unit_ns` nanoseconds, reporting overflow as absurd.
pub(crate) fn nanos_from(value: u64, unit_ns: u64, what: &str) -> Result<Nanos, String> {
    let ns = value
        .checked_mul(unit_ns)
        .ok_or_else(|| format!("absurd {what} {value}: overflows 64-bit nanoseconds"))?;
    check_time(what, Nanos(ns))
}

/// The first few non-blank lines of `head` (an input's first bytes), without a
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
        .filter(|l| !l.trim_ascii().is_empty())
        .take(max)
}

#[cfg(test)]
pub(crate) mod testing {
    //! A sink that collects everything, for the parsers' unit tests.

    use crate::error::ConvertError;
    use crate::event::{BlockEvent, Location, SourceIo};
    use crate::sink::Sink;

    #[derive(Default)]
    pub struct Collect {
        pub ios: Vec<(u64, SourceIo)>,
        /// (line, content, reason)
        pub bad: Vec<(u64, String, String)>,
        pub notes: Vec<String>,
        pub wall_clock: Option<i64>,
        /// Keep going after bad input (as `--skip-bad`).
        pub skip_bad: bool,
    }

    impl Collect {
        pub fn skipping() -> Self {
            Collect {
                skip_bad: true,
                ..Default::default()
            }
        }
    }

    fn line_of(at: &Location<'_>) -> u64 {
        match at.position {
            crate::event::Position::Line(n) => n,
            crate::event::Position::Record { index, .. } => index,
        }
    }

    impl Sink for Collect {
        fn event(&mut self, _at: Location<'_>, _e: BlockEvent) -> Result<(), ConvertError> {
            panic!("a one-line-per-request parser reported a block event");
        }
        fn io(&mut self, at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
            self.ios.push((line_of(&at), io));
            Ok(())
        }
        fn bad_input(
            &mut self,
            at: Location<'_>,
            content: &str,
            reason: &str,
        ) -> Result<(), ConvertError> {
            self.bad
                .push((line_of(&at), content.to_string(), reason.to_string()));
            if self.skip_bad {
                Ok(())
            } else {
                Err(ConvertError::BadInput {
                    location: at.to_string(),
                    content: content.to_string(),
                    reason: reason.to_string(),
                })
            }
        }
        fn note(&mut self, key: &str) {
            self.notes.push(key.to_string());
        }
        fn wall_clock(&mut self, ns: i64) {
            self.wall_clock = Some(ns);
        }
    }

    /// Runs `parse` over `text` with a skipping collector.
    pub fn run(
        parse: fn(&mut dyn std::io::BufRead, &str, &mut dyn Sink) -> Result<(), ConvertError>,
        text: &[u8],
    ) -> Collect {
        let mut sink = Collect::skipping();
        let mut input = text;
        parse(&mut input, "t.txt", &mut sink).expect("parse with skip-bad succeeds");
        sink
    }

    /// Runs `parse` over `text` stopping at the first bad input.
    pub fn run_strict(
        parse: fn(&mut dyn std::io::BufRead, &str, &mut dyn Sink) -> Result<(), ConvertError>,
        text: &[u8],
    ) -> (Collect, Result<(), ConvertError>) {
        let mut sink = Collect::default();
        let mut input = text;
        let result = parse(&mut input, "t.txt", &mut sink);
        (sink, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_strip_crlf_bom_and_cap_length() {
        let mut data = b"\xEF\xBB\xBFone\r\ntwo\n\nthree".to_vec();
        let mut input: &[u8] = &data;
        let mut r = LineReader::new(&mut input, "f");
        let mut got = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            got.push((l.number, l.bytes.to_vec(), l.too_long));
        }
        assert_eq!(
            got,
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
        let l = r.next_line().unwrap().unwrap();
        assert!(l.too_long);
        assert_eq!(l.bytes.len(), MAX_LINE_BYTES);
        let l = r.next_line().unwrap().unwrap();
        assert_eq!((l.number, l.bytes, l.too_long), (2, &b"next"[..], false));
        assert!(r.next_line().unwrap().is_none());
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
        assert!(parse_u64(b"18446744073709551616", "x")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_u64(b"-5", "size")
            .unwrap_err()
            .contains("negative size"));
        assert!(parse_u64(b"", "size").unwrap_err().contains("missing"));
        assert!(parse_u64(b"12a", "size").is_err());
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
        assert!(parse_fixed(b"1e300", "t", 9, NumberStyle::PLAIN)
            .unwrap_err()
            .contains("too large"));
        assert!(parse_fixed(b"-0.5", "t", 9, NumberStyle::PLAIN)
            .unwrap_err()
            .contains("negative"));
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
