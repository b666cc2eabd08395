//! Any single flipped byte of a `.tmt`, in any part of the file, is detected by
//! both readers, never decoded into different records, and truncation too.

use trace_format::*;

fn sample_trace(n: u64, chunk_records: u32) -> (Vec<u8>, Vec<IoRecord>) {
    let mut header = TraceHeader::new("corrupt-me", "test");
    header.description = "a trace whose bytes get flipped".into();
    let opts = WriterOptions {
        chunk_records,
        zstd_level: 3,
    };
    let mut w = TraceWriter::with_options(Vec::new(), &header, opts).unwrap();
    let mut records = Vec::new();
    let mut rng = trace_format::rng::WyRand::new(0x9e3779b97f4a7c15);
    for i in 0..n {
        let x = rng.next_u64();
        let r = IoRecord {
            time: Nanos(i * 1500 + (x % 700)),
            op: Op::ALL[(x % 5) as usize],
            offset: Bytes((x >> 20) % (1 << 30) * 512),
            len: Bytes(((x >> 8) % 64 + 1) * 4096),
            flags: Flags::from_bits((x >> 3) as u8 & 15).unwrap(),
            latency: (!x.is_multiple_of(3)).then_some(Nanos(x % 900_000)),
            stream: (!x.is_multiple_of(4)).then_some((x % 50) as u32),
            device: 0,
        };
        records.push(r);
    }
    records.sort_by_key(|r| r.time);
    for r in &records {
        w.push(r).unwrap();
    }
    // A task section too, so that every byte of it is flipped as well.
    let task = TaskMarks {
        end: Some(Nanos(n * 1500)),
        untraced: Some(Nanos(n * 1000)),
        capture_drive: ModelTimes::from_fn(|m| Some(Nanos(n * 900 + m.index() as u64))),
        ..TaskMarks::default()
    };
    let tail = TraceTail {
        notes: vec![("notify".into(), 3)],
        task,
        ..Default::default()
    };
    (w.finish(&tail).unwrap().0, records)
}

/// Reads every record through the mmap reader; Ok only if everything checks.
fn read_mmap(bytes: &[u8]) -> Result<Vec<IoRecord>, FormatError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.tmt");
    std::fs::write(&path, bytes).unwrap();
    let f = TraceFile::open(&path)?;
    f.records().collect()
}

fn read_stream(bytes: &[u8]) -> Result<Vec<IoRecord>, FormatError> {
    TraceReader::new(bytes)?.collect()
}

#[test]
fn every_single_byte_flip_is_detected() {
    let (bytes, records) = sample_trace(300, 100);
    assert_eq!(read_mmap(&bytes).unwrap(), records);
    assert_eq!(read_stream(&bytes).unwrap(), records);
    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut bad = bytes.clone();
            bad[at] ^= mask;
            let m = read_mmap(&bad);
            assert!(m.is_err(), "mmap reader accepted a flip at byte {at}");
            let s = read_stream(&bad);
            assert!(s.is_err(), "stream reader accepted a flip at byte {at}");
        }
    }
}

#[test]
fn a_flipped_chunk_is_reported_by_number() {
    let (bytes, _) = sample_trace(1000, 100);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.tmt");
    std::fs::write(&path, &bytes).unwrap();
    let chunk5 = TraceFile::open(&path).unwrap().footer().chunks[5].clone();
    let mut bad = bytes.clone();
    bad[chunk5.offset as usize + 40] ^= 0x10;
    std::fs::write(&path, &bad).unwrap();
    let f = TraceFile::open(&path).unwrap();
    let results: Vec<_> = f.records().collect();
    // The five good chunks come out whole, then one error naming chunk 5.
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 500);
    let err = results.last().unwrap().as_ref().unwrap_err();
    assert!(
        matches!(
            err,
            FormatError::CorruptChunk {
                chunk: 5,
                chunks: 10,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.kind(), FormatErrorKind::CorruptChunk, "{err}");
    assert!(f.verify().is_err());
}

#[test]
fn truncation_anywhere_is_detected() {
    let (bytes, _) = sample_trace(300, 100);
    for len in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        let cut = &bytes[..len];
        assert!(read_mmap(cut).is_err(), "mmap reader accepted {len} bytes");
        assert!(
            read_stream(cut).is_err(),
            "stream reader accepted {len} bytes"
        );
    }
    let err = read_mmap(&bytes[..bytes.len() - 3]).unwrap_err();
    assert_eq!(err.kind(), FormatErrorKind::Truncated, "{err}");
}

#[test]
fn garbage_is_not_a_trace() {
    let err = read_mmap(b"8,0 3 1 0.000000000 697 Q W 223490 + 8 [comm]\n").unwrap_err();
    assert!(matches!(err, FormatError::NotATrace), "{err}");
    let err = read_mmap(b"").unwrap_err();
    assert_eq!(err.kind(), FormatErrorKind::Truncated, "{err}");
}
