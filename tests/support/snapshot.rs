//! Outputs pinned byte for byte in files: the one comparison of the
//! snapshot tests of the binary (`tests/cli/snapshots.rs`) and of the
//! results crate (`results/tests/snapshots.rs`, which includes this file).

use std::path::Path;

/// `actual` equals the file at `path`; with `TRACEMARK_BLESS=1` the file is
/// written instead. A difference fails naming the first line that differs.
pub fn assert_snapshot(path: &Path, actual: &str) {
    if std::env::var_os("TRACEMARK_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(path, actual).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let expected = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (TRACEMARK_BLESS=1 writes it)", path.display()));
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the output, first at line {}:\nexpected: {:?}\nactual:   {:?}",
            path.display(),
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}
