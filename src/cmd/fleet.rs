//! `tracemark replay --shard ... --start-at ...`: one rank of a fleet that
//! replays a multi-volume trace together (started by mpirun, srun, a
//! Kubernetes Indexed Job, or by hand on each host).

use super::replay::{checked, replay_sources, ReplayArgs};
use anyhow::{bail, Context, Result};
use clap::Args;
use replayer::shard::{self, Placement, ShardSource, ShardSpec, TraceVolumes};
use replayer::{TmtSource, TraceSource};
use results::fleet::{RankFailure, RankFailureFile};
use std::path::{Path, PathBuf};

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

/// Replays this rank's part. A rank that fails after it knows its rank
/// writes a failure file where its result would go, so `merge` names it.
pub fn run(mut args: ReplayArgs) -> Result<i32> {
    let Some(spec) = args.fleet.shard else {
        // --start-at alone: one host's replay on an agreed start.
        let mut opts = args.run.options();
        opts.start_at_unix_ns = args.fleet.start_at;
        let opts = checked(opts)?;
        let sources = open_all(&args.traces)?;
        let refs: Vec<&dyn TraceSource> = sources.iter().map(|s| s as &dyn TraceSource).collect();
        return replay_sources(&refs, &args.run, &opts, &mut |_| {});
    };
    let placement = shard::from_environment(spec, |k| std::env::var(k).ok())?;
    let json = args
        .run
        .json
        .as_deref()
        .map(|p| shard::expand_rank(p, placement.rank));
    let outcome = run_rank(&mut args, &placement);
    if let (Err(e), Some(path)) = (&outcome, &json) {
        write_failure(path, &placement, e);
    }
    outcome
}

fn open_all(traces: &[PathBuf]) -> Result<Vec<TmtSource>> {
    traces
        .iter()
        .map(|p| TmtSource::open(p).map_err(anyhow::Error::from))
        .collect()
}

fn run_rank(args: &mut ReplayArgs, placement: &Placement) -> Result<i32> {
    let [trace] = args.traces.as_slice() else {
        bail!(
            "--shard replays one trace (its volumes are split over the ranks); {} were given",
            args.traces.len()
        );
    };
    let source = TmtSource::open(trace)?;
    let volumes = TraceVolumes::scan(&source)?;
    let selection = shard::select(source.name(), &volumes, placement)
        .with_context(|| trace.display().to_string())?;
    let table = source.devices();
    let rank = placement.rank;
    let run = &mut args.run;
    run.target = run
        .target
        .iter()
        .map(|t| shard::expand_rank(t, rank))
        .collect();
    run.device_map = shard::routes_for(&run.device_map, &table, &selection)
        .into_iter()
        .map(|mut r| {
            r.target = shard::expand_rank(&r.target, rank);
            r
        })
        .collect();
    run.json = run.json.as_deref().map(|p| shard::expand_rank(p, rank));
    let mut opts = run.options();
    opts.shard = Some(selection.clone());
    opts.start_at_unix_ns = args.fleet.start_at;
    let opts = checked(opts)?;
    let part = ShardSource::new(&source, &selection);
    eprintln!(
        "rank {rank} of {} ({}): volumes {}",
        placement.ranks,
        placement.launcher,
        selection
            .devices
            .iter()
            .map(|&d| shard::volume_name(&table, d))
            .collect::<Vec<_>>()
            .join(",")
    );
    replay_sources(&[&part], &args.run, &opts, &mut |result| {
        shard::record_rank(result, placement, &selection, &volumes, &table)
    })
}

/// Writes `{"failed_rank": ...}` to `path`; a failure to write it is
/// reported but does not hide the rank's own error.
fn write_failure(path: &Path, placement: &Placement, error: &anyhow::Error) {
    let file = RankFailureFile {
        failed_rank: RankFailure {
            rank: placement.rank,
            ranks: placement.ranks,
            launcher: placement.launcher.clone(),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            error: format!("{error:#}"),
        },
    };
    let written = serde_json::to_string_pretty(&file)
        .map_err(std::io::Error::other)
        .and_then(|text| {
            outfile::write(path, (text + "\n").as_bytes()).map_err(std::io::Error::other)
        });
    if let Err(e) = written {
        eprintln!(
            "tracemark: cannot write the failure record {}: {e}",
            path.display()
        );
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
