//! `--io-worker-cpu issuer`: on a target without non-blocking I/O, the
//! issuing thread and io_uring's worker threads held on one CPU.
//!
//! There every request goes from the issuing thread to an io-wq worker, which
//! runs the driver (zram copies and compresses in it), and the completion
//! comes back. When the scheduler puts the worker on another CPU than the
//! issuer, each hand-off is a cross-CPU wake-up; on this kind of machine (a
//! VM, where waking an idle CPU is an exit to the hypervisor) a QD1 zram
//! read then took 30-48 µs instead of 6 µs, and which of the two a run got
//! was chosen anew each run. One CPU for both makes every hand-off the
//! same, but also keeps the pair on that CPU when other work lands on it:
//! on a loaded 2-CPU machine it did not make runs repeat better, so it is
//! an option, not the default (replayer/README.md, "Run-to-run spread").
//!
//! The CPU is the one the issuing thread runs on when its first pass starts
//! (the scheduler's pick of a free one), kept for the engine's life:
//! io-wq applies its mask to workers when it starts them, and a worker
//! already running keeps the CPU it has.

use io_uring::IoUring;

/// A CPU set holding one CPU.
fn only(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it (checked size).
    unsafe {
        let mut set = std::mem::zeroed::<libc::cpu_set_t>();
        libc::CPU_SET(cpu, &mut set);
        set
    }
}

/// Chooses the calling thread's current CPU for the ring's io-wq workers.
/// None where the kernel refuses (older than 5.14, or a CPU the task's
/// cpuset does not allow): the workers stay where the scheduler puts them.
pub(super) fn choose_worker_cpu(ring: &IoUring) -> Option<usize> {
    // SAFETY: no arguments; returns the CPU or -1.
    let cpu = unsafe { libc::sched_getcpu() };
    let cpu = usize::try_from(cpu).ok()?;
    if cpu >= libc::CPU_SETSIZE as usize {
        return None;
    }
    ring.submitter().register_iowq_aff(&only(cpu)).ok()?;
    Some(cpu)
}

/// While alive, the calling thread runs only on one CPU; its previous CPU
/// set comes back on drop. Threads it starts meanwhile inherit the one CPU,
/// so it is applied after the pass's decoder thread has started.
pub(super) struct CpuPin {
    previous: Option<libc::cpu_set_t>,
}

impl CpuPin {
    pub(super) fn none() -> CpuPin {
        CpuPin { previous: None }
    }

    /// Holds the calling thread on `cpu`; a refusal leaves it as it was.
    pub(super) fn apply(cpu: usize) -> CpuPin {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: reading and setting the calling thread's (0) CPU set with
        // buffers of the size given.
        unsafe {
            let mut old = std::mem::zeroed::<libc::cpu_set_t>();
            if libc::sched_getaffinity(0, size, &mut old) != 0 || !libc::CPU_ISSET(cpu, &old) {
                return CpuPin::none();
            }
            if libc::sched_setaffinity(0, size, &only(cpu)) != 0 {
                return CpuPin::none();
            }
            CpuPin {
                previous: Some(old),
            }
        }
    }

    /// Whether the thread is held on one CPU.
    pub(super) fn active(&self) -> bool {
        self.previous.is_some()
    }
}

impl Drop for CpuPin {
    fn drop(&mut self) {
        if let Some(old) = self.previous.take() {
            // SAFETY: restoring the calling thread's earlier CPU set.
            unsafe {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &old);
            }
        }
    }
}
