//! Writes a synthetic trace for benchmarks: `synth_trace OUT.tmt IOS SPAN_MIB READ_PCT [IOPS]`.
//! Random 4 KiB I/O over SPAN_MIB, READ_PCT percent reads; with IOPS, evenly
//! spaced at that rate (for realtime fidelity), else all at time 0.

use trace_format::{Bytes, Flags, IoRecord, Nanos, Op, TraceHeader, TraceTail, TraceWriter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        return Err("usage: synth_trace OUT.tmt IOS SPAN_MIB READ_PCT [IOPS]".into());
    }
    let ios: u64 = args[2].parse()?;
    let span: u64 = args[3].parse::<u64>()? << 20;
    let read_pct: u64 = args[4].parse()?;
    let iops: Option<u64> = args.get(5).map(|s| s.parse()).transpose()?;
    let out = std::io::BufWriter::new(std::fs::File::create(&args[1])?);
    let mut w = TraceWriter::new(out, &TraceHeader::new("synthetic-4k", "synthetic"))?;
    let mut rng = trace_format::rng::WyRand::new(42);
    for i in 0..ios {
        let op = if rng.next_u64() % 100 < read_pct {
            Op::Read
        } else {
            Op::Write
        };
        let time = iops.map_or(0, |r| i * 1_000_000_000 / r);
        w.push(&IoRecord {
            time: Nanos(time),
            op,
            offset: Bytes(rng.next_u64() % (span / 4096) * 4096),
            len: Bytes(4096),
            flags: Flags::NONE,
            latency: None,
            stream: None,
            device: 0,
        })?;
    }
    w.finish(&TraceTail::default())?;
    Ok(())
}
