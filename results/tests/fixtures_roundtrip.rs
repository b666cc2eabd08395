//! Result files written by tracemark before the results crate existed
//! (`tests/fixtures/`, see its README) read into the schema types and written
//! back: the same JSON, key for key and byte for byte.

use results::consistency::ConsistencyResult;
use results::SuiteResult;
use serde::{de::DeserializeOwned, Serialize};
use std::path::PathBuf;

fn fixture(name: &str) -> (PathBuf, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    (path, text)
}

/// Reads `name` as `T`, writes it back and checks it is the file again.
fn round_trip<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let (path, text) = fixture(name);
    let typed: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let again = serde_json::to_string_pretty(&typed).unwrap() + "\n";
    let before: serde_json::Value = serde_json::from_str(&text).unwrap();
    let after: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert!(before == after, "{name}: the schema changed");
    if let Some((i, (a, b))) = text
        .lines()
        .zip(again.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!("{name}: line {}: {a:?} written back as {b:?}", i + 1);
    }
    assert_eq!(text.len(), again.len(), "{name}: other length");
    typed
}

const SUITE_FIXTURES: [&str; 4] = [
    "replay-file.json",
    "replay-zram.json",
    "replay-readonly.json",
    "suite-two.json",
];

#[test]
fn suite_results_of_the_previous_version_read_and_write_back_identical() {
    for name in SUITE_FIXTURES {
        let r: SuiteResult = round_trip(name);
        assert!(!r.traces.is_empty(), "{name}");
        assert!(r.suite.is_some(), "{name}");
    }
}

#[test]
fn consistency_result_of_the_previous_version_reads_and_writes_back_identical() {
    let r: ConsistencyResult = round_trip("consistency.json");
    assert_eq!(r.rounds.len(), 4);
}
