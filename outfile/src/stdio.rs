//! The files standard input and output are, when they are files: a path
//! to one of them is that stream, not another file.

use std::io;
use std::os::fd::AsRawFd;

/// Device and inode of an open descriptor's file, when it is a regular
/// file (a pipe or terminal is never a file an output could replace).
fn fd_identity(fd: &impl AsRawFd) -> Option<(u64, u64)> {
    // SAFETY: fstat fills the struct we pass; the descriptor is borrowed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    ((st.st_mode & libc::S_IFMT) == libc::S_IFREG).then_some((st.st_dev, st.st_ino))
}

/// The file standard input reads, when it is a regular file.
pub(crate) fn stdin_identity() -> Option<(u64, u64)> {
    fd_identity(&io::stdin())
}

/// The file standard output writes, when it is a regular file.
pub(crate) fn stdout_identity() -> Option<(u64, u64)> {
    fd_identity(&io::stdout())
}
