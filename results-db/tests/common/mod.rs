//! Result files for the database tests: the results crate's fixtures
//! (written by tracemark before schema version 2) and variants of them.

#![allow(dead_code)]

use std::path::PathBuf;

/// The text of `results/tests/fixtures/NAME`.
pub fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../results/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The suite fixture with its start time set to `n`: a different result
/// for every `n`.
pub fn suite_variant(n: u64) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&fixture("suite-two.json")).unwrap();
    v["started_unix_s"] = serde_json::json!(1_700_000_000 + n);
    serde_json::to_string_pretty(&v).unwrap()
}
