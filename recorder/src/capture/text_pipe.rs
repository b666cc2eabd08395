//! The text `trace_pipe` reader: non-blocking reads cut into lines, each
//! parsed as tracefs text (microsecond times). The fallback when the binary
//! ring buffer cannot be read.

use super::{tracefs_error, CaptureError};
use crate::error::{bad, BadInputKind, BadReason, ConvertError};
use crate::event::Location;
use crate::formats::tracefs;
use crate::sink::Sink;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// Name the parser's locations use for the live stream.
pub(super) const PIPE_NAME: &str = "trace_pipe";

/// Longest line accepted from `trace_pipe`; a longer one is bad input.
const MAX_LINE: usize = 64 * 1024;

/// Receives each line of the pipe: its number and its text, or why it is no
/// text.
type LineHandler<'h> = dyn FnMut(u64, Result<&str, BadReason>) -> Result<(), ConvertError> + 'h;

/// Reads `trace_pipe` without blocking and hands out complete lines.
pub(super) struct PipeReader {
    file: File,
    path: PathBuf,
    pending: Vec<u8>,
    chunk: Vec<u8>,
    line: u64,
    /// Discarding the rest of an over-long line.
    skipping_long: bool,
}

/// What one read of the pipe found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PipeRead {
    Data,
    Empty,
}

impl PipeReader {
    pub(super) fn open(path: PathBuf) -> Result<PipeReader, CaptureError> {
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| tracefs_error(&path, e))?;
        Ok(PipeReader {
            file,
            path,
            pending: Vec::with_capacity(2 * MAX_LINE),
            chunk: vec![0; 256 * 1024],
            line: 0,
            skipping_long: false,
        })
    }

    /// Waits up to `timeout` for data (or a signal).
    pub(super) fn wait(&self, timeout: Duration) {
        let mut fd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd. The result does not matter: the caller reads
        // (non-blocking) either way.
        unsafe {
            libc::poll(&mut fd, 1, ms);
        }
    }

    /// Reads what is available and passes each complete line to `on_line`.
    pub(super) fn read_once(
        &mut self,
        on_line: &mut LineHandler<'_>,
    ) -> Result<PipeRead, CaptureError> {
        let n = loop {
            match self.file.read(&mut self.chunk) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(PipeRead::Empty),
                Err(e) => return Err(tracefs_error(&self.path, e)),
            }
        };
        if n == 0 {
            return Ok(PipeRead::Empty);
        }
        let data = self.chunk.get(..n).unwrap_or(&[]);
        let mut rest = data;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(nl);
            rest = tail.get(1..).unwrap_or(&[]);
            if self.skipping_long {
                self.skipping_long = false;
                continue;
            }
            self.line += 1;
            let result = if self.pending.is_empty() {
                deliver_bytes(self.line, head, on_line)
            } else {
                self.pending.extend_from_slice(head);
                let r = deliver_bytes(self.line, &self.pending, on_line);
                self.pending.clear();
                r
            };
            result?;
        }
        if !self.skipping_long {
            self.pending.extend_from_slice(rest);
            if self.pending.len() > MAX_LINE {
                self.line += 1;
                self.pending.clear();
                self.skipping_long = true;
                on_line(
                    self.line,
                    Err(bad(BadInputKind::TooLong, "line longer than 64 KiB")),
                )?;
            }
        }
        Ok(PipeRead::Data)
    }
}

fn deliver_bytes(
    line: u64,
    bytes: &[u8],
    on_line: &mut LineHandler<'_>,
) -> Result<(), ConvertError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => on_line(line, Ok(text)),
        Err(_) => on_line(line, Err(bad(BadInputKind::NotText, "not UTF-8 text"))),
    }
}

/// The text `trace_pipe`, parsed line by line.
pub(super) struct TextStream {
    pub(super) pipe: PipeReader,
    /// Events its `LOST` lines reported.
    pub(super) lost: u64,
}

impl TextStream {
    pub(super) fn read_once(&mut self, sink: &mut dyn Sink) -> Result<PipeRead, CaptureError> {
        let lost = &mut self.lost;
        let mut on_line = |line: u64, text: Result<&str, BadReason>| -> Result<(), ConvertError> {
            let at = Location::line(PIPE_NAME, line);
            match text {
                Ok(text) => match tracefs::parse_line(text) {
                    Ok(parsed) => {
                        if let tracefs::TraceLine::Lost { events, .. } = parsed {
                            *lost = lost.saturating_add(events);
                        }
                        tracefs::deliver(parsed, at, sink)
                    }
                    Err(reason) => sink.bad_input(at, text, &reason),
                },
                Err(reason) => sink.bad_input(at, "", &reason),
            }
        };
        self.pipe.read_once(&mut on_line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_lines_are_split_across_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        let long = "x".repeat(MAX_LINE + 10);
        let mut content = format!("a\nbc\n{long}\nd\n").into_bytes();
        content.extend_from_slice(b"\x00\xff\n");
        fs::write(&path, content).unwrap();
        let mut r = PipeReader::open(path).unwrap();
        r.chunk = vec![0; 3];
        let mut seen = Vec::new();
        let mut on = |n: u64, t: Result<&str, BadReason>| {
            seen.push((n, t.map(str::to_string)));
            Ok(())
        };
        while r.read_once(&mut on).unwrap() == PipeRead::Data {}
        assert_eq!(seen.first(), Some(&(1, Ok("a".to_string()))));
        assert_eq!(seen.get(1), Some(&(2, Ok("bc".to_string()))));
        assert_eq!(
            seen.get(2),
            Some(&(
                3,
                Err(bad(BadInputKind::TooLong, "line longer than 64 KiB"))
            ))
        );
        assert_eq!(seen.get(3), Some(&(4, Ok("d".to_string()))));
        assert_eq!(
            seen.get(4),
            Some(&(5, Err(bad(BadInputKind::NotText, "not UTF-8 text"))))
        );
        assert_eq!(seen.len(), 5);
    }
}
