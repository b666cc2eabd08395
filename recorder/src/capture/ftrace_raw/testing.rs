//! Format files and page building shared by the decoder's tests and the
//! capture's merge tests.

use super::*;

// The files of Linux 6.18 (x86-64), as tracefs prints them.
pub(crate) const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";
pub(crate) const HEADER_EVENT: &str = "# compressed entry header
\ttype_len    :    5 bits
\ttime_delta  :   27 bits
\tarray       :   32 bits

\tpadding     : type == 29
\ttime_extend : type == 30
\ttime_stamp : type == 31
\tdata max type_len  == 28
";
pub(crate) const ISSUE: &str = "name: block_rq_issue
ID: 2104
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;
\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;

print fmt: \"%d,%d %s %u (%s) %llu + %u %s,%u,%u [%s]\", REC->dev
";
pub(crate) const COMPLETE: &str = "name: block_rq_complete
ID: 2107
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;

print fmt: \"%d,%d %s (%s) %llu + %u %s,%u,%u [%d]\", REC->dev
";
pub(crate) const REQUEUE: &str = "name: block_rq_requeue
ID: 2108
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:unsigned short ioprio;\toffset:28;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:30;\tsize:10;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:40;\tsize:4;\tsigned:0;

print fmt: \"%d,%d %s (%s) %llu + %u %s,%u,%u [%d]\", REC->dev
";
/// An older layout (no ioprio, 8-byte rwbs, the error before rwbs moved)
/// to show offsets come from the file, not from this code.
pub(crate) const COMPLETE_OLD: &str = "name: block_rq_complete
ID: 1177
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:int errors;\toffset:28;\tsize:4;\tsigned:1;
\tfield:int error;\toffset:32;\tsize:4;\tsigned:1;
\tfield:char rwbs[8];\toffset:36;\tsize:8;\tsigned:1;
\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:1;
";

/// The bio events of Linux 6.18 (x86-64): no `bytes`, no `cmd`; the
/// queue event has the task's `comm`, the completion an `error`.
pub(crate) const BIO_QUEUE: &str = "name: block_bio_queue
ID: 2097
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:char rwbs[10];\toffset:28;\tsize:10;\tsigned:0;
\tfield:char comm[16];\toffset:38;\tsize:16;\tsigned:0;

print fmt: \"%d,%d %s %llu + %u [%s]\", ((unsigned int) ((REC->dev) >> 20))
";
pub(crate) const BIO_COMPLETE: &str = "name: block_bio_complete
ID: 2100
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;
\tfield:char rwbs[10];\toffset:32;\tsize:10;\tsigned:0;

print fmt: \"%d,%d %s %llu + %u [%d]\", ((unsigned int) ((REC->dev) >> 20))
";

/// (block_bio_queue, block_bio_complete).
pub(crate) fn bio_formats() -> (EventFormat, EventFormat) {
    (
        parse_event_format("bio_queue/format", BIO_QUEUE).unwrap(),
        parse_event_format("bio_complete/format", BIO_COMPLETE).unwrap(),
    )
}

pub(crate) fn formats() -> (EventFormat, EventFormat, EventFormat) {
    (
        parse_event_format("issue/format", ISSUE).unwrap(),
        parse_event_format("complete/format", COMPLETE).unwrap(),
        parse_event_format("requeue/format", REQUEUE).unwrap(),
    )
}

/// A decoder of all five events.
pub(crate) fn decoder() -> BlockDecoder {
    let (i, c, r) = formats();
    let (q, bc) = bio_formats();
    BlockDecoder::new(&[("i", &i), ("c", &c), ("r", &r), ("q", &q), ("bc", &bc)]).unwrap()
}

pub(crate) fn layout() -> PageLayout {
    parse_header_page("events/header_page", HEADER_PAGE).unwrap()
}

/// Writes a field's value into a record at the place its format gives.
pub(crate) fn put(rec: &mut [u8], format: &EventFormat, name: &str, value: u64) {
    let f = format.field(name).unwrap();
    let bytes = value.to_ne_bytes();
    let bytes = if cfg!(target_endian = "big") {
        &bytes[8 - f.size..]
    } else {
        &bytes[..f.size]
    };
    rec[f.offset..f.offset + f.size].copy_from_slice(bytes);
}

pub(crate) fn put_str(rec: &mut [u8], format: &EventFormat, name: &str, value: &str) {
    let f = format.field(name).unwrap();
    rec[f.offset..f.offset + f.size].fill(0);
    rec[f.offset..f.offset + value.len()].copy_from_slice(value.as_bytes());
}

/// A block request or bio record built from its format: the size is the
/// last field's end, plus the (empty) `cmd` string where it has one.
pub(crate) fn record(
    format: &EventFormat,
    dev: u64,
    sector: u64,
    nr_sector: u64,
    rwbs: &str,
    pid: u64,
) -> Vec<u8> {
    let end = format
        .fields
        .iter()
        .map(|f| f.offset + f.size)
        .max()
        .unwrap();
    let mut rec = vec![0u8; end + 1];
    put(&mut rec, format, "common_type", u64::from(format.id));
    put(&mut rec, format, "common_pid", pid);
    put(&mut rec, format, "dev", dev);
    put(&mut rec, format, "sector", sector);
    put(&mut rec, format, "nr_sector", nr_sector);
    if format.field("bytes").is_some() {
        put(&mut rec, format, "bytes", nr_sector * 512);
    }
    put_str(&mut rec, format, "rwbs", rwbs);
    // cmd: one NUL byte at the end of the record.
    if format.field("cmd").is_some() {
        let loc = (1u64 << 16) | end as u64;
        put(&mut rec, format, "cmd", loc);
    }
    rec
}

pub(crate) fn header_word(type_len: u32, delta: u32) -> u32 {
    if cfg!(target_endian = "big") {
        (type_len << TIME_DELTA_BITS) | delta
    } else {
        type_len | (delta << 5)
    }
}

/// Builds a page byte by byte, as the kernel lays it out.
pub(crate) struct PageBuilder {
    pub(crate) data: Vec<u8>,
    pub(crate) timestamp: u64,
}

impl PageBuilder {
    pub(crate) fn new(timestamp: u64) -> Self {
        PageBuilder {
            data: Vec::new(),
            timestamp,
        }
    }
    pub(crate) fn word(&mut self, w: u32) -> &mut Self {
        self.data.extend_from_slice(&w.to_ne_bytes());
        self
    }
    /// A data record: short form when it fits 28 words, else the length word.
    pub(crate) fn record(&mut self, delta: u32, payload: &[u8]) -> &mut Self {
        let padded = payload.len().div_ceil(4) * 4;
        if padded <= 4 * TYPE_DATA_MAX as usize && !payload.is_empty() {
            self.word(header_word((padded / 4) as u32, delta));
        } else {
            self.word(header_word(0, delta));
            self.word(padded as u32 + 4);
        }
        self.data.extend_from_slice(payload);
        self.data
            .resize(self.data.len() + padded - payload.len(), 0);
        self
    }
    pub(crate) fn extend(&mut self, delta: u64) -> &mut Self {
        self.word(header_word(TYPE_TIME_EXTEND, (delta & 0x7ff_ffff) as u32));
        self.word((delta >> TIME_DELTA_BITS) as u32)
    }
    pub(crate) fn stamp(&mut self, time: u64) -> &mut Self {
        self.word(header_word(TYPE_TIME_STAMP, (time & 0x7ff_ffff) as u32));
        self.word(((time >> TIME_DELTA_BITS) & 0xffff_ffff) as u32)
    }
    pub(crate) fn padding(&mut self, delta: u32, len: u32) -> &mut Self {
        self.word(header_word(TYPE_PADDING, delta));
        self.word(len);
        self.data.resize(self.data.len() + len as usize - 4, 0xee);
        self
    }
    /// The page as `trace_pipe_raw` returns it: header, data, lost count,
    /// zeros to the page size.
    pub(crate) fn build(&self, layout: &PageLayout, missed: Option<Option<u64>>) -> Vec<u8> {
        let mut page = vec![0u8; layout.page_size];
        page[0..8].copy_from_slice(&self.timestamp.to_ne_bytes());
        let mut commit = self.data.len() as u64;
        let at = layout.data_offset;
        page[at..at + self.data.len()].copy_from_slice(&self.data);
        if let Some(count) = missed {
            commit |= COMMIT_MISSED_EVENTS;
            if let Some(n) = count {
                commit |= COMMIT_MISSED_STORED;
                let end = at + self.data.len();
                page[end..end + 8].copy_from_slice(&n.to_ne_bytes());
            }
        }
        page[8..16].copy_from_slice(&commit.to_ne_bytes());
        page
    }
}

pub(crate) fn events(page: &[u8], cpu: u32) -> Result<Vec<(u64, Parsed)>, PageError> {
    let d = decoder();
    let p = open_page(&layout(), page, cpu, 7)?;
    p.records()
        .map(|r| {
            r.map(|r| {
                let parsed = d.decode(Nanos(r.time), r.payload).unwrap();
                (r.time, parsed)
            })
        })
        .collect()
}

pub(crate) fn event(parsed: &Parsed) -> crate::event::BlockEvent {
    match parsed {
        Parsed::Event(e) => *e,
        other => panic!("not an event: {other:?}"),
    }
}

pub(crate) const LOOP0: u64 = 7 << 20;
