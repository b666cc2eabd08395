//! `tracemark export`: a trace back to text (CSV, or a fio iolog fio replays).

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use recorder::formats::{fio, tmt_csv};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use trace_format::TraceFile;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ExportFormat {
    /// `time_ns,op,offset,length,latency_ns,flags`, one line per record.
    Csv,
    /// A fio version 3 iolog (`read_iolog=FILE`; timestamps in microseconds).
    Fio,
    /// Apache Parquet: the CSV columns plus `device` (needs `-o`; build with
    /// `--features parquet`).
    Parquet,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tracemark export game.tmt --to csv -o game.csv\n  tracemark export game.tmt --to fio --fio-file /dev/nvme0n1 -o game.iolog\n  fio --name=replay --read_iolog=game.iolog --ioengine=io_uring --direct=1"
)]
pub struct ExportArgs {
    /// The trace.
    pub trace: PathBuf,
    /// Output format.
    #[arg(long = "to", value_enum)]
    pub format: ExportFormat,
    /// Output file (default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// File name written into a fio iolog for the (first) device; fio opens it.
    /// Default: /dev/NAME of the original device when known, else `tracemark-target`.
    /// Further devices of a multi-device trace get `NAME.1`, `NAME.2`, ...
    #[arg(long)]
    pub fio_file: Option<String>,
}

pub fn run(args: ExportArgs) -> Result<i32> {
    let path = &args.trace;
    // `-` or no -o: standard output. An output over the trace is refused
    // before anything is read.
    let output = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let db = super::store::DbArgs::from_env().path().ok();
    outfile::refuse_inputs(&output, [path], db.as_deref())?;
    let file = TraceFile::open(path).with_context(|| format!("{}", path.display()))?;
    if let ExportFormat::Parquet = args.format {
        let output = args
            .output
            .as_ref()
            .context("--to parquet writes a file: name it with -o FILE.parquet")?;
        export_parquet(&file, output)?;
        return Ok(0);
    }
    // Written whole or not at all (the old file kept on any failure).
    let mut sink = outfile::AtomicFile::create(&output)?;
    let mut out = BufWriter::with_capacity(1 << 20, &mut sink);
    let records = file
        .records()
        .map(|r| r.with_context(|| format!("{}", path.display())));
    let written = match args.format {
        ExportFormat::Csv => tmt_csv::write(records, &mut out),
        ExportFormat::Fio => {
            let names = fio::iolog_file_names(&file, args.fio_file.as_deref());
            fio::write_iolog(records, &names, &mut out).map(|zeroes| {
                if zeroes > 0 {
                    eprintln!("note: {zeroes} write-zeroes requests exported as fio `trim` (fio has no write-zeroes)");
                }
            })
        }
        // Written above, before a text output was opened.
        ExportFormat::Parquet => Ok(()),
    };
    let target = args.output.as_ref().map_or_else(
        || "standard output".to_string(),
        |o| o.display().to_string(),
    );
    written
        .and_then(|()| out.flush().map_err(anyhow::Error::from))
        .with_context(|| format!("writing {target}"))?;
    drop(out);
    sink.commit()?;
    Ok(0)
}

#[cfg(feature = "parquet")]
fn export_parquet(file: &TraceFile, output: &std::path::Path) -> Result<()> {
    let sink = outfile::AtomicFile::create(output)?;
    let handle = sink
        .file()
        .try_clone()
        .with_context(|| format!("{}", output.display()))?;
    recorder::formats::parquet::write(file.records(), &file.footer().tail.devices, handle, output)?;
    sink.commit()?;
    Ok(())
}

#[cfg(not(feature = "parquet"))]
fn export_parquet(_file: &TraceFile, _output: &std::path::Path) -> Result<()> {
    anyhow::bail!(
        "this tracemark was built without Parquet support; build it with `cargo build --release --features parquet`"
    )
}
