//! Every output is written by one writer (`outfile`): an output that is an
//! input or the results database is refused by any path to it, a kill at
//! any moment leaves the old file or the new one whole and no temporary,
//! the output's name may be as long as the filesystem allows, a line that
//! never ends is an error, and `consistency --size` keeps the file's size.

use crate::support::replay::{rec, write_trace};
use crate::support::{output_inputs, result_fixture, tracemark};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use trace_format::Op;

fn trace(dir: &Path, name: &str, n: u64) -> PathBuf {
    let records: Vec<_> = (0..n)
        .map(|i| {
            let op = if i % 3 == 0 { Op::Write } else { Op::Read };
            rec(i * 20, op, (i * 7919 % 512) * 8192, 4096 * (1 + i % 4))
        })
        .collect();
    let path = dir.join(name);
    write_trace(&path, name, &records);
    path
}

fn msr_csv(dir: &Path, n: u64) -> PathBuf {
    let mut text = String::new();
    for i in 0..n {
        let op = if i % 4 == 0 { "Write" } else { "Read" };
        text.push_str(&format!(
            "{},host,0,{op},{},{},100\n",
            128_166_372_003_061_629u64 + i * 5000,
            (i * 7919 % 64) * 131_072,
            4096 * (1 + i % 8)
        ));
    }
    let path = dir.join("in.csv");
    fs::write(&path, text).unwrap();
    path
}

/// The ways a second path reaches the same file.
#[derive(Debug, Clone, Copy)]
enum Alias {
    Name,
    Symlink,
    HardLink,
    ProcFd,
}

/// Runs `tracemark ARGS` with the output (where `{}` stands) replaced by a
/// path of kind `alias` to `file`.
fn run_with_alias(dir: &Path, file: &Path, alias: Alias, args: &[&str], db: &Path) -> Output {
    let out: PathBuf = match alias {
        Alias::Name => file.to_path_buf(),
        Alias::Symlink => {
            let p = dir.join(format!("link-{}", unique()));
            symlink(file, &p).unwrap();
            p
        }
        Alias::HardLink => {
            let p = dir.join(format!("hard-{}", unique()));
            fs::hard_link(file, &p).unwrap();
            p
        }
        Alias::ProcFd => PathBuf::from("/proc/self/fd/9"),
    };
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{}", &out.display().to_string()))
        .collect();
    let mut c = if let Alias::ProcFd = alias {
        // The command itself holds the file open as descriptor 9.
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("exec 9<\"$1\"; shift; exec \"$@\"")
            .arg("sh")
            .arg(file)
            .arg(env!("CARGO_BIN_EXE_tracemark"));
        crate::support::private_data(&mut c);
        c
    } else {
        tracemark()
    };
    c.current_dir(dir)
        .args(&args)
        .env("TRACEMARK_DB", db)
        .output()
        .unwrap()
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// What the writing commands read, made in `d`: a trace, an MSR CSV, two
/// results, a database holding the first, and the scratch file's path.
struct Inputs {
    t: PathBuf,
    csv: PathBuf,
    r: PathBuf,
    r2: PathBuf,
    db: PathBuf,
    scratch: PathBuf,
}

impl Inputs {
    /// The paths as arguments: trace, result, second result, CSV, scratch.
    fn args(&self) -> (&str, &str, &str, &str, &str) {
        fn s(p: &Path) -> &str {
            p.to_str().unwrap()
        }
        (
            s(&self.t),
            s(&self.r),
            s(&self.r2),
            s(&self.csv),
            s(&self.scratch),
        )
    }
}

fn inputs(d: &Path) -> Inputs {
    let t = trace(d, "t.tmt", 200);
    let csv = msr_csv(d, 50);
    let fig = [result_fixture::Figures::new("t", 100.0, 200.0, 80.0)];
    let r = result_fixture::write(
        d,
        "r.json",
        &result_fixture::result("realtime", "/dev/sdx", None, &fig),
    );
    let r2 = result_fixture::write(
        d,
        "r2.json",
        &result_fixture::result("realtime", "/dev/sdy", None, &fig),
    );
    let db = d.join("results.db");
    let o = tracemark()
        .args(["results", "import"])
        .arg(&r)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Inputs {
        t,
        csv,
        r,
        r2,
        db,
        scratch: d.join("scratch.bin"),
    }
}

/// Every command that writes a file refuses, before any work, an output
/// that is one of its inputs or the results database: by its name, a
/// symbolic link, a hard link and `/proc/self/fd/N`. The file is unchanged.
#[test]
fn an_output_that_is_an_input_or_the_database_is_refused_by_any_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ins = inputs(d);
    let (ts, rs, r2s, cs, ss) = ins.args();
    // (the file that must not be replaced, the command with `{}` as output)
    let cases: Vec<(&Path, Vec<&str>)> = vec![
        (&ins.t, vec!["export", ts, "--to", "csv", "-o", "{}"]),
        (&ins.t, vec!["export", ts, "--to", "fio", "-o", "{}"]),
        (
            &ins.csv,
            vec!["convert", cs, "--format", "msr", "-q", "-o", "{}"],
        ),
        (&ins.r, vec!["calibrate", ts, "--from", rs, "-o", "{}"]),
        (&ins.r, vec!["compare", rs, r2s, "--html", "{}"]),
        (&ins.r, vec!["merge", rs, r2s, "-o", "{}"]),
        (&ins.db, vec!["results", "export", "--all", "-o", "{}"]),
        (
            &ins.db,
            vec!["results", "compare", "1", "1", "--html", "{}"],
        ),
        (&ins.db, vec!["results", "leaderboard", "--html", "{}"]),
        (&ins.db, vec!["export", ts, "--to", "csv", "-o", "{}"]),
        (&ins.db, vec!["compare", rs, r2s, "--html", "{}"]),
        (
            &ins.t,
            vec!["replay", ts, "--target", ss, "--no-db", "--json", "{}"],
        ),
        (&ins.db, vec!["replay", ts, "--target", ss, "--json", "{}"]),
        (
            &ins.t,
            vec![
                "consistency",
                ts,
                "--target",
                ss,
                "--allow-write",
                "--json",
                "{}",
            ],
        ),
        (
            &ins.t,
            vec![
                "consistency",
                ts,
                "--target",
                ss,
                "--allow-write",
                "--html",
                "{}",
            ],
        ),
    ];
    for (file, args) in &cases {
        for alias in [Alias::Name, Alias::Symlink, Alias::HardLink, Alias::ProcFd] {
            let before = fs::read(file).unwrap();
            let started = Instant::now();
            let o = run_with_alias(d, file, alias, args, &ins.db);
            let err = String::from_utf8_lossy(&o.stderr);
            let what = format!("{args:?} by {alias:?}: {err}");
            assert_eq!(o.status.code(), Some(1), "{what}");
            assert!(
                err.contains("same file as the input") || err.contains("is the results database"),
                "{what}"
            );
            assert_eq!(fs::read(file).unwrap(), before, "{what}");
            // Refused before the work: no scratch file was made.
            assert!(!ins.scratch.exists(), "{what}");
            assert!(started.elapsed() < Duration::from_secs(20), "{what}");
        }
    }
}

/// Every writing command refuses, before its work, to replace a file of the
/// user's or an output changed since tracemark wrote it, and keeps it;
/// `--overwrite` replaces it, and a run replaces its own unchanged output.
#[test]
fn a_users_file_at_an_output_is_kept_unless_overwrite_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ins = inputs(d);
    let (ts, rs, r2s, cs, ss) = ins.args();
    // A task's trace and a replay of it to calibrate it from.
    let chain = d.join("chain.tmt");
    crate::support::replay::write_marked_trace(&chain, 20, 80_000_000);
    let cal = d.join("cal.json");
    let o = tracemark()
        .arg("replay")
        .arg(&chain)
        .args(["--target", ss, "--passes", "1", "--no-db", "--json"])
        .arg(&cal)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (chs, cals) = (chain.to_str().unwrap(), cal.to_str().unwrap());
    // A fleet rank's result to merge.
    let rank = d.join("rank.json");
    let o = tracemark()
        .args([
            "replay", ts, "--shard", "0/1", "--target", ss, "--passes", "1",
        ])
        .args([
            "--mode",
            "compressed",
            "--no-warmup",
            "--precondition",
            "skip",
        ])
        .args(["--cpu-idle", "os", "--no-db", "--json"])
        .arg(&rank)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ranks = rank.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["export", ts, "--to", "csv", "-o"],
        vec!["export", ts, "--to", "fio", "-o"],
        vec!["convert", cs, "--format", "msr", "-q", "-o"],
        vec!["calibrate", chs, "--from", cals, "--accept-cpu-wait", "-o"],
        vec!["compare", rs, r2s, "--html"],
        vec!["merge", ranks, "-o"],
        vec!["results", "export", "--all", "-o"],
        vec!["results", "compare", "1", "1", "--html"],
        vec!["results", "leaderboard", "--html"],
        vec!["replay", ts, "--target", ss, "--passes", "1", "--json"],
    ];
    let mine = b"my notes, not tracemark's\n";
    for (i, args) in cases.iter().enumerate() {
        let out = d.join(format!("out-{i}"));
        let run = |extra: &[&str]| {
            tracemark()
                .current_dir(d)
                .args(extra)
                .args(args)
                .arg(&out)
                .env("TRACEMARK_DB", &ins.db)
                .output()
                .unwrap()
        };
        let refused = |o: &Output, why: &str| {
            let err = String::from_utf8_lossy(&o.stderr);
            let what = format!("{args:?}: {err}");
            assert_eq!(o.status.code(), Some(1), "{what}");
            assert!(err.contains(why) && err.contains("--overwrite"), "{what}");
            assert_eq!(err.lines().count(), 1, "one error line: {what}");
        };
        fs::write(&out, mine).unwrap();
        let _ = fs::remove_file(&ins.scratch);
        refused(&run(&[]), "is a file tracemark did not write");
        assert_eq!(fs::read(&out).unwrap(), mine, "{args:?}");
        assert!(!ins.scratch.exists(), "{args:?}: refused before the work");

        let o = run(&["--overwrite"]);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_ne!(fs::read(&out).unwrap(), mine, "{args:?}");
        // Its own output, unchanged: replaced without being told.
        let o = run(&[]);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // Edited since: the user's now.
        let mut f = fs::OpenOptions::new().append(true).open(&out).unwrap();
        std::io::Write::write_all(&mut f, b"\nmy addition\n").unwrap();
        drop(f);
        let edited = fs::read(&out).unwrap();
        refused(&run(&[]), "has been changed since");
        assert_eq!(fs::read(&out).unwrap(), edited, "{args:?}");
    }
}

/// Lists `dir` (names), sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Fails when `dir` holds a name that `pre` (its listing before a run) did
/// not: a SIGTERM must leave nothing behind. A temporary an earlier SIGKILL
/// left may be there still (a run stopped before its write began does not
/// sweep) or gone (swept); either is fine.
fn assert_nothing_added(dir: &Path, pre: &[String], what: &str) {
    let added: Vec<String> = listing(dir)
        .into_iter()
        .filter(|n| !pre.contains(n))
        .collect();
    assert!(added.is_empty(), "{what}: left {added:?}");
}

/// Runs `args` (output `out`) and kills it with `signal` after `delay`.
fn run_and_kill(dir: &Path, args: &[String], signal: libc::c_int, delay: Duration) {
    let mut child = tracemark()
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    // SAFETY: our own child's PID.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    child.wait().unwrap();
}

/// For each command that writes a large file: SIGKILL and SIGTERM at many
/// moments of the write leave the previous file or the whole new one, never
/// a mix; SIGTERM leaves no temporary, and after SIGKILL the next run's
/// sweep leaves none.
#[test]
fn a_kill_at_any_moment_leaves_the_old_file_or_the_new_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d, "big.tmt", 400_000);
    let csv = msr_csv(d, 200_000);
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/tests/fixtures/replay-file.json");
    // In its own folder: a killed reader may leave SQLite's -wal and -shm.
    let db = d.join("db").join("results.db");
    let o = tracemark()
        .args(["results", "import"])
        .arg(&fixture)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let jobs: Vec<(&str, Vec<String>)> = vec![
        (
            "out.csv",
            vec![
                "export".into(),
                t.display().to_string(),
                "--to".into(),
                "csv".into(),
                "-o".into(),
            ],
        ),
        (
            "out.fio",
            vec![
                "export".into(),
                t.display().to_string(),
                "--to".into(),
                "fio".into(),
                "-o".into(),
            ],
        ),
        (
            "out.tmt",
            vec![
                "convert".into(),
                csv.display().to_string(),
                "--format".into(),
                "msr".into(),
                "-q".into(),
                "-o".into(),
            ],
        ),
        (
            "report.html",
            vec![
                "compare".into(),
                fixture.display().to_string(),
                fixture.display().to_string(),
                "--html".into(),
            ],
        ),
        (
            "all.json",
            vec![
                "results".into(),
                "export".into(),
                "--all".into(),
                "--db".into(),
                db.display().to_string(),
                "-o".into(),
            ],
        ),
    ];
    for (name, base) in &jobs {
        let out = d.join(name);
        // The previous file is the test's, not tracemark's: --overwrite
        // lets each run replace it.
        let mut args = vec!["--overwrite".to_string()];
        args.extend(base.iter().cloned());
        args.push(out.display().to_string());
        // The whole new file, and how long writing it takes.
        let started = Instant::now();
        let o = tracemark().current_dir(d).args(&args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let full = started.elapsed();
        let new = fs::read(&out).unwrap();
        let old = b"the previous file\n".to_vec();
        let before = listing(d);
        for signal in [libc::SIGKILL, libc::SIGTERM] {
            for step in 0..10u32 {
                fs::write(&out, &old).unwrap();
                let pre = listing(d);
                run_and_kill(d, &args, signal, full * step / 9);
                let now = fs::read(&out).unwrap();
                assert!(
                    now == old || now == new,
                    "{name}: signal {signal} at step {step}: a mix ({} bytes)",
                    now.len()
                );
                if signal == libc::SIGTERM {
                    assert_nothing_added(d, &pre, &format!("{name}: SIGTERM at step {step}"));
                }
            }
        }
        // The next run sweeps what a SIGKILL left.
        let o = tracemark().current_dir(d).args(&args).output().unwrap();
        assert!(o.status.success());
        assert_eq!(fs::read(&out).unwrap(), new);
        assert_eq!(listing(d), before, "{name}: after the next run");
    }
}

/// How a file a kill left is judged whole when the new one is not the same
/// byte for byte each run.
#[derive(Debug, Clone, Copy)]
enum Whole {
    /// Byte for byte the file an uninterrupted run writes.
    Same,
    /// A whole JSON result: the complete one, or the partial result a stop
    /// signal during the replay writes on purpose (`valid: false`, the
    /// reason names the interruption). A torn file does not parse.
    Json,
    /// A whole HTML page.
    Html,
    /// A whole HTML index each of whose local links is a file that is there.
    Index,
}

/// Whether `now` is a whole file of kind `whole` (`new`: an uninterrupted
/// run's file).
fn is_whole(whole: Whole, now: &[u8], new: &[u8], dir: &Path) -> Result<(), String> {
    let html = |b: &[u8]| {
        let t = String::from_utf8_lossy(b);
        if t.trim_start().starts_with("<!DOCTYPE html>") && t.trim_end().ends_with("</html>") {
            Ok(t.into_owned())
        } else {
            Err(format!("not a whole page ({} bytes)", b.len()))
        }
    };
    match whole {
        Whole::Same if now == new => Ok(()),
        Whole::Same => Err(format!("a mix ({} bytes)", now.len())),
        Whole::Json => {
            let v: serde_json::Value = serde_json::from_slice(now)
                .map_err(|e| format!("torn ({} bytes): {e}", now.len()))?;
            let full: serde_json::Value = serde_json::from_slice(new).unwrap();
            // Every key of the whole result is there (an interrupted one adds its mark).
            let keys = full.as_object().unwrap();
            if let Some(k) = keys.keys().find(|k| v.get(k.as_str()).is_none()) {
                return Err(format!("not a whole result: no {k}"));
            }
            let interrupted = v["valid"] == false && v.to_string().contains("interrupted by SIG");
            if v["valid"] == full["valid"] || interrupted {
                Ok(())
            } else {
                Err(format!(
                    "neither whole nor marked interrupted: {}",
                    v["valid"]
                ))
            }
        }
        Whole::Html => html(now).map(|_| ()),
        Whole::Index => {
            let t = html(now)?;
            for link in t.split("href=\"").skip(1) {
                let link = &link[..link.find('"').unwrap_or(0)];
                if link.is_empty() || link.starts_with('#') || link.contains("://") {
                    continue;
                }
                if !dir.join(link).is_file() {
                    return Err(format!("links {link}, which is not there"));
                }
            }
            Ok(())
        }
    }
}

/// `args` (the output last) killed by SIGKILL and SIGTERM at `steps`
/// moments from start to end: each leaves the previous file or a whole new
/// one; SIGTERM leaves no temporary, and the next run sweeps what SIGKILL
/// left. `extra`: names a run adds beside the output (pages of an index).
fn kill_at_many_moments(d: &Path, out: &Path, args: &[String], whole: Whole, steps: u32) {
    let name = out.display();
    // The previous file is the test's, not tracemark's: --overwrite lets
    // each run replace it.
    let args: &[String] = &[&["--overwrite".to_string()], args].concat();
    let started = Instant::now();
    let o = tracemark().current_dir(d).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let full = started.elapsed();
    let new = fs::read(out).unwrap();
    is_whole(whole, &new, &new, d).unwrap_or_else(|e| panic!("{name}: uninterrupted: {e}"));
    let old = b"the previous file\n".to_vec();
    let before = listing(d);
    for signal in [libc::SIGKILL, libc::SIGTERM] {
        for step in 0..steps {
            fs::write(out, &old).unwrap();
            let pre = listing(d);
            run_and_kill(d, args, signal, full * step / (steps - 1));
            let now = fs::read(out).unwrap();
            if now != old {
                if let Err(e) = is_whole(whole, &now, &new, d) {
                    panic!("{name}: signal {signal} at step {step}: {e}");
                }
            }
            if signal == libc::SIGTERM {
                assert_nothing_added(d, &pre, &format!("{name}: SIGTERM at step {step}"));
            }
        }
    }
    let o = tracemark().current_dir(d).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    is_whole(whole, &fs::read(out).unwrap(), &new, d).unwrap();
    assert_eq!(listing(d), before, "{name}: after the next run");
}

/// The other writing commands under the same kills: `calibrate -o`,
/// `merge -o`, `replay --json` (a stop during the replay writes a whole,
/// marked-interrupted result on purpose; a torn file is the failure),
/// `consistency --html`, `results compare --html`, and `results leaderboard
/// --html` (pages first, index last: after every kill each link of the
/// index resolves).
#[test]
fn a_kill_at_any_moment_leaves_every_other_output_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = |p: &Path| p.display().to_string();
    let strs = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let (marked, first) = output_inputs::marked_replay(d, 300);
    let ranks = output_inputs::fleet_ranks(d, 3);
    let db = d.join("db").join("results.db");
    output_inputs::imported_runs(d, &db, 3);
    let small = trace(d, "small.tmt", 3000);
    let out = |n: &str| d.join(n);
    let jobs: Vec<(PathBuf, Vec<String>, Whole, u32)> = vec![
        (
            out("calibrated.tmt"),
            vec![
                "calibrate".into(),
                s(&marked),
                "--from".into(),
                s(&first),
                "--accept-cpu-wait".into(),
                "-o".into(),
            ],
            Whole::Same,
            6,
        ),
        (
            out("fleet.json"),
            vec![
                "merge".into(),
                s(&ranks[2]),
                s(&ranks[0]),
                s(&ranks[1]),
                "-o".into(),
            ],
            Whole::Same,
            6,
        ),
        (
            out("board.html"),
            vec![
                "results".into(),
                "leaderboard".into(),
                "--db".into(),
                s(&db),
                "--html".into(),
            ],
            Whole::Index,
            8,
        ),
        (
            out("runs.html"),
            vec![
                "results".into(),
                "compare".into(),
                "1".into(),
                "2".into(),
                "3".into(),
                "--db".into(),
                s(&db),
                "--html".into(),
            ],
            Whole::Html,
            6,
        ),
        (
            out("replay.json"),
            vec![
                "replay".into(),
                s(&small),
                "--target".into(),
                "replay.bin".into(),
            ]
            .into_iter()
            .chain(strs(&[
                "--mode",
                "compressed",
                "--passes",
                "2",
                "--no-db",
                "--json",
            ]))
            .collect(),
            Whole::Json,
            8,
        ),
        (
            out("consistency.html"),
            vec![
                "consistency".into(),
                s(&small),
                "--target".into(),
                "c.bin".into(),
            ]
            .into_iter()
            .chain(strs(&[
                "--size",
                "8M",
                "--allow-write",
                "--no-db",
                "--rounds-degrade",
                "1",
                "--rounds-steady",
                "0",
                "--rounds-recovery",
                "0",
                "--degrade-start",
                "200ms",
                "--html",
            ]))
            .collect(),
            Whole::Html,
            6,
        ),
    ];
    for (o, base, whole, steps) in &jobs {
        let mut args = base.clone();
        args.push(s(o));
        kill_at_many_moments(d, o, &args, *whole, *steps);
    }
}

/// `convert --split-by volume` writes one trace per volume into a folder:
/// SIGKILL and SIGTERM at many moments leave each trace the previous file
/// or its whole new one, and no temporary after SIGTERM nor after the next
/// run.
#[test]
fn a_kill_at_any_moment_leaves_each_split_trace_old_or_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = d.join("io_traces.csv");
    let rows = crate::support::fleet::alibaba_rows(150_000, 20);
    fs::write(&csv, crate::support::fleet::alibaba_csv(&rows)).unwrap();
    let vols = d.join("vols");
    fs::create_dir(&vols).unwrap();
    // The previous files are the test's: --overwrite lets a run replace them.
    let args: Vec<String> = vec![
        "--overwrite".into(),
        "convert".into(),
        "--format".into(),
        "alibaba".into(),
        csv.display().to_string(),
        "--split-by".into(),
        "volume".into(),
        "-q".into(),
        "-o".into(),
        vols.display().to_string(),
    ];
    let started = Instant::now();
    let o = tracemark().current_dir(d).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let full = started.elapsed();
    let names = listing(&vols);
    assert!(names.len() > 2, "{names:?}");
    let new: Vec<Vec<u8>> = names
        .iter()
        .map(|n| fs::read(vols.join(n)).unwrap())
        .collect();
    let old = b"the previous file\n".to_vec();
    let before = listing(d);
    for signal in [libc::SIGKILL, libc::SIGTERM] {
        for step in 0..8u32 {
            for n in &names {
                fs::write(vols.join(n), &old).unwrap();
            }
            let (pre, pre_vols) = (listing(d), listing(&vols));
            run_and_kill(d, &args, signal, full * step / 7);
            for (n, new) in names.iter().zip(&new) {
                let now = fs::read(vols.join(n)).unwrap();
                assert!(
                    now == old || now == *new,
                    "{n}: signal {signal} at step {step}: a mix ({} bytes)",
                    now.len()
                );
            }
            if signal == libc::SIGTERM {
                assert_nothing_added(&vols, &pre_vols, &format!("SIGTERM at step {step}"));
                assert_nothing_added(d, &pre, &format!("SIGTERM at step {step}"));
            }
        }
    }
    let o = tracemark().current_dir(d).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(listing(&vols), names, "after the next run");
    assert_eq!(listing(d), before, "after the next run");
    for (n, new) in names.iter().zip(&new) {
        assert_eq!(&fs::read(vols.join(n)).unwrap(), new, "{n}");
    }
}

/// With the `parquet` feature: the Parquet export under the same kills.
#[cfg(feature = "parquet")]
#[test]
fn parquet_export_killed_at_any_moment_leaves_the_old_file_or_the_new_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Converted, so its records name the devices of its table.
    let csv = msr_csv(d, 200_000);
    let t = d.join("big.tmt");
    let o = tracemark()
        .arg("convert")
        .arg(&csv)
        .args(["--format", "msr", "-q", "-o"])
        .arg(&t)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = d.join("out.parquet");
    let args = vec![
        "export".to_string(),
        t.display().to_string(),
        "--to".into(),
        "parquet".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    kill_at_many_moments(d, &out, &args, Whole::Same, 10);
}

/// An output name as long as the filesystem allows works (the temporary's
/// name does not grow with it); a longer one is refused before the replay.
#[test]
fn a_long_output_name_works_and_a_too_long_one_is_refused_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d, "t.tmt", 500);
    let long = d.join(format!("{}.csv", "n".repeat(251)));
    let o = tracemark()
        .arg("export")
        .arg(&t)
        .args(["--to", "csv", "-o"])
        .arg(&long)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fs::metadata(&long).unwrap().len() > 1000);
    let json = d.join(format!("{}.json", "n".repeat(252)));
    let scratch = d.join("scratch.bin");
    let o = tracemark()
        .current_dir(d)
        .arg("replay")
        .arg(&t)
        .arg("--target")
        .arg(&scratch)
        .arg("--no-db")
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("longer than the 255"), "{err}");
    assert!(!scratch.exists(), "the replay ran: {err}");
}

/// A line that never ends (`/dev/zero`, a pipe) is one clear error within
/// seconds, not a read that runs until killed.
#[test]
fn an_endless_line_is_an_error_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.tmt");
    for skip_bad in [false, true] {
        let started = Instant::now();
        let mut c = tracemark();
        c.args(["convert", "/dev/zero", "--format", "blkparse", "-q", "-o"])
            .arg(&out);
        if skip_bad {
            c.arg("--skip-bad");
        }
        let mut child = c.stderr(Stdio::piped()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("still reading /dev/zero after 30 s (skip_bad: {skip_bad})");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(err.contains("/dev/zero") && err.contains("line"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(!out.exists());
    }
    // A pipe that never ends a line (and never ends).
    let mut child = tracemark()
        .args(["convert", "-", "--format", "blkparse", "-q", "-o"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let block = vec![b'8'; 1 << 16];
        while stdin.write_all(&block).is_ok() {}
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("still reading the pipe after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(!o.status.success());
    assert!(!out.exists());
}

/// `consistency --size` on a file: the file stays the size the result
/// records; a suite that needs more of it is refused before anything is
/// written.
#[test]
fn consistency_keeps_a_file_target_at_the_size_it_records() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Reads and writes over 8 MiB.
    let records: Vec<_> = (0..400u64)
        .map(|i| {
            let op = if i % 4 == 0 { Op::Write } else { Op::Read };
            rec(i * 50, op, (i * 7919 % 64) * 128 * 1024, 4096 * (1 + i % 8))
        })
        .collect();
    let t = d.join("t.tmt");
    write_trace(&t, "t", &records);
    let target = d.join("target.bin");
    let json = d.join("c.json");
    let run = |size: &str| {
        tracemark()
            .arg("consistency")
            .arg(&t)
            .arg("--target")
            .arg(&target)
            .args(["--size", size, "--allow-write", "--no-db"])
            .args(["--rounds-degrade", "1", "--rounds-steady", "0"])
            .args(["--rounds-recovery", "0", "--degrade-start", "200ms"])
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap()
    };
    let o = run("4M");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--size 8M"), "{err}");
    assert!(!target.exists() && !json.exists());
    let o = run("8M");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = crate::support::read_json(&json);
    let recorded = r["target"]["size_bytes"].as_u64().unwrap();
    assert_eq!(fs::metadata(&target).unwrap().len(), recorded);
    assert_eq!(recorded, 8 << 20);
}
