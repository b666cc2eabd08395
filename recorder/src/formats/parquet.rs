//! Apache Parquet with the export schema, both ways: `tracemark export --to
//! parquet` writes it (so DuckDB, Spark or Polars can analyse a trace) and
//! `tracemark convert FILE.parquet` reads it back (an analyst filters or edits
//! in SQL, then replays). Columns, one row per record:
//!
//! | column | Parquet type | meaning |
//! |---|---|---|
//! | `time_ns` | required INT64 | issue time, ns since the trace start |
//! | `op` | required BYTE_ARRAY (STRING) | `read`, `write`, `flush`, `discard`, `write_zeroes` |
//! | `offset` | required INT64 | bytes |
//! | `length` | required INT64 | bytes |
//! | `latency_ns` | optional INT64 | original latency, null when unknown |
//! | `flags` | required BYTE_ARRAY (STRING) | `sync\|fua\|preflush\|meta` subset, `\|`-joined, empty for none |
//! | `device` | required BYTE_ARRAY (STRING) | `MAJ:MIN` of the record's device |
//!
//! The Arrow project's `parquet` crate is used through its column API only
//! (no arrow), behind the cargo feature `parquet`; without it the format is
//! still recognised (by its `PAR1` magic) and says how to turn it on. Memory
//! holds one row group ([`ROW_GROUP_ROWS`] records).

use crate::error::ConvertError;
use crate::formats::{FormatSpec, Reader};
#[cfg(not(feature = "parquet"))]
use crate::sink::Sink;
use std::path::{Path, PathBuf};

/// This format's entry in [`crate::formats::FORMATS`].
pub const FORMAT: FormatSpec = FormatSpec {
    name: "parquet",
    aliases: &[],
    about: "Apache Parquet with the export schema (time_ns,op,offset,length,latency_ns,flags,device)",
    looks_like,
    reader: Reader::FileSet {
        parse: parse_files,
        members: no_members,
    },
    example: "",
};

/// Records per row group written.
pub const ROW_GROUP_ROWS: usize = 256 * 1024;

/// Whether `head` starts with Parquet's magic.
pub fn looks_like(head: &[u8]) -> bool {
    head.starts_with(b"PAR1")
}

fn no_members(_: &Path) -> Result<Vec<PathBuf>, ConvertError> {
    Ok(Vec::new())
}

#[cfg(not(feature = "parquet"))]
const NOT_BUILT: &str = "this tracemark was built without Parquet support; build it with `cargo build --release --features parquet`";

/// Reads each Parquet file in turn into `sink`.
#[cfg(not(feature = "parquet"))]
pub fn parse_files(paths: &[&Path], _sink: &mut dyn Sink) -> Result<(), ConvertError> {
    let first = paths.first().map(|p| p.display().to_string());
    Err(ConvertError::usage(
        crate::error::UsageKind::NotBuilt,
        format!("{}: {NOT_BUILT}", first.unwrap_or_default()),
    ))
}

#[cfg(feature = "parquet")]
pub use with_parquet::{parse_files, write};

#[cfg(feature = "parquet")]
mod with_parquet {
    use super::ROW_GROUP_ROWS;
    use crate::error::{bad, BadInputKind, BadReason, ConvertError};
    use crate::event::{Location, SourceIo};
    use crate::sink::Sink;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::column::reader::get_typed_column_reader;
    use parquet::data_type::{ByteArray, ByteArrayType, DataType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use std::fs::File;
    use std::io::Write;
    use std::path::Path;
    use std::sync::Arc;
    use trace_format::{Bytes, DeviceEntry, DeviceId, Flags, IoRecord, Nanos, Op};

    const SCHEMA: &str = "message tracemark {
        required int64 time_ns;
        required binary op (STRING);
        required int64 offset;
        required int64 length;
        optional int64 latency_ns;
        required binary flags (STRING);
        required binary device (STRING);
    }";

    fn err(path: &Path, e: impl std::fmt::Display) -> ConvertError {
        ConvertError::Invalid {
            location: path.display().to_string(),
            reason: format!("Parquet: {e}"),
        }
    }

    /// One row group's columns, filled then written.
    #[derive(Default)]
    struct Columns {
        time: Vec<i64>,
        op: Vec<ByteArray>,
        offset: Vec<i64>,
        length: Vec<i64>,
        latency: Vec<i64>,
        latency_def: Vec<i16>,
        flags: Vec<ByteArray>,
        device: Vec<ByteArray>,
    }

    fn as_i64(v: u64, what: &str, path: &Path) -> Result<i64, ConvertError> {
        i64::try_from(v).map_err(|_| err(path, format!("{what} {v} does not fit INT64")))
    }

    impl Columns {
        fn push(
            &mut self,
            r: &IoRecord,
            devices: &[String],
            path: &Path,
        ) -> Result<(), ConvertError> {
            self.time.push(as_i64(r.time.0, "time", path)?);
            self.op.push(ByteArray::from(r.op.name()));
            self.offset.push(as_i64(r.offset.0, "offset", path)?);
            self.length.push(as_i64(r.len.0, "length", path)?);
            match r.latency {
                Some(l) => {
                    self.latency.push(as_i64(l.0, "latency", path)?);
                    self.latency_def.push(1);
                }
                None => self.latency_def.push(0),
            }
            self.flags.push(ByteArray::from(r.flags.names().as_str()));
            let device = devices.get(usize::from(r.device)).ok_or_else(|| {
                err(
                    path,
                    format!("record names device {} outside the table", r.device),
                )
            })?;
            self.device.push(ByteArray::from(device.as_str()));
            Ok(())
        }

        fn write<W: Write + Send>(
            &mut self,
            writer: &mut SerializedFileWriter<W>,
            path: &Path,
        ) -> Result<(), ConvertError> {
            let mut group = writer.next_row_group().map_err(|e| err(path, e))?;
            let mut index = 0;
            while let Some(mut column) = group.next_column().map_err(|e| err(path, e))? {
                let written = match index {
                    0 => column.typed::<Int64Type>().write_batch(&self.time, None, None),
                    1 => column.typed::<ByteArrayType>().write_batch(&self.op, None, None),
                    2 => column.typed::<Int64Type>().write_batch(&self.offset, None, None),
                    3 => column.typed::<Int64Type>().write_batch(&self.length, None, None),
                    4 => column.typed::<Int64Type>().write_batch(
                        &self.latency,
                        Some(&self.latency_def),
                        None,
                    ),
                    5 => column.typed::<ByteArrayType>().write_batch(&self.flags, None, None),
                    _ => column.typed::<ByteArrayType>().write_batch(&self.device, None, None),
                };
                written.map_err(|e| err(path, e))?;
                column.close().map_err(|e| err(path, e))?;
                index += 1;
            }
            group.close().map_err(|e| err(path, e))?;
            *self = Columns::default();
            Ok(())
        }
    }

    /// Writes `records` (of a trace with `devices`) as Parquet into `file`,
    /// named `path` in errors; returns the rows written.
    pub fn write(
        records: impl Iterator<Item = Result<IoRecord, trace_format::FormatError>>,
        devices: &[DeviceEntry],
        file: File,
        path: &Path,
    ) -> Result<u64, ConvertError> {
        let schema = Arc::new(parse_message_type(SCHEMA).map_err(|e| err(path, e))?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::ZSTD(ZstdLevel::default()))
                .build(),
        );
        let mut writer =
            SerializedFileWriter::new(file, schema, props).map_err(|e| err(path, e))?;
        let names: Vec<String> = devices.iter().map(|d| d.id.to_string()).collect();
        let mut columns = Columns::default();
        let mut rows = 0u64;
        for r in records {
            columns.push(&r?, &names, path)?;
            rows += 1;
            if columns.time.len() >= ROW_GROUP_ROWS {
                columns.write(&mut writer, path)?;
            }
        }
        if !columns.time.is_empty() {
            columns.write(&mut writer, path)?;
        }
        writer.close().map_err(|e| err(path, e))?;
        Ok(rows)
    }

    /// Reads all of column `index` of a row group of `rows` rows.
    fn read_column<T: DataType>(
        group: &dyn RowGroupReader,
        index: usize,
        rows: usize,
        path: &Path,
    ) -> Result<(Vec<T::T>, Vec<i16>), ConvertError> {
        let mut reader = get_typed_column_reader::<T>(
            group.get_column_reader(index).map_err(|e| err(path, e))?,
        );
        let mut values = Vec::with_capacity(rows);
        let mut defs = Vec::with_capacity(rows);
        let mut read = 0;
        while read < rows {
            let (records, _, _) = reader
                .read_records(rows - read, Some(&mut defs), None, &mut values)
                .map_err(|e| err(path, e))?;
            if records == 0 {
                return Err(err(path, format!("column {index} ends after {read} of {rows} rows")));
            }
            read += records;
        }
        Ok((values, defs))
    }

    fn parse_flags(s: &str) -> Result<Flags, BadReason> {
        let mut flags = Flags::NONE;
        for name in s.split('|').filter(|n| !n.is_empty()) {
            flags.insert(match name {
                "sync" => Flags::SYNC,
                "fua" => Flags::FUA,
                "preflush" => Flags::PREFLUSH,
                "meta" => Flags::META,
                other => return Err(bad(BadInputKind::Syntax, format!("unknown flag `{other}`"))),
            });
        }
        Ok(flags)
    }

    fn parse_file(path: &Path, sink: &mut dyn Sink) -> Result<u64, ConvertError> {
        let file = File::open(path).map_err(|source| ConvertError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let reader = SerializedFileReader::new(file).map_err(|e| err(path, e))?;
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        let index_of = |name: &str| {
            schema
                .columns()
                .iter()
                .position(|c| c.name() == name)
                .ok_or_else(|| err(path, format!("no column `{name}` (the export schema has time_ns,op,offset,length,latency_ns,flags,device)")))
        };
        let cols = [
            index_of("time_ns")?,
            index_of("op")?,
            index_of("offset")?,
            index_of("length")?,
            index_of("latency_ns")?,
            index_of("flags")?,
            index_of("device")?,
        ];
        let file_name = path.display().to_string();
        let mut row = 0u64;
        for g in 0..reader.num_row_groups() {
            let group = reader.get_row_group(g).map_err(|e| err(path, e))?;
            let rows = usize::try_from(group.metadata().num_rows()).unwrap_or(0);
            let (time, _) = read_column::<Int64Type>(group.as_ref(), cols[0], rows, path)?;
            let (op, _) = read_column::<ByteArrayType>(group.as_ref(), cols[1], rows, path)?;
            let (offset, _) = read_column::<Int64Type>(group.as_ref(), cols[2], rows, path)?;
            let (length, _) = read_column::<Int64Type>(group.as_ref(), cols[3], rows, path)?;
            let (latency, latency_def) =
                read_column::<Int64Type>(group.as_ref(), cols[4], rows, path)?;
            let (flags, _) = read_column::<ByteArrayType>(group.as_ref(), cols[5], rows, path)?;
            let (device, _) = read_column::<ByteArrayType>(group.as_ref(), cols[6], rows, path)?;
            let mut latencies = latency.into_iter();
            for i in 0..rows {
                let at = Location::record(&file_name, row, 0);
                let lat = if latency_def.get(i).copied().unwrap_or(1) > 0 {
                    latencies.next()
                } else {
                    None
                };
                let fields = (|| -> Result<SourceIo, BadReason> {
                    let get = |v: &[i64], what: &str| -> Result<u64, BadReason> {
                        let x = *v.get(i).ok_or_else(|| bad(BadInputKind::Missing, format!("missing {what}")))?;
                        u64::try_from(x).map_err(|_| bad(BadInputKind::Negative, format!("negative {what} {x}")))
                    };
                    let op_name = op.get(i).ok_or_else(|| bad(BadInputKind::Missing, "missing op"))?;
                    let op_name = op_name.as_utf8().map_err(|_| bad(BadInputKind::NotText, "op is not UTF-8"))?;
                    let op = Op::from_name(op_name).ok_or_else(|| bad(BadInputKind::UnknownOp, format!("unknown op `{op_name}`")))?;
                    let flags = flags.get(i).ok_or_else(|| bad(BadInputKind::Missing, "missing flags"))?;
                    let flags = parse_flags(flags.as_utf8().map_err(|_| bad(BadInputKind::NotText, "flags are not UTF-8"))?)?;
                    let device = device.get(i).ok_or_else(|| bad(BadInputKind::Missing, "missing device"))?;
                    let device: DeviceId = device
                        .as_utf8()
                        .map_err(|_| bad(BadInputKind::NotText, "device is not UTF-8"))?
                        .parse()
                        .map_err(|e: String| bad(BadInputKind::Syntax, e))?;
                    let latency = match lat {
                        Some(l) => Some(Nanos(u64::try_from(l).map_err(|_| bad(BadInputKind::Negative, format!("negative latency_ns {l}")))?)),
                        None => None,
                    };
                    Ok(SourceIo {
                        time: Nanos(get(&time, "time_ns")?),
                        device,
                        op,
                        flags,
                        offset: Bytes(get(&offset, "offset")?),
                        len: Bytes(get(&length, "length")?),
                        latency,
                        pid: None,
                    })
                })();
                match fields {
                    Ok(io) => sink.io(at, io)?,
                    Err(reason) => {
                        let content = format!("row {row}");
                        sink.bad_input(at, &content, &reason)?
                    }
                }
                row += 1;
            }
        }
        Ok(row)
    }

    /// Reads each Parquet file in turn into `sink`.
    pub fn parse_files(paths: &[&Path], sink: &mut dyn Sink) -> Result<(), ConvertError> {
        let mut rows = 0;
        for path in paths {
            rows += parse_file(path, sink)?;
        }
        if rows == 0 {
            let first = paths.first().map(|p| p.display().to_string());
            return Err(ConvertError::Invalid {
                location: first.unwrap_or_default(),
                reason: "the Parquet file has no rows".into(),
            });
        }
        Ok(())
    }
}
