//! Result files are untrusted input: numbers at the edge of f64 (a score of
//! 1.7e308, timeline and CDF points near ±1e308, infinities written as huge
//! literals) must give a finished, bounded report, not a tick loop that never
//! ends (the HTML axis code once looped forever on them).

use results::compare::Comparison;
use results::text::compare_tables as format_tables;
use results::SuiteResult;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

fn fixture() -> SuiteResult {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay-file.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn extreme(score: f64, low: f64, high: f64) -> SuiteResult {
    let mut r = fixture();
    for t in &mut r.traces {
        t.score = score;
        t.bandwidth_mb_s = high;
        t.access_time_us = high;
        let points = vec![[0.0, low], [0.5, 1.0], [1.0, high]];
        t.latency_cdf_us.insert("read".into(), points.clone());
        t.latency_cdf_us.insert("write".into(), points);
        if let Some(tl) = t.timeline.as_mut() {
            tl.t_s = vec![low, 0.0, high];
            tl.bandwidth_mb_s = vec![low, 1.0, high];
            tl.read_mb_s = vec![0.0, 1.0, high];
            tl.write_mb_s = vec![low, 0.0, 1.0];
            tl.ios = vec![1, 2, 3];
            tl.mean_latency_us = vec![high, low, 0.0];
        }
    }
    r
}

/// Builds both reports on another thread; fails if they take over 20 s.
fn reports_finish(results: Vec<SuiteResult>) -> (String, String) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let c = Comparison::new(
            results
                .into_iter()
                .enumerate()
                .map(|(i, r)| (PathBuf::from(format!("r{i}.json")), r))
                .collect(),
            &[],
        )
        .unwrap();
        let _ = tx.send((format_tables(&c), results::html::compare_report(&c)));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the reports did not finish: a loop on extreme numbers")
}

#[test]
fn extreme_numbers_give_a_finished_bounded_report() {
    for (score, low, high) in [
        (1.7e308, -1e308, 1e308),
        (f64::MAX, f64::MIN, f64::MAX),
        (1e300, 1e300, 1e300 * 1.0000001),
        (5e-324, -5e-324, 5e-324),
        (1.0, 0.0, 1e308),
    ] {
        let (text, html) = reports_finish(vec![fixture(), extreme(score, low, high)]);
        assert!(!text.is_empty());
        assert!(html.ends_with("</html>\n"), "{score}: unfinished page");
        // Bounded: a handful of ticks per axis, not millions.
        assert!(
            html.len() < 2_000_000,
            "{score}: {} bytes of HTML",
            html.len()
        );
    }
}

#[test]
fn a_duration_too_large_for_a_duration_is_an_error_not_a_panic() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay-file.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let options = v["options"].as_object_mut().unwrap();
    let key = options
        .keys()
        .find(|k| k.contains("timeout"))
        .cloned()
        .expect("a timeout option in the fixture");
    options.insert(key, serde_json::json!(1e300));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let err = results::compare::load_result(&file)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a usable duration"), "{err}");
}
