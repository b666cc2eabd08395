//! `convert` writes no output over a file it reads or over the results
//! database: the database by any path to it (also the default one, and
//! one not made yet), a file of a blktrace set named by its prefix, the
//! file standard input reads; and each trace of `--split-by volume`, which
//! then writes none of its traces.

use crate::support::{blktrace_issue_on, tracemark};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An Alibaba CSV of two volumes (1 and 2): `ali.csv` in `dir`.
fn two_volumes(dir: &Path) -> PathBuf {
    let rows = "1,R,0,4096,1577808000000000\n\
                2,W,4096,4096,1577808000000100\n\
                1,W,8192,4096,1577808000000200\n\
                2,R,0,8192,1577808000000300\n";
    let path = dir.join("ali.csv");
    fs::write(&path, rows).unwrap();
    path
}

/// `tracemark convert ARGS` in `dir`, with the results database `db`.
fn convert_with_db(dir: &Path, db: &Path, args: &[&OsStr]) -> Command {
    let mut c = tracemark();
    c.current_dir(dir)
        .arg("convert")
        .args(args)
        .env("TRACEMARK_DB", db);
    c
}

/// The command failed (status 1), refused with a message holding `why`.
fn assert_refused(o: &Output, why: &str, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{what}: {err}");
    assert!(err.contains(why), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
}

/// `-o` naming the results database (its path, a link to it, one of its
/// journals, the path of one not made yet) is refused before anything is
/// read; the database's bytes are unchanged, a missing one is not made.
#[test]
fn the_results_database_is_refused_as_the_output_by_any_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = two_volumes(d);
    let db = d.join("results.db");
    fs::write(&db, b"the results database").unwrap();
    let link = d.join("link.tmt");
    symlink(&db, &link).unwrap();
    let wal = d.join("results.db-wal");
    for out in [&db, &link, &wal] {
        let o = convert_with_db(d, &db, &[csv.as_os_str(), "-q".as_ref(), "-o".as_ref()])
            .arg(out)
            .output()
            .unwrap();
        assert_refused(&o, "is the results database", &out.display().to_string());
        assert_eq!(fs::read(&db).unwrap(), b"the results database");
        assert!(!wal.exists());
    }
    let later = d.join("later.db");
    let o = convert_with_db(d, &later, &[csv.as_os_str(), "-q".as_ref(), "-o".as_ref()])
        .arg(&later)
        .output()
        .unwrap();
    assert_refused(&o, "is the results database", "a database not made yet");
    assert!(!later.exists());
}

/// Without `TRACEMARK_DB`, the database is the default one in the data
/// directory (`$XDG_DATA_HOME/tracemark/results.db`): refused as well.
#[test]
fn the_default_results_database_is_refused_as_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = two_volumes(d);
    let data = d.join("data");
    let db = data.join("tracemark/results.db");
    fs::create_dir_all(db.parent().unwrap()).unwrap();
    fs::write(&db, b"the results database").unwrap();
    let o = tracemark()
        .current_dir(d)
        .env("XDG_DATA_HOME", &data)
        .arg("convert")
        .arg(&csv)
        .args(["-q", "-o"])
        .arg(&db)
        .output()
        .unwrap();
    assert_refused(&o, "is the results database", "the default database");
    assert_eq!(fs::read(&db).unwrap(), b"the results database");
}

/// A blktrace set of two CPUs, `sda.blktrace.0` and `sda.blktrace.1` in
/// `dir`: its files.
fn blktrace_set(dir: &Path) -> Vec<PathBuf> {
    (0..2u32)
        .map(|cpu| {
            let bytes: Vec<u8> = (0..4u32)
                .flat_map(|i| {
                    let time_ns = u64::from(i * 2 + cpu) * 1000;
                    blktrace_issue_on(cpu, i + 1, time_ns, time_ns / 100)
                })
                .collect();
            let path = dir.join(format!("sda.blktrace.{cpu}"));
            fs::write(&path, bytes).unwrap();
            path
        })
        .collect()
}

/// A set named by its prefix is the files it names: `-o` naming one of
/// them (or a link to one) is refused before anything is read, the file
/// unchanged. The set converts where the output is another file.
#[test]
fn a_file_of_a_blktrace_set_named_by_prefix_is_refused_as_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let files = blktrace_set(d);
    let db = d.join("results.db");
    let link = d.join("link.tmt");
    symlink(&files[1], &link).unwrap();
    for (out, file) in [
        (&files[0], &files[0]),
        (&files[1], &files[1]),
        (&link, &files[1]),
    ] {
        let before = fs::read(file).unwrap();
        let o = convert_with_db(d, &db, &["sda".as_ref(), "-q".as_ref(), "-o".as_ref()])
            .arg(out)
            .output()
            .unwrap();
        assert_refused(&o, "same file as the input", &out.display().to_string());
        assert_eq!(fs::read(file).unwrap(), before, "{}", out.display());
    }
    let o = convert_with_db(d, &db, &["sda", "-q", "-o", "sda.tmt"].map(OsStr::new))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `convert - -o FILE < FILE`: standard input reads the output, refused;
/// the file is unchanged.
#[test]
fn the_file_standard_input_reads_is_refused_as_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = two_volumes(d);
    let before = fs::read(&csv).unwrap();
    let db = d.join("results.db");
    let args = ["-", "--format", "alibaba", "-q", "-o", "ali.csv"].map(OsStr::new);
    let o = convert_with_db(d, &db, &args)
        .stdin(fs::File::open(&csv).unwrap())
        .output()
        .unwrap();
    assert_refused(&o, "same file as the input - (standard input)", "stdin");
    assert_eq!(fs::read(&csv).unwrap(), before);
}

/// Alibaba rows of volumes 1 and 2 after those of [`two_volumes`].
const MORE_ROWS: &str = "1,R,0,4096,1577808000000400\n2,R,0,4096,1577808000000500\n";

/// `convert`'s options for an Alibaba split by volume into the folder
/// that follows them.
const SPLIT_INTO: [&str; 6] = ["--format", "alibaba", "--split-by", "volume", "-q", "-o"];

/// One split refused: what `prepare` makes in the test's folder (which
/// holds `ali.csv` and the empty output folder `out`), the inputs, the
/// file standard input reads, the results database, why it is refused.
struct SplitCase {
    what: &'static str,
    prepare: fn(&Path),
    inputs: &'static [&'static str],
    stdin: Option<&'static str>,
    db: &'static str,
    why: &'static str,
}

const SPLIT_CASES: &[SplitCase] = &[
    SplitCase {
        what: "a trace's path is a link to the input",
        prepare: |d| symlink("../ali.csv", d.join("out/ali-vol2.tmt")).unwrap(),
        inputs: &["ali.csv"],
        stdin: None,
        db: "results.db",
        why: "same file as the input",
    },
    SplitCase {
        what: "a trace's path is a hard link to the input",
        prepare: |d| fs::hard_link(d.join("ali.csv"), d.join("out/ali-vol2.tmt")).unwrap(),
        inputs: &["ali.csv"],
        stdin: None,
        db: "results.db",
        why: "same file as the input",
    },
    SplitCase {
        what: "a second input is at a trace's path",
        prepare: |d| fs::write(d.join("out/ali-vol2.tmt"), MORE_ROWS).unwrap(),
        inputs: &["ali.csv", "out/ali-vol2.tmt"],
        stdin: None,
        db: "results.db",
        why: "same file as the input",
    },
    SplitCase {
        what: "standard input reads a trace's path",
        // (the traces of standard input are named `stdin-volN.tmt`)
        prepare: |d| fs::write(d.join("out/stdin-vol2.tmt"), MORE_ROWS).unwrap(),
        inputs: &["-"],
        stdin: Some("out/stdin-vol2.tmt"),
        db: "results.db",
        why: "same file as the input - (standard input)",
    },
    SplitCase {
        what: "the database is at a trace's path",
        prepare: |d| fs::write(d.join("out/ali-vol1.tmt"), "the results database").unwrap(),
        inputs: &["ali.csv"],
        stdin: None,
        db: "out/ali-vol1.tmt",
        why: "is the results database",
    },
    SplitCase {
        what: "the database, not made yet, is at a trace's path",
        prepare: |_| {},
        inputs: &["ali.csv"],
        stdin: None,
        db: "out/ali-vol2.tmt",
        why: "is the results database",
    },
    SplitCase {
        what: "two traces' paths are one file",
        prepare: |d| symlink("ali-vol2.tmt", d.join("out/ali-vol1.tmt")).unwrap(),
        inputs: &["ali.csv"],
        stdin: None,
        db: "results.db",
        why: "are the same file",
    },
];

/// What is in `dir` and its folders: each path (relative), with a link's
/// target or a file's bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut all = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("-> {}", fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                todo.push(path.clone());
                "folder".to_string()
            } else {
                String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned()
            };
            all.push((path.strip_prefix(dir).unwrap().to_path_buf(), what));
        }
    }
    all.sort();
    all
}

/// `--split-by volume` checks each trace it is about to write as a single
/// output is checked: a trace whose path is an input (a link, a hard link,
/// a second input, standard input), the results database (made or not) or
/// another of its traces is refused, and no trace is written: the folder
/// is as it was.
#[test]
fn a_split_writes_no_trace_over_an_input_or_the_database() {
    for case in SPLIT_CASES {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        two_volumes(d);
        fs::create_dir(d.join("out")).unwrap();
        (case.prepare)(d);
        let before = snapshot(d);
        let mut c = convert_with_db(d, &d.join(case.db), &[]);
        c.args(case.inputs).args(SPLIT_INTO).arg("out");
        if let Some(file) = case.stdin {
            c.stdin(fs::File::open(d.join(file)).unwrap());
        }
        let o = c.output().unwrap();
        assert_refused(&o, case.why, case.what);
        assert_eq!(snapshot(d), before, "{}", case.what);
    }
}

/// `-o` of a split naming the results database (not made yet) is refused:
/// no folder is made there. Where nothing is in the way, the split works.
#[test]
fn a_split_makes_no_folder_at_the_database_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_volumes(d);
    let split = |db: &str| {
        convert_with_db(d, &d.join(db), &[OsStr::new("ali.csv")])
            .args(SPLIT_INTO)
            .arg("out")
            .output()
            .unwrap()
    };
    let o = split("out");
    assert_refused(&o, "is the results database", "-o the database");
    assert!(!d.join("out").exists());
    let o = split("results.db");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.join("out/ali-vol1.tmt").is_file() && d.join("out/ali-vol2.tmt").is_file());
}

/// A split refused once its folder was made (a malformed record, the
/// database at a trace's path) leaves no folder it made behind; a folder
/// that was there stays.
#[test]
fn a_refused_split_leaves_no_folder_it_made() {
    for (input, db, why) in [
        ("bad.csv", "results.db", "bad.csv"),
        (
            "ali.csv",
            "made/deep/ali-vol2.tmt",
            "is the results database",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        two_volumes(d);
        fs::write(
            d.join("bad.csv"),
            "1,R,0,4096,1577808000000000\n1,R,x,4096,1\n",
        )
        .unwrap();
        fs::create_dir(d.join("kept")).unwrap();
        let before = snapshot(d);
        for out in ["made/deep", "kept"] {
            let db = d.join(db.replace("made/deep", out));
            let o = convert_with_db(d, &db, &[OsStr::new(input)])
                .args(SPLIT_INTO)
                .arg(out)
                .output()
                .unwrap();
            assert_refused(&o, why, out);
            assert_eq!(snapshot(d), before, "{input} into {out}");
        }
    }
}
