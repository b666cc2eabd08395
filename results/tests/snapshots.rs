//! The reports, byte for byte: the suite and consistency tables, the
//! comparison's tables and HTML and the consistency HTML, made from the result
//! files of real runs in `tests/fixtures/` (see its README), pinned in
//! `tests/snapshots/`. A
//! refactor of how a report is made must not change a byte. After a
//! deliberate change, rewrite them with
//! `TRACEMARK_BLESS=1 cargo test --release -p results --test snapshots` and
//! review the diff.

use results::compare::{load_result, Comparison};
use results::consistency::ConsistencyResult;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The comparison the binary's snapshot tests use too.
#[path = "../../tests/support/snapshot.rs"]
mod snapshot;

fn assert_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    snapshot::assert_snapshot(&path, actual);
}

fn comparison(labels: &[String]) -> Comparison {
    let results = ["suite-a.json", "suite-b.json"]
        .iter()
        .map(|n| {
            let path = fixture(n);
            let r = load_result(&path).unwrap();
            (PathBuf::from(n), r)
        })
        .collect();
    Comparison::new(results, labels).unwrap()
}

fn consistency() -> ConsistencyResult {
    let text = std::fs::read_to_string(fixture("consistency.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn suite_tables() {
    for name in [
        "suite-a",
        "suite-b",
        "suite-two",
        "replay-file",
        "replay-zram",
        "replay-readonly",
    ] {
        let r = load_result(&fixture(&format!("{name}.json"))).unwrap();
        assert_snapshot(&format!("{name}.txt"), &results::text::suite_table(&r));
    }
}

#[test]
fn compare_tables_and_report() {
    let c = comparison(&[]);
    assert_snapshot("compare.txt", &results::text::compare_tables(&c));
    assert_snapshot("compare.html", &results::html::compare_report(&c));
    let labelled = comparison(&["A".to_string(), "B".to_string()]);
    assert_snapshot(
        "compare-labelled.txt",
        &results::text::compare_tables(&labelled),
    );
}

#[test]
fn consistency_table_and_report() {
    let r = consistency();
    assert_snapshot("consistency.txt", &results::text::consistency_table(&r));
    assert_snapshot("consistency.html", &results::html::consistency_report(&r));
}
