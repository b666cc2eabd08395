//! The target as the tables name it.

use super::escape::escape_control;
use crate::schema::TargetInfo;

/// The target as the tables' first line names it, `PATH (KIND, SIZE GB,
/// MODEL)`, with the path and the model escaped (both come from the result
/// file); the size with `gb_decimals` decimals.
pub(super) fn target_description(t: &TargetInfo, gb_decimals: usize) -> String {
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
