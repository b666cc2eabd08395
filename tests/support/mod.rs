//! Shared helpers of the end-to-end tests (both test binaries): the one skip
//! rule, the built binary, the root-test harness with its private devices and
//! tracing instances, synthetic traces and result files, the inputs of the
//! output tests, a headless browser, byte-for-byte snapshots.

pub mod browser;
pub mod devices;
pub mod fleet;
pub mod harness;
pub mod mount;
pub mod output_inputs;
pub mod replay;
pub mod result_fixture;
pub mod slurm;
pub mod snapshot;
pub mod tracefs;

pub use devices::{LoopDevice, Zram};
pub use harness::SystemTest;
pub use tracefs::{TraceSetting, TracingInstance, TracingState};

use std::process::Command;

/// A JSON file (a result, an `info --json`) as a value; a missing or
/// malformed file fails the test naming it.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Set by `.ci/run`: a test that would be skipped fails instead.
pub const NO_SKIP_ENV: &str = "TRACEMARK_NO_SKIP";

/// The running test's name (`module::test`): libtest runs each test on a
/// thread named after it.
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string()
}

/// The one skip rule: prints `SKIP <test>: <why>` and returns false, or
/// panics when `TRACEMARK_NO_SKIP` is set (CI), so a missing feature fails.
pub fn skip(why: &str) -> bool {
    let test = test_name();
    if std::env::var_os(NO_SKIP_ENV).is_some_and(|v| v != "0" && !v.is_empty()) {
        panic!("{test}: would skip ({why}) but {NO_SKIP_ENV} is set");
    }
    eprintln!("SKIP {test}: {why}");
    false
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// True when the test may use root-only kernel features; otherwise skips.
pub fn require_root() -> bool {
    is_root() || skip("needs root")
}

/// True when `tool` is on PATH; otherwise skips.
pub fn require_tool(tool: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    found || skip(&format!("`{tool}` is not installed"))
}

/// True when every tool is on PATH; otherwise skips (naming the first missing).
pub fn require_tools(tools: &[&str]) -> bool {
    tools.iter().all(|tool| require_tool(tool))
}

/// A data directory of this test process's own, for `XDG_DATA_HOME`: the
/// runs the tests replay are stored in a results database there, never in
/// the user's. Removed when the process exits.
pub fn data_home() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    extern "C" fn remove_data_home() {
        if let Some(dir) = DIR.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    DIR.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("tracemark-test-data-")
            .tempdir()
            .unwrap_or_else(|e| panic!("temp dir: {e}"))
            .keep();
        // SAFETY: registers a function with no preconditions, run by exit().
        unsafe { libc::atexit(remove_data_home) };
        dir
    })
}

/// Points a command at [`data_home`] (and away from any database the
/// environment names), with its state (the preconditioning markers) there
/// too: a second copy of the tests, or the user's own runs, never see it.
pub fn private_data(command: &mut Command) -> &mut Command {
    command
        .env("XDG_DATA_HOME", data_home())
        .env("TRACEMARK_STATE_DIR", data_home().join("state"))
        .env_remove("TRACEMARK_DB")
}

/// The binary under test, with a private data directory ([`data_home`]), started with the stop signals at their defaults
/// and unblocked whatever the test runner inherited (under `nohup` SIGHUP is
/// ignored, and a capture keeps an ignored SIGHUP ignored).
pub fn tracemark() -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(env!("CARGO_BIN_EXE_tracemark"));
    private_data(&mut command);
    // SAFETY: signal, sigemptyset, sigaddset and sigprocmask are
    // async-signal-safe and touch only the child's own state.
    unsafe {
        command.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
                libc::sigaddset(&mut set, sig);
            }
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    command
}

/// One blktrace v7 record (native little-endian): a 4 KiB read of 8:0
/// issued (`D`) on CPU `cpu` at `time_ns`, at `sector`.
pub fn blktrace_issue_on(cpu: u32, seq: u32, time_ns: u64, sector: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(48);
    r.extend_from_slice(&0x6561_7407u32.to_le_bytes()); // magic, version 7
    r.extend_from_slice(&seq.to_le_bytes());
    r.extend_from_slice(&time_ns.to_le_bytes());
    r.extend_from_slice(&sector.to_le_bytes());
    r.extend_from_slice(&4096u32.to_le_bytes());
    r.extend_from_slice(&((1u32 << 16) | 7).to_le_bytes()); // READ, ISSUE
    r.extend_from_slice(&100u32.to_le_bytes()); // pid
    r.extend_from_slice(&(8u32 << 20).to_le_bytes()); // device 8:0
    r.extend_from_slice(&cpu.to_le_bytes());
    r.extend_from_slice(&0u16.to_le_bytes()); // error
    r.extend_from_slice(&0u16.to_le_bytes()); // pdu_len
    r
}
