//! `tracemark convert --split-by volume -o DIR/`: one pass over a multi-volume
//! dataset (Alibaba, Tencent, SYSTOR, MQSim...) writes one trace per volume.
//!
//! One normaliser sees every volume (so the input is parsed and reordered
//! once); its records are routed by device to one trace writer per volume.
//! Each volume's trace starts at its own first request, has that volume as its
//! only device, and holds the same records `--volume ID` would give. Memory is
//! bounded by the number of volumes (one small chunk and file buffer each,
//! [`SPLIT_CHUNK_RECORDS`] records), never by the input's length. Traces are
//! written to hidden temporary files and renamed into place only when the
//! whole input converted.
//!
//! Each trace is checked as a single output is, when its volume is first
//! seen and again before the first trace is put in place: a trace that
//! would replace a file the conversion reads, the caller's database or
//! another trace of the split is refused, and then none is written.

use crate::convert::{
    check_options, input_files, normalise_options, parse_inputs, refuse_output, ConvertOptions,
};
use crate::error::{ConvertError, UsageKind};
use crate::formats::Format;
use crate::normalize::{Normaliser, RecordSink};
use crate::tmt_output::{output_error, OutputFile};
use std::cell::Cell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use trace_format::{
    DeviceEntry, DeviceId, IoRecord, IssueEvent, Nanos, Summary, TraceHeader, TraceTail,
    TraceWriter, WriterOptions,
};

/// Records per chunk of a split trace: small, so that thousands of volumes
/// open at once stay within memory (64 B a record: 256 KiB per volume).
pub const SPLIT_CHUNK_RECORDS: u32 = 4096;

/// File buffer per split trace.
const SPLIT_BUFFER_BYTES: usize = 64 * 1024;

/// One trace a split wrote.
#[derive(Debug, Clone)]
pub struct SplitTrace {
    pub device: DeviceId,
    pub output: PathBuf,
    pub summary: Summary,
}

/// What a split did.
#[derive(Debug, Clone)]
pub struct SplitReport {
    pub format: Format,
    pub traces: Vec<SplitTrace>,
    pub messages: Vec<String>,
}

/// The file name (without folder) of a volume's trace: `NAME-vol7.tmt` for
/// the dataset volume `0:7`, `NAME-dev8-16.tmt` for a real device.
pub fn volume_file_name(base: &str, device: DeviceId) -> String {
    if device.major == 0 {
        format!("{base}-vol{}.tmt", device.minor)
    } else {
        format!("{base}-dev{}-{}.tmt", device.major, device.minor)
    }
}

struct VolumeOut {
    device: DeviceId,
    temp: OutputFile,
    output: PathBuf,
    first_time: Nanos,
    writer: TraceWriter<BufWriter<File>>,
}

/// Routes normalised records to one writer per device.
struct Router<'a> {
    dir: &'a Path,
    /// The files the conversion reads ([`input_files`]): no trace may be one.
    files: Vec<PathBuf>,
    opts: &'a ConvertOptions,
    base: String,
    template: TraceHeader,
    format: Rc<Cell<Option<Format>>>,
    writer: WriterOptions,
    devices: Vec<DeviceId>,
    outs: Vec<Option<VolumeOut>>,
}

impl Router<'_> {
    fn open(&mut self, index: usize, first_time: Nanos) -> Result<VolumeOut, ConvertError> {
        let device = *self.devices.get(index).ok_or_else(|| {
            ConvertError::usage(
                UsageKind::Internal,
                format!("record on device index {index} before its device"),
            )
        })?;
        let name = volume_file_name(&self.base, device);
        let output = self.dir.join(&name);
        // Refused as a single output is, before a byte of it is written.
        refuse_output(&output, &self.files, self.opts)?;
        let (temp, file) = OutputFile::create(&output)?;
        let mut header = self.template.clone();
        header.name = name.trim_end_matches(".tmt").to_string();
        if let Some(f) = self.format.get() {
            header.source_format = f.name().to_string();
        }
        let writer = TraceWriter::with_options(
            BufWriter::with_capacity(SPLIT_BUFFER_BYTES, file),
            &header,
            self.writer,
        )
        .map_err(|e| e.with_path(output.as_path()))?;
        Ok(VolumeOut {
            device,
            temp,
            output,
            first_time,
            writer,
        })
    }
}

impl RecordSink for Router<'_> {
    fn begin(&mut self, issue_event: IssueEvent) -> Result<(), ConvertError> {
        self.template.issue_event = issue_event;
        Ok(())
    }

    fn new_device(&mut self, index: u16, device: DeviceId) -> Result<(), ConvertError> {
        let index = usize::from(index);
        if self.devices.len() <= index {
            self.devices
                .resize(index + 1, DeviceId { major: 0, minor: 0 });
            self.outs.resize_with(index + 1, || None);
        }
        self.devices[index] = device;
        Ok(())
    }

    fn record(&mut self, mut record: IoRecord) -> Result<(), ConvertError> {
        let index = usize::from(record.device);
        if self.outs.get(index).is_none_or(Option::is_none) {
            let out = self.open(index, record.time)?;
            if self.outs.len() <= index {
                self.outs.resize_with(index + 1, || None);
            }
            self.outs[index] = Some(out);
        }
        let out = self.outs[index]
            .as_mut()
            .ok_or_else(|| ConvertError::usage(UsageKind::Internal, "split output missing"))?;
        record.device = 0;
        record.time = record.time.saturating_sub(out.first_time);
        // A full disk or a failing write names the trace being written.
        out.writer
            .push(&record)
            .map_err(|e| e.with_path(out.output.as_path()))?;
        Ok(())
    }
}

/// Raises the soft open-file limit to the hard one: a split holds one file
/// per volume, and datasets have thousands.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct passed; no other
    // preconditions.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Checks every trace again just before the first is put in place (a file
/// may have come to a trace's path during the conversion): none is a file
/// the conversion reads or the database, no two are one file.
fn refuse_traces(
    done: &[((OutputFile, File), SplitTrace)],
    router: &Router<'_>,
) -> Result<(), ConvertError> {
    for ((temp, _), trace) in done {
        refuse_output(&trace.output, &router.files, router.opts)?;
        refuse_output(temp.target(), &router.files, router.opts)?;
    }
    outfile::refuse_same_outputs(done.iter().map(|(_, t)| t.output.as_path())).map_err(output_error)
}

/// Converts `inputs` into one trace per volume in the folder `dir` (created
/// if missing).
pub fn convert_split(
    inputs: &[PathBuf],
    dir: &Path,
    opts: &ConvertOptions,
) -> Result<SplitReport, ConvertError> {
    check_options(opts)?;
    if opts.device.is_some() {
        return Err(ConvertError::usage(
            UsageKind::ConflictingOptions,
            "--split-by volume writes every volume; it cannot be combined with --volume or --device",
        ));
    }
    let first = inputs
        .first()
        .ok_or_else(|| ConvertError::usage(UsageKind::NoInputs, "no input files given"))?;
    // No folder is made where the database is, or will be.
    refuse_output(dir, &[], opts)?;
    let made = missing_folders(dir);
    std::fs::create_dir_all(dir).map_err(|source| ConvertError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let split = split_into_folder(inputs, dir, opts, first);
    if split.is_err() {
        // A refused split leaves no folder it made (each is empty: every
        // temporary is gone with the router).
        for folder in &made {
            if std::fs::remove_dir(folder).is_err() {
                break;
            }
        }
    }
    split
}

/// The folders of `dir`'s path that do not exist yet, deepest first.
fn missing_folders(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .take_while(|p| std::fs::symlink_metadata(p).is_err())
        .map(Path::to_path_buf)
        .collect()
}

/// [`convert_split`] once the folder `dir` is there.
fn split_into_folder(
    inputs: &[PathBuf],
    dir: &Path,
    opts: &ConvertOptions,
    first: &Path,
) -> Result<SplitReport, ConvertError> {
    raise_open_file_limit();
    let mut template = TraceHeader::new("", "");
    template.description = opts.description.clone().unwrap_or_default();
    template.category = opts.category.clone().unwrap_or_default();
    template.source_files = inputs.iter().map(|p| p.display().to_string()).collect();
    let detected: Rc<Cell<Option<Format>>> = Rc::new(Cell::new(None));
    let mut router = Router {
        dir,
        files: input_files(inputs),
        opts,
        base: opts
            .name
            .clone()
            .unwrap_or_else(|| crate::convert::default_name(first)),
        template,
        format: detected.clone(),
        writer: WriterOptions {
            chunk_records: SPLIT_CHUNK_RECORDS,
            ..opts.writer
        },
        devices: Vec::new(),
        outs: Vec::new(),
    };
    // On failure every temporary is dropped, leaving no file.
    split_into(inputs, opts, &mut router, &detected)
}

fn split_into(
    inputs: &[PathBuf],
    opts: &ConvertOptions,
    router: &mut Router<'_>,
    detected: &Rc<Cell<Option<Format>>>,
) -> Result<SplitReport, ConvertError> {
    let mut normaliser = Normaliser::new(normalise_options(opts), router);
    let format = parse_inputs(inputs, opts.format, &mut normaliser, &mut |f| {
        detected.set(Some(f))
    })?;
    let outcome = normaliser.finish()?;
    crate::convert::check_outcome(opts, &outcome)?;
    if outcome.records == 0 {
        return Err(ConvertError::usage(
            UsageKind::NoIo,
            format!(
                "{}: no I/O to split",
                inputs
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let mut done = Vec::new();
    for out in router.outs.iter_mut().filter_map(Option::take) {
        let tail = TraceTail {
            devices: vec![DeviceEntry {
                id: out.device,
                name: String::new(),
            }],
            skipped: outcome.tail.skipped.clone(),
            notes: outcome.tail.notes.clone(),
            capture_start_unix_ns: outcome.tail.capture_start_unix_ns,
            task: outcome.tail.task,
            calibration: None,
        };
        let (buffered, summary) = out
            .writer
            .finish(&tail)
            .map_err(|e| e.with_path(out.output.as_path()))?;
        let output = out.output.clone();
        let io_error = |source| ConvertError::Io {
            path: output.clone(),
            source,
        };
        let mut file = buffered
            .into_inner()
            .map_err(|e| io_error(e.into_error()))?;
        file.flush().map_err(io_error)?;
        done.push((
            (out.temp, file),
            SplitTrace {
                device: out.device,
                output: out.output,
                summary,
            },
        ));
    }
    refuse_traces(&done, router)?;
    // Renamed only once every trace is complete, checked and synced.
    let (files, mut traces): (Vec<_>, Vec<_>) = done.into_iter().unzip();
    OutputFile::commit_all(files)?;
    traces.sort_by_key(|t| t.device);
    Ok(SplitReport {
        format,
        traces,
        // Doubts about the input as a whole, told with the notes.
        messages: outcome
            .messages
            .into_iter()
            .chain(
                outcome
                    .warnings
                    .into_iter()
                    .map(|w| format!("warning: {w}")),
            )
            .collect(),
    })
}
