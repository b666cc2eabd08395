//! The input formats the recorder reads, one module per format.

pub mod blkparse;
pub mod blktrace;
pub mod fio;
pub mod msr;
pub mod spc;
pub mod tracefs;
pub mod wpa;
pub mod xperf;

/// Shared plumbing of the line-per-request text parsers.
mod line_input;
