//! Helper for `bench/blktrace_speed.sh`.
//!
//! `blktrace_speed make SRC OUT RECORDS`: writes `OUT` (one per-CPU file of CPU
//! 0) by repeating the records of the little-endian version 7 file `SRC` with
//! shifted times until it holds at least `RECORDS` records.
//! `blktrace_speed parse PATH...`: parses a capture with the blktrace parser and
//! prints `records=N seconds=S records_per_second=R`.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

#[path = "common/count.rs"]
mod count;
use count::Count;

fn make(src: &Path, out: &Path, want: u64) -> Result<(), String> {
    let data = std::fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
    let mut records = Vec::new();
    let mut pos = 0usize;
    while let Some(rec) = data
        .get(pos..pos + 48)
        .and_then(recorder::formats::blktrace::decode_header)
    {
        if rec.version != 7 || rec.byte_order != recorder::formats::blktrace::ByteOrder::Little {
            return Err("the source must be a little-endian version 7 file".into());
        }
        let len = 48 + usize::from(rec.pdu_len);
        let bytes = data.get(pos..pos + len).ok_or("truncated source")?;
        // Notify records carry times of their own; leave them out.
        if rec.categories() & recorder::formats::blktrace::category::NOTIFY == 0 {
            records.push((rec.time, bytes.to_vec()));
        }
        pos += len;
    }
    let first = records.first().ok_or("no I/O records in the source")?.0;
    let last = records.iter().map(|r| r.0).max().unwrap_or(first);
    let span = last - first + 1_000_000;
    let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let mut written = 0u64;
    let mut round = 0u64;
    while written < want {
        for (time, bytes) in &records {
            let mut rec = bytes.clone();
            let t = time - first + round * span;
            rec[4..8].copy_from_slice(&((written + 1) as u32).to_le_bytes());
            rec[8..16].copy_from_slice(&t.to_le_bytes());
            rec[40..44].copy_from_slice(&0u32.to_le_bytes());
            w.write_all(&rec).map_err(|e| e.to_string())?;
            written += 1;
        }
        round += 1;
    }
    w.flush().map_err(|e| e.to_string())?;
    println!("records={written}");
    Ok(())
}

fn parse(paths: &[String]) -> Result<(), String> {
    let paths: Vec<&Path> = paths.iter().map(Path::new).collect();
    let mut sink = Count::default();
    let start = Instant::now();
    recorder::formats::blktrace::parse_files(&paths, &mut sink).map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    let records = sink.events + sink.notes;
    println!(
        "records={records} seconds={secs:.3} records_per_second={:.0}",
        records as f64 / secs
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("make") if args.len() == 4 => match args[3].parse() {
            Ok(n) => make(Path::new(&args[1]), Path::new(&args[2]), n),
            Err(_) => Err(format!("RECORDS '{}' is not a number", args[3])),
        },
        Some("parse") if args.len() >= 2 => parse(&args[1..]),
        _ => Err("usage: blktrace_speed make SRC OUT RECORDS | parse PATH...".into()),
    };
    if let Err(e) = result {
        eprintln!("blktrace_speed: {e}");
        std::process::exit(1);
    }
}
