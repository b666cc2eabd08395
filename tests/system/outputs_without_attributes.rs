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

/// `tracemark [FLAGS] export TRACE --to csv -o OUT` with the state folder
/// `state`.
fn export(trace: &Path, out: &Path, state: &Path, flags: &[&str]) -> Output {
    tracemark()
        .env("TRACEMARK_STATE_DIR", state)
        .args(flags)
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

/// `o` failed with one error saying `why`, and `file` still holds `kept`.
fn refused(o: &Output, why: &str, file: &Path, kept: &[u8]) {
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    assert!(stderr(o).contains(why), "{}", stderr(o));
    assert_eq!(fs::read(file).unwrap(), kept);
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

    let first = export(&t, &out, &state, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    let written = fs::read(&out).unwrap();
    assert!(!written.is_empty());
    // The ledger names it; a second run replaces its own unchanged output.
    let again = export(&t, &out, &state, &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(fs::read(&out).unwrap(), written);

    // Another state folder has no record of it: refused, kept.
    let elsewhere = export(&t, &out, &d.join("other-state"), &[]);
    refused(&elsewhere, "keeps no extended attributes", &out, &written);

    // Changed since tracemark wrote it: refused, the change kept.
    let mut edited = written.clone();
    edited.extend_from_slice(b"a line of the user's\n");
    fs::write(&out, &edited).unwrap();
    refused(
        &export(&t, &out, &state, &[]),
        "changed since",
        &out,
        &edited,
    );

    // A file of the user's there: refused, kept.
    let doc = ram.0.join("doc.txt");
    fs::write(&doc, b"the user's notes\n").unwrap();
    let theirs = export(&t, &doc, &state, &[]);
    refused(&theirs, "doc.txt", &doc, b"the user's notes\n");

    // --overwrite replaces it, and the output is tracemark's again.
    let told = export(&t, &doc, &state, &["--overwrite"]);
    assert!(told.status.success(), "{}", stderr(&told));
    assert_eq!(fs::read(&doc).unwrap(), written);
    let after = export(&t, &doc, &state, &[]);
    assert!(after.status.success(), "{}", stderr(&after));
}
