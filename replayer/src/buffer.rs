//! Page-aligned memory from an anonymous mapping: O_DIRECT needs aligned
//! buffers, and io_uring pins them once when they are registered.

use std::io;

pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed, populated mapping of at least `len` bytes (rounded up to 4 KiB).
    pub fn new(len: usize) -> io::Result<AlignedBuf> {
        let len = len.max(4096).div_ceil(4096) * 4096;
        // SAFETY: an anonymous private mapping with no address hint.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(AlignedBuf {
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The start of the mapping, for the kernel to write into: taken from a
    /// unique borrow, so no shared slice of the same bytes can be alive.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr/len describe our live mapping, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as above, shared.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn iovec(&self) -> libc::iovec {
        libc::iovec {
            iov_base: self.ptr.cast(),
            iov_len: self.len,
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping we made. Pages still pinned by a ring
        // stay alive in the kernel until it lets them go.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
