//! `convert` refuses, with one clear message and a failing exit status, what
//! used to write an empty trace and exit 0: a `--device` or `--volume` that
//! matches no device of the input (the message lists the devices there are,
//! with their I/O counts), and a `--skip-bad` that leaves no I/O.

use crate::support::tracemark;
use std::fs;
use std::path::Path;
use std::process::Output;

/// Two devices: 8:0 with two I/Os, 8:16 with one.
const TWO_DEVICES: &str = "\
  8,0    1        1     0.000000000   100  Q   R 2048 + 8 [app]
  8,0    1        2     0.000001000   100  D   R 2048 + 8 [app]
  8,16   1        3     0.000002000   100  D   W 64 + 8 [app]
  8,0    1        4     0.000003000   100  D   R 4096 + 8 [app]
  8,0    1        5     0.000100000     0  C   R 2048 + 8 [0]
";

fn convert(dir: &Path, input: &str, args: &[&str]) -> Output {
    let path = dir.join("in.txt");
    fs::write(&path, input).unwrap();
    tracemark()
        .arg("convert")
        .arg(&path)
        .arg("-o")
        .arg(dir.join("out.tmt"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn a_device_that_matches_nothing_fails_and_lists_the_devices() {
    let dir = tempfile::tempdir().unwrap();
    let out = convert(dir.path(), TWO_DEVICES, &["--device", "8:32"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--device 8:32 matches no device of the input")
            && err.contains("8:0 (2 I/Os), 8:16 (1 I/Os)"),
        "{err}"
    );
    assert!(!dir.path().join("out.tmt").exists());

    let out = convert(dir.path(), TWO_DEVICES, &["--volume", "3"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--volume 3 (device 0:3) matches no device"),
        "{err}"
    );

    // A device that is there converts.
    let out = convert(dir.path(), TWO_DEVICES, &["--device", "8:16", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn skip_bad_that_leaves_no_io_fails() {
    let dir = tempfile::tempdir().unwrap();
    let bad = "\
  8,0    1        1     0.000000000   100  D   R 2048 +
  8,0    1        2     0.000001000   100  D   R 99999999999999999999 + 8 [app]
";
    let out = convert(dir.path(), bad, &["--skip-bad", "--format", "blkparse"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no I/O left: --skip-bad skipped 2 bad line(s)") && err.contains("in.txt:1"),
        "{err}"
    );
    assert!(!dir.path().join("out.tmt").exists());
}
