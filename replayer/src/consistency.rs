//! The consistency test, after PCMark 8's extended storage test: how a drive's
//! score degrades under sustained random writes, where it settles, and how
//! it recovers when left idle.
//!
//! 1. Precondition: the whole target written sequentially with
//!    incompressible data (1 MiB writes), twice.
//! 2. Degradation rounds: random writes (random size 4 KiB–1 MiB, random
//!    aligned offset, queue depth `write_queue_depth`) for a period, then one
//!    pass of the suite; the period grows by `degrade_step` each round.
//! 3. Steady-state rounds: random writes for `steady`, then a suite pass.
//! 4. Recovery rounds: `idle` with no I/O, then a suite pass.
//!
//! Durations left unset scale with the target: the unit is the measured time
//! of one precondition pass (the time to write the whole target once), and
//! the defaults keep PCMark's proportions (10 min start, 1 min step, 25 min
//! steady, 5 min idle for a unit of 10 min): start = 1 unit, step = 0.1 unit,
//! steady = 2.5 units, idle = 0.5 unit, each clamped to [1 s, PCMark's value].
//!
//! All I/O goes through the replayer's engine (io_uring, O_DIRECT) and its
//! target rules: a block device needs `allow_write`; a mounted device is
//! refused.

use crate::engine::{Engine, Observer, PassKind, PassPlan};
use crate::mapping::TraceScan;
use crate::options::{MappingKind, ReplayOptions, TimingMode};
use crate::source::{RecordIter, TraceSource};
use crate::target::{Target, TargetRequest};
use crate::{ReplayError, TargetProblem};
use results::consistency::{ConsistencyResult, Durations, FillPass, Phase, Round, RoundTrace};
use results::schema::{PassMetrics, SuiteResult, TargetInfo, ToolInfo};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use trace_format::rng::WyRand;
use trace_format::{Bytes, Flags, IoRecord, Nanos, Op};

const MIB: u64 = 1 << 20;
/// Random writes per engine pass; passes repeat until the period ends.
const WRITES_PER_PASS: u64 = 2048;

/// What the user chooses.
#[derive(Debug, Clone)]
pub struct ConsistencyOptions {
    pub rounds_degrade: u32,
    pub rounds_steady: u32,
    pub rounds_recovery: u32,
    /// None: scaled to the target (see the module docs).
    pub degrade_start: Option<Duration>,
    pub degrade_step: Option<Duration>,
    pub steady: Option<Duration>,
    pub idle: Option<Duration>,
    /// In flight during the random writes and the precondition.
    pub write_queue_depth: u32,
    /// Size of a file target (created and filled when smaller).
    pub file_size: u64,
    /// How each suite pass is replayed (`allow_write`/`allow_buffered` also
    /// apply to the writes).
    pub suite: ReplayOptions,
}

impl Default for ConsistencyOptions {
    fn default() -> Self {
        ConsistencyOptions {
            rounds_degrade: 8,
            rounds_steady: 5,
            rounds_recovery: 5,
            degrade_start: None,
            degrade_step: None,
            steady: None,
            idle: None,
            write_queue_depth: 32,
            file_size: 256 * MIB,
            suite: ReplayOptions {
                mode: TimingMode::Compressed,
                passes: 1,
                warmup: false,
                precondition: crate::options::PreconditionPolicy::Skip,
                ..Default::default()
            },
        }
    }
}

/// Progress callbacks (phase and round starting).
pub trait ConsistencyObserver {
    fn step(&mut self, _what: &str) {}
}

/// Prints nothing.
pub struct Quiet;
impl ConsistencyObserver for Quiet {}

/// Synthetic writes: a sequential fill of the target, or random writes.
struct Writes {
    name: &'static str,
    size: u64,
    block: u64,
    /// None: sequential 1 MiB writes over the whole target.
    random_seed: Option<u64>,
}

impl TraceSource for Writes {
    fn name(&self) -> &str {
        self.name
    }

    fn records(&self) -> RecordIter<'_> {
        let rec = |i: u64, offset: u64, len: u64| {
            Ok(IoRecord {
                time: Nanos(i * 1000),
                op: Op::Write,
                offset: Bytes(offset),
                len: Bytes(len),
                flags: Flags::NONE,
                latency: None,
                stream: None,
                device: 0,
            })
        };
        match self.random_seed {
            None => {
                let size = self.size;
                let n = size.div_ceil(MIB);
                Box::new((0..n).map(move |i| {
                    let offset = i * MIB;
                    rec(i, offset, MIB.min(size - offset))
                }))
            }
            Some(seed) => {
                let mut rng = WyRand::new(seed);
                let (size, block) = (self.size, self.block.max(4096));
                let max_len = MIB.min(size / block * block).max(block);
                Box::new((0..WRITES_PER_PASS).map(move |i| {
                    // The first write has the largest size, so the engine's
                    // buffers fit every pass whatever the seed.
                    let len = if i == 0 {
                        max_len
                    } else {
                        let blocks = max_len / 4096;
                        (4096 * (1 + rng.next_u64() % blocks)).min(max_len)
                    };
                    let slots = (size - len) / block + 1;
                    let offset = (rng.next_u64() % slots) * block;
                    rec(i, offset, len)
                }))
            }
        }
    }
}

/// Stops a write pass at a deadline (or on Ctrl-C).
struct Deadline(Option<Instant>);

impl Observer for Deadline {
    fn should_stop(&self) -> bool {
        crate::interrupt::interrupted() || self.0.is_some_and(|d| Instant::now() >= d)
    }
}

/// Runs `f` again while the target is still held exclusively by the
/// previous step: the kernel tears an io_uring down (and with it the
/// registered file) asynchronously, so the device's exclusive claim can
/// outlive the close by a few milliseconds.
fn retry_busy<T>(mut f: impl FnMut() -> Result<T, ReplayError>) -> Result<T, ReplayError> {
    let give_up = Instant::now() + Duration::from_secs(5);
    loop {
        match f() {
            Err(ReplayError::TargetRefused {
                kind: TargetProblem::Busy,
                ..
            }) if Instant::now() < give_up => {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// Runs one engine pass of `source` on the target; returns its metrics.
fn write_pass(
    path: &Path,
    source: &Writes,
    opts: &ReplayOptions,
    period: Option<&mut WritePeriod>,
) -> Result<PassMetrics, ReplayError> {
    let setup_started = Instant::now();
    let scan = TraceScan::scan(source.name, source.records())?;
    let (targets, maps) = retry_busy(|| {
        crate::target::open_targets(
            Some(path),
            &[source as &dyn TraceSource],
            std::slice::from_ref(&scan),
            opts,
        )
    })?;
    let map = maps
        .first()
        .ok_or_else(|| ReplayError::Options("no address map for the writes".into()))?;
    let mut engine = Engine::new(
        &targets,
        opts.queue_depth,
        scan.max_data_len,
        opts.mode == crate::options::TimingMode::Compressed,
    )?;
    let plan = PassPlan {
        trace: source.name,
        source,
        scan: &scan,
        map,
        opts,
        kind: PassKind::Scored(1),
    };
    // The period's clock starts here, with the target open and the engine
    // ready, not before `open_targets`, which may wait seconds for a previous
    // step to release the device; for the same reason it stands still while
    // a later pass of the period sets up (on a loaded machine that wait put
    // half a second of no writing into a 0.25 s period).
    let deadline = period.map(|p| p.resume_after(setup_started.elapsed()));
    let outcome = engine.run_pass(&plan, &mut Deadline(deadline))?;
    Ok(outcome.metrics())
}

/// Random writes for `period`; returns (seconds, bytes).
fn random_writes(
    path: &Path,
    size: u64,
    block: u64,
    opts: &ReplayOptions,
    period: Duration,
    seed: &mut u64,
) -> Result<(f64, u64), ReplayError> {
    let mut window = WritePeriod {
        period,
        deadline: None,
    };
    let mut bytes = 0;
    while !window.is_over() && !crate::interrupt::interrupted() {
        *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let src = Writes {
            name: "random writes",
            size,
            block,
            random_seed: Some(*seed),
        };
        let m = write_pass(path, &src, opts, Some(&mut window))?;
        bytes += m.write_bytes;
    }
    Ok((window.elapsed().as_secs_f64(), bytes))
}

/// A period of writing whose clock starts when the first pass is ready to
/// issue (see [`write_pass`]).
struct WritePeriod {
    period: Duration,
    deadline: Option<Instant>,
}

impl WritePeriod {
    /// The end of the period: the clock starts on the first call; later
    /// calls move the end by `paused`, the time a pass took to set up.
    fn resume_after(&mut self, paused: Duration) -> Instant {
        match &mut self.deadline {
            Some(end) => {
                *end += paused;
                *end
            }
            None => *self.deadline.insert(Instant::now() + self.period),
        }
    }

    fn is_over(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Time since the clock started (zero if it never did).
    fn elapsed(&self) -> Duration {
        self.deadline
            .map(|d| (Instant::now() + self.period).saturating_duration_since(d))
            .unwrap_or_default()
    }
}

fn scaled(given: Option<Duration>, unit_s: f64, factor: f64, cap_s: f64) -> Duration {
    given.unwrap_or_else(|| Duration::from_secs_f64((unit_s * factor).clamp(1.0, cap_s)))
}

/// Runs the whole test on `target` with the suite `traces`.
pub fn run_consistency(
    traces: &[&dyn TraceSource],
    target: &Path,
    opts: &ConsistencyOptions,
    observer: &mut dyn ConsistencyObserver,
) -> Result<ConsistencyResult, ReplayError> {
    check_options(traces, opts)?;
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    crate::host_time::use_fine_timer_slack();
    check_file_fits(traces, target, opts)?;
    let (info, size) = probe_target(target, opts)?;
    let drive = Drive {
        path: target,
        size,
        block: info.logical_block_size,
        write_opts: write_options(opts),
    };
    let precondition = precondition(&drive, observer)?;
    let unit_s = precondition.last().map_or(1.0, |p| p.seconds);
    let durations = Durations {
        degrade_start_s: scaled(opts.degrade_start, unit_s, 1.0, 600.0).as_secs_f64(),
        degrade_step_s: scaled(opts.degrade_step, unit_s, 0.1, 60.0).as_secs_f64(),
        steady_s: scaled(opts.steady, unit_s, 2.5, 1500.0).as_secs_f64(),
        idle_s: scaled(opts.idle, unit_s, 0.5, 300.0).as_secs_f64(),
        unit_s,
    };
    let mut seed = started_unix_s ^ 0x5bd1_e995;
    let mut rounds = Vec::new();
    // What the suite passes changed (cpu_idle refused), once each.
    let mut settings_changed: Vec<results::options::SettingChange> = Vec::new();
    let mut interrupted = crate::interrupt::interrupted();
    for (phase, round) in round_plan(opts) {
        if interrupted {
            break;
        }
        let load = apply_load(&drive, phase, round, &durations, &mut seed, observer)?;
        if crate::interrupt::interrupted() {
            interrupted = true;
            break;
        }
        observer.step(&format!("{phase} round {round}: suite pass"));
        let r = retry_busy(|| {
            crate::suite::run_suite(traces, Some(target), &opts.suite, &mut crate::NoObserver)
        })?;
        interrupted |= r.interrupted;
        rounds.push(round_result(phase, round, load, &r));
        for c in &r.settings_changed {
            if !settings_changed.contains(c) {
                settings_changed.push(c.clone());
            }
        }
    }
    Ok(ConsistencyResult {
        schema_version: results::schema::SCHEMA_VERSION,
        tool: ToolInfo {
            name: "tracemark".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        host: crate::suite::host_info(),
        target: info,
        rounds_degrade: opts.rounds_degrade,
        rounds_steady: opts.rounds_steady,
        rounds_recovery: opts.rounds_recovery,
        durations,
        write_queue_depth: opts.write_queue_depth,
        suite_options: opts.suite.clone(),
        settings_changed,
        precondition,
        rounds,
        interrupted,
        started_unix_s,
    })
}

/// The suite options, a suite and the write queue depth, refused before any I/O.
fn check_options(
    traces: &[&dyn TraceSource],
    opts: &ConsistencyOptions,
) -> Result<(), ReplayError> {
    crate::plan::validate(&opts.suite)?;
    if traces.is_empty() {
        return Err(ReplayError::Options("no traces in the suite".into()));
    }
    if opts.write_queue_depth == 0 || opts.write_queue_depth > 4096 {
        return Err(ReplayError::Options(
            "--write-queue-depth must be between 1 and 4096".into(),
        ));
    }
    Ok(())
}

/// A file target is the size asked (`--size`, or larger when it already is):
/// the suite passes replay into it, never beyond. A suite that needs more
/// of it (with its mapping) is refused before anything is written, instead
/// of growing the file past the size the result records.
fn check_file_fits(
    traces: &[&dyn TraceSource],
    target: &Path,
    opts: &ConsistencyOptions,
) -> Result<(), ReplayError> {
    let existing = match std::fs::metadata(target) {
        Ok(m) if !m.is_file() => return Ok(()),
        Ok(m) => m.len(),
        Err(_) => 0,
    };
    let have = existing.max(opts.file_size) / 4096 * 4096;
    let mut need = 0;
    for t in traces {
        let scan = TraceScan::scan(t.name(), t.records())?;
        need = need.max(scan.required_bytes_for(opts.suite.mapping, |_| true));
    }
    let need = need.saturating_add(opts.suite.target_offset);
    if need > have {
        return Err(ReplayError::Options(format!(
            "{}: the suite's traces need {} MiB of the target (mapping {:?}), the file is {} MiB: \
             give --size {}M or more (the file is never grown past the size the result records)",
            target.display(),
            need.div_ceil(MIB),
            format!("{:?}", opts.suite.mapping).to_lowercase(),
            have / MIB,
            need.div_ceil(MIB)
        )));
    }
    Ok(())
}

/// The target's description and its usable size (whole 4 KiB), opened and
/// closed again: each step opens it as the replayer does (O_EXCL on devices).
fn probe_target(
    target: &Path,
    opts: &ConsistencyOptions,
) -> Result<(TargetInfo, u64), ReplayError> {
    let is_device = std::fs::metadata(target)
        .map(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_block_device()
        })
        .unwrap_or(false);
    let info = {
        let t = Target::open(&TargetRequest {
            path: Some(target.to_path_buf()),
            required_size: if is_device { 0 } else { opts.file_size },
            needs_write: true,
            allow_write: opts.suite.allow_write,
            allow_buffered: opts.suite.allow_buffered,
        })?;
        t.info()
    };
    let size = info.size_bytes / 4096 * 4096;
    if size < 2 * MIB {
        return Err(ReplayError::TargetRefused {
            path: target.to_path_buf(),
            kind: TargetProblem::TooSmall,
            reason: "the consistency test needs a target of at least 2 MiB".into(),
        });
    }
    Ok((info, size))
}

/// How the fills and random writes are replayed: compressed, identity
/// mapping, one pass, at the write queue depth.
fn write_options(opts: &ConsistencyOptions) -> ReplayOptions {
    ReplayOptions {
        mode: TimingMode::Compressed,
        queue_depth: opts.write_queue_depth,
        passes: 1,
        warmup: false,
        mapping: MappingKind::Identity,
        allow_write: opts.suite.allow_write,
        allow_buffered: opts.suite.allow_buffered,
        io_timeout: opts.suite.io_timeout,
        ..Default::default()
    }
}

/// The target as the writes see it.
struct Drive<'a> {
    path: &'a Path,
    /// Usable bytes (whole 4 KiB).
    size: u64,
    /// Logical block size: the alignment of the random writes.
    block: u64,
    write_opts: ReplayOptions,
}

/// Two sequential fills of the whole target (fewer when interrupted).
fn precondition(
    drive: &Drive<'_>,
    observer: &mut dyn ConsistencyObserver,
) -> Result<Vec<FillPass>, ReplayError> {
    let mut precondition = Vec::new();
    for pass in 1..=2 {
        observer.step(&format!("precondition: sequential fill {pass}/2"));
        let fill = Writes {
            name: "precondition",
            size: drive.size,
            block: drive.block,
            random_seed: None,
        };
        let start = Instant::now();
        let m = write_pass(drive.path, &fill, &drive.write_opts, None)?;
        let seconds = start.elapsed().as_secs_f64();
        precondition.push(FillPass {
            pass,
            seconds,
            bytes: m.write_bytes,
            mb_s: m.write_bytes as f64 / seconds.max(1e-9) / 1e6,
        });
        if crate::interrupt::interrupted() {
            break;
        }
    }
    Ok(precondition)
}

/// Every round in order: degradation, steady state, recovery.
fn round_plan(opts: &ConsistencyOptions) -> Vec<(Phase, u32)> {
    (1..=opts.rounds_degrade)
        .map(|r| (Phase::Degradation, r))
        .chain((1..=opts.rounds_steady).map(|r| (Phase::Steady, r)))
        .chain((1..=opts.rounds_recovery).map(|r| (Phase::Recovery, r)))
        .collect()
}

/// What a round did to the drive before its suite pass.
#[derive(Default)]
struct Load {
    write_s: f64,
    written: u64,
    idle_s: f64,
}

/// A round's random writes (degradation, steady state) or idle (recovery).
fn apply_load(
    drive: &Drive<'_>,
    phase: Phase,
    round: u32,
    durations: &Durations,
    seed: &mut u64,
    observer: &mut dyn ConsistencyObserver,
) -> Result<Load, ReplayError> {
    let mut load = Load::default();
    match phase {
        Phase::Degradation | Phase::Steady => {
            let secs = if phase == Phase::Degradation {
                durations.degrade_start_s + durations.degrade_step_s * (round - 1) as f64
            } else {
                durations.steady_s
            };
            observer.step(&format!(
                "{phase} round {round}: random writes for {secs:.1} s"
            ));
            (load.write_s, load.written) = random_writes(
                drive.path,
                drive.size,
                drive.block,
                &drive.write_opts,
                Duration::from_secs_f64(secs),
                seed,
            )?;
        }
        Phase::Recovery => {
            observer.step(&format!(
                "{phase} round {round}: idle for {:.1} s",
                durations.idle_s
            ));
            let end = Instant::now() + Duration::from_secs_f64(durations.idle_s);
            while Instant::now() < end && !crate::interrupt::interrupted() {
                std::thread::sleep(
                    end.saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(100)),
                );
            }
            load.idle_s = durations.idle_s;
        }
    }
    Ok(load)
}

/// A round's line of the result: its load and its suite pass's figures.
fn round_result(phase: Phase, round: u32, load: Load, r: &SuiteResult) -> Round {
    let suite = r.suite;
    Round {
        phase,
        round,
        write_s: load.write_s,
        written_bytes: load.written,
        write_mb_s: if load.write_s > 0.0 {
            load.written as f64 / load.write_s / 1e6
        } else {
            0.0
        },
        idle_s: load.idle_s,
        score: suite.map_or(0.0, |s| s.score),
        bandwidth_mb_s: suite.map_or(0.0, |s| s.bandwidth_mb_s),
        access_time_us: suite.map_or(0.0, |s| s.access_time_us),
        traces: r
            .traces
            .iter()
            .map(|t| RoundTrace {
                name: t.name.clone(),
                score: t.score,
                bandwidth_mb_s: t.bandwidth_mb_s,
                access_time_us: t.access_time_us,
            })
            .collect(),
    }
}

/// Writes the result file (pretty JSON).
pub fn write_json(result: &ConsistencyResult, path: &Path) -> Result<(), ReplayError> {
    let out_err = |source| ReplayError::Output {
        path: PathBuf::from(path),
        source,
    };
    let text =
        serde_json::to_string_pretty(result).map_err(|e| out_err(std::io::Error::other(e)))?;
    Ok(outfile::write(path, (text + "\n").as_bytes())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_period_stands_still_while_a_pass_sets_up() {
        let mut window = WritePeriod {
            period: Duration::from_secs(10),
            deadline: None,
        };
        assert!(window.elapsed().is_zero());
        // The first pass starts the clock; what it took to set up is not
        // part of the period.
        let first = window.resume_after(Duration::from_secs(3));
        let started = Instant::now();
        assert!(first >= started + Duration::from_secs(9));
        assert!(first <= started + Duration::from_secs(10));
        // A later pass that waited 2 s for the device moves the end by 2 s,
        // and the elapsed writing time leaves those 2 s out.
        let second = window.resume_after(Duration::from_secs(2));
        assert_eq!(second, first + Duration::from_secs(2));
        assert!(window.elapsed() < Duration::from_secs(1));
        assert!(!window.is_over());
    }

    #[test]
    fn random_writes_stay_inside_and_are_aligned() {
        let w = Writes {
            name: "w",
            size: 64 * MIB,
            block: 4096,
            random_seed: Some(7),
        };
        let recs: Vec<IoRecord> = w.records().map(|r| r.unwrap()).collect();
        assert_eq!(recs.len() as u64, WRITES_PER_PASS);
        assert_eq!(recs[0].len.0, MIB);
        let mut sizes = std::collections::BTreeSet::new();
        for r in &recs {
            assert_eq!(r.offset.0 % 4096, 0);
            assert_eq!(r.len.0 % 4096, 0);
            assert!(r.len.0 >= 4096 && r.len.0 <= MIB);
            assert!(r.offset.0 + r.len.0 <= 64 * MIB);
            sizes.insert(r.len.0);
        }
        assert!(sizes.len() > 100, "sizes vary: {}", sizes.len());
    }

    #[test]
    fn fill_covers_the_target_once() {
        let w = Writes {
            name: "f",
            size: 5 * MIB + 8192,
            block: 4096,
            random_seed: None,
        };
        let recs: Vec<IoRecord> = w.records().map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), 6);
        assert_eq!(recs.iter().map(|r| r.len.0).sum::<u64>(), 5 * MIB + 8192);
        assert!(recs
            .windows(2)
            .all(|p| p[0].offset.0 + p[0].len.0 == p[1].offset.0));
    }

    #[test]
    fn defaults_scale_with_the_fill_time_within_pcmark_bounds() {
        assert_eq!(scaled(None, 0.05, 1.0, 600.0), Duration::from_secs(1));
        assert_eq!(scaled(None, 100.0, 2.5, 1500.0), Duration::from_secs(250));
        assert_eq!(scaled(None, 10_000.0, 1.0, 600.0), Duration::from_secs(600));
        assert_eq!(
            scaled(Some(Duration::from_millis(30)), 100.0, 1.0, 600.0),
            Duration::from_millis(30)
        );
    }
}
