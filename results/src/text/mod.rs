//! Results as plain-text tables, for the terminal.

mod compare;
mod consistency;
mod suite;

pub use compare::format_tables as compare_tables;
pub use consistency::format_table as consistency_table;
pub use suite::format_table as suite_table;
