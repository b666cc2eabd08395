//! `--cpu-idle poll`: the CPUs kept out of idle states while a run lasts, so
//! the exit latency of an idle state (which moves with the host and the power
//! settings, not with the drive) stays out of access times. Done with the
//! kernel's PM QoS interface: a CPU latency request of 0 µs written to
//! `/dev/cpu_dma_latency` holds while the file stays open and ends when it is
//! closed, also when the process dies, so nothing is left behind.

use crate::options::CpuIdle;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};

/// The kernel's CPU latency request file.
pub const CPU_LATENCY_FILE: &str = "/dev/cpu_dma_latency";

/// A held CPU latency request (or none); dropping it ends the request.
#[derive(Debug)]
pub struct CpuIdleHold {
    file: Option<File>,
}

impl CpuIdleHold {
    /// Holds the CPUs out of idle states when `policy` is `Poll`. A request
    /// the kernel refuses (no root, no PM QoS) is an error for the caller to
    /// report; see [`CpuIdleHold::in_effect`].
    pub fn acquire(policy: CpuIdle) -> io::Result<CpuIdleHold> {
        if policy == CpuIdle::Os {
            return Ok(CpuIdleHold::none());
        }
        let mut file = OpenOptions::new().write(true).open(CPU_LATENCY_FILE)?;
        // The request is a binary s32 in microseconds.
        file.write_all(&0i32.to_ne_bytes())?;
        Ok(CpuIdleHold { file: Some(file) })
    }

    /// No request: the OS's idle policy.
    pub fn none() -> CpuIdleHold {
        CpuIdleHold { file: None }
    }

    /// What the run's CPUs do while idle, as the result records it.
    pub fn in_effect(&self) -> CpuIdle {
        if self.file.is_some() {
            CpuIdle::Poll
        } else {
            CpuIdle::Os
        }
    }
}

/// Whether `--cpu-idle poll` can be had here: Err with the reason if not.
pub fn available() -> io::Result<()> {
    CpuIdleHold::acquire(CpuIdle::Poll).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_policy_holds_nothing() {
        let hold = CpuIdleHold::acquire(CpuIdle::Os).expect("no file is opened for os");
        assert_eq!(hold.in_effect(), CpuIdle::Os);
    }
}
