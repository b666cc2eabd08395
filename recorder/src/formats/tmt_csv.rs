//! The CSV of `tracemark export --to csv`: `time_ns,op,offset,length,latency_ns,flags`,
//! one line per record (the Parquet export has the same columns and `device`).

use std::io::Write;
use trace_format::IoRecord;

/// Writes the header line, then one line per record. The records' own error
/// type is kept, so a corrupt chunk reads as the reader reported it.
pub fn write<E: From<std::io::Error>>(
    records: impl Iterator<Item = Result<IoRecord, E>>,
    out: &mut impl Write,
) -> Result<(), E> {
    writeln!(out, "time_ns,op,offset,length,latency_ns,flags")?;
    for r in records {
        let r = r?;
        write!(
            out,
            "{},{},{},{},",
            r.time.0,
            r.op.name(),
            r.offset.0,
            r.len.0
        )?;
        if let Some(l) = r.latency {
            write!(out, "{}", l.0)?;
        }
        writeln!(out, ",{}", r.flags.names())?;
    }
    Ok(())
}
