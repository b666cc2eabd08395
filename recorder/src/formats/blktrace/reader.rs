//! The reader's state machine: one stream of records, each checked (magic,
//! version, payload length, time order) before it is handed on.

use super::record::*;
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::Location;
use crate::sink::Sink;
use std::path::PathBuf;
use std::collections::VecDeque;
use std::io::{ErrorKind, Read};

/// Reads as many bytes as are there up to `buf.len()`; returns how many.
pub(super) fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Decodes a record's header and checks its payload length; `Err` holds the
/// bad record.
#[inline]
pub(super) fn check_header(header: &[u8], pos: RecordPosition) -> Result<RawRecord, Step> {
    let Some(rec) = decode_header(header) else {
        return Err(Step::Bad {
            pos,
            dump: hex_dump(header),
            reason: bad(BadInputKind::Corrupt, "bad record header"),
            resumable: false,
        });
    };
    if rec.pdu_len > MAX_PDU_LEN {
        return Err(Step::Bad {
            pos,
            dump: hex_dump(header),
            reason: bad(BadInputKind::OutOfRange, format!(
                "absurd payload length {} (at most {MAX_PDU_LEN} expected)",
                rec.pdu_len
            )),
            resumable: false,
        });
    }
    Ok(rec)
}

/// Where a record was found in its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordPosition {
    /// 0-based record number in the stream.
    pub index: u64,
    /// Byte offset of the record (of its ftrace header, for ftrace framing).
    pub byte_offset: u64,
}

/// Streams records out of one file or pipe, checking each. Memory use is one
/// header and one payload.
pub struct RecordReader<R: Read> {
    pub(super) reader: R,
    pub(super) name: String,
    pub(super) framing: Framing,
    /// Byte order and version of the first record; every later one must match.
    pub(super) format: Option<(ByteOrder, u8)>,
    pub(super) index: u64,
    pub(super) offset: u64,
    pub(super) last_time: Option<u64>,
    pub(super) pdu: Vec<u8>,
    pub(super) finished: bool,
    /// Records read ahead to judge a jump in time (not yet judged
    /// themselves), each with its payload; empty except after a jump.
    pub(super) ahead: VecDeque<(Step, Vec<u8>)>,
    /// Payload buffers of read-ahead records, kept for reuse.
    pub(super) spare_pdus: Vec<Vec<u8>>,
}

impl<R: Read> RecordReader<R> {
    /// `name` is used in error messages (normally the file's path).
    pub fn new(reader: R, name: impl Into<String>, framing: Framing) -> Self {
        RecordReader {
            reader,
            name: name.into(),
            framing,
            format: None,
            index: 0,
            offset: 0,
            last_time: None,
            pdu: Vec::new(),
            finished: false,
            ahead: VecDeque::new(),
            spare_pdus: Vec::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The payload of the record last returned by [`next_record`](Self::next_record).
    pub fn pdu(&self) -> &[u8] {
        &self.pdu
    }

    /// Records read so far: returned, skipped, or read ahead to judge a jump.
    pub fn records_read(&self) -> u64 {
        self.index
    }

    /// The next good record, or `None` at the end of the stream. A bad record is
    /// reported to `sink.bad_input`; when the sink says go on, a record whose
    /// length is known is skipped, otherwise the stream cannot be followed and
    /// this returns an error.
    pub fn next_record(
        &mut self,
        sink: &mut dyn Sink,
    ) -> Result<Option<(RawRecord, RecordPosition)>, ConvertError> {
        loop {
            if self.finished {
                return Ok(None);
            }
            let step = match self.ahead.pop_front() {
                Some((step, mut pdu)) => {
                    std::mem::swap(&mut self.pdu, &mut pdu);
                    self.spare_pdus.push(pdu);
                    step
                }
                None => self.read_one()?,
            };
            let step = match step {
                Step::Record(rec, pos) => self.judge_time(rec, pos),
                other => other,
            };
            match step {
                Step::End => {
                    self.finished = true;
                    return Ok(None);
                }
                Step::Record(rec, pos) => return Ok(Some((rec, pos))),
                Step::Jump(rec, pos) => {
                    if let Some(record) = self.settle_jump(rec, pos, sink)? {
                        return Ok(Some(record));
                    }
                }
                Step::Bad {
                    pos,
                    dump,
                    reason,
                    resumable,
                } => {
                    let at = Location::record(&self.name, pos.index, pos.byte_offset);
                    sink.bad_input(at, &dump, &reason)?;
                    if !resumable {
                        self.finished = true;
                        return Err(ConvertError::BadInput {
                            location: at.to_string(),
                            content: dump,
                            reason: format!("{reason}; the records after it cannot be found"),
                            kind: reason.kind,
                        });
                    }
                }
                Step::Truncated { pos, dump, reason } => {
                    let at = Location::record(&self.name, pos.index, pos.byte_offset);
                    self.finished = true;
                    sink.bad_input(at, &dump, &reason)?;
                    return Ok(None);
                }
            }
        }
    }

    fn io_error(&self, source: std::io::Error) -> ConvertError {
        ConvertError::Io {
            path: PathBuf::from(&self.name),
            source,
        }
    }

    pub(super) fn read_one(&mut self) -> Result<Step, ConvertError> {
        let pos = RecordPosition {
            index: self.index,
            byte_offset: self.offset,
        };
        let mut buf = [0u8; FTRACE_HEADER_LEN + V8_HEADER_LEN];
        let prefix = match self.framing {
            Framing::Blktrace => 0,
            Framing::FtraceBin => FTRACE_HEADER_LEN,
        };
        // Prefix and magic first: they say how long the header is.
        let want = prefix + 4;
        let got = read_up_to(&mut self.reader, &mut buf[..want]).map_err(|e| self.io_error(e))?;
        if got == 0 {
            return Ok(Step::End);
        }
        if got < want {
            return Ok(Step::Truncated {
                pos,
                dump: hex_dump(&buf[..got]),
                reason: bad(BadInputKind::Truncated, format!("truncated record: the file ends {got} bytes into it")),
            });
        }
        let format = match self.check_magic(&buf[..want], prefix, pos) {
            Ok(format) => format,
            Err(bad_magic) => return Ok(bad_magic),
        };
        let header_len = header_len(format.1).unwrap_or(V7_HEADER_LEN);
        let full = prefix + header_len;
        let got = want
            + read_up_to(&mut self.reader, &mut buf[want..full]).map_err(|e| self.io_error(e))?;
        if got < full {
            return Ok(Step::Truncated {
                pos,
                dump: hex_dump(&buf[..got]),
                reason: bad(BadInputKind::Truncated, format!(
                    "truncated record: the file ends {} bytes into a {header_len}-byte header",
                    got - prefix
                )),
            });
        }
        let header = &buf[prefix..full];
        let rec = match check_header(header, pos) {
            Ok(rec) => rec,
            Err(bad_header) => return Ok(bad_header),
        };
        self.read_pdu(rec, header, full, pos)
    }

    /// The record's magic (after `prefix` bytes of `start`): its byte order
    /// and version, which must be those of the file's first record; `Err`
    /// holds the bad record.
    #[inline]
    fn check_magic(
        &mut self,
        start: &[u8],
        prefix: usize,
        pos: RecordPosition,
    ) -> Result<(ByteOrder, u8), Step> {
        let first = [
            start[prefix],
            start[prefix + 1],
            start[prefix + 2],
            start[prefix + 3],
        ];
        let Some(format) = magic_of(first) else {
            return Err(Step::Bad {
                pos,
                dump: hex_dump(start),
                reason: bad(BadInputKind::Corrupt, "bad magic: not a blktrace record (expected 0x656174 followed by version 7 or 8)"),
                resumable: false,
            });
        };
        if let Some(expected) = self.format {
            if expected != format {
                return Err(Step::Bad {
                    pos,
                    dump: hex_dump(start),
                    reason: bad(BadInputKind::Corrupt, format!(
                        "bad magic: version {} {:?}-endian record in a file of version {} {:?}-endian records",
                        format.1, format.0, expected.1, expected.0
                    )),
                    resumable: false,
                });
            }
        } else {
            self.format = Some(format);
        }
        Ok(format)
    }

    /// Reads the payload of `rec` (whose header is `header`, `full` bytes
    /// with the framing's prefix) into `self.pdu`; the whole record is
    /// consumed then.
    #[inline]
    fn read_pdu(
        &mut self,
        rec: RawRecord,
        header: &[u8],
        full: usize,
        pos: RecordPosition,
    ) -> Result<Step, ConvertError> {
        self.pdu.resize(usize::from(rec.pdu_len), 0);
        let got_pdu = read_up_to(&mut self.reader, &mut self.pdu).map_err(|e| self.io_error(e))?;
        if got_pdu < self.pdu.len() {
            return Ok(Step::Truncated {
                pos,
                dump: hex_dump(header),
                reason: bad(BadInputKind::Truncated, format!(
                    "truncated record: payload of {} bytes but the file ends after {got_pdu}",
                    rec.pdu_len
                )),
            });
        }
        // The whole record is consumed from here on: a bad one can be skipped.
        self.index += 1;
        self.offset += (full + self.pdu.len()) as u64;
        Ok(Step::Record(rec, pos))
    }

    /// Checks a whole record's time against the file's times so far: a step
    /// back of more than [`MAX_BACKWARDS`] is a bad record, a step ahead of
    /// more than that is a [`Step::Jump`] to be judged by the records after it.
    fn judge_time(&mut self, rec: RawRecord, pos: RecordPosition) -> Step {
        // Notify records are exempt: blkparse writes them into its dumps out of
        // time order (process names carry the time they were first seen).
        if rec.categories() & category::NOTIFY != 0 {
            return Step::Record(rec, pos);
        }
        if let Some(last) = self.last_time {
            if rec.time.saturating_add(MAX_BACKWARDS.0) < last {
                return Step::Bad {
                    pos,
                    dump: hex_dump(&encode_for_dump(&rec)),
                    reason: bad(BadInputKind::TimeOrder, format!(
                        "time goes backwards by {} ns (from {last} to {})",
                        last - rec.time,
                        rec.time
                    )),
                    resumable: true,
                };
            }
            if rec.time > last.saturating_add(MAX_BACKWARDS.0) {
                return Step::Jump(rec, pos);
            }
        }
        self.last_time = Some(self.last_time.map_or(rec.time, |t| t.max(rec.time)));
        Step::Record(rec, pos)
    }
}

pub(super) enum Step {
    End,
    Record(RawRecord, RecordPosition),
    /// A record more than [`MAX_BACKWARDS`] ahead of the file's times so far:
    /// an idle gap, or a bad timestamp.
    Jump(RawRecord, RecordPosition),
    Bad {
        pos: RecordPosition,
        dump: String,
        reason: BadReason,
        /// Whether the record's extent is known, so reading can go on after it.
        resumable: bool,
    },
    Truncated {
        pos: RecordPosition,
        dump: String,
        reason: BadReason,
    },
}

