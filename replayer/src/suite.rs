//! Running a set of traces against one target: the function behind both
//! `tracemark replay` and `tracemark suite`.

use crate::cpu_idle::CpuIdleHold;
use crate::engine::{Engine, IoEvent, Observer, PassKind, PassPlan};
use crate::mapping::TraceScan;
use crate::metrics::{trace_result, PassOutcome, TimelineBuilder};
use crate::options::{PreconditionPolicy, ReplayOptions, Setting, SettingChange};
use crate::source::TraceSource;
use crate::ReplayError;
use results::schema::{
    Dependencies, HostInfo, PassMetrics, Sampled, SuiteResult, SuiteSummary, ToolInfo,
    TraceIdentity,
};
use std::path::Path;
use trace_format::RecordChecksum;

/// An observer that does nothing (stops on SIGINT).
pub struct NoObserver;

impl Observer for NoObserver {}

/// An observer that keeps every completed I/O, in completion order, and never
/// asks to stop: for checking a replay from outside (tests, per-I/O logs of
/// short traces; it grows with the trace).
#[derive(Debug, Default)]
pub struct IoLog(pub Vec<IoEvent>);

impl Observer for IoLog {
    fn wants_io_events(&self) -> bool {
        true
    }
    fn io_completed(&mut self, e: &IoEvent) {
        self.0.push(*e);
    }
    fn should_stop(&self) -> bool {
        false
    }
}

/// Replays every trace on `target` (the scratch file in the current directory
/// when `None`): one unscored warm-up pass (unless disabled) and
/// `opts.passes` scored passes each, then the suite figures.
///
/// When the observer asks to stop (Ctrl-C), the pass in progress drains, the
/// remaining passes and traces are left out, and the result says
/// `interrupted`.
pub fn run_suite(
    traces: &[&dyn TraceSource],
    target: Option<&Path>,
    opts: &ReplayOptions,
    observer: &mut dyn Observer,
) -> Result<SuiteResult, ReplayError> {
    crate::plan::validate(opts)?;
    if traces.is_empty() {
        return Err(ReplayError::Options("no traces to replay".into()));
    }
    crate::host_time::use_fine_timer_slack();
    // Refused (no root): the OS's idle policy, and the result says so (a
    // plan finds it first and the command line warns before the run).
    let (idle_hold, idle_refused) = match CpuIdleHold::acquire(opts.cpu_idle) {
        Ok(hold) => (hold, None),
        Err(e) => (CpuIdleHold::none(), Some(e)),
    };
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (scans, identities) = scan_traces(traces)?;
    let (targets, maps) = crate::target::open_targets(target, traces, &scans, opts)?;
    let (precondition, reads_found) = precondition(traces, &targets, &maps, opts, observer)?;
    // A stop signal before the first pass (while preconditioning, mostly)
    // ends the run there: nothing is replayed on a target only partly
    // prepared, and the result says so.
    if crate::interrupt::interrupted() {
        return Ok(stopped_before_replay(
            &targets,
            opts,
            precondition,
            started_unix_s,
            traces.len(),
        ));
    }
    let max_len = scans.iter().map(|s| s.max_data_len).max().unwrap_or(0);
    let mut engine = Engine::new(
        &targets,
        opts.queue_depth,
        max_len,
        opts.mode == crate::options::TimingMode::Compressed,
    )?;

    let mut results = Vec::with_capacity(traces.len());
    let mut interrupted = false;
    let mut observer = TimelineObserver {
        inner: observer,
        builder: TimelineBuilder::default(),
        last: None,
    };
    // The trace the run stopped in, and why (a stop signal, the I/O timeout).
    let mut stopped: Option<(String, String)> = None;
    for ((((t, scan), map), identity), found) in traces
        .iter()
        .zip(&scans)
        .zip(&maps)
        .zip(identities)
        .zip(reads_found)
    {
        if interrupted || stopped.is_some() {
            break;
        }
        let plan = |kind| PassPlan {
            trace: t.name(),
            source: *t,
            scan,
            map,
            opts,
            kind,
        };
        let passes = replay_trace(&mut engine, &plan, opts, &mut observer)?;
        interrupted |= passes.interrupted;
        if let Some(why) = passes.stopped_because(opts) {
            stopped = Some((t.name().to_string(), why));
        }
        let mut result = passes.result(*t, scan, opts);
        result.trace_id = Some(identity);
        note_calibration(&mut result, *t);
        result.reads_found = (found.blocks > 0).then_some(found);
        result.timeline = observer.last.take();
        results.push(result);
    }
    let mut result = suite_result(&targets, opts, results, interrupted, started_unix_s);
    if let Some(e) = idle_refused {
        result.options.cpu_idle = idle_hold.in_effect();
        result.settings_changed.push(SettingChange {
            setting: Setting::CpuIdle,
            requested: Some(opts.cpu_idle.name().into()),
            effective: idle_hold.in_effect().name().into(),
            why: format!("{} refused ({e})", crate::cpu_idle::CPU_LATENCY_FILE),
        });
    }
    drop(idle_hold);
    result.precondition = precondition;
    result.mark_validity();
    if let Some((trace, why)) = stopped {
        results::validity::mark_stopped(&mut result, &trace, &why, traces.len());
    }
    Ok(result)
}

/// Names in a calibrated prediction the settings of the replays its trace
/// was calibrated from, where the trace records them.
fn note_calibration(result: &mut results::schema::TraceResult, t: &dyn TraceSource) {
    let (Some(task), Some(c)) = (result.task.as_mut(), t.calibration()) else {
        return;
    };
    // Only a calibrated prediction is set against those replays.
    if task.uncalibrated.is_some() {
        task.calibrated_at = Some(c.settings.into_iter().collect());
    }
}

/// Writes what the policy asks before scoring (see `crate::precondition`),
/// then reads the block each trace's sampled reads start in: per trace, how
/// many found data (what a preconditioning not done, on a read-only or
/// unwritable target, left unwritten). Nothing is sampled at `skip`.
fn precondition(
    traces: &[&dyn TraceSource],
    targets: &crate::target::Targets,
    maps: &[crate::mapping::AddressMap],
    opts: &ReplayOptions,
    observer: &mut dyn Observer,
) -> Result<(Option<results::schema::Precondition>, Vec<Sampled>), ReplayError> {
    let plan = crate::precondition::read_plan(traces, maps, targets.len(), opts)?;
    let regions = match opts.precondition {
        PreconditionPolicy::ReadRegions => plan.regions,
        _ => Vec::new(),
    };
    let record = crate::precondition::precondition(targets, &regions, opts, &mut |w, t| {
        observer.precondition_progress(w, t)
    })?;
    // `skip` leaves the target to the replay's own I/O: nothing is read.
    let found = match opts.precondition {
        PreconditionPolicy::Skip => vec![Sampled::default(); traces.len()],
        _ => plan
            .samples
            .iter()
            .map(|reads| crate::precondition::reads_found(targets, reads))
            .collect(),
    };
    Ok((record, found))
}

/// First pass over every trace: extents, sizes, what it needs, and its
/// identity (counts and a checksum of the records).
fn scan_traces(
    traces: &[&dyn TraceSource],
) -> Result<(Vec<TraceScan>, Vec<TraceIdentity>), ReplayError> {
    let mut scans = Vec::with_capacity(traces.len());
    let mut identities = Vec::with_capacity(traces.len());
    for t in traces {
        let mut sum = RecordChecksum::default();
        let scan = TraceScan::scan(
            t.name(),
            t.records().inspect(|r| {
                if let Ok(r) = r {
                    sum.add(r)
                }
            }),
        )?;
        identities.push(TraceIdentity {
            records: scan.summary.ios,
            read_bytes: scan.summary.read_bytes,
            write_bytes: scan.summary.write_bytes,
            duration_ns: scan.original_duration.0,
            checksum: sum.hex(),
        });
        scans.push(scan);
    }
    Ok((scans, identities))
}

/// A trace's passes: the warm-up, the scored ones, and why they stopped early.
struct TracePasses {
    warmup: Option<PassOutcome>,
    scored: Vec<PassOutcome>,
    /// A stop signal came during a pass.
    interrupted: bool,
    /// The device stopped answering: the sentence saying which pass was cut.
    timed_out: Option<String>,
}

/// The warm-up pass (unless disabled) and the scored passes of one trace,
/// until a stop signal or a device that stops answering; what was measured
/// before is kept.
fn replay_trace<'a>(
    engine: &mut Engine,
    plan: &dyn Fn(PassKind) -> PassPlan<'a>,
    opts: &ReplayOptions,
    observer: &mut dyn Observer,
) -> Result<TracePasses, ReplayError> {
    let mut passes = TracePasses {
        warmup: None,
        scored: Vec::new(),
        interrupted: false,
        timed_out: None,
    };
    if opts.warmup {
        match engine.run_pass(&plan(PassKind::Warmup), observer) {
            Ok(p) => {
                passes.interrupted |= p.interrupted;
                passes.warmup = Some(p);
            }
            Err(e) => passes.timed_out = Some(cut_short(e, "the warm-up pass")?),
        }
    }
    for n in 1..=opts.passes {
        if passes.interrupted || passes.timed_out.is_some() {
            break;
        }
        match engine.run_pass(&plan(PassKind::Scored(n)), observer) {
            Ok(p) => {
                passes.interrupted |= p.interrupted;
                passes.scored.push(p);
            }
            Err(e) => {
                passes.timed_out = Some(cut_short(
                    e,
                    &format!("scored pass {n} of {}", opts.passes),
                )?)
            }
        }
    }
    Ok(passes)
}

impl TracePasses {
    /// Why the run stops after this trace, if it does.
    fn stopped_because(&self, opts: &ReplayOptions) -> Option<String> {
        if let Some(why) = &self.timed_out {
            return Some(why.clone());
        }
        if !self.interrupted {
            return None;
        }
        let signal = stop_reason();
        let whole = self.scored.iter().filter(|p| !p.interrupted).count();
        Some(format!(
            "interrupted by {signal} after {whole} of {} scored passes",
            opts.passes
        ))
    }

    /// The trace's figures from its passes.
    fn result(
        &self,
        t: &dyn TraceSource,
        scan: &TraceScan,
        opts: &ReplayOptions,
    ) -> results::schema::TraceResult {
        let deps = if scan.has_completions() && !(opts.open_loop) {
            Dependencies::Completion
        } else {
            Dependencies::Order
        };
        trace_result(
            t.name(),
            t.path().map(|p| p.display().to_string()),
            deps,
            self.warmup.as_ref(),
            &self.scored,
        )
    }
}

/// The result of a run stopped by a signal before any trace was replayed
/// (while preconditioning, mostly): no traces, not valid, and what was
/// written.
fn stopped_before_replay(
    targets: &crate::target::Targets,
    opts: &ReplayOptions,
    precondition: Option<results::schema::Precondition>,
    started_unix_s: u64,
    traces: usize,
) -> SuiteResult {
    let signal = stop_reason();
    let when = match &precondition {
        Some(p) if p.not_done.as_deref() == Some("interrupted") => format!(
            "while preconditioning the target ({} of {} MiB written; the next run keeps what landed)",
            p.written_bytes >> 20,
            p.needed_bytes.saturating_sub(p.already_bytes) >> 20
        ),
        _ => "before the replay began".to_string(),
    };
    let mut result = suite_result(targets, opts, Vec::new(), true, started_unix_s);
    result.precondition = precondition;
    result.valid = false;
    result.invalid_reasons = vec![results::schema::RunProblem::Other(format!(
        "interrupted by {signal} {when}; none of the {traces} traces was replayed"
    ))];
    result
}

/// A result file's frame around `traces` (suite figures from them), valid
/// until marked otherwise, with no preconditioning recorded.
fn suite_result(
    targets: &crate::target::Targets,
    opts: &ReplayOptions,
    traces: Vec<results::schema::TraceResult>,
    interrupted: bool,
    started_unix_s: u64,
) -> SuiteResult {
    let mut result = SuiteResult {
        schema_version: results::schema::SCHEMA_VERSION,
        suite_name: None,
        trace_set: None,
        tool: ToolInfo {
            name: "tracemark".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        host: host_info(),
        target: targets.info(),
        options: opts.clone(),
        settings_changed: Vec::new(),
        legacy_mode: None,
        suite: SuiteSummary::of(&traces),
        traces,
        interrupted,
        started_unix_s,
        valid: true,
        invalid_reasons: Vec::new(),
        precondition: None,
        fleet: None,
    };
    result.trace_set = result.computed_trace_set_hash();
    result
}

/// The stop signal's name ("SIGTERM"), or "a stop request" when the stop
/// was asked without one.
fn stop_reason() -> String {
    crate::interrupt::stop_signal().map_or_else(
        || "a stop request".to_string(),
        crate::interrupt::signal_name,
    )
}

/// Why `pass` ended early when the device stopped answering; any other
/// error is passed on.
fn cut_short(e: ReplayError, pass: &str) -> Result<String, ReplayError> {
    match e {
        ReplayError::DeviceTimeout { .. } => {
            Ok(format!("{e} (--io-timeout): {pass} was cut short"))
        }
        e => Err(e),
    }
}

/// Passes everything to the caller's observer and builds the per-interval
/// timeline of each pass from its completions; keeps the last one.
struct TimelineObserver<'a> {
    inner: &'a mut dyn Observer,
    builder: TimelineBuilder,
    last: Option<results::schema::Timeline>,
}

impl Observer for TimelineObserver<'_> {
    fn pass_started(&mut self, trace: &str, pass: PassKind, total_ios: u64) {
        self.builder = TimelineBuilder::default();
        self.inner.pass_started(trace, pass, total_ios)
    }
    fn progress(&mut self, completed_ios: u64) {
        self.inner.progress(completed_ios)
    }
    fn precondition_progress(&mut self, written: u64, total: u64) {
        self.inner.precondition_progress(written, total)
    }
    fn pass_finished(&mut self, trace: &str, pass: PassKind, metrics: &PassMetrics) {
        let builder = std::mem::take(&mut self.builder);
        let number = match pass {
            PassKind::Warmup => 0,
            PassKind::Scored(n) => n,
        };
        // A scored pass replaces the warm-up's timeline; the warm-up only
        // stands in when no scored pass finishes.
        if number > 0 || self.last.is_none() {
            let playback_ns = (metrics.playback_s * 1e9) as u64;
            self.last = Some(builder.finish(number, playback_ns));
        }
        self.inner.pass_finished(trace, pass, metrics)
    }
    fn wants_io_events(&self) -> bool {
        true
    }
    fn io_completed(&mut self, e: &IoEvent) {
        if e.op.carries_data() && e.result >= 0 && e.result as u64 >= e.len {
            self.builder.add(
                e.op,
                e.len,
                e.complete_ns.saturating_sub(e.submit_ns),
                e.complete_ns,
            );
        }
        if self.inner.wants_io_events() {
            self.inner.io_completed(e)
        }
    }
    fn should_stop(&self) -> bool {
        self.inner.should_stop()
    }
}

/// The machine the result comes from.
pub fn host_info() -> HostInfo {
    crate::identity_probe::host_info()
}

/// Writes the result file (pretty JSON).
pub fn write_json(result: &SuiteResult, path: &Path) -> Result<(), ReplayError> {
    let text = serde_json::to_string_pretty(result).map_err(|e| ReplayError::Output {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    Ok(outfile::write(path, (text + "\n").as_bytes())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemorySource, TimingMode};
    use trace_format::{Bytes, Flags, IoRecord, Nanos, Op};

    type Log = IoLog;

    fn rec(t_us: u64, op: Op, offset: u64, len: u64, lat_us: Option<u64>) -> IoRecord {
        IoRecord {
            time: Nanos::from_micros(t_us),
            op,
            offset: Bytes(offset),
            len: Bytes(len),
            flags: Flags::NONE,
            latency: lat_us.map(Nanos::from_micros),
            stream: None,
            device: 0,
        }
    }

    #[test]
    fn compressed_pass_issues_every_record_once_on_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scratch.bin");
        let recs: Vec<IoRecord> = (0..500u64)
            .map(|i| {
                let op = if i % 3 == 0 { Op::Write } else { Op::Read };
                rec(
                    i * 10,
                    op,
                    (i * 7919 % 400) * 65536,
                    4096 * (1 + i % 4),
                    None,
                )
            })
            .collect();
        let src = MemorySource::new("synthetic", recs.clone());
        let opts = ReplayOptions {
            mode: TimingMode::Compressed,
            passes: 1,
            warmup: false,
            ..Default::default()
        };
        let mut log = Log::default();
        let r = run_suite(&[&src], Some(&path), &opts, &mut log).unwrap();
        let t = &r.traces[0];
        assert_eq!(log.0.len(), 500);
        let mut seen: Vec<u64> = log.0.iter().map(|e| e.index).collect();
        seen.sort();
        assert_eq!(seen, (0..500).collect::<Vec<_>>());
        for e in &log.0 {
            let orig = recs[e.index as usize];
            assert_eq!(e.op, orig.op);
            assert_eq!(e.len, orig.len.0);
            assert_eq!(e.result as u64, orig.len.0, "{e:?}");
        }
        assert_eq!(t.ios, 500);
        assert_eq!(
            t.read_bytes + t.write_bytes,
            recs.iter().map(|r| r.len.0).sum::<u64>()
        );
        assert!(t.score > 0.0 && t.bandwidth_mb_s > 0.0 && t.access_time_us > 0.0);
        // Every 1 MiB region of the first 25 MiB is touched, so the compact
        // map is the identity and the scratch file exactly 25 MiB.
        assert_eq!(r.target.size_bytes, 25 << 20);
        for e in &log.0 {
            assert_eq!(e.offset, recs[e.index as usize].offset.0);
            assert!(e.submit_ns <= e.complete_ns);
        }
        // The timeline accounts for every I/O of the (only) scored pass.
        let tl = t.timeline.as_ref().unwrap();
        assert_eq!(tl.pass, 1);
        assert_eq!(tl.ios.iter().sum::<u64>(), 500);
        // One point per interval of playback (10 at least, unless the pass
        // is shorter than 10 ms: the interval is never below 1 ms).
        let expected = (t.playback_s / tl.interval_s).ceil();
        assert!((tl.t_s.len() as f64 - expected).abs() <= 1.0, "{tl:?}");
        assert!(tl.t_s.len() >= 10 || tl.interval_s == 0.001, "{tl:?}");
        let moved: f64 = tl
            .bandwidth_mb_s
            .iter()
            .zip(&tl.t_s)
            .enumerate()
            .map(|(i, (bw, start))| {
                let end = tl
                    .t_s
                    .get(i + 1)
                    .copied()
                    .unwrap_or(t.playback_s.max(*start));
                bw * (end - start).max(0.0)
            })
            .sum();
        let total_mb = (t.read_bytes + t.write_bytes) as f64 / 1e6;
        assert!(
            (moved - total_mb).abs() / total_mb < 0.2,
            "{moved} vs {total_mb}"
        );
        let id = t.trace_id.as_ref().unwrap();
        assert_eq!(id.records, 500);
        assert_eq!(id.read_bytes + id.write_bytes, t.read_bytes + t.write_bytes);
        assert_eq!(id.checksum.len(), 16);
        assert_eq!(t.latency_cdf_us["read"].len(), 60);
    }
}
