//! Sections (format 1.1): typed, versioned blocks between the last chunk and
//! the footer. Each has its own checksum, so a damaged one is named; a reader
//! skips (after checking it) a section kind it does not know. See FORMAT.md.

use crate::error::FormatError;
use crate::frame::{decode_meta, encode_meta, u32_at};
use crate::task::TaskMarks;

pub(crate) const SECTION_MAGIC: [u8; 4] = *b"TMSC";
/// magic, kind, version, payload length.
pub(crate) const SECTION_HEAD_LEN: usize = 12;
/// The largest payload a section may hold (as a header or footer).
pub(crate) const MAX_SECTION_PAYLOAD: usize = 64 << 20;

/// The section kinds this crate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
enum Kind {
    /// [`TaskMarks`].
    Task = 1,
}

/// The version of the task section's payload this crate writes and reads.
const TASK_VERSION: u16 = 1;

/// The sections of a file, as read.
#[derive(Debug, Default)]
pub(crate) struct Sections {
    pub task: Option<TaskMarks>,
}

fn corrupt(reason: impl Into<String>) -> FormatError {
    FormatError::CorruptSection {
        section: "task",
        reason: reason.into(),
    }
}

/// The section block for `marks`: head, payload, CRC of both.
pub(crate) fn task_section(marks: &TaskMarks) -> Result<Vec<u8>, FormatError> {
    let payload = encode_meta(marks)?;
    let mut out = Vec::with_capacity(SECTION_HEAD_LEN + payload.len() + 4);
    out.extend_from_slice(&SECTION_MAGIC);
    out.extend_from_slice(&(Kind::Task as u16).to_le_bytes());
    out.extend_from_slice(&TASK_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// The length of the whole section whose head starts `head`, when the head
/// is plausible.
pub(crate) fn section_len(head: &[u8]) -> Result<usize, FormatError> {
    if head.len() < SECTION_HEAD_LEN || head[..4] != SECTION_MAGIC {
        return Err(FormatError::CorruptFooter(
            "no section magic between the last chunk and the footer".into(),
        ));
    }
    let len = u32_at(head, 8) as usize;
    if len > MAX_SECTION_PAYLOAD {
        return Err(corrupt(format!("implausible length {len}")));
    }
    Ok(SECTION_HEAD_LEN + len + 4)
}

/// Checks one whole section block and adds what it holds to `into`.
pub(crate) fn parse_section(block: &[u8], into: &mut Sections) -> Result<(), FormatError> {
    let total = section_len(block)?;
    if block.len() != total {
        return Err(corrupt("the section is cut short"));
    }
    let kind = u16::from_le_bytes([block[4], block[5]]);
    let version = u16::from_le_bytes([block[6], block[7]]);
    let body_end = total - 4;
    if crc32c::crc32c(&block[..body_end]) != u32_at(block, body_end) {
        return Err(if kind == Kind::Task as u16 {
            corrupt("checksum mismatch")
        } else {
            FormatError::CorruptSection {
                section: "unknown",
                reason: format!("checksum mismatch (kind {kind})"),
            }
        });
    }
    if kind != Kind::Task as u16 {
        // A kind of a later minor version: checked, and skipped.
        return Ok(());
    }
    if version != TASK_VERSION {
        return Err(corrupt(format!(
            "version {version} is not the {TASK_VERSION} this tracemark reads; upgrade tracemark"
        )));
    }
    if into.task.is_some() {
        return Err(corrupt("the file holds two task sections"));
    }
    let marks: TaskMarks = decode_meta(&block[SECTION_HEAD_LEN..body_end]).map_err(corrupt)?;
    marks.check().map_err(corrupt)?;
    into.task = Some(marks);
    Ok(())
}

/// Checks and reads every section in `bytes` (the bytes between the last
/// chunk and the footer).
pub(crate) fn parse_sections(mut bytes: &[u8]) -> Result<Sections, FormatError> {
    let mut sections = Sections::default();
    while !bytes.is_empty() {
        let total = section_len(bytes)?;
        if total > bytes.len() {
            return Err(corrupt("the section runs into the footer"));
        }
        parse_section(&bytes[..total], &mut sections)?;
        bytes = &bytes[total..];
    }
    Ok(sections)
}
