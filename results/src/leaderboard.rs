//! A ranking of drives by suite score for one trace set: each drive's runs,
//! the mean score with its 95 % confidence interval, groups of drives whose
//! differences are not significant, and the mean score of every trace.

use crate::schema::{Interval, SuiteResult};
use crate::stats::{mean, mean_ci95, suite_score_ci};
use std::collections::BTreeMap;

/// One stored run offered to the ranking.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The run's id in the results database.
    pub id: i64,
    /// A label given to the run: the drive's name on the board when set.
    pub label: Option<String>,
    pub result: SuiteResult,
    /// Where the run's own report is (a relative link), if written.
    pub report_href: Option<String>,
}

/// A run as the board lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: i64,
    pub score: f64,
    pub started_unix_s: u64,
    pub report_href: Option<String>,
}

/// One drive's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Drive {
    /// From 1; drives in one group share the group's letter, not the rank.
    pub rank: usize,
    pub name: String,
    pub key: String,
    pub runs: Vec<Run>,
    /// Mean of the runs' suite scores.
    pub score: f64,
    /// 95 % interval of that mean: over the runs with two or more, else the
    /// single run's own (from its passes); the wider when both exist.
    pub ci: Option<Interval>,
    /// Index into [`Leaderboard::groups`].
    pub group: usize,
    /// Mean score per trace over the runs.
    pub traces: BTreeMap<String, f64>,
    /// Mean over the runs of the suite's predicted task time (the sum of
    /// its traces'), s; None when a run predicts none.
    pub task_s: Option<f64>,
}

/// The ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Leaderboard {
    pub suite_name: String,
    pub trace_set: String,
    pub mode: String,
    /// Every setting that changes the figures
    /// ([`crate::comparable::describe`]): runs differing in any are on
    /// another board.
    pub settings: String,
    /// Trace names in the suite's order.
    pub traces: Vec<String>,
    /// Best first.
    pub drives: Vec<Drive>,
    /// Group letters (`A`, `B`, ...), best group first: within a group no
    /// drive's score differs significantly from the group's first drive.
    pub groups: Vec<String>,
    /// Runs offered but not ranked, each with why.
    pub left_out: Vec<(i64, String)>,
}

fn half_width(ci: Option<Interval>) -> Option<f64> {
    ci.map(|c| c.half_width())
}

/// Whether two drives' scores differ by more than their combined
/// uncertainty (half-widths added in quadrature), as `compare` decides;
/// without an uncertainty for either, they count as different.
pub fn significantly_different(a: &Drive, b: &Drive) -> bool {
    match (half_width(a.ci), half_width(b.ci)) {
        (Some(ua), Some(ub)) => (a.score - b.score).abs() > (ua * ua + ub * ub).sqrt(),
        _ => true,
    }
}

/// Splits runs into boards of comparable runs ([`crate::comparable`]), in
/// first-seen order: runs on one board share the trace set and every
/// setting that changes the figures.
pub fn boards(entries: Vec<Entry>) -> Vec<Vec<Entry>> {
    let mut out: Vec<Vec<Entry>> = Vec::new();
    for e in entries {
        match out
            .iter_mut()
            .find(|b| crate::comparable::comparable(&b[0].result, &e.result))
        {
            Some(board) => board.push(e),
            None => out.push(vec![e]),
        }
    }
    out
}

/// Ranks `entries` (comparable runs: one of [`boards`]).
/// Runs marked not valid or interrupted, or without a suite score, are
/// left out with their reason.
pub fn rank(suite_name: &str, trace_set: &str, entries: Vec<Entry>) -> Leaderboard {
    let mut left_out = Vec::new();
    let mut traces: Vec<String> = Vec::new();
    let mut mode = String::new();
    let mut settings = String::new();
    // Drive key -> (name, entries), in first-seen order.
    let mut by_drive: Vec<(String, String, Vec<Entry>)> = Vec::new();
    for e in entries {
        let why = if !e.result.valid {
            Some(format!(
                "not valid: {}",
                crate::schema::sentences(&e.result.invalid_reasons)
            ))
        } else if e.result.interrupted {
            Some("interrupted".to_string())
        } else if e.result.suite.is_none() {
            Some("no suite score".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            left_out.push((e.id, why));
            continue;
        }
        if mode.is_empty() {
            mode = e.result.mode().to_string();
            settings = crate::comparable::describe(&e.result);
        }
        for t in &e.result.traces {
            if !traces.contains(&t.name) {
                traces.push(t.name.clone());
            }
        }
        // Runs share a line when labelled alike or of one drive by a strong
        // identity; a run without either stands alone, so two drives that
        // only look alike (model, size, path) are never pooled.
        let (key, name) = match (&e.label, e.result.target.pool_key()) {
            (Some(l), _) => (format!("label {l}"), l.clone()),
            (None, Some(k)) => (k, e.result.target.drive_name()),
            (None, None) => (format!("run {}", e.id), e.result.target.drive_name()),
        };
        match by_drive.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, list)) => list.push(e),
            None => by_drive.push((key, name, vec![e])),
        }
    }
    let mut drives: Vec<Drive> = by_drive
        .into_iter()
        .map(|(key, name, list)| drive_line(key, name, &list))
        .collect();
    drives.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.name.cmp(&b.name)));
    let mut groups: Vec<String> = Vec::new();
    let mut leader = 0;
    for i in 0..drives.len() {
        if i == 0 || significantly_different(&drives[leader], &drives[i]) {
            leader = i;
            groups.push(group_name(groups.len()));
        }
        drives[i].group = groups.len() - 1;
        drives[i].rank = i + 1;
    }
    Leaderboard {
        suite_name: suite_name.to_string(),
        trace_set: trace_set.to_string(),
        mode,
        settings,
        traces,
        drives,
        groups,
        left_out,
    }
}

/// `A`..`Z`, then `AA`, `AB`, ...
fn group_name(i: usize) -> String {
    let letter = |n: usize| char::from(b'A' + (n % 26) as u8);
    if i < 26 {
        letter(i).to_string()
    } else {
        format!("{}{}", letter(i / 26 - 1), letter(i))
    }
}

fn drive_line(key: String, name: String, list: &[Entry]) -> Drive {
    let scores: Vec<f64> = list
        .iter()
        .filter_map(|e| e.result.suite.map(|s| s.score))
        .collect();
    let score = mean(&scores);
    let over_runs = mean_ci95(&scores).map(|c| c.half_width());
    let over_passes = if list.len() == 1 {
        list[0].result.suite.and_then(|s| {
            s.score_ci
                .or_else(|| suite_score_ci(&list[0].result.traces, s.score))
                .map(|c| c.half_width())
        })
    } else {
        None
    };
    let half = match (over_runs, over_passes) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let mut per_trace: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for e in list {
        for t in &e.result.traces {
            per_trace.entry(t.name.clone()).or_default().push(t.score);
        }
    }
    let mut runs: Vec<Run> = list
        .iter()
        .map(|e| Run {
            id: e.id,
            score: e.result.suite.map_or(0.0, |s| s.score),
            started_unix_s: e.result.started_unix_s,
            report_href: e.report_href.clone(),
        })
        .collect();
    runs.sort_by_key(|r| r.id);
    let task_sums: Option<Vec<f64>> = list
        .iter()
        .map(|e| crate::compare::Metric::TaskTime.of_suite(&e.result))
        .collect();
    Drive {
        rank: 0,
        name,
        key,
        task_s: task_sums.filter(|v| !v.is_empty()).map(|v| mean(&v)),
        runs,
        score,
        ci: half.map(|h| Interval {
            low: score - h,
            high: score + h,
        }),
        group: 0,
        traces: per_trace.into_iter().map(|(k, v)| (k, mean(&v))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(score: f64, half: Option<f64>) -> Drive {
        Drive {
            rank: 0,
            name: String::new(),
            key: String::new(),
            runs: Vec::new(),
            score,
            ci: half.map(|h| Interval {
                low: score - h,
                high: score + h,
            }),
            group: 0,
            traces: BTreeMap::new(),
            task_s: None,
        }
    }

    #[test]
    fn differences_within_the_combined_interval_are_not_significant() {
        assert!(!significantly_different(
            &drive(100.0, Some(3.0)),
            &drive(96.0, Some(4.0))
        ));
        assert!(significantly_different(
            &drive(100.0, Some(3.0)),
            &drive(94.0, Some(4.0))
        ));
        assert!(significantly_different(
            &drive(100.0, None),
            &drive(99.9, Some(4.0))
        ));
    }

    #[test]
    fn group_names_go_past_z() {
        assert_eq!(group_name(0), "A");
        assert_eq!(group_name(25), "Z");
        assert_eq!(group_name(26), "AA");
        assert_eq!(group_name(27), "AB");
    }
}
