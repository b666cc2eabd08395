//! The inputs the output tests (kills at any moment, a full disk) give the
//! commands that write files, built one way for both: a marked trace and a
//! realtime replay of it (for `calibrate`), the ranks of a sharded replay of
//! a multi-volume trace (for `merge`), and a database of imported runs (for
//! `results export`, `results compare` and `results leaderboard`).

use super::{fleet, replay, result_fixture, tracemark};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `untraced_ns` mark of [`marked_replay`]'s trace: 80 ms of the task
/// spent outside I/O.
pub const UNTRACED_NS: u64 = 80_000_000;

/// Runs `command`, failing the test with its standard error if it fails.
fn run(command: &mut Command) {
    let o = command.output().unwrap();
    assert!(
        o.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A marked trace of `reads` reads (`chain.tmt` in `dir`) and the result of
/// one realtime pass of it without warm-up (`first.json`; its scratch file
/// `marked.bin`): (trace, result).
pub fn marked_replay(dir: &Path, reads: u64) -> (PathBuf, PathBuf) {
    let marked = dir.join("chain.tmt");
    replay::write_marked_trace(&marked, reads, UNTRACED_NS);
    let first = dir.join("first.json");
    run(tracemark()
        .current_dir(dir)
        .arg("replay")
        .arg(&marked)
        .args(["--passes", "1", "--no-warmup", "--no-db"])
        .args(["--target", "marked.bin", "--json"])
        .arg(&first));
    (marked, first)
}

/// The results of the `ranks` ranks of a sharded replay (one compressed
/// pass each, scratch files `t{rank}.bin`) of a converted multi-volume
/// trace: `rank{rank}.json` in `dir`, in rank order.
pub fn fleet_ranks(dir: &Path, ranks: u32) -> Vec<PathBuf> {
    let trace = fleet::converted_trace(dir, &fleet::alibaba_rows(1200, 200));
    (0..ranks)
        .map(|rank| {
            let json = dir.join(format!("rank{rank}.json"));
            run(tracemark()
                .current_dir(dir)
                .arg("replay")
                .arg(&trace)
                .args([
                    "--shard",
                    &format!("{rank}/{ranks}"),
                    "--mode",
                    "compressed",
                ])
                .args(["--passes", "1", "--no-warmup", "--precondition", "skip"])
                .args(["--cpu-idle", "os", "--no-db", "--target", "t{rank}.bin"])
                .arg("--json")
                .arg(&json)
                .env_remove("SLURM_PROCID")
                .env_remove("SLURM_NTASKS")
                .env_remove("JOB_COMPLETION_INDEX"));
            json
        })
        .collect()
}

/// `runs` result files (`run{i}.json` in `dir`: one trace, drive
/// `/dev/sd{i}`, score 100 + i) imported into the database `db`, which
/// the first import creates: the files, in run-id order (1, 2, ...).
pub fn imported_runs(dir: &Path, db: &Path, runs: u32) -> Vec<PathBuf> {
    (0..runs)
        .map(|i| {
            let figures = [result_fixture::Figures::new(
                "t",
                100.0 + f64::from(i),
                200.0,
                80.0,
            )];
            let value = result_fixture::result("realtime", &format!("/dev/sd{i}"), None, &figures);
            let file = result_fixture::write(dir, &format!("run{i}.json"), &value);
            run(tracemark()
                .args(["results", "import"])
                .arg(&file)
                .arg("--db")
                .arg(db));
            file
        })
        .collect()
}
