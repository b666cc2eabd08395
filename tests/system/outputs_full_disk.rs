//! A full disk under every output: each command that writes a file, with
//! its output on a private, full 64 KiB tmpfs, fails naming the file and
//! the cause, and leaves the previous file whole and nothing else.

use crate::support::mount::Mount;
use crate::support::replay::{rec, write_trace, KIB};
use crate::support::{output_inputs, require_root, require_tools, tracemark};
use std::path::{Path, PathBuf};
use trace_format::Op;

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_full_disk_under_every_output_keeps_the_old_file_and_leaves_nothing() {
    if !require_root() || !require_tools(&["mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let recs: Vec<_> = (0..20_000u64)
        .map(|i| {
            let op = if i % 4 == 0 { Op::Write } else { Op::Read };
            rec(i * 10, op, (i % 512) * 16 * KIB, 4 * KIB)
        })
        .collect();
    let t = d.join("t.tmt");
    write_trace(&t, "t", &recs);
    let csv = d.join("in.csv");
    let lines: String = (0..20_000u64)
        .map(|i| {
            format!(
                "{},h,0,Read,{},4096,100\n",
                128_166_372_003_061_629u64 + i * 5000,
                i * 4096
            )
        })
        .collect();
    std::fs::write(&csv, lines).unwrap();
    let db = d.join("results.db");
    let scratch = d.join("scratch.bin");
    let ctarget = d.join("consistency.bin");
    // Three stored runs and their result files; the ranks of a sharded
    // replay, for `merge`; a marked trace and a realtime replay of it, for
    // `calibrate`.
    let results = output_inputs::imported_runs(d, &db, 3);
    let ranks = output_inputs::fleet_ranks(d, 3);
    let (marked, first) = output_inputs::marked_replay(d, 300);
    let s = |p: &Path| p.display().to_string();
    let commands: Vec<Vec<String>> = vec![
        vec![
            "export".into(),
            s(&t),
            "--to".into(),
            "csv".into(),
            "-o".into(),
        ],
        vec![
            "export".into(),
            s(&t),
            "--to".into(),
            "fio".into(),
            "-o".into(),
        ],
        vec![
            "convert".into(),
            s(&csv),
            "--format".into(),
            "msr".into(),
            "-q".into(),
            "-o".into(),
        ],
        vec![
            "compare".into(),
            s(&results[0]),
            s(&results[1]),
            "--html".into(),
        ],
        vec![
            "results".into(),
            "export".into(),
            "--all".into(),
            "--db".into(),
            s(&db),
            "-o".into(),
        ],
        vec![
            "results".into(),
            "compare".into(),
            "1".into(),
            "2".into(),
            "--db".into(),
            s(&db),
            "--html".into(),
        ],
        vec![
            "results".into(),
            "leaderboard".into(),
            "--db".into(),
            s(&db),
            "--html".into(),
        ],
        vec![
            "replay".into(),
            s(&t),
            "--target".into(),
            s(&scratch),
            "--mode".into(),
            "compressed".into(),
            "--passes".into(),
            "1".into(),
            "--no-db".into(),
            "--json".into(),
        ],
        vec![
            "consistency".into(),
            s(&t),
            "--target".into(),
            s(&ctarget),
            "--size".into(),
            "16M".into(),
            "--allow-write".into(),
            "--no-db".into(),
            "--rounds-degrade".into(),
            "1".into(),
            "--rounds-steady".into(),
            "0".into(),
            "--rounds-recovery".into(),
            "0".into(),
            "--degrade-start".into(),
            "200ms".into(),
            "--json".into(),
        ],
        vec![
            "merge".into(),
            s(&ranks[0]),
            s(&ranks[1]),
            s(&ranks[2]),
            "-o".into(),
        ],
    ];
    // `consistency --html`: the same run, its report.
    let mut html = commands
        .iter()
        .find(|c| c[0] == "consistency")
        .unwrap()
        .clone();
    *html.last_mut().unwrap() = "--html".into();
    let mut commands = commands;
    commands.push(html);
    commands.push(vec![
        "calibrate".into(),
        s(&marked),
        "--from".into(),
        s(&first),
        "--accept-cpu-wait".into(),
        "-o".into(),
    ]);
    // Parquet: a converted trace, whose records name the devices of its table.
    #[cfg(feature = "parquet")]
    let converted = {
        let p = d.join("converted.tmt");
        let o = tracemark()
            .arg("convert")
            .arg(&csv)
            .args(["--format", "msr", "-q", "-o"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        p
    };
    #[cfg(feature = "parquet")]
    commands.push(vec![
        "export".into(),
        s(&converted),
        "--to".into(),
        "parquet".into(),
        "-o".into(),
    ]);
    for (i, args) in commands.iter().enumerate() {
        // It works where there is room.
        let roomy = d.join(format!("roomy-{i}.out"));
        let o = tracemark().args(args).arg(&roomy).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(std::fs::metadata(&roomy).unwrap().len() > 0);
        // A private 64 KiB tmpfs holding the previous output, then filled.
        let at = d.join(format!("full-{i}"));
        let _fs = Mount::tmpfs(&at, "64k");
        let out = at.join("out.file");
        // The previous output, as tracemark left it.
        outfile::write(&out, b"the previous output\n").unwrap();
        let _ = std::fs::write(at.join("filler"), vec![1u8; 64 << 10]);
        let before = listing(&at);
        let o = tracemark().args(args).arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert!(
            // (the leaderboard names the run page it was writing, out.run-N.html)
            err.contains(&format!("full-{i}/out.")) && err.contains("No space left"),
            "{args:?}: the message names the file and the cause: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "the previous output\n",
            "{args:?}"
        );
        assert_eq!(listing(&at), before, "{args:?}: left behind");
    }
}

/// `convert --split-by volume` onto a full disk fails naming the trace it
/// was writing and the cause, and writes none of the traces: the folder's
/// previous trace is whole and nothing else is there.
#[test]
fn a_full_disk_under_a_split_names_the_trace_and_writes_none() {
    if !require_root() || !require_tools(&["mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two volumes of scattered reads (Alibaba: volume,op,offset,length,µs).
    let csv = d.join("ali.csv");
    let lines: String = (0..40_000u64)
        .map(|i| {
            let offset = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % (1 << 30) / 4096 * 4096;
            format!(
                "{},R,{offset},4096,{}\n",
                1 + i % 2,
                1_577_808_000_000_000 + i * 50
            )
        })
        .collect();
    std::fs::write(&csv, lines).unwrap();
    let at = d.join("full-split");
    let _fs = Mount::tmpfs(&at, "64k");
    let out = at.join("out");
    std::fs::create_dir(&out).unwrap();
    let previous = out.join("ali-vol1.tmt");
    // The previous output, as tracemark left it.
    outfile::write(&previous, b"the previous output\n").unwrap();
    let _ = std::fs::write(at.join("filler"), vec![1u8; 64 << 10]);
    let before = listing(&out);
    let o = tracemark()
        .arg("convert")
        .arg(&csv)
        .args(["--format", "alibaba", "--split-by", "volume", "-q", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("full-split/out/ali-vol") && err.contains("No space left"),
        "the message names the trace and the cause: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(&previous).unwrap(),
        "the previous output\n"
    );
    assert_eq!(listing(&out), before, "left behind");
}

#[test]
fn a_scratch_file_too_large_for_its_filesystem_is_refused_and_leaves_nothing() {
    if !require_root() || !require_tools(&["mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Reads over 64 MiB: a scratch file of that size.
    let recs: Vec<_> = (0..64u64)
        .map(|i| rec(i * 10, Op::Read, i * 1024 * KIB, 4 * KIB))
        .collect();
    let trace = d.join("t.tmt");
    write_trace(&trace, "t", &recs);
    let at = d.join("small");
    let _fs = Mount::tmpfs(&at, "1m");
    let o = tracemark()
        .arg("replay")
        .arg(&trace)
        .arg("--target")
        .arg(at.join("scratch.bin"))
        .args([
            "--mode",
            "compressed",
            "--passes",
            "1",
            "--no-warmup",
            "--no-db",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("scratch.bin") && err.contains("MiB free"),
        "{err}"
    );
    assert!(listing(&at).is_empty(), "left behind: {:?}", listing(&at));
}

/// A results database a full disk keeps from being made: the run fails
/// naming it, and leaves no file behind (no empty database, no journal).
#[test]
fn a_results_database_a_full_disk_keeps_from_being_made_leaves_no_file() {
    if !require_root() || !require_tools(&["mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("full-db");
    let _fs = Mount::tmpfs(&at, "64k");
    let _ = std::fs::write(at.join("filler"), vec![1u8; 64 << 10]);
    let before = listing(&at);
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/tests/fixtures/replay-file.json");
    let o = tracemark()
        .args(["results", "import"])
        .arg(&fixture)
        .arg("--db")
        .arg(at.join("results.db"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("full-db/results.db")
            && (err.contains("disk is full") || err.contains("No space left")),
        "{err}"
    );
    assert_eq!(listing(&at), before, "left behind");
}
