//! Results as plain-text tables, for the terminal.

pub mod breakdown;
mod compare;
mod consistency;
mod suite;
mod trace_info;
pub mod units;

pub use compare::format_tables as compare_tables;
pub use consistency::format_table as consistency_table;
pub use suite::format_table as suite_table;
pub use trace_info::format_trace_info;

use crate::schema::TargetInfo;
use std::borrow::Cow;

/// The target as the tables' first line names it, `PATH (KIND, SIZE GB,
/// MODEL)`, with the path and the model escaped (both come from the result
/// file); the size with `gb_decimals` decimals.
fn target_description(t: &TargetInfo, gb_decimals: usize) -> String {
    format!(
        "{} ({}, {:.gb_decimals$} GB{})",
        escape_control(&t.path),
        t.kind.label(),
        t.size_bytes as f64 / 1e9,
        t.model
            .as_deref()
            .map(|m| format!(", {}", escape_control(m)))
            .unwrap_or_default()
    )
}

/// `s` with every control character (ESC, BEL, CR, LF, ...; not tab) shown
/// as a `\u{..}` escape. Result files are input: a trace name, host name,
/// device model or path in one cannot move the cursor, clear the screen, set
/// the terminal's title or break a table's rows.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\t') {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}
