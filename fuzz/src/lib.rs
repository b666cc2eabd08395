//! Fuzzing on the stable toolchain, without `cargo fuzz`: each target starts
//! from a seed corpus (`seeds/<name>/` plus generated seeds), mutates inputs
//! (stacked byte- and text-level mutations, splices between corpus entries,
//! and for `.tmt` mutations inside the compression with checksums recomputed),
//! runs them for a time budget, and counts inputs, accepted inputs and
//! crashes. A crash is a panic (caught, its input saved) or an input that
//! runs longer than [`HANG_LIMIT`] (the input is saved and the process
//! aborts, since a hung thread cannot be stopped). Inputs that a target
//! accepts join the corpus, so later mutations start from valid inputs.
//!
//! `cargo run --release -p tracemark-fuzz -- --seconds 600` runs every
//! target; `cargo test -p tracemark-fuzz` runs each for a few seconds.

pub mod mutate;
pub mod targets;
mod tmt_fix;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use targets::{Scratch, Target};

/// An input running longer than this is a hang.
pub const HANG_LIMIT: Duration = Duration::from_secs(120);
/// An input running longer than this is saved as slow (not a crash).
pub const SLOW_LIMIT: Duration = Duration::from_secs(1);
/// Inputs are cut to this length.
pub const MAX_INPUT: usize = 64 << 10;
/// The corpus stops growing here.
const MAX_CORPUS: usize = 1024;

/// What one target's run did.
#[derive(Debug, Clone)]
pub struct RunStats {
    pub target: String,
    pub inputs: u64,
    /// Inputs the target accepted as valid (the rest were refused cleanly).
    pub accepted: u64,
    pub crashes: Vec<Crash>,
    pub slowest: Duration,
    /// Inputs that took over [`SLOW_LIMIT`] (saved as `<target>-slow-*`).
    pub slow: u64,
    pub corpus: usize,
}

#[derive(Debug, Clone)]
pub struct Crash {
    pub message: String,
    pub saved_as: Option<PathBuf>,
}

static PANIC_MESSAGE: Mutex<Option<String>> = Mutex::new(None);

/// Panics are caught and counted; their message is kept, not printed.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if let Ok(mut m) = PANIC_MESSAGE.lock() {
            *m = Some(format!("{payload}{location}"));
        }
    }));
}

/// Watches for a hang: if the input counter stops moving for [`HANG_LIMIT`],
/// saves the running input and aborts.
struct Watchdog {
    done: Arc<AtomicU64>,
    current: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicU64>,
}

impl Watchdog {
    fn start(target: &str, crash_dir: Option<&Path>) -> Watchdog {
        let done = Arc::new(AtomicU64::new(0));
        let current = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicU64::new(0));
        let (d, c, s) = (done.clone(), current.clone(), stop.clone());
        let name = target.to_string();
        let dir = crash_dir.map(Path::to_path_buf);
        std::thread::spawn(move || {
            let mut last = u64::MAX;
            let mut since = Instant::now();
            while s.load(Ordering::Relaxed) == 0 {
                std::thread::sleep(Duration::from_millis(200));
                let now = d.load(Ordering::Relaxed);
                if now != last {
                    last = now;
                    since = Instant::now();
                } else if since.elapsed() > HANG_LIMIT {
                    let input = c.lock().map(|v| v.clone()).unwrap_or_default();
                    let saved = dir.map(|d| save(&d, &name, "hang", &input));
                    eprintln!(
                        "fuzz {name}: an input ran over {}s (a hang); saved as {saved:?}",
                        HANG_LIMIT.as_secs()
                    );
                    std::process::abort();
                }
            }
        });
        Watchdog {
            done,
            current,
            stop,
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(1, Ordering::Relaxed);
    }
}

fn save(dir: &Path, target: &str, kind: &str, input: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let sum = crc32c_of(input);
    let path = dir.join(format!("{target}-{kind}-{sum:08x}"));
    let _ = std::fs::write(&path, input);
    path
}

fn crc32c_of(b: &[u8]) -> u32 {
    crc32c::crc32c(b)
}

/// Runs `target` for `budget` (or until `max_inputs`), from `seed`.
pub fn run(
    target: &Target,
    budget: Duration,
    max_inputs: u64,
    seed: u64,
    crash_dir: Option<&Path>,
) -> std::io::Result<RunStats> {
    quiet_panics();
    let scratch = Scratch::new()?;
    let watchdog = Watchdog::start(&target.name, crash_dir);
    let mut rng = trace_format::rng::WyRand::new(seed ^ crc32c_of(target.name.as_bytes()) as u64);
    let mut corpus: Vec<Vec<u8>> = target.seeds.clone();
    let mut stats = RunStats {
        target: target.name.clone(),
        inputs: 0,
        accepted: 0,
        crashes: Vec::new(),
        slowest: Duration::ZERO,
        slow: 0,
        corpus: 0,
    };
    let start = Instant::now();
    let mut next_seed = 0;
    while stats.inputs < max_inputs && (next_seed < target.seeds.len() || start.elapsed() < budget)
    {
        let input = if next_seed < target.seeds.len() {
            next_seed += 1;
            target.seeds[next_seed - 1].clone()
        } else {
            let base = &corpus[rng.below(corpus.len())];
            let other = &corpus[rng.below(corpus.len())];
            let mut v = mutate::mutate(&mut rng, base, other, MAX_INPUT);
            if let Some(fix) = target.fix {
                v = fix(&mut rng, v);
            }
            v
        };
        targets::set_convert_options(target.format, rng.below(3) == 0);
        if let Ok(mut c) = watchdog.current.lock() {
            c.clear();
            c.extend_from_slice(&input);
        }
        let began = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (target.run)(&scratch, &input)
        }));
        let took = began.elapsed();
        stats.slowest = stats.slowest.max(took);
        if took > SLOW_LIMIT {
            stats.slow += 1;
            if let Some(d) = crash_dir {
                save(d, &target.name, "slow", &input);
            }
        }
        stats.inputs += 1;
        watchdog.done.store(stats.inputs, Ordering::Relaxed);
        match outcome {
            Ok(Ok(())) => {
                stats.accepted += 1;
                if corpus.len() < MAX_CORPUS && !corpus.contains(&input) {
                    corpus.push(input);
                }
            }
            Ok(Err(_)) => {}
            Err(_) => {
                let message = PANIC_MESSAGE
                    .lock()
                    .ok()
                    .and_then(|mut m| m.take())
                    .unwrap_or_else(|| "panic".into());
                let saved_as = crash_dir.map(|d| save(d, &target.name, "panic", &input));
                stats.crashes.push(Crash { message, saved_as });
            }
        }
    }
    stats.corpus = corpus.len();
    Ok(stats)
}

/// Runs one input through `target` (both conversion settings: as given and
/// with `--skip-bad`); says what happened and how long it took.
pub fn run_one(target: &Target, input: &[u8]) -> std::io::Result<(String, Duration)> {
    quiet_panics();
    let scratch = Scratch::new()?;
    let began = Instant::now();
    let mut said = Vec::new();
    for skip_bad in [false, true] {
        targets::set_convert_options(target.format, skip_bad);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (target.run)(&scratch, input)
        }));
        said.push(match outcome {
            Ok(Ok(())) => "accepted".to_string(),
            Ok(Err(e)) => format!("refused: {e}"),
            Err(_) => format!(
                "PANIC: {}",
                PANIC_MESSAGE
                    .lock()
                    .ok()
                    .and_then(|mut m| m.take())
                    .unwrap_or_default()
            ),
        });
    }
    Ok((said.join(" / with --skip-bad: "), began.elapsed()))
}
