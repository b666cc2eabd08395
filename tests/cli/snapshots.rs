//! The text and JSON the commands print, byte for byte, pinned in
//! `tests/cli/snapshots/`: a refactor of how an output is made must not
//! change a byte of it. After a deliberate change of an output, rewrite the
//! expected files with `TRACEMARK_BLESS=1 cargo test --release --test cli snapshots`
//! and review the diff.

use crate::support;
use std::path::Path;

/// `actual` equals the expected file `name`; with `TRACEMARK_BLESS=1` the
/// file is written instead.
pub fn assert_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli/snapshots")
        .join(name);
    support::snapshot::assert_snapshot(&path, actual);
}

/// `tracemark ARGS` run in the checkout (so paths in the output are the
/// relative ones given): its stdout, after checking it succeeded.
fn stdout_of(args: &[&str]) -> String {
    let out = support::tracemark()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tracemark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `info` on reference traces: a small one, and the boot trace (many
/// processes, idle periods, read-after-write), as text, JSON and summary.
#[test]
fn info_text_and_json_of_reference_traces() {
    for trace in ["office-calc", "boot"] {
        let path = format!("traces/{trace}.tmt");
        assert_snapshot(&format!("info-{trace}.txt"), &stdout_of(&["info", &path]));
        assert_snapshot(
            &format!("info-{trace}.json"),
            &stdout_of(&["info", "--json", &path]),
        );
        assert_snapshot(
            &format!("info-{trace}-summary.txt"),
            &stdout_of(&["info", "--summary-only", &path]),
        );
        assert_snapshot(
            &format!("info-{trace}-summary.json"),
            &stdout_of(&["info", "--summary-only", "--json", &path]),
        );
    }
}
