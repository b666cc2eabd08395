//! Helpers for the replay tests: synthetic traces written with the real
//! writer, running `tracemark replay`, and watching a device's issued
//! requests through a private tracefs instance.

use crate::support::{SystemTest, TracingInstance};
use replayer::{IoEvent, IoLog, MemorySource, ReplayOptions, TimingMode, TraceSource};
use results::schema::SuiteResult;
use std::fs;
use std::path::Path;
use std::process::Output;
use trace_format::{Bytes, Flags, IoRecord, Nanos, Op, TraceHeader, TraceTail, TraceWriter};

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1 << 20;

pub fn rec(t_us: u64, op: Op, offset: u64, len: u64) -> IoRecord {
    IoRecord {
        time: Nanos::from_micros(t_us),
        op,
        offset: Bytes(offset),
        len: Bytes(len),
        flags: Flags::NONE,
        latency: None,
        stream: None,
        device: 0,
    }
}

pub fn with_latency(mut r: IoRecord, lat_us: u64) -> IoRecord {
    r.latency = Some(Nanos::from_micros(lat_us));
    r
}

pub fn with_flags(mut r: IoRecord, flags: Flags) -> IoRecord {
    r.flags = flags;
    r
}

/// One pass in `mode`, no warm-up.
pub fn one_pass(mode: TimingMode) -> ReplayOptions {
    ReplayOptions {
        mode,
        passes: 1,
        warmup: false,
        ..Default::default()
    }
}

/// Replays `recs` through the library onto a scratch file in `dir`: the
/// result and every I/O's event, by record index.
pub fn play_in_memory(
    dir: &Path,
    recs: Vec<IoRecord>,
    opts: &ReplayOptions,
) -> (SuiteResult, Vec<IoEvent>) {
    let src = MemorySource::new("t", recs);
    let mut ev = IoLog::default();
    let srcs: [&dyn TraceSource; 1] = [&src];
    let r = replayer::run_suite(&srcs, Some(&dir.join("scratch.bin")), opts, &mut ev).unwrap();
    ev.0.sort_by_key(|e| e.index);
    (r, ev.0)
}

/// Writes `records` as a `.tmt` file with the real writer.
pub fn write_trace(path: &Path, name: &str, records: &[IoRecord]) {
    let out = fs::File::create(path).unwrap();
    let header = TraceHeader::new(name, "test");
    let mut w = TraceWriter::new(std::io::BufWriter::new(out), &header).unwrap();
    for r in records {
        w.push(r).unwrap();
    }
    w.finish(&TraceTail::default()).unwrap();
}

/// Runs `tracemark replay ARGS...` in `dir`.
pub fn replay(dir: &Path, args: &[&str]) -> Output {
    let out = super::tracemark()
        .current_dir(dir)
        .arg("replay")
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "tracemark replay {}: {}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// One request as the block layer issued it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Issued {
    pub op: Op,
    pub offset: u64,
    pub len: u64,
}

/// A private tracing instance recording `block_rq_issue` (request-based
/// devices) or `block_bio_queue` (bio-based ones such as zram, whose requests
/// never reach a request queue) for one device; removed on drop.
pub struct IssueTracer {
    instance: TracingInstance,
    event: &'static str,
}

impl IssueTracer {
    pub fn start(t: &SystemTest, major: u32, minor: u32) -> IssueTracer {
        Self::start_event(t, "block_rq_issue", major, minor)
    }

    pub fn start_event(t: &SystemTest, event: &'static str, major: u32, minor: u32) -> IssueTracer {
        let instance = t.instance();
        let dir = &instance.dir;
        let ev = dir.join("events/block").join(event);
        let setup = || -> std::io::Result<()> {
            fs::write(dir.join("buffer_size_kb"), "8192")?;
            fs::write(
                ev.join("filter"),
                format!("dev == {}", (major << 20) | minor),
            )?;
            fs::write(ev.join("enable"), "1")?;
            fs::write(dir.join("tracing_on"), "1")
        };
        setup().unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        IssueTracer { instance, event }
    }

    /// Stops recording and returns what was issued.
    pub fn stop(&self) -> Vec<Issued> {
        self.stop_with_flags()
            .into_iter()
            .filter_map(|(rwbs, offset, len)| {
                Some(Issued {
                    op: op_of(&rwbs)?,
                    offset,
                    len,
                })
            })
            .collect()
    }

    /// Stops recording and returns each request as (its `rwbs` flags,
    /// byte offset, bytes), in the order the block layer saw them.
    pub fn stop_with_flags(&self) -> Vec<(String, u64, u64)> {
        let dir = &self.instance.dir;
        let _ = fs::write(dir.join("tracing_on"), "0");
        let text = fs::read_to_string(dir.join("trace")).unwrap();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| parse_issue_line(l, self.event))
            .collect()
    }
}

/// `... block_rq_issue: 7,0 WS 4096 () 2048 + 8 be,0,4 [tracemark]` or
/// `... block_bio_queue: 251,0 R 2048 + 8 [iou-wrk-1]`: (rwbs, byte offset,
/// bytes).
fn parse_issue_line(line: &str, event: &str) -> Option<(String, u64, u64)> {
    let rest = line.split(&format!("{event}: ")).nth(1)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let rwbs = f.get(1)?;
    let plus = f.iter().position(|s| *s == "+")?;
    let sector: u64 = f.get(plus - 1)?.parse().ok()?;
    let sectors: u64 = f.get(plus + 1)?.parse().ok()?;
    Some((rwbs.to_string(), sector * 512, sectors * 512))
}

/// The operation an `rwbs` names (discard, write, read, flush, in that
/// precedence); none for others.
fn op_of(rwbs: &str) -> Option<Op> {
    if rwbs.contains('D') {
        Some(Op::Discard)
    } else if rwbs.contains('W') {
        Some(Op::Write)
    } else if rwbs.contains('R') {
        Some(Op::Read)
    } else if rwbs.contains('F') {
        Some(Op::Flush)
    } else {
        None
    }
}

/// Switches off request merging on a loop device so each I/O stays one request.
pub fn no_merges(dev_name: &str) {
    let _ = fs::write(format!("/sys/block/{dev_name}/queue/nomerges"), "2");
}

/// A task reading in a chain (each read 400 µs in the "capture", 1 ms
/// apart), its done mark after the last read and its untraced time: a
/// trace `calibrate` accepts a realtime replay of.
pub fn write_marked_trace(path: &Path, reads: u64, untraced_ns: u64) -> Vec<IoRecord> {
    write_marked_trace_with_cpu(path, reads, untraced_ns, None)
}

/// [`write_marked_trace`] with the task's CPU time at capture.
pub fn write_marked_trace_with_cpu(
    path: &Path,
    reads: u64,
    untraced_ns: u64,
    cpu: Option<trace_format::TaskCpu>,
) -> Vec<IoRecord> {
    let recs: Vec<IoRecord> = (0..reads)
        .map(|i| with_latency(rec(i * 1_000, Op::Read, i * 64 * KIB, 64 * KIB), 400))
        .collect();
    let header = TraceHeader::new("chain", "test");
    let mut w = TraceWriter::new(
        std::io::BufWriter::new(fs::File::create(path).unwrap()),
        &header,
    )
    .unwrap();
    for r in &recs {
        w.push(r).unwrap();
    }
    let marks = trace_format::TaskMarks {
        end: Some(trace_format::Nanos(reads * 1_000_000 + 500_000)),
        untraced: Some(trace_format::Nanos(untraced_ns)),
        cpu,
        ..trace_format::TaskMarks::default()
    };
    let tail = TraceTail {
        task: marks,
        ..TraceTail::default()
    };
    w.finish(&tail).unwrap();
    recs
}
