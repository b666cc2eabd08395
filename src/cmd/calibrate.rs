//! `tracemark calibrate`: store in a trace what a replay on its capture drive
//! predicted, so that replays elsewhere are set against it.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  tracemark replay app.tmt --target /dev/nvme0n1 --allow-write --mapping identity --json on-capture-drive.json
  tracemark calibrate app.tmt --from on-capture-drive.json

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
    /// A result file (`tracemark replay --json`) of a replay of this trace on
    /// the drive it was captured on.
    #[arg(long, value_name = "RESULT.json")]
    pub from: PathBuf,
    /// Write the calibrated trace here instead of over TRACE.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Take a replay that waited for a CPU for over 5 % of its playback
    /// (refused otherwise: the machine's load would move every later
    /// prediction of the trace).
    #[arg(long)]
    pub accept_cpu_wait: bool,
}

pub fn run(args: CalibrateArgs) -> Result<i32> {
    let out = args.output.as_ref().unwrap_or(&args.trace);
    let db = super::store::DbArgs::from_env().path().ok();
    outfile::refuse_inputs(out, [&args.from], db.as_deref())?;
    let result = results::compare::load_result(&args.from)?;
    let out = args.output.as_ref().unwrap_or(&args.trace);
    let c = replayer::calibration::calibrate(
        &args.trace,
        &result,
        &args.from,
        out,
        if args.accept_cpu_wait {
            replayer::calibration::CpuWait::Accept
        } else {
            replayer::calibration::CpuWait::Refuse
        },
    )
    .with_context(|| format!("calibrating {}", args.trace.display()))?;
    let secs = |ns: Option<trace_format::Nanos>| {
        ns.map_or("-".to_string(), |ns| format!("{:.3} s", ns.as_secs_f64()))
    };
    let model = |m| secs(c.capture_drive.get(m));
    use trace_format::DependencyModel as M;
    println!(
        "{}: calibrated{}: on the capture drive the replay predicted {} (blocking), {} (stream), {} (all); untraced {}",
        out.display(),
        if c.replaced { " (the earlier calibration replaced)" } else { "" },
        model(M::Blocking),
        model(M::Stream),
        model(M::All),
        secs(c.untraced),
    );
    Ok(0)
}
