//! MQSim's trace format (CMU-SAFARI MQSim README, "ASCII disk traces"): the
//! DiskSim ASCII layout `arrival_time device start_LBA size type` with
//! integer times in nanoseconds (MQSim's trace `Time_Unit`), e.g.
//! `11413000 0 657728 16 1`. LBA and size are 512-byte sectors; type is 0
//! (write) or 1 (read); device is device `0:N` (`--volume N`).

use super::disksim::{parse_line, shape, TimeUnit};
use super::request_lines::{parse_lines, Parsed};
use crate::error::{BadReason, ConvertError};
use crate::formats::{FormatSpec, Reader};
use crate::sink::Sink;
use std::io::BufRead;

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "mqsim",
    aliases: &[],
    about: "MQSim ASCII traces (time_ns device lba sectors type; 0=write, 1=read)",
    looks_like,
    reader: Reader::Text(parse),
    example: "4851300 1 524288 16 0\n4864300 1 524304 16 1\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this
/// format: five numbers per line with an integer time.
pub fn looks_like(head: &[u8]) -> bool {
    shape(head) == (true, false) && head_has_binary_types(head)
}

/// MQSim types are exactly 0 or 1.
fn head_has_binary_types(head: &[u8]) -> bool {
    crate::formats::line_input::head_lines(head, 4).all(|l| parse_ns(l).is_ok())
}

fn parse_ns(line: &[u8]) -> Result<Parsed, BadReason> {
    parse_line(line, TimeUnit::Nanoseconds)
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "MQSim trace", parse_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_documented};
    use trace_format::{Nanos, Op};

    /// The README's example lines (sequential 8 KiB writes on device 1), and
    /// a read.
    const DOC: &[u8] = b"4851300 1 524288 16 0\n\
4864300 1 524304 16 0\n\
4871300 0 0 8 1\n";

    #[test]
    fn documented_rows_convert_exactly() {
        let out = run_documented(looks_like, parse, DOC);
        assert_eq!(
            out.requests(),
            vec![
                (1, Op::Write, 524288 * 512, 8192, Nanos(4851300)),
                (1, Op::Write, 524304 * 512, 8192, Nanos(4864300)),
                (0, Op::Read, 0, 4096, Nanos(4871300)),
            ]
        );
    }

    #[test]
    fn shape_checks() {
        assert!(!looks_like(b"12.5 0 657728 16 1\n"));
        assert!(!looks_like(b"12 0 657728 16 5\n"));
        let out = run(parse, b"1 0 0 8 2\n1 0 0 8\n");
        let reasons: Vec<&str> = out.bad.iter().map(|(_, _, r)| r.as_str()).collect();
        assert!(reasons[0].contains("neither 0"), "{reasons:?}");
        assert!(reasons[1].contains("expected 5"), "{reasons:?}");
    }
}
