//! What a user chooses for a replay, as the result file records it.
//!
//! Each enumerated option is defined here once: its variants' docs are its
//! help, and with the `clap` feature the enum is also the command line's
//! value, spelled as in the result file (clap's kebab-case names are the
//! serde names; the tests check it).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;
use trace_format::{DeviceId, Nanos, Op};

/// How the trace's timing is reproduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TimingMode {
    /// The trace's pacing, idle gaps included.
    Realtime,
    /// Same order and dependencies, no idle: each I/O as soon as its
    /// dependencies and the queue depth allow.
    Compressed,
}

impl TimingMode {
    pub fn name(self) -> &'static str {
        match self {
            TimingMode::Realtime => "realtime",
            TimingMode::Compressed => "compressed",
        }
    }
}

/// In realtime closed loop, what an I/O's due time follows once the I/Os it
/// depends on have completed on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Pacing {
    /// The application's think time after them: on a faster drive the I/O
    /// comes sooner than in the trace, on a slower one later, as the task
    /// would issue it. The drive is then measured at the pace the predicted
    /// task time assumes (a drive that caps bandwidth meets the task's
    /// demand sped up, not the trace's).
    Think,
    /// The trace's times: never sooner than in the trace; later by what the
    /// replay waited for (what realtime replay did before the setting).
    Trace,
}

impl Pacing {
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Think => "think",
            Pacing::Trace => "trace",
        }
    }

    /// Result files older than the setting paced by the trace's times; so
    /// `trace` is not written, and those files read back as they were.
    fn older_files() -> Pacing {
        Pacing::Trace
    }

    fn is_trace(&self) -> bool {
        *self == Pacing::Trace
    }
}

/// How idle periods longer than a cap are replayed in realtime mode:
/// shortened to the cap, or kept whole. Spelled `100ms`, `1s`, `500us` (any
/// [`parse_duration`] text above zero) or `none`, on the command line
/// (`--idle-cap`) and in a suite file (`idle_cap`) alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleCap {
    Cap(Nanos),
    KeepWhole,
}

impl IdleCap {
    /// The cap as [`ReplayOptions::idle_cap`] records it (None: kept whole).
    pub fn as_option(self) -> Option<Nanos> {
        match self {
            IdleCap::Cap(n) => Some(n),
            IdleCap::KeepWhole => None,
        }
    }
}

impl std::str::FromStr for IdleCap {
    type Err = String;
    fn from_str(s: &str) -> Result<IdleCap, String> {
        let s = s.trim();
        if s == "none" {
            return Ok(IdleCap::KeepWhole);
        }
        let d = parse_duration(s).map_err(|e| format!("{e}, or none"))?;
        match u64::try_from(d.as_nanos()) {
            Ok(0) => Err(format!(
                "'{s}': a cap must be above zero (none keeps idle periods whole; compressed mode removes them)"
            )),
            Ok(ns) => Ok(IdleCap::Cap(Nanos(ns))),
            Err(_) => Err(format!("'{s}' is out of range")),
        }
    }
}

impl std::fmt::Display for IdleCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdleCap::KeepWhole => write!(f, "none"),
            IdleCap::Cap(Nanos(ns)) if ns % 1_000_000_000 == 0 => {
                write!(f, "{}s", ns / 1_000_000_000)
            }
            IdleCap::Cap(Nanos(ns)) if ns % 1_000_000 == 0 => write!(f, "{}ms", ns / 1_000_000),
            IdleCap::Cap(Nanos(ns)) if ns % 1_000 == 0 => write!(f, "{}us", ns / 1_000),
            IdleCap::Cap(Nanos(ns)) => write!(f, "{ns}ns"),
        }
    }
}

impl Serialize for IdleCap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for IdleCap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The one duration grammar of the command line and of suite files:
/// `500us`, `20ms`, `1.5s`, `2m`, `100ns`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (try 100ms, 2s, 500us)"))?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "ns" => value / 1e9,
        "m" | "min" => value * 60.0,
        other => {
            return Err(format!(
                "'{s}': unknown unit '{other}' (use ns, us, ms, s, m)"
            ))
        }
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("'{s}' is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// How trace offsets become target offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum MappingKind {
    /// The touched 1 MiB regions of the trace, in order, packed together: the
    /// order and locality of the extents are kept, the untouched gaps closed.
    Compact,
    /// Trace offset = target offset (the target must be large enough).
    Identity,
    /// Trace offset modulo the target size.
    Wrap,
}

impl std::fmt::Display for TimingMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl MappingKind {
    pub fn name(self) -> &'static str {
        match self {
            MappingKind::Compact => "compact",
            MappingKind::Identity => "identity",
            MappingKind::Wrap => "wrap",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayOptions {
    pub mode: TimingMode,
    /// Realtime only: issue on the original absolute schedule, ignoring
    /// completions (the queue depth still caps concurrency).
    pub open_loop: bool,
    /// Realtime closed loop: what due times follow after the dependencies
    /// completed.
    #[serde(
        default = "Pacing::older_files",
        skip_serializing_if = "Pacing::is_trace"
    )]
    pub pacing: Pacing,
    /// Realtime only: idle periods longer than this are shortened to it.
    pub idle_cap: Option<Nanos>,
    /// Where the idle handling came from, in files of schema version 2
    /// written by `suite` (`profile quick: cap 100ms`, `command line: none`);
    /// later files say it in [`SettingChange`]s, where it differs from the
    /// request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_policy: Option<String>,
    /// Schedule speed: 2.0 plays twice as fast, 0.5 half as fast.
    pub time_scale: f64,
    /// Most I/Os in flight at once, in every mode.
    pub queue_depth: u32,
    /// Scored passes per trace.
    pub passes: u32,
    /// One unscored pass before the scored ones.
    pub warmup: bool,
    /// Replay reads only; writes, discards and write-zeroes are skipped and counted.
    pub read_only: bool,
    /// Needed to write to a block device.
    pub allow_write: bool,
    /// Fall back to buffered I/O where O_DIRECT is refused.
    pub allow_buffered: bool,
    pub mapping: MappingKind,
    /// With no completion for this long while I/O is in flight, the run fails.
    #[serde(with = "duration_secs")]
    pub io_timeout: Duration,
    /// Targets after the first (`--target` given several times): trace
    /// device *i* goes to target *i* (the first target is *0*).
    #[serde(default)]
    pub extra_targets: Vec<PathBuf>,
    /// Explicit device routes (`--device-map SRC=TARGET`); they win over the
    /// positional rule of `extra_targets`. Devices routed nowhere go to the
    /// first target.
    #[serde(default)]
    pub device_map: Vec<DeviceRoute>,
    /// Bytes at the start of every target that the replay leaves alone: the
    /// mapped range is `[target_offset, target end)`. A multiple of each
    /// target's logical block size.
    #[serde(default)]
    pub target_offset: u64,
    /// Operations not sent to the target (counted as skipped).
    #[serde(default)]
    pub skip_ops: Vec<Op>,
    /// Scheduling priority of the issuing thread during a pass.
    #[serde(default)]
    pub priority: Priority,
    /// What is written before scoring so that reads touch data. Result files
    /// older than the option did nothing (`skip`), which is also not written.
    #[serde(
        default = "PreconditionPolicy::none",
        skip_serializing_if = "PreconditionPolicy::is_skip"
    )]
    pub precondition: PreconditionPolicy,
    /// Issuing rings (threads). 0 (default): one per target a trace's
    /// devices go to, where the machine has two CPUs per ring (else one). 1: one ring for everything. N > 1: one per target, and
    /// in compressed mode a single target's stream split over N rings.
    #[serde(default, skip_serializing_if = "is_auto")]
    pub threads: u32,
    /// Where io_uring's worker threads run on a target without non-blocking
    /// I/O (zram, loop over some files). `any` (the default, and what result
    /// files older than the option did) is not written.
    #[serde(
        default = "IoWorkerCpu::any",
        skip_serializing_if = "IoWorkerCpu::is_any"
    )]
    pub io_worker_cpu: IoWorkerCpu,
    /// What the CPUs do while idle during the run. Result files older than
    /// the option left it to the OS; `os` is not written.
    #[serde(default = "CpuIdle::os", skip_serializing_if = "CpuIdle::is_os")]
    pub cpu_idle: CpuIdle,
    /// A fleet replay: this rank's volumes of the trace (`--shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardSelection>,
    /// The agreed start of the schedule, ns since the Unix epoch
    /// (`--start-at`): every rank's pass starts its timeline there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_ns: Option<u64>,
}

/// A replay setting a run may use otherwise than asked, named as
/// [`ReplayOptions`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    IdleCap,
    CpuIdle,
    Priority,
}

impl Setting {
    /// The command-line flag that asks for it (`--idle-cap`).
    pub fn flag(self) -> &'static str {
        match self {
            Setting::IdleCap => "--idle-cap",
            Setting::CpuIdle => "--cpu-idle",
            Setting::Priority => "--priority",
        }
    }
}

/// A setting a run used that is not the one asked for, and why: the suite
/// file's idle cap where the command line gave none, `cpu_idle` `os` where
/// the system refused `poll`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingChange {
    pub setting: Setting,
    /// What the command line asked, as it spells it; absent when it asked
    /// nothing and a default or the suite file chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
    /// What the run used, spelled as the command line would.
    pub effective: String,
    pub why: String,
}

/// The part of a trace one rank of a fleet replays: whole source volumes,
/// on the trace's own timeline (the first record of the whole trace is time
/// 0 for every rank, so the ranks together reissue the original timing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSelection {
    pub rank: u32,
    pub ranks: u32,
    /// Trace device indexes (`IoRecord::device`) this rank replays, sorted.
    pub devices: Vec<u16>,
    /// Issue time of the whole trace's first record, ns (the timeline's 0).
    pub origin_ns: u64,
}

fn is_auto(n: &u32) -> bool {
    *n == 0
}

/// A trace device, as a user names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceSelector {
    /// `IoRecord::device`: the index into the trace's device table.
    Index(u16),
    /// The original device number, as `tracemark info` lists it.
    Id(DeviceId),
}

impl std::fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceSelector::Index(i) => write!(f, "{i}"),
            DeviceSelector::Id(id) => write!(f, "{id}"),
        }
    }
}

impl std::str::FromStr for DeviceSelector {
    type Err = String;
    /// `3` (device index) or `8:16` (MAJ:MIN).
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.contains([':', ',']) {
            return s.parse().map(DeviceSelector::Id);
        }
        s.parse().map(DeviceSelector::Index).map_err(|_| {
            format!("'{s}' is neither a device index (0, 1, ...) nor a device number (MAJ:MIN)")
        })
    }
}

/// One `--device-map SRC=TARGET`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRoute {
    pub source: DeviceSelector,
    pub target: PathBuf,
}

impl std::str::FromStr for DeviceRoute {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (src, target) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' is not SRC=TARGET (e.g. 0=/dev/sdb or 8:16=/dev/sdb)"))?;
        if target.trim().is_empty() {
            return Err(format!("'{s}': the target path is empty"));
        }
        Ok(DeviceRoute {
            source: src.parse()?,
            target: PathBuf::from(target.trim()),
        })
    }
}

/// How the issuing thread is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// The default time-sharing scheduler.
    #[default]
    Normal,
    /// `SCHED_FIFO` (real-time) for the issuing thread during each pass, so
    /// other work on the machine cannot delay issues; needs root or
    /// CAP_SYS_NICE. The engine never spins longer than 50 µs at a time and
    /// sleeps in the kernel otherwise, so the machine stays responsive.
    High,
}

/// Where the io-wq worker of a target without non-blocking I/O runs. There
/// every request is a hand-off from the issuing thread to a kernel worker
/// and back, and what that costs depends on where the two run: on this kind
/// of machine a QD1 zram read took about 6 µs with both on one CPU and
/// 30-48 µs with the worker on the other (a cross-CPU wake-up), chosen anew
/// by the scheduler each run. Holding both on one CPU did not make game-0ad
/// on zram repeat better on a loaded 2-CPU machine (14 alternating pairs,
/// replayer/README.md, "Run-to-run spread"), so it is not the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum IoWorkerCpu {
    /// Realtime mode on such a target: the issuing thread and io-wq's worker
    /// held on one CPU (the one the thread runs on when its first pass
    /// starts). Compressed mode keeps its workers spread over the CPUs
    /// (throughput), and so does `--priority high` (a real-time issuer
    /// spinning before a deadline would hold off a worker on its CPU).
    Issuer,
    /// Wherever the scheduler puts them (the default, and what result files
    /// older than the option did).
    #[default]
    Any,
}

impl IoWorkerCpu {
    fn any() -> Self {
        IoWorkerCpu::Any
    }
    fn is_any(&self) -> bool {
        *self == IoWorkerCpu::Any
    }
}

/// What the CPUs do while idle during a run. Between two I/Os of a sparse
/// trace the CPUs go idle; waking from an idle state (a C-state on a
/// machine, a halted vCPU the host has to schedule again in a VM) adds its
/// exit latency to the access time of the I/O that wakes it, and that latency
/// moves with the host's load and the machine's power settings, not with the
/// drive. On this project's 2-vCPU VM, game-launch-0ad on zram scored a
/// median 7668 (spread 10.7 %) with idle states and 9244 (7.4 %) without,
/// four alternating pairs (`bench/cpu_idle_pairs.sh`; replayer/README.md,
/// "CPU idle states").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum CpuIdle {
    /// The CPUs poll instead of entering idle states while the run lasts:
    /// a CPU latency request of 0 µs (`/dev/cpu_dma_latency`, the kernel's
    /// PM QoS interface, as cyclictest uses it), dropped when the run ends.
    /// Needs root; without it the run falls back to `os` and says so.
    #[default]
    Poll,
    /// The OS's idle policy, as an application meets it.
    Os,
}

impl CpuIdle {
    fn os() -> Self {
        CpuIdle::Os
    }

    fn is_os(&self) -> bool {
        *self == CpuIdle::Os
    }

    pub fn name(self) -> &'static str {
        match self {
            CpuIdle::Poll => "poll",
            CpuIdle::Os => "os",
        }
    }
}

/// Preconditioning of the targets before scoring: a never-written block
/// (fresh or trimmed SSD, fresh zram) reads without touching data, much
/// faster than the same drive in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum PreconditionPolicy {
    /// Every region the traces read (before writing it themselves), under
    /// the replay's address mapping, written once with incompressible data.
    #[default]
    ReadRegions,
    /// The whole space the replay may use, written once.
    Full,
    /// Nothing written: the target is used as it is.
    Skip,
}

impl PreconditionPolicy {
    fn none() -> Self {
        PreconditionPolicy::Skip
    }

    fn is_skip(&self) -> bool {
        *self == PreconditionPolicy::Skip
    }

    pub fn name(self) -> &'static str {
        match self {
            PreconditionPolicy::ReadRegions => "read-regions",
            PreconditionPolicy::Full => "full",
            PreconditionPolicy::Skip => "skip",
        }
    }
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            mode: TimingMode::Realtime,
            open_loop: false,
            pacing: Pacing::Think,
            idle_cap: None,
            idle_policy: None,
            time_scale: 1.0,
            queue_depth: 32,
            passes: 3,
            warmup: true,
            read_only: false,
            allow_write: false,
            allow_buffered: false,
            mapping: MappingKind::Compact,
            io_timeout: Duration::from_secs(60),
            extra_targets: Vec::new(),
            device_map: Vec::new(),
            target_offset: 0,
            skip_ops: Vec::new(),
            priority: Priority::Normal,
            precondition: PreconditionPolicy::ReadRegions,
            threads: 0,
            io_worker_cpu: IoWorkerCpu::Any,
            cpu_idle: CpuIdle::Poll,
            shard: None,
            start_at_unix_ns: None,
        }
    }
}

impl ReplayOptions {
    /// Whether `--skip-ops` leaves `op` out.
    pub fn skips(&self, op: Op) -> bool {
        self.skip_ops.contains(&op)
    }
}

mod duration_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        // A result file is input: a duration too large for a Duration is an
        // error, not a panic (the fuzzer found 1e300).
        Duration::try_from_secs_f64(secs.max(0.0)).map_err(|_| {
            serde::de::Error::custom(format!("{secs} seconds is not a usable duration"))
        })
    }
}

#[cfg(test)]
mod grammar_tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("3 parsecs").is_err());
    }

    /// Every text the duration grammar reads is an idle cap (above zero),
    /// `none` keeps idle whole, and what an idle cap prints reads back.
    #[test]
    fn an_idle_cap_is_a_duration_or_none_and_prints_as_it_reads() {
        for (text, want) in [
            ("10ms", IdleCap::Cap(Nanos(10_000_000))),
            ("1.5s", IdleCap::Cap(Nanos(1_500_000_000))),
            ("2", IdleCap::Cap(Nanos(2_000_000_000))),
            ("250us", IdleCap::Cap(Nanos(250_000))),
            ("none", IdleCap::KeepWhole),
        ] {
            let cap: IdleCap = text.parse().unwrap();
            assert_eq!(cap, want, "{text}");
            assert_eq!(cap.to_string().parse::<IdleCap>(), Ok(cap));
            let json = serde_json::to_string(&cap).unwrap();
            assert_eq!(serde_json::from_str::<IdleCap>(&json).unwrap(), cap);
        }
        assert_eq!(IdleCap::Cap(Nanos(20_000_000)).to_string(), "20ms");
        for bad in ["0ms", "0", "fast", "-1s", "10 parsecs"] {
            assert!(bad.parse::<IdleCap>().is_err(), "{bad}");
        }
    }
}

#[cfg(all(test, feature = "clap"))]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// The command-line spelling of every value of `E`, its serde form and,
    /// where the enum has one, its `name()`.
    fn spellings<E: ValueEnum + Serialize>(name: Option<fn(&E) -> &'static str>) {
        for v in E::value_variants() {
            let cli = v.to_possible_value().expect("no value is hidden");
            let serde = serde_json::to_value(v).unwrap();
            assert_eq!(serde.as_str(), Some(cli.get_name()));
            if let Some(name) = name {
                assert_eq!(name(v), cli.get_name());
            }
        }
    }

    #[test]
    fn the_command_line_spells_each_value_as_the_result_file_does() {
        spellings::<TimingMode>(Some(|m| m.name()));
        spellings::<MappingKind>(Some(|m| m.name()));
        spellings::<CpuIdle>(Some(|c| c.name()));
        spellings::<PreconditionPolicy>(Some(|p| p.name()));
        spellings::<Priority>(None);
        spellings::<IoWorkerCpu>(None);
        assert_eq!(
            TimingMode::from_str("compressed", false),
            Ok(TimingMode::Compressed)
        );
        assert_eq!(
            PreconditionPolicy::from_str("read-regions", false),
            Ok(PreconditionPolicy::ReadRegions)
        );
    }
}
