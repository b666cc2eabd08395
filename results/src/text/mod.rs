//! Results as plain-text tables, for the terminal.

pub mod breakdown;
mod compare;
mod consistency;
mod escape;
mod suite;
mod target;
mod trace_info;
pub mod units;

pub use compare::format_tables as compare_tables;
pub use consistency::format_table as consistency_table;
pub use escape::escape_control;
pub use suite::format_table as suite_table;
pub use trace_info::format_trace_info;
