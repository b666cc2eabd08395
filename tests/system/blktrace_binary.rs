//! The blktrace binary parser against real records: a capture of this machine's
//! kernel (the ftrace `blk` tracer in binary mode on a loop device), rewritten
//! in the other byte order and record version, corrupted, and the shared
//! samples; each cross-checked with the real `blkparse`.

use crate::support;
use crate::support::tracefs::Tracefs;
use crate::support::{LoopDevice, TraceSetting, TracingState};
use recorder::formats::blktrace::{self, Framing};
use recorder::{Action, BlockEvent, Collector, ConvertError};
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use trace_format::Op;

fn parse_paths(paths: &[&Path]) -> Result<Collector, ConvertError> {
    let mut sink = Collector::default();
    blktrace::parse_files(paths, &mut sink).map(|()| sink)
}

/// What the comparison with blkparse looks at: action letter (`?` for the
/// events tracemark does not distinguish), op, sector (none for flushes, whose
/// sector blkparse does not always print), bytes, device.
type Key = (char, Op, Option<u64>, u64, (u32, u32));

fn letter(action: Action) -> char {
    match action {
        Action::Queue => 'Q',
        Action::Issue => 'D',
        Action::Complete => 'C',
        Action::BackMerge => 'M',
        Action::FrontMerge => 'F',
        Action::Requeue => 'R',
        Action::Remap => 'A',
        Action::Split => 'X',
        Action::Other => '?',
    }
}

fn key_of(e: &BlockEvent) -> Key {
    let sector = (e.op != Op::Flush).then_some(e.offset.0 / 512);
    let bytes = if e.action == Action::Split {
        0
    } else {
        e.len.0
    };
    (
        letter(e.action),
        e.op,
        sector,
        bytes,
        (e.device.major, e.device.minor),
    )
}

fn sorted_keys(events: &[BlockEvent]) -> Vec<Key> {
    let mut keys: Vec<Key> = events.iter().map(key_of).collect();
    keys.sort();
    keys
}

/// Parses blkparse's default text output into comparison keys, independently
/// of the parser under test: `MAJ,MIN CPU SEQ TIME PID ACT RWBS [SECTOR + N] ...`.
fn blkparse_keys(text: &str) -> Vec<Key> {
    let mut keys = Vec::new();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 7 {
            continue;
        }
        let Some((maj, min)) = t[0].split_once(',') else {
            continue;
        };
        let (Ok(maj), Ok(min)) = (maj.parse::<u32>(), min.parse::<u32>()) else {
            continue;
        };
        if t[1].parse::<u32>().is_err() {
            continue;
        }
        let act = t[5];
        let rwbs = t[6];
        // Messages and passthrough commands are notes for tracemark, not I/O.
        if act == "m" || t.get(7).is_some_and(|s| s.starts_with('(')) {
            continue;
        }
        let sector = t.get(7).and_then(|s| s.parse::<u64>().ok());
        let blocks = if t.get(8) == Some(&"+") {
            t.get(9).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
        } else {
            0
        };
        let bytes = blocks * 512;
        let preflush = rwbs.len() > 1 && rwbs.starts_with('F');
        let op_char = rwbs.chars().nth(usize::from(preflush)).unwrap_or('N');
        let op = match op_char {
            'D' => Op::Discard,
            _ if bytes == 0 => Op::Flush,
            'W' => Op::Write,
            _ => Op::Read,
        };
        let letter = match act {
            "Q" | "D" | "C" | "M" | "F" | "R" | "A" | "X" => act.chars().next().unwrap(),
            _ => '?',
        };
        let sector = if op == Op::Flush {
            None
        } else {
            Some(sector.unwrap_or(0))
        };
        let bytes = if letter == 'X' { 0 } else { bytes };
        keys.push((letter, op, sector, bytes, (maj, min)));
    }
    keys.sort();
    keys
}

/// Counts and bytes per (letter, op), for readable failure messages.
fn summary(keys: &[Key]) -> BTreeMap<(char, Op), (u64, u64)> {
    let mut m = BTreeMap::new();
    for k in keys {
        let e: &mut (u64, u64) = m.entry((k.0, k.1)).or_default();
        e.0 += 1;
        e.1 += k.3;
    }
    m
}

fn assert_same(ours: &[Key], theirs: &[Key], what: &str) {
    assert_eq!(
        summary(ours),
        summary(theirs),
        "{what}: counts and bytes per action and op differ (left: tracemark, right: blkparse)"
    );
    assert_eq!(
        ours, theirs,
        "{what}: sectors or sizes differ from blkparse"
    );
}

/// Runs blkparse on a set prefix (`-i NAME`) or, for a single file whose
/// records are not all of CPU 0, through stdin.
fn run_blkparse(dir: &Path, input: &str, stdin_file: Option<&Path>) -> String {
    let mut cmd = Command::new("blkparse");
    // No `-o -`: blkparse 1.2 takes that for a file named `-`.
    cmd.current_dir(dir).args(["-i", input]);
    if let Some(f) = stdin_file {
        cmd.stdin(Stdio::from(fs::File::open(f).unwrap()));
    }
    let out = cmd.output().expect("running blkparse");
    assert!(
        out.status.success(),
        "blkparse failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have_blkparse() -> bool {
    Command::new("sh")
        .args(["-c", "command -v blkparse"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------
// Record rewriting, written independently of the parser from the kernel header.

const V7: usize = 48;

fn u16_le(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Start offsets of the records of a little-endian version 7 file.
fn record_starts(data: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut pos = 0;
    while pos + V7 <= data.len() {
        assert_eq!(u32_le(data, pos), 0x6561_7407, "fixture is not v7 LE");
        starts.push(pos);
        pos += V7 + usize::from(u16_le(data, pos + 46));
    }
    assert_eq!(pos, data.len(), "fixture has a partial record");
    starts
}

/// Rewrites a little-endian v7 file as `version` (7 or 8) in big or little endian.
fn rewrite(data: &[u8], version: u8, big: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * 2);
    for start in record_starts(data) {
        let r = &data[start..];
        let pdu_len = u16_le(r, 46);
        let action = u32_le(r, 28);
        let put32 = |out: &mut Vec<u8>, v: u32| {
            out.extend_from_slice(&if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        let put64 = |out: &mut Vec<u8>, v: u64| {
            out.extend_from_slice(&if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        let put16 = |out: &mut Vec<u8>, v: u16| {
            out.extend_from_slice(&if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        put32(&mut out, 0x6561_7400 | u32::from(version));
        put32(&mut out, u32_le(r, 4));
        put64(&mut out, u64_le(r, 8));
        put64(&mut out, u64_le(r, 16));
        put32(&mut out, u32_le(r, 24));
        if version == 7 {
            put32(&mut out, action);
            put32(&mut out, u32_le(r, 32));
        } else {
            put32(&mut out, u32_le(r, 32));
            put64(&mut out, u64::from(action));
        }
        put32(&mut out, u32_le(r, 36));
        put32(&mut out, u32_le(r, 40));
        put16(&mut out, u16_le(r, 44));
        put16(&mut out, pdu_len);
        if version == 8 {
            out.extend_from_slice(&[0u8; 12]);
        }
        let mut pdu = r[V7..V7 + usize::from(pdu_len)].to_vec();
        // The timestamp notify's payload (two u32) is in the record's byte
        // order; every other payload is bytes or big-endian already.
        let notify_timestamp = (action >> 16) & (1 << 10) != 0 && action & 0xff == 1;
        if big && notify_timestamp {
            let skip = if action & 0x100 != 0 { 8 } else { 0 };
            for word in pdu[skip..].chunks_exact_mut(4) {
                word.reverse();
            }
        }
        out.extend_from_slice(&pdu);
    }
    out
}

// ---------------------------------------------------------------------------
// The kernel capture (root): the ftrace blk tracer in binary mode.

/// A dd I/O the capture must contain.
#[derive(Debug, Clone, Copy)]
struct KnownIo {
    op: Op,
    offset: u64,
    len: u64,
}

struct Capture {
    /// `DIR/NAME`, the prefix of the per-CPU set `NAME.blktrace.N`.
    prefix: PathBuf,
    /// Raw `trace_pipe` output (ftrace framing).
    ftrace: Vec<u8>,
    /// All records in trace order, one v7 little-endian file image.
    merged: Vec<u8>,
    device: (u32, u32),
    known: Vec<KnownIo>,
}

fn capture() -> &'static Result<Capture, String> {
    static CAPTURE: OnceLock<Result<Capture, String>> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        // Captures of earlier runs (statics are never dropped, so each run
        // leaves its small capture behind until the next one); not those of
        // a copy of this binary running now.
        for old in fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = old.file_name().to_string_lossy().to_string();
            let pid = name.strip_prefix("blktrace-binary-");
            if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
                let _ = fs::remove_dir_all(old.path());
            }
        }
        let dir = tmp.join(format!("blktrace-binary-{}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        kernel_capture(&dir).map_err(|e| format!("capturing with the blk tracer: {e}"))
    })
}

fn dd(args: &[String]) -> std::io::Result<()> {
    let st = Command::new("dd")
        .args(args)
        .stderr(Stdio::null())
        .status()?;
    if st.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("dd {args:?} failed")))
    }
}

fn kernel_capture(dir: &Path) -> std::io::Result<Capture> {
    // The blk tracer works at the top level only (no instances): the lock,
    // and every setting back as it was before the lock goes.
    let tracing = Tracefs::acquire()?;
    let root = tracing.root.clone();
    let before = TracingState::read(&root);
    let lo = LoopDevice::new(dir, 64)?;
    let dev = lo.path.display().to_string();
    let device = lo.dev_id();
    let raw = {
        // Guards restore in reverse order: binary mode off, tracer back,
        // per-device tracing off, then the loop device goes.
        let _enable = TraceSetting::set(format!("/sys/block/{}/trace/enable", lo.name()), "1")?;
        let _tracer = TraceSetting::set(root.join("current_tracer"), "blk")?;
        let _context = TraceSetting::set(root.join("options/context-info"), "1")?;
        let _classic = TraceSetting::set(root.join("options/blk_classic"), "0")?;
        let _bin = TraceSetting::set(root.join("options/bin"), "1")?;
        let _on = TraceSetting::set(root.join("tracing_on"), "1")?;
        fs::write(root.join("trace"), "")?;
        let mut pipe = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(root.join("trace_pipe"))?;
        // Drain anything from before this test.
        let mut buf = vec![0u8; 1 << 16];
        while pipe.read(&mut buf).is_ok_and(|n| n > 0) {}

        let w = |bs: u64, count: u64, seek: u64, extra: &str| {
            let mut a = vec![
                "if=/dev/urandom".to_string(),
                format!("of={dev}"),
                format!("bs={bs}"),
                format!("count={count}"),
                format!("seek={seek}"),
                "oflag=direct".into(),
            ];
            a.push(format!("conv=notrunc{extra}"));
            dd(&a)
        };
        let r = |bs: u64, count: u64, skip: u64| {
            dd(&[
                format!("if={dev}"),
                "of=/dev/null".into(),
                format!("bs={bs}"),
                format!("count={count}"),
                format!("skip={skip}"),
                "iflag=direct".into(),
            ])
        };
        w(4096, 1, 100, ",fsync")?;
        w(65536, 1, 16, "")?;
        r(8192, 1, 256)?;
        r(131072, 1, 32)?;
        w(16384, 3, 512, "")?;

        let mut raw = Vec::new();
        let mut idle_since = Instant::now();
        while idle_since.elapsed() < Duration::from_millis(300) {
            match pipe.read(&mut buf) {
                Ok(0) => std::thread::sleep(Duration::from_millis(20)),
                Ok(n) => {
                    raw.extend_from_slice(&buf[..n]);
                    idle_since = Instant::now();
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => return Err(e),
            }
        }
        raw
    };
    drop(lo);
    before.assert_restored(&TracingState::read(&root));
    drop(tracing);

    // Strip the ftrace headers; write the records to per-CPU files as blktrace
    // would (sequence numbers per CPU), and all of them to one image.
    let mut merged = Vec::new();
    let mut per_cpu: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let mut pos = 0;
    while pos < raw.len() {
        let hdr = raw
            .get(pos..pos + 16)
            .ok_or_else(|| std::io::Error::other("partial ftrace header"))?;
        let rec = raw
            .get(pos + 16..pos + 16 + V7)
            .ok_or_else(|| std::io::Error::other("partial blk_io_trace"))?;
        if u32_le(rec, 0) != 0x6561_7407 {
            return Err(std::io::Error::other(format!(
                "byte {}: no blk_io_trace magic behind the ftrace header",
                pos + 16
            )));
        }
        // The ftrace header's timestamp is the record's time.
        assert_eq!(u64_le(hdr, 8), u64_le(rec, 8), "ftrace header time");
        let len = V7 + usize::from(u16_le(rec, 46));
        let mut record = raw
            .get(pos + 16..pos + 16 + len)
            .ok_or_else(|| std::io::Error::other("partial pdu"))?
            .to_vec();
        let cpu = u32_le(&record, 40);
        let file = per_cpu.entry(cpu).or_default();
        let seq = record_starts_count(file) as u32 + 1;
        record[4..8].copy_from_slice(&seq.to_le_bytes());
        file.extend_from_slice(&record);
        merged.extend_from_slice(&record);
        pos += 16 + len;
    }
    let prefix = dir.join("loopcap");
    let max_cpu = per_cpu.keys().copied().max().unwrap_or(0);
    for cpu in 0..=max_cpu {
        let data = per_cpu.get(&cpu).map(Vec::as_slice).unwrap_or(&[]);
        fs::write(dir.join(format!("loopcap.blktrace.{cpu}")), data)?;
    }
    let known = vec![
        KnownIo {
            op: Op::Write,
            offset: 100 * 4096,
            len: 4096,
        },
        KnownIo {
            op: Op::Write,
            offset: 16 * 65536,
            len: 65536,
        },
        KnownIo {
            op: Op::Read,
            offset: 256 * 8192,
            len: 8192,
        },
        KnownIo {
            op: Op::Read,
            offset: 32 * 131072,
            len: 131072,
        },
        KnownIo {
            op: Op::Write,
            offset: 512 * 16384,
            len: 16384,
        },
        KnownIo {
            op: Op::Write,
            offset: 513 * 16384,
            len: 16384,
        },
        KnownIo {
            op: Op::Write,
            offset: 514 * 16384,
            len: 16384,
        },
    ];
    Ok(Capture {
        prefix,
        ftrace: raw,
        merged,
        device,
        known,
    })
}

fn record_starts_count(file: &[u8]) -> usize {
    if file.is_empty() {
        0
    } else {
        record_starts(file).len()
    }
}

/// The capture, or None after a SKIP line when not root.
fn need_capture() -> Option<&'static Capture> {
    if !support::require_root() {
        return None;
    }
    match capture() {
        Ok(c) => Some(c),
        Err(e) => panic!("{}: {e}", support::test_name()),
    }
}

#[test]
fn kernel_capture_matches_blkparse_and_contains_the_dd_ios() {
    let Some(cap) = need_capture() else {
        return;
    };
    let ours = parse_paths(&[cap.prefix.as_path()]).expect("parsing the capture");
    assert!(ours.bad.is_empty(), "{:?}", ours.bad);
    assert!(
        ours.events.windows(2).all(|w| w[0].time <= w[1].time),
        "the per-CPU merge is not in time order"
    );
    assert!(ours
        .events
        .iter()
        .all(|e| (e.device.major, e.device.minor) == cap.device));

    // Every dd I/O appears as queued, issued and completed with its op and size.
    for io in &cap.known {
        for action in [Action::Queue, Action::Issue, Action::Complete] {
            let found = ours.events.iter().any(|e| {
                e.action == action && e.op == io.op && e.offset.0 == io.offset && e.len.0 == io.len
            });
            assert!(found, "{io:?} has no {action:?} event");
        }
    }
    // The fsync after the first write is a cache flush with no data.
    assert!(
        ours.events
            .iter()
            .any(|e| e.action == Action::Issue && e.op == Op::Flush && e.len.0 == 0),
        "no flush issued"
    );

    // The same records read straight from the ftrace stream, and from one file
    // holding all CPUs, give the same events.
    let mut live = Collector::default();
    let n = blktrace::parse_reader(&cap.ftrace[..], "trace_pipe", Framing::FtraceBin, &mut live)
        .expect("parsing the ftrace stream");
    assert_eq!(n as usize, record_starts(&cap.merged).len());
    assert_eq!(sorted_keys(&live.events), sorted_keys(&ours.events));
    let mut one = Collector::default();
    blktrace::parse_reader(&cap.merged[..], "merged", Framing::Blktrace, &mut one).unwrap();
    assert_eq!(one.events, live.events, "ftrace framing changes the events");

    if !support::require_tool("blkparse") {
        return;
    }
    let dir = cap.prefix.parent().unwrap();
    let text = run_blkparse(dir, "loopcap", None);
    let theirs = blkparse_keys(&text);
    assert!(!theirs.is_empty(), "blkparse printed no events:\n{text}");
    assert_same(&sorted_keys(&ours.events), &theirs, "kernel capture");
}

#[test]
fn both_byte_orders_and_versions_parse_identically() {
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    if support::is_root() {
        if let Some(cap) = need_capture() {
            inputs.push(("kernel capture".into(), cap.merged.clone()));
        }
    }
    for (name, data) in sample_files() {
        inputs.push((name, data));
    }
    if inputs.is_empty() {
        support::skip("needs root for a kernel capture, or the shared samples");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, data) in &inputs {
        let reference = {
            let path = dir.path().join("ref.bin");
            fs::write(&path, data).unwrap();
            parse_paths(&[path.as_path()]).unwrap()
        };
        assert!(!reference.events.is_empty(), "{name}: no events");
        for (version, big) in [(7, true), (8, false), (8, true), (7, false)] {
            let bytes = rewrite(data, version, big);
            assert!(blktrace::looks_like(&bytes), "{name} v{version} big={big}");
            let path = dir.path().join(format!("v{version}-{big}.bin"));
            fs::write(&path, &bytes).unwrap();
            let got = parse_paths(&[path.as_path()])
                .unwrap_or_else(|e| panic!("{name} v{version} big={big}: {e}"));
            assert_eq!(got.events, reference.events, "{name} v{version} big={big}");
            assert_eq!(got.notes, reference.notes, "{name} v{version} big={big}");
            assert_eq!(
                got.wall_clock, reference.wall_clock,
                "{name} v{version} big={big}"
            );
        }
        // blkparse itself reads the big-endian v7 file the same way.
        if have_blkparse() {
            let be = dir.path().join("be.blktrace.0");
            fs::write(&be, rewrite(data, 7, true)).unwrap();
            let le = dir.path().join("le.blktrace.0");
            fs::write(&le, data).unwrap();
            let a = blkparse_keys(&run_blkparse(dir.path(), "-", Some(&le)));
            let b = blkparse_keys(&run_blkparse(dir.path(), "-", Some(&be)));
            assert_eq!(
                a, b,
                "{name}: blkparse reads the big-endian rewrite differently"
            );
            assert_same(&sorted_keys(&reference.events), &a, name);
        }
    }
}

/// One real capture file for the corruption tests.
fn some_real_file() -> Option<Vec<u8>> {
    if support::is_root() {
        return need_capture().map(|c| c.merged.clone());
    }
    if let Some((_, data)) = sample_files().into_iter().next() {
        return Some(data);
    }
    support::skip("needs root for a kernel capture, or the shared samples");
    None
}

fn parse_bytes(
    dir: &Path,
    name: &str,
    data: &[u8],
    skip_bad: bool,
) -> (Collector, Result<(), ConvertError>) {
    let path = dir.join(name);
    fs::write(&path, data).unwrap();
    let mut sink = Collector {
        skip_bad,
        ..Default::default()
    };
    let result = blktrace::parse_files(&[path.as_path()], &mut sink);
    (sink, result)
}

#[test]
fn bad_input_gives_one_error_naming_file_and_record() {
    let Some(data) = some_real_file() else {
        return;
    };
    let starts = record_starts(&data);
    assert!(starts.len() > 8, "capture too small");
    let dir = tempfile::tempdir().unwrap();
    let k = starts.len() / 2;
    let at = starts[k];

    // Empty file.
    let (_, r) = parse_bytes(dir.path(), "empty.blktrace.0", &[], false);
    let msg = r.unwrap_err().to_string();
    assert!(
        msg.contains("empty.blktrace.0") && msg.contains("record 0") && msg.contains("empty"),
        "{msg}"
    );

    // Truncated in the middle of record k (header and payload).
    for cut in [at + 1, at + 20, at + 47] {
        let (sink, r) = parse_bytes(dir.path(), "cut.bin", &data[..cut], false);
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains("cut.bin: record") && msg.contains(&format!("record {k} (byte {at})")),
            "{msg}"
        );
        assert!(msg.contains("truncated"), "{msg}");
        assert_eq!(
            sink.events.len() + count_notes(&sink),
            k,
            "records before the cut"
        );
    }

    // Flipped magic: stops, also when told to skip bad records (the next
    // record cannot be found), with exactly one report.
    for skip_bad in [false, true] {
        let mut bad = data.clone();
        bad[at + 2] ^= 0x5a;
        let (sink, r) = parse_bytes(dir.path(), "magic.bin", &bad, skip_bad);
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains(&format!("magic.bin: record {k} (byte {at})"))
                && msg.contains("bad magic"),
            "{msg}"
        );
        assert_eq!(sink.bad.len(), 1, "{:?}", sink.bad);
    }

    // Absurd payload length.
    let mut bad = data.clone();
    bad[at + 46..at + 48].copy_from_slice(&0xfff0u16.to_le_bytes());
    let (_, r) = parse_bytes(dir.path(), "pdu.bin", &bad, false);
    let msg = r.unwrap_err().to_string();
    assert!(
        msg.contains(&format!("pdu.bin: record {k}"))
            && msg.contains("absurd payload length 65520"),
        "{msg}"
    );

    // Time going far backwards: an error, or skipped with --skip-bad.
    let mut bad = data.clone();
    bad[at + 8..at + 16].copy_from_slice(&0u64.to_le_bytes());
    let first_time = u64_le(&data, 8);
    if first_time > 2_000_000_000 {
        let (_, r) = parse_bytes(dir.path(), "time.bin", &bad, false);
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains(&format!("record {k}")) && msg.contains("backwards"),
            "{msg}"
        );
        let (sink, r) = parse_bytes(dir.path(), "time.bin", &bad, true);
        r.unwrap();
        assert_eq!(sink.bad.len(), 1);
        assert_eq!(sink.events.len() + count_notes(&sink), starts.len() - 1);
    }

    // Not blktrace at all.
    assert!(!blktrace::looks_like(
        b"  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n"
    ));
    assert!(blktrace::looks_like(&data));
}

fn count_notes(sink: &Collector) -> usize {
    sink.notes.values().sum::<u64>() as usize
}

#[test]
fn random_corruptions_never_panic() {
    let Some(data) = some_real_file() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.blktrace.0");
    let mut rng = trace_format::rng::WyRand::new(0x9e37_79b9_7f4a_7c15);
    let mut next = move || rng.next_u64();
    for round in 0..600 {
        let mut bad = data.clone();
        match round % 3 {
            0 => {
                for _ in 0..1 + next() % 4 {
                    let i = (next() % bad.len() as u64) as usize;
                    bad[i] ^= (next() % 255 + 1) as u8;
                }
            }
            1 => bad.truncate((next() % data.len() as u64) as usize),
            _ => {
                let i = (next() % bad.len().saturating_sub(8) as u64) as usize;
                bad[i..i + 8].copy_from_slice(&next().to_le_bytes());
            }
        }
        fs::write(&path, &bad).unwrap();
        for skip_bad in [false, true] {
            let mut sink = Collector {
                skip_bad,
                ..Default::default()
            };
            if let Err(e) = blktrace::parse_files(&[path.as_path()], &mut sink) {
                let msg = e.to_string();
                assert!(
                    msg.contains("fuzz.blktrace.0"),
                    "round {round}: error without the file: {msg}"
                );
            }
            for b in &sink.bad {
                assert!(
                    b.location.contains("fuzz.blktrace.0: record "),
                    "round {round}: {b:?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The shared samples.

const SAMPLES: &str = "/work/shared/samples/blktrace-binary";

/// Sets of sample files, grouped by prefix: (prefix path, member files).
fn sample_sets() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let Ok(entries) = fs::read_dir(SAMPLES) else {
        return Vec::new();
    };
    let mut sets: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if let Some((prefix, cpu)) = name.rsplit_once(".blktrace.") {
            if cpu.parse::<u32>().is_ok() {
                sets.entry(p.with_file_name(prefix))
                    .or_default()
                    .push(p.clone());
            }
        }
    }
    sets.into_iter().collect()
}

fn sample_files() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (_, files) in sample_sets() {
        for f in files {
            if let Ok(data) = fs::read(&f) {
                if !data.is_empty()
                    && blktrace::looks_like(&data)
                    && u32_le(&data, 0) == 0x6561_7407
                {
                    out.push((f.display().to_string(), data));
                }
            }
        }
    }
    out
}

#[test]
fn shared_samples_match_blkparse() {
    let sets = sample_sets();
    if sets.is_empty() {
        eprintln!("SKIP shared_samples_match_blkparse: {SAMPLES} is absent");
        return;
    }
    let blkparse = have_blkparse();
    let tmp = tempfile::tempdir().unwrap();
    for (prefix, files) in sets {
        let name = prefix.file_name().unwrap().to_string_lossy().to_string();
        let ours = parse_paths(&[prefix.as_path()]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(ours.bad.is_empty(), "{name}: {:?}", ours.bad);
        assert!(!ours.events.is_empty(), "{name}: no events");
        assert!(
            ours.events.windows(2).all(|w| w[0].time <= w[1].time),
            "{name}: merge out of order"
        );
        // Naming the files instead of the prefix is the same.
        let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        assert_eq!(parse_paths(&refs).unwrap().events, ours.events, "{name}");
        if !blkparse {
            eprintln!("SKIP shared_samples_match_blkparse ({name}): blkparse is not installed");
            continue;
        }
        // Copies, so blkparse never writes near the samples.
        for f in &files {
            let short = f.file_name().unwrap().to_string_lossy().replace(&name, "s");
            fs::copy(f, tmp.path().join(short)).unwrap();
        }
        // A file's records must be of its CPU for `-i NAME`; a lone file of
        // another CPU goes through stdin.
        let text = if files.len() == 1 {
            run_blkparse(tmp.path(), "-", Some(&files[0]))
        } else {
            run_blkparse(tmp.path(), "s", None)
        };
        assert_same(&sorted_keys(&ours.events), &blkparse_keys(&text), &name);

        // A `blkparse -d` dump of the same input parses to the same events.
        if files.len() > 1 {
            let dump = tmp.path().join("s.dump");
            let st = Command::new("blkparse")
                .current_dir(tmp.path())
                .args(["-i", "s", "-o", "/dev/null", "-d"])
                .arg(&dump)
                .status()
                .unwrap();
            assert!(st.success());
            let from_dump = parse_paths(&[dump.as_path()]).unwrap();
            assert_eq!(
                sorted_keys(&from_dump.events),
                sorted_keys(&ours.events),
                "{name}: dump"
            );
        }
        for f in fs::read_dir(tmp.path()).unwrap().flatten() {
            let _ = fs::remove_file(f.path());
        }
    }
}

/// The same kernel capture converted twice, from the blktrace binary and from
/// the real `blkparse`'s text of it, gives the same trace: record for record,
/// in both event modes. Each parser is the other's oracle.
#[test]
fn binary_and_blkparse_text_of_one_capture_convert_to_the_same_records() {
    let Some(cap) = need_capture() else {
        return;
    };
    if !support::require_tool("blkparse") {
        return;
    }
    let dir = cap.prefix.parent().unwrap();
    let text_path = dir.join("loopcap.blkparse.txt");
    fs::write(&text_path, run_blkparse(dir, "loopcap", None)).unwrap();
    for event in [
        recorder::normalize::EventChoice::Issue,
        recorder::normalize::EventChoice::Queue,
    ] {
        let opts = recorder::convert::ConvertOptions {
            event: Some(event),
            ..Default::default()
        };
        let mut from_binary: Vec<trace_format::IoRecord> = Vec::new();
        recorder::convert::convert_records(
            std::slice::from_ref(&cap.prefix),
            &opts,
            &mut from_binary,
        )
        .expect("converting the binary");
        let mut from_text: Vec<trace_format::IoRecord> = Vec::new();
        recorder::convert::convert_records(std::slice::from_ref(&text_path), &opts, &mut from_text)
            .expect("converting blkparse's text");
        assert!(
            from_binary.len() >= cap.known.len(),
            "{event:?}: too few records"
        );
        assert_eq!(
            from_binary.len(),
            from_text.len(),
            "{event:?}: record counts differ"
        );
        for (i, (b, t)) in from_binary.iter().zip(&from_text).enumerate() {
            // blkparse prints times with nanoseconds and keeps every field we use.
            assert_eq!(b, t, "{event:?}: record {i} differs");
        }
    }
}
