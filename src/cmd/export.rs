//! `tracemark export`: a trace back to text (CSV, or a fio iolog fio replays).

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use recorder::formats::{fio, tmt_csv};
use recorder::tmt_output::OutputFile;
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
    let file = TraceFile::open(path).with_context(|| format!("{}", path.display()))?;
    if let ExportFormat::Parquet = args.format {
        let output = args
            .output
            .as_ref()
            .context("--to parquet writes a file: name it with -o FILE.parquet")?;
        export_parquet(&file, output)?;
        return Ok(0);
    }
    // A file output is written under no name (or a hidden one) and put in
    // place only when whole: an error, a full disk or a signal leaves the
    // old file as it was and no half file. A path that exists and is not a
    // regular file (`/dev/stdout`, a FIFO) is written directly.
    let mut pending = None;
    let sink: Box<dyn Write> = match &args.output {
        Some(o) if std::fs::metadata(o).is_ok_and(|m| !m.is_file()) => Box::new(
            std::fs::OpenOptions::new()
                .write(true)
                .open(o)
                .with_context(|| format!("cannot open {}", o.display()))?,
        ),
        Some(o) => {
            let (output, file) = OutputFile::create(o)?;
            let copy = file
                .try_clone()
                .with_context(|| format!("{}", o.display()))?;
            pending = Some((output, file));
            Box::new(copy)
        }
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
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
    if let Some((output, file)) = pending {
        output.commit(file)?;
    }
    Ok(0)
}

#[cfg(feature = "parquet")]
fn export_parquet(file: &TraceFile, output: &std::path::Path) -> Result<()> {
    let out = std::fs::File::create(output)
        .with_context(|| format!("cannot create {}", output.display()))?;
    recorder::formats::parquet::write(file.records(), &file.footer().tail.devices, out, output)?;
    Ok(())
}

#[cfg(not(feature = "parquet"))]
fn export_parquet(_file: &TraceFile, _output: &std::path::Path) -> Result<()> {
    anyhow::bail!(
        "this tracemark was built without Parquet support; build it with `cargo build --release --features parquet`"
    )
}
