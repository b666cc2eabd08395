//! `tracemark calibrate`: store in a trace what a replay on its capture drive
//! predicted, so that replays elsewhere are set against it.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark replay app.tmt --target /dev/nvme0n1 --allow-write --mapping identity --json on-capture-drive.json
  tracemark calibrate app.tmt --from on-capture-drive.json
  tracemark calibrate app.tmt --from first.json second.json third.json

A replay's predicted task time is the task's untraced time plus how much the
replay's latencies move it from the capture's latencies. The capture's
latencies are one traced run's: tracing and whatever else that run met
stretch them, and a replay on the capture drive itself can then predict far
less than the untraced time. A calibrated trace carries the task time a
replay on its capture drive predicted; later replays predict the untraced
time plus their difference from that replay (the same replayer on both
sides), and also report the uncalibrated figure. Calibrate with a realtime
replay (the default mode) on the drive the trace was captured on, of the
trace's own region of the drive (--mapping identity), from the same state of
its data.")]
pub struct CalibrateArgs {
    /// The trace (rewritten in place unless --output is given).
    pub trace: PathBuf,
    /// Result files (`tracemark replay --json`) of replays of this trace on
    /// the drive it was captured on: with several, the median of their
    /// predictions (one replay carries its own draw of the drive's latency),
    /// all made at one setting. The trace keeps each replay's prediction
    /// and their settings (`info` shows them).
    #[arg(long, value_name = "RESULT.json", required = true, num_args = 1..)]
    pub from: Vec<PathBuf>,
    /// Write the calibrated trace here instead of over TRACE.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Take a replay that waited for a CPU for over 5 % of its playback
    /// (refused otherwise: the machine's load would move every later
    /// prediction of the trace).
    #[arg(long)]
    pub accept_cpu_wait: bool,
    /// Take a replay over 10 % of whose sampled reads found no data, or one
    /// at --precondition skip, which does not look (refused otherwise:
    /// never-written or trimmed blocks read faster than data, and a replay
    /// preconditioned as by default reads data there).
    #[arg(long)]
    pub accept_unwritten_reads: bool,
}

pub fn run(args: CalibrateArgs) -> Result<i32> {
    let out = args.output.as_ref().unwrap_or(&args.trace);
    let db = super::store::DbArgs::from_env().path().ok();
    outfile::refuse_inputs(out, &args.from, db.as_deref())?;
    let loaded = args
        .from
        .iter()
        .map(|p| results::compare::load_result(p))
        .collect::<Result<Vec<_>, _>>()?;
    let from: Vec<_> = loaded
        .iter()
        .zip(&args.from)
        .map(|(r, p)| (r, p.as_path()))
        .collect();
    let c = replayer::calibration::calibrate(
        &args.trace,
        &from,
        out,
        replayer::calibration::Accept {
            cpu_wait: args.accept_cpu_wait,
            unwritten_reads: args.accept_unwritten_reads,
        },
    )
    .with_context(|| format!("calibrating {}", args.trace.display()))?;
    let secs = |ns: Option<trace_format::Nanos>| {
        ns.map_or("-".to_string(), |ns| format!("{:.3} s", ns.as_secs_f64()))
    };
    let model = |m| secs(c.capture_drive.get(m));
    use trace_format::DependencyModel as M;
    println!(
        "{}: calibrated{}: on the capture drive {} predicted {} (blocking), {} (stream), {} (all); untraced {}",
        out.display(),
        if c.replaced { " (the earlier calibration replaced)" } else { "" },
        if c.replays == 1 {
            "the replay".to_string()
        } else {
            format!("the median of {} replays", c.replays)
        },
        model(M::Blocking),
        model(M::Stream),
        model(M::All),
        secs(c.untraced),
    );
    if let (Some((lo, hi)), Some(mid)) = (c.range, c.capture_drive.get(M::PRIMARY)) {
        let pct = |x: trace_format::Nanos| 100.0 * (x.0 as f64 / mid.0.max(1) as f64 - 1.0);
        println!(
            "{}: the replays predicted {:.3}-{:.3} s ({}; {:+.1} % to {:+.1} % of their median): every later prediction of the trace moves with the median's draw of the capture drive (more replays narrow it)",
            out.display(),
            lo.as_secs_f64(),
            hi.as_secs_f64(),
            M::PRIMARY.name(),
            pct(lo),
            pct(hi),
        );
    }
    Ok(0)
}
