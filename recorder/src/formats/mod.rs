//! The input formats the recorder reads, one module per format, and
//! [`FORMATS`]: the one table that auto-detection, `--format` names and the
//! choice of parser all read.
//!
//! A format module provides `looks_like(head)` (whether the first bytes of an
//! input are of that format), a parser that reports each event, request, bad
//! line or note to a [`Sink`] in input order, and a `pub const FORMAT:
//! FormatSpec` that names them. Adding a format is that file and one line in
//! the `formats!` list below (its place sets the detection order). See the
//! crate README, "Adding a format".

use crate::error::ConvertError;
use crate::sink::Sink;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Declares the format modules and [`FORMATS`] from one list, so a format
/// is added in one place.
macro_rules! formats {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every format, in detection order: binary and strongly marked formats
        /// first, loose CSV shapes last.
        pub static FORMATS: &[&FormatSpec] = &[$(&$module::FORMAT),*];
    };
}

formats! {
    parquet,
    blktrace,
    etl,
    vscsi_bin,
    fio,
    tracefs,
    blkparse,
    xperf,
    wpa,
    msr,
    spc,
    // The public block-trace datasets, each from its publisher's
    // documentation: headers and marked shapes first, the loosest
    // all-number layouts last.
    systor,
    cloudphysics,
    blkreplay,
    fiu,
    alibaba,
    tencent,
    disksim,
    mqsim,
}

/// The block-layer event vocabulary shared by blkparse, tracefs and capture.
pub mod block_events;
/// Shared plumbing of the line-per-request text parsers.
mod line_input;

/// Shared driver of the one-request-per-line dataset formats.
mod request_lines;

/// The CSV `tracemark export --to csv` writes (the Parquet export's columns).
pub mod tmt_csv;

/// How many bytes of an input detection looks at.
pub const HEAD_BYTES: usize = 64 * 1024;

/// Parses one text input (`file` names it in messages) into `sink`.
pub type ParseText = fn(&mut dyn BufRead, &str, &mut dyn Sink) -> Result<(), ConvertError>;

/// How a format's inputs are read.
#[derive(Clone, Copy)]
pub enum Reader {
    /// A stream read from its first byte; several inputs are read one after
    /// the other, as if concatenated (standard input works).
    Text(ParseText),
    /// A set of named files that together are one capture (blktrace's per-CPU
    /// files).
    FileSet {
        /// Parses all the files of the set together.
        parse: fn(&[&Path], &mut dyn Sink) -> Result<(), ConvertError>,
        /// The files of the set a prefix names (`NAME` for `NAME.blktrace.N`);
        /// empty when it names none.
        members: fn(&Path) -> Result<Vec<PathBuf>, ConvertError>,
    },
}

/// What the recorder knows of one input format.
pub struct FormatSpec {
    /// The `--format` name, stored as the trace's source format.
    pub name: &'static str,
    /// Other names `--format` accepts (case-insensitive, like `name`).
    pub aliases: &'static [&'static str],
    /// One line saying what the format is, for help and docs.
    pub about: &'static str,
    /// Whether the first up to [`HEAD_BYTES`] of an input are of this format.
    pub looks_like: fn(&[u8]) -> bool,
    pub reader: Reader,
    /// A few valid lines of the format (empty for binary formats): the tests
    /// check that every format detects and parses its own example, and mutate
    /// it to check that bad input gives an error and no panic.
    pub example: &'static str,
}

/// An input format: a handle on its entry in [`FORMATS`].
#[derive(Clone, Copy)]
pub struct Format(&'static FormatSpec);

impl Format {
    /// Every format, in detection order.
    pub fn all() -> impl Iterator<Item = Format> {
        FORMATS.iter().map(|spec| Format(spec))
    }

    /// The formats read as text streams.
    pub fn text() -> impl Iterator<Item = Format> {
        Format::all().filter(|f| f.is_text())
    }

    /// The name used by `--format` and stored as the trace's source format.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// What the recorder knows of the format.
    pub fn spec(self) -> &'static FormatSpec {
        self.0
    }

    /// Parses a `--format` value (case-insensitive; a name or an alias such
    /// as `etw` for the xperf dump). `auto` is not a format: it is `None`.
    pub fn from_name(name: &str) -> Option<Format> {
        let wanted = name.trim();
        Format::all().find(|f| {
            f.0.name.eq_ignore_ascii_case(wanted)
                || f.0.aliases.iter().any(|a| a.eq_ignore_ascii_case(wanted))
        })
    }

    /// Whether the format is a text stream (all but file-set formats).
    pub fn is_text(self) -> bool {
        matches!(self.0.reader, Reader::Text(_))
    }

    fn looks_like(self, head: &[u8]) -> bool {
        (self.0.looks_like)(head)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Format {}

impl Hash for Format {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name.hash(state);
    }
}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Format({})", self.name())
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The names `--format` accepts, for help and error messages.
pub fn format_names() -> String {
    Format::all()
        .map(Format::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Detects the format of an input from `head` (its first up to [`HEAD_BYTES`]
/// bytes); `path` names it in the error.
pub fn detect(head: &[u8], path: &Path) -> Result<Format, ConvertError> {
    if head.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(ConvertError::Invalid {
            location: format!("{}:1", path.display()),
            reason: "the input is empty".into(),
        });
    }
    if let Some(f) = Format::all().find(|f| f.looks_like(head)) {
        return Ok(f);
    }
    Err(ConvertError::UnknownFormat {
        path: path.to_path_buf(),
        reason: format!(
            "its first line `{}` matches none of {}",
            first_line(head),
            format_names()
        ),
    })
}

/// The first non-blank line of `head`, shortened, with non-text bytes escaped.
fn first_line(head: &[u8]) -> String {
    let line = head
        .split(|&b| b == b'\n')
        .find(|l| !l.trim_ascii().is_empty())
        .unwrap_or(&[]);
    printable(line.trim_ascii(), 80)
}

/// Up to `max_chars` characters of `bytes` as text a terminal shows safely:
/// bytes that are not UTF-8 as `\xNN`, control characters as `?`, and `…`
/// when cut. Undecoded input (a compressed or binary file read as text)
/// never reaches the user raw.
pub(crate) fn printable(bytes: &[u8], max_chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if count >= max_chars {
                out.push('…');
                return out;
            }
            out.push(if c.is_control() { '?' } else { c });
            count += 1;
        }
        for b in chunk.invalid() {
            if count >= max_chars {
                out.push('…');
                return out;
            }
            out.push_str(&format!("\\x{b:02x}"));
            count += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Format {
        Format::from_name(name).unwrap()
    }

    #[test]
    fn names_and_aliases_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for f in Format::all() {
            assert_eq!(Format::from_name(f.name()), Some(f));
            for alias in f.spec().aliases {
                assert_eq!(Format::from_name(alias), Some(f), "{alias}");
                assert!(seen.insert(alias.to_ascii_lowercase()), "{alias} twice");
            }
            assert!(seen.insert(f.name().to_string()), "{} twice", f.name());
            assert!(
                !f.spec().about.is_empty(),
                "{} has no description",
                f.name()
            );
        }
        assert_eq!(Format::from_name("ETW"), Some(named("xperf")));
        assert_eq!(Format::from_name("auto"), None);
    }

    /// Every text format's own example is detected as that format (so no
    /// format earlier in the table claims it) and parses without a bad line.
    #[test]
    fn every_format_detects_and_parses_its_own_example() {
        for f in Format::text() {
            let example = f.spec().example;
            assert!(!example.is_empty(), "{} has no example", f.name());
            let detected = detect(example.as_bytes(), Path::new("ex")).unwrap();
            assert_eq!(detected, f, "example of {}", f.name());
            let Reader::Text(parse) = f.spec().reader else {
                unreachable!()
            };
            let mut sink = crate::sink::Collector::default();
            parse(&mut example.as_bytes(), "ex", &mut sink)
                .unwrap_or_else(|e| panic!("example of {}: {e}", f.name()));
            assert!(
                sink.events.len() + sink.ios.len() > 0,
                "example of {} gave no I/O",
                f.name()
            );
        }
    }

    /// Comment lines (`#`, as public datasets put their column legends)
    /// above and between the records of any line-per-request format are
    /// skipped and counted: detection and the records are as without them.
    #[test]
    fn every_line_format_skips_comment_lines() {
        // tracefs's `#` lines are its own header; vSCSI and ETL are binary.
        for f in Format::text().filter(|f| !["tracefs", "vscsi-bin", "etw-etl"].contains(&f.name()))
        {
            let example = f.spec().example;
            let Reader::Text(parse) = f.spec().reader else {
                unreachable!()
            };
            let (head, rest) = example.split_at(example.find('\n').map_or(0, |i| i + 1));
            let commented = format!(
                "# {} legend\n  #indented, with a tab\t\n{head}#between\n{rest}",
                f.name()
            );
            let detected = detect(commented.as_bytes(), Path::new("ex")).unwrap();
            assert_eq!(detected, f, "commented example of {}", f.name());
            let mut plain = crate::sink::Collector::default();
            parse(&mut example.as_bytes(), "ex", &mut plain).unwrap();
            let mut with = crate::sink::Collector::default();
            parse(&mut commented.as_bytes(), "ex", &mut with)
                .unwrap_or_else(|e| panic!("commented example of {}: {e}", f.name()));
            assert_eq!(with.ios, plain.ios, "{}", f.name());
            assert_eq!(with.events.len(), plain.events.len(), "{}", f.name());
            let comments = |c: &crate::sink::Collector| {
                c.notes.get(line_input::COMMENT_NOTE).copied().unwrap_or(0)
            };
            assert_eq!(comments(&with) - comments(&plain), 3, "{}", f.name());
        }
    }

    #[test]
    fn detects_text_formats() {
        let p = Path::new("in.txt");
        let blkparse = b"  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [comm]\n";
        assert_eq!(detect(blkparse, p).unwrap(), named("blkparse"));
        let tracefs = b"# tracer: nop\n#\n  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]\n";
        assert_eq!(detect(tracefs, p).unwrap(), named("tracefs"));
        let blk = b"  dd-5679 [001] d..1. 367.964428:   7,0    Q  WS 80 + 8 [dd]\n";
        assert_eq!(detect(blk, p).unwrap(), named("tracefs"));
    }

    #[test]
    fn clear_errors() {
        let err = detect(b"", Path::new("e.txt")).unwrap_err().to_string();
        assert_eq!(err, "e.txt:1: the input is empty");
        let err = detect(b"hello\xff world\nmore\n", Path::new("g.bin"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("g.bin: cannot tell the input format"),
            "{err}"
        );
        assert!(err.contains("`hello\\xff world`"), "{err}");
    }
}
