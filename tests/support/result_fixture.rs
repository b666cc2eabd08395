//! Result files with chosen figures, written the way `tracemark replay
//! --json` writes them (the schema of results/README.md), for the compare
//! and report tests.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The figures of one trace in a fixture.
#[derive(Clone)]
pub struct Figures {
    pub name: &'static str,
    pub score: f64,
    pub bandwidth: f64,
    pub access_us: f64,
    pub p99_read_us: f64,
    pub p99_write_us: f64,
    pub playback_s: f64,
    /// Trace identity: records (other versions of a trace differ here).
    pub records: u64,
    /// Timeline points (0: no timeline).
    pub timeline_points: usize,
    /// CDF points per op (0: no CDF).
    pub cdf_points: usize,
}

impl Figures {
    pub fn new(name: &'static str, score: f64, bandwidth: f64, access_us: f64) -> Figures {
        Figures {
            name,
            score,
            bandwidth,
            access_us,
            p99_read_us: access_us * 3.0,
            p99_write_us: access_us * 5.0,
            playback_s: 10.0,
            records: 1000,
            timeline_points: 0,
            cdf_points: 0,
        }
    }
}

fn lat(mean: f64, p99: f64) -> Value {
    json!({"mean": mean, "p50": mean, "p90": p99 * 0.8, "p99": p99, "p99_9": p99 * 1.5, "max": p99 * 2.0})
}

fn pass(f: &Figures) -> Value {
    json!({
        "warmup": false, "interrupted": false, "score": f.score,
        "bandwidth_mb_s": f.bandwidth, "access_time_us": f.access_us,
        "playback_s": f.playback_s, "busy_s": f.playback_s * 0.9, "iops": 1000.0,
        "ios": f.records, "read_bytes": 4096 * f.records / 2, "write_bytes": 4096 * f.records / 2,
        "errors": 0,
        "ops": {
            "read": {"count": f.records / 2, "bytes": 4096 * f.records / 2, "errors": 0, "latency_us": lat(f.access_us, f.p99_read_us)},
            "write": {"count": f.records / 2, "bytes": 4096 * f.records / 2, "errors": 0, "latency_us": lat(f.access_us, f.p99_write_us)}
        },
        "skipped": {"read_only": 0, "discards": 0, "write_zeroes": 0, "empty": 0},
        "fidelity": {"lateness_us": {"p50": 1.0, "p99": 5.0, "max": 9.0}, "original_s": 10.0, "achieved_s": f.playback_s}
    })
}

fn trace(f: &Figures) -> Value {
    let spread = |v: f64| json!({"min": v, "max": v, "stddev": 0.0});
    let mut t = json!({
        "name": f.name, "path": format!("/traces/{}.tmt", f.name), "dependencies": "completion",
        "warmup": null, "passes": [pass(f)],
        "score": f.score, "score_spread": spread(f.score),
        "bandwidth_mb_s": f.bandwidth, "bandwidth_spread": spread(f.bandwidth),
        "access_time_us": f.access_us, "access_time_spread": spread(f.access_us),
        "playback_s": f.playback_s, "playback_spread": spread(f.playback_s),
        "busy_s": f.playback_s * 0.9, "iops": 1000.0,
        "read_bytes": 4096 * f.records / 2, "write_bytes": 4096 * f.records / 2, "ios": f.records,
        "errors": {"read": 0, "write": 0},
        "skipped": {"read_only": 0, "discards": 0, "write_zeroes": 0, "empty": 0},
        "latency_us": {"read": lat(f.access_us, f.p99_read_us), "write": lat(f.access_us, f.p99_write_us)},
        "fidelity": {"lateness_us": {"p50": 1.0, "p99": 5.0, "max": 9.0}, "original_s": 10.0, "achieved_s": f.playback_s},
        "interrupted": false,
        "trace_id": {"records": f.records, "read_bytes": 4096 * f.records / 2,
                      "write_bytes": 4096 * f.records / 2, "duration_ns": 10_000_000_000u64,
                      "checksum": format!("{:016x}", f.records * 7919)}
    });
    if f.cdf_points > 0 {
        let cdf = |scale: f64| -> Vec<[f64; 2]> {
            (0..f.cdf_points)
                .map(|i| {
                    let q = i as f64 / (f.cdf_points - 1) as f64;
                    [q, scale * (1.0 + 9.0 * q * q)]
                })
                .collect()
        };
        t["latency_cdf_us"] = json!({"read": cdf(f.access_us), "write": cdf(f.access_us * 2.0)});
    }
    if f.timeline_points > 0 {
        let n = f.timeline_points;
        t["timeline"] = json!({
            "interval_s": 1.0, "pass": 1,
            "t_s": (0..n).map(|i| i as f64).collect::<Vec<_>>(),
            "read_mb_s": (0..n).map(|i| f.bandwidth / 2.0 + (i % 3) as f64).collect::<Vec<_>>(),
            "write_mb_s": (0..n).map(|_| f.bandwidth / 2.0).collect::<Vec<_>>(),
            "bandwidth_mb_s": (0..n).map(|i| f.bandwidth + (i % 3) as f64).collect::<Vec<_>>(),
            "ios": (0..n).map(|_| 100).collect::<Vec<_>>(),
            "mean_latency_us": (0..n).map(|i| f.access_us * (1.0 + (i % 4) as f64 / 4.0)).collect::<Vec<_>>()
        });
    }
    t
}

/// A whole result file for `target` (`model` may be None) in `mode`.
pub fn result(mode: &str, target: &str, model: Option<&str>, traces: &[Figures]) -> Value {
    let scores: Vec<f64> = traces.iter().map(|f| f.score).collect();
    let bws: Vec<f64> = traces.iter().map(|f| f.bandwidth).collect();
    let ats: Vec<f64> = traces.iter().map(|f| f.access_us).collect();
    let gm = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    json!({
        "tool": {"name": "tracemark", "version": "0.1.0"},
        "host": {"hostname": "bench-host", "kernel": "6.18.0", "cpus": 2},
        "target": {"path": target, "kind": "block_device", "size_bytes": 500_000_000_000u64,
                   "model": model, "logical_block_size": 512, "direct_io": true},
        "options": {"mode": mode, "open_loop": false, "idle_cap": null, "time_scale": 1.0,
                    "queue_depth": 32, "passes": 1, "warmup": true, "read_only": false,
                    "allow_write": true, "allow_buffered": false, "mapping": "compact",
                    "io_timeout": 60.0},
        "mode": mode,
        "traces": traces.iter().map(trace).collect::<Vec<_>>(),
        "suite": {"score": gm(&scores), "bandwidth_mb_s": gm(&bws), "access_time_us": gm(&ats)},
        "interrupted": false,
        "started_unix_s": 1_700_000_000u64
    })
}

pub fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}
