//! fio I/O logs (`read_iolog` / `write_iolog` files), versions 2 and 3, read;
//! and written, version 3, for `tracemark export --to fio` ([`write_iolog`]).
//!
//! Version 2 (`fio version 2 iolog`): `FILE ACTION` and `FILE ACTION OFFSET LENGTH`.
//! Version 3 (`fio version 3 iolog`): the same with a leading `TIMESTAMP`.
//! Actions: `add`, `open`, `close` (file management, counted as notes), `read`,
//! `write`, `trim` (discard), `sync` and `datasync` (flush, no range), `wait`.
//! Fields are separated by white space (fio reads them with `sscanf("%s")`, so
//! file names contain no blanks); offsets and lengths are bytes.
//!
//! Times, as fio's own source defines them (iolog.c, checked at commit
//! f5344384, Aug 2026; HOWTO.rst does not state the units):
//! - v3 `TIMESTAMP` is **microseconds** since the job's log start: the writer
//!   prints `utime_since_now(&td->io_log_start_time)` and the replayer passes the
//!   differences of successive timestamps to `iolog_delay()`, which counts
//!   microseconds (the README's format table says so too). v3 does not
//!   allow `wait`; fio logs an error and ignores the line, and so do we (a note).
//! - v2 has no timestamps: every request is at time 0 (fio replays a v2 log as
//!   fast as it can), except after a `wait OFFSET` line. HOWTO says `wait` waits
//!   "offset microseconds, relative to the previous wait", but fio's replay code
//!   (since 2011, `read_iolog_get`) sleeps until `OFFSET` **milliseconds after
//!   the job started** (`mtime_since_genesis()`), i.e. an absolute time. We
//!   follow the code: a `wait N` moves the clock to `max(clock, N ms)`.
//!
//! Devices: each file named by `add` becomes device `0:index`, index counting
//! `add` lines from 0 in order. An I/O on a file that was never added is bad
//! input (fio would index its file table with -1).

use crate::formats::{FormatSpec, Reader};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::{Location, SourceIo};
use crate::formats::line_input::{
    check_extent, head_lines, nanos_from, parse_u64, report_bad, show, LineReader,
};
use crate::sink::Sink;
use std::collections::HashMap;
use std::io::BufRead;
use trace_format::{Bytes, DeviceId, Nanos, Op};

const V2_HEADER: &[u8] = b"fio version 2 iolog";
const V3_HEADER: &[u8] = b"fio version 3 iolog";

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "fio",
    aliases: &["iolog"],
    about: "fio iolog version 2 or 3",
    looks_like,
    reader: Reader::Text(parse),
    example: "fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n10 /dev/sdb read 0 4096\n20 /dev/sdb write 8192 4096\n30 /dev/sdb close\n",
};

/// Whether `head` (the first bytes of an input, up to 64 KiB) looks like this format.
pub fn looks_like(head: &[u8]) -> bool {
    head_lines(head, 1).next().and_then(version_of).is_some()
}

fn version_of(line: &[u8]) -> Option<u8> {
    match line.trim_ascii() {
        V2_HEADER => Some(2),
        V3_HEADER => Some(3),
        _ => None,
    }
}

/// What one line of the log asks for.
enum Action {
    Io(Op),
    Add,
    Open,
    Close,
    Wait,
}

fn action_of(word: &[u8]) -> Option<Action> {
    Some(match word {
        b"read" => Action::Io(Op::Read),
        b"write" => Action::Io(Op::Write),
        b"trim" => Action::Io(Op::Discard),
        b"sync" | b"datasync" => Action::Io(Op::Flush),
        b"add" => Action::Add,
        b"open" => Action::Open,
        b"close" => Action::Close,
        b"wait" => Action::Wait,
        _ => return None,
    })
}

/// Parser state across lines.
struct State {
    version: u8,
    /// File name → device minor, in order of `add`.
    files: HashMap<Vec<u8>, u32>,
    /// v2: the time `wait` lines have moved the clock to.
    clock: Nanos,
}

/// Parses the whole input, reporting what it finds to `sink`. `file` names the
/// input in messages.
pub fn parse(input: &mut dyn BufRead, file: &str, sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let mut lines = LineReader::new(input, file);
    let mut state: Option<State> = None;
    while let Some(line) = lines.next_line(sink)? {
        if line.bytes.trim_ascii().is_empty() {
            continue;
        }
        let Some(state) = state.as_mut() else {
            match version_of(line.bytes) {
                Some(version) => {
                    state = Some(State {
                        version,
                        files: HashMap::new(),
                        clock: Nanos::ZERO,
                    });
                    continue;
                }
                None => {
                    return Err(ConvertError::Invalid {
                        location: Location::line(file, line.number).to_string(),
                        reason: format!(
                            "not a fio iolog: the first line must be `fio version 2 iolog` or `fio version 3 iolog`, not `{}`",
                            show(line.bytes)
                        ),
                    })
                }
            }
        };
        match parse_line(state, line.bytes, sink) {
            Ok(Some(io)) => sink.io(Location::line(file, line.number), io)?,
            Ok(None) => {}
            Err(reason) => report_bad(sink, file, line.number, line.bytes, &reason)?,
        }
    }
    lines.report_if_empty(sink, "fio iolog")
}

/// The fields of one iolog line: its time (v3 lines carry one, v2 lines take
/// the clock the waits set), the file name, the action word and, when given,
/// the offset and length words.
struct Fields<'l> {
    time: Nanos,
    name: &'l [u8],
    action: &'l [u8],
    range: Option<(&'l [u8], &'l [u8])>,
}

fn split_fields<'l>(state: &State, line: &'l [u8]) -> Result<Fields<'l>, BadReason> {
    let mut words = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty());
    let mut word_array: [&[u8]; 6] = [&[]; 6];
    let mut count = 0;
    for w in words.by_ref() {
        if let Some(slot) = word_array.get_mut(count) {
            *slot = w;
        }
        count += 1;
    }
    let fields = word_array.get(..count.min(6)).unwrap_or(&[]);
    // v3 lines start with the timestamp.
    let (time, rest) = if state.version == 3 {
        let Some((stamp, rest)) = fields.split_first() else {
            return Err(bad(BadInputKind::Syntax, "empty line"));
        };
        let us = parse_u64(stamp, "timestamp")?;
        (nanos_from(us, 1_000, "timestamp")?, rest)
    } else {
        (state.clock, fields)
    };
    let (name, action, range) = match (rest, count - (fields.len() - rest.len())) {
        ([name, action], 2) => (*name, *action, None),
        ([name, action, offset, length], 4) => (*name, *action, Some((*offset, *length))),
        (_, n) => {
            let expected = if state.version == 3 {
                "TIMESTAMP FILE ACTION [OFFSET LENGTH]"
            } else {
                "FILE ACTION [OFFSET LENGTH]"
            };
            let found = if state.version == 3 { n + 1 } else { n };
            return Err(bad(BadInputKind::Syntax, format!("expected `{expected}`, found {found} fields")));
        }
    };
    Ok(Fields {
        time,
        name,
        action,
        range,
    })
}

fn parse_line(
    state: &mut State,
    line: &[u8],
    sink: &mut dyn Sink,
) -> Result<Option<SourceIo>, BadReason> {
    let Fields {
        time,
        name,
        action: action_word,
        range,
    } = split_fields(state, line)?;
    let Some(action) = action_of(action_word) else {
        return Err(bad(BadInputKind::UnknownOp, format!("unknown action `{}`", show(action_word))));
    };
    match (action, range) {
        (Action::Add, None) => {
            if state.files.contains_key(name) {
                sink.note("fio file added again");
            } else {
                let index =
                    u32::try_from(state.files.len()).map_err(|_| bad(BadInputKind::OutOfRange, "too many files"))?;
                state.files.insert(name.to_vec(), index);
                sink.note("fio file add");
            }
            Ok(None)
        }
        (Action::Open | Action::Close, None) => {
            if !state.files.contains_key(name) {
                return Err(bad(BadInputKind::Syntax, format!("file `{}` was not added", show(name))));
            }
            sink.note("fio file open/close");
            Ok(None)
        }
        (Action::Wait, Some((offset, _))) => {
            if state.version == 3 {
                // fio: "ignoring wait command with version 3".
                sink.note("fio v3 wait ignored");
                return Ok(None);
            }
            let ms = parse_u64(offset, "wait time")?;
            let until = nanos_from(ms, 1_000_000, "wait time")?;
            state.clock = state.clock.max(until);
            sink.note("fio wait");
            Ok(None)
        }
        (Action::Io(op), Some((offset, length))) => {
            io_of(state, time, name, op, offset, length).map(Some)
        }
        (Action::Add | Action::Open | Action::Close, Some(_)) => Err(bad(BadInputKind::Syntax, format!(
            "file action `{}` takes no offset and length",
            show(action_word)
        ))),
        (Action::Io(_) | Action::Wait, None) => Err(bad(BadInputKind::Syntax, format!(
            "action `{}` needs an offset and a length",
            show(action_word)
        ))),
    }
}

/// The I/O of a read, write, trim or sync line on file `name`.
fn io_of(
    state: &State,
    time: Nanos,
    name: &[u8],
    op: Op,
    offset: &[u8],
    length: &[u8],
) -> Result<SourceIo, BadReason> {
    let offset = parse_u64(offset, "offset")?;
    let length = parse_u64(length, "length")?;
    check_extent(offset, length)?;
    let Some(&minor) = state.files.get(name) else {
        return Err(bad(BadInputKind::Syntax, format!("file `{}` was not added", show(name))));
    };
    // A sync has no range, whatever the log says.
    let (offset, length) = if op == Op::Flush {
        (0, 0)
    } else {
        (offset, length)
    };
    let device = DeviceId { major: 0, minor };
    Ok(SourceIo::request(time, device, op, Bytes(offset), Bytes(length)))
}

/// The fio file name of each device of the trace, for [`write_iolog`]: `base`
/// (default `/dev/NAME` of the original device when known, else
/// `tracemark-target`) for the first, `BASE.1`, `BASE.2`, ... for the others.
pub fn iolog_file_names(file: &trace_format::TraceFile, base: Option<&str>) -> Vec<String> {
    let devices = file.footer().tail.devices.len().max(1);
    let first = base.map(str::to_string).unwrap_or_else(|| {
        file.header()
            .original_device
            .as_ref()
            .filter(|d| !d.name.is_empty())
            .map(|d| format!("/dev/{}", d.name))
            .unwrap_or_else(|| "tracemark-target".to_string())
    });
    (0..devices)
        .map(|i| {
            if i == 0 {
                first.clone()
            } else {
                format!("{first}.{i}")
            }
        })
        .collect()
}

/// Writes a fio v3 iolog (`TIME FILE ACTION [OFFSET LENGTH]`, times in
/// microseconds), one file per name in `names` (indexed by the record's
/// device). Flushes become `sync`, discards `trim`; fio has no write-zeroes,
/// so those become `trim` too (the same effect on the data: it reads back as
/// zeroes on devices that zero discarded blocks). Returns how many
/// write-zeroes were written as `trim`, for the caller to say so.
pub fn write_iolog<E: From<std::io::Error> + From<ConvertError>>(
    records: impl Iterator<Item = Result<trace_format::IoRecord, E>>,
    names: &[String],
    out: &mut impl std::io::Write,
) -> Result<u64, E> {
    writeln!(out, "fio version 3 iolog")?;
    for n in names {
        writeln!(out, "0 {n} add")?;
    }
    for n in names {
        writeln!(out, "0 {n} open")?;
    }
    let mut last_us = 0;
    let mut zeroes = 0u64;
    for r in records {
        let r = r?;
        let us = r.time.0 / 1000;
        last_us = us;
        let name = names
            .get(usize::from(r.device))
            .ok_or_else(|| ConvertError::Invalid {
                location: format!("record at {}", r.time),
                reason: format!(
                    "names device {} outside the trace's device table",
                    r.device
                ),
            })?;
        let action = match r.op {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "sync",
            Op::Discard => "trim",
            Op::WriteZeroes => {
                zeroes += 1;
                "trim"
            }
        };
        writeln!(out, "{us} {name} {action} {} {}", r.offset.0, r.len.0)?;
    }
    for n in names {
        writeln!(out, "{last_us} {n} close")?;
    }
    Ok(zeroes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::line_input::testing::{run, run_strict};

    #[test]
    fn detects_both_versions_only() {
        assert!(looks_like(b"fio version 2 iolog\n/dev/sda add\n"));
        assert!(looks_like(b"fio version 3 iolog\r\n"));
        assert!(looks_like(b"\xEF\xBB\xBFfio version 3 iolog"));
        assert!(!looks_like(b"fio version 1 iolog\n"));
        assert!(!looks_like(b"0,0,4096\n"));
        assert!(!looks_like(b""));
        assert!(!looks_like(b"1,h,0,Read,0,512,1\n"));
    }

    #[test]
    fn v3_times_are_microseconds_and_files_are_devices() {
        let log = b"fio version 3 iolog\n\
30 /dev/a add\n\
31 /dev/b add\n\
10731 /dev/a open\n\
10736 /dev/a trim 0 2147483648\n\
10752 /dev/a write 0 4096\n\
10760 /dev/b read 8192 512\n\
10770 /dev/b sync 0 0\n\
10771 /dev/b datasync 5 5\n\
10892 /dev/a close\n";
        let out = run(parse, log);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        let got: Vec<(u64, Nanos, Op, u32, u64, u64)> = out
            .ios
            .iter()
            .map(|(l, io)| (*l, io.time, io.op, io.device.minor, io.offset.0, io.len.0))
            .collect();
        assert_eq!(
            got,
            vec![
                (5, Nanos(10_736_000), Op::Discard, 0, 0, 2147483648),
                (6, Nanos(10_752_000), Op::Write, 0, 0, 4096),
                (7, Nanos(10_760_000), Op::Read, 1, 8192, 512),
                (8, Nanos(10_770_000), Op::Flush, 1, 0, 0),
                (9, Nanos(10_771_000), Op::Flush, 1, 0, 0),
            ]
        );
        assert_eq!(out.notes.iter().filter(|n| *n == "fio file add").count(), 2);
        assert_eq!(
            out.notes
                .iter()
                .filter(|n| *n == "fio file open/close")
                .count(),
            2
        );
    }

    #[test]
    fn v2_times_are_zero_until_a_wait_in_milliseconds_since_start() {
        let log = b"fio version 2 iolog\n\
/f add\n\
/f open\n\
/f read 0 4096\n\
/f wait 5 0\n\
/f write 4096 4096\n\
/f wait 2 0\n\
/f write 8192 4096\n\
/f close\n";
        let out = run(parse, log);
        assert!(out.bad.is_empty(), "{:?}", out.bad);
        let times: Vec<Nanos> = out.ios.iter().map(|(_, io)| io.time).collect();
        assert_eq!(times, vec![Nanos(0), Nanos(5_000_000), Nanos(5_000_000)]);
        assert!(out.notes.iter().any(|n| n == "fio wait"));
    }

    #[test]
    fn v3_wait_is_ignored_like_fio() {
        let out = run(
            parse,
            b"fio version 3 iolog\n0 /f add\n5 /f wait 100 0\n6 /f read 0 1\n",
        );
        assert!(out.bad.is_empty());
        assert_eq!(out.ios.len(), 1);
        assert_eq!(out.ios[0].1.time, Nanos(6000));
        assert!(out.notes.iter().any(|n| n == "fio v3 wait ignored"));
    }

    #[test]
    fn add_twice_keeps_the_first_index() {
        let out = run(
            parse,
            b"fio version 2 iolog\n/a add\n/b add\n/a add\n/b read 0 1\n",
        );
        assert_eq!(out.ios[0].1.device.minor, 1);
        assert!(out.notes.iter().any(|n| n == "fio file added again"));
    }

    #[test]
    fn bad_lines() {
        let log: &[u8] = b"fio version 3 iolog\n\
0 /f add\n\
1 /f read 0\n\
2 /f frobnicate 0 1\n\
3 /g read 0 4096\n\
4 /f read -1 4096\n\
5 /f read 0 -4096\n\
6 /f write 9223372036854775807 4096\n\
-7 /f read 0 1\n\
99999999999999999999 /f read 0 1\n\
18446744073709551 /f read 0 1\n\
8 /f read 0x10 1\n\
9 /f open 0 1\n\
10 /f read 0 1 extra\n\
11 /\xff\xfe read 0 1\n\
12 /f read 0 1\n\
13 /f rea";
        let out = run(parse, log);
        let expect = [
            (3, "found 4 fields"),
            (4, "unknown action `frobnicate`"),
            (5, "`/g` was not added"),
            (6, "negative offset"),
            (7, "negative length"),
            (8, "past 2^63"),
            (9, "negative timestamp"),
            (10, "too large"),
            (11, "absurd timestamp"),
            (12, "not a whole number"),
            (13, "takes no offset"),
            (14, "found 6 fields"),
            (15, "was not added"),
            (17, "unknown action `rea`"),
        ];
        out.assert_bad_lines(&expect);
        assert_eq!(out.ios.len(), 1);
        assert_eq!(out.ios[0].0, 16);
    }

    #[test]
    fn missing_header_is_an_error_even_when_skipping() {
        let mut sink = crate::formats::line_input::testing::Collect::skipping();
        let mut input: &[u8] = b"/f add\n/f read 0 1\n";
        let err = parse(&mut input, "x.log", &mut sink)
            .unwrap_err()
            .to_string();
        assert!(err.contains("x.log:1"), "{err}");
        assert!(err.contains("not a fio iolog"), "{err}");
    }

    #[test]
    fn empty_input_is_bad_but_header_only_is_fine() {
        let (_, result) = run_strict(parse, b"");
        assert!(result.unwrap_err().to_string().contains("empty input"));
        let (out, result) = run_strict(parse, b"fio version 2 iolog\n");
        assert!(result.is_ok());
        assert!(out.ios.is_empty());
    }
}
