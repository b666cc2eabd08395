//! The results database: every `replay`, `suite` and `consistency` run kept
//! whole (the result file's JSON, as written) in one SQLite file, with the
//! columns that listing, filtering and ranking need beside it.
//!
//! - [`ResultsDb::open`] creates or opens the file, refuses a file that is
//!   not a database, another program's database or a corrupt one with one
//!   error each, and brings an older schema up to date ([`migrations`]).
//! - Writers use WAL and a busy timeout, so two runs finishing at once both
//!   land, and each run is one transaction, synced before it returns, so a
//!   writer killed mid-way loses nothing already stored.
//! - [`runs`]: storing a result (recognising one already stored by its
//!   content), listing, reading, labelling and removing runs.
//! - [`export`]: runs as CSV or Parquet for other tools.
//! - [`RUN_COLUMNS`]: a run's columns, the one table that reading, storing
//!   and both exports follow.

mod columns;
mod db;
mod error;
pub mod export;
pub mod migrations;
pub mod runs;

pub use columns::{Cell, ColumnType, RunColumn, RunKind, RunRow, RUN_COLUMNS};
pub use db::{default_path, ResultsDb, BUSY_TIMEOUT};
pub use error::DbError;
pub use migrations::APPLICATION_ID;
pub use runs::{Filter, Stored};
