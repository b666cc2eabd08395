//! On a target without non-blocking I/O (zram), which requests io-wq gets as
//! "concurrent" work (IOSQE_ASYNC, for which io-wq starts workers without
//! waiting for one to sleep): in realtime mode every one; in compressed mode
//! those issued with 16 or more already in flight, and shallower ones only
//! where the issuer's polling stopped paying (engine/mod.rs,
//! `CONCURRENT_WORK_FROM_INFLIGHT`). Seen by the kernel: the
//! `io_uring_queue_async_work` event carries each punted request's flags, in
//! the order the issuing thread handed them over.

use crate::support::devices::Zram;
use crate::support::harness::SystemTest;
use crate::support::replay::rec;
use crate::support::skip;
use replayer::{MemorySource, NoObserver, ReplayOptions, TimingMode};
use std::fs;
use trace_format::Op;

/// The kernel's `REQ_F_FORCE_ASYNC`: the request carried IOSQE_ASYNC (the
/// request flags' bit 4, shared with the SQE flag's bit).
const REQ_F_FORCE_ASYNC: u64 = 1 << 4;

/// `n` 4 KiB reads 10 µs apart over 16 MiB, without completion times (so
/// compressed mode keeps the queue full).
fn reads(n: u64) -> MemorySource {
    let recs = (0..n)
        .map(|i| rec(i * 10, Op::Read, (i * 7919 % 4096) * 4096, 4096))
        .collect();
    MemorySource::new("reads", recs)
}

/// The flags of every request this thread handed to io-wq during one replay
/// of `n` reads.
fn punted_flags(t: &SystemTest, z: &Zram, mode: TimingMode, queue_depth: u32, n: u64) -> Vec<u64> {
    let instance = t.instance();
    let root = &instance.dir;
    let event = root.join("events/io_uring/io_uring_queue_async_work");
    fs::write(root.join("buffer_size_kb"), "8192").expect("buffer size");
    // SAFETY: no arguments. The replay issues from this thread.
    let tid = unsafe { libc::gettid() };
    fs::write(event.join("filter"), format!("common_pid == {tid}")).expect("event filter");
    fs::write(event.join("enable"), "1").expect("enable the event");
    fs::write(root.join("tracing_on"), "1").expect("tracing on");
    let opts = ReplayOptions {
        mode,
        queue_depth,
        passes: 1,
        warmup: false,
        allow_write: true,
        ..Default::default()
    };
    let r = replayer::run_suite(&[&reads(n)], Some(&z.path), &opts, &mut NoObserver);
    fs::write(root.join("tracing_on"), "0").expect("tracing off");
    let r = r.expect("the replay");
    assert_eq!(
        r.target.io_path,
        Some(results::schema::IoPath::IoWq),
        "zram is expected to take no non-blocking I/O"
    );
    assert_eq!(r.traces[0].ios, n);
    let text = fs::read_to_string(root.join("trace")).expect("the instance's trace");
    text.lines()
        .filter(|l| l.contains("io_uring_queue_async_work:"))
        .map(|l| {
            let hex = l
                .split("flags 0x")
                .nth(1)
                .and_then(|rest| rest.split(',').next())
                .unwrap_or_else(|| panic!("no flags in {l:?}"));
            u64::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("flags in {l:?}: {e}"))
        })
        .collect()
}

#[test]
fn compressed_mode_asks_io_wq_for_more_workers_only_where_one_would_not_do() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    if !t
        .tracefs()
        .join("events/io_uring/io_uring_queue_async_work")
        .exists()
    {
        skip("the kernel has no io_uring_queue_async_work trace event");
        return;
    }
    let Some(z) = t.zram(32) else {
        return;
    };
    // One state directory for the whole test process: tests run in parallel
    // threads, and a value set per test changed it under another test.
    std::env::set_var(
        "TRACEMARK_STATE_DIR",
        crate::support::data_home().join("state"),
    );
    let forced = |flags: &[u64]| flags.iter().filter(|f| *f & REQ_F_FORCE_ASYNC != 0).count();

    // One CPU: compressed mode does not poll, so everything is forced.
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        let flags = punted_flags(&t, &z, TimingMode::Compressed, 4, 1000);
        assert_eq!(
            forced(&flags),
            1000,
            "requests without IOSQE_ASYNC on one CPU"
        );
        return;
    }
    // Every request goes to io-wq (one event each). Shallow: the first ones,
    // issued before any wait, as ordinary work; later ones too while polling
    // pays, which a loaded machine may change, so only those are certain.
    let shallow = punted_flags(&t, &z, TimingMode::Compressed, 4, 2000);
    assert_eq!(shallow.len(), 2000, "requests handed to io-wq at QD4");
    assert_eq!(
        forced(&shallow[..4]),
        0,
        "concurrent work before any wait at QD4"
    );

    // Deep: the first 16 as ordinary work, the rest of a full queue forced.
    let deep = punted_flags(&t, &z, TimingMode::Compressed, 32, 4000);
    assert_eq!(deep.len(), 4000, "requests handed to io-wq at QD32");
    assert_eq!(forced(&deep[..16]), 0, "the first 16 forced at QD32");
    let n = forced(&deep);
    assert!(
        (2000..=4000 - 16).contains(&n),
        "{n} of 4000 requests forced at QD32 (expected most, not the first 16)"
    );

    // Realtime: every one (io-wq runs one worker there either way).
    let realtime = punted_flags(&t, &z, TimingMode::Realtime, 4, 1000);
    assert_eq!(
        realtime.len(),
        1000,
        "requests handed to io-wq in realtime mode"
    );
    assert_eq!(forced(&realtime), 1000, "realtime requests not forced");
}
