//! The fuzz targets: every input format of the recorder (through the whole
//! conversion a user runs: detection or `--format`, parsing, normalisation),
//! format auto-detection, the `.tmt` readers (random access and stream), the
//! `.tmt` readers behind valid checksums (mutations inside the compressed
//! columns, checksums recomputed), and the result-file reader with the text
//! comparison.

use recorder::convert::{convert_records, ConvertOptions};
use recorder::formats::{Format, Reader};
use std::path::{Path, PathBuf};
use trace_format::{
    DeviceEntry, DeviceId, Flags, IoRecord, Nanos, Op, TraceFile, TraceHeader, TraceReader,
    TraceTail, TraceWriter, WriterOptions,
};

/// What a target does with one input. `Ok` inputs (accepted as valid) join
/// the corpus as bases for further mutation; `Err` is a clean refusal. A
/// panic is a crash.
pub type RunFn = fn(&Scratch, &[u8]) -> Result<(), String>;

/// Post-processing of a mutated input before it is run (for the structure-aware
/// `.tmt` targets: recompress and re-checksum).
pub type FixFn = fn(&mut trace_format::rng::WyRand, Vec<u8>) -> Vec<u8>;

pub struct Target {
    pub name: String,
    pub seeds: Vec<Vec<u8>>,
    pub run: RunFn,
    pub fix: Option<FixFn>,
    /// The recorder format, for the conversion targets.
    pub format: Option<Format>,
}

/// A private directory for inputs that must be files (the recorder reads paths).
pub struct Scratch {
    pub dir: PathBuf,
}

impl Scratch {
    pub fn new() -> std::io::Result<Scratch> {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "tracemark-fuzz-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch { dir })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn seed_files(name: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("seeds")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// Every target, named as `--target` takes them.
pub fn all() -> Vec<Target> {
    let mut targets = Vec::new();
    for format in Format::all() {
        let mut seeds = seed_files(format.name());
        // Every format brings a few example lines of its own.
        if !format.spec().example.is_empty() {
            seeds.push(format.spec().example.as_bytes().to_vec());
        }
        if format.name() == "blktrace" {
            seeds.extend(blktrace_seeds());
        }
        if format.name() == "etw-etl" {
            seeds.extend(etl_seeds());
        }
        if seeds.is_empty() && matches!(format.spec().reader, Reader::FileSet { .. }) {
            // A binary file format with neither seed files nor an example
            // (Parquet) is never reached by mutating text lines: its target
            // would run without testing anything.
            continue;
        }
        if seeds.is_empty() {
            // A format added without seeds still gets fuzzed from generic lines.
            seeds.push(b"0,1,4096,R,0.5\n1,2,8192,W,0.6\n".to_vec());
        }
        targets.push(Target {
            name: format!("convert-{}", format.name()),
            seeds,
            run: run_convert,
            fix: None,
            format: Some(format),
        });
    }
    let mut every_seed: Vec<Vec<u8>> = targets.iter().flat_map(|t| t.seeds.clone()).collect();
    every_seed.extend(seed_files("detect"));
    targets.push(Target {
        name: "convert-auto".into(),
        seeds: every_seed,
        run: run_convert,
        fix: None,
        format: None,
    });
    targets.push(Target {
        name: "etl-xca".into(),
        seeds: xca_seeds(),
        run: run_xca,
        fix: None,
        format: None,
    });
    targets.push(Target {
        name: "tmt".into(),
        seeds: tmt_seeds(),
        run: run_tmt,
        fix: None,
        format: None,
    });
    targets.push(Target {
        name: "tmt-checksummed".into(),
        seeds: tmt_seeds(),
        run: run_tmt,
        fix: Some(crate::tmt_fix::recompress_and_checksum),
        format: None,
    });
    targets.push(Target {
        name: "results".into(),
        seeds: seed_files("results"),
        run: run_results,
        fix: None,
        format: None,
    });
    targets
}

thread_local! {
    static FORMAT: std::cell::Cell<Option<Format>> = const { std::cell::Cell::new(None) };
    static SKIP_BAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets the format and `--skip-bad` the next conversion runs with.
pub fn set_convert_options(format: Option<Format>, skip_bad: bool) {
    FORMAT.with(|f| f.set(format));
    SKIP_BAD.with(|s| s.set(skip_bad));
}

fn run_convert(scratch: &Scratch, input: &[u8]) -> Result<(), String> {
    let format = FORMAT.with(|f| f.get());
    let name = if format.is_some_and(|f| !f.is_text()) {
        "input.blktrace.0"
    } else {
        "input.txt"
    };
    let path = scratch.dir.join(name);
    std::fs::write(&path, input).map_err(|e| e.to_string())?;
    let opts = ConvertOptions {
        format,
        skip_bad: SKIP_BAD.with(|s| s.get()),
        ..Default::default()
    };
    let mut out = WriterSink::new()?;
    let result = convert_records(std::slice::from_ref(&path), &opts, &mut out);
    match result {
        Ok((_, outcome)) => {
            // What was accepted must be writable as a trace, with its device table.
            out.writer
                .finish(&outcome.tail)
                .map_err(|e| format!("converted records are unwritable: {e}"))?;
            Ok(())
        }
        Err(e) => {
            let message = e.to_string();
            if message.is_empty() {
                panic!("an empty error message");
            }
            Err(message)
        }
    }
}

/// Feeds converted records to a trace writer (as `convert` does), and stops a
/// conversion past [`MAX_RECORDS`]: a WPA row's `Count` may expand one line
/// into up to 2^32 records, which is by design but would stall the fuzzer.
struct WriterSink {
    writer: TraceWriter<std::io::Sink>,
    records: u64,
}

const MAX_RECORDS: u64 = 1 << 20;

impl WriterSink {
    fn new() -> Result<WriterSink, String> {
        Ok(WriterSink {
            writer: TraceWriter::new(std::io::sink(), &TraceHeader::new("fuzz", "fuzz"))
                .map_err(|e| e.to_string())?,
            records: 0,
        })
    }
}

impl recorder::normalize::RecordSink for WriterSink {
    fn record(&mut self, record: IoRecord) -> Result<(), recorder::ConvertError> {
        self.records += 1;
        if self.records > MAX_RECORDS {
            return Err(recorder::ConvertError::usage(
                recorder::UsageKind::Stopped,
                "fuzz: over 2^20 records from one input",
            ));
        }
        // As `convert` does: a record the writer refuses (one ending beyond
        // 2^63) stops the conversion with the writer's message.
        self.writer
            .push(&record)
            .map_err(|e| recorder::ConvertError::usage(recorder::UsageKind::Stopped, e.to_string()))
    }
}

fn run_tmt(_: &Scratch, input: &[u8]) -> Result<(), String> {
    let stream: Result<u64, _> =
        TraceReader::new(input).and_then(|mut r| r.try_fold(0u64, |n, rec| rec.map(|_| n + 1)));
    let file = TraceFile::from_bytes(input.to_vec()).map_err(|e| e.to_string())?;
    let mut stats = trace_format::stats::StatsBuilder::new();
    let mut n = 0u64;
    for r in file.records() {
        stats.add(&r.map_err(|e| e.to_string())?);
        n += 1;
    }
    stats.finish(file.summary().ios);
    // Both readers must agree on what is a valid trace.
    match stream {
        Ok(m) if m == n => Ok(()),
        other => panic!("the stream reader disagrees with the random-access reader: {other:?}"),
    }
}

fn run_results(scratch: &Scratch, input: &[u8]) -> Result<(), String> {
    let path = scratch.dir.join("result.json");
    std::fs::write(&path, input).map_err(|e| e.to_string())?;
    let result = results::compare::load_result(&path).map_err(|e| e.to_string())?;
    let second = result.clone();
    let c = results::compare::Comparison::new(vec![(path.clone(), result), (path, second)], &[])
        .map_err(|e| e.to_string())?;
    let _ = results::text::compare_tables(&c);
    let _ = results::html::compare_report(&c);
    Ok(())
}

fn record(i: u64, op: Op, device: u16) -> IoRecord {
    IoRecord {
        time: Nanos(i * 1_500 + (i % 7) * 3),
        op,
        offset: Bytes(if op == Op::Flush {
            0
        } else {
            4096 * ((i * 37) % 500)
        }),
        len: Bytes(if op == Op::Flush {
            0
        } else {
            4096 * (1 + i % 16)
        }),
        flags: if i.is_multiple_of(5) {
            Flags::SYNC | Flags::FUA
        } else {
            Flags::NONE
        },
        latency: (!i.is_multiple_of(3)).then_some(Nanos(20_000 + i * 11)),
        stream: (!i.is_multiple_of(4)).then_some((i % 9) as u32),
        device,
    }
}

use trace_format::Bytes;

/// Small valid traces: one chunk, several chunks, two devices, no records.
pub fn tmt_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (n, chunk, devices) in [(12u64, 64u32, 1u16), (40, 8, 2), (0, 8, 1)] {
        let opts = WriterOptions {
            chunk_records: chunk,
            zstd_level: 1,
        };
        let mut header = TraceHeader::new("seed", "fuzz");
        header.description = "a seed of the fuzzer".into();
        let Ok(mut w) = TraceWriter::with_options(Vec::new(), &header, opts) else {
            continue;
        };
        for i in 0..n {
            let op = Op::ALL[(i % 5) as usize];
            let _ = w.push(&record(i, op, (i % u64::from(devices)) as u16));
        }
        let tail = TraceTail {
            devices: (0..devices)
                .map(|d| DeviceEntry {
                    id: DeviceId {
                        major: 8,
                        minor: u32::from(d) * 16,
                    },
                    name: format!("sd{d}"),
                })
                .collect(),
            notes: vec![("notify".into(), 2)],
            ..Default::default()
        };
        if let Ok((bytes, _)) = w.finish(&tail) {
            seeds.push(bytes);
        }
    }
    seeds
}

/// blktrace binary (version 7, little-endian): a read and a write, each
/// queued, issued and completed, and a process-name notify record.
fn blktrace_seeds() -> Vec<Vec<u8>> {
    const MAGIC: u32 = 0x6561_7407;
    const QUEUE: u32 = 1;
    const ISSUE: u32 = 7;
    const COMPLETE: u32 = 8;
    const READ: u32 = 1 << 16;
    const WRITE: u32 = 2 << 16;
    let mut out = Vec::new();
    let mut seq = 0u32;
    let mut rec = |time: u64, sector: u64, bytes: u32, action: u32, pdu: &[u8]| {
        seq += 1;
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&time.to_le_bytes());
        out.extend_from_slice(&sector.to_le_bytes());
        out.extend_from_slice(&bytes.to_le_bytes());
        out.extend_from_slice(&action.to_le_bytes());
        out.extend_from_slice(&697u32.to_le_bytes());
        out.extend_from_slice(&((8u32 << 20) | 16).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(pdu.len() as u16).to_le_bytes());
        out.extend_from_slice(pdu);
    };
    // A notify record (category 0, action __BLK_TN_PROCESS = 0 | 1<<31... as
    // blktrace writes it: BLK_TN_PROCESS = (1 << 31) | 0) with the name.
    rec(0, 0, 0, 1 << 31, b"kjournald\0");
    for (t, sector, act) in [
        (1_000u64, 2048u64, QUEUE | READ),
        (2_000, 2048, ISSUE | READ),
        (90_000, 2048, COMPLETE | READ),
        (100_000, 4096, QUEUE | WRITE),
        (101_000, 4096, ISSUE | WRITE),
        (150_000, 4096, COMPLETE | WRITE),
    ] {
        rec(t, sector, 4096, act, &[]);
    }
    vec![out]
}

/// Synthetic ETW logs, written from the format: every header kind, both
/// pointer sizes, compressed and not, small buffers (padding at their
/// ends), lost-event records and a disk configuration event; one zipped.
fn etl_seeds() -> Vec<Vec<u8>> {
    use recorder::formats::etl::synth::{Extra, Options, Request, Style};
    let requests: Vec<Request> = (0..12u64)
        .map(|i| Request {
            op: [Op::Read, Op::Write, Op::Flush][(i % 3) as usize],
            disk: (i % 2) as u32,
            offset: 4096 * (i * 11 % 64),
            size: if i % 3 == 2 { 0 } else { 4096 },
            irp: 0x1000 + 0x40 * i,
            irp_flags: [0x43, 0x1, 0x5][(i % 3) as usize],
            issued: 1_000 + 500 * i,
            completed: 1_200 + 500 * i + 37 * (i % 4),
            issue_cpu: (i % 3) as u16,
            complete_cpu: ((i + 1) % 3) as u16,
            process: 4 + i as u32 % 2,
            thread: 8,
            with_init: i % 5 != 4,
        })
        .collect();
    let extras = [
        Extra::Lost {
            cpu: 0,
            time: 1_500,
        },
        Extra::PhyDisk {
            cpu: 1,
            time: 900,
            disk: 0,
            sector: 512,
            model: "Disk".into(),
        },
        Extra::Noise {
            cpu: 2,
            time: 2_000,
            len: 40,
        },
    ];
    let mut seeds = Vec::new();
    for (style, pointer64, compressed, buffer_size) in [
        (Style::System, true, false, 1024),
        (Style::System, false, false, 256),
        (Style::Compact, true, true, 1024),
        (Style::Full, true, false, 512),
        (Style::Full, false, true, 4096),
    ] {
        let opts = Options {
            style,
            pointer64,
            compressed,
            buffer_size,
            events_lost: 3,
            ..Options::default()
        };
        seeds.push(opts.write(&requests, &extras));
    }
    let zipped = recorder::formats::etl::zip::write_zip(&[("a.etl", &seeds[0])], true);
    seeds.push(zipped);
    seeds
}

/// [MS-XCA] Plain LZ77 streams, each after the 4-byte length it expands to.
fn xca_seeds() -> Vec<Vec<u8>> {
    let data: [Vec<u8>; 3] = [
        b"abcabcabcabcabcabcabc, then some literals".to_vec(),
        (0..4000u32).flat_map(|i| (i % 13).to_le_bytes()).collect(),
        vec![0x5a; 70_000],
    ];
    data.iter()
        .map(|d| {
            let mut seed = (d.len() as u32).to_le_bytes().to_vec();
            seed.extend(recorder::formats::etl::xca::compress(d));
            seed
        })
        .collect()
}

/// Expands a Plain LZ77 stream to the length its first 4 bytes give (at
/// most 1 MiB, the bound the ETW reader also keeps far below).
fn run_xca(_: &Scratch, input: &[u8]) -> Result<(), String> {
    let Some(head) = input.get(..4) else {
        return Err("no length".into());
    };
    let expected = (u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize).min(1 << 20);
    let mut out = Vec::new();
    recorder::formats::etl::xca::decompress(&input[4..], expected, &mut out)
        .map_err(|e| e.to_string())?;
    if out.len() != expected {
        panic!(
            "decompress returned Ok with {} bytes for {expected}",
            out.len()
        );
    }
    Ok(())
}
