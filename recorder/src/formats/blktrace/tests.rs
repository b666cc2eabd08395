use super::*;
use crate::event::Action;
use crate::sink::Collector;
use trace_format::{Bytes, DeviceId, Flags, Op};


fn v7(time: u64, sector: u64, bytes: u32, action: u32, pdu: &[u8], big: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |b: &[u8]| out.extend_from_slice(b);
    macro_rules! w {
        ($v:expr) => {
            if big {
                put(&$v.to_be_bytes())
            } else {
                put(&$v.to_le_bytes())
            }
        };
    }
    w!(MAGIC | 7);
    w!(0u32);
    w!(time);
    w!(sector);
    w!(bytes);
    w!(action);
    w!(42u32);
    w!((8u32 << 20) | 16);
    w!(1u32);
    w!(0u16);
    w!(pdu.len() as u16);
    out.extend_from_slice(pdu);
    out
}

fn act(code: u16, cats: u64) -> u32 {
    (cats << 16) as u32 | u32::from(code)
}

#[test]
fn decodes_both_orders_and_maps_ops() {
    for big in [false, true] {
        let mut data = v7(
            100,
            8,
            4096,
            act(
                action::QUEUE,
                category::QUEUE | category::WRITE | category::SYNC,
            ),
            &[],
            big,
        );
        let mut ts = Vec::new();
        ts.extend_from_slice(&if big {
            10u32.to_be_bytes()
        } else {
            10u32.to_le_bytes()
        });
        ts.extend_from_slice(&if big {
            5u32.to_be_bytes()
        } else {
            5u32.to_le_bytes()
        });
        data.extend(v7(
            200,
            0,
            0,
            act(action::NOTIFY_TIMESTAMP, category::NOTIFY),
            &ts,
            big,
        ));
        data.extend(v7(
            300,
            0,
            0,
            act(action::ISSUE, category::ISSUE | category::FLUSH),
            &[],
            big,
        ));
        assert!(looks_like(&data));
        let mut sink = Collector::default();
        parse_reader(&data[..], "mem", Framing::Blktrace, &mut sink).unwrap();
        assert_eq!(sink.events.len(), 2);
        let e = sink.events[0];
        assert_eq!(
            (e.op, e.offset, e.len, e.action),
            (Op::Write, Bytes(4096), Bytes(4096), Action::Queue)
        );
        assert!(e.flags.contains(Flags::SYNC));
        assert_eq!(
            e.device,
            DeviceId {
                major: 8,
                minor: 16
            }
        );
        assert_eq!(sink.events[1].op, Op::Flush);
        assert_eq!(sink.wall_clock, Some(10_000_000_005 - 200));
        assert_eq!(
            sink.notes,
            [(note::TIMESTAMP.to_string(), 1)].into_iter().collect()
        );
    }
}

#[test]
fn rejects_garbage_and_truncation() {
    let good = v7(
        1,
        1,
        512,
        act(action::COMPLETE, category::COMPLETE | category::READ),
        &[],
        false,
    );
    assert!(!looks_like(b"hello world, not blktrace"));
    let mut sink = Collector::default();
    let err = parse_reader(&good[..20], "t", Framing::Blktrace, &mut sink).unwrap_err();
    assert!(err.to_string().contains("t: record 0 (byte 0)"), "{err}");
    assert_eq!(
        err.bad_input_kind(),
        Some(crate::error::BadInputKind::Truncated),
        "{err}"
    );
    let mut bad = good.clone();
    bad.extend_from_slice(&good);
    bad[48] ^= 0xff;
    let mut sink = Collector::default();
    let err = parse_reader(&bad[..], "t", Framing::Blktrace, &mut sink).unwrap_err();
    assert!(err.to_string().contains("record 1 (byte 48)"), "{err}");
    assert_eq!(
        err.bad_input_kind(),
        Some(crate::error::BadInputKind::Corrupt),
        "{err}"
    );
    // Continuing after a bad magic is impossible: still one error.
    let mut sink = Collector::skipping_bad_input();
    assert!(parse_reader(&bad[..], "t", Framing::Blktrace, &mut sink).is_err());
    assert_eq!(sink.events.len(), 1);
}

/// One queue record per time, in that order, as a little-endian v7 file.
fn queued_at(times: impl IntoIterator<Item = u64>) -> Vec<u8> {
    times
        .into_iter()
        .flat_map(|t| v7(t, 1, 512, act(action::QUEUE, category::QUEUE), &[], false))
        .collect()
}

/// Parses `data` twice: the error without --skip-bad, and what a skipping
/// sink kept.
fn error_and_skipped(data: &[u8]) -> (String, Collector) {
    let mut sink = Collector::default();
    let err = parse_reader(data, "t", Framing::Blktrace, &mut sink)
        .unwrap_err()
        .to_string();
    let mut sink = Collector::skipping_bad_input();
    parse_reader(data, "t", Framing::Blktrace, &mut sink).unwrap();
    (err, sink)
}

/// Parses `data` with a sink that keeps going; it must succeed.
fn kept(data: &[u8]) -> Collector {
    let mut sink = Collector::skipping_bad_input();
    parse_reader(data, "t", Framing::Blktrace, &mut sink).unwrap();
    sink
}

#[test]
fn skips_time_going_backwards_when_told() {
    let sink = kept(&queued_at([5_000_000_000, 1_000, 5_000_000_100]));
    assert_eq!(sink.events.len(), 2);
    assert_eq!(sink.bad.len(), 1);
    assert!(sink.bad[0].location.contains("record 1"), "{:?}", sink.bad);
}

/// One record 40 years ahead among good ones: that record is the bad one
/// (named without --skip-bad, skipped with it), and the records after it are
/// kept; an idle gap the next records follow is no error.
#[test]
fn one_bad_time_ahead_is_that_record_only() {
    let ms = |i: u64| 1_000_000 * i;
    let data = queued_at(
        (0..5)
            .map(ms)
            .chain([1_266_874_889_000_000_000])
            .chain((5..10).map(ms)),
    );
    let (err, sink) = error_and_skipped(&data);
    assert!(
        err.contains("t: record 5 ") && err.contains("a bad timestamp"),
        "{err}"
    );
    assert_eq!(sink.events.len(), 10);
    assert_eq!(sink.bad.len(), 1);
    assert!(sink.bad[0].location.contains("record 5 "), "{:?}", sink.bad);

    // A gap of an hour, then more records: all kept.
    let data = queued_at([0, 1_000, 3_600_000_000_000, 3_600_000_001_000, 3_600_000_002_000]);
    let mut sink = Collector::default();
    parse_reader(&data[..], "t", Framing::Blktrace, &mut sink).unwrap();
    assert_eq!(sink.events.len(), 5);
}

/// A run of bad timestamps (here three in a row, 40 years ahead) is told from
/// an idle gap by the records after it: each of the three is named, and every
/// good record after them kept; judged by the next record alone, the first
/// would have passed as an idle gap and the good records been skipped.
#[test]
fn a_run_of_bad_times_ahead_is_those_records_only() {
    let ms = |i: u64| 1_000_000 * i;
    let data = queued_at(
        (0..5)
            .map(ms)
            .chain((0..3).map(|k| 1_266_874_889_000_000_000 + k))
            .chain((5..100).map(ms)),
    );
    let (err, sink) = error_and_skipped(&data);
    assert!(
        err.contains("t: record 5 ") && err.contains("a bad timestamp"),
        "{err}"
    );
    assert_eq!(sink.events.len(), 100);
    let bad: Vec<_> = sink.bad.iter().map(|b| b.location.clone()).collect();
    assert_eq!(bad.len(), 3, "{bad:?}");
    for (k, at) in bad.iter().enumerate() {
        assert!(at.contains(&format!("record {} ", 5 + k)), "{bad:?}");
    }
    // The same run at the very end of the file, with nothing after it to
    // tell: believed (an idle gap), no record lost.
    let data = queued_at((0..5).map(ms).chain((0..3).map(|k| 3_600_000_000_000 + k)));
    let mut sink = Collector::default();
    parse_reader(&data[..], "t", Framing::Blktrace, &mut sink).unwrap();
    assert_eq!(sink.events.len(), 8);
    // An idle gap followed by a few stray records back before it and then
    // many that follow it: the gap is real, the strays are the bad ones.
    let data = queued_at(
        (0..5)
            .map(ms)
            .chain([3_600_000_000_000, 6_000_000])
            .chain((1..40).map(|i| 3_600_000_000_000 + 1_000 * i)),
    );
    let sink = kept(&data);
    assert_eq!(sink.events.len(), 5 + 40);
    assert_eq!(sink.bad.len(), 1);
    assert!(sink.bad[0].location.contains("record 6 "), "{:?}", sink.bad);
}
