//! `--priority high`: the issuing thread under `SCHED_FIFO` for a pass.

use crate::options::Priority;

/// While alive, the calling thread runs under the asked priority; the
/// previous policy comes back on drop. A refusal (no CAP_SYS_NICE) leaves the
/// thread as it was: callers check [`realtime_priority_available`] first to
/// tell the user.
pub(super) struct PriorityGuard {
    pub(super) previous: Option<(libc::c_int, libc::sched_param)>,
}

/// The `SCHED_FIFO` priority used by `--priority high`: above every normal
/// thread, below the kernel's own real-time threads (watchdogs, migration).
const FIFO_PRIORITY: libc::c_int = 10;

impl PriorityGuard {
    pub(super) fn apply(priority: Priority) -> PriorityGuard {
        if priority == Priority::Normal {
            return PriorityGuard { previous: None };
        }
        // SAFETY: querying and setting the calling thread's (pid 0) policy
        // with a valid sched_param.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            let mut old = std::mem::zeroed::<libc::sched_param>();
            if policy < 0 || libc::sched_getparam(0, &mut old) != 0 {
                return PriorityGuard { previous: None };
            }
            let param = libc::sched_param {
                sched_priority: FIFO_PRIORITY,
            };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                return PriorityGuard { previous: None };
            }
            PriorityGuard {
                previous: Some((policy, old)),
            }
        }
    }
}

impl Drop for PriorityGuard {
    fn drop(&mut self) {
        if let Some((policy, param)) = self.previous.take() {
            // SAFETY: restoring the calling thread's earlier policy.
            unsafe {
                libc::sched_setscheduler(0, policy, &param);
            }
        }
    }
}

/// Whether this process may run a thread under `SCHED_FIFO` (tried on a
/// short-lived thread); the error says why not.
pub fn realtime_priority_available() -> std::io::Result<()> {
    std::thread::spawn(|| {
        let param = libc::sched_param {
            sched_priority: FIFO_PRIORITY,
        };
        // SAFETY: setting this short-lived thread's own policy.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    })
    .join()
    .unwrap_or_else(|_| Err(std::io::Error::other("the probe thread failed")))
}
