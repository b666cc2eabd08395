//! Whose file an existing output is. tracemark replaces a file it wrote and
//! nobody changed since (a second `convert -o app.tmt`, a report written
//! again), or an empty one; a file of the user's (a document, a result
//! edited by hand, a copy of a trace, a file a program wrote over
//! tracemark's) is refused unless the run was told `--overwrite`.
//!
//! A written output carries the extended attribute `user.tracemark.output`
//! with its inode, modification time and length as they were when it was
//! put in place. A move keeps all three (the file is still tracemark's); a
//! write, a truncation, a copy over it by its name or a copy of it elsewhere
//! changes one of them. Where the filesystem keeps no user attributes, the
//! mark of an output is kept in a ledger in the state folder instead
//! ([`crate::ledger`]).

use crate::error::{NotOurs, OutputError};
use crate::ledger;
use crate::xattr::{self, Attr};
use std::ffi::CStr;
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

const OUTPUT_MARK: &CStr = c"user.tracemark.output";

/// Set once by the binary from `--overwrite`: every output of the run may
/// replace a file tracemark did not write.
static OVERWRITE: AtomicBool = AtomicBool::new(false);

/// Lets every output of this process replace an existing file whoever wrote
/// it (the `--overwrite` flag, resolved once at start).
pub fn allow_overwrite() {
    OVERWRITE.store(true, Ordering::Relaxed);
}

/// Whether an existing file at an output may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// A path the user named: replace only tracemark's unchanged file, an
    /// empty file, or anything under `--overwrite`.
    IfOurs,
    /// A file in tracemark's own cache or state folder, which no user
    /// names, or a file rewritten in place from its own content (a trace
    /// calibrated in place): always replaced.
    Always,
}

/// The mark's value for a file in state `meta`.
fn state_of(meta: &fs::Metadata) -> Vec<u8> {
    format!(
        "1 {} {}.{:09} {}",
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.len()
    )
    .into_bytes()
}

/// Marks the written (and not yet synced) temporary as tracemark's output
/// in its final state. Where the filesystem keeps no user attributes, an
/// output the user named is recorded in the state folder's ledger instead
/// (tracemark's own files are replaced whatever they hold). Best effort: an
/// unmarked output is refused later as not tracemark's.
pub(crate) fn set(file: &File, replace: Replace) {
    let Ok(meta) = file.metadata() else {
        return;
    };
    let state = state_of(&meta);
    let unsupported = matches!(
        xattr::set(file, OUTPUT_MARK, &state),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP)
    );
    if unsupported && replace == Replace::IfOurs {
        ledger::record(&meta, &state);
    }
}

/// What the mark on the file at `target` says, for a file in state `meta`.
fn read(target: &Path, meta: &fs::Metadata) -> Result<(), NotOurs> {
    let mark = match xattr::get_at(target, OUTPUT_MARK) {
        Attr::Unsupported => ledger::recorded(meta).map_or(Attr::Unsupported, Attr::Value),
        mark => mark,
    };
    match mark {
        Attr::Value(v) if v == state_of(meta) => Ok(()),
        Attr::Value(_) | Attr::TooLong => Err(NotOurs::Changed),
        Attr::Unsupported => Err(NotOurs::NoAttributes),
        Attr::Absent => Err(NotOurs::Unmarked),
    }
}

/// Refuses to replace the regular file `target` (in state `meta`) unless
/// `replace` and its mark allow it. `requested` is the path as given.
pub(crate) fn check(
    requested: &Path,
    target: &Path,
    meta: &fs::Metadata,
    replace: Replace,
) -> Result<(), OutputError> {
    if replace == Replace::Always || OVERWRITE.load(Ordering::Relaxed) || meta.len() == 0 {
        return Ok(());
    }
    read(target, meta).map_err(|why| OutputError::NotOurs {
        path: target.to_path_buf(),
        via: if target == requested {
            String::new()
        } else {
            format!(" (the target of the link {})", requested.display())
        },
        why,
        len: meta.len(),
    })
}
