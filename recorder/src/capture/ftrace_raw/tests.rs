//! Unit tests of the parent module.

use super::testing::*;
use super::*;
use trace_format::{Bytes, Flags, Op};

#[test]
fn format_files_parse() {
    let (issue, complete, requeue) = formats();
    assert_eq!((issue.name.as_str(), issue.id), ("block_rq_issue", 2104));
    let rwbs = issue.field("rwbs").unwrap();
    assert_eq!(
        (rwbs.offset, rwbs.size, rwbs.type_name.as_str()),
        (34, 10, "char[10]")
    );
    let cmd = issue.field("cmd").unwrap();
    assert_eq!(
        (cmd.kind, cmd.offset, cmd.type_name.as_str()),
        (FieldKind::DataLoc, 60, "__data_loc char[]")
    );
    let pid = issue.field("common_pid").unwrap();
    assert!(pid.signed);
    assert_eq!(complete.field("error").unwrap().offset, 28);
    assert!(requeue.field("error").is_none());
    assert_eq!(
        layout(),
        PageLayout {
            timestamp_offset: 0,
            commit_offset: 8,
            commit_size: 8,
            data_offset: 16,
            page_size: 4096,
        }
    );
    check_header_event("events/header_event", HEADER_EVENT).unwrap();
}

#[test]
fn format_files_that_are_not_understood_say_why() {
    let e = parse_event_format("x/format", "name: block_rq_issue\nID: 70000\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x/format: line 2: event id `70000` is not a 16-bit number"
    );
    let e = parse_event_format(
        "x/format",
        "name: a\nID: 1\n\tfield:int x;\toffset:zero;\tsize:4;\n",
    )
    .unwrap_err();
    assert!(e
        .to_string()
        .contains("line 3: offset `zero` is not a number"));
    let e = check_header_event(
        "events/header_event",
        &HEADER_EVENT.replace("27 bits", "26 bits"),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("`time_delta` is 26, expected 27"),
        "{e}"
    );
    let e = check_header_event("events/header_event", "type_len : 5 bits\n").unwrap_err();
    assert!(e.to_string().contains("no `time_delta` line"), "{e}");
    let e = parse_header_page(
        "events/header_page",
        &HEADER_PAGE.replace("size:8;\tsigned:1", "size:2;\tsigned:1"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("commit word has 2 bytes"), "{e}");
    // An issue format without a sector cannot be decoded.
    let no_sector = ISSUE.replace("sector_t sector;", "sector_t start;");
    let issue = parse_event_format("issue/format", &no_sector).unwrap();
    let (_, c, _) = formats();
    let e = BlockDecoder::new(&[("issue/format", &issue), ("c", &c)]).unwrap_err();
    assert_eq!(e.to_string(), "issue/format: no field `sector`");
    // Completions alone start no I/O.
    let (_, c, _) = formats();
    let (_, bc) = bio_formats();
    let e = BlockDecoder::new(&[("c", &c), ("bc", &bc)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "events/block: the format of block_rq_issue or block_bio_queue is needed"
    );
    // An event it does not read.
    let split = BIO_QUEUE.replace("name: block_bio_queue", "name: block_split");
    let split = parse_event_format("split/format", &split).unwrap();
    let e = BlockDecoder::new(&[("split/format", &split)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "split/format: `block_split` is not a block event this decoder reads"
    );
    // A bio format without a sector count.
    let q = parse_event_format(
        "q/format",
        &BIO_QUEUE.replace("unsigned int nr_sector;", "unsigned int sectors;"),
    )
    .unwrap();
    let e = BlockDecoder::new(&[("q/format", &q)]).unwrap_err();
    assert_eq!(e.to_string(), "q/format: no field `nr_sector`");
}

#[test]
fn bio_records_decode_by_their_format_files() {
    let (queue, complete) = bio_formats();
    // The bio formats alone make a decoder (a bio-based device).
    let d = BlockDecoder::new(&[("q", &queue), ("c", &complete)]).unwrap();
    let rwbs = complete.field("rwbs").unwrap();
    assert_eq!((rwbs.offset, rwbs.size), (32, 10));
    assert!(queue.field("cmd").is_none() && queue.field("comm").is_some());

    let zram0 = 253 << 20;
    let rec = record(&queue, zram0, 800, 8, "WS", 24584);
    assert_eq!(rec.len(), 55);
    let e = event(&d.decode(Nanos(7), &rec).unwrap());
    assert_eq!(
        (e.action, e.device, e.op, e.flags),
        (
            Action::Queue,
            DeviceId {
                major: 253,
                minor: 0
            },
            Op::Write,
            Flags::SYNC
        )
    );
    assert_eq!(
        (e.offset, e.len, e.pid, e.time),
        (Bytes(800 * 512), Bytes(4096), Some(24584), Nanos(7))
    );

    let mut rec = record(&complete, zram0, 20480, 2048, "RS", 24586);
    put(&mut rec, &complete, "error", (-5i32) as u32 as u64);
    let e = event(&d.decode(Nanos(9), &rec).unwrap());
    assert_eq!(
        (e.action, e.op, e.offset, e.len, e.error),
        (
            Action::Complete,
            Op::Read,
            Bytes(20480 * 512),
            Bytes(1 << 20),
            -5
        )
    );

    // A flush bio: a write with a preflush and no data.
    let rec = record(&queue, zram0, 0, 0, "FWS", 1);
    let e = event(&d.decode(Nanos(1), &rec).unwrap());
    assert_eq!(
        (e.action, e.op, e.offset, e.len),
        (Action::Queue, Op::Flush, Bytes(0), Bytes(0))
    );
    // A discard bio.
    let rec = record(&queue, zram0, 64, 256, "DS", 1);
    let e = event(&d.decode(Nanos(1), &rec).unwrap());
    assert_eq!((e.op, e.len), (Op::Discard, Bytes(256 * 512)));
    // A request event is another event for a bio-only decoder.
    let (issue, _, _) = formats();
    let rec = record(&issue, zram0, 0, 8, "R", 1);
    assert_eq!(d.decode(Nanos(1), &rec), Ok(Parsed::Note(NOTE_OTHER_EVENT)));
    // A cut-off bio record, and garbage in its RWBS.
    let rec = record(&queue, zram0, 0, 8, "R", 1);
    assert_eq!(
        d.decode(Nanos(1), &rec[..30]).unwrap_err().kind,
        BadInputKind::Truncated
    );
    let rec = record(&complete, zram0, 0, 8, "Rx", 1);
    assert_eq!(
        d.decode(Nanos(1), &rec).unwrap_err(),
        BadReason::new(BadInputKind::UnknownOp, "`Rx` is not an RWBS field")
    );
}

#[test]
fn a_page_of_bio_events_gives_queues_and_completions_in_order() {
    let (queue, complete) = bio_formats();
    let zram0 = 253 << 20;
    let base = 11_725_221_266_000u64;
    let mut pb = PageBuilder::new(base);
    pb.record(0, &record(&queue, zram0, 800, 8, "WS", 24584))
        .record(19_000, &record(&complete, zram0, 800, 8, "WS", 24584))
        .record(19_000, &record(&queue, zram0, 808, 8, "WS", 24584))
        .record(6_000, &record(&complete, zram0, 808, 8, "WS", 24584));
    let got = events(&pb.build(&layout(), None), 0).unwrap();
    let seen: Vec<(u64, Action, u64)> = got
        .iter()
        .map(|(t, p)| {
            let e = event(p);
            (t - base, e.action, e.offset.0 / 512)
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (0, Action::Queue, 800),
            (19_000, Action::Complete, 800),
            (38_000, Action::Queue, 808),
            (44_000, Action::Complete, 808),
        ]
    );
}

#[test]
fn records_decode_by_the_format_files_offsets() {
    let (issue, complete, requeue) = formats();
    let d = decoder();
    let rec = record(&issue, LOOP0 | 3, 2048, 8, "WS", 4242);
    let e = event(&d.decode(Nanos(5), &rec).unwrap());
    assert_eq!(e.action, Action::Issue);
    assert_eq!(e.device, DeviceId { major: 7, minor: 3 });
    assert_eq!(
        (e.op, e.flags, e.offset, e.len),
        (Op::Write, Flags::SYNC, Bytes(2048 * 512), Bytes(4096))
    );
    assert_eq!((e.time, e.pid, e.error), (Nanos(5), Some(4242), 0));

    let mut rec = record(&complete, LOOP0, 2048, 8, "WS", 0);
    put(&mut rec, &complete, "error", (-5i32) as u32 as u64);
    let e = event(&d.decode(Nanos(9), &rec).unwrap());
    assert_eq!((e.action, e.error, e.pid), (Action::Complete, -5, None));

    let rec = record(&requeue, LOOP0, 64, 16, "R", 1);
    let e = event(&d.decode(Nanos(9), &rec).unwrap());
    assert_eq!(
        (e.action, e.op, e.len),
        (Action::Requeue, Op::Read, Bytes(8192))
    );

    // A flush: no sector ((sector_t)-1), no length.
    let rec = record(&issue, LOOP0, u64::MAX, 0, "FF", 1);
    let e = event(&d.decode(Nanos(1), &rec).unwrap());
    assert_eq!((e.op, e.offset, e.len), (Op::Flush, Bytes(0), Bytes(0)));

    // The older layout: rwbs and error elsewhere, still right.
    let old = parse_event_format("old", COMPLETE_OLD).unwrap();
    let (i, _, _) = formats();
    let d_old = BlockDecoder::new(&[("i", &i), ("old", &old)]).unwrap();
    let mut rec = record(&old, LOOP0, 100, 2, "R", 1);
    put(&mut rec, &old, "error", (-11i32) as u32 as u64);
    let e = event(&d_old.decode(Nanos(1), &rec).unwrap());
    assert_eq!(
        (e.op, e.offset, e.len, e.error),
        (Op::Read, Bytes(51200), Bytes(1024), -11)
    );
}

#[test]
fn passthrough_other_events_and_bad_records() {
    let (issue, _, _) = formats();
    let d = decoder();
    // A command in `cmd`.
    let mut rec = record(&issue, LOOP0, 0, 0, "N", 1);
    let at = rec.len();
    rec.extend_from_slice(b"12 00\0");
    put(&mut rec, &issue, "cmd", (6u64 << 16) | at as u64);
    assert_eq!(
        d.decode(Nanos(1), &rec),
        Ok(Parsed::Note(block_events::note::PASSTHROUGH))
    );
    // `N` with bytes and no sectors.
    let mut rec = record(&issue, LOOP0, 0, 0, "N", 1);
    put(&mut rec, &issue, "bytes", 36);
    assert_eq!(
        d.decode(Nanos(1), &rec),
        Ok(Parsed::Note(block_events::note::PASSTHROUGH))
    );
    // Another event.
    let mut rec = record(&issue, LOOP0, 0, 8, "R", 1);
    put(&mut rec, &issue, "common_type", 999);
    assert_eq!(d.decode(Nanos(1), &rec), Ok(Parsed::Note(NOTE_OTHER_EVENT)));
    // Garbage RWBS, a truncated record, a string past the record.
    let rec = record(&issue, LOOP0, 0, 8, "Q?", 1);
    assert_eq!(
        d.decode(Nanos(1), &rec).unwrap_err(),
        BadReason::new(BadInputKind::UnknownOp, "`Q?` is not an RWBS field")
    );
    let rec = record(&issue, LOOP0, 0, 8, "R", 1);
    assert_eq!(
        d.decode(Nanos(1), &rec[..26]).unwrap_err().kind,
        BadInputKind::Truncated
    );
    let mut rec = record(&issue, LOOP0, 0, 8, "R", 1);
    put(&mut rec, &issue, "cmd", (40u64 << 16) | 60);
    // The message names the field and its bytes.
    assert!(d
        .decode(Nanos(1), &rec)
        .unwrap_err()
        .message
        .contains("field `cmd` (bytes 60..100) runs past the 65-byte record"));
}

#[test]
fn pages_with_deltas_extends_stamps_and_padding() {
    let (issue, complete, _) = formats();
    let a = record(&issue, LOOP0, 100, 8, "R", 10);
    let b = record(&complete, LOOP0, 100, 8, "R", 0);
    let c = record(&issue, LOOP0, 200, 16, "W", 10);
    let d = record(&complete, LOOP0, 200, 16, "W", 0);
    let e = record(&issue, LOOP0, 300, 8, "R", 10);
    let base = 1_000_000_000_000u64;
    let mut pb = PageBuilder::new(base);
    pb.record(0, &a) // at base
        .record(1234, &b) // + 1234 ns
        .extend(5_000_000_000 + 7) // a 5 s gap needs an extend (27 bits < 134 ms)
        .record(0, &c)
        .padding(3, 64) // a discarded record: its delta counts
        .stamp(base + 9_000_000_001) // absolute
        .record(999, &d)
        .record(1, &e)
        .padding(0, 8); // the end of the page
    let page = pb.build(&layout(), None);
    let got = events(&page, 1).unwrap();
    let times: Vec<u64> = got.iter().map(|(t, _)| t - base).collect();
    assert_eq!(
        times,
        vec![
            0,
            1234,
            1234 + 5_000_000_007,
            9_000_000_001 + 999,
            9_000_000_001 + 1000
        ]
    );
    let offsets: Vec<u64> = got.iter().map(|(_, p)| event(p).offset.0 / 512).collect();
    assert_eq!(offsets, vec![100, 100, 200, 200, 300]);
    let p = open_page(&layout(), &page, 1, 0).unwrap();
    assert_eq!(p.missed, Missed::None);
    assert_eq!(p.timestamp, base);
}

#[test]
fn long_records_carry_their_length_in_the_next_word() {
    // A record over 112 bytes (28 words) uses type_len 0 and a length word.
    let (issue, _, _) = formats();
    let mut rec = record(&issue, LOOP0, 8, 8, "R", 1);
    let end = rec.len() - 1;
    rec.resize(200, 0);
    put(&mut rec, &issue, "cmd", (1u64 << 16) | end as u64);
    let mut pb = PageBuilder::new(50);
    pb.record(5, &rec).record(5, &rec[..64]);
    let page = pb.build(&layout(), None);
    let p = open_page(&layout(), &page, 0, 0).unwrap();
    let recs: Vec<RawRecord> = p.records().map(Result::unwrap).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!((recs[0].time, recs[0].payload.len()), (55, 200));
    assert_eq!((recs[1].time, recs[1].payload.len()), (60, 64));
    assert_eq!((recs[0].offset, recs[1].offset), (16, 16 + 8 + 200));
}

#[test]
fn missed_events_flag_and_count() {
    let (issue, _, _) = formats();
    let a = record(&issue, LOOP0, 100, 8, "R", 10);
    let mut pb = PageBuilder::new(10);
    pb.record(0, &a);
    let l = layout();
    let page = pb.build(&l, Some(Some(4321)));
    let p = open_page(&l, &page, 0, 0).unwrap();
    assert_eq!(p.missed, Missed::Count(4321));
    assert_eq!(p.records().count(), 1, "the count is not read as an event");
    let page = pb.build(&l, Some(None));
    assert_eq!(open_page(&l, &page, 0, 0).unwrap().missed, Missed::Unknown);
    // A count that would lie past the page.
    let mut full = PageBuilder::new(10);
    full.data.resize(l.page_size - l.data_offset - 4, 0);
    let mut page = full.build(&l, None);
    let commit =
        (l.page_size - l.data_offset - 4) as u64 | COMMIT_MISSED_EVENTS | COMMIT_MISSED_STORED;
    page[8..16].copy_from_slice(&commit.to_ne_bytes());
    let e = open_page(&l, &page, 3, 12).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "CPU 3 ring buffer, page 12, byte 4092: the page says a lost-events count"
        ),
        "{e}"
    );
}

#[test]
fn corrupt_and_truncated_pages_name_cpu_and_page() {
    let (issue, _, _) = formats();
    let a = record(&issue, LOOP0, 100, 8, "R", 10);
    let l = layout();
    let mut pb = PageBuilder::new(10);
    pb.record(0, &a).record(0, &a);
    let good = pb.build(&l, None);
    let rec_total = 4 + a.len().div_ceil(4) * 4;

    // Shorter than the header.
    let e = open_page(&l, &good[..10], 1, 5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "CPU 1 ring buffer, page 5, byte 0: truncated page: 10 bytes, shorter than the \
         16-byte page header"
    );
    // The commit says more than the bytes read.
    let e = open_page(&l, &good[..100], 1, 5).unwrap_err();
    assert_eq!(e.kind, PageProblem::Overrun, "{e}");
    // A record whose length runs past the committed data: the first
    // record still comes out, then the error, then nothing.
    let mut bad = good.clone();
    let second = l.data_offset + rec_total;
    bad[second..second + 4].copy_from_slice(&header_word(0, 0).to_ne_bytes());
    bad[second + 4..second + 8].copy_from_slice(&5000u32.to_ne_bytes());
    let p = open_page(&l, &bad, 2, 9).unwrap();
    let mut it = p.records();
    assert!(it.next().unwrap().is_ok());
    let e = it.next().unwrap().unwrap_err();
    assert_eq!((e.cpu, e.page, e.byte), (2, 9, second));
    assert!(
        e.to_string().starts_with(&format!(
            "CPU 2 ring buffer, page 9, byte {second}: a record of 5004 bytes runs past"
        )),
        "{e}"
    );
    assert!(it.next().is_none());
    // A length word smaller than itself.
    bad[second + 4..second + 8].copy_from_slice(&2u32.to_ne_bytes());
    let e = open_page(&l, &bad, 2, 9)
        .unwrap()
        .records()
        .find_map(Result::err)
        .unwrap();
    assert_eq!(e.kind, PageProblem::BadLength, "{e}");
    // Committed data ending inside an event header.
    let mut cut = good.clone();
    let commit = (rec_total + 2) as u64;
    cut[8..16].copy_from_slice(&commit.to_ne_bytes());
    let e = open_page(&l, &cut, 0, 1)
        .unwrap()
        .records()
        .find_map(Result::err)
        .unwrap();
    assert_eq!(e.kind, PageProblem::Truncated, "{e}");
    // A time extend cut in half.
    let mut pb = PageBuilder::new(0);
    pb.word(header_word(TYPE_TIME_EXTEND, 1));
    let page = pb.build(&l, None);
    let e = open_page(&l, &page, 0, 1)
        .unwrap()
        .records()
        .find_map(Result::err)
        .unwrap();
    assert_eq!(e.kind, PageProblem::Truncated, "{e}");
}

#[test]
fn any_bytes_give_records_or_an_error_never_a_panic() {
    let l = layout();
    let d = decoder();
    let mut rng = trace_format::rng::WyRand::new(0x1234_5678_9abc_def0);
    for round in 0..2000 {
        let mut page = vec![0u8; if round % 3 == 0 { 200 } else { 4096 }];
        rng.fill(&mut page);
        // Small commit sizes, so the walk gets into the data.
        let state = rng.next_u64();
        let commit = (state % 300) | (state & (3 << 30));
        page[8..16].copy_from_slice(&commit.to_ne_bytes());
        if let Ok(p) = open_page(&l, &page, 0, round) {
            for r in p.records().flatten() {
                let _ = d.decode(Nanos(r.time), r.payload);
            }
        }
    }
}
