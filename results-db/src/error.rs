//! What can go wrong with the results database.

use rusqlite::ErrorCode;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{}: not a results database: the file is not an SQLite database (give another file with --db, or move this one away)", path.display())]
    NotADatabase { path: PathBuf },
    #[error("{}: an SQLite database of another program (no tracemark results in it); tracemark does not write into it (give its own file with --db)", path.display())]
    Foreign { path: PathBuf },
    #[error("{}: the results database is corrupt ({detail}); restore a copy, or recover what is readable with `sqlite3 {} .recover`", path.display(), path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("{}: the results database has schema version {found}, newer than this tracemark's {known}: use a newer tracemark", path.display())]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("{}: the results database must be a regular file, or a new path in a writable folder; this is {kind} (give another file with --db or TRACEMARK_DB)", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{}: the folder of the results database is not writable ({source}); SQLite keeps its journal beside the database (give another file with --db or TRACEMARK_DB)", path.display())]
    FolderNotWritable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: cannot create the directory: {source}", path.display())]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: cannot lock the directory to open the results database in it: {source}", path.display())]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("no run {0} in the results database (`tracemark results list` shows the ids)")]
    NoSuchRun(i64),
    #[error("run {0} was removed (`tracemark results restore {0}` brings it back)")]
    Removed(i64),
    #[error("run {0} is not removed (`tracemark results purge` deletes only removed runs; remove it first with `tracemark results rm {0}`)")]
    NotRemoved(i64),
    /// Refused by the result reader (not a result, a key given twice, a
    /// newer schema version).
    #[error(transparent)]
    Refused(#[from] results::parse::ParseError),
    #[error("{origin}: not a tracemark result: {reason}")]
    NotAResult { origin: String, reason: String },
}

/// SQLite's "not a database" and "corrupt" codes as their own errors.
pub(crate) fn classify(path: &Path, e: rusqlite::Error) -> DbError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => DbError::NotADatabase {
            path: path.to_path_buf(),
        },
        Some(ErrorCode::DatabaseCorrupt) => DbError::Corrupt {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        _ => DbError::Sqlite {
            path: path.to_path_buf(),
            source: e,
        },
    }
}
