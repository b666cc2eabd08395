use super::synth::{self, Extra, Options, Request, Style};
use super::*;
use crate::sink::Collector;
use trace_format::Op;

/// The format's example is the synthetic log `example_log` writes.
#[test]
fn the_example_is_the_synthetic_example_log() {
    assert_eq!(synth::EXAMPLE.as_bytes(), synth::example_log().as_slice());
    assert!(looks_like(synth::EXAMPLE.as_bytes()));
}

fn run(bytes: &[u8]) -> Result<Collector, ConvertError> {
    let mut sink = Collector::default();
    parse(&mut &bytes[..], "t.etl", &mut sink)?;
    Ok(sink)
}

fn request(i: u64) -> Request {
    let op = match i % 3 {
        0 => Op::Read,
        1 => Op::Write,
        _ => Op::Flush,
    };
    Request {
        op,
        disk: (i % 2) as u32,
        offset: if op == Op::Flush { 0 } else { 4096 * (1000 + i * 7) },
        size: if op == Op::Flush { 0 } else { 512 * (1 + (i % 16) as u32) },
        irp: 0xffff_fa80_0000_0000 + 0x100 * i,
        irp_flags: if i.is_multiple_of(4) { 0x43 } else { 0x1 | (0x4 * (i % 2) as u32) },
        issued: 1_000_000 + 1000 * i,
        completed: 1_000_000 + 1000 * i + 300 + 13 * i,
        issue_cpu: (i % 4) as u16,
        complete_cpu: ((i + 1) % 4) as u16,
        process: 100 + (i % 3) as u32,
        thread: 200 + i as u32,
        with_init: true,
    }
}

fn requests(n: u64) -> Vec<Request> {
    (0..n).map(request).collect()
}

/// The request `r` should become, at a clock of `ns_per_tick` (a 10 MHz
/// QPC: 100).
fn expected(r: &Request, ns_per_tick: u64) -> SourceIo {
    let sync = r.irp_flags & 0x4 != 0 || r.irp_flags & 0x42 == 0x42;
    SourceIo {
        time: Nanos(r.issued * ns_per_tick),
        device: DeviceId {
            major: 0,
            minor: r.disk,
        },
        op: r.op,
        flags: if sync { Flags::SYNC } else { Flags::NONE },
        offset: Bytes(r.offset),
        len: Bytes(u64::from(r.size)),
        latency: Some(Nanos((r.completed - r.issued) * ns_per_tick)),
        pid: Some(r.process),
    }
}

fn in_completion_order(reqs: &[Request], ns_per_tick: u64) -> Vec<SourceIo> {
    let mut sorted = reqs.to_vec();
    sorted.sort_by_key(|r| (r.completed, r.complete_cpu));
    sorted.iter().map(|r| expected(r, ns_per_tick)).collect()
}

/// Every field of every request comes back, whatever the header kind,
/// pointer size, compression or buffer size: the log is read from the
/// format, not from one file's habits.
#[test]
fn every_field_round_trips_across_header_kinds_pointer_sizes_and_compression() {
    let reqs = requests(300);
    let want = in_completion_order(&reqs, 100);
    for style in [Style::System, Style::Compact, Style::Full] {
        for pointer64 in [true, false] {
            for compressed in [false, true] {
                for buffer_size in [4096, 200] {
                    let opts = Options {
                        style,
                        pointer64,
                        compressed,
                        buffer_size,
                        ..Options::default()
                    };
                    let what = format!("{opts:?}");
                    let log = opts.write(&reqs, &[]);
                    assert!(looks_like(&log), "{what}");
                    let got = run(&log).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(got.ios, want, "{what}");
                    assert!(got.bad.is_empty(), "{what}");
                    assert_eq!(
                        got.notes.get("etl io without init event (issue time = completion - response time)"),
                        None,
                        "{what}"
                    );
                    assert_eq!(got.notes.get("etl paging io"), Some(&75), "{what}");
                }
            }
        }
    }
}

/// A compressed log's buffers are stored smaller than their saved offset.
#[test]
fn compressed_logs_store_smaller_buffers() {
    let reqs = requests(200);
    let plain = Options::default().write(&reqs, &[]);
    let packed = Options {
        compressed: true,
        ..Options::default()
    }
    .write(&reqs, &[]);
    assert!(packed.len() * 2 < plain.len(), "{} vs {}", packed.len(), plain.len());
}

/// Without Init events the issue time is the completion minus the response
/// time, and each such request is counted.
#[test]
fn without_init_issue_time_is_completion_minus_response_time() {
    let reqs: Vec<Request> = requests(30)
        .into_iter()
        .map(|r| Request {
            with_init: false,
            ..r
        })
        .collect();
    let got = run(&Options::default().write(&reqs, &[])).unwrap();
    let want: Vec<SourceIo> = in_completion_order(&reqs, 100);
    let times: Vec<_> = got.ios.iter().map(|io| (io.time, io.latency, io.offset)).collect();
    let want_times: Vec<_> = want.iter().map(|io| (io.time, io.latency, io.offset)).collect();
    assert_eq!(times, want_times);
    assert_eq!(
        got.notes.get("etl io without init event (issue time = completion - response time)"),
        Some(&30)
    );
}

/// The Init of a request sits in a quiet CPU's buffer that the file holds
/// after the completion's buffer: the merge still pairs them.
#[test]
fn an_init_in_a_later_buffer_of_a_quiet_cpu_is_paired() {
    let mut reqs = Vec::new();
    for i in 0..200u64 {
        reqs.push(Request {
            issue_cpu: if i == 0 { 3 } else { 0 },
            complete_cpu: 0,
            ..request(i)
        });
    }
    // CPU 3 logs again only at the end, so its one buffer is written last.
    let noise = Extra::Noise {
        cpu: 3,
        time: 9_000_000,
        len: 16,
    };
    let log = Options {
        buffer_size: 1024,
        ..Options::default()
    }
    .write(&reqs, &[noise]);
    let got = run(&log).unwrap();
    assert_eq!(got.ios.len(), 200);
    assert_eq!(got.ios[0], expected(&reqs[0], 100));
    assert!(!got.notes.contains_key("etl DiskIo init without completion"));
}

#[test]
fn clock_types_give_nanoseconds() {
    let reqs = requests(10);
    // System time: 100 ns ticks, whatever the QPC frequency says.
    let system = Options {
        clock_type: 2,
        perf_freq: 1,
        ..Options::default()
    };
    assert_eq!(run(&system.write(&reqs, &[])).unwrap().ios, in_completion_order(&reqs, 100));
    // CPU cycles at 1000 MHz: 1 ns ticks.
    let cycles = Options {
        clock_type: 3,
        cpu_mhz: 1000,
        ..Options::default()
    };
    assert_eq!(run(&cycles.write(&reqs, &[])).unwrap().ios, in_completion_order(&reqs, 1));
    // QPC at 1 GHz.
    let qpc = Options {
        perf_freq: 1_000_000_000,
        ..Options::default()
    };
    assert_eq!(run(&qpc.write(&reqs, &[])).unwrap().ios, in_completion_order(&reqs, 1));
}

#[test]
fn a_wrong_clock_type_is_one_error_naming_the_buffer() {
    for clock_type in [0, 4, 7] {
        let log = Options {
            clock_type,
            ..Options::default()
        }
        .write(&requests(3), &[]);
        let err = run(&log).unwrap_err().to_string();
        assert!(err.starts_with("t.etl: buffer 0 (file byte 0), byte 72"), "{err}");
        assert!(err.contains(&format!("unknown clock type {clock_type}")), "{err}");
    }
    let zero = Options {
        perf_freq: 0,
        ..Options::default()
    }
    .write(&requests(3), &[]);
    assert!(run(&zero).unwrap_err().to_string().contains("frequency of 0"));
}

#[test]
fn lost_events_are_counted_and_reported() {
    let log = Options {
        events_lost: 12,
        buffers_lost: 2,
        ..Options::default()
    }
    .write(
        &requests(5),
        &[Extra::Lost { cpu: 1, time: 1_000_500 }, Extra::Lost { cpu: 2, time: 1_000_700 }],
    );
    let got = run(&log).unwrap();
    assert_eq!(got.ios.len(), 5);
    assert_eq!(got.notes.get("etl lost events record"), Some(&2));
    assert_eq!(got.warnings.len(), 1);
    assert!(got.warnings[0].contains("lost 12 events and 2 buffers"), "{:?}", got.warnings);
}

#[test]
fn disk_configuration_goes_to_the_notes() {
    let log = Options::default().write(
        &requests(2),
        &[Extra::PhyDisk {
            cpu: 0,
            time: 10,
            disk: 1,
            sector: 4096,
            model: "Samsung SSD 990 PRO".into(),
        }],
    );
    let got = run(&log).unwrap();
    assert_eq!(
        got.notes.get("etl disk 1: 4096-byte sectors, model `Samsung SSD 990 PRO`"),
        Some(&1)
    );
}

/// A log cut anywhere is one error naming the buffer and byte (or, cut
/// exactly between buffers, a shorter log): never a panic.
#[test]
fn truncated_logs_are_one_error_naming_the_buffer() {
    for compressed in [false, true] {
        let log = Options {
            compressed,
            buffer_size: 512,
            ..Options::default()
        }
        .write(&requests(40), &[]);
        let mut errors = 0;
        for cut in (1..log.len()).step_by(7) {
            match run(&log[..cut]) {
                Ok(_) => {}
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.starts_with("t.etl: buffer "), "cut {cut}: {msg}");
                    assert!(msg.contains("file byte"), "cut {cut}: {msg}");
                    errors += 1;
                }
            }
        }
        assert!(errors > log.len() / 8, "{errors}");
        // The buffer after the first, cut in its middle.
        let second = u32::from_le_bytes([log[0], log[1], log[2], log[3]]) as usize;
        let third = second + u32::from_le_bytes([log[second], log[second + 1], log[second + 2], log[second + 3]]) as usize;
        let msg = run(&log[..third - 5]).unwrap_err().to_string();
        assert!(msg.starts_with(&format!("t.etl: buffer 1 (file byte {second})")), "{msg}");
        assert!(msg.contains("the file ends inside the buffer"), "{msg}");
    }
}

/// An event whose size runs past its buffer is bad input naming the
/// buffer and the byte; skipping bad input goes on with the next buffer.
#[test]
fn a_corrupt_event_names_buffer_and_byte() {
    let log = Options::default().write(&requests(50), &[]);
    let second = u32::from_le_bytes([log[0], log[1], log[2], log[3]]) as usize;
    let mut bad_log = log.clone();
    // The size of buffer 1's first event (a system header: bytes 4..6).
    let at = second + BUFFER_HEADER + 4;
    bad_log[at..at + 2].copy_from_slice(&0x7000u16.to_le_bytes());
    let err = run(&bad_log).unwrap_err().to_string();
    assert!(err.starts_with(&format!("t.etl: record 1 (byte {second}): buffer 1, byte 72 of the buffer")), "{err}");
    assert!(err.contains("past the buffer's end"), "{err}");
    let mut sink = Collector::skipping_bad_input();
    parse(&mut &bad_log[..], "t.etl", &mut sink).unwrap();
    assert_eq!(sink.bad.len(), 1);
    assert!(!sink.ios.is_empty() && sink.ios.len() < 50);
    // An unknown header type.
    let mut bad_type = log.clone();
    bad_type[second + BUFFER_HEADER + 2] = 0x33;
    let err = run(&bad_type).unwrap_err().to_string();
    assert!(err.contains("unknown event header type 51"), "{err}");
}

#[test]
fn not_an_etl_log() {
    assert!(!looks_like(b"DiskRead, 1000, System (4), 8, 0x0\n"));
    assert!(!looks_like(&[0u8; 200]));
    let mut no_header = synth::example_log();
    // The first event's hook: not the log file header.
    no_header[BUFFER_HEADER + 6] = 5;
    assert!(!looks_like(&no_header));
    let err = run(&no_header).unwrap_err().to_string();
    assert!(err.contains("not the log file header"), "{err}");
    assert!(run(b"").unwrap_err().to_string().contains("empty"));
}
