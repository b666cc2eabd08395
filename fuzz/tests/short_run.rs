//! The short fuzz run CI does: every target for a few seconds
//! (`TRACEMARK_FUZZ_SECONDS`, default 2), no crash, and enough inputs tried
//! and accepted to show the target really ran its parser.

use std::time::Duration;

#[test]
fn every_target_survives_a_short_run() {
    let seconds: u64 = std::env::var("TRACEMARK_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let crash_dir =
        std::env::temp_dir().join(format!("tracemark-fuzz-crashes-{}", std::process::id()));
    let mut failures = Vec::new();
    for target in tracemark_fuzz::targets::all() {
        let s = tracemark_fuzz::run(
            &target,
            Duration::from_secs(seconds),
            u64::MAX,
            7,
            Some(&crash_dir),
        )
        .unwrap();
        eprintln!(
            "{}: {} inputs, {} accepted, {} crashes",
            s.target,
            s.inputs,
            s.accepted,
            s.crashes.len()
        );
        assert!(s.inputs >= 50, "{}: only {} inputs ran", s.target, s.inputs);
        // Seeds are valid inputs: a target that accepts nothing tests nothing.
        assert!(s.accepted > 0, "{}: no input was accepted", s.target);
        for c in &s.crashes {
            failures.push(format!("{}: {} ({:?})", s.target, c.message, c.saved_as));
        }
    }
    assert!(failures.is_empty(), "crashes:\n{}", failures.join("\n"));
    let _ = std::fs::remove_dir_all(&crash_dir);
}
