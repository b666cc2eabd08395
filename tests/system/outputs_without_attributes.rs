//! Outputs on a filesystem that keeps no user attributes (ramfs, as vfat
//! and exFAT): the ledger in the state folder holds their marks, so a
//! second run replaces its own unchanged output there, and a file of the
//! user's, or an output changed since, is still refused.

use crate::support::mount::Mount;
use crate::support::replay::{rec, write_trace, KIB};
use crate::support::{require_root, require_tools, tracemark};
use std::fs;
use std::path::Path;
use std::process::Output;
use trace_format::Op;

fn export(trace: &Path, out: &Path, state: &Path) -> Output {
    tracemark()
        .env("TRACEMARK_STATE_DIR", state)
        .arg("export")
        .arg(trace)
        .args(["--to", "csv", "-o"])
        .arg(out)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_output_where_no_attribute_is_kept_is_replaced_only_as_the_ledger_allows() {
    if !require_root() || !require_tools(&["mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = d.join("t.tmt");
    let recs: Vec<_> = (0..50u64)
        .map(|i| rec(i * 1000, Op::Read, i * 64 * KIB, 4 * KIB))
        .collect();
    write_trace(&t, "t", &recs);
    let ram = Mount::new(["-t", "ramfs", "ramfs"], &d.join("ram"));
    let state = d.join("state");
    let out = ram.0.join("out.csv");

    let first = export(&t, &out, &state);
    assert!(first.status.success(), "{}", stderr(&first));
    let written = fs::read(&out).unwrap();
    assert!(!written.is_empty());
    // The ledger names it; a second run replaces its own unchanged output.
    let again = export(&t, &out, &state);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(fs::read(&out).unwrap(), written);

    // Another state folder has no record of it: refused, kept.
    let elsewhere = export(&t, &out, &d.join("other-state"));
    assert_eq!(elsewhere.status.code(), Some(1));
    assert!(
        stderr(&elsewhere).contains("keeps no extended attributes"),
        "{}",
        stderr(&elsewhere)
    );
    assert_eq!(fs::read(&out).unwrap(), written);

    // Changed since tracemark wrote it: refused, the change kept.
    let mut edited = written.clone();
    edited.extend_from_slice(b"a line of the user's\n");
    fs::write(&out, &edited).unwrap();
    let refused = export(&t, &out, &state);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("changed since"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(fs::read(&out).unwrap(), edited);

    // A file of the user's there: refused, kept.
    let doc = ram.0.join("doc.txt");
    fs::write(&doc, b"the user's notes\n").unwrap();
    let theirs = export(&t, &doc, &state);
    assert_eq!(theirs.status.code(), Some(1));
    assert!(stderr(&theirs).contains("doc.txt"), "{}", stderr(&theirs));
    assert_eq!(fs::read(&doc).unwrap(), b"the user's notes\n");

    // --overwrite replaces it, and the output is tracemark's again.
    let told = tracemark()
        .env("TRACEMARK_STATE_DIR", &state)
        .arg("--overwrite")
        .arg("export")
        .arg(&t)
        .args(["--to", "csv", "-o"])
        .arg(&doc)
        .output()
        .unwrap();
    assert!(told.status.success(), "{}", stderr(&told));
    assert_eq!(fs::read(&doc).unwrap(), written);
    let after = export(&t, &doc, &state);
    assert!(after.status.success(), "{}", stderr(&after));
}
