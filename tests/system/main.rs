//! End-to-end tests of the system: live capture through tracefs, replay to
//! loop and zram devices, device safety checks, dropping privileges. They need
//! root; without it each prints a SKIP line (or fails when
//! `TRACEMARK_NO_SKIP=1`, as in CI).

// `pub`: the support module is shared by both test binaries, and each uses a
// part of it.
#[path = "../support/mod.rs"]
pub mod support;

mod alias_safety;
mod blktrace_binary;
mod capture;
mod capture_bio;
mod capture_faults;
mod consistency;
mod convert_tracefs;
mod cpu_idle;
mod fault_injection;
mod fleet;
mod io_worker_cpu;
mod io_wq_work;
mod outputs_full_disk;
mod outputs_without_attributes;
mod precondition;
mod replay_cli;
mod replay_exact;
mod replay_faults;
mod replay_safety;
mod replay_unprivileged;
mod results_identity;
