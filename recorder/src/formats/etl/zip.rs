//! `.etl.zip`: an ETW log kept in a zip archive (as PerfView and many users
//! keep them), read in a stream: the local file headers are walked from the
//! start, other entries (PerfView's `LogFile.txt`) are stepped over, and the
//! first entry named `*.etl` is inflated as it is read, its CRC-32 checked
//! at its end. Memory does not depend on the archive's size.

use flate2::bufread::DeflateDecoder;
use flate2::Crc;
use std::io::{self, BufRead, Read};

const LOCAL_HEADER: [u8; 4] = *b"PK\x03\x04";
const DATA_DESCRIPTOR: [u8; 4] = *b"PK\x07\x08";
/// General purpose flag: sizes and CRC follow the data.
const FLAG_DESCRIPTOR: u16 = 0x0008;
const STORED: u16 = 0;
const DEFLATED: u16 = 8;

/// Whether `head` starts a zip archive.
pub fn is_zip(head: &[u8]) -> bool {
    head.starts_with(&LOCAL_HEADER)
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// One local file header.
struct Entry {
    flags: u16,
    method: u16,
    crc: u32,
    compressed: u64,
    name: String,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads the next local file header; `None` at the central directory.
fn next_entry(input: &mut dyn BufRead, offset: u64) -> io::Result<Option<Entry>> {
    let mut fixed = [0u8; 30];
    let mut got = 0;
    while got < 4 {
        let n = input.read(&mut fixed[got..4])?;
        if n == 0 {
            return Err(invalid(format!(
                "zip archive ends at byte {offset} without an .etl entry"
            )));
        }
        got += n;
    }
    if fixed[..4] != LOCAL_HEADER {
        return Ok(None);
    }
    input.read_exact(&mut fixed[4..]).map_err(|_| {
        invalid(format!("zip archive ends inside the entry header at byte {offset}"))
    })?;
    let name_len = usize::from(u16_at(&fixed, 26));
    let extra_len = usize::from(u16_at(&fixed, 28));
    let mut name = vec![0u8; name_len];
    input.read_exact(&mut name)?;
    let mut extra = vec![0u8; extra_len];
    input.read_exact(&mut extra)?;
    let mut compressed = u64::from(u32_at(&fixed, 18));
    let uncompressed = u32_at(&fixed, 22);
    if compressed == u64::from(u32::MAX) || uncompressed == u32::MAX {
        // Zip64: the sizes are in extra field 0x0001 (uncompressed, then
        // compressed, each u64).
        let mut at = 0;
        while at + 4 <= extra.len() {
            let id = u16_at(&extra, at);
            let len = usize::from(u16_at(&extra, at + 2));
            if id == 1 && at + 4 + 16 <= extra.len() && len >= 16 {
                let b = &extra[at + 12..at + 20];
                compressed = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            }
            at += 4 + len;
        }
    }
    Ok(Some(Entry {
        flags: u16_at(&fixed, 6),
        method: u16_at(&fixed, 8),
        crc: u32_at(&fixed, 14),
        compressed,
        name: String::from_utf8_lossy(&name).into_owned(),
    }))
}

/// Steps over an entry that is not the log.
fn skip_entry(input: &mut dyn BufRead, entry: &Entry) -> io::Result<()> {
    if entry.flags & FLAG_DESCRIPTOR == 0 {
        let skipped = io::copy(&mut input.take(entry.compressed), &mut io::sink())?;
        if skipped < entry.compressed {
            return Err(invalid(format!("zip entry `{}` is truncated", entry.name)));
        }
        return Ok(());
    }
    if entry.method != DEFLATED {
        return Err(invalid(format!(
            "zip entry `{}` has no size before its data and is not deflated: cannot step over it",
            entry.name
        )));
    }
    io::copy(&mut DeflateDecoder::new(&mut *input), &mut io::sink())?;
    skip_descriptor(input).map(|_| ())
}

/// Reads a data descriptor (optional signature, CRC, two 32-bit sizes);
/// returns its CRC.
fn skip_descriptor(input: &mut dyn BufRead) -> io::Result<u32> {
    let mut b = [0u8; 16];
    input.read_exact(&mut b[..12])?;
    if b[..4] == DATA_DESCRIPTOR {
        input.read_exact(&mut b[12..16])?;
        Ok(u32_at(&b, 4))
    } else {
        Ok(u32_at(&b, 0))
    }
}

/// The entry's data as it is read from the archive.
enum Body {
    Deflated(DeflateDecoder<Box<dyn BufRead>>),
    Stored(io::Take<Box<dyn BufRead>>),
}

impl Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Body::Deflated(d) => d.read(buf),
            Body::Stored(t) => t.read(buf),
        }
    }

    /// The archive after the entry's data.
    fn archive(&mut self) -> &mut dyn BufRead {
        match self {
            Body::Deflated(d) => d.get_mut(),
            Body::Stored(t) => t.get_mut(),
        }
    }
}

/// The inflated bytes of the archive's first `.etl` entry, CRC checked.
struct EtlEntry {
    body: Body,
    flags: u16,
    /// From the local header (when no data descriptor follows).
    crc: u32,
    /// Bytes a stored entry must have.
    stored_len: Option<u64>,
    sum: Crc,
    name: String,
    done: bool,
}

impl Read for EtlEntry {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let n = self.body.read(buf)?;
        if n > 0 {
            self.sum.update(&buf[..n]);
            return Ok(n);
        }
        self.done = true;
        if let Some(len) = self.stored_len {
            if u64::from(self.sum.amount()) != len & 0xffff_ffff {
                return Err(invalid(format!("zip entry `{}` is truncated", self.name)));
            }
        }
        let expected = if self.flags & FLAG_DESCRIPTOR != 0 {
            skip_descriptor(self.body.archive())?
        } else {
            self.crc
        };
        if expected != self.sum.sum() {
            return Err(invalid(format!(
                "zip entry `{}`: CRC-32 {:08x} does not match the archive's {expected:08x} (corrupt or truncated archive)",
                self.name,
                self.sum.sum()
            )));
        }
        Ok(0)
    }
}

/// Whether an error from [`first_etl`] means the archive holds no readable
/// `.etl` entry (so it is some other zip, refused as such).
pub fn is_not_an_etl_archive(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported
}

fn not_etl(e: io::Error) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, e.to_string())
}

/// Wraps a zip archive so it reads as its first `.etl` entry. Errors met
/// before that entry is found are of kind `Unsupported`
/// ([`is_not_an_etl_archive`]).
pub fn first_etl(mut input: Box<dyn BufRead>) -> io::Result<Box<dyn Read>> {
    let mut offset = 0u64;
    loop {
        let Some(entry) = next_entry(&mut *input, offset).map_err(not_etl)? else {
            return Err(not_etl(invalid(
                "zip archive holds no .etl file (tracemark reads the .etl inside a zip; \
                 unpack other archives first: `unzip -p FILE | tracemark convert - -o TRACE.tmt`)"
                    .into(),
            )));
        };
        if !entry.name.to_ascii_lowercase().ends_with(".etl") {
            skip_entry(&mut *input, &entry).map_err(not_etl)?;
            offset = offset.saturating_add(30 + entry.compressed);
            continue;
        }
        let (body, stored_len) = match entry.method {
            DEFLATED => (Body::Deflated(DeflateDecoder::new(input)), None),
            STORED if entry.flags & FLAG_DESCRIPTOR == 0 => (
                Body::Stored(input.take(entry.compressed)),
                Some(entry.compressed),
            ),
            other => {
                return Err(invalid(format!(
                    "zip entry `{}` uses compression method {other}; tracemark reads stored and deflated entries",
                    entry.name
                )))
            }
        };
        return Ok(Box::new(EtlEntry {
            body,
            flags: entry.flags,
            crc: entry.crc,
            stored_len,
            sum: Crc::new(),
            name: entry.name,
            done: false,
        }));
    }
}

/// A zip archive of `entries` (name, contents), deflated; with `descriptor`
/// the sizes and CRC follow each entry's data (as streaming zip writers
/// do). For tests and fuzz seeds.
pub fn write_zip(entries: &[(&str, &[u8])], descriptor: bool) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        let _ = e.write_all(data);
        let packed = e.finish().unwrap_or_default();
        let mut crc = Crc::new();
        crc.update(data);
        let flags: u16 = if descriptor { FLAG_DESCRIPTOR } else { 0 };
        let (crc_field, sizes) = if descriptor {
            (0, [0u32, 0])
        } else {
            (crc.sum(), [packed.len() as u32, data.len() as u32])
        };
        let offset = out.len() as u32;
        let mut header = Vec::new();
        header.extend_from_slice(&LOCAL_HEADER);
        header.extend_from_slice(&20u16.to_le_bytes());
        header.extend_from_slice(&flags.to_le_bytes());
        header.extend_from_slice(&DEFLATED.to_le_bytes());
        header.extend_from_slice(&[0; 4]);
        header.extend_from_slice(&crc_field.to_le_bytes());
        header.extend_from_slice(&sizes[0].to_le_bytes());
        header.extend_from_slice(&sizes[1].to_le_bytes());
        header.extend_from_slice(&(name.len() as u16).to_le_bytes());
        header.extend_from_slice(&0u16.to_le_bytes());
        header.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&packed);
        if descriptor {
            out.extend_from_slice(&DATA_DESCRIPTOR);
            out.extend_from_slice(&crc.sum().to_le_bytes());
            out.extend_from_slice(&(packed.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        }
        central.extend_from_slice(b"PK\x01\x02");
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0; 18]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(zip: Vec<u8>) -> io::Result<Vec<u8>> {
        let mut r = first_etl(Box::new(io::Cursor::new(zip)))?;
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn reads_the_first_etl_entry_after_others() {
        let log: Vec<u8> = (0..100_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for descriptor in [false, true] {
            let zip = write_zip(&[("LogFile.txt", b"notes\n"), ("app.etl", &log), ("b.etl", b"x")], descriptor);
            assert_eq!(read(zip).unwrap(), log, "descriptor {descriptor}");
        }
    }

    #[test]
    fn corrupt_and_etl_less_archives_are_errors() {
        let none = write_zip(&[("a.txt", b"hello")], false);
        assert!(read(none).unwrap_err().to_string().contains("holds no .etl file"));
        let log = vec![7u8; 50_000];
        let zip = write_zip(&[("a.etl", &log)], false);
        // A wrong CRC.
        let mut bad_crc = zip.clone();
        bad_crc[14] ^= 1;
        assert!(read(bad_crc).unwrap_err().to_string().contains("CRC-32"));
        // Cut inside the data.
        for cut in [10, 35, zip.len() / 2] {
            assert!(read(zip[..cut].to_vec()).is_err(), "cut {cut}");
        }
    }
}
