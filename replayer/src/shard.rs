//! A fleet replay's shards: which whole volumes (trace devices) of a shared
//! trace each rank of N replays, and where rank and N come from.
//!
//! - [`ShardSpec`]: `--shard I/N`, `--shard auto`, `--shard auto/N`.
//! - [`from_environment`]: rank and size from the launcher that started the
//!   process (Open MPI, MPICH/PMI, Slurm, a Kubernetes Indexed Job).
//! - [`assign`]: whole volumes to ranks, balanced by I/O count and bytes,
//!   deterministic (every rank computes the same split on its own).
//! - [`TraceVolumes`]: one streaming pass over the whole trace for the loads.
//! - [`ShardSource`]: the trace as one rank sees it (its volumes only).
//!
//! A volume is never split, so whatever orders a volume's own I/Os (the
//! original order, or completion-time dependencies) stays inside one rank.
//! Ranks do not wait for each other's I/Os: the volumes of a datacenter
//! trace are separate clients.

use crate::source::{RecordIter, TraceSource};
use crate::ReplayError;
use results::fleet::FleetRank;
use results::options::{DeviceRoute, DeviceSelector, ShardSelection};
use results::SuiteResult;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trace_format::DeviceId;
use trace_format::RecordChecksum;

/// What is wrong with a shard request; each names what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("--shard '{0}' is not I/N (rank I of N ranks, from 0), auto or auto/N")]
    Syntax(String),
    #[error(
        "--shard {rank}/{ranks}: the rank must be below the number of ranks (ranks count from 0)"
    )]
    RankOutOfRange { rank: u32, ranks: u32 },
    #[error("--shard: a fleet needs at least one rank")]
    NoRanks,
    #[error("--shard auto: no launcher's rank in the environment (looked for OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE of Open MPI, PMI_RANK/PMI_SIZE of MPICH, SLURM_PROCID/SLURM_NTASKS of Slurm, JOB_COMPLETION_INDEX of a Kubernetes Indexed Job); give --shard I/N")]
    NoLauncher,
    #[error("--shard auto: {variable}='{value}' is not a whole number")]
    BadVariable { variable: String, value: String },
    #[error("--shard auto: {launcher} sets {variable} but not {size_variable}; give the size as --shard auto/N")]
    NoSize {
        launcher: &'static str,
        variable: &'static str,
        size_variable: &'static str,
    },
    #[error("--shard auto/{given}: {launcher} says the fleet has {found} ranks")]
    SizeMismatch {
        launcher: &'static str,
        given: u32,
        found: u32,
    },
    #[error("{rank_source}: rank {rank} is not below the fleet's size {ranks}")]
    EnvironmentOutOfRange {
        rank_source: String,
        rank: u32,
        ranks: u32,
    },
    #[error("{trace}: the trace has {volumes} volume(s) with I/O but the fleet has {ranks} ranks; every rank needs at least one whole volume (use fewer ranks)")]
    TooFewVolumes {
        trace: String,
        volumes: usize,
        ranks: u32,
    },
}

/// `--shard`: a rank given outright, or read from the launcher's
/// environment (with the fleet's size given where the launcher has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardSpec {
    Fixed { rank: u32, ranks: u32 },
    Auto { ranks: Option<u32> },
}

impl std::str::FromStr for ShardSpec {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<ShardSpec, ShardError> {
        let t = s.trim();
        let syntax = || ShardError::Syntax(s.to_string());
        let number = |x: &str| x.trim().parse::<u32>().map_err(|_| syntax());
        if t == "auto" {
            return Ok(ShardSpec::Auto { ranks: None });
        }
        let (a, b) = t.split_once('/').ok_or_else(syntax)?;
        let ranks = number(b)?;
        if ranks == 0 {
            return Err(ShardError::NoRanks);
        }
        if a.trim() == "auto" {
            return Ok(ShardSpec::Auto { ranks: Some(ranks) });
        }
        let rank = number(a)?;
        if rank >= ranks {
            return Err(ShardError::RankOutOfRange { rank, ranks });
        }
        Ok(ShardSpec::Fixed { rank, ranks })
    }
}

/// A rank's place in the fleet, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub rank: u32,
    pub ranks: u32,
    /// `command line`, or the launcher and its variables.
    pub launcher: String,
}

/// The launchers `--shard auto` knows, in the order they are looked for: an
/// MPI launcher inside a Slurm allocation sets both, and its own numbering
/// is the one of the processes it started.
const LAUNCHERS: [(&str, &str, Option<&str>); 4] = [
    (
        "Open MPI",
        "OMPI_COMM_WORLD_RANK",
        Some("OMPI_COMM_WORLD_SIZE"),
    ),
    ("MPICH/PMI", "PMI_RANK", Some("PMI_SIZE")),
    ("Slurm", "SLURM_PROCID", Some("SLURM_NTASKS")),
    ("Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", None),
];

/// Resolves `spec`: a fixed rank as given; `auto` from the first launcher
/// whose rank variable `env` has. `env` is `std::env::var` in the program
/// (a parameter so the rules are tested without touching the process).
pub fn from_environment(
    spec: ShardSpec,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Placement, ShardError> {
    let given = match spec {
        ShardSpec::Fixed { rank, ranks } => {
            return Ok(Placement {
                rank,
                ranks,
                launcher: "command line".into(),
            })
        }
        ShardSpec::Auto { ranks } => ranks,
    };
    let number = |variable: &str, value: String| {
        value
            .trim()
            .parse::<u32>()
            .map_err(|_| ShardError::BadVariable {
                variable: variable.to_string(),
                value,
            })
    };
    for (launcher, rank_var, size_var) in LAUNCHERS {
        let Some(rank) = env(rank_var) else { continue };
        let rank = number(rank_var, rank)?;
        let found = match size_var.and_then(|v| env(v).map(|s| (v, s))) {
            Some((v, s)) => Some(number(v, s)?),
            None => None,
        };
        let ranks = match (given, found) {
            (Some(g), Some(f)) if g != f => {
                return Err(ShardError::SizeMismatch {
                    launcher,
                    given: g,
                    found: f,
                })
            }
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) => {
                return Err(ShardError::NoSize {
                    launcher,
                    variable: rank_var,
                    size_variable: size_var.unwrap_or("a size"),
                })
            }
        };
        let rank_source = match (found, size_var) {
            (Some(_), Some(s)) => format!("{launcher} ({rank_var}, {s})"),
            _ => format!("{launcher} ({rank_var}, size from --shard auto/{ranks})"),
        };
        if ranks == 0 {
            return Err(ShardError::NoRanks);
        }
        if rank >= ranks {
            return Err(ShardError::EnvironmentOutOfRange {
                rank_source,
                rank,
                ranks,
            });
        }
        return Ok(Placement {
            rank,
            ranks,
            launcher: rank_source,
        });
    }
    Err(ShardError::NoLauncher)
}

/// One volume's load: what the balance weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeLoad {
    /// Trace device index.
    pub device: u16,
    pub ios: u64,
    pub bytes: u64,
}

/// The whole trace, as every rank scans it: per-volume loads, its records,
/// checksum and first issue time.
#[derive(Debug, Clone)]
pub struct TraceVolumes {
    /// By device index, only devices with records.
    pub volumes: Vec<VolumeLoad>,
    pub records: u64,
    pub checksum: String,
    /// The first record's issue time, ns (0 for an empty trace).
    pub origin_ns: u64,
}

impl TraceVolumes {
    /// One streaming pass over `source` (memory grows with its volumes, not
    /// its records).
    pub fn scan(source: &dyn TraceSource) -> Result<TraceVolumes, ReplayError> {
        let mut loads: BTreeMap<u16, VolumeLoad> = BTreeMap::new();
        let mut sum = RecordChecksum::default();
        let mut records = 0u64;
        let mut origin = None;
        for rec in source.records() {
            let rec = rec?;
            sum.add(&rec);
            records += 1;
            origin.get_or_insert(rec.time.0);
            let v = loads.entry(rec.device).or_insert(VolumeLoad {
                device: rec.device,
                ios: 0,
                bytes: 0,
            });
            v.ios += 1;
            if rec.op.carries_data() {
                v.bytes = v.bytes.saturating_add(rec.len.0);
            }
        }
        Ok(TraceVolumes {
            volumes: loads.into_values().collect(),
            records,
            checksum: sum.hex(),
            origin_ns: origin.unwrap_or(0),
        })
    }
}

/// Splits whole volumes over `ranks`: each volume weighs its share of the
/// trace's I/Os plus its share of the bytes; the heaviest goes first to the
/// lightest rank so far (ties: the lower device index, the lower rank).
/// Returns each rank's devices, sorted. Fails when a rank would get none.
pub fn assign(
    trace: &str,
    volumes: &[VolumeLoad],
    ranks: u32,
) -> Result<Vec<Vec<u16>>, ShardError> {
    if ranks == 0 {
        return Err(ShardError::NoRanks);
    }
    if volumes.len() < ranks as usize {
        return Err(ShardError::TooFewVolumes {
            trace: trace.to_string(),
            volumes: volumes.len(),
            ranks,
        });
    }
    let total_ios: u64 = volumes.iter().map(|v| v.ios).sum();
    let total_bytes: u64 = volumes.iter().map(|v| v.bytes).sum();
    let share = |x: u64, total: u64| {
        if total == 0 {
            0.0
        } else {
            x as f64 / total as f64
        }
    };
    let mut order: Vec<(f64, u16)> = volumes
        .iter()
        .map(|v| {
            (
                share(v.ios, total_ios) + share(v.bytes, total_bytes),
                v.device,
            )
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut load = vec![0.0f64; ranks as usize];
    let mut out = vec![Vec::new(); ranks as usize];
    for (i, (weight, device)) in order.into_iter().enumerate() {
        // The first `ranks` volumes go one to each rank, so none is empty
        // even when some volumes weigh nothing.
        let rank = if i < ranks as usize {
            i
        } else {
            load.iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1).then(a.0.cmp(&b.0)))
                .map_or(0, |(r, _)| r)
        };
        if let (Some(l), Some(o)) = (load.get_mut(rank), out.get_mut(rank)) {
            *l += weight;
            o.push(device);
        }
    }
    for devices in &mut out {
        devices.sort_unstable();
    }
    Ok(out)
}

/// This rank's part of `trace`: [`assign`] over the whole trace's volumes.
pub fn select(
    trace: &str,
    volumes: &TraceVolumes,
    placement: &Placement,
) -> Result<ShardSelection, ShardError> {
    let split = assign(trace, &volumes.volumes, placement.ranks)?;
    Ok(ShardSelection {
        rank: placement.rank,
        ranks: placement.ranks,
        devices: split
            .into_iter()
            .nth(placement.rank as usize)
            .unwrap_or_default(),
        origin_ns: volumes.origin_ns,
    })
}

/// The name of a trace device in results: `MAJ:MIN` from the trace's table,
/// else its index.
pub fn volume_name(table: &[DeviceId], device: u16) -> String {
    table
        .get(device as usize)
        .map_or_else(|| device.to_string(), DeviceId::to_string)
}

/// The `--device-map` routes for this rank's volumes only: one map written
/// for the whole fleet names every rank's volumes.
pub fn routes_for(
    routes: &[DeviceRoute],
    table: &[DeviceId],
    selection: &ShardSelection,
) -> Vec<DeviceRoute> {
    routes
        .iter()
        .filter(|r| {
            selection.devices.iter().any(|&d| match r.source {
                DeviceSelector::Index(i) => i == d,
                DeviceSelector::Id(id) => table.get(d as usize) == Some(&id),
            })
        })
        .cloned()
        .collect()
}

/// `{rank}` in a path replaced by the rank (`/dev/rbd{rank}`,
/// `result-{rank}.json`).
pub fn expand_rank(path: &Path, rank: u32) -> PathBuf {
    let text = path.to_string_lossy();
    if text.contains("{rank}") {
        PathBuf::from(text.replace("{rank}", &rank.to_string()))
    } else {
        path.to_path_buf()
    }
}

/// A trace as one rank sees it: the records of its volumes, in order, with
/// the trace's device indexes and table. The schedule's time 0 stays the
/// whole trace's first record ([`ShardSelection::origin_ns`]).
pub struct ShardSource<'a> {
    inner: &'a dyn TraceSource,
    devices: Vec<u16>,
}

impl<'a> ShardSource<'a> {
    pub fn new(inner: &'a dyn TraceSource, selection: &ShardSelection) -> ShardSource<'a> {
        ShardSource {
            inner,
            devices: selection.devices.clone(),
        }
    }
}

impl TraceSource for ShardSource<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn path(&self) -> Option<&Path> {
        self.inner.path()
    }
    fn devices(&self) -> Vec<DeviceId> {
        self.inner.devices()
    }
    fn records(&self) -> RecordIter<'_> {
        let devices = &self.devices;
        Box::new(self.inner.records().filter(move |r| match r {
            Ok(rec) => devices.binary_search(&rec.device).is_ok(),
            Err(_) => true,
        }))
    }
}

/// Records this rank's place in `result` (`result.fleet`): its volumes,
/// the whole trace's identity, and from the first scored pass (the warm-up
/// when there is none) its start error against the shared schedule. A rank
/// that was not ready to issue by the agreed start makes its result not
/// valid: its schedule started late, whatever the other ranks did.
pub fn record_rank(
    result: &mut SuiteResult,
    placement: &Placement,
    selection: &ShardSelection,
    volumes: &TraceVolumes,
    table: &[DeviceId],
) {
    let clock = result
        .traces
        .first()
        .and_then(|t| t.passes.first().or(t.warmup.as_ref()))
        .and_then(|p| p.clock);
    let start_at = result.options.start_at_unix_ns;
    let start_error_ns = clock.and_then(|c| {
        let (issue, due) = (c.first_issue_unix_ns?, c.first_due_unix_ns?);
        Some((issue as i128 - due as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64)
    });
    if let (Some(start), Some(c)) = (start_at, clock) {
        if c.ready_unix_ns > start {
            result.valid = false;
            result
                .invalid_reasons
                .push(results::schema::RunProblem::LateStart {
                    rank: placement.rank,
                    late_s: (c.ready_unix_ns - start) as f64 / 1e9,
                });
        }
    }
    result.fleet = Some(FleetRank {
        rank: placement.rank,
        ranks: placement.ranks,
        launcher: placement.launcher.clone(),
        volumes: selection
            .devices
            .iter()
            .map(|&d| volume_name(table, d))
            .collect(),
        trace_records: volumes.records,
        trace_checksum: volumes.checksum.clone(),
        start_at_unix_ns: start_at,
        start_error_ns,
        clock: crate::host_time::wall_clock_source(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemorySource;
    use trace_format::{Bytes, Flags, IoRecord, Nanos, Op};

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |k| vars.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone())
    }

    #[test]
    fn specs_parse_and_out_of_range_ranks_are_refused() {
        assert_eq!(
            "2/4".parse::<ShardSpec>(),
            Ok(ShardSpec::Fixed { rank: 2, ranks: 4 })
        );
        assert_eq!(
            "auto".parse::<ShardSpec>(),
            Ok(ShardSpec::Auto { ranks: None })
        );
        assert_eq!(
            "auto/8".parse::<ShardSpec>(),
            Ok(ShardSpec::Auto { ranks: Some(8) })
        );
        assert_eq!(
            "4/4".parse::<ShardSpec>(),
            Err(ShardError::RankOutOfRange { rank: 4, ranks: 4 })
        );
        assert_eq!("0/0".parse::<ShardSpec>(), Err(ShardError::NoRanks));
        for bad in ["", "3", "a/4", "1/b", "-1/4", "1/4/2", "auto/"] {
            assert!(
                matches!(bad.parse::<ShardSpec>(), Err(ShardError::Syntax(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn each_launcher_is_read_and_mpi_wins_over_slurm() {
        let auto = ShardSpec::Auto { ranks: None };
        let p = from_environment(
            auto,
            env(&[("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "4")]),
        )
        .unwrap();
        assert_eq!((p.rank, p.ranks), (3, 4));
        assert!(p.launcher.starts_with("Open MPI"), "{}", p.launcher);
        let p = from_environment(auto, env(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")])).unwrap();
        assert_eq!((p.rank, p.ranks), (1, 2));
        assert!(p.launcher.starts_with("MPICH"));
        let slurm = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4")];
        let p = from_environment(auto, env(&slurm)).unwrap();
        assert_eq!(
            (p.rank, p.ranks, p.launcher.starts_with("Slurm")),
            (0, 4, true)
        );
        // mpirun inside a Slurm allocation: its own numbering.
        let both = [
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
        ];
        assert_eq!(from_environment(auto, env(&both)).unwrap().rank, 2);
    }

    #[test]
    fn kubernetes_needs_the_size_on_the_command_line() {
        let k8s = [("JOB_COMPLETION_INDEX", "5")];
        assert!(matches!(
            from_environment(ShardSpec::Auto { ranks: None }, env(&k8s)),
            Err(ShardError::NoSize { .. })
        ));
        let p = from_environment(ShardSpec::Auto { ranks: Some(8) }, env(&k8s)).unwrap();
        assert_eq!((p.rank, p.ranks), (5, 8));
        assert!(
            p.launcher.contains("Kubernetes") && p.launcher.contains("auto/8"),
            "{}",
            p.launcher
        );
        let e = from_environment(ShardSpec::Auto { ranks: Some(4) }, env(&k8s)).unwrap_err();
        assert!(e.to_string().contains("rank 5 is not below"), "{e}");
    }

    #[test]
    fn auto_without_a_launcher_or_with_garbage_fails_clearly() {
        let e = from_environment(ShardSpec::Auto { ranks: None }, env(&[])).unwrap_err();
        assert_eq!(e, ShardError::NoLauncher);
        assert!(e.to_string().contains("OMPI_COMM_WORLD_RANK"));
        let e = from_environment(
            ShardSpec::Auto { ranks: None },
            env(&[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "4")]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("SLURM_PROCID='x'"), "{e}");
        let e = from_environment(
            ShardSpec::Auto { ranks: Some(3) },
            env(&[("PMI_RANK", "0"), ("PMI_SIZE", "4")]),
        )
        .unwrap_err();
        assert!(
            matches!(e, ShardError::SizeMismatch { found: 4, .. }),
            "{e}"
        );
        // A fixed spec ignores the environment.
        let p = from_environment(
            ShardSpec::Fixed { rank: 1, ranks: 2 },
            env(&[("PMI_RANK", "0"), ("PMI_SIZE", "4")]),
        )
        .unwrap();
        assert_eq!(
            (p.rank, p.ranks, p.launcher.as_str()),
            (1, 2, "command line")
        );
    }

    fn load(device: u16, ios: u64, bytes: u64) -> VolumeLoad {
        VolumeLoad { device, ios, bytes }
    }

    #[test]
    fn assignment_is_whole_volumes_balanced_and_deterministic() {
        // One heavy volume, three medium, four light.
        let v = [
            load(0, 1000, 4 << 20),
            load(1, 300, 1 << 20),
            load(2, 300, 1 << 20),
            load(3, 300, 1 << 20),
            load(4, 10, 40 << 10),
            load(5, 10, 40 << 10),
            load(6, 10, 40 << 10),
            load(7, 10, 40 << 10),
        ];
        let a = assign("t", &v, 2).unwrap();
        assert_eq!(a, assign("t", &v, 2).unwrap(), "same input, same split");
        let mut all: Vec<u16> = a.concat();
        all.sort_unstable();
        assert_eq!(all, (0..8).collect::<Vec<_>>(), "every volume exactly once");
        let ios = |r: &[u16]| -> u64 { r.iter().map(|d| v[*d as usize].ios).sum() };
        // Greedy: the heavy volume alone, everything else together (940
        // I/Os against 1,000).
        assert_eq!(a[0], vec![0]);
        assert_eq!(a[1], vec![1, 2, 3, 4, 5, 6, 7]);
        assert!(ios(&a[0]).abs_diff(ios(&a[1])) <= 100);
        // The input's order does not matter.
        let mut rev = v;
        rev.reverse();
        assert_eq!(assign("t", &rev, 2).unwrap(), a);
    }

    #[test]
    fn every_rank_gets_a_volume_even_a_weightless_one() {
        let v = [load(0, 100, 100), load(1, 0, 0), load(2, 0, 0)];
        let a = assign("t", &v, 3).unwrap();
        assert!(a.iter().all(|r| r.len() == 1), "{a:?}");
    }

    #[test]
    fn fewer_volumes_than_ranks_is_one_clear_error() {
        let v = [load(0, 1, 1), load(3, 1, 1)];
        let e = assign("dc.tmt", &v, 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "dc.tmt: the trace has 2 volume(s) with I/O but the fleet has 4 ranks; every rank needs at least one whole volume (use fewer ranks)"
        );
    }

    fn rec(t: u64, device: u16, len: u64) -> IoRecord {
        IoRecord {
            time: Nanos(t),
            op: Op::Read,
            offset: Bytes(0),
            len: Bytes(len),
            flags: Flags::NONE,
            latency: None,
            stream: None,
            device,
        }
    }

    #[test]
    fn ranks_together_see_every_record_once_on_the_whole_trace_timeline() {
        let recs: Vec<IoRecord> = (0..90u64)
            .map(|i| rec(1_000 + i * 10, (i % 5) as u16 * 2, 4096 * (1 + i % 3)))
            .collect();
        let src = MemorySource::new("dc", recs.clone());
        let volumes = TraceVolumes::scan(&src).unwrap();
        assert_eq!(volumes.records, 90);
        assert_eq!(volumes.origin_ns, 1_000);
        assert_eq!(volumes.volumes.len(), 5);
        let mut seen = Vec::new();
        for rank in 0..3 {
            let p = Placement {
                rank,
                ranks: 3,
                launcher: "test".into(),
            };
            let sel = select("dc", &volumes, &p).unwrap();
            assert_eq!(sel.origin_ns, 1_000);
            let part = ShardSource::new(&src, &sel);
            for r in part.records() {
                let r = r.unwrap();
                assert!(sel.devices.contains(&r.device));
                seen.push(r);
            }
        }
        seen.sort_by_key(|r| r.time);
        assert_eq!(seen, recs, "every record exactly once over the ranks");
    }

    #[test]
    fn device_map_keeps_only_this_ranks_routes_and_templates_expand() {
        let sel = ShardSelection {
            rank: 1,
            ranks: 2,
            devices: vec![1, 3],
            origin_ns: 0,
        };
        let table = [
            DeviceId {
                major: 0,
                minor: 10,
            },
            DeviceId {
                major: 0,
                minor: 11,
            },
            DeviceId {
                major: 0,
                minor: 12,
            },
            DeviceId {
                major: 0,
                minor: 13,
            },
        ];
        let routes: Vec<DeviceRoute> = ["0=/dev/a", "1=/dev/b", "0:13=/dev/d", "0:12=/dev/c"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let mine = routes_for(&routes, &table, &sel);
        let targets: Vec<&str> = mine.iter().map(|r| r.target.to_str().unwrap()).collect();
        assert_eq!(targets, ["/dev/b", "/dev/d"]);
        assert_eq!(volume_name(&table, 3), "0:13");
        assert_eq!(volume_name(&[], 3), "3");
        assert_eq!(
            expand_rank(Path::new("/dev/rbd{rank}"), 7),
            PathBuf::from("/dev/rbd7")
        );
        assert_eq!(expand_rank(Path::new("r.json"), 7), PathBuf::from("r.json"));
    }
}
