//! `compare` says "not significant" where a difference is within the
//! combined uncertainty of the scores, and not where it is beyond it.

use results::compare::{Comparison, NOT_SIGNIFICANT};
use results::stats::{mean_ci95, trace_score_ci};
use results::SuiteResult;
use std::path::PathBuf;

fn fixture() -> SuiteResult {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite-two.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The result with every pass score (and so the means) scaled by `f`.
fn scaled(mut r: SuiteResult, f: f64) -> SuiteResult {
    for t in &mut r.traces {
        for p in &mut t.passes {
            p.score *= f;
        }
        t.score *= f;
        t.score_ci = None;
    }
    if let Some(s) = &mut r.suite {
        s.score *= f;
        s.score_ci = None;
    }
    r
}

fn compare(a: SuiteResult, b: SuiteResult) -> Comparison {
    Comparison::new(vec![("a.json".into(), a), ("b.json".into(), b)], &[]).unwrap()
}

#[test]
fn a_difference_within_the_passes_spread_is_not_significant() {
    let a = fixture();
    // The fixture's passes: office-calc ±2 (0.1 %), game-supertuxkart ±29
    // (1.3 %) of a 2-pass mean; a 0.05 % shift is well inside both.
    let c = compare(a.clone(), scaled(a, 1.0005));
    for t in &c.traces {
        assert_eq!(c.score_significant(1, Some(t)), Some(false), "{t}");
    }
    assert_eq!(c.score_significant(1, None), Some(false));
    let text = results::text::compare_tables(&c);
    assert!(text.contains(NOT_SIGNIFICANT), "{text}");
    let html = results::html::compare_report(&c);
    assert!(html.contains("<span class=\"ns\">n.s.</span>"));
}

#[test]
fn another_drive_twice_as_fast_is_significant() {
    let a = fixture();
    let mut b = scaled(a.clone(), 2.0);
    b.target.path = "/dev/other".into();
    let c = compare(a, b);
    for t in &c.traces {
        assert_eq!(c.score_significant(1, Some(t)), Some(true), "{t}");
    }
    assert_eq!(c.score_significant(1, None), Some(true));
    let text = results::text::compare_tables(&c);
    let score_table: String = text
        .lines()
        .skip_while(|l| !l.starts_with("score"))
        .take(4)
        .collect();
    assert!(!score_table.contains(NOT_SIGNIFICANT), "{text}");
}

#[test]
fn runs_of_the_same_drive_widen_the_uncertainty() {
    let mut a = fixture();
    // One drive by a strong identity (its serial): only then are runs pooled.
    a.target.drive = Some(results::schema::DriveIdentity {
        name: "sdb".into(),
        serial: Some(results::identity::hash_serial("S4EWNX0R123456")),
        ..Default::default()
    });
    let t = &a.traces[0];
    let passes = trace_score_ci(t).unwrap().half_width();
    // Three runs of one drive 10 % apart: the runs' interval is far wider
    // than the passes', and is the one used.
    let c = Comparison::new(
        vec![
            ("1.json".into(), a.clone()),
            ("2.json".into(), scaled(a.clone(), 1.1)),
            ("3.json".into(), scaled(a.clone(), 0.9)),
        ],
        &[],
    )
    .unwrap();
    let runs = mean_ci95(&[t.score, t.score * 1.1, t.score * 0.9])
        .unwrap()
        .half_width();
    assert!(runs > 10.0 * passes);
    let u = c.score_uncertainty(0, Some(&t.name)).unwrap();
    assert!((u - runs).abs() < 1e-9, "{u} vs {runs}");
    assert_eq!(c.score_significant(1, Some(&t.name)), Some(false));
}

#[test]
fn results_under_different_cpu_idle_policies_are_flagged() {
    let a = fixture();
    let mut b = a.clone();
    b.options.cpu_idle = results::options::CpuIdle::Poll;
    let c = compare(a.clone(), b);
    assert!(
        c.mismatches
            .iter()
            .any(|m| m.message.contains("cpu idle differs") && m.message.contains("poll")),
        "{:?}",
        c.mismatches.iter().map(|m| &m.message).collect::<Vec<_>>()
    );
    let same = compare(a.clone(), a);
    assert!(!same
        .mismatches
        .iter()
        .any(|m| m.message.contains("cpu idle")));
}
