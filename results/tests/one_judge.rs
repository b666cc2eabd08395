//! One validity judge: what a replay marks (its errors, then a stop in a
//! later trace) is what every reader judges again from the file, reason for
//! reason, with nothing added twice; a trace marked not valid that the
//! result does not name is named once.

use results::schema::{Problem, Problems, RunProblem};
use results::validity::{apply, judge, mark_stopped};
use results::SuiteResult;
use std::path::PathBuf;

fn suite_two() -> SuiteResult {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite-two.json");
    let text = std::fs::read_to_string(&path).unwrap();
    results::parse::suite(&text, "suite-two.json").unwrap()
}

fn sentences(r: &SuiteResult) -> Vec<String> {
    r.invalid_reasons.iter().map(ToString::to_string).collect()
}

#[test]
fn a_stopped_run_with_errors_reads_back_with_the_reasons_it_was_written_with() {
    let mut r = suite_two();
    assert!(r.valid, "{:?}", r.invalid_reasons);
    r.traces[0].errors.insert("read".into(), 3);
    r.mark_validity();
    mark_stopped(
        &mut r,
        "office-calc",
        "interrupted by SIGTERM after 1 of 3 scored passes",
        4,
    );
    let written = sentences(&r);
    assert_eq!(
        written,
        [
            "office-calc: 3 I/Os failed on the device (read: 3)",
            "office-calc: interrupted by SIGTERM after 1 of 3 scored passes; a partial result (2 of 4 traces replayed)",
        ]
    );
    assert_eq!(
        r.traces[0].invalid_reason.as_ref().unwrap().to_string(),
        "3 I/Os failed on the device (read: 3); interrupted by SIGTERM after 1 of 3 scored passes"
    );

    // Read back by the one reader, which judges it again.
    let json = serde_json::to_string_pretty(&r).unwrap();
    let back = results::parse::suite(&json, "written.json").unwrap();
    assert_eq!(sentences(&back), written);
    assert_eq!(back.traces[0].invalid_reason, r.traces[0].invalid_reason);
    assert!(!back.valid && back.traces[1].valid);
    // And written again: the same file.
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), json);

    // Judging again adds nothing.
    let mut again = back.clone();
    apply(&mut again);
    assert_eq!(again, back);
}

#[test]
fn a_trace_marked_not_valid_that_the_result_does_not_name_is_named_once() {
    let mut r = suite_two();
    r.traces[1].valid = false;
    r.traces[1].invalid_reason = Some(Problems(vec![Problem::Other("checked by hand".into())]));
    let v = judge(&r);
    assert!(!v.valid);
    assert_eq!(
        v.reasons,
        [RunProblem::Trace {
            trace: "game-supertuxkart".into(),
            problems: Problems(vec![Problem::Other("checked by hand".into())]),
        }]
    );
    assert_eq!(v.traces[0], None);
    apply(&mut r);
    apply(&mut r);
    assert_eq!(
        sentences(&r),
        ["game-supertuxkart: checked by hand".to_string()]
    );
}
