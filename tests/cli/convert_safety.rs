//! `convert` writes no output over the results database, by any path to
//! it (also the default one, and one not made yet).

use crate::support::tracemark;
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
