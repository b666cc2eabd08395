//! The binary ring-buffer reader: each CPU's `trace_pipe_raw`, a page at a
//! time, decoded by [`super::ftrace_raw`], the CPUs merged in time order by
//! [`super::merge`].

use super::cpu_merge::{CpuMerge, HeldEvent};
use super::device::sysfs_u64;
use super::ftrace_raw;
use super::text_pipe::PipeRead;
use super::wall_offset::mono_now_ns;
use super::{tracefs_error, CaptureError};
use crate::error::{BadInputKind, BadReason, ConvertError};
use crate::event::Location;
use crate::formats::block_events::{self, Parsed};
use crate::formats::tracefs;
use crate::sink::Sink;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use trace_format::Nanos;

/// How far behind a read round's start events are released from a CPU read to
/// empty: an event is stamped when its space is reserved and readable once
/// committed, a few microseconds later (more if an interrupt intervenes).
/// Released late, an event would only be out of time order by that much,
/// which the normaliser tolerates; pairing never depends on it.
pub const COMMIT_SLACK_NS: u64 = 2_000_000;

/// Pages read from one CPU before the next CPU's turn in a round.
const PAGES_PER_TURN: usize = 64;

/// One CPU's binary stream.
struct RawCpu {
    cpu: u32,
    file: File,
    path: PathBuf,
    /// `per_cpu/cpuN/trace_pipe_raw`: names the stream in messages.
    name: String,
    /// Pages and data records read so far.
    pages: u64,
    records: u64,
    /// The kernel has no buffer for this CPU (offline): nothing to read.
    gone: bool,
}

/// The binary per-CPU ring buffers, decoded and merged in time order.
pub(super) struct RawStream {
    cpus: Vec<RawCpu>,
    /// The CPUs' decoded events, indexed as `cpus`, waiting to be merged.
    merge: CpuMerge,
    layout: ftrace_raw::PageLayout,
    decoder: ftrace_raw::BlockDecoder,
    page: Vec<u8>,
    /// Events the page headers said were lost, and pages that said so
    /// without a count.
    pub(super) missed: u64,
    pub(super) uncounted_marks: u64,
}

/// Reads a tracefs text file. `header_page` and `header_event` answer only
/// the first read (a later one, at a non-zero offset, gets nothing), so the
/// first read must ask for the whole file: a small first read (as
/// `read_to_string` makes) would cut it short.
fn read_text(path: &Path) -> Result<String, String> {
    let error = |e: io::Error| format!("{}: {e}", path.display());
    let mut file = File::open(path).map_err(error)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(error(e)),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// A short hex dump of a record for a bad-input example.
/// A ring-buffer page error as bad input: a page that ends early is truncated,
/// any other broken length is corrupt.
fn page_reason(e: &ftrace_raw::PageError) -> BadReason {
    let kind = match e.kind {
        ftrace_raw::PageProblem::Truncated => BadInputKind::Truncated,
        _ => BadInputKind::Corrupt,
    };
    BadReason::new(kind, e.to_string())
}

fn hex_prefix(bytes: &[u8]) -> String {
    let mut out: String = bytes
        .iter()
        .take(32)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ");
    if bytes.len() > 32 {
        out.push_str(" ...");
    }
    out
}

impl RawStream {
    /// Reads the format files of `events` (those the capture enabled) and
    /// opens every CPU's `trace_pipe_raw` in `dir` (the instance or the top
    /// level); `Err` says why the binary buffer cannot be used.
    pub(super) fn open(dir: &Path, root: &Path, events: &[&str]) -> Result<RawStream, String> {
        // Instances have their own copies of the header files; old kernels
        // only the top level.
        let header_dir = [dir.join("events"), root.join("events")]
            .into_iter()
            .find(|d| d.join("header_page").is_file())
            .ok_or_else(|| format!("{} is missing", root.join("events/header_page").display()))?;
        let page_path = header_dir.join("header_page");
        let mut layout = ftrace_raw::parse_header_page(
            &page_path.display().to_string(),
            &read_text(&page_path)?,
        )
        .map_err(|e| e.to_string())?;
        let event_path = header_dir.join("header_event");
        ftrace_raw::check_header_event(&event_path.display().to_string(), &read_text(&event_path)?)
            .map_err(|e| e.to_string())?;
        let mut formats = Vec::new();
        for event in events {
            let path = dir.join(format!("events/block/{event}/format"));
            if !path.is_file() {
                continue;
            }
            let name = path.display().to_string();
            let format = ftrace_raw::parse_event_format(&name, &read_text(&path)?)
                .map_err(|e| e.to_string())?;
            formats.push((name, format));
        }
        let named: Vec<(&str, &ftrace_raw::EventFormat)> =
            formats.iter().map(|(n, f)| (n.as_str(), f)).collect();
        let decoder = ftrace_raw::BlockDecoder::new(&named).map_err(|e| e.to_string())?;
        // Kernels with sub-buffers of other sizes say how large they are.
        if let Some(kb) = sysfs_u64(&dir.join("buffer_subbuf_size_kb")) {
            let bytes = usize::try_from(kb.saturating_mul(1024)).unwrap_or(usize::MAX);
            layout = layout
                .with_page_size(bytes)
                .map_err(|e| format!("{}: {e}", dir.join("buffer_subbuf_size_kb").display()))?;
        }
        let per_cpu = dir.join("per_cpu");
        let entries = fs::read_dir(&per_cpu).map_err(|e| format!("{}: {e}", per_cpu.display()))?;
        let mut cpus = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let path = entry.path().join("trace_pipe_raw");
            let file = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            cpus.push(RawCpu {
                cpu,
                file,
                path,
                name: format!("per_cpu/cpu{cpu}/trace_pipe_raw"),
                pages: 0,
                records: 0,
                gone: false,
            });
        }
        if cpus.is_empty() {
            return Err(format!(
                "no cpuN/trace_pipe_raw files in {}",
                per_cpu.display()
            ));
        }
        cpus.sort_by_key(|c| c.cpu);
        Ok(RawStream {
            merge: CpuMerge::new(cpus.len()),
            cpus,
            page: vec![0; layout.page_size],
            layout,
            decoder,
            missed: 0,
            uncounted_marks: 0,
        })
    }

    /// One round: reads each CPU (up to [`PAGES_PER_TURN`] pages), then
    /// releases the events below the CPUs' common watermark. `Data` when some
    /// CPU has more to read at once.
    pub(super) fn read_round(&mut self, sink: &mut dyn Sink) -> Result<PipeRead, CaptureError> {
        let round_start = mono_now_ns();
        let mut more = false;
        for i in 0..self.cpus.len() {
            let drained = self.read_cpu(i, sink)?;
            more |= !drained;
            self.merge
                .end_turn(i, drained, round_start.saturating_sub(COMMIT_SLACK_NS));
        }
        self.release(self.merge.watermark(), sink)?;
        Ok(if more {
            PipeRead::Data
        } else {
            PipeRead::Empty
        })
    }

    /// Reads and decodes pages of CPU `i`; `true` when it was read to empty.
    fn read_cpu(&mut self, i: usize, sink: &mut dyn Sink) -> Result<bool, CaptureError> {
        for _ in 0..PAGES_PER_TURN {
            let Some(cpu) = self.cpus.get_mut(i) else {
                return Ok(true);
            };
            if cpu.gone {
                return Ok(true);
            }
            let n = match cpu.file.read(&mut self.page) {
                Ok(0) => return Ok(true),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {
                    cpu.gone = true;
                    self.merge.gone(i);
                    return Ok(true);
                }
                Err(e) => return Err(tracefs_error(&cpu.path, e)),
            };
            self.decode_page(i, n, sink)?;
        }
        Ok(false)
    }

    /// Decodes the first `n` bytes of the page buffer, read from CPU `i`.
    fn decode_page(&mut self, i: usize, n: usize, sink: &mut dyn Sink) -> Result<(), ConvertError> {
        let RawStream {
            cpus,
            merge,
            layout,
            decoder,
            page,
            missed,
            uncounted_marks,
        } = self;
        let Some(cpu) = cpus.get_mut(i) else {
            return Ok(());
        };
        let bytes = page.get(..n).unwrap_or(&[]);
        let page_no = cpu.pages;
        cpu.pages += 1;
        let stream_byte = page_no.saturating_mul(layout.page_size as u64);
        let p = match ftrace_raw::open_page(layout, bytes, cpu.cpu, page_no) {
            Ok(p) => p,
            Err(e) => {
                let at = Location::record(&cpu.name, cpu.records, stream_byte);
                let header = bytes.get(..layout.data_offset).unwrap_or(bytes);
                return sink.bad_input(at, &hex_prefix(header), &page_reason(&e));
            }
        };
        let lost_at = Location::record(&cpu.name, cpu.records, stream_byte);
        match p.missed {
            ftrace_raw::Missed::None => {}
            ftrace_raw::Missed::Count(events) => {
                *missed = missed.saturating_add(events);
                tracefs::deliver(
                    tracefs::TraceLine::Lost {
                        cpu: cpu.cpu,
                        events,
                    },
                    lost_at,
                    sink,
                )?;
            }
            ftrace_raw::Missed::Unknown => {
                *uncounted_marks += 1;
                sink.note(tracefs::note::LOST_LINES);
            }
        }
        for record in p.records() {
            let record = match record {
                Ok(r) => r,
                Err(e) => {
                    let at = Location::record(
                        &cpu.name,
                        cpu.records,
                        stream_byte.saturating_add(e.byte as u64),
                    );
                    let rest = bytes.get(e.byte..).unwrap_or(&[]);
                    sink.bad_input(at, &hex_prefix(rest), &page_reason(&e))?;
                    break;
                }
            };
            let index = cpu.records;
            cpu.records += 1;
            merge.saw(i, record.time);
            let byte = stream_byte.saturating_add(record.offset as u64);
            match decoder.decode(Nanos(record.time), record.payload) {
                Ok(Parsed::Event(event)) => merge.hold(
                    i,
                    HeldEvent {
                        record: index,
                        byte,
                        event,
                    },
                ),
                Ok(other) => {
                    block_events::deliver(other, Location::record(&cpu.name, index, byte), sink)?
                }
                Err(reason) => sink.bad_input(
                    Location::record(&cpu.name, index, byte),
                    &hex_prefix(record.payload),
                    &BadReason::new(
                        reason.kind,
                        format!("CPU {} ring buffer, page {page_no}: {reason}", cpu.cpu),
                    ),
                )?,
            }
        }
        Ok(())
    }

    /// Hands the held events stamped at or before `upto` to `sink`, in time
    /// order.
    pub(super) fn release(&mut self, upto: u64, sink: &mut dyn Sink) -> Result<(), ConvertError> {
        let cpus = &self.cpus;
        self.merge.release(upto, &mut |i, h| {
            let name = cpus.get(i).map_or("trace_pipe_raw", |c| c.name.as_str());
            sink.event(Location::record(name, h.record, h.byte), h.event)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::ftrace_raw::testing::{
        decoder, formats, layout, record, PageBuilder, LOOP0,
    };
    use crate::normalize::{EventChoice, NormaliseOptions, Normaliser};
    use crate::sink::Collector;
    use trace_format::{IssueEvent, Op};

    /// A raw stream over regular files, one per CPU, holding `pages`: a read
    /// gives a page, then end of file (a CPU read to empty).
    fn raw_stream(dir: &Path, pages: &[Vec<Vec<u8>>]) -> RawStream {
        let cpus = pages
            .iter()
            .enumerate()
            .map(|(n, cpu_pages)| {
                let path = dir.join(format!("cpu{n}"));
                fs::write(&path, cpu_pages.concat()).unwrap();
                RawCpu {
                    cpu: n as u32,
                    file: File::open(&path).unwrap(),
                    path,
                    name: format!("per_cpu/cpu{n}/trace_pipe_raw"),
                    pages: 0,
                    records: 0,
                    gone: false,
                }
            })
            .collect::<Vec<_>>();
        RawStream {
            merge: CpuMerge::new(cpus.len()),
            cpus,
            layout: layout(),
            decoder: decoder(),
            page: vec![0; layout().page_size],
            missed: 0,
            uncounted_marks: 0,
        }
    }

    /// One page of records `(time, record bytes)`, deltas from the first.
    fn page(records: &[(u64, Vec<u8>)], missed: Option<Option<u64>>) -> Vec<u8> {
        let first = records.first().map_or(0, |r| r.0);
        let mut pb = PageBuilder::new(first);
        let mut last = first;
        for (t, rec) in records {
            pb.record((t - last) as u32, rec);
            last = *t;
        }
        pb.build(&layout(), missed)
    }

    #[test]
    fn cpus_merge_so_completions_on_another_cpu_find_their_issue() {
        let (issue, complete, _) = formats();
        let base = 5_000_000_123u64;
        // Request A issued on CPU 0, completed on CPU 1; B the other way round.
        let cpu0 = page(
            &[
                (base, record(&issue, LOOP0, 800, 8, "R", 10)),
                (base + 2_617, record(&complete, LOOP0, 1600, 16, "W", 0)),
            ],
            None,
        );
        let cpu1 = page(
            &[
                (base + 1_501, record(&complete, LOOP0, 800, 8, "R", 0)),
                (base + 2_003, record(&issue, LOOP0, 1600, 16, "W", 11)),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let mut raw = raw_stream(dir.path(), &[vec![cpu0], vec![cpu1]]);
        let mut out: Vec<trace_format::IoRecord> = Vec::new();
        let mut n = Normaliser::new(NormaliseOptions::default(), &mut out);
        assert_eq!(raw.read_round(&mut n).unwrap(), PipeRead::Empty);
        raw.release(u64::MAX, &mut n).unwrap();
        let outcome = n.finish().unwrap();
        assert!(
            outcome.tail.notes.iter().all(|(_, c)| *c == 0),
            "{:?}",
            outcome.tail.notes
        );
        let got: Vec<(u64, u64, Option<u64>)> = out
            .iter()
            .map(|r| (r.time.0, r.offset.0, r.latency.map(|l| l.0)))
            .collect();
        // Nanosecond times and latencies, relative to the first event.
        assert_eq!(
            got,
            vec![(0, 800 * 512, Some(1_501)), (2_003, 1600 * 512, Some(614))]
        );
    }

    #[test]
    fn bio_events_across_cpus_pair_queue_with_completion() {
        use crate::capture::ftrace_raw::testing::bio_formats;
        let (queue, complete) = bio_formats();
        let zram0 = 253u64 << 20;
        let base = 9_000_000_000u64;
        // Bio A queued on CPU 0 and completed on CPU 1; B queued on CPU 1
        // and completed on CPU 0; C, a flush bio, never completes.
        let cpu0 = page(
            &[
                (base, record(&queue, zram0, 800, 8, "WS", 10)),
                (base + 4_000, record(&complete, zram0, 64, 16, "R", 0)),
                (base + 5_000, record(&queue, zram0, 0, 0, "FWS", 10)),
            ],
            None,
        );
        let cpu1 = page(
            &[
                (base + 1_234, record(&queue, zram0, 64, 16, "R", 11)),
                (base + 2_345, record(&complete, zram0, 800, 8, "WS", 0)),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let mut raw = raw_stream(dir.path(), &[vec![cpu0], vec![cpu1]]);
        let mut out: Vec<trace_format::IoRecord> = Vec::new();
        let mut n = Normaliser::new(
            NormaliseOptions {
                event: Some(EventChoice::Queue),
                ..NormaliseOptions::default()
            },
            &mut out,
        );
        raw.read_round(&mut n).unwrap();
        raw.release(u64::MAX, &mut n).unwrap();
        let outcome = n.finish().unwrap();
        assert_eq!(outcome.issue_event, IssueEvent::Queue);
        let got: Vec<(u64, Op, u64, u64, Option<u64>)> = out
            .iter()
            .map(|r| (r.time.0, r.op, r.offset.0, r.len.0, r.latency.map(|l| l.0)))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Op::Write, 800 * 512, 4096, Some(2_345)),
                (1_234, Op::Read, 64 * 512, 8192, Some(2_766)),
                (5_000, Op::Flush, 0, 0, None),
            ]
        );
    }

    #[test]
    fn a_cpu_not_read_to_empty_holds_back_later_events_of_the_others() {
        let (issue, _, _) = formats();
        let base = 1_000_000u64;
        // CPU 0: one more page than a turn reads, one issue per page, 10 us apart.
        let cpu0: Vec<Vec<u8>> = (0..=PAGES_PER_TURN as u64)
            .map(|k| {
                page(
                    &[(base + k * 10_000, record(&issue, LOOP0, k * 8, 8, "R", 1))],
                    None,
                )
            })
            .collect();
        // CPU 1: one issue early in CPU 0's span, one after all of it.
        let cpu1 = page(
            &[
                (base + 5_000, record(&issue, LOOP0, 90_000, 8, "R", 2)),
                (base + 10_000_000, record(&issue, LOOP0, 91_000, 8, "R", 2)),
            ],
            None,
        );
        let dir = tempfile::tempdir().unwrap();
        let mut raw = raw_stream(dir.path(), &[cpu0, vec![cpu1]]);
        let mut sink = Collector::skipping_bad_input();
        assert_eq!(raw.read_round(&mut sink).unwrap(), PipeRead::Data);
        let last_read = base + (PAGES_PER_TURN as u64 - 1) * 10_000;
        let times: Vec<u64> = sink.events.iter().map(|e| e.time.0).collect();
        assert_eq!(times.len(), PAGES_PER_TURN + 1, "{times:?}");
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert_eq!(times.last(), Some(&last_read));
        assert!(times.contains(&(base + 5_000)));
        // The second round reads CPU 0 to empty: everything is released.
        assert_eq!(raw.read_round(&mut sink).unwrap(), PipeRead::Empty);
        let times: Vec<u64> = sink.events.iter().map(|e| e.time.0).collect();
        assert_eq!(times.len(), PAGES_PER_TURN + 3);
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert_eq!(times.last(), Some(&(base + 10_000_000)));
        assert!(sink.bad.is_empty());
    }

    #[test]
    fn lost_event_marks_and_corrupt_pages_are_reported() {
        let (issue, _, _) = formats();
        let rec = record(&issue, LOOP0, 8, 8, "R", 1);
        let counted = page(&[(1_000, rec.clone())], Some(Some(250)));
        let uncounted = page(&[(2_000, rec.clone())], Some(None));
        let mut corrupt = page(&[(3_000, rec.clone()), (3_100, rec.clone())], None);
        // The second record's header: a long record that runs off the page.
        let second = layout().data_offset + 4 + rec.len().div_ceil(4) * 4;
        corrupt[second..second + 4].copy_from_slice(&0u32.to_ne_bytes());
        corrupt[second + 4..second + 8].copy_from_slice(&9_000u32.to_ne_bytes());
        let dir = tempfile::tempdir().unwrap();
        let mut raw = raw_stream(dir.path(), &[vec![], vec![counted, uncounted, corrupt]]);
        let mut sink = Collector::skipping_bad_input();
        raw.read_round(&mut sink).unwrap();
        assert_eq!((raw.missed, raw.uncounted_marks), (250, 1));
        assert_eq!(sink.notes.get(tracefs::note::LOST_EVENTS), Some(&250));
        assert_eq!(sink.notes.get(tracefs::note::LOST_LINES), Some(&2));
        // The records before the corruption are kept.
        assert_eq!(sink.events.len(), 3);
        assert_eq!(sink.bad.len(), 1, "{:?}", sink.bad);
        let (at, reason) = (&sink.bad[0].location, &sink.bad[0].reason);
        let byte = 2 * 4096 + second;
        assert_eq!(
            at,
            &format!("per_cpu/cpu1/trace_pipe_raw: record 3 (byte {byte})")
        );
        assert!(
            reason.starts_with(&format!(
                "CPU 1 ring buffer, page 2, byte {second}: a record"
            )),
            "{reason}"
        );
    }
}
