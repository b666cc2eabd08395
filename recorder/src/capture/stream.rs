//! Where a capture's events come from: the binary ring buffer or the text
//! pipe, behind one interface.

use super::ring::RawStream;
use super::session::{TraceDir, Tracing};
use super::text_pipe::{PipeRead, PipeReader, TextStream};
use super::{CaptureError, Reader};
use crate::sink::Sink;
use std::path::Path;
use std::time::Duration;

/// Where the capture's events come from.
pub(super) enum EventStream {
    Raw(RawStream),
    Text(TextStream),
}

impl EventStream {
    /// Opens the binary ring buffer of `tracing` (the text pipe when asked
    /// for, or when the ring buffer cannot be read: `messages` says why).
    pub(super) fn open(
        tracing: &Tracing,
        root: &Path,
        text_pipe: bool,
        messages: &mut Vec<String>,
    ) -> Result<EventStream, CaptureError> {
        let text = |dir: &TraceDir| -> Result<EventStream, CaptureError> {
            Ok(EventStream::Text(TextStream {
                pipe: PipeReader::open(dir.path("trace_pipe"))?,
                lost: 0,
            }))
        };
        if text_pipe {
            messages.push(
                "reading the text trace_pipe (asked for): times have microsecond resolution".into(),
            );
            return text(&tracing.dir);
        }
        let raw = if tracing.mono {
            RawStream::open(&tracing.dir.dir, root, &tracing.enabled)
        } else {
            Err("without the `mono` clock the CPUs' buffers cannot be merged by time".into())
        };
        match raw {
            Ok(raw) => Ok(EventStream::Raw(raw)),
            Err(why) => {
                messages.push(format!(
                    "cannot read the binary ring buffer ({why}); reading the text trace_pipe \
                     instead: times have microsecond resolution"
                ));
                text(&tracing.dir)
            }
        }
    }

    pub(super) fn reader(&self) -> Reader {
        match self {
            EventStream::Raw(_) => Reader::RingBuffer,
            EventStream::Text(_) => Reader::TextPipe,
        }
    }

    /// Reads what is there (a bounded amount); `Data` when there may be more
    /// at once.
    pub(super) fn read_some(&mut self, sink: &mut dyn Sink) -> Result<PipeRead, CaptureError> {
        match self {
            EventStream::Raw(r) => r.read_round(sink),
            EventStream::Text(t) => t.read_once(sink),
        }
    }

    /// Waits up to `timeout` for data (or a signal).
    pub(super) fn wait(&self, timeout: Duration) {
        match self {
            EventStream::Text(t) => t.pipe.wait(timeout),
            // Polling `trace_pipe_raw` waits for `buffer_percent` of the
            // buffer to fill; a plain sleep (ended early by a signal) keeps
            // the delay bounded and lets pages fill between reads.
            EventStream::Raw(_) => {
                let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
                // SAFETY: no descriptors; poll only sleeps.
                unsafe {
                    libc::poll(std::ptr::null_mut(), 0, ms);
                }
            }
        }
    }

    /// After tracing is off: reads everything left and releases every held
    /// event.
    pub(super) fn drain(&mut self, sink: &mut dyn Sink) -> Result<(), CaptureError> {
        for _ in 0..2 {
            while self.read_some(sink)? == PipeRead::Data {}
            std::thread::sleep(Duration::from_millis(5));
        }
        while self.read_some(sink)? == PipeRead::Data {}
        if let EventStream::Raw(r) = self {
            r.release(u64::MAX, sink)?;
        }
        Ok(())
    }

    /// (events the stream said were lost, lost-event marks without a count).
    pub(super) fn missed(&self) -> (u64, u64) {
        match self {
            EventStream::Raw(r) => (r.missed, r.uncounted_marks),
            EventStream::Text(t) => (t.lost, 0),
        }
    }
}
