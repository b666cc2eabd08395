//! The drive's serial number in a stored result: hashed unless
//! `--keep-serial`, and the same hash on every run of one drive (the
//! leaderboard groups runs by it). The target is a scratch file on the disk
//! the build directory is on; its serial is read from sysfs here, apart
//! from tracemark's own reading. (The hashing on devices of every kind is
//! tested on a sysfs tree of the kernel's shape: replayer's identity tests.)

use crate::support;
use crate::support::replay::{rec, write_trace, KIB, MIB};
use std::path::Path;
use std::process::Output;
use trace_format::Op;

fn run_in(dir: &Path, args: &[&str]) -> Output {
    let out = support::tracemark()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "tracemark {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "tracemark {}", args.join(" "));
    out
}

/// The serial number device `name` reports, as the kernel shows it: a
/// `serial` file (virtio, NVMe namespaces' controller, USB) or the SCSI
/// unit serial number page.
fn sysfs_serial(name: &str) -> Option<String> {
    let dir = Path::new("/sys/class/block").join(name);
    let text = |p: &str| {
        std::fs::read_to_string(dir.join(p))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    text("serial")
        .or_else(|| text("device/serial"))
        .or_else(|| {
            let page = std::fs::read(dir.join("device/vpd_pg80")).ok()?;
            let s = String::from_utf8_lossy(page.get(4..)?).trim().to_string();
            Some(s).filter(|s| !s.is_empty())
        })
}

/// The stored result of run `id` (as `results show --json` gives it).
fn stored(dir: &Path, db: &str, id: u32) -> serde_json::Value {
    let out = run_in(
        dir,
        &["results", "show", &id.to_string(), "--json", "--db", db],
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn serial_of(result: &serde_json::Value) -> Option<String> {
    result["target"]["filesystem"]["drive"]["serial"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn the_serial_is_stored_hashed_the_same_each_run_and_kept_only_when_asked() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let trace = dir.path().join("t.tmt");
    let recs: Vec<_> = (0..32u64)
        .map(|i| rec(i * 200, Op::Read, (i * 37 % 32) * MIB / 4, 64 * KIB))
        .collect();
    write_trace(&trace, "small", &recs);
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let replay = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            trace.to_str().unwrap(),
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--no-warmup",
            "--db",
            db,
        ];
        args.extend(extra);
        run_in(dir.path(), &args);
    };
    replay(&[]);
    let first = stored(dir.path(), db, 1);
    let Some(name) = first["target"]["filesystem"]["drive"]["name"].as_str() else {
        support::skip("the build directory's filesystem has no block device under it");
        return;
    };
    let Some(raw) = sysfs_serial(name) else {
        // A drive without a serial: none is stored, hashed or not (the
        // hashing itself is covered on a sysfs tree of the kernel's shape
        // in the identity unit tests).
        assert_eq!(serial_of(&first), None, "{name} reports no serial");
        replay(&["--keep-serial"]);
        assert_eq!(serial_of(&stored(dir.path(), db, 2)), None);
        eprintln!("note: {name} (under the build directory) reports no serial number");
        return;
    };

    // Hashed: `sha256:` and 16 hex digits, not the serial.
    let hashed = serial_of(&first).expect("the drive's serial, hashed");
    let hex = hashed.strip_prefix("sha256:").expect("sha256: form");
    assert_eq!(hex.len(), 16, "{hashed}");
    assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{hashed}");
    assert!(!hashed.contains(&raw), "{hashed} shows the serial {raw}");
    for file in [db.to_string(), format!("{db}-wal")] {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !bytes.windows(raw.len()).any(|w| w == raw.as_bytes()),
            "{file} holds the serial"
        );
    }

    // Another run of the same drive: the same hash.
    replay(&[]);
    assert_eq!(serial_of(&stored(dir.path(), db, 2)), Some(hashed.clone()));

    // --keep-serial: the serial as the drive reports it.
    replay(&["--keep-serial"]);
    assert_eq!(serial_of(&stored(dir.path(), db, 3)), Some(raw));
}
