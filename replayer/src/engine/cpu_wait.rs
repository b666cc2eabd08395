//! How long the replay's threads were ready to run but waited for a CPU
//! (the kernel's per-thread `run_delay`, `/proc/PID/task/TID/schedstat`):
//! the issuing thread and its io_uring workers (`iou-wrk-TID`). A pass whose
//! threads waited for a CPU measures the machine's other load as much as the
//! drive (a 2.67x move of one trace's score between two runs on a loaded
//! machine was that), so the result records it and reports flag it.

use std::path::Path;

/// The run delay, ns, of this thread and its io_uring workers at one moment.
#[derive(Debug, Clone, Copy)]
pub(super) struct CpuWaitStart {
    tid: i32,
    ns: u64,
}

/// The second field of a `schedstat` file: time spent runnable on a run
/// queue, ns (None where the kernel has no schedstat).
fn run_delay_ns(schedstat: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(schedstat).ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The summed run delay of thread `tid` and of the io_uring workers it
/// created (threads named `iou-wrk-TID`, a name the kernel truncates to 15
/// bytes: compared on that prefix).
fn thread_and_workers_ns(tid: i32) -> Option<u64> {
    let tasks = Path::new("/proc/self/task");
    let mut total = run_delay_ns(&tasks.join(tid.to_string()).join("schedstat"))?;
    let worker: String = format!("iou-wrk-{tid}").chars().take(15).collect();
    if let Ok(entries) = std::fs::read_dir(tasks) {
        for e in entries.flatten() {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            if comm.trim_end() == worker {
                total += run_delay_ns(&e.path().join("schedstat")).unwrap_or(0);
            }
        }
    }
    Some(total)
}

impl CpuWaitStart {
    /// Now, for the calling thread (None without schedstat).
    pub(super) fn now() -> Option<CpuWaitStart> {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        Some(CpuWaitStart {
            tid,
            ns: thread_and_workers_ns(tid)?,
        })
    }

    /// The wait since `now()`, ns. Workers that exited in between lose
    /// theirs (they live for seconds after their last work, longer than
    /// most gaps); a worker created in between counts whole.
    pub(super) fn elapsed_ns(&self) -> Option<u64> {
        Some(thread_and_workers_ns(self.tid)?.saturating_sub(self.ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_sharing_its_cpu_with_a_busy_one_waits() {
        // Both threads on one CPU, both busy: each waits about half the time.
        let cpu = {
            // SAFETY: a zeroed cpu_set_t is a valid empty set.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: set is a valid cpu_set_t of the given size.
            unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
            (0..libc::CPU_SETSIZE as usize)
                .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
                .unwrap_or(0)
        };
        let pin = move || {
            // SAFETY: as above.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(cpu, &mut set) };
            // SAFETY: set is valid; 0 is the calling thread.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
        };
        let busy_for = |d: std::time::Duration| {
            let t = std::time::Instant::now();
            while t.elapsed() < d {
                std::hint::spin_loop();
            }
        };
        let hog = std::thread::spawn(move || {
            pin();
            busy_for(std::time::Duration::from_millis(600));
        });
        pin();
        let Some(start) = CpuWaitStart::now() else {
            eprintln!("SKIP: no /proc/self/task/TID/schedstat on this kernel");
            return;
        };
        busy_for(std::time::Duration::from_millis(400));
        let waited = start.elapsed_ns().unwrap();
        hog.join().unwrap();
        assert!(
            waited > 50_000_000,
            "waited {waited} ns over 400 ms on a shared CPU"
        );
    }
}
