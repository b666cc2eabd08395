//! Turns block I/O logs into tracemark records: one module per input format
//! under [`formats`] (with the table that detects and dispatches them), the
//! normaliser that pairs events into requests, and live capture from the
//! kernel's tracefs ([`capture`]).
//!
//! Contract of a format module: `looks_like(head)` says whether the first bytes
//! of an input are of that format (used by auto-detection), and `parse` reads
//! the input and reports each event, request, bad line or note to a [`Sink`] in
//! input order, stopping at the first `Err` the sink returns. A parser turns its
//! source into the shared model and nothing else: no filtering, pairing or
//! output.

pub mod error;
pub mod event;
pub mod sink;

pub mod convert;
pub mod decompress;
pub mod normalize;
pub mod split;
pub mod tmt_output;

pub mod capture;
pub mod formats;

pub use error::{BadInputKind, BadReason, ConvertError, UsageKind};
pub use event::{Action, BlockEvent, Location, Position, SourceIo};
pub use sink::{Collector, Sink};
