//! An ordinary user (no root, an 8 MiB memory-lock limit) can replay onto a
//! scratch file: where pinning the buffers is refused, the engine uses them
//! unregistered instead of failing; where the CPU latency request of
//! `--cpu-idle poll` is refused, it warns and the result says `os`.

use crate::support::SystemTest;
use std::os::unix::fs::PermissionsExt;
use trace_format::*;

#[test]
fn an_ordinary_user_replays_onto_a_scratch_file() {
    let Some(t) = SystemTest::start(&["setpriv"]) else {
        return;
    };
    let dir = t.dir();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    // The ordinary user may not reach the built binary (a checkout in a
    // 0700 directory): it runs a copy in the world-readable temp dir.
    let binary = dir.join("tracemark");
    std::fs::copy(env!("CARGO_BIN_EXE_tracemark"), &binary).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let trace = dir.join("t.tmt");
    let mut w = TraceWriter::new(
        std::fs::File::create(&trace).unwrap(),
        &TraceHeader::new("t", "test"),
    )
    .unwrap();
    for i in 0..200u64 {
        let op = if i % 3 == 0 { Op::Write } else { Op::Read };
        w.push(&IoRecord {
            time: Nanos(i * 10_000),
            op,
            offset: Bytes((i * 7919 % 1000) * 262144),
            len: Bytes(262144),
            flags: Flags::NONE,
            latency: None,
            stream: None,
            device: 0,
        })
        .unwrap();
    }
    w.finish(&TraceTail::default()).unwrap();
    std::fs::set_permissions(&trace, std::fs::Permissions::from_mode(0o644)).unwrap();
    let json = dir.join("r.json");
    // 256 KiB x 32 slots, once for reads and once for writes, is 16 MiB of
    // buffers, over the 8 MiB that may be pinned.
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -l 8192 && cd '{}' && XDG_DATA_HOME='{}/data' exec '{}' replay t.tmt --mode compressed --passes 1 --no-warmup --json r.json",
            dir.display(),
            dir.display(),
            binary.display()
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay as an ordinary user failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let t = &v["traces"][0];
    assert_eq!(t["ios"], 200);
    assert_eq!(t["read_bytes"], 133 * 262144);
    assert_eq!(t["write_bytes"], 67 * 262144);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--cpu-idle poll") && stderr.contains("refused"),
        "no warning about the refused CPU latency request: {stderr}"
    );
    assert!(
        v["options"].get("cpu_idle").is_none(),
        "cpu_idle recorded as {} though the request was refused",
        v["options"]["cpu_idle"]
    );
}
