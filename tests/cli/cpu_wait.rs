//! A replay whose threads wait for a CPU says so: the result records the
//! wait (`fidelity.cpu_wait_s`) and the table cautions that the machine's
//! other load is in the figures. (One trace's score moved 2.67x between two
//! runs on a loaded machine with nothing in the result to tell why.)

use crate::support::replay::{rec, write_trace, KIB};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use trace_format::Op;

/// Pins the calling thread (and what it spawns from now on) to `cpu`;
/// returns the previous set.
fn pin_to(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls get valid
    // pointers and sizes; pid 0 is the calling thread.
    unsafe {
        let mut before: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of_val(&before), &mut before);
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of_val(&one), &one),
            0,
            "cannot pin to CPU {cpu}"
        );
        before
    }
}

fn first_allowed_cpu() -> usize {
    // SAFETY: as in pin_to.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set);
        (0..libc::CPU_SETSIZE as usize)
            .find(|&c| libc::CPU_ISSET(c, &set))
            .unwrap_or(0)
    }
}

#[test]
fn a_replay_that_waits_for_a_cpu_records_it_and_the_table_cautions() {
    let dir = tempfile::tempdir().unwrap();
    // 400 reads 1 ms apart: the replay sleeps between them and must get a
    // CPU back for each.
    let recs: Vec<_> = (0..400u64)
        .map(|i| rec(i * 1000, Op::Read, (i % 64) * 64 * KIB, 4 * KIB))
        .collect();
    let trace = dir.path().join("paced.tmt");
    write_trace(&trace, "paced", &recs);
    let json = dir.path().join("r.json");

    // The replay at nice 19 shares one CPU with a busy thread at nice 0:
    // it runs only when the scheduler gives it a slice between the other's.
    let cpu = first_allowed_cpu();
    let before = pin_to(cpu);
    let stop = Arc::new(AtomicBool::new(false));
    let hog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let out = Command::new("nice")
        .args(["-n", "19"])
        .arg(env!("CARGO_BIN_EXE_tracemark"))
        .current_dir(dir.path())
        // Open loop: a schedule this late would make a closed-loop result
        // not valid (its lateness), which is another test's subject.
        .args(["replay", "--mode", "realtime", "--open-loop"])
        .args(["--passes", "1", "--no-warmup"])
        .arg(&trace)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    hog.join().unwrap();
    // SAFETY: restores the set read before.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&before), &before) };

    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = crate::support::read_json(&json);
    let f = &v["traces"][0]["fidelity"];
    let wait = f["cpu_wait_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("no cpu_wait_s in {f}"));
    let achieved = f["achieved_s"].as_f64().unwrap();
    assert!(
        wait > 0.05 * achieved,
        "waited {wait} s of {achieved} s while sharing a CPU at nice 19"
    );
    assert_eq!(
        v["traces"][0]["passes"][0]["fidelity"]["cpu_wait_s"], f["cpu_wait_s"],
        "the trace's wait is its one pass's"
    );
    assert!(
        stdout.contains("paced: caution: its replay waited")
            && stdout.contains("the machine's other load is in these figures"),
        "{stdout}"
    );
}
