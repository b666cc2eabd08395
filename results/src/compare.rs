//! Side by side: several result files (one per drive or host), one table per
//! metric with ratios to the first, and everything that makes two results not
//! comparable (mode, options that change the figures, other versions of a
//! trace, interrupted runs) named instead of silently mixed.

use crate::schema::{SuiteResult, TraceResult};
use crate::stats::{geometric_mean, mean_ci95, suite_score_ci, trace_score_ci};
use std::path::{Path, PathBuf};

/// Why result files could not be compared; each case its own variant, so a
/// caller can tell them apart without reading the message. More may come.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: line {line}, column {column}: not a tracemark result file: {reason}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        reason: String,
    },
    /// Read, but refused by [`crate::parse`] (a key given twice, a newer
    /// schema version, a consistency test).
    #[error(transparent)]
    Refused(crate::parse::ParseError),
    #[error("no result files to compare")]
    NoResults,
    /// More `--label`s than result files.
    #[error("{labels} labels for {results} result files")]
    TooManyLabels { labels: usize, results: usize },
}

/// Reads one result file (`tracemark replay/suite --json`) with
/// [`crate::parse`], judged from its data whatever version wrote it.
pub fn load_result(path: &Path) -> Result<SuiteResult, CompareError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompareError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    crate::parse::suite(&text, &path.display().to_string()).map_err(|e| match e {
        crate::parse::ParseError::Syntax {
            line,
            column,
            reason,
            ..
        } => CompareError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            reason,
        },
        other => CompareError::Refused(other),
    })
}

/// One result in the comparison: a column.
#[derive(Debug, Clone)]
pub struct Drive {
    pub label: String,
    pub file: PathBuf,
    pub result: SuiteResult,
}

/// The figures compared, one table each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Score,
    Bandwidth,
    AccessTime,
    P99Read,
    P99Write,
    Playback,
    /// The predicted task time (s): shown only where a result has one.
    TaskTime,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::Score,
        Metric::Bandwidth,
        Metric::AccessTime,
        Metric::P99Read,
        Metric::P99Write,
        Metric::Playback,
        Metric::TaskTime,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Metric::Score => "score",
            Metric::Bandwidth => "bandwidth MB/s",
            Metric::AccessTime => "access time µs",
            Metric::P99Read => "p99 read latency µs",
            Metric::P99Write => "p99 write latency µs",
            Metric::Playback => "playback time s",
            Metric::TaskTime => "predicted task time s",
        }
    }

    /// Stable identifier (HTML ids, data attributes).
    pub fn key(self) -> &'static str {
        match self {
            Metric::Score => "score",
            Metric::Bandwidth => "bandwidth",
            Metric::AccessTime => "access_time",
            Metric::P99Read => "p99_read",
            Metric::P99Write => "p99_write",
            Metric::Playback => "playback",
            Metric::TaskTime => "task_time",
        }
    }

    pub fn lower_is_better(self) -> bool {
        !matches!(self, Metric::Score | Metric::Bandwidth)
    }

    pub fn precision(self) -> usize {
        match self {
            Metric::Score | Metric::AccessTime | Metric::P99Read | Metric::P99Write => 1,
            Metric::Bandwidth => 2,
            Metric::Playback | Metric::TaskTime => 3,
        }
    }

    /// The metric for one trace (None when the result has none, e.g. no writes).
    pub fn of_trace(self, t: &TraceResult) -> Option<f64> {
        match self {
            Metric::Score => Some(t.score),
            Metric::Bandwidth => Some(t.bandwidth_mb_s),
            Metric::AccessTime => Some(t.access_time_us),
            Metric::P99Read => t.latency_us.get("read").map(|p| p.p99),
            Metric::P99Write => t.latency_us.get("write").map(|p| p.p99),
            Metric::Playback => Some(t.playback_s),
            Metric::TaskTime => t.task.as_ref().map(|k| k.predicted_s),
        }
    }

    /// The suite row: the result's own suite figures for score, bandwidth and
    /// access time; the geometric mean of the traces' p99s; the total
    /// playback time.
    pub fn of_suite(self, r: &SuiteResult) -> Option<f64> {
        match self {
            Metric::Score => r.suite.map(|s| s.score),
            Metric::Bandwidth => r.suite.map(|s| s.bandwidth_mb_s),
            Metric::AccessTime => r.suite.map(|s| s.access_time_us),
            Metric::P99Read | Metric::P99Write => {
                let v: Vec<f64> = r.traces.iter().filter_map(|t| self.of_trace(t)).collect();
                geometric_mean(&v)
            }
            Metric::Playback => {
                if r.traces.is_empty() {
                    None
                } else {
                    Some(r.traces.iter().map(|t| t.playback_s).sum())
                }
            }
            // The sum of the traces' task times: the suite's task time.
            Metric::TaskTime => {
                let times: Vec<f64> = r.traces.iter().filter_map(|t| self.of_trace(t)).collect();
                (!times.is_empty()).then(|| times.iter().sum())
            }
        }
    }
}

/// Something that makes a column not comparable with the first one.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// Column index (0 is the reference).
    pub drive: usize,
    /// Trace name when it concerns one trace only.
    pub trace: Option<String>,
    pub message: String,
}

/// Several results, aligned by trace name.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub drives: Vec<Drive>,
    /// Every trace name of every result, in first-seen order.
    pub traces: Vec<String>,
    pub mismatches: Vec<Mismatch>,
    /// Give ratios for results marked not valid too (`--include-invalid`).
    pub include_invalid: bool,
    /// Pool the runs of one drive into each one's uncertainty (off with
    /// `--no-pool`); only results that are one drive by a strong identity
    /// ([`crate::identity::same_drive`]) are pooled.
    pub pool: bool,
}

/// Columns whose runs are pooled: one drive by a strong identity.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// Column indices, in order.
    pub drives: Vec<usize>,
    /// Why they are one drive.
    pub by: crate::identity::StrongId,
}

impl Comparison {
    /// Aligns the results; `labels` (possibly fewer than results) override
    /// the default column names (target model and path).
    pub fn new(
        results: Vec<(PathBuf, SuiteResult)>,
        labels: &[String],
    ) -> Result<Comparison, CompareError> {
        if results.is_empty() {
            return Err(CompareError::NoResults);
        }
        if labels.len() > results.len() {
            return Err(CompareError::TooManyLabels {
                labels: labels.len(),
                results: results.len(),
            });
        }
        let mut drives: Vec<Drive> = results
            .into_iter()
            .enumerate()
            .map(|(i, (file, mut result))| {
                // Judged here too: a result may come from elsewhere than a
                // file (and judging twice changes nothing).
                crate::validity::apply(&mut result);
                Drive {
                    label: labels
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| default_label(&result)),
                    file,
                    result,
                }
            })
            .collect();
        disambiguate(&mut drives);
        // A result may hold two traces of the same name: the second is
        // "name #2", and so on, in every result alike.
        for d in &mut drives {
            let mut seen: Vec<String> = Vec::new();
            for t in &mut d.result.traces {
                let n = seen.iter().filter(|s| **s == t.name).count();
                seen.push(t.name.clone());
                if n > 0 {
                    t.name = format!("{} #{}", t.name, n + 1);
                }
            }
        }
        let mut traces: Vec<String> = Vec::new();
        for d in &drives {
            for t in &d.result.traces {
                if !traces.contains(&t.name) {
                    traces.push(t.name.clone());
                }
            }
        }
        let mut c = Comparison {
            drives,
            traces,
            mismatches: Vec::new(),
            include_invalid: false,
            pool: true,
        };
        c.mismatches = c.find_mismatches();
        Ok(c)
    }

    pub fn trace(&self, drive: usize, name: &str) -> Option<&TraceResult> {
        self.drives
            .get(drive)?
            .result
            .traces
            .iter()
            .find(|t| t.name == name)
    }

    /// Gives ratios for results marked not valid too (`--include-invalid`).
    pub fn including_invalid(mut self) -> Comparison {
        self.include_invalid = true;
        self.mismatches = self.find_mismatches();
        self
    }

    /// Keeps every column's uncertainty its own (`--no-pool`).
    pub fn without_pooling(mut self) -> Comparison {
        self.pool = false;
        self
    }

    /// The columns pooled with column `drive` (itself included), when any
    /// other is.
    fn pooled_with(&self, drive: usize) -> Vec<usize> {
        let Some(d) = self.drives.get(drive) else {
            return Vec::new();
        };
        if !self.pool {
            return vec![drive];
        }
        (0..self.drives.len())
            .filter(|&j| {
                j == drive
                    || crate::identity::same_drive(&d.result.target, &self.drives[j].result.target)
                        .is_some()
            })
            .collect()
    }

    /// Every group of two or more columns whose runs are pooled, and why.
    pub fn pools(&self) -> Vec<Pool> {
        let mut out: Vec<Pool> = Vec::new();
        for i in 0..self.drives.len() {
            let with = self.pooled_with(i);
            if with.len() < 2 || out.iter().any(|p| p.drives.contains(&i)) {
                continue;
            }
            let Some(by) = self.drives[i].result.target.strong_id() else {
                continue;
            };
            out.push(Pool { drives: with, by });
        }
        out
    }

    /// One line per [`Comparison::pools`] group: which columns were pooled
    /// and why (empty when none were).
    pub fn pool_notes(&self) -> Vec<String> {
        self.pools()
            .iter()
            .map(|p| {
                let names: Vec<String> = p
                    .drives
                    .iter()
                    .map(|&i| format!("{} ({})", column_name(i), self.drives[i].label))
                    .collect();
                format!(
                    "{}: one drive by {}; their runs' spread is in each one's interval",
                    names.join(", "),
                    p.by
                )
            })
            .collect()
    }

    /// The reference value for a ratio in column `drive`: none when either
    /// result is marked not valid (unless `include_invalid`), so a run whose
    /// I/Os failed is never shown as faster or slower than a real one.
    pub fn ratio_reference(&self, drive: usize, reference: Option<f64>) -> Option<f64> {
        let valid = |i: usize| self.drives.get(i).is_some_and(|d| d.result.valid);
        (self.include_invalid || (valid(0) && valid(drive)))
            .then_some(reference)
            .flatten()
    }

    /// True when the column's result is not valid ([`crate::validity`]):
    /// every cell of it carries [`INVALID`].
    pub fn drive_invalid(&self, drive: usize) -> bool {
        self.drives.get(drive).is_some_and(|d| !d.result.valid)
    }

    /// A cell: the value, its ratio to the reference where both columns
    /// are valid (or `--include-invalid`), and [`INVALID`] on a column that
    /// is not valid, so its figure is never read as a plain win or loss.
    pub fn cell(
        &self,
        drive: usize,
        value: Option<f64>,
        reference: Option<f64>,
        precision: usize,
    ) -> String {
        let text = cell(value, self.ratio_reference(drive, reference), precision);
        if value.is_some() && self.drive_invalid(drive) {
            format!("{text} {INVALID}")
        } else {
            text
        }
    }

    /// True when the column differs from the first in mode or options.
    pub fn drive_flagged(&self, drive: usize) -> bool {
        self.mismatches
            .iter()
            .any(|m| m.drive == drive && m.trace.is_none())
    }

    /// True when this column's version of the trace differs from the first's.
    pub fn trace_flagged(&self, drive: usize, trace: &str) -> bool {
        self.mismatches
            .iter()
            .any(|m| m.drive == drive && m.trace.as_deref() == Some(trace))
    }

    /// A column's score for a trace (`None`: the suite).
    fn score_of(&self, drive: usize, trace: Option<&str>) -> Option<f64> {
        match trace {
            Some(name) => self.trace(drive, name).map(|t| t.score),
            None => self.drives.get(drive)?.result.suite.map(|s| s.score),
        }
    }

    /// Half-width of the 95 % confidence interval of a column's score for a
    /// trace (`None`: the suite): from its passes, or from the runs when
    /// other columns are results of the same drive by a strong identity
    /// ([`Comparison::pools`]; never by model, path or host alone),
    /// whichever is wider.
    pub fn score_uncertainty(&self, drive: usize, trace: Option<&str>) -> Option<f64> {
        let r = &self.drives.get(drive)?.result;
        let passes = match trace {
            Some(name) => trace_score_ci(self.trace(drive, name)?).map(|ci| ci.half_width()),
            None => {
                let s = r.suite?;
                s.score_ci
                    .or_else(|| suite_score_ci(&r.traces, s.score))
                    .map(|ci| ci.half_width())
            }
        };
        let pooled = self.pooled_with(drive);
        let runs: Vec<f64> = if pooled.len() < 2 {
            Vec::new()
        } else {
            pooled
                .iter()
                .filter_map(|&j| self.score_of(j, trace))
                .collect()
        };
        let runs = mean_ci95(&runs).map(|ci| ci.half_width());
        match (passes, runs) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether any column has a predicted task time (the task time table
    /// and chart are shown only then).
    pub fn has_task_time(&self) -> bool {
        self.drives
            .iter()
            .any(|d| d.result.traces.iter().any(|t| t.task.is_some()))
    }

    /// Whether a column's figure differs from the first column's beyond
    /// their combined uncertainty: the score ([`Comparison::score_significant`])
    /// and the task time (from its passes' predictions); None for other
    /// metrics, the first column, or without an uncertainty.
    pub fn significant(&self, metric: Metric, drive: usize, trace: Option<&str>) -> Option<bool> {
        match metric {
            Metric::Score => self.score_significant(drive, trace),
            Metric::TaskTime => self.task_significant(drive, trace?),
            _ => None,
        }
    }

    /// A trace's task time against the first column's, each with the 95 %
    /// interval of its passes' predictions.
    fn task_significant(&self, drive: usize, trace: &str) -> Option<bool> {
        if drive == 0
            || (!self.include_invalid && (self.drive_invalid(0) || self.drive_invalid(drive)))
        {
            return None;
        }
        let of = |i: usize| -> Option<(f64, f64)> {
            let t = self.trace(i, trace)?;
            let passes: Vec<f64> = t
                .passes
                .iter()
                .filter_map(|p| p.task.as_ref().map(|k| k.predicted_s))
                .collect();
            Some((
                t.task.as_ref()?.predicted_s,
                mean_ci95(&passes)?.half_width(),
            ))
        };
        let ((a, ua), (b, ub)) = (of(0)?, of(drive)?);
        Some((b - a).abs() > (ua * ua + ub * ub).sqrt())
    }

    /// Whether a column's score differs from the first column's by more
    /// than their combined uncertainty (the half-widths added in
    /// quadrature); None for the first column or without an uncertainty.
    pub fn score_significant(&self, drive: usize, trace: Option<&str>) -> Option<bool> {
        if drive == 0 {
            return None;
        }
        // No verdict on a difference to figures that cannot be trusted.
        if !self.include_invalid && (self.drive_invalid(0) || self.drive_invalid(drive)) {
            return None;
        }
        let (a, b) = (self.score_of(0, trace)?, self.score_of(drive, trace)?);
        let (ua, ub) = (
            self.score_uncertainty(0, trace)?,
            self.score_uncertainty(drive, trace)?,
        );
        Some((b - a).abs() > (ua * ua + ub * ub).sqrt())
    }

    fn find_mismatches(&self) -> Vec<Mismatch> {
        let mut out = Vec::new();
        let Some(first) = self.drives.first() else {
            return out;
        };
        for (i, d) in self.drives.iter().enumerate() {
            if !d.result.valid {
                out.push(Mismatch {
                    drive: i,
                    trace: None,
                    message: format!(
                        "{} is not a valid result ({}); {}",
                        d.label,
                        crate::schema::sentences(&d.result.invalid_reasons),
                        if self.include_invalid {
                            "its ratios are shown because of --include-invalid"
                        } else {
                            "no ratios are given against it (--include-invalid shows them)"
                        }
                    ),
                });
            }
            for t in &d.result.traces {
                let cautions = [
                    crate::validity::cpu_wait_caution(t),
                    crate::validity::unwritten_reads_caution(t),
                    crate::validity::calibration_caution(&d.result, t),
                ];
                for why in cautions.into_iter().flatten() {
                    out.push(Mismatch {
                        drive: i,
                        trace: None,
                        message: format!("{}: trace '{}': {why}", d.label, t.name),
                    });
                }
            }
            if d.result.interrupted {
                out.push(Mismatch {
                    drive: i,
                    trace: None,
                    message: format!("{} was interrupted (partial result)", d.label),
                });
            }
            if i == 0 {
                continue;
            }
            for (what, a, b) in crate::comparable::differences(&first.result, &d.result) {
                out.push(Mismatch {
                    drive: i,
                    trace: None,
                    message: format!(
                        "{what} differs: {} has {b}, {} has {a}",
                        d.label, first.label
                    ),
                });
            }
            for t in &d.result.traces {
                let Some(reference) = first.result.traces.iter().find(|r| r.name == t.name) else {
                    continue;
                };
                if let Some(why) = version_difference(reference, t) {
                    out.push(Mismatch {
                        drive: i,
                        trace: Some(t.name.clone()),
                        message: format!(
                            "trace '{}' in {} is not the one in {}: {why}",
                            t.name, d.label, first.label
                        ),
                    });
                }
            }
            let names = |r: &SuiteResult| -> Vec<String> {
                let mut v: Vec<String> = r.traces.iter().map(|t| t.name.clone()).collect();
                v.sort();
                v
            };
            if names(&first.result) != names(&d.result) {
                out.push(Mismatch {
                    drive: i,
                    trace: None,
                    message: format!(
                        "{} and {} replayed different sets of traces; their suite rows are not comparable",
                        d.label, first.label
                    ),
                });
            }
        }
        out
    }
}

/// "model (path)", or the path when the model is unknown.
fn default_label(r: &SuiteResult) -> String {
    match r.target.model.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => format!("{m} ({})", r.target.path),
        _ => r.target.path.clone(),
    }
}

/// Two columns with the same name get the result file's name added.
fn disambiguate(drives: &mut [Drive]) {
    let labels: Vec<String> = drives.iter().map(|d| d.label.clone()).collect();
    for (i, d) in drives.iter_mut().enumerate() {
        let same = labels.iter().filter(|l| **l == labels[i]).count();
        if same > 1 {
            let file = d
                .file
                .file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_else(|| format!("#{}", i + 1));
            d.label = format!("{} [{file}]", d.label);
        }
    }
}

/// Why two results of the same trace name are of different traces: by the
/// recorded identity when both have one, else by what was replayed.
fn version_difference(a: &TraceResult, b: &TraceResult) -> Option<String> {
    match (&a.trace_id, &b.trace_id) {
        (Some(x), Some(y)) => {
            if x == y {
                None
            } else if x.records != y.records {
                Some(format!("{} records vs {}", y.records, x.records))
            } else if x.read_bytes != y.read_bytes || x.write_bytes != y.write_bytes {
                Some(format!(
                    "{}/{} bytes read/written vs {}/{}",
                    y.read_bytes, y.write_bytes, x.read_bytes, x.write_bytes
                ))
            } else {
                Some(format!("checksum {} vs {}", y.checksum, x.checksum))
            }
        }
        _ => {
            let key = |t: &TraceResult| (t.ios, t.read_bytes, t.write_bytes);
            if key(a) == key(b) {
                None
            } else {
                Some(format!(
                    "{} I/Os, {}/{} bytes read/written vs {}, {}/{}",
                    b.ios, b.read_bytes, b.write_bytes, a.ios, a.read_bytes, a.write_bytes
                ))
            }
        }
    }
}

/// `value (ratio)` with the ratio to the reference, or `-` when missing.
pub fn cell(value: Option<f64>, reference: Option<f64>, precision: usize) -> String {
    match value {
        None => "-".to_string(),
        Some(v) => match reference {
            Some(r) if r > 0.0 && r.is_finite() => format!("{v:.precision$} ({:.2}x)", v / r),
            _ => format!("{v:.precision$}"),
        },
    }
}

/// What every cell of a column whose result is not valid says.
pub const INVALID: &str = "INVALID";

/// What a score cell says when the difference to the first column is
/// within the uncertainty.
pub const NOT_SIGNIFICANT: &str = "n.s.";

/// A, B, C, … AA, AB …
pub fn column_name(i: usize) -> String {
    let mut n = i;
    let mut s = Vec::new();
    loop {
        s.push(b'A' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s.reverse();
    String::from_utf8_lossy(&s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_show_ratio_to_the_reference_or_a_dash() {
        assert_eq!(cell(Some(512.3), Some(512.3), 1), "512.3 (1.00x)");
        assert_eq!(cell(Some(250.0), Some(1000.0), 1), "250.0 (0.25x)");
        assert_eq!(cell(None, Some(1.0), 1), "-");
        assert_eq!(cell(Some(3.0), None, 2), "3.00");
    }

    #[test]
    fn errors_say_which_case_and_keep_their_messages() {
        let e = Comparison::new(Vec::new(), &[]).err();
        assert!(matches!(e, Some(CompareError::NoResults)), "{e:?}");
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("no result files to compare")
        );
        let e = CompareError::TooManyLabels {
            labels: 2,
            results: 1,
        };
        assert_eq!(e.to_string(), "2 labels for 1 result files");

        let dir = std::env::temp_dir().join(format!("compare-errors-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = load_result(&dir.join("none.json")).err();
        assert!(
            matches!(missing, Some(CompareError::Read { .. })),
            "{missing:?}"
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\n  \"nope\"").unwrap();
        let parse = load_result(&bad).err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            matches!(parse, Some(CompareError::Parse { line: 2, .. })),
            "{parse:?}"
        );
    }

    #[test]
    fn column_names_go_past_z() {
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(27), "AB");
    }
}
