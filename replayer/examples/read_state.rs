//! What a trace's reads find on a device once preconditioned, independent of
//! timing: `read_state TRACE.tmt DEVICE` (root; DEVICE is written: a private
//! zram or loop device only). Preconditions DEVICE as `replay` does (default
//! options: read regions, compact mapping; the marker in
//! `$TRACEMARK_STATE_DIR`), then plays the trace's data flow twice in order,
//! as the warm-up and the scored pass would (writes send random data, reads
//! are read back), and counts per pass the 4 KiB blocks the reads found all
//! zeros (never written, or same-filled) and those holding data.

use replayer::mapping::{AddressMap, TraceScan};
use replayer::target::{Target, TargetRequest, Targets};
use replayer::{ReplayOptions, TmtSource, TraceSource};
use std::os::unix::fs::FileExt;
use trace_format::Op;

const BLOCK: u64 = 4096;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        return Err("usage: read_state TRACE.tmt DEVICE".into());
    }
    let src = TmtSource::open(&args[1])?;
    let opts = ReplayOptions {
        allow_write: true,
        ..Default::default()
    };
    let target = Target::open(&TargetRequest {
        path: Some(args[2].clone().into()),
        required_size: 0,
        needs_write: true,
        allow_write: true,
        allow_buffered: false,
    })?;
    let scan = TraceScan::scan(src.name(), src.records())?;
    let map = AddressMap::new(src.name(), &scan, opts.mapping, target.size, BLOCK)?;
    let regions =
        replayer::precondition::read_plan(&[&src], std::slice::from_ref(&map), 1, &opts)?.regions;
    let targets = Targets::one(target);
    let p = replayer::precondition::precondition(&targets, &regions, &opts, &mut |_, _| {})?;
    println!("precondition: {p:?}");
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&args[2])?;
    let mut buf = vec![0u8; 1 << 20];
    let mut rng = trace_format::rng::WyRand::new(7);
    for pass in ["warm-up", "scored"] {
        let (mut zero, mut data, mut written) = (0u64, 0u64, 0u64);
        for r in src.records() {
            let r = r?;
            if r.len.0 == 0 || !matches!(r.op, Op::Read | Op::Write) {
                continue;
            }
            let m = map.map(r.device, r.offset.0, r.len.0);
            let end = (m.offset + m.len).div_ceil(BLOCK) * BLOCK;
            let mut at = m.offset / BLOCK * BLOCK;
            while at < end {
                let n = ((end - at) as usize).min(buf.len());
                if r.op == Op::Read {
                    dev.read_exact_at(&mut buf[..n], at)?;
                    for b in buf[..n].chunks(BLOCK as usize) {
                        if b.iter().all(|&x| x == 0) {
                            zero += 1;
                        } else {
                            data += 1;
                        }
                    }
                } else {
                    rng.fill(&mut buf[..n]);
                    dev.write_all_at(&buf[..n], at)?;
                    written += n as u64 / BLOCK;
                }
                at += n as u64;
            }
        }
        println!(
            "{pass}: blocks read all zeros {zero}, holding data {data}; blocks written {written}"
        );
    }
    Ok(())
}
