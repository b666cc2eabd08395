//! The reader against an independent decoder: PerfView's own decoding of
//! the public sample in `../shared/samples/windows-etw-etl` (its baseline),
//! field by field, and, where Python's `etl-parser` is installed, that
//! decoder's count of the DiskIo events in the buffers this reader
//! expanded. The sample is not part of the repository: without it the test
//! prints a SKIP line and passes.

use super::container::{Buffer, BufferReader, BUFFER_HEADER, COMPRESSED_MODE};
use super::header::{read_event, Found, HeaderKind, Origin};
use super::kernel::{self, decode, Kernel};
use crate::sink::Collector;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trace_format::Op;

fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/samples/windows-etw-etl")
}

/// The sample's zip and baseline, or `None` (after a SKIP line).
fn sample() -> Option<(PathBuf, String)> {
    let dir = sample_dir();
    let find = |suffix: &str| {
        std::fs::read_dir(&dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(suffix))
    };
    match (find(".etl.zip"), find(".baseline.txt")) {
        (Some(zip), Some(base)) => Some((zip, std::fs::read_to_string(base).ok()?)),
        _ => {
            eprintln!("SKIP: no ETW sample in {}", dir.display());
            None
        }
    }
}

fn open_log(zip: &Path) -> Box<dyn std::io::Read> {
    let raw: Box<dyn std::io::BufRead> =
        Box::new(std::io::BufReader::new(std::fs::File::open(zip).unwrap()));
    super::zip::first_etl(raw).unwrap()
}

/// PerfView's `COUNT Windows Kernel/DiskIO/NAME:N` lines.
fn baseline_counts(base: &str) -> BTreeMap<String, u64> {
    base.lines()
        .filter_map(|l| l.strip_prefix("COUNT Windows Kernel/DiskIO/"))
        .filter_map(|l| {
            let (name, n) = l.rsplit_once(':')?;
            Some((name.to_string(), n.trim().parse().ok()?))
        })
        .collect()
}

/// The fields of PerfView's first `EVENT` line of DiskIO event `name`, with
/// its time (ms since the session's start) under `@time`.
fn baseline_first(base: &str, name: &str) -> BTreeMap<String, String> {
    let marker = format!(": Windows Kernel/DiskIO/{name} ");
    let line = base
        .lines()
        .find(|l| l.starts_with("EVENT ") && l.contains(&marker))
        .unwrap_or_else(|| panic!("the baseline has no {name} event"));
    let (head, fields) = line.split_once(&marker).unwrap();
    let mut map: BTreeMap<String, String> = fields
        .split("; ")
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().trim_end_matches(';').to_string()))
        .collect();
    map.insert("@time".into(), head.trim_start_matches("EVENT ").replace(',', ""));
    map
}

fn number(map: &BTreeMap<String, String>, key: &str) -> f64 {
    let v = map.get(key).unwrap_or_else(|| panic!("no {key} in {map:?}"));
    if let Some(hex) = v.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).unwrap() as f64;
    }
    v.replace(',', "").parse().unwrap_or_else(|_| panic!("{key}={v}"))
}

/// The IRP flag bits PerfView names (its names are cut at 20 characters).
fn irp_flag_bits(text: &str) -> u32 {
    text.split(", ")
        .map(|name| match name.trim_end_matches("...") {
            "None" => 0,
            "Nocache" => 0x1,
            n if "MountCompletion".starts_with(n) || "PagingIo".starts_with(n) => 0x2,
            "SynchronousApi" => 0x4,
            other => panic!("flag name {other} not known to the test"),
        })
        .fold(0, |a, b| a | b)
}

/// One decoded DiskIo event of the log, in file order.
struct Seen {
    opcode: u8,
    time: u64,
    process: u32,
    kernel: Kernel,
}

/// Every DiskIo event, straight from the buffers (no merge, no pairing).
fn disk_events(zip: &Path) -> (super::container::LogFileHeader, Vec<Seen>) {
    let mut input = open_log(zip);
    let mut reader = BufferReader::new(&mut input);
    let mut buffer = Buffer::empty();
    assert!(reader.next_buffer(&mut buffer).unwrap());
    let log = buffer.log_header().unwrap();
    reader.set_compressed_mode(log.log_file_mode & COMPRESSED_MODE != 0);
    let mut seen = Vec::new();
    loop {
        let mut at = BUFFER_HEADER;
        while let Found::Event { event, next } = read_event(&buffer.bytes, at, buffer.bytes.len())
            .unwrap_or_else(|e| panic!("buffer {}: {}", buffer.pos.index, e.0))
        {
            at = next;
            let is_disk = match event.origin {
                Origin::Hook(h) => h >> 8 == 1,
                Origin::Provider(g) => g == kernel::DISK_IO_GUID,
            };
            if is_disk && event.kind != HeaderKind::Other {
                seen.push(Seen {
                    opcode: event.opcode,
                    time: event.time,
                    process: event.process,
                    kernel: decode(&event).unwrap(),
                });
            }
        }
        if !reader.next_buffer(&mut buffer).unwrap() {
            break;
        }
    }
    (log, seen)
}

const NAMES: [(u8, &str); 6] = [
    (kernel::READ, "Read"),
    (kernel::WRITE, "Write"),
    (kernel::READ_INIT, "ReadInit"),
    (kernel::WRITE_INIT, "WriteInit"),
    (kernel::FLUSH, "FlushBuffers"),
    (kernel::FLUSH_INIT, "FlushInit"),
];

#[test]
fn the_sample_matches_perfviews_decoding_field_by_field() {
    let Some((zip, base)) = sample() else {
        return;
    };
    let counts = baseline_counts(&base);
    let (log, seen) = disk_events(&zip);
    assert_eq!(log.ticks_per_second, 10_000_000, "QPC at 10 MHz");
    assert_eq!(log.cpus, 8);
    let ms = |ticks: u64| ticks as f64 * 1000.0 / log.ticks_per_second as f64;
    // The log's own start: PerfView's times count from the session start,
    // so only differences between events are compared.
    let mut firsts = BTreeMap::new();
    for (opcode, name) in NAMES {
        let of_type: Vec<&Seen> = seen.iter().filter(|s| s.opcode == opcode).collect();
        assert_eq!(Some(&(of_type.len() as u64)), counts.get(name), "count of {name}");
        let first = of_type.iter().min_by_key(|s| s.time).unwrap();
        firsts.insert(name, (first.time, first.process, &first.kernel));
        let want = baseline_first(&base, name);
        match &first.kernel {
            Kernel::Complete(c) => {
                assert_eq!(f64::from(c.disk), number(&want, "DiskNumber"), "{name} disk");
                assert_eq!(c.irp.map(|i| i as f64), Some(number(&want, "Irp")), "{name} irp");
                let elapsed = ms(c.elapsed.unwrap());
                assert!((elapsed - number(&want, "ElapsedTimeMSec")).abs() < 0.0005, "{name} elapsed {elapsed}");
                assert_eq!(c.irp_flags & 0x7, irp_flag_bits(&want["IrpFlags"]), "{name} flags");
                if c.op != Op::Flush {
                    assert_eq!(c.offset as f64, number(&want, "ByteOffset"), "{name} offset");
                    assert_eq!(f64::from(c.size), number(&want, "TransferSize"), "{name} size");
                }
            }
            Kernel::Init { irp, .. } => {
                assert_eq!(*irp as f64, number(&want, "Irp"), "{name} irp");
                assert_eq!(f64::from(first.process), number(&want, "PID"), "{name} pid");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // Times: each first completion after its Init by PerfView's difference.
    for (done, init) in [("Read", "ReadInit"), ("Write", "WriteInit"), ("FlushBuffers", "FlushInit")] {
        let gap = ms(firsts[done].0 - firsts[init].0);
        let want = number(&baseline_first(&base, done), "@time") - number(&baseline_first(&base, init), "@time");
        assert!((gap - want).abs() < 0.002, "{done} - {init}: {gap} vs {want}");
    }

    // The whole reader: requests per operation, Init counts in the notes,
    // the first request of each kind with the baseline's fields.
    let mut sink = Collector::default();
    super::parse(&mut std::io::BufReader::new(open_log(&zip)), "sample.etl", &mut sink).unwrap();
    for (op, name) in [(Op::Read, "Read"), (Op::Write, "Write"), (Op::Flush, "FlushBuffers")] {
        let ios: Vec<_> = sink.ios.iter().filter(|io| io.op == op).collect();
        assert_eq!(Some(&(ios.len() as u64)), counts.get(name), "{name} requests");
        let want = baseline_first(&base, name);
        let io = ios[0];
        assert_eq!(f64::from(io.device.minor), number(&want, "DiskNumber"));
        let latency = io.latency.unwrap().0 as f64 / 1e6;
        assert!((latency - number(&want, "ElapsedTimeMSec")).abs() < 0.0005, "{name} latency {latency}");
        if op != Op::Flush {
            assert_eq!(io.offset.0 as f64, number(&want, "ByteOffset"));
            assert_eq!(io.len.0 as f64, number(&want, "TransferSize"));
            assert_eq!(io.pid.map(f64::from), Some(number(&want, "PID")), "{name} pid");
        }
    }
    for (name, key) in [("ReadInit", "etl DiskIo ReadInit event"), ("WriteInit", "etl DiskIo WriteInit event"), ("FlushInit", "etl DiskIo FlushInit event")] {
        assert_eq!(sink.notes.get(key), counts.get(name), "{name}");
    }
    assert!(!sink.notes.contains_key("etl io without init event (issue time = completion - response time)"));
    assert!(sink.bad.is_empty());
}

/// `etl-parser` reads the buffers this reader expanded and finds the same
/// DiskIo events (it reads none of the compressed original).
#[test]
fn etl_parser_counts_the_same_disk_events_in_the_expanded_buffers() {
    let Some((zip, _)) = sample() else {
        return;
    };
    let has_module = std::process::Command::new("python3")
        .args(["-c", "import etl.etl"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_module {
        assert!(
            std::env::var_os("TRACEMARK_NO_SKIP").is_none(),
            "etl-parser is not installed and TRACEMARK_NO_SKIP is set"
        );
        eprintln!("SKIP: python3 module etl (pip etl-parser) not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let expanded = dir.path().join("expanded.etl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&expanded).unwrap());
    let buffers = super::expand(&mut open_log(&zip), &mut out).unwrap();
    drop(out);
    assert!(buffers > 100);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/etl_parser_counts.py");
    let run = std::process::Command::new("python3").arg(&script).arg(&expanded).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let theirs: BTreeMap<u8, (u64, u64)> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| {
            let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            (v[0] as u8, (v[1], v[2]))
        })
        .collect();
    let (_, seen) = disk_events(&zip);
    let mut ours: BTreeMap<u8, (u64, u64)> = BTreeMap::new();
    for s in &seen {
        let e = ours.entry(s.opcode).or_default();
        e.0 += 1;
        if let Kernel::Complete(c) = &s.kernel {
            e.1 += u64::from(c.size);
        }
    }
    assert_eq!(theirs, ours);
}
