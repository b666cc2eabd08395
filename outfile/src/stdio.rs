//! The files standard input and output are, when they are files: a path
//! to one of them is that stream, not another file. A command whose result
//! goes to standard output can send its text to standard error instead
//! ([`divert_text_to_stderr`]), so what it writes there is the result alone.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;

/// Standard output as the process got it, once its text goes to standard
/// error.
static RESULT_OUT: OnceLock<OwnedFd> = OnceLock::new();

/// From now on, what the process prints to standard output (`println!`)
/// goes to standard error, and an output of `-` to the standard output the
/// process was started with. Once per process; later calls do nothing.
pub fn divert_text_to_stderr() -> io::Result<()> {
    if RESULT_OUT.get().is_some() {
        return Ok(());
    }
    let original = io::stdout().as_fd().try_clone_to_owned()?;
    // SAFETY: dup2 of two descriptors the process holds open.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let _ = RESULT_OUT.set(original);
    Ok(())
}

/// A descriptor of the standard output an output of `-` writes to.
pub(crate) fn result_out() -> io::Result<OwnedFd> {
    match RESULT_OUT.get() {
        Some(fd) => fd.try_clone(),
        None => io::stdout().as_fd().try_clone_to_owned(),
    }
}

/// Device and inode of an open descriptor's file, when it is a regular
/// file (a pipe or terminal is never a file an output could replace).
fn fd_identity(fd: BorrowedFd<'_>) -> Option<(u64, u64)> {
    // SAFETY: fstat fills the struct we pass; the descriptor is borrowed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    ((st.st_mode & libc::S_IFMT) == libc::S_IFREG).then_some((st.st_dev, st.st_ino))
}

/// The file standard input reads, when it is a regular file.
pub(crate) fn stdin_identity() -> Option<(u64, u64)> {
    fd_identity(io::stdin().as_fd())
}

/// The file an output of `-` writes, when it is a regular file.
pub(crate) fn stdout_identity() -> Option<(u64, u64)> {
    match RESULT_OUT.get() {
        Some(fd) => fd_identity(fd.as_fd()),
        None => fd_identity(io::stdout().as_fd()),
    }
}
