//! Runs written out for other tools (`tracemark results export --to csv`
//! and `--to parquet`): one row per run, the run's columns as the database
//! keeps them (the result JSON itself is exported with `--to json`).
//!
//! | column | CSV | Parquet |
//! |---|---|---|
//! | `id` | integer | required INT64 |
//! | `kind` | `replay`, `suite` or `consistency` | required STRING |
//! | `started_unix_s`, `stored_unix_s` | seconds since 1970-01-01 UTC | required INT64 TIMESTAMP(MILLIS, UTC), the same instant |
//! | `label`, `drive_model`, `drive_key` | text, empty when none | optional STRING, null when none |
//! | `target_path`, `host` | text | required STRING |
//! | `suite_name`, `trace_set`, `mode` | text, empty when none | optional STRING |
//! | `score`, `score_low`, `score_high` | decimal, empty when none | optional DOUBLE |
//! | `valid` | `true` or `false` | required BOOLEAN |
//! | `tool_version`, `origin` | text | required STRING |
//!
//! Parquet is written through the `parquet` crate's column API (no arrow),
//! behind the cargo feature `parquet`; without it [`parquet_bytes`] says how
//! to build it in.

use crate::RunRow;

/// The columns of an export, in order.
pub const COLUMNS: [&str; 18] = [
    "id",
    "kind",
    "started_unix_s",
    "stored_unix_s",
    "label",
    "drive_model",
    "drive_key",
    "target_path",
    "host",
    "suite_name",
    "trace_set",
    "mode",
    "score",
    "score_low",
    "score_high",
    "valid",
    "tool_version",
    "origin",
];

/// Whether this build writes Parquet.
pub const PARQUET_BUILT: bool = cfg!(feature = "parquet");

/// What the Parquet export needs and did not get.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("this tracemark was built without Parquet support; build it with `cargo build --release --features parquet`")]
    ParquetNotBuilt,
    #[error("writing Parquet: {0}")]
    Parquet(String),
    #[error("run {id}: {what} {value} does not fit a Parquet INT64")]
    OutOfRange {
        id: i64,
        what: &'static str,
        value: u64,
    },
}

/// A CSV field, quoted when it must be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The runs as CSV: a header line of [`COLUMNS`], then a line per run.
pub fn csv_text(rows: &[RunRow]) -> String {
    let mut text = COLUMNS.join(",") + "\n";
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in rows {
        let fields = [
            r.id.to_string(),
            r.kind.name().to_string(),
            r.started_unix_s.to_string(),
            r.stored_unix_s.to_string(),
            r.label.clone().unwrap_or_default(),
            r.drive_model.clone().unwrap_or_default(),
            r.drive_key.clone().unwrap_or_default(),
            r.target_path.clone(),
            r.host.clone(),
            r.suite_name.clone().unwrap_or_default(),
            r.trace_set.clone().unwrap_or_default(),
            r.mode.clone().unwrap_or_default(),
            num(r.score),
            num(r.score_low),
            num(r.score_high),
            r.valid.to_string(),
            r.tool_version.clone(),
            r.origin.clone(),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        text.push_str(&line.join(","));
        text.push('\n');
    }
    text
}

/// The runs as one Parquet file (one row group: a database holds runs by
/// the thousand, not the million).
#[cfg(not(feature = "parquet"))]
pub fn parquet_bytes(_rows: &[RunRow]) -> Result<Vec<u8>, ExportError> {
    Err(ExportError::ParquetNotBuilt)
}

#[cfg(feature = "parquet")]
pub use with_parquet::parquet_bytes;

#[cfg(feature = "parquet")]
mod with_parquet {
    use super::ExportError;
    use crate::RunRow;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use std::sync::Arc;

    /// [`super::COLUMNS`] with their Parquet types.
    const SCHEMA: &str = "message tracemark_runs {
        required int64 id;
        required binary kind (STRING);
        required int64 started_unix_s (TIMESTAMP(MILLIS,true));
        required int64 stored_unix_s (TIMESTAMP(MILLIS,true));
        optional binary label (STRING);
        optional binary drive_model (STRING);
        optional binary drive_key (STRING);
        required binary target_path (STRING);
        required binary host (STRING);
        optional binary suite_name (STRING);
        optional binary trace_set (STRING);
        optional binary mode (STRING);
        optional double score;
        optional double score_low;
        optional double score_high;
        required boolean valid;
        required binary tool_version (STRING);
        required binary origin (STRING);
    }";

    fn err(e: impl std::fmt::Display) -> ExportError {
        ExportError::Parquet(e.to_string())
    }

    /// Seconds since the epoch as TIMESTAMP(MILLIS).
    fn millis(id: i64, what: &'static str, seconds: u64) -> Result<i64, ExportError> {
        seconds
            .checked_mul(1000)
            .and_then(|ms| i64::try_from(ms).ok())
            .ok_or(ExportError::OutOfRange {
                id,
                what,
                value: seconds,
            })
    }

    /// An optional column: the present values and a definition level per row.
    #[derive(Default)]
    struct Optional<T> {
        values: Vec<T>,
        defined: Vec<i16>,
    }

    impl<T> Optional<T> {
        fn push(&mut self, v: Option<T>) {
            self.defined.push(i16::from(v.is_some()));
            self.values.extend(v);
        }
    }

    fn text(s: &str) -> ByteArray {
        ByteArray::from(s)
    }

    fn optional_text(
        rows: &[RunRow],
        get: impl Fn(&RunRow) -> Option<&str>,
    ) -> Optional<ByteArray> {
        let mut column = Optional::default();
        for r in rows {
            column.push(get(r).map(text));
        }
        column
    }

    fn optional_number(rows: &[RunRow], get: impl Fn(&RunRow) -> Option<f64>) -> Optional<f64> {
        let mut column = Optional::default();
        for r in rows {
            column.push(get(r));
        }
        column
    }

    /// One column's data, in the schema's order.
    enum Column {
        Int(Vec<i64>),
        Text(Vec<ByteArray>),
        OptionalText(Optional<ByteArray>),
        OptionalNumber(Optional<f64>),
        Bool(Vec<bool>),
    }

    pub fn parquet_bytes(rows: &[RunRow]) -> Result<Vec<u8>, ExportError> {
        let mut started = Vec::with_capacity(rows.len());
        let mut stored = Vec::with_capacity(rows.len());
        for r in rows {
            started.push(millis(r.id, "start time", r.started_unix_s)?);
            stored.push(millis(r.id, "storage time", r.stored_unix_s)?);
        }
        let required_text = |get: fn(&RunRow) -> &str| rows.iter().map(|r| text(get(r))).collect();
        let columns = [
            Column::Int(rows.iter().map(|r| r.id).collect()),
            Column::Text(required_text(|r| r.kind.name())),
            Column::Int(started),
            Column::Int(stored),
            Column::OptionalText(optional_text(rows, |r| r.label.as_deref())),
            Column::OptionalText(optional_text(rows, |r| r.drive_model.as_deref())),
            Column::OptionalText(optional_text(rows, |r| r.drive_key.as_deref())),
            Column::Text(required_text(|r| &r.target_path)),
            Column::Text(required_text(|r| &r.host)),
            Column::OptionalText(optional_text(rows, |r| r.suite_name.as_deref())),
            Column::OptionalText(optional_text(rows, |r| r.trace_set.as_deref())),
            Column::OptionalText(optional_text(rows, |r| r.mode.as_deref())),
            Column::OptionalNumber(optional_number(rows, |r| r.score)),
            Column::OptionalNumber(optional_number(rows, |r| r.score_low)),
            Column::OptionalNumber(optional_number(rows, |r| r.score_high)),
            Column::Bool(rows.iter().map(|r| r.valid).collect()),
            Column::Text(required_text(|r| &r.tool_version)),
            Column::Text(required_text(|r| &r.origin)),
        ];
        debug_assert_eq!(columns.len(), super::COLUMNS.len());

        let schema = Arc::new(parse_message_type(SCHEMA).map_err(err)?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::ZSTD(ZstdLevel::default()))
                .build(),
        );
        let mut writer = SerializedFileWriter::new(Vec::new(), schema, props).map_err(err)?;
        let mut group = writer.next_row_group().map_err(err)?;
        let mut data = columns.iter();
        while let Some(mut column) = group.next_column().map_err(err)? {
            let written = match data.next() {
                Some(Column::Int(v)) => column.typed::<Int64Type>().write_batch(v, None, None),
                Some(Column::Text(v)) => column.typed::<ByteArrayType>().write_batch(v, None, None),
                Some(Column::OptionalText(o)) => {
                    column
                        .typed::<ByteArrayType>()
                        .write_batch(&o.values, Some(&o.defined), None)
                }
                Some(Column::OptionalNumber(o)) => {
                    column
                        .typed::<DoubleType>()
                        .write_batch(&o.values, Some(&o.defined), None)
                }
                Some(Column::Bool(v)) => column.typed::<BoolType>().write_batch(v, None, None),
                None => return Err(err("the schema has more columns than the export")),
            };
            written.map_err(err)?;
            column.close().map_err(err)?;
        }
        group.close().map_err(err)?;
        writer.into_inner().map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunKind;

    fn row(id: i64, label: Option<&str>, score: Option<f64>) -> RunRow {
        RunRow {
            id,
            kind: RunKind::Suite,
            stored_unix_s: 1_764_700_000,
            started_unix_s: 1_764_600_000,
            label: label.map(str::to_string),
            target_path: "/dev/zram1".into(),
            drive_model: None,
            drive_key: Some("device /dev/zram1".into()),
            host: "bench".into(),
            mode: Some("realtime".into()),
            suite_name: Some("quick".into()),
            trace_set: Some("ab12".into()),
            score,
            score_low: None,
            score_high: None,
            valid: true,
            tool_version: "0.1.0".into(),
            origin: "run".into(),
            result_json: None,
        }
    }

    #[test]
    fn csv_has_a_header_and_a_quoted_line_per_run() {
        let text = csv_text(&[row(1, Some("a, \"b\""), Some(2431.5)), row(2, None, None)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], COLUMNS.join(","));
        assert_eq!(
            lines[1],
            "1,suite,1764600000,1764700000,\"a, \"\"b\"\"\",,device /dev/zram1,/dev/zram1,bench,quick,ab12,realtime,2431.5,,,true,0.1.0,run"
        );
        assert!(lines[2].starts_with("2,suite,") && lines[2].contains(",realtime,,,,true,"));
    }

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn parquet_without_the_feature_says_how_to_build_it() {
        let e = parquet_bytes(&[row(1, None, None)]).unwrap_err();
        assert!(e.to_string().contains("--features parquet"), "{e}");
    }

    #[cfg(feature = "parquet")]
    #[test]
    fn parquet_starts_and_ends_with_its_magic() {
        let bytes = parquet_bytes(&[row(1, None, Some(1.0)), row(2, Some("x"), None)]).unwrap();
        assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    }
}
