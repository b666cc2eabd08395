//! DiskSim's ASCII trace format (DiskSim 4.0 manual, "ascii" input): one
//! request per line, five blank-separated fields
//! `arrival_time device block_number size flags`, e.g. `12.500 0 657728 16 1`.
//!
//! arrival_time is milliseconds (decimal); device is the device number (here
//! device `0:N`, the volume `--volume N` keeps); block_number and size are
//! 512-byte blocks; flags bit 0 set is a read, clear a write (other bits are
//! DiskSim's own and ignored). MQSim reads the same layout with integer
//! nanosecond times: see the `mqsim` module, which shares this parser.

use super::request_lines::{parse_lines, volume_device, zero_or_one, Parsed};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::formats::{FormatSpec, Reader};
use crate::event::SourceIo;
use crate::formats::line_input::{
    check_extent, check_time, head_lines, parse_fixed, parse_u64, sectors_to_bytes, NumberStyle,
};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::{Nanos, Op};

/// Time unit of the first field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeUnit {
    /// DiskSim: decimal milliseconds.
    Milliseconds,
    /// MQSim: integer nanoseconds.
    Nanoseconds,
}

/// The blank-separated fields of a line (at most 6 kept, all counted).
fn fields(line: &[u8]) -> (usize, [&[u8]; 5]) {
    let mut out: [&[u8]; 5] = [&[]; 5];
    let mut n = 0;
    for f in line
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
    {
        if let Some(slot) = out.get_mut(n) {
            *slot = f;
        }
        n += 1;
    }
    (n, out)
}

/// Whether the first request line of `head` has a decimal time, and whether
/// the first few lines all have the five-number shape: (shape, decimal).
pub(crate) fn shape(head: &[u8]) -> (bool, bool) {
    let mut seen = 0;
    let mut decimal = false;
    for line in head_lines(head, 4) {
        if parse_line(line, TimeUnit::Milliseconds).is_err() {
            return (false, false);
        }
        let (_, f) = fields(line);
        if seen == 0 {
            decimal = f[0].contains(&b'.');
        }
        seen += 1;
    }
    (seen > 0, decimal)
}

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "disksim",
    aliases: &[],
    about: "DiskSim ASCII traces (time_ms device block blocks flags; bit 0 = read)",
    looks_like,
    reader: Reader::Text(parse),
    example: "12.500000 0 657728 16 1\n13.000250 1 31244784 64 0\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this
/// format: the five-number shape with a decimal time (integer times are
/// taken as MQSim's nanoseconds; `--format disksim` reads them as ms).
pub fn looks_like(head: &[u8]) -> bool {
    shape(head) == (true, true)
}

/// Parses one line with times in `unit`.
pub(crate) fn parse_line(line: &[u8], unit: TimeUnit) -> Result<Parsed, BadReason> {
    let (n, f) = fields(line);
    if n != 5 {
        return Err(bad(BadInputKind::Syntax, format!(
            "expected 5 blank-separated fields (time device block size flags), found {n}"
        )));
    }
    let time = match unit {
        TimeUnit::Milliseconds => Nanos(parse_fixed(f[0], "arrival time", 6, NumberStyle::PLAIN)?),
        TimeUnit::Nanoseconds => Nanos(parse_u64(f[0], "arrival time")?),
    };
    let time = check_time("arrival time", time)?;
    let device = volume_device(f[1], "device number")?;
    let offset = sectors_to_bytes(parse_u64(f[2], "block number")?, "block", "")?;
    let len = sectors_to_bytes(parse_u64(f[3], "size")?, "size", "blocks")?;
    let op = match unit {
        TimeUnit::Milliseconds => {
            if parse_u64(f[4], "flags")? & 1 == 1 {
                Op::Read
            } else {
                Op::Write
            }
        }
        TimeUnit::Nanoseconds => zero_or_one(f[4], "request type", Op::Write, Op::Read)?,
    };
    check_extent(offset.0, len.0)?;
    Ok(Parsed::Io(SourceIo::request(time, device, op, offset, len)))
}

fn parse_ms(line: &[u8]) -> Result<Parsed, BadReason> {
    parse_line(line, TimeUnit::Milliseconds)
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "DiskSim ASCII trace", parse_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::run_documented;

    /// Lines written from the manual's field list: a read at 12.5 ms, a write
    /// on device 1 with DiskSim's flag value 0, a read with extra flag bits.
    const DOC: &[u8] = b"12.500000 0 657728 16 1\n\
13.000250 1 31244784 64 0\n\
100.0 2 0 8 5\n";

    #[test]
    fn documented_rows_convert_exactly() {
        let out = run_documented(looks_like, parse, DOC);
        assert_eq!(
            out.requests(),
            vec![
                (0, Op::Read, 657728 * 512, 16 * 512, Nanos(12_500_000)),
                (1, Op::Write, 31244784 * 512, 64 * 512, Nanos(13_000_250)),
                (2, Op::Read, 0, 8 * 512, Nanos(100_000_000)),
            ]
        );
    }

    #[test]
    fn integer_times_are_not_disksim() {
        assert!(!looks_like(b"11413000 0 657728 16 1\n"));
        assert!(!looks_like(b"12.5 0 657728 16\n"));
        assert!(!looks_like(b"0,R,0,4096,1\n"));
    }
}
