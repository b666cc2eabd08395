//! `tracemark-fuzz`: runs the fuzz targets for a time budget each and prints
//! inputs tried, accepted and crashes per target. Exit status 1 on a crash.

use std::path::PathBuf;
use std::time::Duration;

const USAGE: &str =
    "usage: tracemark-fuzz [--seconds N] [--target NAME]... [--seed N] [--crash-dir DIR] [--list]

  --seconds N      time budget per target (default 60)
  --target NAME    run only this target (repeatable; default: all)
  --seed N         mutation seed (default 1); the same seed repeats a run
  --crash-dir DIR  where crashing inputs are saved (default fuzz/crashes)
  --list           list the targets
  --input FILE     run FILE once through the (one) --target and print the outcome";

fn main() {
    std::process::exit(match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tracemark-fuzz: {e}\n{USAGE}");
            2
        }
    });
}

fn run() -> Result<i32, String> {
    let mut seconds = 60u64;
    let mut only: Vec<String> = Vec::new();
    let mut seed = 1u64;
    let mut crash_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crashes");
    let mut input: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    let all = tracemark_fuzz::targets::all();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--seconds" => {
                seconds = value("--seconds")?
                    .parse()
                    .map_err(|_| "--seconds takes a whole number".to_string())?
            }
            "--target" => only.push(value("--target")?),
            "--seed" => {
                seed = value("--seed")?
                    .parse()
                    .map_err(|_| "--seed takes a whole number".to_string())?
            }
            "--crash-dir" => crash_dir = PathBuf::from(value("--crash-dir")?),
            "--input" => input = Some(PathBuf::from(value("--input")?)),
            "--list" => {
                for t in &all {
                    println!("{}", t.name);
                }
                return Ok(0);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(0);
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    if let Some(unknown) = only.iter().find(|n| !all.iter().any(|t| &t.name == *n)) {
        return Err(format!("no target named '{unknown}' (see --list)"));
    }
    if let Some(path) = input {
        let [name] = &only[..] else {
            return Err("--input needs exactly one --target".into());
        };
        let t = all
            .iter()
            .find(|t| &t.name == name)
            .ok_or("no such target")?;
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (outcome, took) = tracemark_fuzz::run_one(t, &bytes).map_err(|e| e.to_string())?;
        println!(
            "{}: {outcome} in {:.1} ms",
            path.display(),
            took.as_secs_f64() * 1e3
        );
        return Ok(0);
    }
    println!(
        "{:<22} {:>12} {:>12} {:>8} {:>6} {:>11} {:>7}",
        "target", "inputs", "accepted", "crashes", "slow", "slowest ms", "corpus"
    );
    let (mut total, mut crashes) = (0u64, 0usize);
    for t in all
        .iter()
        .filter(|t| only.is_empty() || only.contains(&t.name))
    {
        let s = tracemark_fuzz::run(
            t,
            Duration::from_secs(seconds),
            u64::MAX,
            seed,
            Some(&crash_dir),
        )
        .map_err(|e| format!("{}: {e}", t.name))?;
        println!(
            "{:<22} {:>12} {:>12} {:>8} {:>6} {:>11.1} {:>7}",
            s.target,
            s.inputs,
            s.accepted,
            s.crashes.len(),
            s.slow,
            s.slowest.as_secs_f64() * 1e3,
            s.corpus
        );
        for c in s.crashes.iter().take(5) {
            println!("  crash: {} (input: {:?})", c.message, c.saved_as);
        }
        total += s.inputs;
        crashes += s.crashes.len();
    }
    println!("total inputs {total}, crashes {crashes}");
    Ok(if crashes == 0 { 0 } else { 1 })
}
