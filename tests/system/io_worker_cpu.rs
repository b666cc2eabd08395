//! `--io-worker-cpu`: on zram (every request on io-wq), realtime mode holds
//! the issuing thread and its io-wq workers on one CPU during a pass and puts
//! the thread's CPU set back afterwards; `any` and compressed mode leave
//! both to the scheduler.

use crate::support::devices::Zram;
use crate::support::harness::SystemTest;
use replayer::options::IoWorkerCpu;
use replayer::{IoEvent, MemorySource, Observer, ReplayOptions, TimingMode};
use std::collections::BTreeSet;
use trace_format::{Bytes, Flags, IoRecord, Nanos, Op};

/// 2000 4 KiB reads 50 µs apart over 16 MiB, some overlapping.
fn reads() -> MemorySource {
    let recs = (0..2000u64)
        .map(|i| IoRecord {
            time: Nanos(i * 50_000),
            op: Op::Read,
            offset: Bytes((i * 7919 % 4096) * 4096),
            len: Bytes(4096),
            flags: Flags::NONE,
            latency: Some(Nanos(80_000)),
            stream: None,
            device: 0,
        })
        .collect();
    MemorySource::new("reads", recs)
}

/// CPUs a thread of this process may run on, from /proc.
fn allowed(task: &str) -> BTreeSet<usize> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{task}/status")).unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    let mut cpus = BTreeSet::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap());
    }
    cpus
}

/// Seen from the issuing thread while I/O completes: its own CPUs and those
/// of its io-wq workers (threads named `iou-wrk-<its tid>`).
#[derive(Default)]
struct Placement {
    issuer: Option<BTreeSet<usize>>,
    workers: Vec<BTreeSet<usize>>,
}

impl Observer for Placement {
    fn wants_io_events(&self) -> bool {
        true
    }
    fn io_completed(&mut self, e: &IoEvent) {
        if e.index < 1000 || self.issuer.is_some() {
            return; // sample once, when the workers are running
        }
        // SAFETY: no arguments.
        let tid = unsafe { libc::gettid() }.to_string();
        self.issuer = Some(allowed(&tid));
        let name = format!("iou-wrk-{tid}");
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let task = task.file_name().to_string_lossy().into_owned();
            let comm = std::fs::read_to_string(format!("/proc/self/task/{task}/comm"));
            if comm.is_ok_and(|c| c.trim() == name) {
                self.workers.push(allowed(&task));
            }
        }
    }
}

fn replay(z: &Zram, mode: TimingMode, placement: IoWorkerCpu) -> Placement {
    let opts = ReplayOptions {
        mode,
        queue_depth: 4,
        passes: 1,
        warmup: false,
        allow_write: true,
        io_worker_cpu: placement,
        ..Default::default()
    };
    let mut seen = Placement::default();
    let r = replayer::run_suite(&[&reads()], Some(&z.path), &opts, &mut seen).unwrap();
    assert_eq!(r.options.io_worker_cpu, placement);
    assert_eq!(
        r.target.io_path,
        Some(results::schema::IoPath::IoWq),
        "zram is expected to take no non-blocking I/O"
    );
    seen
}

#[test]
fn realtime_holds_the_issuer_and_its_io_workers_on_one_cpu() {
    let Some(t) = SystemTest::start(&[]) else {
        return;
    };
    let Some(z) = t.zram(32) else {
        return;
    };
    // One state directory for the whole test process: tests run in parallel
    // threads, and a value set per test changed it under another test.
    std::env::set_var(
        "TRACEMARK_STATE_DIR",
        crate::support::data_home().join("state"),
    );
    // SAFETY: no arguments.
    let tid = unsafe { libc::gettid() }.to_string();
    let before = allowed(&tid);

    let pinned = replay(&z, TimingMode::Realtime, IoWorkerCpu::Issuer);
    let issuer = pinned.issuer.expect("no I/O completed");
    assert_eq!(issuer.len(), 1, "issuing thread on CPUs {issuer:?}");
    assert!(issuer.is_subset(&before));
    assert!(!pinned.workers.is_empty(), "no io-wq worker seen");
    for w in &pinned.workers {
        assert_eq!(w, &issuer, "an io-wq worker on CPUs {w:?}");
    }
    assert_eq!(allowed(&tid), before, "the CPU set is not put back");

    // Left to the scheduler: the thread keeps every CPU it had.
    for (mode, placement) in [
        (TimingMode::Realtime, IoWorkerCpu::Any),
        (TimingMode::Compressed, IoWorkerCpu::Issuer),
    ] {
        let free = replay(&z, mode, placement);
        assert_eq!(
            free.issuer.as_ref(),
            Some(&before),
            "{mode:?} {placement:?}"
        );
    }
}
