//! A regular file as the target: opened (created where missing), checked
//! as the user's data or tracemark's own scratch file, grown and filled so
//! reads touch real blocks.

use super::{io_err, probe_nowait, Target, TargetKind, TargetRequest};
use crate::buffer::AlignedBuf;
use crate::{ReplayError, TargetProblem};
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
    if req.needs_write || current < required {
        claim_scratch(&file, path, existed, req.allow_write)?;
    }
    let mut size = current;
    if current < required {
        check_free_space(&file, path, required - current)?;
        fill_file(&file, path, current / block * block, required)?;
        size = required;
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
    })
}

/// The extended attribute that marks a file tracemark made as its scratch
/// file, so a later run may write it again.
const SCRATCH_MARK: &std::ffi::CStr = c"user.tracemark.scratch";

/// Whether the open file carries [`SCRATCH_MARK`].
fn has_scratch_mark(file: &File) -> bool {
    // SAFETY: a size query (no buffer) of an attribute of an open file.
    unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            SCRATCH_MARK.as_ptr(),
            std::ptr::null_mut(),
            0,
        ) >= 0
    }
}

/// Before a run writes or grows a regular file: the file must be one
/// tracemark made (it carries the scratch mark), hold no data (new, empty
/// or all holes), or be given up with `--allow-write`; a user's file that
/// a trace, a document or a database is never overwritten by accident. A
/// file that held no data is then marked (a filesystem without user
/// attributes keeps no mark, and a later run asks for `--allow-write`); one
/// given up with `--allow-write` is not (its filesystem may be frozen, and
/// the user says so each time).
fn claim_scratch(
    file: &File,
    path: &Path,
    existed: bool,
    allow_write: bool,
) -> Result<(), ReplayError> {
    let meta = file.metadata().map_err(io_err(path, "cannot stat"))?;
    let holds_data = existed && meta.blocks() > 0;
    // tracemark never gives its scratch file a second name: a hard link to
    // it is someone's file, whatever the mark on the inode says.
    let marked = has_scratch_mark(file) && meta.nlink() == 1;
    if holds_data && !allow_write && !marked {
        return Err(ReplayError::TargetRefused {
            path: path.to_path_buf(),
            kind: TargetProblem::NotScratch,
            reason: format!(
                "is a file of {} bytes that tracemark did not make, and the run would write or grow it; pass --allow-write to let tracemark overwrite it, or name a new file",
                meta.len()
            ),
        });
    }
    if !holds_data && !marked {
        // SAFETY: sets a one-byte attribute on an open file.
        unsafe {
            libc::fsetxattr(
                file.as_raw_fd(),
                SCRATCH_MARK.as_ptr(),
                b"1".as_ptr().cast(),
                1,
                0,
            )
        };
    }
    Ok(())
}

/// Refuses a fill the filesystem has no room for, before writing anything
/// (instead of filling it up to ENOSPC).
fn check_free_space(file: &File, path: &Path, needed: u64) -> Result<(), ReplayError> {
    // SAFETY: fstatvfs fills the struct we pass.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &mut st) } != 0 {
        return Ok(()); // unknown: the fill's own errors will say
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
