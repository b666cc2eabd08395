//! Result files are input: a trace name, host name, device model or path in
//! one must reach the terminal with its control characters escaped (no
//! escape sequence runs, no row of a table breaks).

use results::compare::Comparison;
use results::text::{compare_tables, suite_table};
use results::SuiteResult;
use std::path::PathBuf;

const HOSTILE: &str = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\r\nfake row\u{9b}31m";

fn fixture() -> SuiteResult {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay-file.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn hostile() -> SuiteResult {
    let mut r = fixture();
    for t in &mut r.traces {
        t.name = format!("{}{HOSTILE}", t.name);
    }
    r.host.hostname = HOSTILE.into();
    r.target.path = format!("/dev/{HOSTILE}");
    r.target.model = Some(HOSTILE.into());
    r
}

/// No control character but newline (the table's own) and tab.
fn assert_clean(text: &str) {
    for (i, c) in text.chars().enumerate() {
        assert!(
            !c.is_control() || c == '\n' || c == '\t',
            "raw {:?} at {i} in:\n{text}",
            c
        );
    }
}

#[test]
fn the_replay_table_escapes_what_the_result_file_says() {
    let clean = suite_table(&fixture());
    let text = suite_table(&hostile());
    assert_clean(&text);
    assert_eq!(text.lines().count(), clean.lines().count(), "{text}");
    assert!(text.contains("evil\\u{1b}]0;pwned\\u{7}"), "{text}");
}

#[test]
fn the_comparison_escapes_what_the_result_files_say() {
    let pair = |r: SuiteResult| {
        Comparison::new(
            vec![
                ("a.json".into(), fixture()),
                (format!("{HOSTILE}.json").into(), r),
            ],
            &[],
        )
        .unwrap()
    };
    let clean = compare_tables(&pair(fixture()));
    let text = compare_tables(&pair(hostile()));
    assert_clean(&text);
    assert!(text.contains("\\u{1b}[2J"), "{text}");
    // Every trace row of the clean comparison is there once, not split.
    assert!(text.lines().count() >= clean.lines().count(), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("fake row")), "{text}");
}
