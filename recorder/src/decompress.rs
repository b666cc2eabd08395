//! Compressed inputs, read directly: gzip, xz, zstd and bzip2, recognised by
//! their magic bytes (never by file name) and decompressed in a stream, so a
//! parser sees the plain bytes and memory does not grow with the input.
//!
//! Public datasets ship compressed (Alibaba `.tar.gz`, MSR `.csv.gz`, Tencent
//! `.tgz`, SNIA `.bz2`/`.xz`). Multi-member gzip and bzip2 files (`pigz`,
//! `pbzip2`) and multi-frame zstd files are read to their end. A tar archive
//! inside is refused with a clear message: it holds several files. A zip
//! archive is read as the first `.etl` file in it (how ETW logs are kept:
//! `.etl.zip`); other zip archives are refused the same way.

use crate::error::{ConvertError, UsageKind};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::Path;

/// A compression the recorder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Xz,
    Zstd,
    Bzip2,
    /// A zip archive, read as the first `.etl` file in it (`.etl.zip`).
    Zip,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
            Compression::Zip => "zip",
        }
    }

    /// The compression whose magic bytes start `head`, if any.
    pub fn sniff(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Some(Compression::Xz)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if crate::formats::etl::zip::is_zip(head) {
            Some(Compression::Zip)
        } else if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
            Some(Compression::Bzip2)
        } else {
            None
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes needed to recognise every supported magic.
const MAGIC_BYTES: usize = 6;

/// Buffer in front of a decompressor: large reads keep the decoders fast.
const BUFFER_BYTES: usize = 256 * 1024;

/// Reads up to `n` bytes (fewer only at end of input).
fn read_prefix(r: &mut dyn Read, n: usize) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}

/// Wraps `raw` so that it yields the decompressed bytes when it starts with a
/// known compression magic, the bytes themselves otherwise. Returns which
/// compression was found.
pub fn decompressing(mut raw: Box<dyn Read>) -> io::Result<(Option<Compression>, Box<dyn Read>)> {
    let prefix = read_prefix(&mut raw, MAGIC_BYTES)?;
    let found = Compression::sniff(&prefix);
    let prefix_copy = prefix.clone();
    let whole: Box<dyn Read> = Box::new(Cursor::new(prefix).chain(raw));
    let reader: Box<dyn Read> = match found {
        None => whole,
        Some(c) => {
            let buffered = BufReader::with_capacity(BUFFER_BYTES, whole);
            match c {
                Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(buffered)),
                Compression::Xz => {
                    Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(buffered))
                }
                Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(buffered)?),
                Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(buffered)),
                Compression::Zip => match crate::formats::etl::zip::first_etl(Box::new(buffered)) {
                    Ok(etl) => etl,
                    // Another zip: its magic alone goes on, so that the
                    // caller refuses it as a foreign archive.
                    Err(e) if crate::formats::etl::zip::is_not_an_etl_archive(&e) => {
                        return Ok((None, Box::new(Cursor::new(prefix_copy))));
                    }
                    Err(e) => return Err(e),
                },
            }
        }
    };
    Ok((found, reader))
}

/// Whether `head` (the first bytes of a decompressed input) is a tar archive.
pub fn is_tar(head: &[u8]) -> bool {
    head.get(257..262) == Some(b"ustar")
}

/// The error for a tar archive given as an input.
pub fn tar_error(path: &Path) -> ConvertError {
    ConvertError::usage(UsageKind::UnreadableContainer, format!(
        "{}: is a tar archive (several files); extract it first (tar xf) and convert the trace files in it",
        path.display()
    ))
}

/// Containers and compressions the recorder does not read, by their magic
/// bytes, with the command that unpacks one to standard output.
const FOREIGN: [(&[u8], &str, &str); 6] = [
    (b"PK\x03\x04", "zip archive", "unzip -p FILE"),
    (b"\x04\x22\x4d\x18", "lz4 file", "lz4 -dc FILE"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive", "7z x -so FILE"),
    (b"Rar!\x1a\x07", "RAR archive", "unrar p -inul FILE"),
    (b"\x1f\x9d", "compress (.Z) file", "zcat FILE"),
    (b"\x89LZO\x00", "lzop file", "lzop -dc FILE"),
];

/// Refuses an input whose first bytes (after any decompression) are an
/// archive or a compression the recorder does not read, so that its bytes
/// never reach a text parser (which could only print them back as garbage).
pub fn refuse_foreign(head: &[u8], path: &Path) -> Result<(), ConvertError> {
    if is_tar(head) {
        return Err(tar_error(path));
    }
    for (magic, what, unpack) in FOREIGN {
        if head.starts_with(magic) {
            let unpack = unpack.replace("FILE", &path.display().to_string());
            return Err(ConvertError::usage(
                UsageKind::UnreadableContainer,
                format!(
                    "{}: is a {what}, which tracemark does not read (it reads plain text, \
                     gzip, xz, zstd or bzip2 streams, and the .etl log in a zip archive); \
                     unpack it first: `{unpack} | tracemark convert - -o TRACE.tmt`",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Opens a file (or `-`, standard input) for reading, decompressed when it is
/// compressed.
pub fn open(path: &Path) -> Result<(Option<Compression>, Box<dyn Read>), ConvertError> {
    let io_error = |source| ConvertError::Io {
        path: path.to_path_buf(),
        source,
    };
    let raw: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path).map_err(io_error)?)
    };
    decompressing(raw).map_err(io_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const TEXT: &[u8] = b"0,R,4096,4096,1577808000000626\n1,W,0,512,1577808000000700\n";

    fn compress(c: Compression, data: &[u8]) -> Vec<u8> {
        match c {
            Compression::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Compression::Xz => {
                let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Compression::Zstd => zstd::encode_all(data, 1).unwrap(),
            Compression::Zip => crate::formats::etl::zip::write_zip(&[("t.etl", data)], false),
            Compression::Bzip2 => {
                let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
        }
    }

    fn read_all(input: Vec<u8>) -> (Option<Compression>, Vec<u8>) {
        let (c, mut r) = decompressing(Box::new(Cursor::new(input))).unwrap();
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        (c, out)
    }

    const ALL: [Compression; 4] = [
        Compression::Gzip,
        Compression::Xz,
        Compression::Zstd,
        Compression::Bzip2,
    ];

    #[test]
    fn every_compression_is_recognised_and_undone() {
        for c in ALL {
            let (found, out) = read_all(compress(c, TEXT));
            assert_eq!(found, Some(c));
            assert_eq!(out, TEXT, "{c}");
        }
    }

    #[test]
    fn a_zip_archive_reads_as_its_etl_file() {
        let (found, out) = read_all(compress(Compression::Zip, TEXT));
        assert_eq!(found, Some(Compression::Zip));
        assert_eq!(out, TEXT);
        // A zip without an .etl file reads as its magic alone, which
        // `refuse_foreign` then refuses as a zip archive.
        let other = crate::formats::etl::zip::write_zip(&[("a.csv", TEXT)], false);
        let (found, head) = read_all(other);
        assert_eq!(found, None);
        let err = refuse_foreign(&head, Path::new("o.zip"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("o.zip: is a zip archive"), "{err}");
    }

    #[test]
    fn concatenated_members_are_all_read() {
        for c in ALL {
            let mut two = compress(c, &TEXT[..20]);
            two.extend(compress(c, &TEXT[20..]));
            let (_, out) = read_all(two);
            assert_eq!(out, TEXT, "{c}");
        }
    }

    #[test]
    fn plain_and_short_inputs_pass_through() {
        assert_eq!(read_all(TEXT.to_vec()), (None, TEXT.to_vec()));
        assert_eq!(read_all(b"BZ".to_vec()), (None, b"BZ".to_vec()));
        assert_eq!(read_all(Vec::new()), (None, Vec::new()));
        // "BZh" followed by no level digit is not bzip2.
        assert_eq!(Compression::sniff(b"BZhx1234"), None);
    }

    #[test]
    fn foreign_archives_are_refused_by_name() {
        let p = Path::new("d.zip");
        let err = refuse_foreign(b"PK\x03\x04\x14\x00rest", p).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("d.zip: is a zip archive"), "{msg}");
        assert!(
            msg.contains("unzip -p d.zip | tracemark convert -"),
            "{msg}"
        );
        let lz4 = refuse_foreign(b"\x04\x22\x4d\x18\x64\x40", p).unwrap_err();
        assert!(lz4.to_string().contains("lz4 file"));
        assert!(refuse_foreign(b"  8,0 1 1 0.0 1 Q R 0 + 8 [a]\n", p).is_ok());
        assert!(refuse_foreign(b"", p).is_ok());
    }

    #[test]
    fn truncated_stream_is_an_error() {
        for c in ALL {
            let mut data = compress(c, &TEXT.repeat(50));
            data.truncate(data.len() / 2);
            let (_, mut r) = decompressing(Box::new(Cursor::new(data))).unwrap();
            let mut out = Vec::new();
            assert!(r.read_to_end(&mut out).is_err(), "{c}: truncation not seen");
        }
    }
}
