//! Sections (format 1.1): typed, versioned blocks between the last chunk and
//! the footer. Each has its own checksum, so a damaged one is named; a reader
//! skips (after checking it) a section kind it does not know. See FORMAT.md.

use crate::error::FormatError;
use crate::frame::{decode_meta, encode_meta, u32_at};
use crate::task::{CalibrationReplays, TaskCpu, TaskMarks};

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
    /// [`CalibrationReplays`].
    Calibration = 2,
    /// [`TaskCpu`].
    TaskCpu = 3,
}

impl Kind {
    fn from_u16(kind: u16) -> Option<Kind> {
        match kind {
            1 => Some(Kind::Task),
            2 => Some(Kind::Calibration),
            3 => Some(Kind::TaskCpu),
            _ => None,
        }
    }

    /// The name errors give the section.
    fn name(self) -> &'static str {
        match self {
            Kind::Task => "task",
            Kind::Calibration => "calibration",
            Kind::TaskCpu => "task CPU",
        }
    }

    /// The version of the kind's payload this crate writes and reads.
    fn version(self) -> u16 {
        match self {
            Kind::Task => 1,
            Kind::Calibration => 1,
            Kind::TaskCpu => 1,
        }
    }
}

/// The sections of a file, as read.
#[derive(Debug, Default)]
pub(crate) struct Sections {
    pub task: Option<TaskMarks>,
    pub calibration: Option<CalibrationReplays>,
    pub task_cpu: Option<TaskCpu>,
}

fn corrupt(kind: Kind, reason: impl Into<String>) -> FormatError {
    FormatError::CorruptSection {
        section: kind.name(),
        reason: reason.into(),
    }
}

/// The section block of `kind` holding `payload`: head, payload, CRC of both.
fn section<T: serde::Serialize>(kind: Kind, payload: &T) -> Result<Vec<u8>, FormatError> {
    let payload = encode_meta(payload)?;
    let mut out = Vec::with_capacity(SECTION_HEAD_LEN + payload.len() + 4);
    out.extend_from_slice(&SECTION_MAGIC);
    out.extend_from_slice(&(kind as u16).to_le_bytes());
    out.extend_from_slice(&kind.version().to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// The section block for `marks`.
pub(crate) fn task_section(marks: &TaskMarks) -> Result<Vec<u8>, FormatError> {
    section(Kind::Task, marks)
}

/// The section block for `replays`.
pub(crate) fn calibration_section(replays: &CalibrationReplays) -> Result<Vec<u8>, FormatError> {
    section(Kind::Calibration, replays)
}

/// The section block for `cpu`.
pub(crate) fn task_cpu_section(cpu: &TaskCpu) -> Result<Vec<u8>, FormatError> {
    section(Kind::TaskCpu, cpu)
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
        let kind = Kind::from_u16(u16::from_le_bytes([head[4], head[5]]));
        return Err(FormatError::CorruptSection {
            section: kind.map_or("unknown", Kind::name),
            reason: format!("implausible length {len}"),
        });
    }
    Ok(SECTION_HEAD_LEN + len + 4)
}

/// Checks one whole section block and adds what it holds to `into`.
pub(crate) fn parse_section(block: &[u8], into: &mut Sections) -> Result<(), FormatError> {
    let total = section_len(block)?;
    let kind_number = u16::from_le_bytes([block[4], block[5]]);
    let kind = Kind::from_u16(kind_number);
    let damaged = |reason: String| FormatError::CorruptSection {
        section: kind.map_or("unknown", Kind::name),
        reason: match kind {
            Some(_) => reason,
            None => format!("{reason} (kind {kind_number})"),
        },
    };
    if block.len() != total {
        return Err(damaged("the section is cut short".into()));
    }
    let version = u16::from_le_bytes([block[6], block[7]]);
    let body_end = total - 4;
    if crc32c::crc32c(&block[..body_end]) != u32_at(block, body_end) {
        return Err(damaged("checksum mismatch".into()));
    }
    // A kind of a later minor version: checked, and skipped.
    let Some(kind) = kind else {
        return Ok(());
    };
    if version != kind.version() {
        return Err(corrupt(
            kind,
            format!(
                "version {version} is not the {} this tracemark reads; upgrade tracemark",
                kind.version()
            ),
        ));
    }
    let payload = &block[SECTION_HEAD_LEN..body_end];
    match kind {
        Kind::Task => store(kind, payload, &mut into.task, TaskMarks::check),
        Kind::Calibration => store(
            kind,
            payload,
            &mut into.calibration,
            CalibrationReplays::check,
        ),
        Kind::TaskCpu => store(kind, payload, &mut into.task_cpu, TaskCpu::check),
    }
}

/// Decodes the payload of a section of `kind`, checks it with `check` and
/// puts it in `slot`: a file holds at most one section of each kind.
fn store<T: serde::de::DeserializeOwned>(
    kind: Kind,
    payload: &[u8],
    slot: &mut Option<T>,
    check: impl FnOnce(&T) -> Result<(), String>,
) -> Result<(), FormatError> {
    if slot.is_some() {
        return Err(corrupt(
            kind,
            format!("the file holds two {} sections", kind.name()),
        ));
    }
    let value: T = decode_meta(payload).map_err(|e| corrupt(kind, e))?;
    check(&value).map_err(|e| corrupt(kind, e))?;
    *slot = Some(value);
    Ok(())
}

/// Checks what the sections hold together: a calibration belongs to a task
/// calibrated from it, a task's CPU time to a task with a "done" mark.
pub(crate) fn check_sections(sections: &Sections) -> Result<(), FormatError> {
    if sections.task_cpu.is_some() && sections.task.is_none_or(|t| t.end.is_none()) {
        return Err(corrupt(
            Kind::TaskCpu,
            "the task it measures has no \"done\" mark",
        ));
    }
    let calibrated = sections.task.is_some_and(|t| t.capture_drive.is_set());
    if sections.calibration.is_some() && !calibrated {
        return Err(corrupt(
            Kind::Calibration,
            "the task it calibrates holds no capture drive prediction",
        ));
    }
    Ok(())
}

/// Checks and reads every section in `bytes` (the bytes between the last
/// chunk and the footer).
pub(crate) fn parse_sections(mut bytes: &[u8]) -> Result<Sections, FormatError> {
    let mut sections = Sections::default();
    while !bytes.is_empty() {
        let total = section_len(bytes)?;
        if total > bytes.len() {
            return Err(FormatError::CorruptSection {
                section: Kind::from_u16(u16::from_le_bytes([bytes[4], bytes[5]]))
                    .map_or("unknown", Kind::name),
                reason: "the section runs into the footer".into(),
            });
        }
        parse_section(&bytes[..total], &mut sections)?;
        bytes = &bytes[total..];
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Nanos, TaskCpu};

    fn marks() -> TaskMarks {
        TaskMarks {
            end: Some(Nanos(1_000)),
            ..TaskMarks::default()
        }
    }

    fn refusal(blocks: &[Vec<u8>]) -> String {
        let bytes = blocks.concat();
        match parse_sections(&bytes) {
            Ok(sections) => panic!("read {sections:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_second_section_of_a_kind_is_refused_by_name() {
        let task = task_section(&marks()).unwrap();
        let cpu = task_cpu_section(&TaskCpu {
            busiest_thread: Nanos(5),
            total: Nanos(7),
            threads: 2,
        })
        .unwrap();
        let one = parse_sections(&[task.clone(), cpu.clone()].concat()).unwrap();
        assert_eq!(one.task, Some(marks()));
        assert_eq!(one.task_cpu.map(|c| c.threads), Some(2));
        let e = refusal(&[task.clone(), cpu.clone(), task.clone()]);
        assert!(e.contains("two task sections"), "{e}");
        let e = refusal(&[task, cpu.clone(), cpu]);
        assert!(e.contains("two task CPU sections"), "{e}");
    }

    #[test]
    fn a_calibration_of_no_replay_is_refused() {
        let empty = section(Kind::Calibration, &CalibrationReplays::default()).unwrap();
        let e = refusal(&[empty]);
        assert!(
            e.contains("calibration section") && e.contains("holds no replay"),
            "{e}"
        );
    }

    #[test]
    fn impossible_cpu_figures_are_refused_when_read() {
        let cpu = section(
            Kind::TaskCpu,
            &TaskCpu {
                busiest_thread: Nanos(9),
                total: Nanos(7),
                threads: 2,
            },
        )
        .unwrap();
        let e = refusal(&[task_section(&marks()).unwrap(), cpu]);
        assert!(e.contains("busiest thread"), "{e}");
    }
}
