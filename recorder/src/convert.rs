//! The conversion entry point the `tracemark convert` command calls: detect
//! the input format, parse, normalise, write a `.tmt`.
//!
//! Several inputs are one capture: the files of a blktrace set (`NAME.blktrace.N`,
//! or the prefix `NAME`) are merged by time; several text files are read one
//! after the other, as if concatenated. `-` reads standard input. The trace is
//! committed to the output only when everything succeeded, so a failed or
//! killed conversion leaves no half file ([`TmtOutput`]).

use crate::error::{ConvertError, UsageKind};
use crate::formats::{detect, Format, Reader, HEAD_BYTES};
use crate::normalize::{EventChoice, NormaliseOptions, NormaliseOutcome, Normaliser, RecordSink};
use crate::sink::Sink;
use crate::tmt_output::TmtOutput;
use std::cell::Cell;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use trace_format::{
    DeviceEntry, DeviceId, IssueEvent, Nanos, SkippedInput, Summary, TraceHeader, WriterOptions,
};

/// What `tracemark convert` lets a user choose.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// `None`: detect from content.
    pub format: Option<Format>,
    /// `None`: issue events where the input has them, else queue events.
    pub event: Option<EventChoice>,
    pub device: Option<DeviceId>,
    /// Seconds-since-trace-start window, as nanoseconds.
    pub from: Option<Nanos>,
    pub to: Option<Nanos>,
    pub skip_bad: bool,
    /// How far input time may run backwards and still be put in order
    /// (datasets merged from several sources); `None`: 1 s.
    pub reorder_window: Option<Nanos>,
    /// Trace name; defaults to the first input's file name without extensions.
    pub name: Option<String>,
    pub description: Option<String>,
    pub category: Option<String>,
    /// zstd level and chunk size of the output.
    pub writer: WriterOptions,
    /// A database the caller keeps, which no output may replace (nor its
    /// journals `-wal`, `-shm`, `-journal`), even before it exists. Only
    /// compared with the outputs, never opened.
    pub database: Option<PathBuf>,
}

/// What a conversion did.
#[derive(Debug, Clone)]
pub struct ConvertReport {
    pub output: PathBuf,
    pub format: Format,
    pub issue_event: IssueEvent,
    pub summary: Summary,
    pub devices: Vec<DeviceEntry>,
    pub skipped: SkippedInput,
    /// Understood input that made no records (`key`, count).
    pub notes: Vec<(String, u64)>,
    /// Things to tell the user (an automatic choice, a suspicious input).
    pub messages: Vec<String>,
    /// Doubts about the input as a whole (inputs that may not be one capture).
    pub warnings: Vec<String>,
}

/// The inputs as the parsers will read them.
enum Inputs {
    /// One capture in files read together (blktrace's per-CPU files).
    FileSet(Format, Vec<PathBuf>),
    /// Text files read in order.
    Text(Vec<PathBuf>),
}

fn io_error(path: &Path, source: std::io::Error) -> ConvertError {
    ConvertError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn is_stdin(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// Reads up to [`HEAD_BYTES`] from `r`.
fn read_head(r: &mut dyn Read, path: &Path) -> Result<Vec<u8>, ConvertError> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    r.take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| io_error(path, e))?;
    Ok(head)
}

/// Opens a text input: the detected (or given) format and a reader that starts
/// at its first byte. `fallback` is the format when detection fails (that of
/// the inputs before it).
fn open_text(
    path: &Path,
    format: Option<Format>,
    fallback: Option<Format>,
) -> Result<(Format, Box<dyn BufRead>), ConvertError> {
    let (_, mut raw) = crate::decompress::open(path)?;
    let head = read_head(&mut raw, path)?;
    crate::decompress::refuse_foreign(&head, path)?;
    let format = match format {
        Some(f) => f,
        None => match detect(&head, path) {
            Ok(f) => f,
            Err(e) => fallback.ok_or(e)?,
        },
    };
    let reader = BufReader::with_capacity(256 * 1024, Cursor::new(head).chain(raw));
    Ok((format, Box::new(reader)))
}

/// Works out whether the inputs are one file set (a blktrace capture) or text
/// streams.
fn classify(inputs: &[PathBuf], format: Option<Format>) -> Result<Inputs, ConvertError> {
    let first = inputs
        .first()
        .ok_or_else(|| ConvertError::usage(UsageKind::NoInputs, "no input files given"))?;
    for path in inputs {
        let named = is_stdin(path) || (path.exists() && !path.is_dir());
        if !named && file_set_named_by(path)?.is_none() {
            return Err(not_an_input(path));
        }
    }
    let file_set = match format {
        Some(f) => (!f.is_text()).then_some(f),
        // Standard input is detected when it is opened (it can be read once).
        None if is_stdin(first) => None,
        None if !first.is_file() => file_set_named_by(first)?,
        None => {
            let (_, mut f) = crate::decompress::open(first)?;
            let head = read_head(&mut f, first)?;
            crate::decompress::refuse_foreign(&head, first)?;
            Some(detect(&head, first)?).filter(|f| !f.is_text())
        }
    };
    if let Some(format) = file_set {
        if inputs.iter().any(|p| is_stdin(p)) {
            return Err(ConvertError::usage(
                UsageKind::BinaryOnStdin,
                format!("{format} input cannot be read from standard input; name the files"),
            ));
        }
        // A text file among binary ones would only meet "bad magic".
        for path in inputs.iter().skip(1).filter(|p| p.is_file()) {
            let (_, mut f) = crate::decompress::open(path)?;
            let head = read_head(&mut f, path)?;
            if let Ok(text) = detect(&head, path) {
                if text.is_text() {
                    return Err(ConvertError::usage(
                        UsageKind::MixedFormats,
                        format!(
                            "{}: is {text} text, but {} is {format} binary: text and \
                             {format} inputs cannot be mixed; convert them one by one",
                            path.display(),
                            first.display()
                        ),
                    ));
                }
            }
        }
        return Ok(Inputs::FileSet(format, inputs.to_vec()));
    }
    Ok(Inputs::Text(inputs.to_vec()))
}

/// The error for an input that is neither a file nor the prefix of a file
/// set: what a blktrace set's names look like, and the sets a directory holds.
fn not_an_input(path: &Path) -> ConvertError {
    let what = if path.is_dir() {
        "is a directory"
    } else {
        "no such file"
    };
    let mut reason = format!(
        "{}: {what}, and not the prefix NAME of a blktrace capture (its per-CPU files are \
         NAME.blktrace.0, NAME.blktrace.1, ...)",
        path.display()
    );
    if path.is_dir() {
        let sets = blktrace_sets_in(path);
        if sets.is_empty() {
            reason.push_str("; name the trace files in it");
        } else {
            reason.push_str(&format!("; it holds the capture(s) {}", sets.join(", ")));
        }
    }
    ConvertError::usage(UsageKind::NotAnInput, reason)
}

/// The prefixes of the blktrace sets in `dir` (`dir/NAME` for
/// `NAME.blktrace.N`), sorted, at most a few.
fn blktrace_sets_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut sets = std::collections::BTreeSet::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((stem, cpu)) = name.to_str().and_then(|n| n.rsplit_once(".blktrace.")) else {
            continue;
        };
        if !stem.is_empty() && !cpu.is_empty() && cpu.bytes().all(|b| b.is_ascii_digit()) {
            sets.insert(dir.join(stem).display().to_string());
        }
    }
    sets.into_iter().take(5).collect()
}

/// The file-set format whose files `prefix` names (`NAME` for
/// `NAME.blktrace.N`), if any.
fn file_set_named_by(prefix: &Path) -> Result<Option<Format>, ConvertError> {
    for format in Format::all() {
        if let Reader::FileSet { members, .. } = format.spec().reader {
            if !members(prefix)?.is_empty() {
                return Ok(Some(format));
            }
        }
    }
    Ok(None)
}

/// The files a conversion of `inputs` reads: each input as named (`-` is
/// standard input) and, for one that is not a regular file, the files of the
/// set it names (`NAME` for `NAME.blktrace.0`, `NAME.blktrace.1`, ...). A
/// folder that cannot be listed adds nothing: the parser cannot find a set
/// in it either.
pub fn input_files(inputs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::with_capacity(inputs.len());
    for path in inputs {
        files.push(path.clone());
        if is_stdin(path) || path.is_file() {
            continue;
        }
        for format in Format::all() {
            if let Reader::FileSet { members, .. } = format.spec().reader {
                files.extend(members(path).unwrap_or_default());
            }
        }
    }
    files
}

/// Refuses `output` when it is one of `files` (what the conversion reads,
/// see [`input_files`]) or the database of [`ConvertOptions::database`].
pub(crate) fn refuse_output(
    output: &Path,
    files: &[PathBuf],
    opts: &ConvertOptions,
) -> Result<(), ConvertError> {
    outfile::refuse_inputs(output, files, opts.database.as_deref())
        .map_err(crate::tmt_output::output_error)
}

/// Parses every input into `sink` (the parsers' view, before normalisation);
/// returns the format. Text inputs must all be of one format. `on_format` is
/// told the format before the first event is reported.
pub fn parse_inputs(
    inputs: &[PathBuf],
    format: Option<Format>,
    sink: &mut dyn Sink,
    on_format: &mut dyn FnMut(Format),
) -> Result<Format, ConvertError> {
    match classify(inputs, format)? {
        Inputs::FileSet(format, paths) => {
            let Reader::FileSet { parse, .. } = format.spec().reader else {
                return Err(ConvertError::usage(
                    UsageKind::Internal,
                    format!("{format} is not read as files"),
                ));
            };
            on_format(format);
            let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
            parse(&refs, sink)?;
            Ok(format)
        }
        Inputs::Text(paths) => {
            let mut chosen = format;
            let mut announced = false;
            for path in &paths {
                // Each file is detected (unless --format names one), so a binary
                // file after a text one is refused, not parsed as text.
                let (detected, mut reader) = open_text(path, format, chosen)?;
                let f = match chosen {
                    Some(c) if detected.is_text() => c,
                    _ => detected,
                };
                if !f.is_text() {
                    return Err(if is_stdin(path) {
                        ConvertError::usage(
                            UsageKind::BinaryOnStdin,
                            format!(
                                "standard input is {f} binary, which is read from files \
                                 (a capture's per-CPU files NAME.blktrace.N are merged by \
                                 time): name the files, or their prefix NAME"
                            ),
                        )
                    } else {
                        ConvertError::usage(
                            UsageKind::MixedFormats,
                            format!(
                                "{}: is {f} binary, but {} is text: {f} binary cannot be \
                             mixed with text inputs; convert them one by one",
                                path.display(),
                                paths
                                    .first()
                                    .map_or(String::new(), |p| p.display().to_string())
                            ),
                        )
                    });
                }
                if !announced {
                    on_format(f);
                    announced = true;
                    chosen = Some(f);
                }
                let name = path.display().to_string();
                parse_text(f, &mut reader, &name, sink)?;
            }
            chosen.ok_or_else(|| ConvertError::usage(UsageKind::NoInputs, "no input files given"))
        }
    }
}

/// Runs the parser of a text format.
pub fn parse_text(
    format: Format,
    input: &mut dyn BufRead,
    file: &str,
    sink: &mut dyn Sink,
) -> Result<(), ConvertError> {
    match format.spec().reader {
        Reader::Text(parse) => parse(input, file, sink),
        Reader::FileSet { .. } => Err(ConvertError::usage(
            UsageKind::Internal,
            format!("{file}: {format} input is read from files, not as text"),
        )),
    }
}

pub(crate) fn check_options(opts: &ConvertOptions) -> Result<(), ConvertError> {
    if let (Some(from), Some(to)) = (opts.from, opts.to) {
        if from > to {
            return Err(ConvertError::usage(
                UsageKind::ConflictingOptions,
                format!("--from ({from}) is after --to ({to})"),
            ));
        }
    }
    Ok(())
}

pub(crate) fn normalise_options(opts: &ConvertOptions) -> NormaliseOptions {
    NormaliseOptions {
        event: opts.event,
        device: opts.device,
        from: opts.from,
        to: opts.to,
        skip_bad: opts.skip_bad,
        reorder_tolerance: opts
            .reorder_window
            .unwrap_or(NormaliseOptions::default().reorder_tolerance),
        ..NormaliseOptions::default()
    }
}

/// Refuses a conversion that kept no I/O for a reason the user can act on:
/// a device filter that matches no device of the input (listing the devices
/// it has), or `--skip-bad` that skipped everything that made I/O.
pub(crate) fn check_outcome(
    opts: &ConvertOptions,
    outcome: &NormaliseOutcome,
) -> Result<(), ConvertError> {
    if let Some(wanted) = opts.device {
        if !outcome.devices_seen.iter().any(|d| d.device == wanted) {
            let option = if wanted.major == 0 {
                format!("--volume {} (device {wanted})", wanted.minor)
            } else {
                format!("--device {wanted}")
            };
            let seen = if outcome.devices_seen.is_empty() {
                "the input has no I/O on any device".to_string()
            } else {
                let list: Vec<String> = outcome
                    .devices_seen
                    .iter()
                    .map(|d| format!("{} ({} I/Os)", d.device, d.ios))
                    .collect();
                format!("the input's devices: {}", list.join(", "))
            };
            return Err(ConvertError::usage(
                UsageKind::NoSuchDevice,
                format!("{option} matches no device of the input; {seen}"),
            ));
        }
    }
    let skipped = &outcome.tail.skipped;
    if outcome.records == 0 && skipped.count > 0 {
        let first = skipped
            .examples
            .first()
            .map(|e| format!("; the first: {}: {}: `{}`", e.location, e.reason, e.content))
            .unwrap_or_default();
        return Err(ConvertError::usage(
            UsageKind::NoIo,
            format!(
                "no I/O left: --skip-bad skipped {} bad line(s) or record(s) and nothing \
                 else made I/O{first}",
                skipped.count
            ),
        ));
    }
    Ok(())
}

/// Parses and normalises the inputs into `out` (no file written): what
/// [`convert`] does before writing, for callers with their own output.
pub fn convert_records(
    inputs: &[PathBuf],
    opts: &ConvertOptions,
    out: &mut dyn RecordSink,
) -> Result<(Format, NormaliseOutcome), ConvertError> {
    check_options(opts)?;
    let mut normaliser = Normaliser::new(normalise_options(opts), out);
    let format = parse_inputs(inputs, opts.format, &mut normaliser, &mut |_| {})?;
    let outcome = normaliser.finish()?;
    Ok((format, outcome))
}

/// The default trace name: the first input's file name without extensions
/// (`sda.blktrace.0` → `sda`, `boot.txt` → `boot`).
pub fn default_name(input: &Path) -> String {
    if is_stdin(input) {
        return "stdin".into();
    }
    let file = input
        .file_name()
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_else(|| input.display().to_string());
    let base = match file.split_once(".blktrace") {
        Some((stem, _)) => stem.to_string(),
        None => match file.rsplit_once('.') {
            Some((stem, _)) if !stem.is_empty() => stem.to_string(),
            _ => file,
        },
    };
    if base.is_empty() {
        "trace".into()
    } else {
        base
    }
}

/// Converts `inputs` into the trace `output`.
pub fn convert(
    inputs: &[PathBuf],
    output: &Path,
    opts: &ConvertOptions,
) -> Result<ConvertReport, ConvertError> {
    check_options(opts)?;
    let first = inputs
        .first()
        .ok_or_else(|| ConvertError::usage(UsageKind::NoInputs, "no input files given"))?;
    refuse_output(output, &input_files(inputs), opts)?;
    let mut header = TraceHeader::new(opts.name.clone().unwrap_or_else(|| default_name(first)), "");
    header.description = opts.description.clone().unwrap_or_default();
    header.category = opts.category.clone().unwrap_or_default();
    header.source_files = inputs.iter().map(|p| p.display().to_string()).collect();
    let detected: Rc<Cell<Option<Format>>> = Rc::new(Cell::new(None));
    let format_seen = detected.clone();
    let mut out = TmtOutput::create(output, header, opts.writer, move |h: &mut TraceHeader| {
        if let Some(f) = format_seen.get() {
            h.source_format = f.name().to_string();
        }
    })?;
    let mut normaliser = Normaliser::new(normalise_options(opts), &mut out);
    let format = parse_inputs(inputs, opts.format, &mut normaliser, &mut |f| {
        detected.set(Some(f))
    })?;
    let outcome = normaliser.finish()?;
    check_outcome(opts, &outcome)?;
    let summary = out.commit(&outcome.tail)?;
    Ok(ConvertReport {
        output: output.to_path_buf(),
        format,
        issue_event: outcome.issue_event,
        summary,
        devices: outcome.tail.devices,
        skipped: outcome.tail.skipped,
        notes: outcome.tail.notes,
        messages: outcome.messages,
        warnings: outcome.warnings,
    })
}
