//! Alibaba Cloud block traces (`io_traces.csv` of the 2020 elastic block
//! service release): `device_id,opcode,offset,length,timestamp`, no header,
//! e.g. `0,R,126703644672,4096,1577808000000626`.
//!
//! As the publisher documents it: device_id is the virtual disk (a `u32`,
//! here device `0:ID`, the volume `--volume ID` keeps); opcode is `R` or `W`;
//! offset and length are bytes; timestamp is microseconds since the Unix
//! epoch. One file holds every disk's requests, interleaved; rows are not
//! strictly sorted by time, which the normaliser's reorder window absorbs.

use super::request_lines::{
    csv_row, head_has_requests, is_header, parse_lines, read_or_write, volume_device, Parsed,
};
use crate::error::{BadReason, ConvertError};
use crate::formats::{FormatSpec, Reader};
use crate::event::SourceIo;
use crate::formats::line_input::{check_extent, nanos_from, parse_u64};
use crate::sink::Sink;
use std::io::BufRead;
use trace_format::Bytes;

const HEADER: &str = "device_id,opcode,offset,length,timestamp";

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "alibaba",
    aliases: &["alibaba-cloud"],
    about: "Alibaba Cloud block traces (device_id,opcode,offset,length,timestamp; bytes, µs)",
    looks_like,
    reader: Reader::Text(parse),
    example: "0,R,126703644672,4096,1577808000000626\n7,W,0,512,1577808000001000\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(head: &[u8]) -> bool {
    head_has_requests(head, parse_line)
}

fn parse_line(line: &[u8]) -> Result<Parsed, BadReason> {
    if is_header(line, HEADER) {
        return Ok(Parsed::Note("alibaba header line"));
    }
    let f = csv_row::<6>(line, HEADER)?;
    let device = volume_device(f.get(0), "device_id")?;
    let op = read_or_write(f.get(1), "opcode")?;
    let offset = parse_u64(f.get(2), "offset")?;
    let len = parse_u64(f.get(3), "length")?;
    let time = nanos_from(parse_u64(f.get(4), "timestamp")?, 1_000, "timestamp")?;
    check_extent(offset, len)?;
    Ok(Parsed::Io(SourceIo::request(time, device, op, Bytes(offset), Bytes(len))))
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    parse_lines(input, file, sink, "Alibaba block trace", parse_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_documented};
    use trace_format::{Nanos, Op};

    /// The publisher's example row, then rows written from the schema: a
    /// write on another disk, out of time order by 374 µs.
    const DOC: &[u8] = b"0,R,126703644672,4096,1577808000000626\n\
7,W,0,512,1577808000001000\n\
0,W,126703648768,65536,1577808000000626\n\
4294967295,r,8192,4096,1577808000000252\n";

    #[test]
    fn documented_rows_convert_exactly() {
        let out = run_documented(looks_like, parse, DOC);
        assert_eq!(
            out.requests(),
            vec![
                (0, Op::Read, 126703644672, 4096, Nanos(1577808000000626000)),
                (7, Op::Write, 0, 512, Nanos(1577808000001000000)),
                (
                    0,
                    Op::Write,
                    126703648768,
                    65536,
                    Nanos(1577808000000626000)
                ),
                (u32::MAX, Op::Read, 8192, 4096, Nanos(1577808000000252000)),
            ]
        );
        assert!(out.ios.iter().all(|(_, io)| io.device.major == 0));
    }

    #[test]
    fn header_is_noted_not_an_io() {
        let text = b"device_id,opcode,offset,length,timestamp\n0,R,0,4096,1\n";
        assert!(looks_like(text));
        let out = run(parse, text);
        assert_eq!(out.ios.len(), 1);
        assert_eq!(out.notes, vec!["alibaba header line".to_string()]);
    }

    #[test]
    fn not_other_formats() {
        assert!(!looks_like(b"0,303567,3584,w,0.000000\n"));
        assert!(!looks_like(b"1538323200,1024,8,0,1063\n"));
        assert!(!looks_like(
            b"128166372003061629,web,1,Read,3154152960,32768,18741\n"
        ));
        assert!(!looks_like(b"version,time,op,size,lbn\n"));
        assert!(!looks_like(b""));
    }

    #[test]
    fn bad_rows_name_the_field() {
        let text = b"0,R,0,4096,1\n0,X,0,4096,1\n0,R,0,4096\n4294967296,R,0,1,1\n0,R,-1,1,1\n0,R,0,1,18446744073709551615\n";
        let out = run(parse, text);
        let reasons: Vec<(u64, &str)> = out.bad.iter().map(|(l, _, r)| (*l, r.as_str())).collect();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert!(reasons[0].1.contains("neither R nor W"), "{reasons:?}");
        assert!(reasons[1].1.contains("expected 5"), "{reasons:?}");
        assert!(reasons[2].1.contains("too large"), "{reasons:?}");
        assert!(reasons[3].1.contains("offset"), "{reasons:?}");
        assert!(reasons[4].1.contains("absurd"), "{reasons:?}");
        assert_eq!(out.ios.len(), 1);
    }
}
