//! Files whose checksums are all valid but whose contents lie: a footer
//! summary that contradicts the records, an impossible address span, a record
//! naming a device the table lacks, a trailer whose offset wraps past 2^64,
//! undecodable footer fields. Each is refused with a sentence, never decoded,
//! never a panic. Also: a file rewritten in place while being read, and paths
//! that are not regular files.

use trace_format::*;

fn record(i: u64, device: u16) -> IoRecord {
    IoRecord {
        time: Nanos(i * 1000),
        op: if i.is_multiple_of(3) {
            Op::Write
        } else {
            Op::Read
        },
        offset: Bytes(4096 * (i % 97)),
        len: Bytes(4096),
        flags: Flags::NONE,
        latency: Some(Nanos(500)),
        stream: None,
        device,
    }
}

/// A valid trace of `n` records in chunks of 10, over `devices` devices.
fn trace(n: u64, devices: u16) -> Vec<u8> {
    let opts = WriterOptions {
        chunk_records: 10,
        zstd_level: 1,
    };
    let mut w =
        TraceWriter::with_options(Vec::new(), &TraceHeader::new("crafted", "test"), opts).unwrap();
    for i in 0..n {
        w.push(&record(i, (i % u64::from(devices)) as u16)).unwrap();
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
        ..Default::default()
    };
    w.finish(&tail).unwrap().0
}

fn trailer_field(bytes: &[u8]) -> (u64, u32) {
    let t = &bytes[bytes.len() - 24..];
    (
        u64::from_le_bytes(t[..8].try_into().unwrap()),
        u32::from_le_bytes(t[8..12].try_into().unwrap()),
    )
}

/// Replaces the footer block by `footer_bytes` (already encoded), with valid
/// checksums and trailer.
fn with_footer_bytes(bytes: &[u8], footer_bytes: &[u8]) -> Vec<u8> {
    let (offset, _) = trailer_field(bytes);
    let mut out = bytes[..offset as usize].to_vec();
    let mut block = b"TMFT".to_vec();
    block.extend_from_slice(&(footer_bytes.len() as u32).to_le_bytes());
    block.extend_from_slice(footer_bytes);
    let crc = crc32c::crc32c(&block);
    block.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&block);
    let mut trailer = offset.to_le_bytes().to_vec();
    trailer.extend_from_slice(&(block.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c(&trailer);
    trailer.extend_from_slice(&crc.to_le_bytes());
    trailer.extend_from_slice(b"TMTEND\0\0");
    out.extend_from_slice(&trailer);
    out
}

fn encode(footer: &Footer) -> Vec<u8> {
    bincode::serde::encode_to_vec(footer, bincode::config::standard()).unwrap()
}

/// The trace with its footer changed by `edit`, checksums recomputed.
fn with_footer(bytes: &[u8], edit: impl FnOnce(&mut Footer)) -> Vec<u8> {
    let mut footer = TraceFile::from_bytes(bytes.to_vec())
        .unwrap()
        .footer()
        .clone();
    edit(&mut footer);
    with_footer_bytes(bytes, &encode(&footer))
}

/// Reads everything both ways; returns the random-access and the stream errors.
fn read_all(bytes: &[u8]) -> (Result<u64, FormatError>, Result<u64, FormatError>) {
    let file = TraceFile::from_bytes(bytes.to_vec())
        .and_then(|f| f.records().try_fold(0u64, |n, r| r.map(|_| n + 1)));
    let stream =
        TraceReader::new(bytes).and_then(|mut s| s.try_fold(0u64, |n, r| r.map(|_| n + 1)));
    (file, stream)
}

fn both_fail(bytes: &[u8], words: &str) {
    let (file, stream) = read_all(bytes);
    for (what, r) in [("random access", file), ("stream", stream)] {
        let err = r.expect_err(what).to_string();
        assert!(err.contains(words), "{what}: {err}");
    }
}

#[test]
fn an_untouched_trace_reads_both_ways() {
    let bytes = trace(95, 3);
    let (file, stream) = read_all(&bytes);
    assert_eq!(file.unwrap(), 95);
    assert_eq!(stream.unwrap(), 95);
}

#[test]
fn a_summary_that_contradicts_the_records_is_refused_by_a_full_read() {
    let bytes = trace(95, 1);
    // Counts that still add up: only a pass over the records can tell.
    let bad = with_footer(&bytes, |f| {
        f.summary.reads += f.summary.writes;
        f.summary.writes = 0;
    });
    // The summary alone opens (info --summary-only reads nothing else) ...
    assert!(TraceFile::from_bytes(bad.clone()).is_ok());
    // ... but a full read, and verify, refuse it and name the field.
    both_fail(&bad, "the summary says reads 95 but the records give 63");
    assert!(TraceFile::from_bytes(bad).unwrap().verify().is_err());
    // Byte totals, latency counts, the address span: every field is checked.
    both_fail(
        &with_footer(&bytes, |f| f.summary.read_bytes += 512),
        "bytes read",
    );
    both_fail(
        &with_footer(&bytes, |f| f.summary.with_latency -= 1),
        "latency",
    );
    both_fail(
        &with_footer(&bytes, |f| f.summary.max_end = Some(Bytes(1 << 40))),
        "highest end",
    );
    both_fail(
        &with_footer(&bytes, |f| f.summary.duration.0 += 1),
        "duration",
    );
}

#[test]
fn an_impossible_summary_is_refused_on_open() {
    let bytes = trace(95, 1);
    type Edit = Box<dyn FnOnce(&mut Footer)>;
    let cases: [(&str, Edit); 5] = [
        ("duration", Box::new(|f| f.summary.duration = Nanos(1))),
        (
            "address span is impossible",
            Box::new(|f| {
                f.summary.min_offset = Some(Bytes(1 << 30));
                f.summary.max_end = Some(Bytes(4096));
            }),
        ),
        ("do not add up", Box::new(|f| f.summary.writes = 0)),
        ("last issue", Box::new(|f| f.summary.last_issue = Nanos(7))),
        ("only one end", Box::new(|f| f.summary.max_end = None)),
    ];
    for (words, edit) in cases {
        let bad = with_footer(&bytes, edit);
        let err = TraceFile::from_bytes(bad.clone()).err().expect(words);
        assert!(err.to_string().contains(words), "{words}: {err}");
        both_fail(&bad, words);
    }
}

#[test]
fn a_record_naming_a_device_beyond_the_table_is_refused() {
    let bytes = trace(95, 4);
    let bad = with_footer(&bytes, |f| f.tail.devices.truncate(2));
    both_fail(&bad, "device table has 2 entries");
    // The random-access reader stops at the first chunk holding one, and says which.
    let file = TraceFile::from_bytes(bad).unwrap();
    let err = file.records().find_map(Result::err).unwrap();
    assert!(
        matches!(
            err,
            FormatError::CorruptChunk {
                chunk: 0,
                chunks: 10,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.kind(), FormatErrorKind::UnknownDevice, "{err}");
    // No table at all: only device 0 is allowed.
    let bad = with_footer(&bytes, |f| f.tail.devices.clear());
    both_fail(&bad, "names device");
    let one = trace(20, 1);
    let ok = with_footer(&one, |f| f.tail.devices.clear());
    assert_eq!(read_all(&ok).0.unwrap(), 20);
}

#[test]
fn the_writer_refuses_a_device_index_beyond_its_table() {
    let mut w = TraceWriter::new(Vec::new(), &TraceHeader::new("t", "test")).unwrap();
    w.push(&record(0, 5)).unwrap();
    let err = w.finish(&TraceTail::default()).unwrap_err();
    assert!(
        matches!(
            err,
            FormatError::UnknownDevice {
                device: 5,
                table: 0
            }
        ),
        "{err}"
    );
}

#[test]
fn a_trailer_offset_that_wraps_past_2_64_is_an_error_not_a_panic() {
    let bytes = trace(30, 1);
    let (offset, len) = trailer_field(&bytes);
    for bad_offset in [
        u64::MAX - u64::from(len) + 1,
        u64::MAX,
        u64::MAX - 3,
        offset.wrapping_sub(bytes.len() as u64 * 2),
    ] {
        let mut bad = bytes.clone();
        let t = bad.len() - 24;
        bad[t..t + 8].copy_from_slice(&bad_offset.to_le_bytes());
        let crc = crc32c::crc32c(&bad[t..t + 12]);
        bad[t + 12..t + 16].copy_from_slice(&crc.to_le_bytes());
        let err = TraceFile::from_bytes(bad.clone()).err().unwrap();
        assert_eq!(
            err.kind(),
            FormatErrorKind::CorruptFooter,
            "{bad_offset}: {err}"
        );
        // Same through a real file.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wrap.tmt");
        std::fs::write(&path, &bad).unwrap();
        let err = TraceFile::open(&path).err().unwrap();
        assert_eq!(
            err.kind(),
            FormatErrorKind::CorruptFooter,
            "{bad_offset}: {err}"
        );
        assert!(read_all(&bad).1.is_err());
    }
}

#[test]
fn undecodable_footer_fields_are_described_in_words() {
    let bytes = trace(30, 1);
    let good = encode(TraceFile::from_bytes(bytes.clone()).unwrap().footer());
    // Cut short by one byte (bincode: UnexpectedEnd).
    let cut = with_footer_bytes(&bytes, &good[..good.len() - 1]);
    // A string whose length varint claims 2^40 bytes (bincode: LimitExceeded):
    // the chunk index is one entry per chunk; replace the whole footer by a
    // footer starting with a huge sequence length.
    let mut huge = vec![253u8];
    huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
    let limit = with_footer_bytes(&bytes, &huge);
    for (what, bad) in [("cut", cut), ("limit", limit)] {
        let err = TraceFile::from_bytes(bad.clone())
            .err()
            .unwrap()
            .to_string();
        assert!(err.starts_with("footer is corrupt: "), "{what}: {err}");
        for internal in ["UnexpectedEnd", "LimitExceeded", "additional", "{"] {
            assert!(!err.contains(internal), "{what}: {err}");
        }
        let err = read_all(&bad).1.unwrap_err().to_string();
        assert!(
            !err.contains("UnexpectedEnd") && !err.contains("LimitExceeded"),
            "{err}"
        );
    }
}

#[test]
fn a_file_rewritten_in_place_while_read_is_an_error_not_a_crash() {
    // With a memory map, the truncation below killed the reader with SIGBUS.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.tmt");
    let first = trace(2000, 1);
    std::fs::write(&path, &first).unwrap();
    let file = TraceFile::open(&path).unwrap();
    let mut records = file.records();
    for _ in 0..15 {
        records.next().unwrap().unwrap();
    }
    // `cp other.tmt live.tmt`: the same inode truncated and rewritten shorter.
    let other = trace(40, 2);
    std::fs::write(&path, &other).unwrap();
    let err = records
        .find_map(Result::err)
        .expect("the change went unnoticed");
    assert!(matches!(err, FormatError::Changed), "{err}");
    assert!(err.to_string().contains("changed"), "{err}");
    // Truncated to nothing: also an error.
    let file = TraceFile::open(&path).unwrap();
    std::fs::File::create(&path).unwrap();
    assert!(file.records().any(|r| r.is_err()));
}

#[test]
fn paths_that_are_not_regular_files_are_named_for_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let err = TraceFile::open(dir.path()).err().unwrap().to_string();
    assert!(err.contains("is a directory"), "{err}");
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // Refused at once: opening does not wait for a writer.
    let err = TraceFile::open(&fifo).err().unwrap().to_string();
    assert!(err.contains("is a FIFO"), "{err}");
    let err = TraceFile::open("/dev/zero").err().unwrap().to_string();
    assert!(err.contains("is a character device"), "{err}");
    let err = TraceFile::open(dir.path().join("absent.tmt"))
        .err()
        .unwrap();
    assert!(
        matches!(&err, FormatError::Io { path, source }
            if path.ends_with("absent.tmt") && source.kind() == std::io::ErrorKind::NotFound),
        "{err}"
    );
}
