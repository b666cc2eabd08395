//! Helpers around the ETW reader for the bench and the fuzzer's seeds:
//!
//! - `etl_tool synth N LOG.etl DUMP.txt [--compressed]`: N synthetic disk
//!   requests written both as an ETW log and as the `xperf -a dumper` text
//!   of the same events (for `bench/etl_speed.sh`);
//! - `etl_tool expand IN.etl|IN.etl.zip OUT.etl`: the log with every buffer
//!   stored expanded (what decoders that do not decompress read).

use recorder::formats::etl::synth::{Options, Request};
use std::io::{BufWriter, Write};
use trace_format::Op;

fn request(i: u64) -> Request {
    let op = match i % 10 {
        0..=5 => Op::Read,
        6..=8 => Op::Write,
        _ => Op::Flush,
    };
    // Ticks of a 10 MHz clock, multiples of 1 µs so the text form (µs)
    // holds the same times.
    let issued = 10_000_000 + i * 2_000;
    Request {
        op,
        disk: (i % 2) as u32,
        offset: if op == Op::Flush {
            0
        } else {
            4096 * ((i * 7919) % 1_000_000)
        },
        size: if op == Op::Flush {
            0
        } else {
            4096 * (1 + (i % 8) as u32)
        },
        irp: 0xffff_fa80_0000_0000 + 0x100 * (i % 64),
        irp_flags: 0x43,
        issued,
        completed: issued + 10 * (50 + (i % 300)),
        issue_cpu: (i % 8) as u16,
        complete_cpu: ((i + 3) % 8) as u16,
        process: 4 + (i % 5) as u32,
        thread: 100 + (i % 17) as u32,
        with_init: true,
    }
}

fn xperf_line(out: &mut impl Write, r: &Request) -> std::io::Result<()> {
    let done = r.completed / 10;
    let elapsed = (r.completed - r.issued) / 10;
    let proc_ = format!("app.exe ({})", r.process);
    match r.op {
        Op::Flush => writeln!(
            out,
            "DiskFlush, {done}, {proc_}, {}, 0x{:x}, {elapsed}, {}, 0x{:x}, {elapsed}, 0",
            r.thread, r.irp, r.disk, r.irp_flags
        ),
        _ => writeln!(
            out,
            "{}, {done}, {proc_}, {}, 0x{:x}, 0x{:x}, 0x{:x}, {elapsed}, {}, 0x{:x}, {elapsed}, 0, Original, 0x0, \"C:\\f\"",
            if r.op == Op::Read { "DiskRead" } else { "DiskWrite" },
            r.thread, r.irp, r.offset, r.size, r.disk, r.irp_flags
        ),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("synth") if args.len() >= 5 => {
            let n: u64 = args[2].parse()?;
            let mut reqs: Vec<Request> = (0..n).map(request).collect();
            let opts = Options {
                compressed: args.iter().any(|a| a == "--compressed"),
                buffer_size: 64 * 1024,
                ..Options::default()
            };
            std::fs::write(&args[3], opts.write(&reqs, &[]))?;
            reqs.sort_by_key(|r| r.completed);
            let mut text = BufWriter::new(std::fs::File::create(&args[4])?);
            for r in &reqs {
                xperf_line(&mut text, r)?;
            }
            text.flush()?;
        }
        Some("expand") if args.len() == 4 => {
            let (_, mut input) = recorder::decompress::open(std::path::Path::new(&args[2]))?;
            let mut out = BufWriter::new(std::fs::File::create(&args[3])?);
            let n =
                recorder::formats::etl::expand(&mut input, &mut out).map_err(|e| e.to_string())?;
            out.flush()?;
            eprintln!("{n} buffers");
        }
        _ => {
            eprintln!(
                "usage: etl_tool synth N LOG.etl DUMP.txt [--compressed] | etl_tool expand IN OUT"
            );
            std::process::exit(2);
        }
    }
    Ok(())
}
