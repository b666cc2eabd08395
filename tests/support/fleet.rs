//! A multi-volume trace in the Alibaba Cloud block-trace format
//! (`device_id,opcode,offset,length,timestamp`; bytes, µs since the epoch),
//! with that format's quirks: no header, every volume's rows interleaved in
//! one file, timestamps not strictly in order, volume ids up to `u32`. The
//! fleet tests convert it with `tracemark convert` and replay it sharded.

use std::path::{Path, PathBuf};
use trace_format::Op;

/// One row as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub volume: u32,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub time_us: u64,
}

/// The volumes of the fixture: small and large ids, as in the public files.
pub const VOLUMES: [u32; 8] = [3, 11, 12, 40, 41, 77, 500, 4_294_967_295];

/// `rows` rows over [`VOLUMES`], about `spacing_us` apart (so the trace
/// lasts rows x spacing), reads and writes of 4-64 KiB on 4 KiB boundaries
/// within 8 MiB of each volume; volume i gets a share of rows growing with
/// i, so the shards have to balance. Deterministic.
pub fn alibaba_rows(rows: usize, spacing_us: u64) -> Vec<Row> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let weights: u64 = (1..=VOLUMES.len() as u64).sum();
    let t0 = 1_577_808_000_000_000u64;
    (0..rows as u64)
        .map(|i| {
            let mut pick = next() % weights;
            let mut v = 0;
            while pick > v as u64 {
                pick -= v as u64 + 1;
                v += 1;
            }
            let r = next();
            Row {
                volume: VOLUMES[v.min(VOLUMES.len() - 1)],
                op: if r % 5 < 3 { Op::Read } else { Op::Write },
                offset: (r >> 8) % 2048 * 4096,
                len: [4096, 8192, 16384, 65536][(r >> 40) as usize % 4],
                // Up to 300 µs out of order, as the public files are.
                time_us: t0 + i * spacing_us + (r >> 50) % 300,
            }
        })
        .collect()
}

/// The rows as the publisher's CSV.
pub fn alibaba_csv(rows: &[Row]) -> String {
    rows.iter()
        .map(|r| {
            let op = if r.op == Op::Read { 'R' } else { 'W' };
            format!("{},{op},{},{},{}\n", r.volume, r.offset, r.len, r.time_us)
        })
        .collect()
}

/// Writes the CSV into `dir` and converts it: the `.tmt` trace.
pub fn converted_trace(dir: &Path, rows: &[Row]) -> PathBuf {
    let csv = dir.join("io_traces.csv");
    std::fs::write(&csv, alibaba_csv(rows)).unwrap();
    let tmt = dir.join("dc.tmt");
    let out = crate::support::tracemark()
        .args(["convert", "--format", "alibaba"])
        .arg(&csv)
        .arg("-o")
        .arg(&tmt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "convert: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmt
}

/// The volume name a result uses for an Alibaba volume: its device `0:ID`.
pub fn volume_name(volume: u32) -> String {
    format!("0:{volume}")
}
