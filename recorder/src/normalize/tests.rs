//! Unit tests of the normaliser.

use super::*;

const DEV: DeviceId = DeviceId { major: 8, minor: 0 };

fn ev(t_us: u64, action: Action, op: Op, sector: u64, sectors: u64) -> BlockEvent {
    BlockEvent {
        time: Nanos(t_us * 1000),
        device: DEV,
        action,
        op,
        flags: Flags::NONE,
        offset: Bytes(sector * 512),
        len: Bytes(sectors * 512),
        pid: Some(7),
        error: 0,
    }
}

fn run(opts: NormaliseOptions, events: &[BlockEvent]) -> (Vec<IoRecord>, NormaliseOutcome) {
    let mut out = Vec::new();
    let outcome = {
        let mut n = Normaliser::new(opts, &mut out);
        for (i, e) in events.iter().enumerate() {
            n.event(Location::line("t", i as u64 + 1), *e).unwrap();
        }
        n.finish().unwrap()
    };
    (out, outcome)
}

fn note_count(o: &NormaliseOutcome, key: &str) -> u64 {
    o.tail
        .notes
        .iter()
        .find(|(k, _)| k == key)
        .map_or(0, |(_, n)| *n)
}

use Action::*;

#[test]
fn issue_mode_pairs_completion_by_sector() {
    let events = [
        ev(100, Queue, Op::Read, 0, 8),
        ev(110, Issue, Op::Read, 0, 8),
        ev(120, Queue, Op::Write, 64, 8),
        ev(130, Issue, Op::Write, 64, 8),
        ev(150, Complete, Op::Write, 64, 8),
        ev(200, Complete, Op::Read, 0, 8),
    ];
    let (recs, o) = run(NormaliseOptions::default(), &events);
    assert_eq!(o.issue_event, IssueEvent::Issue);
    assert_eq!(recs.len(), 2);
    // Times relative to the first event (the Q at 100 us).
    assert_eq!(recs[0].time, Nanos(10_000));
    assert_eq!(recs[0].op, Op::Read);
    assert_eq!(recs[0].latency, Some(Nanos(90_000)));
    assert_eq!(recs[1].time, Nanos(30_000));
    assert_eq!(recs[1].offset, Bytes(64 * 512));
    assert_eq!(recs[1].latency, Some(Nanos(20_000)));
    assert_eq!(note_count(&o, note::UNUSED_QUEUE), 2);
}

#[test]
fn queue_mode_completes_merged_bios_with_their_request() {
    let events = [
        ev(0, Queue, Op::Write, 100, 8),
        ev(1, Queue, Op::Write, 108, 8),
        ev(2, BackMerge, Op::Write, 108, 8),
        ev(3, Queue, Op::Write, 92, 8),
        ev(4, FrontMerge, Op::Write, 92, 8),
        ev(5, Queue, Op::Read, 5000, 8),
        ev(10, Issue, Op::Write, 92, 24),
        ev(11, Issue, Op::Read, 5000, 8),
        ev(20, Complete, Op::Write, 92, 24),
        ev(30, Complete, Op::Read, 5000, 8),
    ];
    let opts = NormaliseOptions {
        event: Some(EventChoice::Queue),
        ..Default::default()
    };
    let (recs, o) = run(opts, &events);
    assert_eq!(o.issue_event, IssueEvent::Queue);
    let got: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r.time.0 / 1000,
                r.offset.0 / 512,
                r.latency.map(|l| l.0 / 1000),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 100, Some(20)),
            (1, 108, Some(19)),
            (3, 92, Some(17)),
            (5, 5000, Some(25))
        ]
    );
}

#[test]
fn queue_mode_pairs_bio_completions_one_by_one() {
    // Bio events only (a bio-based device): two bios of one sector in
    // flight at once, and a request completion covering two bios.
    let events = [
        ev(0, Queue, Op::Read, 80, 8),
        ev(1, Queue, Op::Read, 80, 8),
        ev(2, Queue, Op::Read, 80, 16),
        ev(3, Queue, Op::Write, 200, 8),
        ev(4, Queue, Op::Write, 208, 8),
        ev(10, Complete, Op::Read, 80, 8),
        ev(12, Complete, Op::Read, 80, 16),
        ev(15, Complete, Op::Read, 80, 8),
        ev(20, Complete, Op::Write, 200, 16),
    ];
    let opts = NormaliseOptions {
        event: Some(EventChoice::Queue),
        ..Default::default()
    };
    let (recs, o) = run(opts, &events);
    let got: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r.time.0 / 1000,
                r.len.0 / 512,
                r.latency.map(|l| l.0 / 1000),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 8, Some(10)),
            (1, 8, Some(14)),
            (2, 16, Some(10)),
            (3, 8, Some(17)),
            (4, 8, Some(16)),
        ]
    );
    assert_eq!(note_count(&o, note::UNMATCHED_COMPLETION), 0);
    assert!(o.messages.is_empty(), "{:?}", o.messages);
}

#[test]
fn requeue_makes_the_next_issue_a_reissue() {
    let events = [
        ev(0, Issue, Op::Read, 8, 8),
        ev(5, Requeue, Op::Read, 8, 8),
        ev(9, Issue, Op::Read, 8, 8),
        ev(20, Complete, Op::Read, 8, 8),
    ];
    let (recs, o) = run(NormaliseOptions::default(), &events);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].latency, Some(Nanos(20_000)));
    assert_eq!(note_count(&o, note::REISSUE), 1);
}

/// A read is requeued and its re-dispatch is missing from the input; a later
/// 16 KiB write at the same sector is new I/O with its own latency, not the
/// read's re-issue, and the read's completion ends the requeue.
#[test]
fn requeue_is_reissued_only_by_the_same_request() {
    let events = [
        ev(0, Issue, Op::Read, 8, 8),
        ev(5, Requeue, Op::Read, 8, 8),
        ev(10, Issue, Op::Write, 8, 32),
        ev(30, Complete, Op::Write, 8, 32),
        ev(40, Complete, Op::Read, 8, 8),
    ];
    for mode in [None, Some(EventChoice::Issue)] {
        let opts = NormaliseOptions {
            event: mode,
            ..Default::default()
        };
        let (recs, o) = run(opts, &events);
        let got: Vec<_> = recs
            .iter()
            .map(|r| {
                (
                    r.op,
                    r.time.0 / 1000,
                    r.len.0,
                    r.latency.map(|l| l.0 / 1000),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Op::Read, 0, 4096, Some(40)),
                (Op::Write, 10, 16384, Some(20)),
            ]
        );
        assert_eq!(note_count(&o, note::REISSUE), 0);
        assert_eq!(note_count(&o, note::REQUEUE_COMPLETED), 1);
        assert_eq!(note_count(&o, note::UNMATCHED_COMPLETION), 0);
    }
}

/// Queue mode: the requeued request's re-issue must show its operation and
/// length too; its completion then completes its bios.
#[test]
fn queue_mode_requeue_pairs_by_operation_and_length() {
    let events = [
        ev(0, Queue, Op::Read, 8, 8),
        ev(1, Issue, Op::Read, 8, 8),
        ev(2, Requeue, Op::Read, 8, 8),
        ev(3, Queue, Op::Write, 8, 32),
        ev(4, Issue, Op::Write, 8, 32),
        ev(6, Issue, Op::Read, 8, 8),
        ev(9, Complete, Op::Write, 8, 32),
        ev(12, Complete, Op::Read, 8, 8),
    ];
    let opts = NormaliseOptions {
        event: Some(EventChoice::Queue),
        ..Default::default()
    };
    let (recs, o) = run(opts, &events);
    let got: Vec<_> = recs
        .iter()
        .map(|r| (r.op, r.time.0 / 1000, r.latency.map(|l| l.0 / 1000)))
        .collect();
    assert_eq!(got, vec![(Op::Read, 0, Some(12)), (Op::Write, 3, Some(6))]);
    assert_eq!(note_count(&o, note::REISSUE), 1);
}

/// A completion pairs with the dispatched request of its operation and
/// length, not with the oldest one at the sector.
#[test]
fn completion_prefers_the_request_it_names() {
    let events = [
        ev(0, Issue, Op::Write, 8, 32),
        ev(1, Issue, Op::Read, 8, 8),
        ev(5, Complete, Op::Read, 8, 8),
        ev(9, Complete, Op::Write, 8, 32),
    ];
    let (recs, _) = run(NormaliseOptions::default(), &events);
    let lat: Vec<_> = recs
        .iter()
        .map(|r| (r.op, r.latency.map(|l| l.0 / 1000)))
        .collect();
    assert_eq!(lat, vec![(Op::Write, Some(9)), (Op::Read, Some(4))]);
}

#[test]
fn automatic_mode_falls_back_to_queue_and_says_so() {
    let events = [
        ev(0, Queue, Op::Read, 8, 8),
        ev(5, Queue, Op::Read, 16, 8),
        ev(9, Complete, Op::Read, 8, 16),
    ];
    let (recs, o) = run(NormaliseOptions::default(), &events);
    assert_eq!(o.issue_event, IssueEvent::Queue);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1].latency, Some(Nanos(4_000)));
    assert!(o.messages.iter().any(|m| m.contains("no issue (D) events")));
}

#[test]
fn flushes_pair_without_sector_and_records_stay_ordered() {
    let mut flush = ev(0, Issue, Op::Flush, 0, 0);
    flush.flags = Flags::PREFLUSH;
    let mut flush_done = ev(30, Complete, Op::Flush, 0, 0);
    flush_done.offset = Bytes(u64::MAX - 511); // some kernels print sector -1
    let events = [
        flush,
        ev(1, Issue, Op::Write, 8, 8),
        ev(2, Complete, Op::Write, 8, 8),
        flush_done,
    ];
    let (recs, _) = run(NormaliseOptions::default(), &events);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].op, Op::Flush);
    assert_eq!(recs[0].offset, Bytes(0));
    assert_eq!(recs[0].latency, Some(Nanos(30_000)));
    assert_eq!(recs[1].latency, Some(Nanos(1_000)));
}

#[test]
fn device_filter_and_device_table() {
    let mut other = ev(1, Issue, Op::Read, 0, 8);
    other.device = DeviceId { major: 7, minor: 3 };
    let events = [
        ev(0, Issue, Op::Read, 0, 8),
        other,
        ev(2, Issue, Op::Write, 0, 8),
    ];
    let (recs, o) = run(NormaliseOptions::default(), &events);
    assert_eq!(recs.iter().map(|r| r.device).collect::<Vec<_>>(), [0, 1, 0]);
    assert_eq!(o.tail.devices.len(), 2);
    assert_eq!(o.tail.devices[1].id, DeviceId { major: 7, minor: 3 });
    let opts = NormaliseOptions {
        device: Some(DeviceId { major: 7, minor: 3 }),
        ..Default::default()
    };
    let (recs, o) = run(opts, &events);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].device, 0);
    assert_eq!(recs[0].time, Nanos::ZERO);
    assert_eq!(note_count(&o, note::OTHER_DEVICE), 2);
}

#[test]
fn from_and_to_select_and_rebase() {
    let events: Vec<_> = (0..10)
        .map(|i| ev(i * 1_000_000, Issue, Op::Read, i * 8, 8))
        .collect();
    let opts = NormaliseOptions {
        from: Some(Nanos(3_000_000_000)),
        to: Some(Nanos(6_000_000_000)),
        ..Default::default()
    };
    let (recs, o) = run(opts, &events);
    let times: Vec<_> = recs.iter().map(|r| r.time.0 / 1_000_000_000).collect();
    assert_eq!(times, [0, 1, 2, 3]);
    assert_eq!(recs[0].offset, Bytes(3 * 8 * 512));
    assert_eq!(note_count(&o, note::BEFORE_FROM), 3);
    assert_eq!(note_count(&o, note::AFTER_TO), 3);
}

#[test]
fn small_reorders_are_sorted_large_ones_are_errors() {
    let events = [
        ev(1_000, Issue, Op::Read, 0, 8),
        ev(1_500, Issue, Op::Read, 8, 8),
        ev(1_200, Issue, Op::Read, 16, 8), // 300 us back: tolerated
    ];
    let (recs, _) = run(NormaliseOptions::default(), &events);
    let offs: Vec<_> = recs.iter().map(|r| r.offset.0 / 512).collect();
    assert_eq!(offs, [0, 16, 8]);
    assert!(recs.windows(2).all(|w| w[0].time <= w[1].time));

    // 10 s, 11 s, then a real gap to 20 s, 21 s, then 12 s: a step back
    // of 9 s, more than the 1 s tolerated, reported at the end of the input
    // (the time check waits for the records after each one).
    let mut out = Vec::new();
    let mut n = Normaliser::new(NormaliseOptions::default(), &mut out);
    for (i, s) in [10u64, 11, 20, 21, 12].into_iter().enumerate() {
        n.event(
            Location::line("f", i as u64 + 1),
            ev(s * 1_000_000, Issue, Op::Read, 0, 8),
        )
        .unwrap();
    }
    let err = n.finish().unwrap_err().to_string();
    assert!(err.starts_with("f:5: time goes backwards by 9."), "{err}");
}

/// The trace starts at the earliest of its first inputs, not at the first
/// one: an input 300 µs out of order at the start keeps its 300 µs.
#[test]
fn trace_starts_at_the_earliest_first_input() {
    let events = [
        ev(1_000, Issue, Op::Read, 0, 8),
        ev(700, Issue, Op::Read, 8, 8),
        ev(1_500, Issue, Op::Read, 16, 8),
    ];
    let (recs, _) = run(NormaliseOptions::default(), &events);
    let got: Vec<_> = recs
        .iter()
        .map(|r| (r.offset.0 / 512, r.time.0 / 1000))
        .collect();
    assert_eq!(got, [(8, 0), (0, 300), (16, 800)]);
}

/// Events one per 10 ms from `start_ms`, lines numbered from `first_line`.
fn steady(first_line: u64, start_ms: u64, count: u64) -> Vec<(u64, BlockEvent)> {
    (0..count)
        .map(|i| {
            let t_us = (start_ms + i * 10) * 1000;
            (first_line + i, ev(t_us, Issue, Op::Read, i * 8, 8))
        })
        .collect()
}

fn run_lines(
    opts: NormaliseOptions,
    lines: &[(u64, BlockEvent)],
) -> Result<(Vec<IoRecord>, NormaliseOutcome), ConvertError> {
    let mut out = Vec::new();
    let outcome = {
        let mut n = Normaliser::new(opts, &mut out);
        for (line, e) in lines {
            n.event(Location::line("f", *line), *e)?;
        }
        n.finish()?
    };
    Ok((out, outcome))
}

fn skip_bad() -> NormaliseOptions {
    NormaliseOptions {
        skip_bad: true,
        ..Default::default()
    }
}

/// One line with a time 40 years off, among good lines: that line is the
/// bad input; every good line after it is kept.
#[test]
fn one_outlier_time_costs_its_line_only() {
    for outlier_s in [1_266_874_889u64, 0] {
        let mut lines = steady(1, 5_000, 50);
        let mut bogus = ev(outlier_s * 1_000_000, Issue, Op::Write, 999, 8);
        bogus.time = Nanos(outlier_s * 1_000_000_000);
        lines.push((51, bogus));
        lines.extend(steady(52, 5_500, 50));
        let err = run_lines(NormaliseOptions::default(), &lines).unwrap_err();
        assert_eq!(
            err.bad_input_kind(),
            Some(crate::error::BadInputKind::TimeOrder),
            "{err}"
        );
        let err = err.to_string();
        assert!(err.starts_with("f:51: time "), "{outlier_s}: {err}");
        assert!(err.contains("bad timestamp"), "{err}");
        let (recs, o) = run_lines(skip_bad(), &lines).unwrap();
        assert_eq!(recs.len(), 100, "{outlier_s}");
        assert_eq!(o.tail.skipped.count, 1);
        assert_eq!(o.tail.skipped.examples[0].location, "f:51");
        assert!(recs.iter().all(|r| r.op == Op::Read));
        assert_eq!(recs.last().unwrap().time, Nanos(990_000_000));
    }
}

/// The same for the very first line, and for a run of bad lines shorter than
/// the look-ahead.
#[test]
fn a_bad_first_time_or_a_short_bad_run_is_found_too() {
    let mut first = ev(0, Issue, Op::Write, 999, 8);
    first.time = Nanos(1_266_874_889_000_000_000);
    let mut lines = vec![(1, first)];
    lines.extend(steady(2, 5_000, 30));
    let (recs, o) = run_lines(skip_bad(), &lines).unwrap();
    assert_eq!((recs.len(), o.tail.skipped.count), (30, 1));
    assert_eq!(o.tail.skipped.examples[0].location, "f:1");
    assert_eq!(recs[0].time, Nanos::ZERO);

    // 196 bad lines in a row among 1,000 good ones.
    let mut lines = steady(1, 0, 1000);
    for i in 0..196 {
        let mut bogus = ev(0, Issue, Op::Write, 999, 8);
        bogus.time = Nanos(1_266_874_889_000_000_000 + i);
        lines.insert(100 + i as usize, (5000 + i, bogus));
    }
    let (recs, o) = run_lines(skip_bad(), &lines).unwrap();
    assert_eq!((recs.len(), o.tail.skipped.count), (1000, 196));

    // Every fifth line bad, 196 of them.
    let mut lines = steady(1, 0, 784);
    for i in 0..196u64 {
        let mut bogus = ev(0, Issue, Op::Write, 999, 8);
        bogus.time = Nanos(1_266_874_889_000_000_000 + i);
        lines.insert(4 * i as usize + i as usize, (5000 + i, bogus));
    }
    let (recs, o) = run_lines(skip_bad(), &lines).unwrap();
    assert_eq!((recs.len(), o.tail.skipped.count), (784, 196));
}

/// A step back that the next records follow is not one bad time: the input
/// is out of time order, said at the first record of the step.
#[test]
fn a_lasting_step_back_is_an_input_out_of_order() {
    let mut lines = steady(1, 10_000, 100);
    lines.extend(steady(101, 2_000, 100));
    let err = run_lines(NormaliseOptions::default(), &lines)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("f:101: time goes backwards by 8.99"),
        "{err}"
    );
    assert!(err.contains("not in time order"), "{err}");
    let (recs, o) = run_lines(skip_bad(), &lines).unwrap();
    assert_eq!((recs.len(), o.tail.skipped.count), (100, 100));

    // A real idle gap forward is no error.
    let mut lines = steady(1, 0, 100);
    lines.extend(steady(101, 3_600_000, 100));
    let (recs, _) = run_lines(NormaliseOptions::default(), &lines).unwrap();
    assert_eq!(recs.len(), 200);
}

#[test]
fn skip_bad_counts_instead_of_stopping() {
    let mut out = Vec::new();
    let opts = NormaliseOptions {
        skip_bad: true,
        ..Default::default()
    };
    let mut n = Normaliser::new(opts, &mut out);
    n.event(Location::line("f", 1), ev(0, Issue, Op::Read, 0, 8))
        .unwrap();
    let mut huge = ev(1, Issue, Op::Read, 0, 8);
    huge.offset = Bytes(1 << 63);
    n.event(Location::line("f", 2), huge).unwrap();
    let reason =
        crate::error::BadReason::new(crate::error::BadInputKind::Syntax, "not a blkparse line");
    n.bad_input(Location::line("f", 3), "garbage", &reason)
        .unwrap();
    let o = n.finish().unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(o.tail.skipped.count, 2);
    assert_eq!(o.tail.skipped.examples[0].location, "f:2");
    assert!(o.tail.skipped.examples[0].reason.contains("past 2^63"));
    assert_eq!(o.tail.skipped.examples[1].content, "garbage");
}

#[test]
fn missing_completions_are_bounded_by_window_and_count() {
    let opts = NormaliseOptions {
        max_pending: 4,
        ..Default::default()
    };
    let mut out = Vec::new();
    {
        let mut n = Normaliser::new(opts, &mut out);
        for i in 0..100u64 {
            n.event(Location::line("f", i + 1), ev(i, Issue, Op::Read, i * 8, 8))
                .unwrap();
            assert!(n.records.len() <= 5);
        }
        let o = n.finish().unwrap();
        assert_eq!(o.records, 100);
        assert_eq!(note_count(&o, note::NO_COMPLETION), 100);
    }
    assert!(out.iter().all(|r| r.latency.is_none()));
}

#[test]
fn remapped_queue_on_source_device_is_not_counted_twice() {
    let dm = DeviceId {
        major: 253,
        minor: 0,
    };
    let mut q_dm = ev(0, Queue, Op::Write, 1000, 8);
    q_dm.device = dm;
    let remap = ev(1, Remap, Op::Write, 5000, 8);
    let events = [
        ev(2, Queue, Op::Write, 5000, 8),
        ev(3, Issue, Op::Write, 5000, 8),
    ];
    let mut out = Vec::new();
    let opts = NormaliseOptions {
        event: Some(EventChoice::Queue),
        ..Default::default()
    };
    let o = {
        let mut n = Normaliser::new(opts, &mut out);
        n.event(Location::line("f", 1), q_dm).unwrap();
        n.remap(Location::line("f", 2), remap, dm, Bytes(1000 * 512))
            .unwrap();
        for e in events {
            n.event(Location::line("f", 3), e).unwrap();
        }
        n.finish().unwrap()
    };
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].offset, Bytes(5000 * 512));
    assert_eq!(note_count(&o, note::REMAP_DROPPED), 1);
}
