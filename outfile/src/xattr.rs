//! The extended attributes tracemark marks its own files with (an output,
//! the scratch file), read and set in one place.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Longest value tracemark writes, with room to spare.
const MAX_VALUE: usize = 128;

/// What a file holds under one attribute name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// The attribute's value.
    Value(Vec<u8>),
    /// No such attribute (or the file could not be asked).
    Absent,
    /// The filesystem keeps no user attributes: no mark can be told apart.
    Unsupported,
    /// A value longer than any tracemark writes: someone else's.
    TooLong,
}

/// Runs one `getxattr`-like `call` into a buffer of [`MAX_VALUE`] bytes
/// and says what it found.
fn read(call: impl FnOnce(&mut [u8]) -> isize) -> Attr {
    let mut buf = [0u8; MAX_VALUE];
    let n = call(&mut buf);
    if n >= 0 {
        return Attr::Value(buf[..n as usize].to_vec());
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => Attr::Unsupported,
        Some(libc::ERANGE) => Attr::TooLong,
        _ => Attr::Absent,
    }
}

/// The attribute `name` of the open `file`.
pub fn get(file: &File, name: &CStr) -> Attr {
    // SAFETY: reads the attribute into the buffer, within its length.
    read(|buf| unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    })
}

/// The attribute `name` of the file at `path` (following links), without
/// opening it.
pub fn get_at(path: &Path, name: &CStr) -> Attr {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return Attr::Absent;
    };
    // SAFETY: reads the attribute into the buffer, within its length.
    read(|buf| unsafe {
        libc::getxattr(
            c.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    })
}

/// Sets the attribute `name` of the open `file` to `value`. A filesystem
/// without user attributes keeps none (EOPNOTSUPP): the file then reads as
/// unmarked, which the marks' readers take as not tracemark's.
pub fn set(file: &File, name: &CStr, value: &[u8]) -> io::Result<()> {
    // SAFETY: sets an attribute on an open file from our buffer.
    let rc = unsafe {
        libc::fsetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
