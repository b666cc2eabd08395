use super::*;
use crate::fleet::RankFailureFile;
use crate::fleet::{ClockSource, FleetRank, PassClock, RankFailure};
use crate::schema::OpMetrics;
use crate::schema::{Percentiles, SuiteResult};
use hdrhistogram::Histogram;

fn histogram(values: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    for v in values {
        h.record(*v).unwrap();
    }
    h
}

/// A rank's result: one trace, one scored pass of reads with the given
/// latencies (ns), 4 KiB each, from `start` to `end` (wall clock, ns).
fn rank(r: u32, ranks: u32, latencies: &[u64], start: u64, end: u64) -> SuiteResult {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite-two.json");
    let mut res: SuiteResult =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    res.traces.truncate(1);
    let t = &mut res.traces[0];
    t.passes.truncate(1);
    let p = &mut t.passes[0];
    let h = histogram(latencies);
    let n = latencies.len() as u64;
    let mean = latencies.iter().sum::<u64>() as f64 / n as f64 / 1e3;
    p.ops.clear();
    p.ops.insert(
        "read".into(),
        OpMetrics {
            count: n,
            bytes: n * 4096,
            errors: 0,
            latency_us: Some(Percentiles {
                mean,
                p50: 0.0,
                p90: 0.0,
                p99: 0.0,
                p99_9: 0.0,
                max: 0.0,
            }),
            latency_hdr: crate::hdr::encode(&h),
        },
    );
    p.ios = n;
    p.read_bytes = n * 4096;
    p.write_bytes = 0;
    p.errors = 0;
    p.access_time_us = mean;
    p.clock = Some(PassClock {
        ready_unix_ns: start - 1_000,
        first_due_unix_ns: Some(start - 500),
        first_issue_unix_ns: Some(start),
        last_complete_unix_ns: Some(end),
        behind_schedule_ns: Some(u64::from(r) * 1_000),
    });
    p.volumes = vec![VolumeMetrics {
        volume: format!("0:{r}"),
        ios: n,
        read_bytes: n * 4096,
        write_bytes: 0,
        errors: 0,
        latency_sum_ns: latencies.iter().sum(),
        data_ios: n,
    }];
    res.valid = true;
    res.invalid_reasons.clear();
    res.fleet = Some(FleetRank {
        rank: r,
        ranks,
        launcher: "test".into(),
        volumes: vec![format!("0:{r}")],
        trace_records: 100,
        trace_checksum: "00000000000000aa".into(),
        start_at_unix_ns: Some(1_000_000_000),
        start_error_ns: Some(500),
        clock: ClockSource {
            name: "CLOCK_REALTIME".into(),
            synchronized: true,
            max_error_us: 0,
            est_error_us: 0,
        },
    });
    res
}

fn input(name: &str, r: SuiteResult) -> (String, RankInput) {
    // Through JSON, as the files are read.
    let text = serde_json::to_string(&r).unwrap();
    (name.to_string(), RankInput::parse(&text))
}

const S: u64 = 1_000_000_000;

#[test]
fn ranks_add_up_and_percentiles_come_from_the_merged_histograms() {
    let a: Vec<u64> = (1..=1000).map(|i| i * 1_000).collect();
    let b: Vec<u64> = (1..=10).map(|i| i * 5_000_000).collect();
    let c: Vec<u64> = vec![200_000; 90];
    let f = merge(&[
        input("r2.json", rank(2, 3, &c, 10 * S, 11 * S)),
        input("r0.json", rank(0, 3, &a, 10 * S, 12 * S)),
        input("r1.json", rank(1, 3, &b, 10 * S + S / 2, 14 * S)),
    ])
    .unwrap();
    assert!(f.valid, "{:?}", f.invalid_reasons);
    assert_eq!(f.ranks, 3);
    assert_eq!(f.ios, 1100);
    assert_eq!(f.read_bytes, 1100 * 4096);
    assert_eq!(f.ops["read"].count, 1100);
    // Exact: the same as one histogram of every value.
    let all: Vec<u64> = a.iter().chain(&b).chain(&c).copied().collect();
    let whole = histogram(&all);
    let merged = crate::hdr::decode(f.ops["read"].latency_hdr.as_ref().unwrap()).unwrap();
    assert_eq!(merged, whole);
    let l = f.ops["read"].latency_us.unwrap();
    assert_eq!(l.p99, whole.value_at_quantile(0.99) as f64 / 1e3);
    assert_eq!(l.max, whole.max() as f64 / 1e3);
    let mean = all.iter().sum::<u64>() as f64 / all.len() as f64 / 1e3;
    assert!((l.mean - mean).abs() < 1e-6, "{} vs {mean}", l.mean);
    // The common interval: 10 s to 14 s.
    assert_eq!(f.interval_s, 4.0);
    assert_eq!(f.iops, 1100.0 / 4.0);
    assert_eq!(f.bandwidth_mb_s, 1100.0 * 4096.0 / 4.0 / 1e6);
    let slow = f.slowest_rank.as_ref().unwrap();
    assert_eq!((slow.rank, slow.after_fastest_s), (1, 3.0));
    assert_eq!(slow.behind_schedule_us, Some(1.0));
    assert_eq!(
        f.per_rank.iter().map(|r| r.rank).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(f.per_volume.len(), 3);
    assert_eq!(
        f.per_volume.iter().map(|v| v.metrics.ios).sum::<u64>(),
        f.ios
    );
    assert_eq!(f.worst_start_error_us, Some(0.5));
    let table = fleet_table(&f);
    assert!(table.contains("fleet of 3 ranks"), "{table}");
    assert!(!table.contains("NOT VALID"));
}

#[test]
fn a_missing_rank_makes_the_fleet_not_valid_and_is_named() {
    let a = vec![1_000u64; 10];
    let f = merge(&[
        input("r0.json", rank(0, 3, &a, 10 * S, 11 * S)),
        input("r2.json", rank(2, 3, &a, 10 * S, 11 * S)),
    ])
    .unwrap();
    assert!(!f.valid);
    assert_eq!(f.failed_ranks.len(), 1);
    assert_eq!(f.failed_ranks[0].rank, Some(1));
    assert_eq!(f.failed_ranks[0].kind, Some(RankFailureKind::Missing));
    assert!(
        f.invalid_reasons[0].starts_with("rank 1: no result"),
        "{:?}",
        f.invalid_reasons
    );
    assert_eq!(f.ios, 20, "what the others did is still added up");
}

#[test]
fn a_rank_that_could_not_open_its_target_is_named_with_its_error() {
    let a = vec![1_000u64; 10];
    let failure = RankFailureFile {
        failed_rank: RankFailure {
            rank: 1,
            ranks: 2,
            launcher: "Slurm".into(),
            hostname: "node7".into(),
            error: "/dev/rbd1: cannot access: No such file or directory".into(),
        },
    };
    let text = serde_json::to_string(&failure).unwrap();
    let f = merge(&[
        input("r0.json", rank(0, 2, &a, 10 * S, 11 * S)),
        ("r1.json".to_string(), RankInput::parse(&text)),
    ])
    .unwrap();
    assert!(!f.valid);
    assert_eq!(
        f.invalid_reasons,
        ["rank 1 (r1.json): failed on node7: /dev/rbd1: cannot access: No such file or directory"]
    );
    assert!(fleet_table(&f).contains("NOT VALID: rank 1 (r1.json)"));
    assert_eq!(f.failed_ranks[0].kind, Some(RankFailureKind::Failed));
    // The kind survives the file, by a stable name.
    let json = serde_json::to_string(&f).unwrap();
    assert!(json.contains("\"kind\":\"failed\""), "{json}");
}

#[test]
fn a_rank_whose_result_is_not_valid_fails_the_fleet() {
    let a = vec![1_000u64; 10];
    let mut bad = rank(1, 2, &a, 10 * S, 11 * S);
    bad.valid = false;
    bad.invalid_reasons = vec!["t: 3 I/Os failed on the device (read: 3)".parse().unwrap()];
    let f = merge(&[
        input("r0.json", rank(0, 2, &a, 10 * S, 11 * S)),
        input("r1.json", bad),
    ])
    .unwrap();
    assert!(!f.valid);
    assert!(f.invalid_reasons[0]
        .contains("rank 1 (r1.json): its result is not valid: t: 3 I/Os failed"));
    assert_eq!(f.failed_ranks[0].kind, Some(RankFailureKind::Invalid));
}

#[test]
fn files_of_different_fleets_or_traces_are_refused() {
    let a = vec![1_000u64; 10];
    let e = merge(&[
        input("r0.json", rank(0, 2, &a, S, 2 * S)),
        input("x.json", rank(1, 3, &a, S, 2 * S)),
    ])
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("x.json: rank 1 of 3, but r0.json says the fleet has 2"),
        "{e}"
    );
    let mut other = rank(1, 2, &a, S, 2 * S);
    other.fleet.as_mut().unwrap().trace_checksum = "00000000000000bb".into();
    let e = merge(&[
        input("r0.json", rank(0, 2, &a, S, 2 * S)),
        input("r1.json", other),
    ])
    .unwrap_err();
    assert!(matches!(e, MergeError::TracesDiffer { .. }), "{e}");
    let e = merge(&[
        input("a.json", rank(0, 2, &a, S, 2 * S)),
        input("b.json", rank(0, 2, &a, S, 2 * S)),
    ])
    .unwrap_err();
    assert_eq!(e.to_string(), "b.json and a.json are both rank 0");
    let mut plain = rank(0, 1, &a, S, 2 * S);
    plain.fleet = None;
    let e = merge(&[input("plain.json", plain)]).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("plain.json: not a fleet rank's result"));
    assert!(matches!(merge(&[]), Err(MergeError::Nothing)));
    let f = merge(&[
        input("r0.json", rank(0, 1, &a, S, 2 * S)),
        ("junk.json".to_string(), RankInput::parse("{\"x\": 1}")),
    ])
    .unwrap();
    assert!(!f.valid);
    assert!(f.invalid_reasons[0].starts_with("junk.json: not a tracemark result"));
    assert_eq!(f.failed_ranks[0].kind, Some(RankFailureKind::Unreadable));
}
