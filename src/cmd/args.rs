//! Argument parsers and defaults shared by the subcommands.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use recorder::formats::{format_names, Format};
use replayer::options::{CpuIdle, IdleCap, IoWorkerCpu, Pacing, PreconditionPolicy, Priority};
use replayer::plan::Request;
use replayer::shard::ShardSpec;
use replayer::{MappingKind, ReplayOptions, TimingMode};
use std::path::PathBuf;
use std::time::Duration;
use trace_format::{Op, WriterOptions};

/// What a written trace says about itself, and how it is compressed: the
/// options `convert` and `capture` share.
#[derive(Args, Debug, Clone)]
pub struct TraceMetaArgs {
    /// Trace name (default: the first input's file name; for a capture, the
    /// device's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Trace description.
    #[arg(long)]
    pub description: Option<String>,
    /// Application or category (`game load`, `office`).
    #[arg(long)]
    pub category: Option<String>,
    /// zstd level of the trace's chunks (1-22; higher is smaller and slower).
    #[arg(long, default_value_t = WriterOptions::default().zstd_level)]
    pub level: i32,
}

impl TraceMetaArgs {
    /// The writer options `--level` asks for.
    pub fn writer_options(&self) -> Result<WriterOptions, String> {
        if !(1..=22).contains(&self.level) {
            return Err(format!("--level {} is outside zstd's 1..=22", self.level));
        }
        Ok(WriterOptions {
            zstd_level: self.level,
            ..WriterOptions::default()
        })
    }
}

/// A choice whose default, `auto`, leaves it to the input or the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoOr<T> {
    Auto,
    Chosen(T),
}

impl<T> AutoOr<T> {
    /// `None` for `auto`.
    pub fn chosen(self) -> Option<T> {
        match self {
            AutoOr::Auto => None,
            AutoOr::Chosen(t) => Some(t),
        }
    }
}

/// Parses `auto` (its help: `auto_help`) or one of `T`'s values, so that
/// `--help` and completions list them all.
pub fn auto_or<T: ValueEnum + Send + Sync + 'static>(
    auto_help: &'static str,
) -> impl TypedValueParser<Value = AutoOr<T>> {
    let auto = PossibleValue::new("auto").help(auto_help);
    let values = T::value_variants()
        .iter()
        .filter_map(ValueEnum::to_possible_value);
    PossibleValuesParser::new(std::iter::once(auto).chain(values)).try_map(|name: String| {
        if name == "auto" {
            return Ok(AutoOr::Auto);
        }
        T::from_str(&name, false).map(AutoOr::Chosen)
    })
}

/// Parses `convert --format`: `auto` or a format of the recorder's table,
/// by name or alias, in any case; `--help` and completions list the names.
pub fn input_format() -> impl TypedValueParser<Value = AutoOr<Format>> {
    let formats = Format::all().map(|f| PossibleValue::new(f.name()).aliases(f.spec().aliases));
    PossibleValuesParser::new(std::iter::once(PossibleValue::new("auto")).chain(formats)).try_map(
        |name: String| {
            if name.eq_ignore_ascii_case("auto") {
                return Ok(AutoOr::Auto);
            }
            Format::from_name(&name)
                .map(AutoOr::Chosen)
                .ok_or_else(|| format!("unknown --format '{name}' (auto, {})", format_names()))
        },
    )
}

/// The one duration grammar (`100ms`, `1.5s`, a bare number of seconds),
/// shared with suite files.
pub use replayer::options::parse_duration;

/// `4096`, `512K`, `1MiB`, `2G`: a byte count, binary units (K = KiB).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a byte count (try 4096, 64K, 1MiB, 2G)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        other => {
            return Err(format!(
                "'{s}': unknown unit '{other}' (use K, M, G, T, binary)"
            ))
        }
    };
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// How to replay: every option of `replay`, shared with `suite`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// A block device or a regular file. Default: ./tracemark-scratch.bin,
    /// created and filled with random data, sized to what the traces touch,
    /// reused by later runs. A file that does not exist is created the same way.
    /// Give it several times to replay a multi-device trace's device i onto
    /// the i-th target (devices beyond the list go to the first).
    #[arg(long, short)]
    pub target: Vec<PathBuf>,
    /// Route one trace device to a target: SRC is the device's index in the
    /// trace (0, 1, ...) or its MAJ:MIN as `tracemark info` lists it
    /// (e.g. 8:16=/dev/sdc). Repeatable; wins over the order of --target.
    #[arg(long, value_name = "SRC=TARGET")]
    pub device_map: Vec<replayer::options::DeviceRoute>,
    /// Leave the first BYTES of every target alone: the mapped range starts
    /// there (e.g. 1GiB, 4096). A multiple of the logical block size.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, default_value = "0")]
    pub target_offset: u64,
    /// Operations not to replay, counted as skipped (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "OPS")]
    pub skip_ops: Vec<Op>,
    /// How the issuing thread is scheduled during each pass (high without
    /// root or CAP_SYS_NICE: a warning, and normal priority).
    #[arg(long, value_enum, default_value_t = Priority::Normal)]
    pub priority: Priority,
    /// Where io_uring's worker threads run on a target whose requests run on
    /// them (zram, some loop devices; the result says `io-wq`): a cross-CPU
    /// wake-up made a QD1 zram read 5x slower in some runs; on a loaded
    /// machine the one CPU may be a busy one.
    #[arg(long, value_enum, default_value_t = IoWorkerCpu::Any)]
    pub io_worker_cpu: IoWorkerCpu,
    /// What the CPUs do while idle during the run: waking a CPU from an idle
    /// state adds to access times a latency that moves with the machine, not
    /// with the drive.
    #[arg(long, value_enum, default_value_t = CpuIdle::Poll)]
    pub cpu_idle: CpuIdle,
    /// What is written before scoring, so reads touch data as on a drive in
    /// use (in 1 MiB regions). Regions tracemark already wrote (a marker in
    /// ~/.local/state/tracemark says so) are not written again. A block
    /// device needs --allow-write for this.
    #[arg(long, value_enum, default_value_t = PreconditionPolicy::ReadRegions)]
    pub precondition: PreconditionPolicy,
    /// How the trace's timing is reproduced.
    #[arg(long, value_enum, default_value_t = TimingMode::Realtime)]
    pub mode: TimingMode,
    /// Realtime: shorten idle periods longer than this to this (e.g. 100ms,
    /// 2s, 500us; none keeps them whole).
    #[arg(long, value_name = "DUR|none")]
    pub idle_cap: Option<IdleCap>,
    /// Schedule speed factor: 2 plays twice as fast, 0.5 half as fast.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Realtime: issue on the original absolute schedule, regardless of completions.
    #[arg(long)]
    pub open_loop: bool,
    /// Realtime closed loop: when an I/O comes once the I/Os it depends on
    /// have completed. The predicted task time assumes `think`. A trace
    /// replayed over several rings, and a fleet rank, keep the trace's times.
    #[arg(long, value_enum, default_value_t = Pacing::Think)]
    pub pacing: Pacing,
    /// Most I/Os in flight at once (in every mode). The default is the
    /// depth the validity study's predictions were checked at: a trace's
    /// writeback bursts reach well past 32 in flight, and an I/O held back
    /// for a slot is not timed while it waits, so a shallower cap hides the
    /// queueing a task's flush waits behind.
    #[arg(long, default_value_t = 128)]
    pub queue_depth: u32,
    /// Issuing rings, one thread each. 0: one per target the trace's devices
    /// go to when there are two CPUs per ring, else one. 1: one ring for all. N > 1: one per target, and in compressed
    /// mode a single target's stream split over N rings.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub threads: u32,
    /// Scored passes per trace (after one unscored warm-up pass).
    #[arg(long, short = 'p', default_value_t = 3)]
    pub passes: u32,
    /// Skip the unscored warm-up pass.
    #[arg(long)]
    pub no_warmup: bool,
    /// Replay reads only; writes, flushes, discards are skipped and counted.
    #[arg(long)]
    pub read_only: bool,
    /// Allow writing to a block device, or writing or growing a regular file
    /// that holds data tracemark did not write (their contents are
    /// destroyed). A mounted device, or one with a mounted partition or a
    /// holder, is refused anyway; so is a file the run reads or writes, or
    /// the results database.
    #[arg(long)]
    pub allow_write: bool,
    /// Where O_DIRECT is refused, replay through the page cache instead of stopping.
    #[arg(long)]
    pub allow_buffered: bool,
    /// How trace offsets become target offsets.
    #[arg(long, value_enum, default_value_t = MappingKind::Compact)]
    pub mapping: MappingKind,
    /// Fail when no I/O completes for this long (e.g. 60s).
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub io_timeout: Duration,
    /// Write the result file (JSON) here; `-` is standard output, which then
    /// carries the JSON alone (the table goes to standard error).
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub store: super::store::StoreArgs,
}

impl RunArgs {
    /// The primary target: the first --target, else the first --device-map
    /// target, else none (the scratch file).
    pub fn primary_target(&self) -> Option<&std::path::Path> {
        self.target
            .first()
            .or_else(|| self.device_map.first().map(|r| &r.target))
            .map(PathBuf::as_path)
    }

    /// Every target the run writes: each --target and --device-map target,
    /// or the scratch file when there is none.
    pub fn targets(&self) -> Vec<&std::path::Path> {
        let mut all: Vec<&std::path::Path> = self.target.iter().map(PathBuf::as_path).collect();
        all.extend(self.device_map.iter().map(|r| r.target.as_path()));
        if all.is_empty() {
            all.push(std::path::Path::new(replayer::DEFAULT_SCRATCH_NAME));
        }
        all
    }

    /// What these arguments ask, for [`replayer::plan::Plan::resolve`].
    pub fn request(&self) -> Request {
        Request {
            options: self.options(),
            idle_cap: self.idle_cap,
        }
    }

    /// The options as given; the idle cap is the plan's to resolve.
    fn options(&self) -> ReplayOptions {
        ReplayOptions {
            mode: self.mode,
            open_loop: self.open_loop,
            pacing: self.pacing,
            idle_cap: None,
            idle_policy: None,
            time_scale: self.time_scale,
            queue_depth: self.queue_depth,
            threads: self.threads,
            passes: self.passes,
            warmup: !self.no_warmup,
            read_only: self.read_only,
            allow_write: self.allow_write,
            allow_buffered: self.allow_buffered,
            mapping: self.mapping,
            io_timeout: self.io_timeout,
            extra_targets: self.target.iter().skip(1).cloned().collect(),
            device_map: self.device_map.clone(),
            target_offset: self.target_offset,
            skip_ops: self.skip_ops.clone(),
            priority: self.priority,
            precondition: self.precondition,
            io_worker_cpu: self.io_worker_cpu,
            cpu_idle: self.cpu_idle,
            shard: None,
            start_at_unix_ns: None,
        }
    }
}

#[derive(Args, Debug, Default)]
pub struct FleetArgs {
    /// Replay one rank's part of a multi-volume trace: I/N is rank I (from
    /// 0) of N; auto reads rank and size from the launcher (Open MPI,
    /// MPICH/PMI, Slurm); auto/N takes the rank from a Kubernetes Indexed
    /// Job's JOB_COMPLETION_INDEX and N from here. The ranks split the
    /// trace's volumes (whole, balanced by I/Os and bytes) and keep its
    /// timeline. `{rank}` in --target, --device-map targets and --json
    /// becomes the rank; --device-map entries of other ranks' volumes are
    /// left out. See `tracemark merge`.
    #[arg(long, value_name = "I/N|auto|auto/N")]
    pub shard: Option<ShardSpec>,
    /// Start the schedule at this wall-clock instant, the same on every rank:
    /// RFC 3339 (2026-12-02T12:00:00Z, 2026-12-02T13:00:00.250+01:00) or
    /// seconds since the Unix epoch (1764676800.5). The rank's result records
    /// its start error against it and the clock's state; one pass only
    /// (--passes 1 --no-warmup). Hosts need synchronised clocks (NTP, PTP).
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<u64>,
}

impl FleetArgs {
    pub fn is_set(&self) -> bool {
        self.shard.is_some() || self.start_at.is_some()
    }
}

/// `--start-at`: RFC 3339 or Unix seconds, as ns since the Unix epoch.
pub fn parse_start_at(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || {
        format!(
            "'{s}' is not a time: give RFC 3339 (2026-12-02T12:00:00Z, with an optional fraction and a Z or ±HH:MM offset) or seconds since the Unix epoch (1764676800.5)"
        )
    };
    if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') && !t.is_empty() {
        let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
        let secs: u64 = whole.parse().map_err(|_| bad())?;
        return secs
            .checked_mul(1_000_000_000)
            .and_then(|n| n.checked_add(fraction_ns(frac)?))
            .ok_or_else(bad);
    }
    rfc3339_ns(t).ok_or_else(bad)
}

/// Nanoseconds of a decimal fraction's digits (`"25"` → 250 ms).
fn fraction_ns(digits: &str) -> Option<u64> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns = 0u64;
    for (i, b) in digits.bytes().take(9).enumerate() {
        ns += u64::from(b - b'0') * 10u64.pow(8 - i as u32);
    }
    Some(ns)
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` as ns since the Unix epoch.
fn rfc3339_ns(t: &str) -> Option<u64> {
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = t.get(r)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let mut rest = &t[19..];
    let mut frac = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        frac = fraction_ns(&r[..end]).filter(|_| end > 0)?;
        rest = &r[end..];
    }
    let offset_s: i64 = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = rest[1..].split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60)
        }
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    u64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(frac)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_parse_with_binary_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("2g"), Ok(2 << 30));
        assert!(parse_bytes("1.5M").is_err());
        assert!(parse_bytes("-4").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }

    #[test]
    fn start_times_parse_as_rfc3339_or_unix_seconds() {
        assert_eq!(parse_start_at("0"), Ok(0));
        assert_eq!(
            parse_start_at("1764676800.25"),
            Ok(1_764_676_800_250_000_000)
        );
        assert_eq!(
            parse_start_at("2025-12-02T12:00:00Z"),
            Ok(1_764_676_800_000_000_000)
        );
        assert_eq!(
            parse_start_at("2025-12-02T13:00:00.5+01:00"),
            Ok(1_764_676_800_500_000_000)
        );
        assert_eq!(parse_start_at("1970-01-01T00:00:00.000000001Z"), Ok(1));
        assert_eq!(
            parse_start_at("2000-03-01T00:00:00Z"),
            Ok(951_868_800 * 1_000_000_000)
        );
        for bad in [
            "",
            "noon",
            "2025-12-02",
            "2025-12-02T12:00:00",
            "2025-13-02T12:00:00Z",
            "2025-12-02T12:00:00.Z",
            "2025-12-02T12:00:00+1:00",
            "1.2.3",
            "-5",
        ] {
            assert!(parse_start_at(bad).is_err(), "{bad:?}");
        }
    }
}
