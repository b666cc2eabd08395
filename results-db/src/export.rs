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

use crate::columns::{RunRow, RUN_COLUMNS};

/// The columns of an export, in order: the names of [`RUN_COLUMNS`].
pub fn columns() -> Vec<&'static str> {
    RUN_COLUMNS.iter().map(|c| c.name).collect()
}

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

/// The runs as CSV: a header line of the columns' names, then a line per run.
pub fn csv_text(rows: &[RunRow]) -> String {
    let mut text = columns().join(",") + "\n";
    for r in rows {
        let line: Vec<String> = RUN_COLUMNS
            .iter()
            .map(|c| csv_field(&(c.value)(r).csv_text()))
            .collect();
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
pub use with_parquet::{parquet_bytes, schema as parquet_schema};

#[cfg(feature = "parquet")]
mod with_parquet {
    use super::ExportError;
    use crate::columns::{Cell, ColumnType, RunRow, RUN_COLUMNS};
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use std::sync::Arc;

    /// A column's Parquet type, as a message type's field.
    fn field(name: &str, kind: ColumnType) -> String {
        let ty = match kind {
            ColumnType::Int => "required int64",
            ColumnType::Time(_) => "required int64",
            ColumnType::Text => "required binary",
            ColumnType::OptionalText => "optional binary",
            ColumnType::OptionalNumber => "optional double",
            ColumnType::Bool => "required boolean",
        };
        let annotation = match kind {
            ColumnType::Time(_) => " (TIMESTAMP(MILLIS,true))",
            ColumnType::Text | ColumnType::OptionalText => " (STRING)",
            _ => "",
        };
        format!("{ty} {name}{annotation};")
    }

    /// [`RUN_COLUMNS`] with their Parquet types, as a message type.
    pub fn schema() -> String {
        let fields: Vec<String> = RUN_COLUMNS.iter().map(|c| field(c.name, c.kind)).collect();
        format!("message tracemark_runs {{ {} }}", fields.join(" "))
    }

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

    /// One column's data: the present values and, for an optional column,
    /// a definition level per row.
    enum Column {
        Int(Vec<i64>),
        Text(Vec<ByteArray>, Option<Vec<i16>>),
        Number(Vec<f64>, Vec<i16>),
        Bool(Vec<bool>),
    }

    /// One column's values over the rows, as its type writes them.
    fn column(
        rows: &[RunRow],
        name: &str,
        kind: ColumnType,
        value: for<'a> fn(&'a RunRow) -> Cell<'a>,
    ) -> Result<Column, ExportError> {
        let mismatch = || err(format!("column {name}: a value not of its type"));
        let mut column = match kind {
            ColumnType::Int | ColumnType::Time(_) => Column::Int(Vec::new()),
            ColumnType::Text => Column::Text(Vec::new(), None),
            ColumnType::OptionalText => Column::Text(Vec::new(), Some(Vec::new())),
            ColumnType::OptionalNumber => Column::Number(Vec::new(), Vec::new()),
            ColumnType::Bool => Column::Bool(Vec::new()),
        };
        for r in rows {
            match (&mut column, value(r), kind) {
                (Column::Int(v), Cell::Int(x), _) => v.push(x),
                (Column::Int(v), Cell::Time(s), ColumnType::Time(what)) => {
                    v.push(millis(r.id, what, s)?)
                }
                (Column::Text(v, None), Cell::Text(s), _) => v.push(ByteArray::from(s)),
                (Column::Text(v, Some(d)), Cell::OptionalText(s), _) => {
                    d.push(i16::from(s.is_some()));
                    v.extend(s.map(ByteArray::from));
                }
                (Column::Number(v, d), Cell::OptionalNumber(x), _) => {
                    d.push(i16::from(x.is_some()));
                    v.extend(x);
                }
                (Column::Bool(v), Cell::Bool(b), _) => v.push(b),
                _ => return Err(mismatch()),
            }
        }
        Ok(column)
    }

    pub fn parquet_bytes(rows: &[RunRow]) -> Result<Vec<u8>, ExportError> {
        let columns = RUN_COLUMNS
            .iter()
            .map(|c| column(rows, c.name, c.kind, c.value))
            .collect::<Result<Vec<_>, _>>()?;
        let schema = Arc::new(parse_message_type(&schema()).map_err(err)?);
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
                Some(Column::Text(v, d)) => {
                    column
                        .typed::<ByteArrayType>()
                        .write_batch(v, d.as_deref(), None)
                }
                Some(Column::Number(v, d)) => {
                    column.typed::<DoubleType>().write_batch(v, Some(d), None)
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
        assert_eq!(lines[0], columns().join(","));
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

    /// Every run column is a field of the Parquet file, in order, and each
    /// row holds the run's value of it.
    #[cfg(feature = "parquet")]
    #[test]
    fn every_run_column_reaches_the_parquet_file() {
        use crate::columns::{Cell, RUN_COLUMNS};
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::record::Field;
        let rows = [row(1, Some("lab"), Some(2.5)), row(2, None, None)];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.parquet");
        std::fs::write(&path, parquet_bytes(&rows).unwrap()).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let fields: Vec<String> = reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(fields, columns());
        let read: Vec<_> = reader.get_row_iter(None).unwrap().collect();
        assert_eq!(read.len(), rows.len());
        for (got, want) in read.into_iter().zip(&rows) {
            let got = got.unwrap();
            let cells: Vec<(&String, &Field)> = got.get_column_iter().collect();
            assert_eq!(cells.len(), RUN_COLUMNS.len());
            for ((name, field), c) in cells.into_iter().zip(RUN_COLUMNS) {
                assert_eq!(name, c.name);
                let same = match ((c.value)(want), field) {
                    (Cell::Int(v), Field::Long(x)) => v == *x,
                    (Cell::Time(s), Field::TimestampMillis(ms)) => (s * 1000) as i64 == *ms,
                    (Cell::Text(s), Field::Str(x)) => s == x,
                    (Cell::OptionalText(Some(s)), Field::Str(x)) => s == x,
                    (Cell::OptionalText(None), Field::Null) => true,
                    (Cell::OptionalNumber(Some(v)), Field::Double(x)) => v == *x,
                    (Cell::OptionalNumber(None), Field::Null) => true,
                    (Cell::Bool(b), Field::Bool(x)) => b == *x,
                    _ => false,
                };
                assert!(same, "{}: {field:?} for {:?}", c.name, (c.value)(want));
            }
        }
    }
}
