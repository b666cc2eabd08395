//! `tracemark replay --shard ... --start-at ...`: one rank of a fleet that
//! replays a multi-volume trace together (started by mpirun, srun, a
//! Kubernetes Indexed Job, or by hand on each host).

use super::replay::{plan, replay_sources, ReplayArgs};
use anyhow::{bail, Context, Result};
use replayer::shard::{self, Placement, ShardSource, TraceVolumes};
use replayer::{TmtSource, TraceSource};
use results::fleet::{RankFailure, RankFailureFile};
use std::path::{Path, PathBuf};

/// Replays this rank's part. A rank that fails after it knows its rank
/// writes a failure file where its result would go, so `merge` names it.
pub fn run(mut args: ReplayArgs) -> Result<i32> {
    super::store::text_off_stdout(args.run.json.as_deref())?;
    let Some(spec) = args.fleet.shard else {
        // --start-at alone: one host's replay on an agreed start.
        let mut request = args.run.request();
        request.options.start_at_unix_ns = args.fleet.start_at;
        let plan = plan(request, None)?;
        let sources = open_all(&args.traces)?;
        let refs: Vec<&dyn TraceSource> = sources.iter().map(|s| s as &dyn TraceSource).collect();
        return replay_sources(&refs, &args.run, plan, &mut |_| {});
    };
    let placement = shard::from_environment(spec, |k| std::env::var(k).ok())?;
    let json = args
        .run
        .json
        .as_deref()
        .map(|p| shard::expand_rank(p, placement.rank));
    let outcome = run_rank(&mut args, &placement);
    if let (Err(e), Some(path)) = (&outcome, &json) {
        // Written only where the result could have gone: never over a
        // trace, a target or the results database (the error may be that
        // refusal itself).
        let mut inputs: Vec<&Path> = args.traces.iter().map(PathBuf::as_path).collect();
        let targets: Vec<PathBuf> = args
            .run
            .targets()
            .into_iter()
            .map(|t| shard::expand_rank(t, placement.rank))
            .collect();
        inputs.extend(targets.iter().map(PathBuf::as_path));
        match super::store::check_outputs([path.as_path()], &inputs, &args.run.store.db) {
            Ok(()) => write_failure(path, &placement, e),
            Err(why) => eprintln!("tracemark: no failure record: {why:#}"),
        }
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
    let mut request = run.request();
    request.options.shard = Some(selection.clone());
    request.options.start_at_unix_ns = args.fleet.start_at;
    let plan = plan(request, None)?;
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
    replay_sources(&[&part], &args.run, plan, &mut |result| {
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
