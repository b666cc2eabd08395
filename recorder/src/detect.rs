//! Input format detection from the first bytes of an input, and the format
//! names `--format` accepts.

use crate::error::ConvertError;
use std::fmt;
use std::path::Path;

/// How many bytes of an input detection looks at.
pub const HEAD_BYTES: usize = 64 * 1024;

/// An input format the recorder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Blkparse,
    Blktrace,
    Tracefs,
    Msr,
    Xperf,
    Wpa,
    Fio,
    Spc,
}

impl Format {
    /// Every format, in detection order: binary and strongly marked formats
    /// first, loose CSV shapes last.
    pub const ALL: [Format; 8] = [
        Format::Blktrace,
        Format::Fio,
        Format::Tracefs,
        Format::Blkparse,
        Format::Xperf,
        Format::Wpa,
        Format::Msr,
        Format::Spc,
    ];

    /// The name used by `--format` and stored as the trace's source format.
    pub fn name(self) -> &'static str {
        match self {
            Format::Blkparse => "blkparse",
            Format::Blktrace => "blktrace",
            Format::Tracefs => "tracefs",
            Format::Msr => "msr",
            Format::Xperf => "xperf",
            Format::Wpa => "wpa",
            Format::Fio => "fio",
            Format::Spc => "spc",
        }
    }

    /// Parses a `--format` value (case-insensitive; `etw` is the xperf dump,
    /// `snia` the MSR layout). `auto` is not a format: it is `None` to the caller.
    pub fn from_name(name: &str) -> Option<Format> {
        let lower = name.trim().to_ascii_lowercase();
        Some(match lower.as_str() {
            "blkparse" => Format::Blkparse,
            "blktrace" => Format::Blktrace,
            "tracefs" | "ftrace" => Format::Tracefs,
            "msr" | "snia" => Format::Msr,
            "xperf" | "etw" => Format::Xperf,
            "wpa" => Format::Wpa,
            "fio" | "iolog" => Format::Fio,
            "spc" | "umass" => Format::Spc,
            _ => return None,
        })
    }

    /// Whether the format is text read line by line (all but blktrace binary).
    pub fn is_text(self) -> bool {
        self != Format::Blktrace
    }

    fn looks_like(self, head: &[u8]) -> bool {
        match self {
            Format::Blkparse => crate::formats::blkparse::looks_like(head),
            Format::Blktrace => crate::formats::blktrace::looks_like(head),
            Format::Tracefs => crate::formats::tracefs::looks_like(head),
            Format::Msr => crate::formats::msr::looks_like(head),
            Format::Xperf => crate::formats::xperf::looks_like(head),
            Format::Wpa => crate::formats::wpa::looks_like(head),
            Format::Fio => crate::formats::fio::looks_like(head),
            Format::Spc => crate::formats::spc::looks_like(head),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The names `--format` accepts, for help and error messages.
pub fn format_names() -> String {
    Format::ALL.map(Format::name).join(", ")
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
    if let Some(f) = Format::ALL.into_iter().find(|f| f.looks_like(head)) {
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
    let mut out = String::new();
    for chunk in line.trim_ascii().utf8_chunks() {
        for c in chunk.valid().chars() {
            if out.chars().count() >= 80 {
                out.push('…');
                return out;
            }
            out.push(if c.is_control() { '?' } else { c });
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
        assert_eq!(Format::from_name("ETW"), Some(Format::Xperf));
        assert_eq!(Format::from_name("auto"), None);
    }

    #[test]
    fn detects_text_formats() {
        let p = Path::new("in.txt");
        let blkparse = b"  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [comm]\n";
        assert_eq!(detect(blkparse, p).unwrap(), Format::Blkparse);
        let tracefs = b"# tracer: nop\n#\n  dd-1234 [001] ..... 123.456789: block_rq_issue: 7,0 R 4096 () 0 + 8 [dd]\n";
        assert_eq!(detect(tracefs, p).unwrap(), Format::Tracefs);
        let blk = b"  dd-5679 [001] d..1. 367.964428:   7,0    Q  WS 80 + 8 [dd]\n";
        assert_eq!(detect(blk, p).unwrap(), Format::Tracefs);
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
