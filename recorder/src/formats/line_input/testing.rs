//! A sink that collects everything, for the parsers' unit tests.

use crate::error::{BadInputKind, BadReason, ConvertError};
use crate::event::{BlockEvent, Location, SourceIo};
use crate::sink::Sink;
use trace_format::{Nanos, Op};

#[derive(Default)]
pub struct Collect {
    pub ios: Vec<(u64, SourceIo)>,
    /// (line, content, reason)
    pub bad: Vec<(u64, String, String)>,
    /// The kind of each entry of `bad`.
    pub kinds: Vec<BadInputKind>,
    pub notes: Vec<String>,
    pub wall_clock: Option<i64>,
    /// Keep going after bad input (as `--skip-bad`).
    pub skip_bad: bool,
}

impl Collect {
    pub fn skipping() -> Self {
        Collect {
            skip_bad: true,
            ..Default::default()
        }
    }

    /// Each request as (device minor, op, offset, length, time).
    pub fn requests(&self) -> Vec<(u32, Op, u64, u64, Nanos)> {
        self.ios
            .iter()
            .map(|(_, io)| (io.device.minor, io.op, io.offset.0, io.len.0, io.time))
            .collect()
    }

    /// Asserts that the bad lines are exactly `expect`'s, in order, each
    /// reason containing the text given with its line number.
    pub fn assert_bad_lines(&self, expect: &[(u64, &str)]) {
        let reasons: Vec<(u64, &str)> = self.bad.iter().map(|(l, _, r)| (*l, r.as_str())).collect();
        assert_eq!(reasons.len(), expect.len(), "{reasons:?}");
        for ((line, reason), (want_line, want)) in reasons.iter().zip(expect) {
            assert_eq!(line, want_line, "{reason}");
            assert!(reason.contains(want), "line {line}: {reason} lacks {want}");
        }
    }
}

fn line_of(at: &Location<'_>) -> u64 {
    match at.position {
        crate::event::Position::Line(n) => n,
        crate::event::Position::Record { index, .. } => index,
    }
}

impl Sink for Collect {
    fn event(&mut self, _at: Location<'_>, _e: BlockEvent) -> Result<(), ConvertError> {
        panic!("a one-line-per-request parser reported a block event");
    }
    fn io(&mut self, at: Location<'_>, io: SourceIo) -> Result<(), ConvertError> {
        self.ios.push((line_of(&at), io));
        Ok(())
    }
    fn bad_input(
        &mut self,
        at: Location<'_>,
        content: &str,
        reason: &BadReason,
    ) -> Result<(), ConvertError> {
        self.bad
            .push((line_of(&at), content.to_string(), reason.message.clone()));
        self.kinds.push(reason.kind);
        if self.skip_bad {
            Ok(())
        } else {
            Err(ConvertError::bad_input(&at, content.to_string(), reason))
        }
    }
    fn note(&mut self, key: &str) {
        self.notes.push(key.to_string());
    }
    fn wall_clock(&mut self, ns: i64) {
        self.wall_clock = Some(ns);
    }
}

/// Runs `parse` over `text` with a skipping collector.
pub fn run(
    parse: fn(&mut dyn std::io::BufRead, &str, &mut dyn Sink) -> Result<(), ConvertError>,
    text: &[u8],
) -> Collect {
    let mut sink = Collect::skipping();
    let mut input = text;
    parse(&mut input, "t.txt", &mut sink).expect("parse with skip-bad succeeds");
    sink
}

/// Runs `parse` over a format's documented example `doc`, checking that
/// `looks_like` takes it for the format and that no line of it is bad.
pub fn run_documented(
    looks_like: fn(&[u8]) -> bool,
    parse: fn(&mut dyn std::io::BufRead, &str, &mut dyn Sink) -> Result<(), ConvertError>,
    doc: &[u8],
) -> Collect {
    assert!(looks_like(doc));
    let out = run(parse, doc);
    assert!(out.bad.is_empty(), "{:?}", out.bad);
    out
}

/// Runs `parse` over `text` stopping at the first bad input.
pub fn run_strict(
    parse: fn(&mut dyn std::io::BufRead, &str, &mut dyn Sink) -> Result<(), ConvertError>,
    text: &[u8],
) -> (Collect, Result<(), ConvertError>) {
    let mut sink = Collect::default();
    let mut input = text;
    let result = parse(&mut input, "t.txt", &mut sink);
    (sink, result)
}
