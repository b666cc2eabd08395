//! The command a capture traces, and the task marks it gives: its start and
//! exit, or the signals it sends (`kill -USR2 $TRACEMARK_CAPTURE_PID` when
//! its task starts, `-USR1` when it is done).

use super::{signals, wall_offset, CaptureError, StopReason};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command};
use std::time::Duration;

/// The environment variable that gives a traced command the capture's process
/// id, for `kill -USR2` (its task started) and `kill -USR1` (its task is done).
pub const TASK_MARK_PID_ENV: &str = "TRACEMARK_CAPTURE_PID";

/// The task's marks on the trace's clock: its start (a SIGUSR2 from the
/// command, else the command's start) and "done" point (a SIGUSR1, else the
/// command's exit, when that ended the capture). `origin`: the trace clock's
/// time 0 in CLOCK_MONOTONIC ns (`None` when the trace clock is not that, so
/// no mark can be placed).
pub(super) fn task_marks(
    command: &RunningCommand,
    stop: StopReason,
    origin: Option<trace_format::Nanos>,
    untraced: Option<Duration>,
) -> trace_format::TaskMarks {
    let mut marks = trace_format::TaskMarks {
        untraced: untraced.map(|d| trace_format::Nanos(d.as_nanos().min(u64::MAX as u128) as u64)),
        ..trace_format::TaskMarks::default()
    };
    let (Some(origin), Some(spawned)) = (origin, command.spawned_mono) else {
        return marks;
    };
    let (start_sent, done_sent) = signals::task_marks_sent();
    let start = start_sent.unwrap_or(spawned);
    let done = done_sent.or(match stop {
        StopReason::CommandExited => command.exited_mono,
        _ => None,
    });
    let Some(done) = done.filter(|&d| d >= start) else {
        return marks;
    };
    if start <= origin.0 {
        marks.start_before = Some(trace_format::Nanos(origin.0 - start));
    } else {
        marks.start_after = Some(trace_format::Nanos(start - origin.0));
    }
    marks.end = Some(trace_format::Nanos(done.saturating_sub(origin.0)));
    marks
}

/// The command a capture runs while tracing (if any).
pub(super) struct RunningCommand {
    name: String,
    child: Option<Child>,
    status: Option<i32>,
    /// CLOCK_MONOTONIC ns when it was started and when its exit was seen.
    spawned_mono: Option<u64>,
    exited_mono: Option<u64>,
}

impl RunningCommand {
    pub(super) fn spawn(command: &[OsString]) -> Result<RunningCommand, CaptureError> {
        let Some((program, args)) = command.split_first() else {
            return Ok(RunningCommand {
                name: String::new(),
                child: None,
                status: None,
                spawned_mono: None,
                exited_mono: None,
            });
        };
        let name = program.to_string_lossy().to_string();
        let spawned_mono = Some(wall_offset::mono_now_ns());
        let child = Command::new(program)
            .args(args)
            .env(TASK_MARK_PID_ENV, std::process::id().to_string())
            .spawn()
            .map_err(|source| CaptureError::Command {
                command: name.clone(),
                source,
            })?;
        Ok(RunningCommand {
            name,
            child: Some(child),
            status: None,
            spawned_mono,
            exited_mono: None,
        })
    }

    /// The command's pid and its start (CLOCK_MONOTONIC ns), when one runs.
    pub(super) fn started(&self) -> Option<(u32, u64)> {
        Some((self.child.as_ref()?.id(), self.spawned_mono?))
    }

    /// When its exit was seen (CLOCK_MONOTONIC ns).
    pub(super) fn exited_mono(&self) -> Option<u64> {
        self.exited_mono
    }

    /// Whether the command has exited (always false without one).
    pub(super) fn exited(&mut self) -> Result<bool, CaptureError> {
        let Some(child) = self.child.as_mut() else {
            return Ok(false);
        };
        match child.try_wait() {
            Ok(Some(status)) => {
                self.status = Some(exit_code(status));
                self.exited_mono = Some(wall_offset::mono_now_ns());
                self.child = None;
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(source) => Err(CaptureError::Command {
                command: self.name.clone(),
                source,
            }),
        }
    }

    /// Passes an interruption on (a terminal's Ctrl-C reaches the command
    /// anyway; a signal sent to the capture alone does not).
    pub(super) fn interrupt(&self) {
        if let Some(pid) = self
            .child
            .as_ref()
            .and_then(|c| libc::pid_t::try_from(c.id()).ok())
        {
            // SAFETY: signals our own child, which has not been reaped.
            unsafe {
                libc::kill(pid, libc::SIGINT);
            }
        }
    }

    /// Waits for a command still running; its exit code.
    pub(super) fn wait(mut self) -> Option<i32> {
        if let Some(mut c) = self.child.take() {
            if let Ok(status) = c.wait() {
                self.status = Some(exit_code(status));
            }
        }
        self.status
    }
}

/// Kills nothing: a command still running when the capture ends is waited for,
/// after the trace is written (its exit status still matters).
fn exit_code(status: std::process::ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}
