//! The task section (format 1.1): it round-trips through both readers, a
//! format 1.0 file with the task in its notes reads the same, and a damaged
//! section is refused with an error that names it. Likewise the calibration
//! section beside it, and the task CPU section.

use trace_format::*;

fn marks() -> TaskMarks {
    let mut capture_drive = ModelTimes::default();
    capture_drive.set(DependencyModel::All, Some(Nanos(1_900_000_123)));
    capture_drive.set(DependencyModel::Blocking, Some(Nanos(2_100_000_456)));
    capture_drive.set(DependencyModel::Stream, Some(Nanos(2_050_000_789)));
    TaskMarks {
        start_before: Some(Nanos(12_345_678)),
        start_after: None,
        end: Some(Nanos(2_500_000_000)),
        untraced: Some(Nanos(2_000_000_001)),
        capture_drive,
        cpu: None,
    }
}

/// A small trace whose tail holds `notes` and `task`.
fn trace(notes: Vec<(String, u64)>, task: TaskMarks) -> Vec<u8> {
    trace_calibrated(notes, task, None).unwrap()
}

/// Three calibration replays at one set of settings.
fn replays() -> CalibrationReplays {
    let prediction = |ns: u64| ModelTimes::from_fn(|m| Some(Nanos(ns + m.index() as u64)));
    CalibrationReplays {
        settings: vec![
            ("queue depth".to_string(), "128".to_string()),
            ("pacing".to_string(), "think".to_string()),
        ],
        predictions: vec![
            prediction(2_000_000_000),
            prediction(2_300_000_000),
            prediction(2_100_000_000),
        ],
    }
}

/// [`trace`] with a calibration section from `calibration`.
fn trace_calibrated(
    notes: Vec<(String, u64)>,
    task: TaskMarks,
    calibration: Option<CalibrationReplays>,
) -> Result<Vec<u8>, FormatError> {
    let header = TraceHeader::new("task", "test");
    let opts = WriterOptions {
        chunk_records: 4,
        zstd_level: 3,
    };
    let mut w = TraceWriter::with_options(Vec::new(), &header, opts).unwrap();
    for i in 0..10u64 {
        w.push(&IoRecord {
            time: Nanos(i * 1_000_000),
            op: Op::Read,
            offset: Bytes(i * 4096),
            len: Bytes(4096),
            flags: Flags::NONE,
            latency: Some(Nanos(100_000)),
            stream: None,
            device: 0,
        })
        .unwrap();
    }
    let tail = TraceTail {
        notes,
        task,
        calibration,
        ..Default::default()
    };
    Ok(w.finish(&tail)?.0)
}

/// The tail as both readers see it, after checking every record.
fn tails(bytes: &[u8]) -> Result<(TraceTail, TraceTail), FormatError> {
    let file = TraceFile::from_bytes(bytes.to_vec())?;
    file.verify()?;
    let mut stream = TraceReader::new(bytes)?;
    for r in stream.by_ref() {
        r?;
    }
    let streamed = stream.footer().expect("a footer").tail.clone();
    Ok((file.footer().tail.clone(), streamed))
}

/// Rewrites the header's minor version (and its checksum) to `minor`: a
/// file written without a section is then byte for byte what a writer of
/// that minor version wrote.
fn set_minor(bytes: &mut [u8], minor: u16) {
    bytes[10..12].copy_from_slice(&minor.to_le_bytes());
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let end = 16 + header_len;
    let crc = crc32c::crc32c(&bytes[..end]);
    bytes[end..end + 4].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn the_task_section_round_trips_through_both_readers() {
    let notes = vec![("notify".to_string(), 3)];
    let bytes = trace(notes.clone(), marks());
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 1, "minor 1");
    let (file, streamed) = tails(&bytes).unwrap();
    assert_eq!(file.task, marks());
    assert_eq!(streamed.task, marks());
    assert_eq!(
        file.notes, notes,
        "the notes are the notes, no task in them"
    );
    assert_eq!(
        marks().captured(),
        Some(Nanos(2_512_345_678)),
        "start before 0 to done"
    );
}

#[test]
fn a_trace_without_a_task_has_no_section_and_reads_as_before() {
    let mut bytes = trace(vec![("notify".to_string(), 3)], TaskMarks::default());
    let (file, _) = tails(&bytes).unwrap();
    assert!(file.task.is_empty());
    // Without a section, the only byte that differs from format 1.0 is the
    // version: set back to 1.0 the file still reads.
    set_minor(&mut bytes, 0);
    let (old, old_streamed) = tails(&bytes).unwrap();
    assert_eq!(old, file);
    assert_eq!(old_streamed, file);
}

#[test]
fn a_format_1_0_file_with_the_task_in_its_notes_reads_the_same() {
    // As `tracemark capture` and `calibrate` of format 1.0 wrote it: the
    // task as notes (between the source's own notes), version 1.0.
    let mut notes = vec![(
        "capture: completions without data or flush".to_string(),
        171,
    )];
    notes.extend(marks().to_legacy_notes());
    notes.push(("lost events (ring buffer overrun)".to_string(), 0));
    let mut old = trace(notes, TaskMarks::default());
    set_minor(&mut old, 0);
    assert_eq!(
        marks().to_legacy_notes()[0],
        ("task: start, ns before time 0".to_string(), 12_345_678),
        "the 1.0 note keys"
    );
    let (file, streamed) = tails(&old).unwrap();
    assert_eq!(file.task, marks());
    assert_eq!(streamed.task, marks());
    let rest = vec![
        (
            "capture: completions without data or flush".to_string(),
            171,
        ),
        ("lost events (ring buffer overrun)".to_string(), 0),
    ];
    assert_eq!(file.notes, rest, "the task's notes are taken out, in order");
    assert_eq!(file, streamed);

    // The same task written today reads identically.
    let new = trace(rest, marks());
    assert_eq!(tails(&new).unwrap().0, file);
}

#[test]
fn a_damaged_task_section_is_refused_by_name() {
    let bytes = trace(Vec::new(), marks());
    let at = find(&bytes, b"TMSC").expect("a section");
    // Flip a payload byte, and separately the section's checksum.
    for flip in [at + 13, at + 12 + 40] {
        let flip = flip.min(bytes.len() - 25);
        let mut bad = bytes.clone();
        bad[flip] ^= 0x10;
        let file = TraceFile::from_bytes(bad.clone()).err().expect("refused");
        assert_eq!(file.kind(), FormatErrorKind::CorruptSection, "{file}");
        assert!(file.to_string().contains("task section"), "{file}");
        let streamed = TraceReader::new(&bad[..])
            .unwrap()
            .find_map(Result::err)
            .expect("refused");
        assert_eq!(
            streamed.kind(),
            FormatErrorKind::CorruptSection,
            "{streamed}"
        );
        assert!(streamed.to_string().contains("task section"), "{streamed}");
    }
}

#[test]
fn impossible_marks_are_refused_by_name() {
    let mut both = marks();
    both.start_after = Some(Nanos(1));
    let bytes = trace(Vec::new(), both);
    let e = TraceFile::from_bytes(bytes).err().expect("refused");
    assert_eq!(e.kind(), FormatErrorKind::CorruptSection);
    assert!(
        e.to_string()
            .contains("task section is corrupt: the task starts both before and after time 0"),
        "{e}"
    );
}

#[test]
fn a_format_1_0_file_holds_no_section() {
    let mut bytes = trace(Vec::new(), marks());
    set_minor(&mut bytes, 0);
    let e = TraceFile::from_bytes(bytes.clone()).err().expect("refused");
    assert_eq!(e.kind(), FormatErrorKind::CorruptFooter, "{e}");
    let streamed = TraceReader::new(&bytes[..])
        .unwrap()
        .find_map(Result::err)
        .expect("refused");
    assert_eq!(streamed.kind(), FormatErrorKind::CorruptChunk, "{streamed}");
}

#[test]
fn the_calibration_section_round_trips_through_both_readers() {
    let bytes = trace_calibrated(Vec::new(), marks(), Some(replays())).unwrap();
    let (file, streamed) = tails(&bytes).unwrap();
    assert_eq!(file.calibration, Some(replays()));
    assert_eq!(streamed.calibration, Some(replays()));
    assert_eq!(file.task, marks(), "the task section beside it is kept");
    assert_eq!(
        u16::from_le_bytes([bytes[10], bytes[11]]),
        1,
        "a section kind of minor 1"
    );
    // A trace calibrated before the section existed reads as before.
    let (older, _) = tails(&trace(Vec::new(), marks())).unwrap();
    assert_eq!(older.calibration, None);
    assert_eq!(older.task, marks());
}

#[test]
fn a_calibration_without_the_tasks_calibration_is_never_written() {
    let mut uncalibrated = marks();
    uncalibrated.capture_drive = ModelTimes::default();
    let e = trace_calibrated(Vec::new(), uncalibrated, Some(replays())).expect_err("refused");
    assert_eq!(e.kind(), FormatErrorKind::Encode, "{e}");
    let empty = CalibrationReplays {
        predictions: Vec::new(),
        ..replays()
    };
    let e = trace_calibrated(Vec::new(), marks(), Some(empty)).expect_err("refused");
    assert_eq!(e.kind(), FormatErrorKind::Encode, "{e}");
}

#[test]
fn a_damaged_calibration_section_is_refused_by_name() {
    let bytes = trace_calibrated(Vec::new(), marks(), Some(replays())).unwrap();
    let task_at = find(&bytes, b"TMSC").expect("the task section");
    let at = task_at + 4 + find(&bytes[task_at + 4..], b"TMSC").expect("the calibration section");
    assert_eq!(
        u16::from_le_bytes([bytes[at + 4], bytes[at + 5]]),
        2,
        "kind 2"
    );
    for flip in [at + 14, at + 12 + 20] {
        let mut bad = bytes.clone();
        bad[flip] ^= 0x10;
        let e = TraceFile::from_bytes(bad.clone()).err().expect("refused");
        assert_eq!(e.kind(), FormatErrorKind::CorruptSection, "{e}");
        assert!(
            e.to_string().contains("calibration section is corrupt"),
            "{e}"
        );
        let streamed = TraceReader::new(&bad[..])
            .unwrap()
            .find_map(Result::err)
            .expect("refused");
        assert!(
            streamed
                .to_string()
                .contains("calibration section is corrupt"),
            "{streamed}"
        );
    }
}

#[test]
fn a_section_of_an_unknown_kind_is_checked_and_skipped() {
    // The calibration section renumbered to a kind this reader does not
    // know (its checksum made good): the file reads, without it.
    let mut bytes = trace_calibrated(Vec::new(), marks(), Some(replays())).unwrap();
    let task_at = find(&bytes, b"TMSC").unwrap();
    let at = task_at + 4 + find(&bytes[task_at + 4..], b"TMSC").unwrap();
    let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    bytes[at + 4..at + 6].copy_from_slice(&77u16.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[at..at + 12 + len]);
    bytes[at + 12 + len..at + 16 + len].copy_from_slice(&crc.to_le_bytes());
    let (file, streamed) = tails(&bytes).unwrap();
    assert_eq!(file.calibration, None);
    assert_eq!(streamed.calibration, None);
    assert_eq!(file.task, marks());
    // Damaged, it is refused all the same.
    bytes[at + 13] ^= 0x01;
    let e = TraceFile::from_bytes(bytes).err().expect("refused");
    assert!(e.to_string().contains("kind 77"), "{e}");
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// [`marks`] with the CPU time of its threads.
fn marks_with_cpu() -> TaskMarks {
    TaskMarks {
        cpu: Some(TaskCpu {
            busiest_thread: Nanos(310_000_123),
            total: Nanos(420_000_456),
            threads: 7,
        }),
        ..marks()
    }
}

#[test]
fn the_task_cpu_section_round_trips_beside_the_task() {
    let bytes = trace(Vec::new(), marks_with_cpu());
    let (file, streamed) = tails(&bytes).unwrap();
    assert_eq!(file.task, marks_with_cpu());
    assert_eq!(streamed.task, marks_with_cpu());
    // Its own section (kind 3): the task section's payload is unchanged, so
    // a reader that does not know kind 3 skips it and keeps the marks.
    let task_at = find(&bytes, b"TMSC").expect("the task section");
    let at = task_at + 4 + find(&bytes[task_at + 4..], b"TMSC").expect("the task CPU section");
    assert_eq!(u16::from_le_bytes([bytes[at + 4], bytes[at + 5]]), 3);
    let without = trace(Vec::new(), marks());
    assert_eq!(
        bytes[task_at..at],
        without[task_at..task_at + (at - task_at)],
        "the task section is the same bytes with and without the CPU time"
    );
    let (older, _) = tails(&without).unwrap();
    assert_eq!(older.task.cpu, None);
}

#[test]
fn a_task_cpu_time_without_a_done_mark_or_impossible_is_never_written() {
    let unmarked = TaskMarks {
        end: None,
        ..marks_with_cpu()
    };
    let e = trace_calibrated(Vec::new(), unmarked, None).expect_err("refused");
    assert_eq!(e.kind(), FormatErrorKind::Encode, "{e}");
    let mut impossible = marks_with_cpu();
    impossible.cpu = Some(TaskCpu {
        busiest_thread: Nanos(2),
        total: Nanos(1),
        threads: 1,
    });
    let e = trace_calibrated(Vec::new(), impossible, None).expect_err("refused");
    assert_eq!(e.kind(), FormatErrorKind::Encode, "{e}");
    assert!(e.to_string().contains("busiest thread"), "{e}");
}

#[test]
fn a_damaged_task_cpu_section_is_refused_by_name() {
    let bytes = trace(Vec::new(), marks_with_cpu());
    let task_at = find(&bytes, b"TMSC").expect("the task section");
    let at = task_at + 4 + find(&bytes[task_at + 4..], b"TMSC").expect("the task CPU section");
    let mut bad = bytes.clone();
    bad[at + 13] ^= 0x10;
    let e = TraceFile::from_bytes(bad).err().expect("refused");
    assert_eq!(e.kind(), FormatErrorKind::CorruptSection, "{e}");
    assert!(e.to_string().contains("task CPU section"), "{e}");
}
