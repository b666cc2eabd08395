//! The prediction on synthetic traces whose dependencies are known.

use super::*;
use trace_format::{Bytes, Nanos};

/// Every model's time, ns, in the order of [`DependencyModel::ALL`].
fn ns(t: ModelTimes) -> [u64; 3] {
    DependencyModel::ALL.map(|m| t.get(m).expect("every model predicted").0)
}

fn rec(time: u64, op: Op, latency: u64, stream: u32) -> IoRecord {
    IoRecord {
        time: Nanos(time),
        op,
        offset: Bytes(0),
        len: Bytes(4096),
        flags: Flags::NONE,
        latency: Some(Nanos(latency)),
        stream: Some(stream),
        device: 0,
    }
}

/// Runs the model with each record's latency on the target given by
/// `on_target`, completions fed in reverse order within each window of
/// `window` records (as a deep queue would return them).
fn predict(
    recs: &[IoRecord],
    marks: TaskMarks,
    on_target: impl Fn(usize, &IoRecord) -> u64,
    window: usize,
) -> TaskTimePrediction {
    let mut m = TaskTimeModel::new(marks);
    for (chunk_start, chunk) in recs.chunks(window).enumerate() {
        let base = chunk_start * window;
        for (i, r) in chunk.iter().enumerate() {
            m.admit((base + i) as u64, r, true);
        }
        for (i, r) in chunk.iter().enumerate().rev() {
            m.completed((base + i) as u64, on_target(base + i, r));
        }
    }
    m.finish().expect("a prediction")
}

/// Marks with only the task's "done" point, `end_ns` after time 0.
fn done_at(end_ns: u64) -> TaskMarks {
    TaskMarks {
        end: Some(Nanos(end_ns)),
        ..TaskMarks::default()
    }
}

fn original(_: usize, r: &IoRecord) -> u64 {
    r.latency.map_or(0, |l| l.0)
}

/// A task reading in a chain: each read 100 µs, 1 ms of think time after it.
fn chain(n: u64) -> Vec<IoRecord> {
    (0..n)
        .map(|i| rec(i * 1_100_000, Op::Read, 100_000, 7))
        .collect()
}

#[test]
fn the_original_latencies_predict_the_captured_time() {
    let recs = chain(10);
    let p = predict(&recs, TaskMarks::default(), original, 3);
    assert!(!p.marked);
    assert_eq!(p.captured.0, 9 * 1_100_000 + 100_000);
    assert_eq!(ns(p.predicted), [p.captured.0; 3]);
}

#[test]
fn a_slower_drive_delays_a_chain_by_every_latency_and_keeps_think_time() {
    let recs = chain(10);
    let p = predict(&recs, TaskMarks::default(), |_, _| 300_000, 1);
    // Each of the ten reads 200 µs slower, every think gap kept.
    assert_eq!(
        p.predicted(DependencyModel::Blocking).0,
        p.captured.0 + 10 * 200_000
    );
    assert_eq!(
        p.predicted(DependencyModel::All).0,
        p.captured.0 + 2_000_000
    );
}

#[test]
fn a_faster_drive_predicts_a_shorter_task() {
    let recs = chain(10);
    let p = predict(&recs, TaskMarks::default(), |_, _| 40_000, 4);
    assert_eq!(
        p.predicted(DependencyModel::Stream).0,
        p.captured.0 - 10 * 60_000
    );
}

#[test]
fn writeback_delays_only_the_all_model() {
    // Reads in a chain; between them, plain (writeback) writes that
    // complete before the next read was issued.
    let mut recs = Vec::new();
    for i in 0..5u64 {
        recs.push(rec(i * 2_000_000, Op::Read, 100_000, 7));
        recs.push(rec(i * 2_000_000 + 200_000, Op::Write, 500_000, 99));
    }
    let slow_writes = |_: usize, r: &IoRecord| {
        if r.op == Op::Write {
            5_000_000
        } else {
            100_000
        }
    };
    let marks = done_at(9_000_000);
    let p = predict(&recs, marks, slow_writes, 2);
    assert!(p.marked);
    assert_eq!(p.captured.0, 9_000_000);
    assert_eq!(p.predicted(DependencyModel::Blocking).0, 9_000_000);
    assert_eq!(p.predicted(DependencyModel::Stream).0, 9_000_000);
    assert!(
        p.predicted(DependencyModel::All).0 > 9_000_000 + 4 * 4_500_000,
        "the all model waits for each slow write: {:?}",
        ns(p.predicted)
    );
}

/// A plain 4 KiB write (the kernel's writeback).
fn write(time: u64, latency: u64, stream: u32) -> IoRecord {
    rec(time, Op::Write, latency, stream)
}

fn flush(time: u64, latency: u64, stream: u32) -> IoRecord {
    IoRecord {
        len: Bytes(0),
        ..rec(time, Op::Flush, latency, stream)
    }
}

/// A task that reads, dirties pages, and syncs: the flusher (stream 99)
/// writes 8 blocks 100 µs each, one after the other, then the sync's
/// flush (stream 7) follows; the done mark is when the flush completed.
fn buffered_writes_then_sync() -> Vec<IoRecord> {
    let mut recs = vec![rec(0, Op::Read, 100_000, 7)];
    recs.extend((0..8u64).map(|i| write(1_000_000 + i * 150_000, 100_000, 99)));
    recs.push(flush(2_300_000, 50_000, 7));
    recs
}

#[test]
fn a_sync_waits_for_the_writes_its_flush_covers() {
    let recs = buffered_writes_then_sync();
    // On the target every write takes 1 ms (900 µs longer); the read
    // and the flush take what they took.
    let slow_writes = |_: usize, r: &IoRecord| {
        if r.op == Op::Write {
            1_000_000
        } else {
            r.latency.map_or(0, |l| l.0)
        }
    };
    let p = predict(&recs, done_at(2_400_000), slow_writes, 3);
    // Each write starts after the previous one completed, so the flush
    // is issued 8 x 900 µs later, and the task is done that much later.
    for m in [DependencyModel::Blocking, DependencyModel::Stream] {
        assert_eq!(
            p.predicted(m).0,
            2_400_000 + 8 * 900_000,
            "{} model: {:?}",
            m.name(),
            ns(p.predicted)
        );
    }
    // The same on a faster drive: the sync ends sooner.
    let fast_writes = |_: usize, r: &IoRecord| {
        if r.op == Op::Write {
            20_000
        } else {
            r.latency.map_or(0, |l| l.0)
        }
    };
    let p = predict(&recs, done_at(2_400_000), fast_writes, 1);
    assert_eq!(
        p.predicted(DependencyModel::Blocking).0,
        2_400_000 - 8 * 80_000
    );
}

#[test]
fn a_preflush_journal_commit_waits_for_the_writes_before_it() {
    // Writes in flight together (one burst of the flusher), then the
    // journal's commit block with preflush and FUA from another thread.
    let mut recs: Vec<IoRecord> = (0..4u64).map(|i| write(i * 1_000, 200_000, 99)).collect();
    let mut commit = write(400_000, 100_000, 42);
    commit.flags = Flags::PREFLUSH | Flags::FUA;
    recs.push(commit);
    // The burst queues on the target: the i-th write completes after
    // (i+1) ms.
    let queued = |i: usize, r: &IoRecord| {
        if i < 4 {
            (i as u64 + 1) * 1_000_000 - r.time.0
        } else {
            100_000
        }
    };
    let p = predict(&recs, done_at(500_000), queued, 5);
    // The commit waits for the last write, done at 4 ms instead of at
    // 203 µs.
    assert_eq!(
        p.predicted(DependencyModel::Blocking).0,
        500_000 + (4_000_000 - 203_000)
    );
}

#[test]
fn writeback_the_task_did_not_wait_for_moves_nothing() {
    // Plain writes with no flush after them before the done mark, and a
    // flush after the mark (background writeback and a journal commit
    // once the task was over): a slow drive changes nothing.
    let mut recs = vec![rec(0, Op::Read, 100_000, 7)];
    recs.extend((0..4u64).map(|i| write(200_000 + i * 150_000, 100_000, 99)));
    recs.push(rec(1_000_000, Op::Read, 100_000, 7));
    recs.extend((0..4u64).map(|i| write(3_000_000 + i * 150_000, 100_000, 99)));
    recs.push(flush(4_000_000, 50_000, 99));
    let slow_writes = |_: usize, r: &IoRecord| {
        if r.op == Op::Write {
            5_000_000
        } else {
            r.latency.map_or(0, |l| l.0)
        }
    };
    let p = predict(&recs, done_at(1_200_000), slow_writes, 2);
    assert_eq!(p.predicted(DependencyModel::Blocking).0, 1_200_000);
    assert_eq!(p.predicted(DependencyModel::Stream).0, 1_200_000);
}

#[test]
fn an_o_direct_write_is_waited_for_by_its_issuer() {
    // O_DIRECT (and O_SYNC) writes carry the sync flag: the task's next
    // read waits for each.
    let recs: Vec<IoRecord> = (0..5u64)
        .map(|i| {
            let mut w = rec(i * 300_000, Op::Write, 100_000, 7);
            w.flags = Flags::SYNC;
            w
        })
        .collect();
    let p = predict(&recs, done_at(1_400_000), |_, _| 600_000, 1);
    assert_eq!(
        p.predicted(DependencyModel::Blocking).0,
        1_400_000 + 5 * 500_000
    );
}

/// The path's waits as (label, ios, wait ns).
fn waits_of(p: &TaskTimePrediction) -> Vec<(String, f64, u64)> {
    p.waits
        .iter()
        .map(|w| (w.class.label(), w.ios, (w.wait_s * 1e9).round() as u64))
        .collect()
}

#[test]
fn the_waits_of_a_chain_are_its_reads_on_the_target() {
    let recs = chain(10);
    let p = predict(&recs, done_at(9_900_000 + 100_000), |_, _| 300_000, 2);
    assert_eq!(
        p.predicted(DependencyModel::Blocking).0,
        10_000_000 + 10 * 200_000
    );
    assert_eq!(
        waits_of(&p),
        vec![("4 KiB random reads at QD1".to_string(), 10.0, 10 * 300_000)]
    );
    // Think time is the rest: the nine 1 ms gaps.
    let t = crate::metrics::task_time(&p);
    let b = t.breakdown.expect("a breakdown");
    assert!((b.think_s - 0.009).abs() < 1e-9, "{b:?}");
    assert_eq!(b.model, "blocking");
}

#[test]
fn the_waits_of_a_sync_are_its_writes_and_its_flush() {
    let recs = buffered_writes_then_sync();
    let slow_writes = |_: usize, r: &IoRecord| {
        if r.op == Op::Write {
            1_000_000
        } else {
            r.latency.map_or(0, |l| l.0)
        }
    };
    let p = predict(&recs, done_at(2_400_000), slow_writes, 3);
    assert_eq!(
        waits_of(&p),
        vec![
            ("4 KiB random reads at QD1".to_string(), 1.0, 100_000),
            ("4 KiB random writes at QD1".to_string(), 8.0, 8_000_000),
            ("flushes at QD1".to_string(), 1.0, 50_000),
        ]
    );
}

#[test]
fn queue_depth_and_sequence_set_the_class() {
    // Four sequential 64 KiB reads issued together, then one after.
    let mut recs: Vec<IoRecord> = (0..4u64)
        .map(|i| IoRecord {
            offset: Bytes(i * 65536),
            len: Bytes(65536),
            ..rec(i * 1_000, Op::Read, 500_000, 7)
        })
        .collect();
    recs.push(IoRecord {
        offset: Bytes(4 * 65536),
        len: Bytes(65536),
        ..rec(1_000_000, Op::Read, 100_000, 7)
    });
    // On the target the four complete one after the other.
    let queued = |i: usize, r: &IoRecord| r.latency.map_or(0, |l| l.0) + i as u64 * 10_000;
    let p = predict(&recs, done_at(1_100_000), queued, 5);
    let w = waits_of(&p);
    // The last read waited for the last of the four (issued at QD4).
    assert_eq!(
        w.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(),
        [
            "64 KiB sequential reads at QD1",
            "64 KiB sequential reads at QD2-4"
        ]
    );
}

#[test]
fn a_sync_write_holds_up_every_stream() {
    // Stream 1 writes synchronously (an fsync); stream 2 reads after it.
    let mut w = rec(0, Op::Write, 100_000, 1);
    w.flags = Flags::SYNC;
    let recs = vec![w, rec(200_000, Op::Read, 100_000, 2)];
    let slow_sync = |i: usize, _: &IoRecord| if i == 0 { 1_100_000 } else { 100_000 };
    let p = predict(&recs, TaskMarks::default(), slow_sync, 1);
    // The read waited for the write's extra millisecond in every model.
    assert_eq!(ns(p.predicted), [300_000 + 1_000_000; 3]);
}

#[test]
fn streams_wait_only_for_their_own_reads_in_the_stream_model() {
    // Stream 1 reads at 0 (5 ms slower on the target); stream 2 reads at
    // 1 ms, after stream 1's read had completed in the original.
    // Stream 2 also read at 50 µs, before that completion.
    let recs = vec![
        rec(0, Op::Read, 100_000, 1),
        rec(50_000, Op::Read, 100_000, 2),
        rec(1_000_000, Op::Read, 100_000, 2),
    ];
    let slow_first = |i: usize, _: &IoRecord| if i == 0 { 5_100_000 } else { 100_000 };
    let p = predict(&recs, TaskMarks::default(), slow_first, 1);
    assert_eq!(p.captured.0, 1_100_000);
    // Blocking: stream 2's read waits for stream 1's, ending at 6.1 ms.
    assert_eq!(p.predicted(DependencyModel::Blocking).0, 6_100_000);
    // Stream: it does not; the task ends with stream 1's read at 5.1 ms.
    assert_eq!(p.predicted(DependencyModel::Stream).0, 5_100_000);
    // With an end mark the task is done when stream 2 (the latest to
    // read) is, and not before stream 1's read completes at 5.1 ms.
    let marks = done_at(1_200_000);
    let p = predict(&recs, marks, slow_first, 1);
    assert_eq!(p.predicted(DependencyModel::Stream).0, 5_100_000);
}

#[test]
fn a_stream_that_stopped_early_does_not_set_the_end() {
    // Stream 1 reads twice at the start and stops; stream 2, which
    // started with it, reads in a chain up to the done mark. On the
    // target stream 1's reads are 1 ms slower and stream 2's 50 µs faster.
    let mut recs = vec![
        rec(0, Op::Read, 100_000, 2),
        rec(10_000, Op::Read, 100_000, 1),
        rec(200_000, Op::Read, 100_000, 1),
    ];
    recs.extend((0..20u64).map(|i| rec(1_000_000 + i * 500_000, Op::Read, 100_000, 2)));
    let on_target = |_: usize, r: &IoRecord| {
        if r.stream == Some(1) {
            1_100_000
        } else {
            50_000
        }
    };
    let marks = done_at(11_000_000);
    let p = predict(&recs, marks, on_target, 4);
    // Stream 2's 21 reads end the task 21 x 50 µs sooner; stream 1's
    // reads (done at 2.3 ms on the target) are long over by then.
    assert_eq!(
        p.predicted(DependencyModel::Stream).0,
        11_000_000 - 21 * 50_000
    );
    // The blocking model lets stream 2 wait for stream 1.
    assert!(p.predicted(DependencyModel::Blocking).0 > 11_000_000);
}

#[test]
fn a_stream_that_stopped_early_still_ends_no_sooner_than_its_reads() {
    // Stream 1's only read takes 20 ms longer on the target, past the
    // done mark; stream 2 reads at the start and at the end.
    let recs = vec![
        rec(0, Op::Read, 100_000, 2),
        rec(10_000, Op::Read, 100_000, 1),
        rec(1_000_000, Op::Read, 100_000, 2),
    ];
    let on_target = |i: usize, _: &IoRecord| if i == 1 { 20_100_000 } else { 100_000 };
    let marks = done_at(2_000_000);
    let p = predict(&recs, marks, on_target, 1);
    assert_eq!(p.predicted(DependencyModel::Stream).0, 10_000 + 20_100_000);
}

#[test]
fn the_end_mark_ignores_io_after_the_task_and_starts_from_the_untraced_time() {
    let mut recs = chain(5);
    // After the task was done: a slow read nobody waited for.
    recs.push(rec(20_000_000, Op::Read, 100_000, 7));
    let marks = TaskMarks {
        end: Some(Nanos(5_000_000)),
        start_before: Some(Nanos(1_000_000)),
        untraced: Some(Nanos(3_000_000)),
        ..TaskMarks::default()
    };
    let slow = |i: usize, _: &IoRecord| if i == 5 { 90_000_000 } else { 150_000 };
    let p = predict(&recs, marks, slow, 2);
    assert_eq!(p.captured.0, 6_000_000);
    assert_eq!(p.untraced.map(|u| u.0), Some(3_000_000));
    // Five reads 50 µs slower, from the untraced 3 ms.
    assert_eq!(ns(p.predicted), [3_000_000 + 5 * 50_000; 3]);
}

#[test]
fn completion_order_does_not_change_the_prediction() {
    let recs: Vec<IoRecord> = (0..40u64)
        .map(|i| {
            let op = if i % 3 == 0 { Op::Write } else { Op::Read };
            rec(i * 50_000, op, 30_000 + (i % 7) * 20_000, (i % 4) as u32)
        })
        .collect();
    let lat = |i: usize, _: &IoRecord| 20_000 + (i as u64 * 7919) % 90_000;
    let a = predict(&recs, TaskMarks::default(), lat, 1);
    let b = predict(&recs, TaskMarks::default(), lat, 8);
    assert_eq!(a, b);
}

#[test]
fn skipped_records_keep_their_original_latency_and_missing_ones_predict_nothing() {
    let recs = chain(3);
    let mut m = TaskTimeModel::new(TaskMarks::default());
    m.admit(0, &recs[0], true);
    m.admit(1, &recs[1], false);
    m.admit(2, &recs[2], true);
    m.completed(0, 100_000);
    m.completed(2, 100_000);
    let p = m.finish().expect("a prediction");
    assert_eq!(ns(p.predicted), [p.captured.0; 3]);

    let mut m = TaskTimeModel::new(TaskMarks::default());
    m.admit(0, &recs[0], true);
    assert_eq!(
        m.finish(),
        Err(NoTaskTime::Unfinished),
        "a latency never came"
    );

    let mut no_latency = recs[0];
    no_latency.latency = None;
    let mut m = TaskTimeModel::new(TaskMarks::default());
    m.admit(0, &no_latency, true);
    m.completed(0, 5);
    assert_eq!(
        m.finish(),
        Err(NoTaskTime::NoOriginalCompletions),
        "no original completion"
    );
}

#[test]
fn marks_are_read_from_format_1_0_notes() {
    let marks = TaskMarks {
        end: Some(Nanos(7)),
        untraced: Some(Nanos(5)),
        ..TaskMarks::default()
    };
    let mut notes = marks.to_legacy_notes();
    notes.push(("something else".to_string(), 1));
    assert_eq!(notes.len(), 3);
    assert_eq!(TaskMarks::from_legacy_notes(&mut notes), marks);
    assert_eq!(notes, [("something else".to_string(), 1)]);
    let late_start = TaskMarks {
        start_after: Some(Nanos(2)),
        ..marks
    };
    assert_eq!(late_start.captured(), Some(Nanos(5)));
}

#[test]
fn a_calibrated_trace_predicts_the_untraced_time_on_its_capture_drive() {
    // The capture's reads took 500 µs each; on the capture drive itself
    // a replay measured 100 µs, so uncalibrated that drive predicts the
    // untraced 4 ms less 5 x 400 µs.
    let recs: Vec<IoRecord> = (0..5)
        .map(|i| rec(i * 1_500_000, Op::Read, 500_000, 7))
        .collect();
    let marks = TaskMarks {
        end: Some(Nanos(7_000_000)),
        untraced: Some(Nanos(4_000_000)),
        ..TaskMarks::default()
    };
    let capture_drive = |_: usize, _: &IoRecord| 100_000;
    let uncalibrated = predict(&recs, marks, capture_drive, 1);
    assert_eq!(uncalibrated.uncalibrated.map(ns), None);
    assert_eq!(ns(uncalibrated.predicted), [2_000_000; 3]);

    let calibrated_marks = TaskMarks {
        capture_drive: uncalibrated.predicted,
        ..marks
    };
    let on_capture_drive = predict(&recs, calibrated_marks, capture_drive, 1);
    assert_eq!(ns(on_capture_drive.predicted), [4_000_000; 3]);
    assert_eq!(on_capture_drive.uncalibrated.map(ns), Some([2_000_000; 3]));

    // Another drive, 1 ms per read: 900 µs more per read than the
    // capture drive's replay, from the untraced time.
    let slower = predict(&recs, calibrated_marks, |_, _| 1_000_000, 1);
    assert_eq!(ns(slower.predicted), [4_000_000 + 5 * 900_000; 3]);
    assert_eq!(
        slower.uncalibrated(DependencyModel::Blocking).0,
        4_000_000 + 5 * 500_000
    );
}

#[test]
fn a_model_without_a_capture_drive_prediction_stays_uncalibrated() {
    let recs = chain(4);
    let marks = TaskMarks {
        capture_drive: ModelTimes::from_fn(|m| {
            (m == DependencyModel::Blocking).then_some(Nanos(1_000_000))
        }),
        ..TaskMarks::default()
    };
    let p = predict(&recs, marks, original, 1);
    let captured = p.captured.0;
    assert_eq!(p.predicted(DependencyModel::All).0, captured);
    assert_eq!(p.predicted(DependencyModel::Stream).0, captured);
    // captured + (captured - 1 ms): the replay was the capture's, the
    // capture drive's replay predicted 1 ms.
    assert_eq!(
        p.predicted(DependencyModel::Blocking).0,
        2 * captured - 1_000_000
    );
}

#[test]
fn the_capture_drive_prediction_is_read_from_format_1_0_notes() {
    let marks = TaskMarks {
        end: Some(Nanos(9)),
        capture_drive: ModelTimes::from_fn(|m| Some(Nanos(m.index() as u64 + 1))),
        ..TaskMarks::default()
    };
    let mut notes = marks.to_legacy_notes();
    assert_eq!(notes.len(), 4);
    assert_eq!(
        notes[2],
        (
            "task: predicted on the capture drive (blocking), ns".to_string(),
            2
        )
    );
    assert_eq!(TaskMarks::from_legacy_notes(&mut notes), marks);
    assert!(!TaskMarks::default().capture_drive.is_set());
}

/// A trace file of `recs` with `notes` and `task` in its tail; `minor`
/// rewrites the header's version (format 1.0 kept the task in the notes).
fn trace_file(
    recs: &[IoRecord],
    notes: Vec<(String, u64)>,
    task: TaskMarks,
    minor: u16,
) -> Vec<u8> {
    let header = trace_format::TraceHeader::new("t", "capture");
    let mut w = trace_format::TraceWriter::new(Vec::new(), &header).unwrap();
    for r in recs {
        w.push(r).unwrap();
    }
    let tail = trace_format::TraceTail {
        notes,
        task,
        ..Default::default()
    };
    let mut bytes = w.finish(&tail).unwrap().0;
    bytes[10..12].copy_from_slice(&minor.to_le_bytes());
    let end = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let crc = crc32c::crc32c(&bytes[..end]);
    bytes[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    bytes
}

#[test]
fn a_format_1_0_trace_with_task_notes_predicts_what_its_task_section_does() {
    let recs: Vec<IoRecord> = (0..6)
        .map(|i| rec(i * 1_500_000, Op::Read, 500_000, 7))
        .collect();
    let marks = TaskMarks {
        start_before: Some(Nanos(300_000)),
        end: Some(Nanos(8_000_000)),
        untraced: Some(Nanos(6_000_000)),
        capture_drive: ModelTimes::from_fn(|m| Some(Nanos(5_000_000 + m.index() as u64))),
        ..TaskMarks::default()
    };
    let lost = ("lost events (ring buffer overrun)".to_string(), 0);
    let mut notes = marks.to_legacy_notes();
    notes.push(lost.clone());
    let old =
        trace_format::TraceFile::from_bytes(trace_file(&recs, notes, TaskMarks::default(), 0))
            .unwrap();
    let new = trace_format::TraceFile::from_bytes(trace_file(&recs, vec![lost.clone()], marks, 1))
        .unwrap();
    assert_eq!(old.footer().tail.task, marks);
    assert_eq!(old.footer().tail, new.footer().tail);
    let on_target = |_: usize, _: &IoRecord| 200_000;
    let from_old = predict(&recs, old.footer().tail.task, on_target, 2);
    let from_new = predict(&recs, new.footer().tail.task, on_target, 2);
    assert_eq!(from_old, from_new);
    assert!(from_old.uncalibrated.is_some(), "calibrated");
    assert_eq!(from_old.captured, Nanos(8_300_000));
}

/// A copy as a slow capture drive shows it: each read takes 1 ms and the
/// next follows 10 µs after it completes, while the thread did 0.8 ms of
/// copying under each read (its CPU time, not in the trace's gaps).
fn copy_under_slow_reads() -> (Vec<IoRecord>, TaskMarks) {
    let recs: Vec<IoRecord> = (0..10)
        .map(|i| rec(i * 1_010_000, Op::Read, 1_000_000, 7))
        .collect();
    let marks = TaskMarks {
        end: Some(Nanos(10 * 1_010_000)),
        cpu: Some(trace_format::TaskCpu {
            busiest_thread: Nanos(8_000_000),
            total: Nanos(8_500_000),
            threads: 2,
        }),
        ..TaskMarks::default()
    };
    (recs, marks)
}

#[test]
fn no_drive_predicts_a_task_below_its_busiest_threads_cpu_time() {
    let (recs, marks) = copy_under_slow_reads();
    // Reads of 10 µs: the waits alone would leave 10 x 20 µs.
    let fast = predict(&recs, marks, |_, _| 10_000, 1);
    assert_eq!(ns(fast.predicted), [8_000_000; 3]);
    let unfloored = predict(&recs, TaskMarks { cpu: None, ..marks }, |_, _| 10_000, 1);
    assert_eq!(unfloored.predicted(DependencyModel::Blocking).0, 200_000);
    assert_eq!(ns(fast.unfloored.expect("held up")), [200_000; 3]);
    // A slower drive is above the floor and keeps its shift.
    let slow = predict(&recs, marks, |_, _| 2_000_000, 1);
    assert_eq!(slow.unfloored, None);
    assert_eq!(
        slow.predicted(DependencyModel::Blocking).0,
        10 * 1_010_000 + 10 * 1_000_000
    );
}

#[test]
fn the_cpu_floor_holds_calibrated_and_uncalibrated_predictions() {
    let (recs, mut marks) = copy_under_slow_reads();
    marks.untraced = Some(Nanos(9_000_000));
    marks.capture_drive = ModelTimes::from_fn(|_| Some(Nanos(10_100_000)));
    let p = predict(&recs, marks, |_, _| 10_000, 1);
    // The capture took 10.1 ms, the untraced runs 9.0: its CPU time is
    // taken at their pace, 8.0 x 9.0 / 10.1 ms.
    assert_eq!(p.cpu_floor, Some(Nanos(7_128_712)));
    assert_eq!(ns(p.predicted), [7_128_712; 3]);
    // What it held up, and the figure a calibration sets replays against,
    // stay as the model has them.
    assert_eq!(ns(p.unfloored.expect("held up")), [0; 3]);
    assert_eq!(p.uncalibrated(DependencyModel::Blocking).0, 0);
    // A capture faster than the untraced runs keeps its own CPU time.
    marks.untraced = Some(Nanos(11_000_000));
    let faster = predict(&recs, marks, |_, _| 10_000, 1);
    assert_eq!(faster.cpu_floor, Some(Nanos(8_000_000)));
    assert_eq!(ns(faster.predicted), [8_000_000; 3]);
    // Unmarked (no "done" point), the CPU time measured between marks is
    // not the span's, and holds nothing.
    marks.end = None;
    let unmarked = predict(&recs, marks, |_, _| 10_000, 1);
    assert!(!unmarked.marked);
    assert!(unmarked.predicted(DependencyModel::Blocking).0 < 8_000_000);
}
