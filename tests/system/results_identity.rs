//! A replay onto a block device records the device's identity from sysfs
//! (name, model, capacity, block sizes, queue limits, scheduler, transport),
//! and `tracemark results list` shows the run with the drive's model.

use crate::support::replay::{rec, write_trace, KIB, MIB};
use crate::support::{self, SystemTest};
use trace_format::Op;

#[test]
fn a_loop_device_run_records_its_identity_and_is_listed_by_model() {
    let Some(t) = SystemTest::start(&["losetup"]) else {
        return;
    };
    let dev = t.loop_device(64);
    let name = dev.path.file_name().unwrap().to_str().unwrap().to_string();
    let trace = t.dir().join("t.tmt");
    let recs: Vec<_> = (0..32u64)
        .map(|i| {
            rec(
                i * 100,
                if i % 2 == 0 { Op::Read } else { Op::Write },
                i * MIB,
                64 * KIB,
            )
        })
        .collect();
    write_trace(&trace, "ident", &recs);
    let db = t.dir().join("r.db");
    let json = t.dir().join("r.json");
    let out = support::tracemark()
        .current_dir(t.dir())
        .arg("replay")
        .arg(&trace)
        .args([
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--no-warmup",
            "--allow-write",
            "--target",
        ])
        .arg(&dev.path)
        .arg("--json")
        .arg(&json)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("drive: loop device over "), "{stdout}");

    let v = support::read_json(&json);
    let drive = &v["target"]["drive"];
    assert_eq!(drive["name"], name.as_str(), "{drive}");
    assert_eq!(drive["transport"], "loop");
    assert!(
        drive["model"]
            .as_str()
            .unwrap()
            .starts_with("loop device over "),
        "{drive}"
    );
    assert_eq!(drive["capacity_bytes"], 64 * MIB);
    assert_eq!(drive["logical_block_size"], 512);
    assert!(drive["physical_block_size"].as_u64().unwrap() >= 512);
    let sysfs = |f: &str| {
        std::fs::read_to_string(format!("/sys/block/{name}/queue/{f}"))
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(drive["rotational"], sysfs("rotational") == "1");
    assert_eq!(drive["max_sectors_kb"].to_string(), sysfs("max_sectors_kb"));
    assert_eq!(drive["nr_requests"].to_string(), sysfs("nr_requests"));
    assert!(sysfs("scheduler").contains(&format!("[{}]", drive["scheduler"].as_str().unwrap())));
    assert!(v["target"].get("filesystem").is_none());
    assert_eq!(v["schema_version"], 3);

    let list = support::tracemark()
        .args(["results", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    let row = list.lines().nth(1).unwrap_or_default();
    assert!(row.contains("loop device over"), "{list}");
    // Filtered by a part of the model.
    let by_drive = support::tracemark()
        .args(["results", "list", "--drive", "loop device", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&by_drive.stdout).lines().count(), 2);
}
