//! Conformance of the one-line-per-request parsers (MSR, xperf, WPA, fio, SPC)
//! against the real-world samples in `../shared/samples`: every sample a parser
//! claims is parsed without bad lines, and its counts and bytes per operation
//! equal an independent count made here with plain string splitting. Also checks
//! that detection is specific: exactly one of these formats claims each such
//! sample, and none claims the blkparse/blktrace samples.
//!
//! The samples are not part of the repository; when the folder is absent the
//! test prints a SKIP line and passes (this skip holds in CI too).

use recorder::{BadReason, BlockEvent, ConvertError, Location, Sink, SourceIo};
use std::collections::BTreeMap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

type LooksLikeFn = fn(&[u8]) -> bool;
type ParseFn = fn(&mut dyn std::io::BufRead, &str, &mut dyn Sink) -> Result<(), ConvertError>;

/// (name, looks_like, parse) of the formats under test.
const FORMATS: [(&str, LooksLikeFn, ParseFn); 5] = [
    (
        "msr",
        recorder::formats::msr::looks_like,
        recorder::formats::msr::parse,
    ),
    (
        "xperf",
        recorder::formats::xperf::looks_like,
        recorder::formats::xperf::parse,
    ),
    (
        "wpa",
        recorder::formats::wpa::looks_like,
        recorder::formats::wpa::parse,
    ),
    (
        "fio",
        recorder::formats::fio::looks_like,
        recorder::formats::fio::parse,
    ),
    (
        "spc",
        recorder::formats::spc::looks_like,
        recorder::formats::spc::parse,
    ),
];

/// Sample folders that hold other parsers' formats.
const FOREIGN: [&str; 2] = ["blkparse", "blktrace-binary"];

/// Counts and bytes per operation.
type Tally = BTreeMap<&'static str, (u64, u64)>;

#[derive(Default)]
struct Counting {
    tally: Tally,
    bad: Vec<String>,
    events: u64,
}

impl Sink for Counting {
    fn event(&mut self, _at: Location<'_>, _event: BlockEvent) -> Result<(), ConvertError> {
        self.events += 1;
        Ok(())
    }
    fn io(&mut self, _at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
        let entry = self.tally.entry(io.op.name()).or_default();
        entry.0 += 1;
        entry.1 += io.len.0;
        Ok(())
    }
    fn bad_input(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &BadReason,
    ) -> Result<(), ConvertError> {
        self.bad.push(format!("{at}: {reason}: {content}"));
        Ok(())
    }
    fn note(&mut self, _key: &str) {}
}

/// `../shared/samples` next to the repository, or `TRACEMARK_SAMPLES`.
fn samples_dir() -> PathBuf {
    match std::env::var_os("TRACEMARK_SAMPLES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/samples"),
    }
}

fn head_of(path: &Path) -> Vec<u8> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut head))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    head
}

fn sample_files() -> Option<Vec<(String, PathBuf)>> {
    let dir = samples_dir();
    let folders = std::fs::read_dir(&dir).ok()?;
    let mut files = Vec::new();
    for folder in folders.flatten() {
        if !folder.path().is_dir() {
            continue;
        }
        let name = folder.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(folder.path()).ok()?.flatten() {
            if file.path().is_file() {
                files.push((name.clone(), file.path()));
            }
        }
    }
    files.sort();
    Some(files)
}

fn add(tally: &mut Tally, op: &'static str, count: u64, bytes: u64) {
    let e = tally.entry(op).or_default();
    e.0 += count;
    e.1 += bytes;
}

/// An independent count of a sample in `format`, by splitting lines on the
/// format's separators with plain string operations.
fn independent_count(format: &str, text: &str) -> Tally {
    let mut tally = Tally::new();
    let rows = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match format {
        "wpa" => {
            let mut rows = rows;
            let header: Vec<String> = rows
                .next()
                .unwrap_or_default()
                .trim_start_matches('\u{feff}')
                .split(';')
                .map(|c| c.trim().to_string())
                .collect();
            let col = |name: &str| {
                header
                    .iter()
                    .position(|c| c == name)
                    .unwrap_or_else(|| panic!("no column {name}"))
            };
            let (kind, size, count) = (col("IO Type"), col("Size (B)"), col("Count"));
            for row in rows {
                let cells: Vec<&str> = row.split(';').collect();
                let n: u64 = cells[count].parse().unwrap();
                let bytes: u64 = cells[size].replace('.', "").parse().unwrap();
                let op = match cells[kind] {
                    "Read" => "read",
                    "Write" => "write",
                    "Flush" => "flush",
                    _ => continue,
                };
                add(&mut tally, op, n, if op == "flush" { 0 } else { bytes });
            }
        }
        "fio" => {
            let mut rows = rows;
            let version = rows.next().unwrap_or_default();
            let skip = usize::from(version.contains("version 3"));
            for row in rows {
                let words: Vec<&str> = row.split_whitespace().skip(skip).collect();
                let op = match words.get(1).copied() {
                    Some("read") => "read",
                    Some("write") => "write",
                    Some("trim") => "discard",
                    Some("sync") | Some("datasync") => "flush",
                    _ => continue,
                };
                let len: u64 = if op == "flush" {
                    0
                } else {
                    words[3].parse().unwrap()
                };
                add(&mut tally, op, 1, len);
            }
        }
        "msr" => {
            for row in rows {
                let cells: Vec<&str> = row.split(',').collect();
                let op = if cells[3].eq_ignore_ascii_case("read") {
                    "read"
                } else {
                    "write"
                };
                add(&mut tally, op, 1, cells[5].parse().unwrap());
            }
        }
        "spc" => {
            for row in rows {
                let cells: Vec<&str> = row.split(',').collect();
                let op = if cells[3].eq_ignore_ascii_case("r") {
                    "read"
                } else {
                    "write"
                };
                add(&mut tally, op, 1, cells[2].parse().unwrap());
            }
        }
        "xperf" => {
            for row in rows {
                let cells: Vec<&str> = row.split(',').map(str::trim).collect();
                let op = match cells[0] {
                    "DiskRead" => "read",
                    "DiskWrite" => "write",
                    "DiskFlush" => "flush",
                    _ => continue,
                };
                if cells.get(1) == Some(&"TimeStamp") {
                    continue;
                }
                // Without a CPU column IOSize is the 7th field, with it the 8th.
                let size_at = if cells.len() >= 16 { 7 } else { 6 };
                let bytes = if op == "flush" {
                    0
                } else {
                    u64::from_str_radix(cells[size_at].trim_start_matches("0x"), 16).unwrap()
                };
                add(&mut tally, op, 1, bytes);
            }
        }
        other => panic!("no independent count for {other}"),
    }
    tally
}

/// Converts `path` to a `.tmt` with auto-detection, reads it back and tallies
/// its records.
fn converted_tally(path: &Path, format: &str) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sample.tmt");
    let report = recorder::convert::convert(
        &[path.to_path_buf()],
        &out,
        &recorder::convert::ConvertOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        report.format.name(),
        format,
        "{}: detected format",
        path.display()
    );
    let trace = trace_format::TraceFile::open(&out).unwrap();
    let mut tally = Tally::new();
    for record in trace.records() {
        let record = record.unwrap();
        add(&mut tally, record.op.name(), 1, record.len.0);
    }
    tally
}

#[test]
fn samples_parse_and_match_an_independent_count() {
    let Some(files) = sample_files() else {
        println!(
            "SKIP samples_parse_and_match_an_independent_count: {} is absent",
            samples_dir().display()
        );
        return;
    };
    let mut checked = 0;
    for (folder, path) in &files {
        let head = head_of(path);
        let claims: Vec<&str> = FORMATS
            .iter()
            .filter(|(_, looks_like, _)| looks_like(&head))
            .map(|(name, _, _)| *name)
            .collect();
        let shown = path.display().to_string();
        if FOREIGN.contains(&folder.as_str()) {
            assert!(claims.is_empty(), "{shown} falsely claimed by {claims:?}");
            continue;
        }
        let Some((name, _, parse)) = FORMATS.iter().find(|(n, _, _)| claims.first() == Some(n))
        else {
            println!("note: {shown} is none of {:?}", FORMATS.map(|f| f.0));
            continue;
        };
        assert_eq!(
            claims.len(),
            1,
            "{shown} claimed by several formats: {claims:?}"
        );
        let file = std::fs::File::open(path).unwrap();
        let mut input = BufReader::new(file);
        let mut sink = Counting::default();
        parse(&mut input, &shown, &mut sink).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            sink.bad.is_empty(),
            "{shown}: bad lines {:?}",
            &sink.bad[..sink.bad.len().min(5)]
        );
        assert_eq!(
            sink.events, 0,
            "{shown}: block events from a request format"
        );
        let text = String::from_utf8(std::fs::read(path).unwrap()).expect("sample is UTF-8");
        let expected = independent_count(name, &text);
        assert!(
            !expected.is_empty(),
            "{shown}: the independent count found no I/O"
        );
        assert_eq!(
            sink.tally, expected,
            "{shown} ({name}): parser vs independent count"
        );
        println!("{shown} ({name}): {:?}", sink.tally);
        assert_eq!(
            converted_tally(path, name),
            expected,
            "{shown}: .tmt vs independent count"
        );
        checked += 1;
    }
    assert!(
        checked > 0,
        "no sample of these formats in {}",
        samples_dir().display()
    );
}
