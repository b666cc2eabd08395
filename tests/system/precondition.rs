//! Preconditioning (`--precondition`): on a fresh zram, whose never-written
//! pages read without touching data, the preconditioned read latency is that
//! of the same device filled with `dd`, not that of the empty device.

use crate::support::devices::Zram;
use crate::support::harness::SystemTest;
use replayer::options::PreconditionPolicy;
use replayer::{MemorySource, NoObserver, ReplayOptions, SuiteResult, TimingMode};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;
use trace_format::{Bytes, Flags, IoRecord, Nanos, Op};

const MIB: u64 = 1 << 20;
const ZRAM_MIB: u64 = 192;
const READ_BYTES: u64 = 128 << 10;

/// Back to never written: reset (refused for a moment while a closed ring
/// still holds the device) and sized again.
fn reset(z: &Zram) {
    let sys = PathBuf::from(format!("/sys/block/{}", z.name()));
    for _ in 0..100 {
        if fs::write(sys.join("reset"), "1").is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    fs::write(sys.join("disksize"), format!("{ZRAM_MIB}M")).unwrap();
}

/// Every byte written with random data, as `dd if=/dev/urandom oflag=direct`.
fn fill(z: &Zram) {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&z.path)
        .unwrap();
    let layout = std::alloc::Layout::from_size_align(4 * MIB as usize, 4096).unwrap();
    // SAFETY: non-zero size; freed below with the same layout.
    let ptr = unsafe { std::alloc::alloc(layout) };
    assert!(!ptr.is_null());
    // SAFETY: `ptr` is valid for the layout's size and not aliased.
    let buf = unsafe { std::slice::from_raw_parts_mut(ptr, layout.size()) };
    let mut rng = trace_format::rng::WyRand::new(0x9e37_79b9_7f4a_7c15);
    for _ in 0..ZRAM_MIB / 4 {
        rng.fill(buf);
        f.write_all(buf).unwrap();
    }
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(ptr, layout) };
}

/// 3000 random 128 KiB reads over 128 MiB: large enough that copying stored
/// data, not the engine's per-I/O cost, sets the latency.
fn random_reads() -> MemorySource {
    let mut recs = Vec::new();
    let mut rng = trace_format::rng::WyRand::new(12345);
    let span_blocks = 128 * MIB / READ_BYTES;
    for i in 0..3000u64 {
        let x = rng.next_u64();
        recs.push(IoRecord {
            time: Nanos(i * 10_000),
            op: Op::Read,
            offset: Bytes((x >> 33) % span_blocks * READ_BYTES),
            len: Bytes(READ_BYTES),
            flags: Flags::NONE,
            latency: Some(Nanos(5_000)),
            stream: None,
            device: 0,
        });
    }
    recs.sort_by_key(|r| r.time);
    MemorySource::new("random-reads", recs)
}

fn replay(z: &Zram, policy: PreconditionPolicy) -> SuiteResult {
    let opts = ReplayOptions {
        mode: TimingMode::Compressed,
        queue_depth: 1,
        passes: 3,
        allow_write: true,
        mapping: replayer::MappingKind::Identity,
        precondition: policy,
        ..Default::default()
    };
    let src = random_reads();
    replayer::run_suite(&[&src], Some(&z.path), &opts, &mut NoObserver).unwrap()
}

/// Pins the calling thread (and so the engine threads and io-wq workers it
/// starts) to the CPU it runs on; the previous affinity is put back on drop.
struct PinnedToOneCpu(libc::cpu_set_t);

impl PinnedToOneCpu {
    fn new() -> PinnedToOneCpu {
        // SAFETY: plain libc calls on this thread with valid cpu_set_t values.
        unsafe {
            let mut old: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            assert_eq!(libc::sched_getaffinity(0, size, &mut old), 0);
            let cpu = usize::try_from(libc::sched_getcpu()).expect("sched_getcpu");
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut one);
            assert_eq!(libc::sched_setaffinity(0, size, &one), 0);
            PinnedToOneCpu(old)
        }
    }
}

impl Drop for PinnedToOneCpu {
    fn drop(&mut self) {
        // SAFETY: restores the affinity read in `new`.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0);
        }
    }
}

/// Rounds of the three states' reads.
const ROUNDS: usize = 5;

/// The middle value (of an odd count).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// What a zram device holds, from its `mm_stat`.
#[derive(Debug)]
struct Stored {
    /// Pages written and kept (same-filled ones included).
    pages: u64,
    /// Pages kept as one repeated word, without data.
    same_pages: u64,
    /// Bytes of memory the kept data takes, compressed.
    compressed_bytes: u64,
}

fn stored(z: &Zram) -> Stored {
    let f = z.mm_stat();
    Stored {
        pages: f[0] / 4096,
        compressed_bytes: f[1],
        same_pages: f[5],
    }
}

/// Median read latency over the scored passes, µs.
fn read_p50(r: &SuiteResult) -> f64 {
    r.traces[0].latency_us["read"].p50
}

#[test]
fn preconditioned_fresh_zram_reads_like_a_filled_one() {
    let Some(t) = SystemTest::start(&[]) else {
        return;
    };
    let Some(z) = t.zram(ZRAM_MIB) else {
        return;
    };
    // The marker of this test's device goes to a directory of its own.
    // One state directory for the whole test process: tests run in parallel
    // threads, and a value set per test changed it under another test.
    std::env::set_var(
        "TRACEMARK_STATE_DIR",
        crate::support::data_home().join("state"),
    );
    // zram I/O runs on io-wq workers; on an idle 2-CPU machine a worker woken
    // on the other CPU adds ~30 µs to a QD1 read in some runs and not in others
    // (p50 6 µs or 30-48 µs at random, for empty and filled devices alike).
    // Pinned to one CPU, the engine and its workers measure the device's state.
    let _pin = PinnedToOneCpu::new();

    let r = replay(&z, PreconditionPolicy::ReadRegions);
    let p = r.precondition.clone().unwrap();
    assert_eq!(p.not_done, None);
    // The reads cover (almost) every 1 MiB region of the 128 MiB span.
    assert!(
        p.written_bytes >= 120 * MIB && p.written_bytes <= 128 * MIB,
        "{p:?}"
    );
    assert_eq!(p.already_bytes, 0);
    // What the device now holds is what was written, page for page, and
    // none of it compresses or reads as a same-filled page: the reads go
    // through stored data, as on a device in use.
    let held = stored(&z);
    assert_eq!(held.pages * 4096, p.written_bytes, "{held:?}");
    assert_eq!(held.same_pages, 0, "{held:?}");
    assert!(
        held.compressed_bytes * 10 >= held.pages * 4096 * 9,
        "{held:?}"
    );
    // A second run finds the marker and the data: nothing to write.
    let again = replay(&z, PreconditionPolicy::ReadRegions);
    let p2 = again.precondition.clone().unwrap();
    assert_eq!((p2.written_bytes, p2.already_bytes), (0, p.needed_bytes));

    reset(&z);
    // A reset device no longer holds what the marker names: written again.
    let after_reset = replay(&z, PreconditionPolicy::ReadRegions);
    assert_eq!(
        after_reset.precondition.as_ref().unwrap().written_bytes,
        p.written_bytes
    );

    // The three states, one device, in turns, round after round, compared
    // within each round: the machine's speed drifts over seconds (another
    // copy of these tests beside this one moved a state measured in a block
    // of its own by 2x), and separate devices read at different speeds in
    // the same state (preconditioned 26 µs against filled 19 µs, every
    // round, on two zram devices made one after the other).
    let mut preconditioned_vs_filled = Vec::new();
    let mut empty_vs_filled = Vec::new();
    let mut seen = Vec::new();
    for _ in 0..ROUNDS {
        reset(&z);
        let empty = read_p50(&replay(&z, PreconditionPolicy::Skip));
        assert_eq!(stored(&z).pages, 0, "reads stored nothing");
        let round = replay(&z, PreconditionPolicy::ReadRegions);
        let written = round.precondition.as_ref().unwrap().written_bytes;
        assert_eq!(written, p.written_bytes, "each round preconditions anew");
        let preconditioned = read_p50(&round);
        reset(&z);
        fill(&z);
        let filled = read_p50(&replay(&z, PreconditionPolicy::Skip));
        preconditioned_vs_filled.push((preconditioned / filled).ln());
        empty_vs_filled.push((empty / filled).ln());
        seen.push(format!(
            "empty {empty:.1}, preconditioned {preconditioned:.1}, filled {filled:.1}"
        ));
    }
    eprintln!("read p50 by round, µs: {}", seen.join("; "));
    let off_preconditioned = median(&mut preconditioned_vs_filled).abs();
    let off_empty = median(&mut empty_vs_filled).abs();
    assert!(
        off_preconditioned < 0.35,
        "preconditioned vs filled: median log ratio {off_preconditioned:.2} over rounds ({})",
        seen.join("; ")
    );
    assert!(
        off_preconditioned < off_empty,
        "the preconditioned device is no closer to the filled one than the empty one ({})",
        seen.join("; ")
    );
}

/// One quick pass of the random reads, preconditioned (the marker in this
/// test's own state directory).
fn replay_once(z: &Zram, state: &std::path::Path) -> SuiteResult {
    let opts = ReplayOptions {
        mode: TimingMode::Compressed,
        queue_depth: 4,
        passes: 1,
        warmup: false,
        allow_write: true,
        mapping: replayer::MappingKind::Identity,
        precondition: PreconditionPolicy::ReadRegions,
        ..Default::default()
    };
    let src = random_reads();
    std::env::set_var("TRACEMARK_STATE_DIR", state);
    replayer::run_suite(&[&src], Some(&z.path), &opts, &mut NoObserver).unwrap()
}

/// A reset device and a filled one present the same data to the reads once
/// preconditioned, but are different drives' states: the result says which
/// one it found, from blocks it read before writing anything.
#[test]
fn result_records_the_state_the_target_was_found_in() {
    let Some(t) = SystemTest::start(&[]) else {
        return;
    };
    let Some(z) = t.zram(ZRAM_MIB) else {
        return;
    };
    let state = crate::support::data_home().join("state");

    // Fresh: nothing held data before the run; the read regions do when
    // scoring starts.
    let fresh = replay_once(&z, &state);
    let p = fresh.precondition.clone().unwrap();
    assert!(p.written_bytes > 0, "{p:?}");
    let f = p.found.expect("the result records the state found");
    assert!(f.space_before.blocks >= 32, "{f:?}");
    assert_eq!(f.space_before.with_data, 0, "{f:?}");
    assert!(f.read_regions_before.blocks >= 32, "{f:?}");
    assert_eq!(f.read_regions_before.with_data, 0, "{f:?}");
    assert_eq!(f.read_regions_at_start.blocks, f.read_regions_before.blocks);
    assert_eq!(
        f.read_regions_at_start.with_data, f.read_regions_at_start.blocks,
        "{f:?}"
    );
    let text = results::text::suite_table(&fresh);
    assert!(text.contains("target state: space never written"), "{text}");

    // Filled: everything held data; the marker vouches for the read
    // regions, so nothing is written, and the state found says why.
    reset(&z);
    fill(&z);
    let filled = replay_once(&z, &state);
    let p = filled.precondition.clone().unwrap();
    assert_eq!(p.written_bytes, 0, "{p:?}");
    let f = p.found.expect("the result records the state found");
    assert_eq!(f.space_before.with_data, f.space_before.blocks, "{f:?}");
    assert_eq!(
        f.read_regions_before.with_data, f.read_regions_before.blocks,
        "{f:?}"
    );
    assert_eq!(
        f.read_regions_at_start.with_data, f.read_regions_at_start.blocks,
        "{f:?}"
    );
    let text = results::text::suite_table(&filled);
    assert!(text.contains("target state: space holding data"), "{text}");
}
