//! Turns block I/O logs into tracemark records: one module per input format,
//! format detection, the normaliser that pairs events into requests, and live
//! capture from the kernel's tracefs.

pub mod error;
pub mod event;
pub mod sink;

pub use error::ConvertError;
pub use event::{Action, BlockEvent, Location, Position, SourceIo};
pub use sink::Sink;
