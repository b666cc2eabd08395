//! Records written and read back are equal, through both readers, for random
//! record streams covering every field and every operation.

use proptest::prelude::*;
use trace_format::*;

fn arb_record() -> impl Strategy<Value = (u64, IoRecord)> {
    (
        prop_oneof![Just(0u64), 0u64..10, 0u64..1_000_000, 0u64..(1u64 << 40)],
        prop::sample::select(Op::ALL.to_vec()),
        prop_oneof![
            (0u64..(1 << 20)).prop_map(|o| o * 512),
            0u64..(1u64 << 62),
            Just(0u64)
        ],
        prop_oneof![(0u64..256).prop_map(|l| l * 4096), 0u64..(1 << 32)],
        0u8..16,
        prop::option::of(prop_oneof![0u64..1000, 0u64..(1u64 << 50)]),
        prop::option::of(any::<u32>()),
        prop_oneof![Just(0u16), 0u16..300, Just(u16::MAX)],
    )
        .prop_map(|(dt, op, offset, len, flags, latency, stream, device)| {
            (
                dt,
                IoRecord {
                    time: Nanos(0),
                    op,
                    offset: Bytes(offset),
                    len: Bytes(len),
                    flags: Flags::from_bits(flags).unwrap(),
                    latency: latency.map(Nanos),
                    stream,
                    device,
                },
            )
        })
}

fn build(records: &[(u64, IoRecord)]) -> Vec<IoRecord> {
    let mut t = 0u64;
    records
        .iter()
        .map(|(dt, r)| {
            t = t.saturating_add(*dt);
            IoRecord {
                time: Nanos(t),
                ..*r
            }
        })
        .collect()
}

fn write(records: &[IoRecord], chunk_records: u32) -> Vec<u8> {
    let mut header = TraceHeader::new("prop", "test");
    header.description = "round trip".into();
    let opts = WriterOptions {
        chunk_records,
        zstd_level: 1,
    };
    let mut w = TraceWriter::with_options(Vec::new(), &header, opts).unwrap();
    for r in records {
        w.push(r).unwrap();
    }
    // A table with an entry for every device index used.
    let table_len = records
        .iter()
        .map(|r| r.device as u32 + 1)
        .max()
        .unwrap_or(1);
    let tail = TraceTail {
        devices: (0..table_len)
            .map(|i| DeviceEntry {
                id: DeviceId { major: 8, minor: i },
                name: format!("sd{i}"),
            })
            .collect(),
        ..Default::default()
    };
    w.finish(&tail).unwrap().0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn random_streams_round_trip(recs in prop::collection::vec(arb_record(), 0..400), chunk in 1u32..70) {
        let records = build(&recs);
        let bytes = write(&records, chunk);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tmt");
        std::fs::write(&path, &bytes).unwrap();
        let file = TraceFile::open(&path).unwrap();
        let back: Vec<IoRecord> = file.records().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&back, &records);
        prop_assert_eq!(file.summary().ios, records.len() as u64);
        prop_assert_eq!(file.header().name.as_str(), "prop");
        let table_len = records.iter().map(|r| r.device as usize + 1).max().unwrap_or(1);
        prop_assert_eq!(file.footer().tail.devices.len(), table_len);

        let mut stream = TraceReader::new(&bytes[..]).unwrap();
        let back2: Vec<IoRecord> = stream.by_ref().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&back2, &records);
        prop_assert_eq!(stream.footer().unwrap(), file.footer());
    }
}

#[test]
fn summary_counts_every_op_and_byte() {
    let ops = [
        Op::Read,
        Op::Write,
        Op::Write,
        Op::Flush,
        Op::Discard,
        Op::WriteZeroes,
    ];
    let records: Vec<IoRecord> = ops
        .iter()
        .enumerate()
        .map(|(i, &op)| IoRecord {
            time: Nanos(i as u64 * 1000),
            op,
            offset: Bytes(4096 * i as u64),
            len: Bytes(if op == Op::Flush {
                0
            } else {
                4096 * (i as u64 + 1)
            }),
            flags: Flags::SYNC,
            latency: (i % 2 == 0).then_some(Nanos(50_000)),
            stream: Some(7),
            device: 0,
        })
        .collect();
    let bytes = write(&records, 4);
    let f = TraceReader::new(&bytes[..]).unwrap();
    let mut f = f;
    assert_eq!(f.by_ref().count(), 6);
    let s = &f.footer().unwrap().summary;
    assert_eq!(
        (
            s.ios,
            s.reads,
            s.writes,
            s.flushes,
            s.discards,
            s.write_zeroes
        ),
        (6, 1, 2, 1, 1, 1)
    );
    assert_eq!(s.read_bytes, 4096);
    assert_eq!(s.write_bytes, 4096 * 2 + 4096 * 3);
    assert_eq!(s.discard_bytes, 4096 * 5);
    assert_eq!(s.with_latency, 3);
    assert_eq!(s.duration, Nanos(4000 + 50_000));
    assert_eq!(s.min_offset, Some(Bytes(0)));
}

#[test]
fn records_out_of_time_order_are_refused() {
    let header = TraceHeader::new("t", "test");
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    let r = IoRecord {
        time: Nanos(10),
        op: Op::Read,
        offset: Bytes(0),
        len: Bytes(512),
        flags: Flags::NONE,
        latency: None,
        stream: None,
        device: 0,
    };
    w.push(&r).unwrap();
    let err = w
        .push(&IoRecord {
            time: Nanos(9),
            ..r
        })
        .unwrap_err();
    assert!(
        matches!(err, FormatError::BadRecord { index: 1, .. }),
        "{err}"
    );
    assert_eq!(err.kind(), FormatErrorKind::RecordOutOfOrder, "{err}");
    let err = w
        .push(&IoRecord {
            offset: Bytes(u64::MAX - 10),
            ..r
        })
        .unwrap_err();
    assert_eq!(err.kind(), FormatErrorKind::RecordBeyondRange, "{err}");
}

#[test]
fn a_newer_major_version_is_named() {
    let mut bytes = write(&[], 4);
    bytes[8] = 2; // major version 2
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let crc_at = 16 + header_len;
    let crc = crc32c::crc32c(&bytes[..crc_at]);
    bytes[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
    let err = TraceReader::new(&bytes[..]).err().unwrap();
    assert!(
        matches!(err, FormatError::NewerVersion { major: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("newer"), "{err}");
}
