//! A file that is not a database, another program's SQLite database and a
//! corrupt results database each give one error saying which, never a
//! panic, and the foreign database is left as it was.

mod common;

use results_db::{DbError, Filter, ResultsDb};

#[test]
fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(200)).unwrap();
    let err = refused(&path);
    assert!(matches!(err, DbError::NotADatabase { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("results.db") && text.contains("not an SQLite database"),
        "{text}"
    );
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .starts_with("these are my notes"));
}

#[test]
fn another_programs_sqlite_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE bookmarks (url TEXT); INSERT INTO bookmarks VALUES ('x');")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = refused(&path);
    assert!(matches!(err, DbError::Foreign { .. }), "{err:?}");
    assert!(err.to_string().contains("another program"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the foreign file was changed"
    );
    assert!(!dir.path().join("other.db-wal").exists());
}

#[test]
fn a_corrupt_results_database_gives_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    {
        let db = ResultsDb::open(&path).unwrap();
        for n in 0..20 {
            db.import(&common::suite_variant(n), "variant").unwrap();
        }
    }
    // Checkpointed into the main file (the last connection closed), then
    // every page after the first overwritten with garbage.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8192, "{} bytes", bytes.len());
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    for (i, b) in bytes.iter_mut().enumerate().skip(page) {
        *b = (i as u8).wrapping_mul(31).wrapping_add(7);
    }
    std::fs::write(&path, &bytes).unwrap();
    let outcome = ResultsDb::open(&path).and_then(|db| {
        db.list(&Filter::default())?;
        db.check_integrity()
    });
    let err = outcome.expect_err("a corrupt database must not read as fine");
    assert!(matches!(err, DbError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("corrupt"), "{err}");
}

#[test]
fn the_directory_of_a_new_database_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/results.db");
    let db = ResultsDb::open(&path).unwrap();
    db.check_integrity().unwrap();
    assert!(path.exists());
}

/// The error opening `path` gives (a panic when it opens).
fn refused(path: &std::path::Path) -> results_db::DbError {
    match ResultsDb::open(path) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => e,
    }
}

/// A database path that is a directory, a FIFO or (through a symbolic link)
/// a character device is one clear error before SQLite opens anything: no
/// journal, WAL or lock file appears beside it, and a FIFO does not hang.
#[test]
fn a_special_file_as_database_is_refused_before_any_work() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("a-folder");
    std::fs::create_dir(&sub).unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let null = dir.path().join("results.db");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let listing = || {
        let mut v: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let before = listing();
    for (path, kind) in [
        (&sub, "a directory"),
        (&fifo, "a FIFO"),
        (&null, "a character device"),
    ] {
        let err = refused(path);
        assert!(matches!(err, DbError::NotAFile { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains(kind) && text.contains("regular file"),
            "{text}"
        );
    }
    assert_eq!(listing(), before);
}
