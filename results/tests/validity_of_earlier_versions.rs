//! Result files of every earlier schema version (`tests/fixtures/versions/`,
//! made by its `make.py`) whose figures cannot be trusted: compare, the HTML
//! report and the suite table judge them from their data and mark them
//! INVALID, never a bare ratio, whether or not the writer knew of validity.

use results::compare::{load_result, Comparison, INVALID};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

const WITH_ERRORS: [&str; 6] = [
    "versions/v1-78cc631-errors.json",
    "versions/v2-1964c64-errors.json",
    "versions/v3-ad9ed88-errors.json",
    "versions/v4-c99161c-errors.json",
    "versions/v5-7ea2d45-errors.json",
    "versions/v6-124dc89-errors.json",
];

/// The clean reference against a result that is not valid.
fn compared(bad: &str, include_invalid: bool) -> Comparison {
    let clean = "replay-file.json";
    let c = Comparison::new(
        vec![
            (fixture(clean), load_result(&fixture(clean)).unwrap()),
            (fixture(bad), load_result(&fixture(bad)).unwrap()),
        ],
        &["clean".into(), "bad".into()],
    )
    .unwrap();
    if include_invalid {
        c.including_invalid()
    } else {
        c
    }
}

/// The line of `table` that starts with `row` in the score table.
fn score_line<'a>(text: &'a str, row: &str) -> &'a str {
    let scores = text
        .split("\nscore (")
        .nth(1)
        .unwrap_or_else(|| panic!("no score table:\n{text}"));
    scores
        .lines()
        .find(|l| l.starts_with(row))
        .unwrap_or_else(|| panic!("no {row} row:\n{text}"))
}

#[test]
fn device_errors_in_a_result_of_any_version_make_it_invalid() {
    for name in WITH_ERRORS {
        let r = load_result(&fixture(name)).unwrap();
        assert!(!r.valid, "{name}: judged valid");
        assert!(!r.traces[0].valid, "{name}: trace judged valid");
        assert!(
            r.invalid_reasons.iter().any(|why| why
                .to_string()
                .contains("124928 I/Os failed on the device (write: 124928)")),
            "{name}: {:?}",
            r.invalid_reasons
        );
    }
}

#[test]
fn compare_marks_the_column_invalid_and_gives_no_ratio_for_every_version() {
    for name in WITH_ERRORS {
        let c = compared(name, false);
        let text = results::text::compare_tables(&c);
        for row in ["office-calc", "suite (geometric mean)"] {
            let line = score_line(&text, row);
            let bad_cell = line.rsplit("  ").next().unwrap_or(line);
            assert!(line.contains(INVALID), "{name}: {row}: {line}");
            assert!(!bad_cell.contains("x)"), "{name}: {row}: ratio in {line}");
        }
        assert!(
            text.contains("is not a valid result") && text.contains("124928 I/Os failed"),
            "{name}: no warning:\n{text}"
        );
        let html = results::html::compare_report(&c);
        assert!(
            html.contains("not a valid result") && html.contains(&format!("{INVALID}</td>")),
            "{name}: HTML report does not mark it"
        );
        assert!(
            !html.contains("x) INVALID"),
            "{name}: HTML gives a ratio to it"
        );
    }
}

#[test]
fn include_invalid_shows_the_ratio_with_the_mark() {
    let c = compared(WITH_ERRORS[0], true);
    let text = results::text::compare_tables(&c);
    let line = score_line(&text, "office-calc");
    assert!(line.contains("(3.03x) INVALID"), "{line}");
}

#[test]
fn the_suite_table_marks_the_suite_line_of_an_invalid_result() {
    for name in WITH_ERRORS {
        let r = load_result(&fixture(name)).unwrap();
        let table = results::text::suite_table(&r);
        let suite = table
            .lines()
            .find(|l| l.starts_with("suite (geometric mean)"))
            .unwrap();
        assert!(suite.ends_with(INVALID), "{name}: {suite}");
        assert!(
            table.contains("INVALID: these figures are no measure of the drive"),
            "{name}: {table}"
        );
    }
}

#[test]
fn skipped_interrupted_and_late_results_of_the_oldest_version_are_invalid() {
    for (name, why) in [
        (
            "versions/v1-78cc631-skipped.json",
            "I/Os per pass were left out without being asked for",
        ),
        (
            "versions/v1-78cc631-interrupted.json",
            "interrupted: a partial pass",
        ),
        (
            "versions/v1-78cc631-late.json",
            "realtime issue lateness median 18000 µs",
        ),
    ] {
        let r = load_result(&fixture(name)).unwrap();
        assert!(!r.valid, "{name}");
        assert!(
            r.invalid_reasons
                .iter()
                .any(|r| r.to_string().contains(why)),
            "{name}: {:?}",
            r.invalid_reasons
        );
        let text = results::text::compare_tables(&compared(name, false));
        assert!(
            score_line(&text, "office-calc").contains(INVALID),
            "{name}: {text}"
        );
    }
}

#[test]
fn clean_results_of_earlier_versions_stay_valid() {
    for name in [
        "replay-file.json",
        "replay-zram.json",
        "replay-readonly.json",
        "suite-two.json",
    ] {
        let r = load_result(&fixture(name)).unwrap();
        assert!(r.valid, "{name}: {:?}", r.invalid_reasons);
        let table = results::text::suite_table(&r);
        assert!(!table.contains(INVALID), "{name}: {table}");
    }
}

#[test]
fn judging_twice_changes_nothing() {
    for name in WITH_ERRORS {
        let mut r = load_result(&fixture(name)).unwrap();
        let once = r.clone();
        results::validity::apply(&mut r);
        assert_eq!(r, once, "{name}");
    }
}
