//! A fleet on this machine: 4 ranks under Open MPI's `mpirun`, 4 under a
//! private one-node Slurm (`srun`), 2 as a Kubernetes Indexed Job's pods
//! (their environment set here), each rank on its own private zram device,
//! replaying a converted Alibaba-format trace of 8 volumes in realtime from
//! one agreed start. From outside (a private tracefs instance per device)
//! every row of the trace is issued exactly once across the fleet, on its
//! rank's device; each rank's start error is measured; the merged result is
//! the ranks' results added up.

use crate::support::fleet::{converted_trace, volume_name, Row, VOLUMES};
use crate::support::replay::IssueTracer;
use crate::support::slurm::SlurmCluster;
use crate::support::{read_json, SystemTest};
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use trace_format::Op;

const LAUNCHER_VARS: [&str; 7] = [
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "JOB_COMPLETION_INDEX",
];

/// 2,000 rows 500 µs apart: a 1 s trace.
fn rows() -> Vec<Row> {
    crate::support::fleet::alibaba_rows(2000, 500)
}

/// The replay arguments every rank gets (after `tracemark`), with the
/// targets `dev{rank}` (links to each rank's zram device in the test dir).
fn rank_args(trace: &Path, shard: &str, start_at: &str, device_map: bool) -> Vec<String> {
    let mut a: Vec<String> = [
        "replay",
        trace.to_str().unwrap(),
        "--shard",
        shard,
        "--allow-write",
        "--precondition",
        "skip",
        "--passes",
        "1",
        "--no-warmup",
        "--start-at",
        start_at,
        "--json",
        "r{rank}.json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if device_map {
        // One map for the whole fleet: each rank keeps its own volumes' lines.
        for v in VOLUMES {
            a.push("--device-map".into());
            a.push(format!("{}=dev{{rank}}", volume_name(v)));
        }
    } else {
        a.extend(["--target".to_string(), "dev{rank}".to_string()]);
    }
    a
}

/// Seconds since the epoch, `lead` from now: the agreed start.
fn start_in(lead_s: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    (now + lead_s).to_string()
}

/// Runs `launch` (which starts `ranks` ranks in `t.dir()` with targets
/// `dev{rank}`) with a tracer on each rank's zram device, then checks the
/// fleet from outside and its merged result.
fn fleet_run(t: &SystemTest, ranks: usize, launch: &dyn Fn(&Path) -> Vec<std::process::Output>) {
    let rows = rows();
    let trace = converted_trace(t.dir(), &rows);
    let mut devices = Vec::new();
    for r in 0..ranks {
        let Some(z) = t.zram(128) else { return };
        symlink(&z.path, t.dir().join(format!("dev{r}"))).unwrap();
        devices.push(z);
    }
    let tracers: Vec<IssueTracer> = devices
        .iter()
        .map(|z| {
            let (major, minor) = z.dev_id();
            IssueTracer::start_event(t, "block_bio_queue", major, minor)
        })
        .collect();
    let outputs = launch(&trace);
    let issued: Vec<_> = tracers.iter().map(IssueTracer::stop).collect();
    for out in &outputs {
        eprintln!(
            "launcher: {}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "the launcher failed");
    }
    let results: Vec<serde_json::Value> = (0..ranks)
        .map(|r| read_json(&t.dir().join(format!("r{r}.json"))))
        .collect();
    let mut all_volumes = Vec::new();
    for (r, result) in results.iter().enumerate() {
        let fleet = &result["fleet"];
        assert_eq!(fleet["rank"], r as u64);
        assert_eq!(fleet["ranks"], ranks as u64);
        assert_eq!(result["valid"], serde_json::Value::Null, "rank {r} valid");
        let volumes: Vec<String> = fleet["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        // Exactly this rank's rows reached this rank's device, once each.
        let count = |items: &mut dyn Iterator<Item = (Op, u64)>| {
            let mut m: BTreeMap<(u8, u64), u64> = BTreeMap::new();
            for (op, len) in items {
                *m.entry((op.code(), len)).or_insert(0) += 1;
            }
            m
        };
        let want = count(
            &mut rows
                .iter()
                .filter(|row| volumes.contains(&volume_name(row.volume)))
                .map(|row| (row.op, row.len)),
        );
        let got = count(&mut issued[r].iter().map(|i| (i.op, i.len)));
        assert_eq!(
            got, want,
            "rank {r} (volumes {volumes:?}): issued vs its rows"
        );
        // Its start error, measured against the shared schedule.
        let error = fleet["start_error_ns"].as_i64().expect("start error");
        eprintln!(
            "rank {r}: start error {:.1} µs, clock synchronised {}",
            error as f64 / 1e3,
            fleet["clock"]["synchronized"]
        );
        assert!(error.abs() < 500_000_000, "rank {r} started {error} ns off");
        all_volumes.extend(volumes);
    }
    all_volumes.sort();
    let mut want: Vec<String> = VOLUMES.iter().map(|&v| volume_name(v)).collect();
    want.sort();
    assert_eq!(all_volumes, want, "each volume on exactly one rank");
    let total: usize = issued.iter().map(Vec::len).sum();
    assert_eq!(total, rows.len(), "every I/O once across the fleet");

    let files: Vec<String> = (0..ranks).map(|r| format!("r{r}.json")).collect();
    let out = crate::support::tracemark()
        .current_dir(t.dir())
        .arg("merge")
        .args(&files)
        .args(["-o", "fleet.json"])
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fleet = read_json(&t.dir().join("fleet.json"));
    for key in ["ios", "read_bytes", "write_bytes", "errors"] {
        let sum: u64 = results
            .iter()
            .map(|r| r["traces"][0]["passes"][0][key].as_u64().unwrap())
            .sum();
        assert_eq!(fleet[key].as_u64(), Some(sum), "{key}");
    }
    assert_eq!(fleet["ios"].as_u64(), Some(rows.len() as u64));
    for op in ["read", "write"] {
        let h = results::hdr::decode(fleet["ops"][op]["latency_hdr"].as_str().unwrap()).unwrap();
        let n: u64 = rows.iter().filter(|r| r.op.name() == op).count() as u64;
        assert_eq!(h.len(), n, "{op}: every latency in the merged histogram");
    }
    // Realtime from one start: the fleet took about the trace's second.
    let interval = fleet["interval_s"].as_f64().unwrap();
    assert!(
        (0.9..3.0).contains(&interval),
        "fleet interval {interval} s"
    );
    assert!(fleet["worst_start_error_us"].as_f64().is_some());
    assert_eq!(fleet["per_volume"].as_array().unwrap().len(), VOLUMES.len());
}

#[test]
fn four_ranks_under_mpirun_replay_each_io_once_and_merge() {
    let Some(t) = SystemTest::with_tracefs(&["mpirun"]) else {
        return;
    };
    fleet_run(&t, 4, &|trace| {
        let mut cmd = Command::new("mpirun");
        for v in LAUNCHER_VARS {
            cmd.env_remove(v);
        }
        cmd.current_dir(t.dir())
            .args([
                "--allow-run-as-root",
                "--oversubscribe",
                "--bind-to",
                "none",
                "-n",
                "4",
            ])
            .arg(env!("CARGO_BIN_EXE_tracemark"))
            .args(rank_args(trace, "auto", &start_in(5), false));
        vec![cmd.output().unwrap()]
    });
    t.assert_tracing_restored();
}

#[test]
fn four_ranks_under_a_one_node_slurm_replay_each_io_once_and_merge() {
    let Some(t) = SystemTest::with_tracefs(&["slurmctld", "slurmd", "srun", "sinfo"]) else {
        return;
    };
    let cluster = SlurmCluster::start(t.dir(), 4);
    fleet_run(&t, 4, &|trace| {
        let mut cmd = cluster.command("srun");
        for v in LAUNCHER_VARS {
            cmd.env_remove(v);
        }
        let out = cmd
            .current_dir(t.dir())
            .args(["-n", "4", "--chdir"])
            .arg(t.dir())
            .arg(env!("CARGO_BIN_EXE_tracemark"))
            .args(rank_args(trace, "auto", &start_in(5), false))
            .output()
            .unwrap();
        if !out.status.success() {
            eprintln!("{}", cluster.logs());
        }
        vec![out]
    });
    drop(cluster);
    t.assert_tracing_restored();
}

#[test]
fn an_indexed_jobs_pods_find_their_rank_and_volumes_through_the_device_map() {
    let Some(t) = SystemTest::with_tracefs(&[]) else {
        return;
    };
    fleet_run(&t, 2, &|trace| {
        let start = start_in(3);
        let pods: Vec<_> = (0..2)
            .map(|index| {
                let mut cmd = crate::support::tracemark();
                for v in LAUNCHER_VARS {
                    cmd.env_remove(v);
                }
                // What the Job controller sets in pod `index` of an Indexed Job.
                cmd.env("JOB_COMPLETION_INDEX", index.to_string())
                    .current_dir(t.dir())
                    .args(rank_args(trace, "auto/2", &start, true))
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        pods.into_iter()
            .map(|p| p.wait_with_output().unwrap())
            .collect()
    });
    t.assert_tracing_restored();
}

/// Under mpirun a rank that cannot open its target exits 1 and mpirun stops
/// the others (SIGTERM): the failed rank's record and the others' partial
/// results make the merged result not valid, naming rank 1 and why.
#[test]
fn a_rank_that_cannot_open_its_target_under_mpirun_is_named_by_merge() {
    let Some(t) = SystemTest::start(&["mpirun"]) else {
        return;
    };
    let trace = converted_trace(t.dir(), &rows());
    // Rank 1's target is a folder: refused when opened.
    std::fs::create_dir(t.dir().join("t1.bin")).unwrap();
    let mut cmd = Command::new("mpirun");
    for v in LAUNCHER_VARS {
        cmd.env_remove(v);
    }
    let out = cmd
        .current_dir(t.dir())
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "-n",
            "3",
        ])
        .arg(env!("CARGO_BIN_EXE_tracemark"))
        .args(["replay", trace.to_str().unwrap(), "--shard", "auto"])
        .args(["--target", "t{rank}.bin", "--precondition", "skip"])
        .args(["--passes", "1", "--no-warmup", "--json", "r{rank}.json"])
        .args(["--start-at", &start_in(3)])
        .output()
        .unwrap();
    assert!(!out.status.success(), "mpirun reports the failed rank");
    let out = crate::support::tracemark()
        .current_dir(t.dir())
        .args(["merge", "r0.json", "r1.json", "r2.json", "-o", "fleet.json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert_eq!(out.status.code(), Some(2), "not valid");
    assert!(
        stdout.contains("NOT VALID: rank 1 (r1.json): failed on")
            && stdout.contains("t1.bin: is neither a regular file nor a block device"),
        "{stdout}"
    );
    let fleet = read_json(&t.dir().join("fleet.json"));
    assert_eq!(fleet["valid"], false);
    let failed: Vec<u64> = fleet["failed_ranks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rank"].as_u64())
        .collect();
    assert!(failed.contains(&1), "{failed:?}");
}
