//! Self-contained HTML reports: inline CSS and hand-written SVG, no script,
//! no font or file from anywhere else, so the page can be published as is.
//!
//! Elements a reader (or a test) can find:
//! - bars: `rect.bar[data-metric][data-trace][data-drive]` (`data-trace`
//!   is `suite` for the suite group);
//! - latency CDFs: `polyline.cdf[data-trace][data-drive][data-op]`, one
//!   point per CDF point of the result file;
//! - timelines: `polyline.timeline[data-trace][data-drive][data-metric]`
//!   (`bandwidth` or `latency`), one point per interval;
//! - consistency: `circle.round-point[data-phase][data-round]` and
//!   `rect.bar[data-metric=bandwidth][data-phase]`.
//! - where the predicted task time goes: `rect.seg[data-trace][data-drive]
//!   [data-part]`, one per part of a drive's stacked bar.
//!
//! Every polyline carries `data-points` (its point count).

mod axis;
mod breakdown;
mod chart;
mod compare;
mod consistency;
mod leaderboard;
mod page;

pub use compare::compare_report;
pub use consistency::consistency_report;
pub use leaderboard::leaderboard_report;
pub use page::{colour, esc};
