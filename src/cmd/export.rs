//! `tracemark export`: a trace back to text (CSV, or a fio iolog fio replays).

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use recorder::tmt_output::OutputFile;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use trace_format::{IoRecord, Op, TraceFile};

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
        ExportFormat::Csv => write_csv(records, &mut out),
        ExportFormat::Fio => {
            let names = fio_file_names(&file, args.fio_file.as_deref());
            write_fio(records, &names, &mut out)
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

/// The fio file name of each device of the trace.
fn fio_file_names(file: &TraceFile, base: Option<&str>) -> Vec<String> {
    let devices = file.footer().tail.devices.len().max(1);
    let first = base.map(str::to_string).unwrap_or_else(|| {
        file.header()
            .original_device
            .as_ref()
            .filter(|d| !d.name.is_empty())
            .map(|d| format!("/dev/{}", d.name))
            .unwrap_or_else(|| "tracemark-target".to_string())
    });
    (0..devices)
        .map(|i| {
            if i == 0 {
                first.clone()
            } else {
                format!("{first}.{i}")
            }
        })
        .collect()
}

pub fn write_csv(
    records: impl Iterator<Item = Result<IoRecord>>,
    out: &mut impl Write,
) -> Result<()> {
    writeln!(out, "time_ns,op,offset,length,latency_ns,flags")?;
    for r in records {
        let r = r?;
        write!(
            out,
            "{},{},{},{},",
            r.time.0,
            r.op.name(),
            r.offset.0,
            r.len.0
        )?;
        if let Some(l) = r.latency {
            write!(out, "{}", l.0)?;
        }
        writeln!(out, ",{}", r.flags.names())?;
    }
    Ok(())
}

/// fio v3 iolog: `TIME FILE ACTION [OFFSET LENGTH]`, times in microseconds.
/// Flushes become `sync`, discards `trim`; fio has no write-zeroes, so those
/// become `trim` too (the same effect on the data: it reads back as zeroes on
/// devices that zero discarded blocks) and are counted on stderr.
pub fn write_fio(
    records: impl Iterator<Item = Result<IoRecord>>,
    names: &[String],
    out: &mut impl Write,
) -> Result<()> {
    writeln!(out, "fio version 3 iolog")?;
    for n in names {
        writeln!(out, "0 {n} add")?;
    }
    for n in names {
        writeln!(out, "0 {n} open")?;
    }
    let mut last_us = 0;
    let mut zeroes = 0u64;
    for r in records {
        let r = r?;
        let us = r.time.0 / 1000;
        last_us = us;
        let name = names.get(usize::from(r.device)).with_context(|| {
            format!(
                "record at {} names device {} outside the trace's device table",
                r.time, r.device
            )
        })?;
        let action = match r.op {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "sync",
            Op::Discard => "trim",
            Op::WriteZeroes => {
                zeroes += 1;
                "trim"
            }
        };
        writeln!(out, "{us} {name} {action} {} {}", r.offset.0, r.len.0)?;
    }
    for n in names {
        writeln!(out, "{last_us} {n} close")?;
    }
    if zeroes > 0 {
        eprintln!(
            "note: {zeroes} write-zeroes requests exported as fio `trim` (fio has no write-zeroes)"
        );
    }
    Ok(())
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
