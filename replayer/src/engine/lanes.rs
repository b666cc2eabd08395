//! Replay on several rings, one issuing thread each ("lanes"), keeping every
//! rule of the one-ring engine.
//!
//! When a trace's devices go to several targets, each target gets its own
//! lane (`--threads 1` keeps one ring for all); in compressed mode
//! `--threads N` also splits one device's stream
//! into chunks of [`CHUNK`] records dealt round-robin to N lanes. Every lane
//! reads the whole trace (its own decoder thread), so every lane knows every
//! record's index and virtual time, and issues only its own records. The
//! rules hold across lanes through a shared [`LaneBoard`]:
//! - **order**: a lane issues record *i* only when every other lane has
//!   issued all its records before *i* (each lane publishes the index of its
//!   first record not yet issued), so records are issued in trace order, as
//!   on one ring;
//! - **dependencies**: each lane publishes the earliest original completion
//!   among its I/Os in flight; record *i* waits until no lane has one at or
//!   before *i*'s original issue (with the order rule, exactly "every I/O
//!   that had completed before it was issued");
//! - **queue depth**: one count of I/Os in flight over all lanes.
//!
//! Lanes share one schedule start; the closed-loop shift is per lane and
//! spreads through the waits above. Busy time is the union over lanes. The
//! observer stays on the calling thread: lanes hand it progress, per-I/O
//! events (when wanted) and the stop request through the board.

use super::{Engine, IoEvent, Observer, PassPlan};
use crate::host_time::now_ns;
use crate::metrics::PassOutcome;
use crate::ReplayError;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::Mutex;

/// Records per chunk when one device's stream is split across lanes.
pub(super) const CHUNK: u64 = 64;
/// Lanes start this long after they are set up, on one common schedule.
const START_DELAY_NS: u64 = 2_000_000;

/// How records are dealt to lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LaneSplit {
    /// Lane = the record's target.
    ByTarget,
    /// Chunks of `CHUNK` records, round-robin over the lanes.
    Chunks,
}

/// The state lanes share.
pub(super) struct LaneBoard {
    split: LaneSplit,
    /// Per lane: index of its first record not yet issued (a lower bound;
    /// `u64::MAX` when it has no more).
    next_index: Vec<AtomicU64>,
    /// Per lane: earliest original completion in flight (`u64::MAX`: none).
    min_completion: Vec<AtomicU64>,
    inflight: AtomicU32,
    queue_depth: u32,
    pub stop: AtomicBool,
    completed: AtomicU64,
    busy: Mutex<BusyUnion>,
    /// The common schedule start.
    pub start_ns: u64,
}

/// Time with at least one lane busy (a read or write in flight).
#[derive(Debug, Default)]
struct BusyUnion {
    busy_lanes: u32,
    since_ns: u64,
    total_ns: u64,
}

impl LaneBoard {
    pub fn new(lanes: usize, queue_depth: u32, split: LaneSplit) -> LaneBoard {
        LaneBoard {
            split,
            next_index: (0..lanes).map(|_| AtomicU64::new(0)).collect(),
            min_completion: (0..lanes).map(|_| AtomicU64::new(u64::MAX)).collect(),
            inflight: AtomicU32::new(0),
            queue_depth,
            stop: AtomicBool::new(false),
            completed: AtomicU64::new(0),
            busy: Mutex::new(BusyUnion::default()),
            start_ns: now_ns() + START_DELAY_NS,
        }
    }

    pub fn lanes(&self) -> usize {
        self.next_index.len()
    }

    /// The lane that issues record `index`, which goes to `target`.
    pub fn lane_of(&self, index: u64, target: u32) -> usize {
        match self.split {
            LaneSplit::ByTarget => target as usize % self.lanes(),
            LaneSplit::Chunks => ((index / CHUNK) % self.lanes() as u64) as usize,
        }
    }

    /// Lane `me` has issued everything before `index` (its next record).
    pub fn publish_next(&self, me: usize, index: u64) {
        if let Some(n) = self.next_index.get(me) {
            n.store(index, SeqCst);
        }
    }

    pub fn publish_min_completion(&self, me: usize, completion_ns: u64) {
        if let Some(c) = self.min_completion.get(me) {
            c.store(completion_ns, SeqCst);
        }
    }

    /// Whether lane `me` may issue a record (original issue `issue_ns`) as
    /// far as the other lanes are concerned: they have issued all their
    /// records up to `wait_past`, and (with dependencies) none of theirs in
    /// flight had an original completion at or before `issue_ns`.
    pub fn others_allow(
        &self,
        me: usize,
        wait_past: Option<u64>,
        issue_ns: u64,
        dependencies: bool,
    ) -> bool {
        let ordered = wait_past.is_none_or(|w| {
            self.next_index
                .iter()
                .enumerate()
                .all(|(k, n)| k == me || n.load(SeqCst) > w)
        });
        ordered
            && (!dependencies
                || self
                    .min_completion
                    .iter()
                    .enumerate()
                    .all(|(k, c)| k == me || c.load(SeqCst) > issue_ns))
    }

    /// Takes one of the queue depth's slots, if one is free.
    pub fn try_acquire(&self) -> bool {
        self.inflight
            .fetch_update(SeqCst, SeqCst, |n| (n < self.queue_depth).then_some(n + 1))
            .is_ok()
    }

    pub fn release(&self) {
        self.inflight.fetch_sub(1, SeqCst);
    }

    /// A lane went from idle to busy (`true`) or back, at `now`.
    pub fn busy_edge(&self, busy: bool, now: u64) {
        let Ok(mut b) = self.busy.lock() else { return };
        if busy {
            if b.busy_lanes == 0 {
                b.since_ns = now;
            }
            b.busy_lanes += 1;
        } else {
            b.busy_lanes = b.busy_lanes.saturating_sub(1);
            if b.busy_lanes == 0 {
                b.total_ns += now.saturating_sub(b.since_ns);
            }
        }
    }

    fn busy_ns(&self) -> u64 {
        self.busy.lock().map_or(0, |b| b.total_ns)
    }
}

/// Which records of other lanes a lane's next record must wait for. With
/// original completions, a record depends only on the records completed
/// before its issue: the lane keeps the other lanes' records whose original
/// completion is still ahead (a heap, as large as the original's
/// concurrency), and the latest index among those completed so far is how
/// far the other lanes must have issued. So lanes run apart except where the
/// trace ties them. (Without completions, the order rule ties every record to
/// the one before it.)
#[derive(Debug, Default)]
pub(super) struct Predecessors {
    ahead: BinaryHeap<Reverse<(u64, u64)>>,
    latest: Option<u64>,
}

impl Predecessors {
    /// Takes the next record in trace order (every lane's).
    pub fn advance(&mut self, issue_ns: u64, index: u64, completion_ns: Option<u64>, mine: bool) {
        while let Some(&Reverse((c, i))) = self.ahead.peek() {
            if c > issue_ns {
                break;
            }
            self.ahead.pop();
            self.latest = Some(self.latest.map_or(i, |l| l.max(i)));
        }
        if let (false, Some(c)) = (mine, completion_ns) {
            self.ahead.push(Reverse((c, index)));
        }
    }

    /// The latest other-lane record completed (originally) by now.
    pub fn latest(&self) -> Option<u64> {
        self.latest
    }
}

/// A lane's view of the observer: counts progress, forwards events, and
/// stops when the board says so.
struct LaneObserver<'b> {
    board: &'b LaneBoard,
    events: Option<mpsc::Sender<IoEvent>>,
    last_progress: u64,
}

impl Observer for LaneObserver<'_> {
    fn progress(&mut self, completed: u64) {
        self.board
            .completed
            .fetch_add(completed - self.last_progress, SeqCst);
        self.last_progress = completed;
    }
    fn wants_io_events(&self) -> bool {
        self.events.is_some()
    }
    fn io_completed(&mut self, event: &IoEvent) {
        if let Some(tx) = &self.events {
            let _ = tx.send(*event);
        }
    }
    fn should_stop(&self) -> bool {
        self.board.stop.load(SeqCst)
    }
}

impl<'t> Engine<'t> {
    /// How many lanes a pass uses: `--threads 1`: one. Otherwise one per
    /// target when the trace's devices go to several, else `--threads N`
    /// (N > 1) in compressed mode, else one.
    pub(super) fn lane_plan(&self, plan: &PassPlan<'_>) -> (usize, LaneSplit) {
        let mut used: Vec<u32> = plan
            .scan
            .device_max_end
            .keys()
            .map(|&d| plan.map.target_of(d))
            .collect();
        used.sort_unstable();
        used.dedup();
        let threads = plan.opts.threads as usize;
        if threads == 1 {
            return (1, LaneSplit::Chunks);
        }
        // Automatic: a ring per target only where each ring (an issuing and
        // a decoding thread) has two CPUs; on 2 CPUs two rings measured
        // 0.08-0.34x one ring (bench/README.md, replay_scaling.sh).
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let rings = self.targets.len();
        if threads == 0 && 2 * rings > cpus {
            return (1, LaneSplit::Chunks);
        }
        if used.len() > 1 {
            return (self.targets.len(), LaneSplit::ByTarget);
        }
        if threads > 1 && plan.opts.mode == crate::options::TimingMode::Compressed {
            return (threads, LaneSplit::Chunks);
        }
        (1, LaneSplit::Chunks)
    }

    /// Runs a pass on `lanes` rings, one thread each, and merges their
    /// passes. Each ring is made on its own thread for the pass: a ring set
    /// up for a single issuer takes submissions only from the thread that
    /// made it.
    pub(super) fn run_lanes(
        &mut self,
        plan: &PassPlan<'_>,
        lanes: usize,
        split: LaneSplit,
        observer: &mut dyn Observer,
    ) -> Result<PassOutcome, ReplayError> {
        let (targets, queue_depth, slot_len, cooperative) = (
            self.targets,
            self.queue_depth,
            self.slot_len,
            self.cooperative,
        );
        let mut board = LaneBoard::new(lanes, self.queue_depth, split);
        if let Some(start) = super::agreed_start_ns(plan.opts) {
            board.start_ns = start;
        }
        let wants_events = observer.wants_io_events();
        let board = &board;
        let result = std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel::<IoEvent>();
            let handles: Vec<_> = (0..lanes)
                .map(|me| {
                    let events = wants_events.then(|| tx.clone());
                    scope.spawn(move || {
                        let mut obs = LaneObserver {
                            board,
                            events,
                            last_progress: 0,
                        };
                        let pass = Engine::new(targets, queue_depth, slot_len, cooperative)
                            .and_then(|mut engine| {
                                engine.run_stream(plan, Some((board, me)), &mut obs)
                            });
                        board.publish_next(me, u64::MAX);
                        board.publish_min_completion(me, u64::MAX);
                        if pass.is_err() {
                            board.stop.store(true, SeqCst);
                        }
                        pass
                    })
                })
                .collect();
            drop(tx);
            let mut reported = 0;
            loop {
                let finished = handles.iter().all(|h| h.is_finished());
                while let Ok(e) = rx.try_recv() {
                    observer.io_completed(&e);
                }
                let done = board.completed.load(SeqCst);
                if done >= reported + super::PROGRESS_EVERY {
                    observer.progress(done);
                    reported = done;
                }
                if observer.should_stop() {
                    board.stop.store(true, SeqCst);
                }
                if finished {
                    break;
                }
                match rx.recv_timeout(std::time::Duration::from_millis(1)) {
                    Ok(e) => observer.io_completed(&e),
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        std::thread::sleep(std::time::Duration::from_millis(1))
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
            }
            let mut passes = Vec::with_capacity(lanes);
            for h in handles {
                passes.push(h.join().map_err(|_| ReplayError::Ring {
                    what: "a replay thread".into(),
                    source: std::io::Error::other("panicked"),
                })??);
            }
            let mut merged = passes.remove(0);
            for p in passes {
                merged.absorb(p);
            }
            merged.busy_ns = board.busy_ns();
            Ok(merged.finish())
        });
        result
    }
}

#[cfg(test)]
mod tests {
    use crate::options::{ReplayOptions, TimingMode};
    use crate::{run_suite, IoEvent, IoLog, MemorySource};
    use trace_format::{Bytes, Flags, IoRecord, Nanos, Op};

    /// `n` records, 10 µs apart, with original latencies of 5-300 µs (so
    /// each I/O depends on a varying set of earlier ones), on `devices`
    /// devices in runs of 1-3 records.
    fn trace(n: u64, devices: u16, latencies: bool) -> Vec<IoRecord> {
        let mut rng = trace_format::rng::WyRand::new(0x9e37_79b9_7f4a_7c15);
        let mut next = move || rng.next_u64();
        let mut device = 0u16;
        (0..n)
            .map(|i| {
                if next() % 3 == 0 {
                    device = (device + 1) % devices;
                }
                IoRecord {
                    time: Nanos::from_micros(i * 10),
                    op: if next() % 10 < 7 { Op::Read } else { Op::Write },
                    offset: Bytes((next() % 1024) * 4096),
                    len: Bytes(4096),
                    flags: Flags::NONE,
                    latency: latencies.then(|| Nanos::from_micros(5 + next() % 300)),
                    stream: None,
                    device,
                }
            })
            .collect()
    }

    fn replay(recs: &[IoRecord], targets: usize, opts: ReplayOptions) -> Vec<IoEvent> {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = (0..targets)
            .map(|i| dir.path().join(format!("target{i}.bin")))
            .collect();
        let opts = ReplayOptions {
            passes: 1,
            warmup: false,
            extra_targets: paths[1..].to_vec(),
            ..opts
        };
        let src = MemorySource::new("lanes", recs.to_vec());
        let mut log = IoLog::default();
        let r = run_suite(&[&src], Some(&paths[0]), &opts, &mut log).unwrap();
        assert_eq!(r.traces[0].ios, recs.len() as u64);
        let mut events = log.0;
        events.sort_by_key(|e| e.index);
        let indices: Vec<u64> = events.iter().map(|e| e.index).collect();
        assert_eq!(
            indices,
            (0..recs.len() as u64).collect::<Vec<_>>(),
            "each once"
        );
        events
    }

    /// No I/O was submitted before every I/O that had completed before its
    /// original issue completed in the replay.
    fn assert_dependencies_hold(recs: &[IoRecord], events: &[IoEvent]) {
        for (i, r) in recs.iter().enumerate() {
            for (j, p) in recs[..i].iter().enumerate() {
                if p.completion().is_some_and(|c| c <= r.time) {
                    assert!(
                        events[i].submit_ns >= events[j].complete_ns,
                        "I/O {i} submitted at {} ns before its predecessor {j} completed at {} ns",
                        events[i].submit_ns,
                        events[j].complete_ns
                    );
                }
            }
        }
    }

    /// At no time more than `qd` I/Os in flight, over all rings.
    fn assert_queue_depth_holds(events: &[IoEvent], qd: usize) {
        let mut edges: Vec<(u64, i32)> = events
            .iter()
            .flat_map(|e| [(e.submit_ns, 1), (e.complete_ns, -1)])
            .collect();
        edges.sort(); // completions (-1) before submissions at the same time
        let mut n = 0;
        for (_, d) in edges {
            n += d;
            assert!(n as usize <= qd, "{n} I/Os in flight, queue depth {qd}");
        }
    }

    #[test]
    fn each_device_replays_on_its_own_ring_and_every_dependency_holds() {
        let recs = trace(1_500, 2, true);
        for mode in [TimingMode::Compressed, TimingMode::Realtime] {
            for qd in [4, 32] {
                let opts = ReplayOptions {
                    mode,
                    queue_depth: qd,
                    threads: 2,
                    ..ReplayOptions::default()
                };
                let events = replay(&recs, 2, opts);
                for (r, e) in recs.iter().zip(&events) {
                    assert_eq!(e.target, r.device as u32);
                    assert_eq!(
                        e.ring, r.device as u32,
                        "record {} on ring {}",
                        e.index, e.ring
                    );
                }
                assert_dependencies_hold(&recs, &events);
                assert_queue_depth_holds(&events, qd as usize);
            }
        }
    }

    #[test]
    fn without_completions_several_rings_keep_the_queue_depth() {
        let recs = trace(1_000, 3, false);
        let events = replay(
            &recs,
            3,
            ReplayOptions {
                mode: TimingMode::Compressed,
                queue_depth: 6,
                threads: 3,
                ..ReplayOptions::default()
            },
        );
        assert!(events.iter().all(|e| e.ring == e.target));
        assert_queue_depth_holds(&events, 6);
    }

    #[test]
    fn threads_split_one_device_and_every_dependency_holds() {
        let recs = trace(1_500, 1, true);
        let events = replay(
            &recs,
            1,
            ReplayOptions {
                mode: TimingMode::Compressed,
                queue_depth: 16,
                threads: 2,
                ..ReplayOptions::default()
            },
        );
        for e in &events {
            assert_eq!(e.ring as u64, (e.index / super::CHUNK) % 2);
        }
        assert_dependencies_hold(&recs, &events);
        assert_queue_depth_holds(&events, 16);
    }

    #[test]
    fn predecessors_are_the_other_lanes_records_completed_before_an_issue() {
        let mut p = super::Predecessors::default();
        p.advance(0, 0, Some(50), false); // other lane, completes at 50
        p.advance(10, 1, Some(15), true); // mine: never a predecessor here
        p.advance(20, 2, Some(100), false);
        assert_eq!(p.latest(), None, "nothing of the others completed by 20");
        p.advance(50, 3, Some(60), true);
        assert_eq!(p.latest(), Some(0), "record 0 completed at 50");
        p.advance(99, 4, Some(120), true);
        assert_eq!(p.latest(), Some(0));
        p.advance(100, 5, Some(130), true);
        assert_eq!(p.latest(), Some(2));
    }

    #[test]
    fn threads_1_keeps_every_target_on_one_ring() {
        let recs = trace(400, 2, true);
        let events = replay(
            &recs,
            2,
            ReplayOptions {
                mode: TimingMode::Compressed,
                threads: 1,
                ..ReplayOptions::default()
            },
        );
        assert!(events.iter().all(|e| e.ring == 0));
        assert!(events.iter().any(|e| e.target == 1));
        assert_dependencies_hold(&recs, &events);
    }

    #[test]
    fn realtime_never_splits_one_device() {
        let recs = trace(300, 1, true);
        let events = replay(
            &recs,
            1,
            ReplayOptions {
                mode: TimingMode::Realtime,
                threads: 2,
                ..ReplayOptions::default()
            },
        );
        assert!(events.iter().all(|e| e.ring == 0));
    }
}
