//! A regular file as the target: opened (created where missing), checked
//! as the user's data or tracemark's own scratch file, grown and filled so
//! reads touch real blocks.

use super::{io_err, probe_nowait, Target, TargetKind, TargetRequest};
use crate::buffer::AlignedBuf;
use crate::{ReplayError, TargetProblem};
use outfile::xattr::{self, Attr};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use trace_format::rng::WyRand;

/// Opens (and creates, grows and fills where needed) the regular file at
/// `path` for the replay.
pub(super) fn open_file(path: &Path, req: &TargetRequest) -> Result<Target, ReplayError> {
    let existed = std::fs::symlink_metadata(path).is_ok();
    let opened = open_file_at(path, req, existed);
    if opened.is_err() && !existed {
        // A refused run leaves no empty file of its own behind (a fill cut
        // short keeps what landed: the next run resumes it).
        if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = std::fs::remove_file(path);
        }
    }
    opened
}

/// [`open_file`] once it is known whether the file `existed`.
fn open_file_at(path: &Path, req: &TargetRequest, existed: bool) -> Result<Target, ReplayError> {
    let open = |direct: bool| {
        let mut o = OpenOptions::new();
        o.read(true).write(true).create(true).truncate(false);
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        o.open(path)
    };
    let (file, direct) = match open(true) {
        Ok(f) => (f, true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            if !req.allow_buffered {
                return Err(ReplayError::NoDirectIo {
                    path: path.to_path_buf(),
                });
            }
            (open(false).map_err(io_err(path, "cannot open"))?, false)
        }
        Err(e) => return Err(io_err(path, "cannot open or create")(e)),
    };
    let block = 4096u64;
    let required = req.required_size.div_ceil(block) * block;
    let current = file.metadata().map_err(io_err(path, "cannot stat"))?.len();
    // A file is data too: one that backs a loop device, is a swap file or
    // is mounted as an image is someone's filesystem, whatever its name.
    if req.needs_write || current < required {
        if let Some(why) = crate::in_use::file_refusal(&file) {
            return Err(ReplayError::TargetRefused {
                path: path.to_path_buf(),
                kind: TargetProblem::InUse,
                reason: format!("{why}; tracemark never writes to a device in use"),
            });
        }
    }
    let scratch = if req.needs_write || current < required {
        claim_scratch(&file, path, existed, req.allow_write)?
    } else {
        None
    };
    let mut size = current;
    if current < required {
        check_free_space(&file, path, required - current)?;
        fill_file(&file, path, current / block * block, required)?;
        size = required;
    }
    if let Some(claim) = &scratch {
        claim.sized();
    }
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::File,
        size: size / block * block,
        logical_block_size: block,
        model: None,
        direct,
        writable: true,
        nowait: probe_nowait(&file, size),
        file,
        _scratch: scratch,
    })
}

/// The extended attribute that marks a file tracemark made as its scratch
/// file, so a later run may write it again. Its value is the file's state
/// when tracemark last finished with it ([`state_of`]): a file written
/// since by anyone else (a document copied over it by its name keeps the
/// inode and the attribute) is no longer tracemark's.
const SCRATCH_MARK: &std::ffi::CStr = c"user.tracemark.scratch";

/// The mark's value before it recorded a state: the file is tracemark's,
/// its state unknown.
const MARK_WITHOUT_STATE: &[u8] = b"1";

/// The mark's value while a run writes the file: its state is the run's to
/// record when it ends. A run killed outright leaves it so, and the next
/// run takes the file as tracemark's. Once the file has its size for the
/// run, the mark also records inode and length ([`writing_state`]), which
/// the replay's writes keep: a document copied over the file by its name
/// after a kill changes them, and the file is the user's.
const MARK_WRITING: &[u8] = b"w";

/// What the scratch mark says of a file.
#[derive(Debug, PartialEq, Eq)]
enum Mark {
    /// No mark: a file tracemark did not make.
    None,
    /// The filesystem keeps no user attributes: tracemark cannot tell its
    /// own file from a user's.
    Unsupported,
    /// Made by tracemark; its state when last finished is not recorded.
    WithoutState,
    /// Made by tracemark and being written by a run (or a run was killed
    /// while writing it), with the inode and length it keeps while it is
    /// written, once known.
    Writing(Option<Vec<u8>>),
    /// Made by tracemark, with its state when tracemark last finished.
    State(Vec<u8>),
}

/// The mark on the open file.
fn read_mark(file: &File) -> Mark {
    match xattr::get(file, SCRATCH_MARK) {
        // A value longer than any tracemark writes is a mark too, of a
        // state that cannot be ours.
        Attr::TooLong => Mark::State(Vec::new()),
        Attr::Unsupported => Mark::Unsupported,
        Attr::Absent => Mark::None,
        Attr::Value(v) if v == MARK_WITHOUT_STATE => Mark::WithoutState,
        Attr::Value(v) if v == MARK_WRITING => Mark::Writing(None),
        Attr::Value(v) if v.starts_with(b"w ") => Mark::Writing(Some(v)),
        Attr::Value(v) => Mark::State(v),
    }
}

/// The file's state as the mark records it: inode, modification time and
/// length. Any write, truncation or copy onto the file changes it.
fn state_of(meta: &std::fs::Metadata) -> Vec<u8> {
    format!(
        "2 {} {}.{:09} {}",
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.len()
    )
    .into_bytes()
}

/// The mark's value while a run writes a file of its final size: inode and
/// length, which the run's writes do not change.
fn writing_state(meta: &std::fs::Metadata) -> Vec<u8> {
    format!("w {} {}", meta.ino(), meta.len()).into_bytes()
}

/// Sets the mark to `value` (best effort: a filesystem without user
/// attributes keeps no mark, and a later run asks for `--allow-write`).
fn set_mark(file: &File, value: &[u8]) {
    let _ = xattr::set(file, SCRATCH_MARK, value);
}

/// Keeps the scratch mark true to the file while a run has it: when the
/// run ends (also by an error or Ctrl-C), the mark records the state its
/// writes left.
pub(super) struct ScratchClaim {
    file: File,
}

impl ScratchClaim {
    /// The file has its size for the run: the mark records what the run's
    /// writes keep of it.
    fn sized(&self) {
        if let Ok(meta) = self.file.metadata() {
            set_mark(&self.file, &writing_state(&meta));
        }
    }
}

impl Drop for ScratchClaim {
    fn drop(&mut self) {
        let _ = self.file.sync_all();
        if let Ok(meta) = self.file.metadata() {
            set_mark(&self.file, &state_of(&meta));
        }
    }
}

/// Whether a file that reports no blocks holds data all the same (data
/// kept in its inode, or not allocated yet): anything but "all holes" from
/// `SEEK_DATA`, which a filesystem without it answers as "all data".
fn has_data(file: &File, len: u64) -> bool {
    if len == 0 {
        return false;
    }
    // SAFETY: a seek on an open file; its position is not used afterwards
    // (every I/O of the replay is positioned).
    let at = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_DATA) };
    at >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ENXIO)
}

/// Before a run writes or grows a regular file: the file must be tracemark's
/// scratch file as it last left it (marked, one name, unchanged since), hold
/// no data (new, empty or all holes), or be given up with `--allow-write`; a
/// user's file — a trace, a document, a database, or a document copied over
/// the scratch file — is never overwritten by accident. The claim returned
/// keeps the mark true to the file; a file given up with `--allow-write`
/// gets none (its filesystem may be frozen, and the user says so each time).
fn claim_scratch(
    file: &File,
    path: &Path,
    existed: bool,
    allow_write: bool,
) -> Result<Option<ScratchClaim>, ReplayError> {
    let meta = file.metadata().map_err(io_err(path, "cannot stat"))?;
    let holds_data = existed && (meta.blocks() > 0 || has_data(file, meta.len()));
    let mark = read_mark(file);
    // tracemark never gives its scratch file a second name: a hard link to
    // it is someone's file, whatever the mark on the inode says.
    let ours = meta.nlink() == 1
        && match &mark {
            Mark::None | Mark::Unsupported => false,
            Mark::WithoutState | Mark::Writing(None) => true,
            Mark::Writing(Some(value)) => *value == writing_state(&meta),
            Mark::State(value) => *value == state_of(&meta),
        };
    if holds_data && !allow_write && !ours {
        let why = match mark {
            Mark::State(_) if meta.nlink() == 1 => "was tracemark's scratch file but has been written since tracemark last finished with it (by another program)",
            Mark::Writing(Some(_)) if meta.nlink() == 1 => "was tracemark's scratch file, but a run writing it was stopped outright and the file has been written since (by another program)",
            Mark::Unsupported => "is a file whose filesystem keeps no extended attributes, so tracemark cannot tell its own scratch file from a file of yours",
            _ => "is a file that tracemark did not make",
        };
        return Err(ReplayError::TargetRefused {
            path: path.to_path_buf(),
            kind: TargetProblem::NotScratch,
            reason: format!(
                "{why} ({} bytes), and the run would write or grow it; pass --allow-write to let tracemark overwrite it, or name a new file",
                meta.len()
            ),
        });
    }
    if !ours && holds_data {
        return Ok(None);
    }
    set_mark(file, MARK_WRITING);
    Ok(file.try_clone().ok().map(|file| ScratchClaim { file }))
}

/// Refuses a fill the filesystem has no room for, before writing anything
/// (instead of filling it up to ENOSPC).
fn check_free_space(file: &File, path: &Path, needed: u64) -> Result<(), ReplayError> {
    // SAFETY: fstatvfs fills the struct we pass.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // Unknown, or a filesystem that reports no size (ramfs, some FUSE
    // servers): the fill's own errors will say.
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &mut st) } != 0 || st.f_blocks == 0 {
        return Ok(());
    }
    let free = (st.f_bavail as u64).saturating_mul(st.f_frsize as u64);
    if needed > free {
        return Err(ReplayError::TargetRefused {
            path: path.to_path_buf(),
            kind: TargetProblem::NoSpace,
            reason: format!(
                "the scratch file needs {} MiB more but its filesystem has {} MiB free; free space, use a larger filesystem, or pass --mapping wrap with a smaller target",
                needed.div_ceil(1 << 20),
                free >> 20
            ),
        });
    }
    Ok(())
}

/// Writes incompressible data from `from` to `to`, so reads touch real
/// blocks; the file's length only grows as data lands, so an interrupted fill
/// is resumed, not trusted.
fn fill_file(file: &File, path: &Path, from: u64, to: u64) -> Result<(), ReplayError> {
    const CHUNK: usize = 4 << 20;
    let mut buf = AlignedBuf::new(CHUNK).map_err(io_err(path, "cannot allocate a fill buffer"))?;
    let mut rng = WyRand::from_entropy();
    let mut at = from;
    while at < to {
        // Ctrl-C stops the fill between chunks: what landed is kept (the
        // file only grows as data lands) and the next run resumes from it.
        if crate::interrupt::interrupted() {
            let _ = file.sync_all();
            return Err(ReplayError::TargetRefused {
                path: path.to_path_buf(),
                kind: TargetProblem::FillInterrupted,
                reason: format!(
                    "filling the scratch file was interrupted after {} of {} MiB; the next run resumes the fill",
                    (at - from) >> 20,
                    (to - from) >> 20
                ),
            });
        }
        let n = ((to - at) as usize).min(CHUNK);
        rng.fill(&mut buf.as_mut_slice()[..n]);
        let mut done = 0usize;
        while done < n {
            // SAFETY: writing from our aligned buffer, inside its length.
            let rc = unsafe {
                libc::pwrite(
                    file.as_raw_fd(),
                    buf.as_slice()[done..].as_ptr().cast(),
                    n - done,
                    (at + done as u64) as libc::off_t,
                )
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(io_err(path, "cannot fill the scratch file")(e));
            }
            if rc == 0 {
                return Err(io_err(path, "cannot fill the scratch file")(
                    io::Error::from(io::ErrorKind::WriteZero),
                ));
            }
            done += rc as usize;
        }
        at += n as u64;
    }
    file.sync_all()
        .map_err(io_err(path, "cannot sync the scratch file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_data_tells_a_file_of_holes_from_one_with_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::create(&path).unwrap();
        assert!(!has_data(&file, 0), "empty");
        file.set_len(8 << 20).unwrap();
        assert!(!has_data(&file, 8 << 20), "all holes");
        std::fs::write(&path, b"my notes").unwrap();
        let file = File::open(&path).unwrap();
        assert!(has_data(&file, 8), "bytes");
    }
}
