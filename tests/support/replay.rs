//! Helpers for the replay tests: synthetic traces written with the real
//! writer, running `tracemark replay`, and watching a device's issued
//! requests through a private tracefs instance.

use std::fs;
use std::path::{Path, PathBuf};
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
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tracemark"))
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

/// A private tracefs instance recording `block_rq_issue` (request-based
/// devices) or `block_bio_queue` (bio-based ones such as zram, whose requests
/// never reach a request queue) for one device; removed on drop. Hold a
/// `TracefsLock` while it lives.
pub struct IssueTracer {
    dir: PathBuf,
    event: &'static str,
}

impl IssueTracer {
    pub fn start(tracefs: &Path, major: u32, minor: u32) -> std::io::Result<IssueTracer> {
        Self::start_event(tracefs, "block_rq_issue", major, minor)
    }

    pub fn start_event(
        tracefs: &Path,
        event: &'static str,
        major: u32,
        minor: u32,
    ) -> std::io::Result<IssueTracer> {
        remove_stale_instances(tracefs);
        let dir = tracefs
            .join("instances")
            .join(format!("tracemark-replay-{}", std::process::id()));
        let _ = fs::remove_dir(&dir);
        fs::create_dir(&dir)?;
        let t = IssueTracer { dir, event };
        fs::write(t.dir.join("buffer_size_kb"), "8192")?;
        let ev = t.dir.join("events/block").join(event);
        fs::write(
            ev.join("filter"),
            format!("dev == {}", (major << 20) | minor),
        )?;
        fs::write(ev.join("enable"), "1")?;
        fs::write(t.dir.join("tracing_on"), "1")?;
        Ok(t)
    }

    /// Stops recording and returns what was issued.
    pub fn stop(&self) -> Vec<Issued> {
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        let text = fs::read_to_string(self.dir.join("trace")).unwrap();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| parse_issue_line(l, self.event))
            .collect()
    }
}

impl Drop for IssueTracer {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        let _ = fs::write(
            self.dir
                .join("events/block")
                .join(self.event)
                .join("enable"),
            "0",
        );
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Removes the instances of test processes that are gone (killed before their
/// `IssueTracer` was dropped), switching their events off first.
fn remove_stale_instances(tracefs: &Path) {
    let Ok(entries) = fs::read_dir(tracefs.join("instances")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name.strip_prefix("tracemark-replay-") else {
            continue;
        };
        if pid.parse::<u32>().is_err() || Path::new("/proc").join(pid).exists() {
            continue;
        }
        let dir = entry.path();
        let _ = fs::write(dir.join("tracing_on"), "0");
        let _ = fs::write(dir.join("events/enable"), "0");
        let _ = fs::remove_dir(&dir);
    }
}

/// `... block_rq_issue: 7,0 WS 4096 () 2048 + 8 be,0,4 [tracemark]` or
/// `... block_bio_queue: 251,0 R 2048 + 8 [iou-wrk-1]`
fn parse_issue_line(line: &str, event: &str) -> Option<Issued> {
    let rest = line.split(&format!("{event}: ")).nth(1)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let rwbs = f.get(1)?;
    let op = if rwbs.contains('D') {
        Op::Discard
    } else if rwbs.contains('W') {
        Op::Write
    } else if rwbs.contains('R') {
        Op::Read
    } else if rwbs.contains('F') {
        Op::Flush
    } else {
        return None;
    };
    let plus = f.iter().position(|s| *s == "+")?;
    let sector: u64 = f.get(plus - 1)?.parse().ok()?;
    let sectors: u64 = f.get(plus + 1)?.parse().ok()?;
    Some(Issued {
        op,
        offset: sector * 512,
        len: sectors * 512,
    })
}

/// Switches off request merging on a loop device so each I/O stays one request.
pub fn no_merges(dev_name: &str) {
    let _ = fs::write(format!("/sys/block/{dev_name}/queue/nomerges"), "2");
}
