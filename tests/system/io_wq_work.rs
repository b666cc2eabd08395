//! On a target without non-blocking I/O (zram) every request goes to io-wq
//! as "concurrent" work (IOSQE_ASYNC), in both modes and at any depth: io-wq
//! then starts workers without waiting for one to sleep, which the deep
//! compressed replays need (engine/ring.rs, `share_punted_work`). Seen by
//! the kernel: the `io_uring_queue_async_work` event carries each punted
//! request's flags.

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
fn every_request_to_io_wq_is_concurrent_work() {
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
    std::env::set_var("TRACEMARK_STATE_DIR", t.dir());
    let forced = |flags: &[u64]| flags.iter().filter(|f| *f & REQ_F_FORCE_ASYNC != 0).count();

    // Every request goes to io-wq (one event each), every one forced.
    for (mode, queue_depth, n) in [
        (TimingMode::Compressed, 4, 2000),
        (TimingMode::Compressed, 32, 4000),
        (TimingMode::Realtime, 4, 1000),
    ] {
        let flags = punted_flags(&t, &z, mode, queue_depth, n);
        assert_eq!(
            flags.len() as u64,
            n,
            "{mode:?} QD{queue_depth}: requests on io-wq"
        );
        assert_eq!(
            forced(&flags) as u64,
            n,
            "{mode:?} QD{queue_depth}: requests without IOSQE_ASYNC"
        );
    }
}
