//! The tracemark result file: the contract between the replayer, which
//! writes results, and everything that reads them (as `trace-format` is
//! between recorder and replayer).
//!
//! - [`schema`]: the types of a run of a suite ([`SuiteResult`]) with its
//!   traces, passes, target and host, and why figures cannot be trusted
//!   ([`schema::Problem`]), with their serde only (what they compute lives
//!   beside them); [`options`]: the replay options it records;
//!   [`consistency`]: the consistency test's result; [`identity`]: the
//!   drive, filesystem and trace set a result was measured on.
//! - [`parse`]: the one reader of result files (duplicate keys and newer
//!   schema versions refused, validity judged from the data).
//! - [`stats`]: the trace score, means, spreads.
//! - [`validity`]: whether a result's figures can be trusted, judged from
//!   its data whatever version wrote it.
//! - [`comparable`]: the one rule of which results may be ranked together.
//! - [`compare`]: several result files side by side; [`leaderboard`]: drives
//!   ranked by suite score over their runs.
//! - [`trace_info`]: what a trace holds (`tracemark info --json`).
//! - [`text`] (tables for the terminal) and [`html`] (self-contained pages
//!   with charts), for a suite run, a comparison and a consistency test.

pub mod breakdown;
pub mod comparable;
pub mod compare;
pub mod consistency;
mod derived;
pub mod fleet;
pub mod fleet_merge;
pub mod hdr;
pub mod html;
pub mod identity;
pub mod leaderboard;
pub mod options;
pub mod parse;
pub mod schema;
pub mod stats;
pub mod text;
pub mod trace_info;
pub mod validity;

pub use schema::{NoTaskTime, PassMetrics, SuiteResult, SuiteSummary, TraceResult};
