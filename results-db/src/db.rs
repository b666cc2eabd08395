//! Opening the results database: the path checked, the file recognised as
//! ours (or new), the schema brought up to date.

use crate::error::{classify, DbError};
use crate::migrations::{self, APPLICATION_ID};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another one to finish its transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The database must be a regular file (or nothing yet) in a folder this
/// process can write (SQLite makes its journal and WAL files beside it):
/// anything else is one clear error before SQLite touches it, so a device
/// node or FIFO is never opened and no journal is left beside one.
fn check_path(path: &Path) -> Result<(), DbError> {
    use std::os::unix::ffi::OsStrExt;
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            let kind = outfile::kind_name(&meta.file_type());
            return Err(DbError::NotAFile {
                path: path.to_path_buf(),
                kind,
            });
        }
    }
    let dir = match std::fs::canonicalize(path)
        .ok()
        .as_deref()
        .and_then(Path::parent)
    {
        Some(d) => d.to_path_buf(),
        None => match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        },
    };
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
        DbError::FolderNotWritable {
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        }
    })?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(DbError::FolderNotWritable {
            path: path.to_path_buf(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// An open results database.
pub struct ResultsDb {
    conn: Connection,
    path: PathBuf,
}

/// The default database: `$XDG_DATA_HOME/tracemark/results.db`, else
/// `~/.local/share/tracemark/results.db`; None without either variable.
pub fn default_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            Some(home.join(".local/share"))
        })?;
    Some(data.join("tracemark/results.db"))
}

impl ResultsDb {
    /// Opens the database at `path`, creating it (and its directory) when
    /// missing and migrating an older schema.
    pub fn open(path: &Path) -> Result<ResultsDb, DbError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| DbError::Directory {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        check_path(path)?;
        check_magic(path)?;
        // SQLite's own locks do not order a first open: two programs that
        // both hold a read lock and both ask to switch a new file to WAL get
        // "database is locked" without waiting, and one can see another's
        // half-made schema. Opens in one directory take turns instead.
        let _opening = lock_directory(path)?;
        // A database this open creates and cannot finish (a full disk, a
        // failing journal) is removed with its journals: a failed run
        // leaves no empty database behind. Under the directory's lock no
        // other program has opened a file that was not there.
        // Each file of the database, and whether this open finds it missing.
        let files: Vec<(PathBuf, bool)> = outfile::database_files(path)
            .map(|f| {
                let missing = std::fs::symlink_metadata(&f).is_err();
                (f, missing)
            })
            .collect();
        let opened = Self::open_locked(path);
        if opened.is_err() && files.first().is_some_and(|(_, missing)| *missing) {
            for (file, _) in files.iter().filter(|(_, missing)| *missing) {
                let _ = std::fs::remove_file(file);
            }
        }
        opened
    }

    /// [`ResultsDb::open`] once the directory's lock is held.
    fn open_locked(path: &Path) -> Result<ResultsDb, DbError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| classify(path, e))?;
        let db = ResultsDb {
            conn,
            path: path.to_path_buf(),
        };
        db.conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| db.err(e))?;
        db.check_ours()?;
        // WAL: readers never block the writer, and a writer killed mid-way
        // leaves the last committed state. FULL: each commit is on disk
        // before the run is reported stored.
        db.conn
            .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            .map_err(|e| db.err(e))?;
        db.conn
            .execute_batch("PRAGMA synchronous=FULL;")
            .map_err(|e| db.err(e))?;
        migrations::migrate(&db.conn, &db.path)?;
        Ok(db)
    }

    /// Applies the schema steps up to `target` ([`migrations::migrate_to`]).
    pub fn migrate_to(&self, target: i64) -> Result<(), DbError> {
        migrations::migrate_to(&self.conn, &self.path, target)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// An SQLite error as the database's error, naming the file.
    pub(crate) fn err(&self, e: rusqlite::Error) -> DbError {
        classify(&self.path, e)
    }

    /// Refuses another program's database before anything is written to it:
    /// ours has our application id; an empty file (or a new one) has no
    /// tables yet.
    fn check_ours(&self) -> Result<(), DbError> {
        let app_id: i32 = self
            .conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if app_id == APPLICATION_ID {
            return Ok(());
        }
        let objects: i64 = self
            .conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if app_id != 0 || objects > 0 {
            return Err(DbError::Foreign {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    /// `PRAGMA integrity_check`: Ok, or the first problem as a corrupt
    /// database's error.
    pub fn check_integrity(&self) -> Result<(), DbError> {
        let first: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if first == "ok" {
            Ok(())
        } else {
            Err(DbError::Corrupt {
                path: self.path.clone(),
                detail: first,
            })
        }
    }
}

/// A file that exists, is not empty and does not start as an SQLite
/// database does is refused before SQLite touches it.
fn check_magic(path: &Path) -> Result<(), DbError> {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(()); // missing (created) or unreadable (SQLite says why)
    };
    let mut head = Vec::with_capacity(16);
    let read = file.by_ref().take(16).read_to_end(&mut head);
    match read {
        Ok(0) => Ok(()),
        Ok(_) if head.as_slice() == SQLITE_MAGIC => Ok(()),
        Ok(_) => Err(DbError::NotADatabase {
            path: path.to_path_buf(),
        }),
        Err(_) => Ok(()),
    }
}

/// An exclusive advisory lock on the database's directory, held while the
/// database is opened and migrated (released when dropped).
fn lock_directory(path: &Path) -> Result<std::fs::File, DbError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let locked = std::fs::File::open(dir).and_then(|f| f.lock().map(|()| f));
    locked.map_err(|source| DbError::Lock {
        path: dir.to_path_buf(),
        source,
    })
}
