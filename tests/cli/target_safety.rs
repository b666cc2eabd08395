//! A replay writes over its target, so a target is never a file the run
//! reads (a trace, the suite file), one of its outputs or the results
//! database, by any path to it; a regular file that holds data tracemark did
//! not write is written or grown only with `--allow-write`; two outputs of
//! one run are never one file; and `-o /dev/stdout` writes where standard
//! output goes instead of replacing the file behind it.

use crate::support::replay::{rec, write_trace};
use crate::support::tracemark;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use trace_format::Op;

/// A small trace of reads and writes over 2 MiB.
fn trace(dir: &Path) -> PathBuf {
    let records: Vec<_> = (0..64u64)
        .map(|i| {
            let op = if i % 4 == 0 { Op::Write } else { Op::Read };
            rec(i * 20, op, (i * 7919 % 32) * 65536, 4096)
        })
        .collect();
    let path = dir.join("t.tmt");
    write_trace(&path, "t", &records);
    path
}

/// `tracemark ARGS` in `dir`, with `db` as the results database and a
/// quick one-pass replay's options after them.
fn command(dir: &Path, db: &Path, args: &[&str]) -> Command {
    let mut c = tracemark();
    c.current_dir(dir)
        .env("TRACEMARK_DB", db)
        .args(args)
        .args(["--mode", "compressed", "--passes", "1", "--no-warmup"])
        .args(["--cpu-idle", "os"]);
    c
}

/// [`command`] run, its standard error shown.
fn run(dir: &Path, db: &Path, args: &[&str]) -> Output {
    let out = command(dir, db, args).output().unwrap();
    eprintln!(
        "tracemark {}: {}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn refused(out: &Output, says: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(says), "wanted {says:?} in: {err}");
}

/// A results database with one run in it.
fn database(dir: &Path, t: &Path) -> PathBuf {
    let db = dir.join("results.db");
    let o = run(
        dir,
        &db,
        &["replay", &t.display().to_string(), "--target", "first.bin"],
    );
    assert!(o.status.success());
    db
}

#[test]
fn a_target_is_never_a_trace_the_suite_file_an_output_or_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d);
    let db = database(d, &t);
    fs::write(
        d.join("s.toml"),
        "name = \"s\"\n[[trace]]\nname = \"t\"\nfile = \"t.tmt\"\n",
    )
    .unwrap();
    symlink(&t, d.join("link.tmt")).unwrap();
    fs::hard_link(&t, d.join("hard.tmt")).unwrap();
    symlink(&db, d.join("db-link")).unwrap();
    let before: Vec<(PathBuf, Vec<u8>)> = ["t.tmt", "s.toml", "results.db"]
        .iter()
        .map(|n| (d.join(n), fs::read(d.join(n)).unwrap()))
        .collect();
    let input = "is the same file as the input";
    for (args, says) in [
        (&["replay", "t.tmt", "--target", "t.tmt"][..], input),
        (&["replay", "t.tmt", "--target", "./link.tmt"], input),
        (
            &["replay", "t.tmt", "--target", "hard.tmt", "--read-only"],
            input,
        ),
        (&["suite", "--suite", "s.toml", "--target", "s.toml"], input),
        (
            &["replay", "t.tmt", "--target", "results.db", "--no-db"],
            "is the results database",
        ),
        (
            &["replay", "t.tmt", "--target", "db-link", "--read-only"],
            "is the results database",
        ),
        (
            &["replay", "t.tmt", "--target", "results.db-wal"],
            "is the results database",
        ),
        (
            &[
                "replay", "t.tmt", "--target", "new.bin", "--json", "new.bin",
            ],
            "the output new.bin",
        ),
        (
            &[
                "suite", "--suite", "s.toml", "--target", "x.bin", "--json", "s.toml",
            ],
            input,
        ),
    ] {
        refused(&run(d, &db, args), says);
    }
    for (path, bytes) in before {
        assert_eq!(
            fs::read(&path).unwrap(),
            bytes,
            "{} changed",
            path.display()
        );
    }
    assert!(!d.join("new.bin").exists() && !d.join("x.bin").exists());
}

#[test]
fn a_file_with_data_tracemark_did_not_write_needs_allow_write() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d);
    let db = d.join("results.db");
    let user = d.join("user.img");
    fs::write(&user, b"a user's bytes").unwrap();
    let t = t.display().to_string();
    // Neither written nor grown, even to replay only the reads.
    for extra in [&[][..], &["--read-only", "--precondition", "skip"]] {
        let args = [
            &["replay", &t, "--target", "user.img", "--no-db"][..],
            extra,
        ]
        .concat();
        refused(&run(d, &db, &args), "tracemark did not make");
        assert_eq!(fs::read(&user).unwrap(), b"a user's bytes");
    }
    // Given up with --allow-write, it is the run's.
    let o = run(
        d,
        &db,
        &[
            "replay",
            &t,
            "--target",
            "user.img",
            "--no-db",
            "--allow-write",
        ],
    );
    assert!(o.status.success());
    assert!(fs::metadata(&user).unwrap().len() >= 2 << 20);
    // A file tracemark made is its own to write again; so is one that
    // holds no data (all holes).
    for target in ["made.bin", "made.bin"] {
        let o = run(d, &db, &["replay", &t, "--target", target, "--no-db"]);
        assert!(o.status.success(), "{target}");
    }
    // A second name for it, written by the user, is the user's file.
    fs::hard_link(d.join("made.bin"), d.join("thesis.txt")).unwrap();
    let o = run(d, &db, &["replay", &t, "--target", "thesis.txt", "--no-db"]);
    refused(&o, "tracemark did not make");
    fs::File::create(d.join("holes.img"))
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let o = run(d, &db, &["replay", &t, "--target", "holes.img", "--no-db"]);
    assert!(o.status.success());
}

#[test]
fn a_scratch_file_written_over_by_its_name_is_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d);
    let t = t.display().to_string();
    let db = d.join("results.db");
    let scratch = d.join("scr.bin");
    let replay = |extra: &[&str]| {
        let args = [&["replay", &t, "--target", "scr.bin", "--no-db"][..], extra].concat();
        run(d, &db, &args)
    };
    // tracemark's own scratch file, reused run after run.
    for _ in 0..2 {
        assert!(replay(&[]).status.success());
    }
    // A document copied over it by its name (same inode, same mark), then
    // a second copy that keeps its length: both are the user's now.
    fs::write(&scratch, b"my notes").unwrap();
    refused(
        &replay(&[]),
        "has been written since tracemark last finished",
    );
    assert_eq!(fs::read(&scratch).unwrap(), b"my notes");
    // Given up with --allow-write it is written, and stays the user's.
    assert!(replay(&["--allow-write"]).status.success());
    refused(
        &replay(&[]),
        "has been written since tracemark last finished",
    );
    fs::remove_file(&scratch).unwrap();
    assert!(replay(&[]).status.success());
    assert!(replay(&[]).status.success());
    let len = fs::metadata(&scratch).unwrap().len() as usize;
    let mut doc = vec![b'x'; len];
    doc[..9].copy_from_slice(b"my thesis");
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::OpenOptions::new()
        .write(true)
        .open(&scratch)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &doc))
        .unwrap();
    refused(
        &replay(&[]),
        "has been written since tracemark last finished",
    );
    assert_eq!(fs::read(&scratch).unwrap(), doc);
    // A run that only reads it leaves it as it is.
    let o = replay(&["--read-only", "--precondition", "skip"]);
    assert!(o.status.success());
    assert_eq!(fs::read(&scratch).unwrap(), doc);
}

/// The scratch mark's value on `path`, if any.
fn scratch_mark(path: &Path) -> Option<Vec<u8>> {
    match outfile::xattr::get_at(path, c"user.tracemark.scratch") {
        outfile::xattr::Attr::Value(v) => Some(v),
        _ => None,
    }
}

/// A realtime replay of a slow trace onto `scr.bin`, killed outright with
/// SIGKILL once its writes have begun.
fn kill_a_run_writing(d: &Path, slow: &str) {
    let mut child = tracemark()
        .current_dir(d)
        .args([
            "replay", slow, "--target", "scr.bin", "--no-db", "--passes", "1",
        ])
        .args(["--no-warmup", "--cpu-idle", "os", "--mode", "realtime"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !scratch_mark(&d.join("scr.bin")).is_some_and(|m| m.starts_with(b"w ")) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the run never marked its scratch file as being written"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: our own child's PID.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    child.wait().unwrap();
}

/// A run killed outright leaves its scratch file marked as being written:
/// the next run takes it as tracemark's, unless a document was copied over
/// it by its name in between.
#[test]
fn a_scratch_file_written_over_after_a_killed_run_is_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Writes 50 ms apart for 10 s.
    let records: Vec<_> = (0..200u64)
        .map(|i| rec(i * 50_000, Op::Write, (i % 32) * 65536, 4096))
        .collect();
    write_trace(&d.join("slow.tmt"), "slow", &records);
    let t = trace(d).display().to_string();
    let db = d.join("results.db");
    let scratch = d.join("scr.bin");
    let replay = || run(d, &db, &["replay", &t, "--target", "scr.bin", "--no-db"]);

    kill_a_run_writing(d, "slow.tmt");
    assert!(replay().status.success(), "left as the killed run left it");
    kill_a_run_writing(d, "slow.tmt");
    fs::write(&scratch, b"my notes").unwrap();
    refused(&replay(), "a run writing it was stopped outright");
    assert_eq!(fs::read(&scratch).unwrap(), b"my notes");
}

#[test]
fn two_outputs_of_one_run_are_never_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d).display().to_string();
    let new_db = d.join("new.db");
    // The database not made yet, and the JSON result at its path.
    let o = run(
        d,
        &new_db,
        &["replay", &t, "--target", "a.bin", "--json", "new.db"],
    );
    refused(&o, "is the results database");
    assert!(!new_db.exists());
    let o = tracemark()
        .current_dir(d)
        .args([
            "consistency",
            &t,
            "--target",
            "c.bin",
            "--size",
            "4M",
            "--no-db",
        ])
        .args(["--json", "r.out", "--html", "./r.out"])
        .output()
        .unwrap();
    refused(&o, "are the same file");
    assert!(!d.join("r.out").exists());
}

#[test]
fn dev_stdout_appends_where_standard_output_goes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d);
    let log = d.join("log");
    fs::write(&log, "earlier line\n").unwrap();
    let appended = fs::OpenOptions::new().append(true).open(&log).unwrap();
    let o = tracemark()
        .args([
            "export",
            &t.display().to_string(),
            "--to",
            "csv",
            "-o",
            "/dev/stdout",
        ])
        .stdout(appended)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("earlier line\n"), "{text}");
    assert_eq!(text.lines().count(), 1 + 1 + 64, "{text}");
}

#[test]
fn a_leaderboard_run_page_is_never_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d);
    let db = database(d, &t);
    let before = fs::read(&db).unwrap();
    fs::create_dir(d.join("lb")).unwrap();
    symlink(&db, d.join("lb/board.run-1.html")).unwrap();
    let o = tracemark()
        .env("TRACEMARK_DB", &db)
        .args(["results", "leaderboard", "--html"])
        .arg(d.join("lb/board.html"))
        .output()
        .unwrap();
    refused(&o, "is the results database");
    assert_eq!(fs::read(&db).unwrap(), before);
    assert!(!d.join("lb/board.html").exists());
}

#[test]
fn standard_output_is_checked_like_a_named_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d);
    let db = database(d, &t);
    let trace_bytes = fs::read(&t).unwrap();
    let db_bytes = fs::read(&db).unwrap();
    let t = t.display().to_string();
    // `-o -` with standard output appended to the input, or to the database.
    for (onto, args) in [
        (
            d.join("t.tmt"),
            vec!["export", &t, "--to", "csv", "-o", "-"],
        ),
        (db.clone(), vec!["results", "export", "1", "-o", "-"]),
    ] {
        let appended = fs::OpenOptions::new().append(true).open(&onto).unwrap();
        let o = tracemark()
            .env("TRACEMARK_DB", &db)
            .args(&args)
            .stdout(appended)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(fs::read(d.join("t.tmt")).unwrap(), trace_bytes);
    assert_eq!(fs::read(&db).unwrap(), db_bytes);
    // A leaderboard on standard output would scatter its run pages.
    let o = tracemark()
        .current_dir(d)
        .env("TRACEMARK_DB", &db)
        .args(["results", "leaderboard", "--html", "-"])
        .output()
        .unwrap();
    refused(&o, "give --html a file path");
    assert!(!d.join("-.run-1.html").exists());
}

#[test]
fn the_database_by_a_path_with_a_trailing_slash_or_in_a_folder_not_made_yet_is_protected() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d);
    let db = database(d, &t);
    let before = fs::read(&db).unwrap();
    let slashed = d.join("results.db/");
    let o = run(
        d,
        &slashed,
        &["replay", "t.tmt", "--target", "results.db", "--allow-write"],
    );
    refused(&o, "is the results database");
    let o = run(
        d,
        &d.join("results.db/."),
        &["replay", "t.tmt", "--json", "results.db"],
    );
    refused(&o, "is the results database");
    assert_eq!(fs::read(&db).unwrap(), before);
    let later = d.join("nd/x.db");
    for target in ["nd/x.db", "nd/x.db-wal"] {
        let o = run(
            d,
            &later,
            &["replay", "t.tmt", "--target", target, "--allow-write"],
        );
        refused(&o, "is the results database");
    }
    assert!(!d.join("nd").exists());
}

#[test]
fn a_failed_ranks_record_never_replaces_the_database_or_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d);
    let db = database(d, &t);
    let before = (fs::read(&db).unwrap(), fs::read(&t).unwrap());
    for json in ["results.db", "t.tmt"] {
        let o = run(
            d,
            &db,
            &[
                "replay", "t.tmt", "--shard", "0/2", "--target", "a.bin", "--json", json,
            ],
        );
        assert_ne!(o.status.code(), Some(0));
    }
    assert_eq!((fs::read(&db).unwrap(), fs::read(&t).unwrap()), before);
}

#[test]
fn a_result_on_standard_output_is_the_result_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    trace(d);
    let o = run(
        d,
        &d.join("r.db"),
        &["replay", "t.tmt", "--target", "s.bin", "--json", "-"],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    assert!(v["traces"].is_array());
    // The table and the database's line went to standard error.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("result stored as run 1"), "{err}");
}

#[test]
fn a_result_that_standard_output_cannot_take_is_still_stored() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    trace(d);
    let db = d.join("r.db");
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let args = ["replay", "t.tmt", "--target", "s.bin", "--json", "-"];
    let o = command(d, &db, &args).stdout(full).output().unwrap();
    refused(&o, "No space left");
    let listed = tracemark()
        .env("TRACEMARK_DB", &db)
        .args(["results", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("1 ")),
        "{text}"
    );
}
