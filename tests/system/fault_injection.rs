//! Faults a drive can have, and what a replay must do about them. A full
//! filesystem under a loop device (a sparse image on a private 4 MiB tmpfs)
//! fails most writes: the replay must exit 2, write its result marked
//! `"valid": false` with the reason, and `compare` must flag it and give no
//! ratio against it unless `--include-invalid`.

use crate::support::replay::*;
use crate::support::{require_root, require_tools};
use std::path::{Path, PathBuf};
use std::process::Command;
use trace_format::Op;

struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

struct Loop(PathBuf);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_replay_with_device_errors_exits_2_and_is_marked_not_valid() {
    if !require_root() || !require_tools(&["losetup", "mount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    assert!(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4M", "tmpfs"])
        .arg(&small)
        .status()
        .unwrap()
        .success());
    let _tmpfs = Tmpfs(small.clone());
    let image = small.join("img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&image)
        .output()
        .unwrap();
    assert!(out.status.success());
    let dev = Loop(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));

    // 32 MiB of writes into a 64 MiB device whose backing store holds 4 MiB.
    let recs: Vec<_> = (0..512u64)
        .map(|i| rec(i * 20, Op::Write, i * 64 * KIB, 64 * KIB))
        .collect();
    let trace = dir.path().join("fill.tmt");
    write_trace(&trace, "fill", &recs);
    let result = dir.path().join("bad.json");
    let out = replay(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--target",
            dev.0.to_str().unwrap(),
            "--allow-write",
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--json",
            result.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the result is not valid"), "{err}");
    let v = json(&result);
    assert_eq!(v["valid"], false);
    let reasons = v["invalid_reasons"].as_array().unwrap();
    assert!(
        reasons[0]
            .as_str()
            .unwrap()
            .contains("I/Os failed on the device (write:"),
        "{reasons:?}"
    );
    assert_eq!(v["traces"][0]["valid"], false);

    // A clean run of the same trace onto a file, then compare.
    let good = dir.path().join("good.json");
    let out = replay(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--target",
            dir.path().join("scratch.bin").to_str().unwrap(),
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--json",
            good.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        json(&good).get("valid").is_none(),
        "a valid result carries no mark"
    );
    let compare = |extra: &[&str]| {
        let out = crate::support::tracemark()
            .arg("compare")
            .arg(&good)
            .arg(&result)
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = compare(&[]);
    assert!(text.contains("is not a valid result"), "{text}");
    let score_row = |text: &str| {
        text.lines()
            .skip_while(|l| !l.starts_with("score"))
            .find(|l| l.starts_with("fill"))
            .unwrap()
            .to_string()
    };
    // One ratio (the reference's own 1.00x), none for the invalid column.
    assert_eq!(score_row(&text).matches("x)").count(), 1, "{text}");
    let text = compare(&["--include-invalid"]);
    assert_eq!(score_row(&text).matches("x)").count(), 2, "{text}");
}
