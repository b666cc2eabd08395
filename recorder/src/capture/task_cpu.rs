//! The CPU time a traced command's threads ran between the task's marks:
//! a private tracing instance records the scheduler's runtime updates
//! (`sched_stat_runtime`) and forks (`sched_process_fork`) of the capture's
//! children (`set_event_pid` of the capture with `event-fork`, which adds
//! each process or thread they start), and a thread of the capture sums
//! them per thread of the command's tree as they come. The busiest
//! thread's time is a floor under the task's time on any drive (see
//! `trace_format::TaskCpu`).

use super::session::{read_lost, TraceDir};
use super::signals;
use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use trace_format::{Nanos, TaskCpu};

/// Per-CPU buffer of the instance: the reader empties it every few ms.
const BUFFER_KB: &str = "1024";

/// One event of the instance, as the text pipe gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// `pid` ran `ns` since its last update, at `time` (trace clock, ns).
    Runtime { time: u64, pid: i32, ns: u64 },
    /// `parent` started `child` (a process or a thread).
    Fork { parent: i32, child: i32 },
    /// The kernel dropped events: the sums are short by an unknown amount.
    Lost,
}

/// `"12.345678"` (seconds, the text pipe's microseconds) as ns.
fn seconds_ns(text: &str) -> Option<u64> {
    let (s, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    s.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(frac_ns)
}

/// The number after the last `key` in `text` (up to a space or the end).
fn field_after<T: std::str::FromStr>(text: &str, key: &str) -> Option<(T, usize)> {
    let at = text.rfind(key)?;
    let rest = &text[at + key.len()..];
    let end = rest.find(' ').unwrap_or(rest.len());
    Some((rest[..end].parse().ok()?, at))
}

/// Reads one line of the text pipe. Fields are found from the line's end, so
/// a command name with spaces or `pid=` in it does not move them; other
/// events and lines are `None`.
fn parse_line(line: &str) -> Option<Event> {
    if line.contains("[LOST ") && line.contains(" EVENTS]") {
        return Some(Event::Lost);
    }
    if let Some((head, fields)) = line.split_once(": sched_stat_runtime: ") {
        let time = seconds_ns(head.rsplit(' ').next()?)?;
        let (ns, at) = field_after::<u64>(fields, " runtime=")?;
        let (pid, _) = field_after::<i32>(&fields[..at], " pid=")?;
        return Some(Event::Runtime { time, pid, ns });
    }
    if let Some((_, fields)) = line.split_once(": sched_process_fork: ") {
        let (child, at) = field_after::<i32>(fields, " child_pid=")?;
        let child_comm = fields[..at].rfind(" child_comm=")?;
        let (parent, _) = field_after::<i32>(&fields[..child_comm], " pid=")?;
        return Some(Event::Fork { parent, child });
    }
    None
}

/// The task's marks as the reader knows them, CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Marks {
    /// The command's start.
    spawned: u64,
    /// The start the command signalled, once it did.
    start: Option<u64>,
    /// Its "done" point (signalled, or the command's exit), once known.
    done: Option<u64>,
}

/// A thread's CPU time between the marks: from the command's start, and
/// from the signalled start.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    from_spawn: u64,
    from_start: u64,
}

/// The per-thread sums of the command's threads. Streams: it holds one entry
/// per thread of the task, and before the command's pid is known, the few
/// events since the meter started.
#[derive(Debug, Default)]
struct Ledger {
    root: Option<i32>,
    /// The capture's thread that started the command: its fork of the
    /// command is not a pid used again.
    creator: i32,
    pending: Vec<(Event, Marks)>,
    /// The task's threads, live or gone.
    threads: HashMap<i32, Sums>,
    /// Threads whose pid a later fork took: their sums, kept.
    retired: Vec<Sums>,
    lost: bool,
}

impl Ledger {
    /// The command's pid, and the thread that started it: the task's tree
    /// starts there.
    fn set_root(&mut self, pid: i32, creator: i32) {
        self.root = Some(pid);
        self.creator = creator;
        self.threads.insert(pid, Sums::default());
        for (event, marks) in std::mem::take(&mut self.pending) {
            self.feed(event, marks);
        }
    }

    fn feed(&mut self, event: Event, marks: Marks) {
        if self.root.is_none() {
            if event == Event::Lost {
                self.lost = true;
            } else {
                self.pending.push((event, marks));
            }
            return;
        }
        match event {
            Event::Lost => self.lost = true,
            Event::Fork { parent, child } if parent == self.creator && Some(child) == self.root => {
            }
            Event::Fork { parent, child } => {
                // A pid used again: the old thread's time stays counted.
                if let Some(old) = self.threads.remove(&child) {
                    self.retired.push(old);
                }
                if self.threads.contains_key(&parent) {
                    self.threads.insert(child, Sums::default());
                }
            }
            Event::Runtime { time, pid, ns } => {
                let Some(sums) = self.threads.get_mut(&pid) else {
                    return;
                };
                if time < marks.spawned || marks.done.is_some_and(|d| time > d) {
                    return;
                }
                sums.from_spawn += ns;
                if marks.start.is_some_and(|s| time >= s) {
                    sums.from_start += ns;
                }
            }
        }
    }

    /// The task's CPU time between its marks (from the signalled start if
    /// there was one); `None` when events were lost.
    fn task_cpu(&self, signalled_start: bool) -> Option<TaskCpu> {
        if self.lost || self.root.is_none() {
            return None;
        }
        let ran = self
            .threads
            .values()
            .chain(&self.retired)
            .map(|s| {
                if signalled_start {
                    s.from_start
                } else {
                    s.from_spawn
                }
            })
            .filter(|&ns| ns > 0);
        let (mut busiest, mut total, mut threads) = (0u64, 0u64, 0u32);
        for ns in ran {
            busiest = busiest.max(ns);
            total = total.saturating_add(ns);
            threads = threads.saturating_add(1);
        }
        Some(TaskCpu {
            busiest_thread: Nanos(busiest),
            total: Nanos(total),
            threads,
        })
    }
}

/// What the capture and the reader thread share.
#[derive(Debug, Default)]
struct Shared {
    /// The command's pid, -1 until known.
    root: AtomicI64,
    /// The thread that started it.
    creator: AtomicI64,
    spawned: AtomicU64,
    /// The command's exit (its "done" point when it sends none), 0 until seen.
    exited: AtomicU64,
    stop: AtomicBool,
}

impl Shared {
    fn marks(&self) -> Marks {
        let (start, done) = signals::task_marks_sent();
        let exited = Some(self.exited.load(Ordering::SeqCst)).filter(|&t| t != 0);
        Marks {
            spawned: self.spawned.load(Ordering::SeqCst),
            start,
            done: done.or(exited),
        }
    }
}

/// The running meter: its instance and its reader thread.
pub(super) struct CpuMeter {
    dir: TraceDir,
    shared: Arc<Shared>,
    reader: Option<JoinHandle<io::Result<Ledger>>>,
}

impl CpuMeter {
    /// Starts metering the processes this one starts from now on (the
    /// command), in a private instance under the tracefs at `root`. `None`,
    /// and why in `messages`, where the kernel cannot.
    pub(super) fn start(root: &Path, messages: &mut Vec<String>) -> Option<CpuMeter> {
        let mut ignored = Vec::new();
        let dir = match TraceDir::open(root, true, &mut ignored) {
            Ok(dir) if dir.instance => dir,
            Ok(_) => {
                messages
                    .push("the task's CPU time is not measured: no tracing instance for it".into());
                return None;
            }
            Err(e) => {
                messages.push(format!("the task's CPU time is not measured: {e}"));
                return None;
            }
        };
        match Self::set_up(dir) {
            Ok(meter) => Some(meter),
            Err(why) => {
                messages.push(format!("the task's CPU time is not measured: {why}"));
                None
            }
        }
    }

    fn set_up(mut dir: TraceDir) -> Result<CpuMeter, String> {
        for event in ["sched_stat_runtime", "sched_process_fork"] {
            if !dir.path(&format!("events/sched/{event}")).is_dir() {
                return Err(format!("this kernel has no sched/{event} event"));
            }
        }
        let settings = [
            ("tracing_on", "0"),
            ("trace_clock", "mono"),
            ("buffer_size_kb", BUFFER_KB),
            ("options/event-fork", "1"),
            ("set_event_pid", &std::process::id().to_string()),
            ("events/sched/sched_stat_runtime/enable", "1"),
            ("events/sched/sched_process_fork/enable", "1"),
        ];
        for (file, value) in settings {
            dir.set(file, value).map_err(|e| e.to_string())?;
        }
        let pipe = open_nonblocking(&dir.path("trace_pipe"))
            .map_err(|e| format!("{}: {e}", dir.path("trace_pipe").display()))?;
        dir.set("tracing_on", "1").map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            root: AtomicI64::new(-1),
            ..Shared::default()
        });
        let for_reader = shared.clone();
        let reader = std::thread::Builder::new()
            .name("task-cpu".into())
            .spawn(move || read_events(pipe, &for_reader))
            .map_err(|e| format!("cannot start its reader: {e}"))?;
        Ok(CpuMeter {
            dir,
            shared,
            reader: Some(reader),
        })
    }

    /// The command started: its pid, and when (CLOCK_MONOTONIC ns).
    pub(super) fn command_started(&self, pid: u32, spawned_mono: u64) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        self.shared.creator.store(i64::from(tid), Ordering::SeqCst);
        self.shared.spawned.store(spawned_mono, Ordering::SeqCst);
        self.shared.root.store(i64::from(pid), Ordering::SeqCst);
    }

    /// The command exited, at `mono` (its "done" point if it sent none).
    pub(super) fn command_exited(&self, mono: u64) {
        self.shared.exited.store(mono, Ordering::SeqCst);
    }

    /// Stops metering: the task's CPU time between its marks, or `None` and
    /// why in `messages` (events lost, the reader failed).
    pub(super) fn finish(mut self, messages: &mut Vec<String>) -> Option<TaskCpu> {
        let _ = self.dir.set("tracing_on", "0");
        self.shared.stop.store(true, Ordering::SeqCst);
        let ledger = self.reader.take()?.join();
        let lost = read_lost(&self.dir.dir);
        messages.extend(self.dir.release());
        let ledger = match ledger {
            Ok(Ok(ledger)) => ledger,
            Ok(Err(e)) => {
                messages.push(format!("the task's CPU time is not measured: {e}"));
                return None;
            }
            Err(_) => {
                messages.push("the task's CPU time is not measured: its reader failed".into());
                return None;
            }
        };
        let signalled_start = signals::task_marks_sent().0.is_some();
        match ledger.task_cpu(signalled_start) {
            Some(cpu) if lost.overrun == 0 && lost.dropped == 0 => Some(cpu),
            _ => {
                messages.push(
                    "the task's CPU time is not kept: the kernel dropped some of its events".into(),
                );
                None
            }
        }
    }
}

impl Drop for CpuMeter {
    /// A capture that failed before [`CpuMeter::finish`]: its reader stops
    /// too (the instance goes with the [`TraceDir`]).
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = self.dir.set("tracing_on", "0");
            self.shared.stop.store(true, Ordering::SeqCst);
            let _ = reader.join();
        }
    }
}

/// `path` opened for reading, its reads returning at once when it is empty.
fn open_nonblocking(path: &Path) -> io::Result<fs::File> {
    let file = fs::File::open(path)?;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// The reader thread: the text pipe's events into a [`Ledger`] until told
/// to stop and the pipe is empty.
fn read_events(mut pipe: fs::File, shared: &Shared) -> io::Result<Ledger> {
    let mut ledger = Ledger::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut partial = Vec::new();
    loop {
        if ledger.root.is_none() {
            let root = shared.root.load(Ordering::SeqCst);
            if let Ok(pid) = i32::try_from(root) {
                if pid >= 0 {
                    let creator = shared.creator.load(Ordering::SeqCst);
                    ledger.set_root(pid, i32::try_from(creator).unwrap_or(-1));
                }
            }
        }
        match pipe.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => {
                partial.extend_from_slice(&buf[..n]);
                let marks = shared.marks();
                let complete = partial
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                for line in partial[..complete].split(|&b| b == b'\n') {
                    if let Some(event) = std::str::from_utf8(line).ok().and_then(parse_line) {
                        ledger.feed(event, marks);
                    }
                }
                partial.drain(..complete);
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if shared.stop.load(Ordering::SeqCst) {
            return Ok(ledger);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNTIME: &str = "              cp-4242    [001] d..2. 23251.431026: sched_stat_runtime: comm=cp pid=4242 runtime=3015940 [ns]";

    #[test]
    fn the_text_pipe_lines_are_read_from_their_end() {
        assert_eq!(
            parse_line(RUNTIME),
            Some(Event::Runtime {
                time: 23_251_431_026_000,
                pid: 4242,
                ns: 3_015_940
            })
        );
        // A command named to look like fields moves nothing.
        let spoofed = "  x pid=9-77 [000] ..... 5.000001: sched_stat_runtime: comm=x pid=9 runtime=1 pid=77 runtime=500 [ns]";
        assert_eq!(
            parse_line(spoofed),
            Some(Event::Runtime {
                time: 5_000_001_000,
                pid: 77,
                ns: 500
            })
        );
        let fork = "            bash-491     [000] ..... 23251.5: sched_process_fork: comm=bash pid=491 child_comm=bash child_pid=533";
        assert_eq!(
            parse_line(fork),
            Some(Event::Fork {
                parent: 491,
                child: 533
            })
        );
        assert_eq!(parse_line("CPU:1 [LOST 12 EVENTS]"), Some(Event::Lost));
        assert_eq!(parse_line("  cp-1 [000] 1.0: block_rq_issue: 8,0 R"), None);
        assert_eq!(
            parse_line("cp-1 [000] x.y: sched_stat_runtime: comm=cp pid=1 runtime=5 [ns]"),
            None
        );
    }

    fn runtime(time: u64, pid: i32, ns: u64) -> Event {
        Event::Runtime { time, pid, ns }
    }

    #[test]
    fn only_the_commands_threads_between_the_marks_count() {
        let marks = Marks {
            spawned: 100,
            start: Some(200),
            done: Some(1_000),
        };
        let mut l = Ledger::default();
        // Before the pid is known: held, then counted.
        l.feed(
            Event::Fork {
                parent: 10,
                child: 11,
            },
            marks,
        );
        l.feed(runtime(150, 11, 5), marks);
        l.set_root(11, 10);
        // Its creation read after its pid was known: the same thread.
        l.feed(
            Event::Fork {
                parent: 10,
                child: 11,
            },
            marks,
        );
        l.feed(
            Event::Fork {
                parent: 11,
                child: 12,
            },
            marks,
        );
        l.feed(
            Event::Fork {
                parent: 12,
                child: 13,
            },
            marks,
        );
        l.feed(runtime(300, 12, 40), marks);
        l.feed(runtime(400, 13, 70), marks);
        l.feed(runtime(500, 13, 30), marks);
        // Not of the task: another process, and a thread after "done".
        l.feed(runtime(500, 99, 1_000), marks);
        l.feed(runtime(1_500, 13, 1_000), marks);
        // Before the command started.
        l.feed(runtime(50, 11, 1_000), marks);
        let cpu = l.task_cpu(true).unwrap();
        assert_eq!(cpu.busiest_thread, Nanos(100));
        assert_eq!(cpu.total, Nanos(140));
        assert_eq!(cpu.threads, 2);
        // From the command's start when it signalled none.
        let from_spawn = l.task_cpu(false).unwrap();
        assert_eq!(from_spawn.total, Nanos(145));
        assert_eq!(from_spawn.threads, 3);
    }

    #[test]
    fn a_reused_pid_is_another_thread_and_lost_events_keep_nothing() {
        let marks = Marks {
            spawned: 0,
            start: None,
            done: None,
        };
        let mut l = Ledger::default();
        l.set_root(1, 0);
        l.feed(
            Event::Fork {
                parent: 1,
                child: 2,
            },
            marks,
        );
        l.feed(runtime(10, 2, 60), marks);
        // pid 2 exits; an unrelated process gets it, then the task again.
        l.feed(
            Event::Fork {
                parent: 50,
                child: 2,
            },
            marks,
        );
        l.feed(runtime(20, 2, 1_000), marks);
        l.feed(
            Event::Fork {
                parent: 1,
                child: 2,
            },
            marks,
        );
        l.feed(runtime(30, 2, 50), marks);
        let cpu = l.task_cpu(false).unwrap();
        assert_eq!(cpu.busiest_thread, Nanos(60));
        assert_eq!(cpu.total, Nanos(110));
        assert_eq!(cpu.threads, 2);
        l.feed(Event::Lost, marks);
        assert_eq!(l.task_cpu(false), None);
    }
}
