//! `tracemark`: record the block I/O of real applications, replay it against a
//! drive, and score the drive. This binary parses arguments and prints; the work
//! is done by the `trace-format`, `recorder` and `replayer` crates.

mod cmd;
mod output;
mod reference;

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "tracemark",
    version,
    about = "Trace-based storage benchmark: record real application block I/O, replay it with io_uring, score the drive",
    after_help = "Examples:\n  tracemark convert sda.blktrace.* -o app.tmt\n  tracemark info app.tmt\n  tracemark export app.tmt --to csv -o app.csv"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Let an output replace an existing file tracemark did not write (or
    /// one changed since it did). Without it such a file is refused before
    /// any work; tracemark's own unchanged outputs and empty files are
    /// replaced either way.
    #[arg(long, global = true)]
    overwrite: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Turn block I/O logs (blktrace, blkparse, tracefs, MSR, ETW/WPA, fio, SPC) into a .tmt trace.
    Convert(cmd::convert::ConvertArgs),
    /// Show what a trace holds: counts, bytes, duration, sizes, queue depths, idle gaps.
    Info(cmd::info::InfoArgs),
    /// Write a trace back out as CSV or as a fio iolog.
    Export(cmd::export::ExportArgs),
    /// Replay traces against a drive (or a scratch file) and score it.
    Replay(cmd::replay::ReplayArgs),
    /// Replay a profile of the reference suite (quick, full, data) or a suite file and print one score.
    Suite(cmd::suite::SuiteArgs),
    /// Trace one block device live through tracefs (for a duration, a command's life, or until Ctrl-C) into a .tmt trace.
    Capture(cmd::capture::CaptureArgs),
    /// Store in a trace the task time a replay on its capture drive predicted, so replays elsewhere are set against it.
    Calibrate(cmd::calibrate::CalibrateArgs),
    /// Compare result files side by side (ratios to the first); --html writes a report with charts.
    Compare(cmd::compare::CompareArgs),
    /// Add up the result files of a fleet's ranks (replay --shard) into one fleet result.
    Merge(cmd::merge::MergeArgs),
    /// PCMark 8-style consistency test: precondition, degradation, steady-state and recovery rounds, a suite pass each.
    Consistency(cmd::consistency::ConsistencyArgs),
    /// The runs kept in the results database: list, show, compare, export, import, rm, label, leaderboard.
    Results(cmd::results::ResultsArgs),
    /// Print a shell completion script: `source <(tracemark completions bash)`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `tracemark man | man -l -`; with a
    /// subcommand, its page (tracemark-replay(1) is `tracemark man replay`).
    Man { subcommand: Option<String> },
}

fn main() {
    // Like other Unix filters: a closed pipe (`tracemark info t.tmt | head`)
    // ends the program quietly instead of failing a write.
    // SAFETY: setting a signal disposition to the default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    if cli.overwrite {
        outfile::allow_overwrite();
    }
    let result = match cli.command {
        Command::Convert(a) => cmd::convert::run(a),
        Command::Info(a) => cmd::info::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Replay(a) if a.fleet.is_set() => cmd::fleet::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Suite(a) => cmd::suite::run(a),
        Command::Capture(a) => cmd::capture::run(a),
        Command::Calibrate(a) => cmd::calibrate::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Merge(a) => cmd::merge::run(a),
        Command::Consistency(a) => cmd::consistency::run(a),
        Command::Results(a) => cmd::results::run(a),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "tracemark",
                &mut std::io::stdout(),
            );
            Ok(0)
        }
        Command::Man { subcommand } => man_page(subcommand.as_deref()),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // Errors quote input (names, lines, reasons): no raw control
            // characters reach the terminal.
            eprintln!(
                "tracemark: error: {}",
                output::escape_control(&error_chain(&e))
            );
            std::process::exit(1);
        }
    }
}

/// Writes the man page of tracemark, or of one of its subcommands.
fn man_page(subcommand: Option<&str>) -> anyhow::Result<i32> {
    let top = Cli::command();
    let page = match subcommand {
        None => top,
        Some(name) => {
            let Some(sub) = top.find_subcommand(name) else {
                anyhow::bail!("no subcommand '{name}' (`tracemark --help` lists them)");
            };
            sub.clone()
                .name(format!("tracemark-{name}"))
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    clap_mangen::Man::new(page).render(&mut std::io::stdout())?;
    Ok(0)
}

/// The error and its causes on one line, without repeating a cause that the
/// message already contains.
fn error_chain(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if msg.contains(&text) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&text);
    }
    msg
}
