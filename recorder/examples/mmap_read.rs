//! Helper for `bench/mmap_read.sh`: reading a whole input through the
//! readers tracemark uses against reading it through a memory map, in one
//! process, the ways alternating run by run.
//!
//! `mmap_read tmt FILE.tmt RUNS`: decodes every record of a `.tmt` with
//! `TraceFile` (positioned reads, one chunk at a time: what `replay`, `info`
//! and `export` use), with `TraceReader` over a 64 KiB `BufReader` of the file,
//! and with `TraceReader` over the file's memory map.
//! `mmap_read blktrace FILE RUNS`: parses a blktrace binary file with the
//! blktrace parser over a 64 KiB `BufReader` (what `convert` uses) and over
//! the file's memory map.
//!
//! Prints one line per run and way (`run=N way=W seconds=S records=R`; run 0
//! warms up and is not counted), then the median of each way and its ratio
//! to the map's: of the medians, and the median of the runs' ratios.

use recorder::formats::blktrace::{parse_reader, Framing};
use std::fs::File;
use std::io::BufReader;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::Instant;
use trace_format::{TraceFile, TraceReader};

/// A read-only map of a whole file, unmapped on drop.
struct Map {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Map {
    fn open(path: &Path) -> Result<Map, String> {
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let len = usize::try_from(file.metadata().map_err(|e| e.to_string())?.len())
            .map_err(|e| e.to_string())?;
        if len == 0 {
            return Err(format!("{}: empty", path.display()));
        }
        // SAFETY: a fresh private read-only mapping of an open file; the
        // benchmark's inputs are not changed while it runs.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: the range is the mapping just made. Read ahead as a
        // sequential reader would ask for; a failure only loses the hint.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        Ok(Map { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` readable bytes at `ptr` for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

#[path = "common/count.rs"]
mod count;
use count::Count;

/// Records of a `.tmt` read one way; the sum of their times keeps the
/// decoding from being optimised away and must agree between the ways.
fn read_tmt(path: &Path, way: &str) -> Result<(u64, u64), String> {
    let fold = |acc: (u64, u64), r: Result<trace_format::IoRecord, trace_format::FormatError>| {
        r.map(|r| (acc.0 + 1, acc.1.wrapping_add(r.time.0)))
    };
    let counted = match way {
        "pread" => TraceFile::open(path).and_then(|f| f.records().try_fold((0, 0), fold)),
        "bufread" => {
            let file = File::open(path).map_err(|e| e.to_string())?;
            TraceReader::new(BufReader::with_capacity(64 * 1024, file))
                .and_then(|mut r| r.try_fold((0, 0), fold))
        }
        _ => {
            let map = Map::open(path)?;
            TraceReader::new(map.bytes()).and_then(|mut r| r.try_fold((0, 0), fold))
        }
    };
    counted.map_err(|e| e.to_string())
}

/// Records of a blktrace file parsed one way.
fn read_blktrace(path: &Path, way: &str) -> Result<(u64, u64), String> {
    let name = path.display().to_string();
    let mut sink = Count::default();
    let records = if way == "bufread" {
        let file = File::open(path).map_err(|e| e.to_string())?;
        let reader = BufReader::with_capacity(64 * 1024, file);
        parse_reader(reader, &name, Framing::Blktrace, &mut sink)
    } else {
        let map = Map::open(path)?;
        parse_reader(map.bytes(), &name, Framing::Blktrace, &mut sink)
    };
    let records = records.map_err(|e| e.to_string())?;
    Ok((records, sink.events + sink.notes))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn run(kind: &str, path: &Path, runs: usize) -> Result<(), String> {
    let ways: &[&str] = match kind {
        "tmt" => &["pread", "bufread", "mmap"],
        "blktrace" => &["bufread", "mmap"],
        _ => return Err(format!("unknown input kind `{kind}`")),
    };
    let mut seconds = vec![Vec::new(); ways.len()];
    let mut seen = None;
    // Run 0 warms up (page cache, allocator) and is not counted.
    for run in 0..=runs {
        // Alternate which way goes first, so neither always follows the other.
        let order: Vec<usize> = if run % 2 == 1 {
            (0..ways.len()).collect()
        } else {
            (0..ways.len()).rev().collect()
        };
        for i in order {
            let start = Instant::now();
            let got = if kind == "tmt" {
                read_tmt(path, ways[i])?
            } else {
                read_blktrace(path, ways[i])?
            };
            let s = start.elapsed().as_secs_f64();
            if *seen.get_or_insert(got) != got {
                return Err(format!("{} read {got:?}, not {seen:?}", ways[i]));
            }
            println!("run={run} way={} seconds={s:.3} records={}", ways[i], got.0);
            if run > 0 {
                seconds[i].push(s);
            }
        }
    }
    let medians: Vec<f64> = seconds.iter().cloned().map(median).collect();
    for (way, m) in ways.iter().zip(&medians) {
        println!("median way={way} seconds={m:.3}");
    }
    // Ratios to the map: of the medians, and the median of each run's ratio
    // (which a load that changes between runs disturbs less).
    let last = ways.len() - 1;
    for i in 0..last {
        let per_run = seconds[i]
            .iter()
            .zip(&seconds[last])
            .map(|(a, m)| a / m)
            .collect();
        println!(
            "ratio {}/mmap: of medians {:.3}, median of runs {:.3}",
            ways[i],
            medians[i] / medians[last],
            median(per_run)
        );
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [kind, path, runs] => match runs.parse() {
            Ok(n) if n > 0 => run(kind, Path::new(path), n),
            _ => Err(format!("RUNS '{runs}' is not a positive number")),
        },
        _ => Err("usage: mmap_read tmt|blktrace FILE RUNS".into()),
    };
    if let Err(e) = result {
        eprintln!("mmap_read: {e}");
        std::process::exit(1);
    }
}
