//! The header and footer blocks: their framing, checksums and decoding.

use super::Footer;
use crate::error::FormatError;
use crate::frame::{decode_meta, u32_at, FOOTER_MAGIC, PREAMBLE_LEN};
use crate::meta::TraceHeader;
use crate::section::{check_sections, Sections};
use crate::task::TaskMarks;
use crate::{MAGIC, VERSION_MAJOR};

/// Checks the header block at the start of `bytes` and returns the header and
/// the block's length and the file's minor version. `bytes` may be longer
/// than the block.
pub(super) fn parse_header_block(bytes: &[u8]) -> Result<(TraceHeader, usize, u16), FormatError> {
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        let n = bytes.len().min(MAGIC.len());
        if n < MAGIC.len() && bytes[..n] == MAGIC[..n] {
            return Err(FormatError::Truncated(
                "the file ends inside the magic".into(),
            ));
        }
        return Err(FormatError::NotATrace);
    }
    if bytes.len() < PREAMBLE_LEN {
        return Err(FormatError::Truncated(
            "the file ends inside the preamble".into(),
        ));
    }
    let major = u16::from_le_bytes([bytes[8], bytes[9]]);
    let minor = u16::from_le_bytes([bytes[10], bytes[11]]);
    let header_len = u32_at(bytes, 12) as usize;
    let block_len = PREAMBLE_LEN + header_len + 4;
    if bytes.len() < block_len {
        return Err(if major > VERSION_MAJOR {
            FormatError::NewerVersion { major, minor }
        } else {
            FormatError::Truncated(format!(
                "the header block needs {block_len} bytes, the file has {}",
                bytes.len()
            ))
        });
    }
    // The header block's framing is the same in every version, so its checksum
    // tells a newer file from a corrupt one.
    let crc_ok = crc32c::crc32c(&bytes[..block_len - 4]) == u32_at(bytes, block_len - 4);
    if !crc_ok {
        return Err(FormatError::CorruptHeader(format!(
            "checksum mismatch (version field reads {major}.{minor})"
        )));
    }
    if major > VERSION_MAJOR {
        return Err(FormatError::NewerVersion { major, minor });
    }
    if major == 0 {
        return Err(FormatError::CorruptHeader(
            "version 0 does not exist".into(),
        ));
    }
    let header = decode_meta(&bytes[PREAMBLE_LEN..PREAMBLE_LEN + header_len])
        .map_err(FormatError::CorruptHeader)?;
    Ok((header, block_len, minor))
}

/// Parses and checks the footer block plus trailer found at the end of `bytes`.
pub(super) fn parse_footer_block(block: &[u8]) -> Result<Footer, String> {
    if block.len() < 12 || block[..4] != FOOTER_MAGIC {
        return Err("no footer magic where the trailer says the footer starts".into());
    }
    let len = u32_at(block, 4) as usize;
    if 8 + len + 4 != block.len() {
        return Err("footer length disagrees with the trailer".into());
    }
    if crc32c::crc32c(&block[..8 + len]) != u32_at(block, 8 + len) {
        return Err("checksum mismatch".into());
    }
    decode_meta(&block[8..8 + len])
}

/// Puts the task and its calibration into the footer's tail: the sections',
/// or for a file without a task section, what the notes of format 1.0 held
/// (taken out of the notes).
pub(super) fn attach_task(footer: &mut Footer, sections: Sections) -> Result<(), FormatError> {
    check_sections(&sections)?;
    footer.tail.task = match sections.task {
        Some(task) => task,
        None => TaskMarks::from_legacy_notes(&mut footer.tail.notes),
    };
    footer.tail.task.cpu = sections.task_cpu;
    footer.tail.calibration = sections.calibration;
    Ok(())
}
