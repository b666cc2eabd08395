//! What a result was measured on: the drive (model, firmware, serial,
//! geometry, queue limits, transport), the filesystem under a file target,
//! and which set of traces was run. Everything here is optional in the file:
//! results written before schema version 2 have none of it and still read.

use crate::schema::{DriveIdentity, SuiteResult, TargetInfo, TargetKind};
use sha2::{Digest, Sha256};

/// The form a drive's serial number is stored in unless `--keep-serial`:
/// `sha256:` and the first 16 hex digits of the serial's SHA-256. The same
/// serial always gives the same form, so runs of one drive stay together.
pub fn hash_serial(serial: &str) -> String {
    let digest = Sha256::digest(serial.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Whether a stored serial is in [`hash_serial`]'s form.
pub fn is_hashed_serial(stored: &str) -> bool {
    stored
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What names one drive and no other: its World Wide Name or its serial
/// (both in [`hash_serial`]'s form). Model, size, path and host are weak:
/// two drives of one model behind a bridge that hides serials, two virtual
/// disks, or two loop devices share them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrongId {
    Wwn(String),
    Serial(String),
}

impl std::fmt::Display for StrongId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StrongId::Wwn(w) => write!(f, "WWN {w}"),
            StrongId::Serial(s) => write!(f, "serial {s}"),
        }
    }
}

/// A stored serial or WWN in [`hash_serial`]'s form, whichever form it was
/// stored in; None when empty.
fn hashed(stored: &str) -> Option<String> {
    let stored = stored.trim();
    if stored.is_empty() {
        None
    } else if is_hashed_serial(stored) {
        Some(stored.to_string())
    } else {
        Some(hash_serial(stored))
    }
}

/// Whether two targets are one drive by a strong identity, and which: the
/// same WWN (when both record one), else the same serial; a file target also
/// the same file. None whenever either lacks a strong identity: results are
/// then never taken for runs of one drive, whatever else they share.
pub fn same_drive(a: &TargetInfo, b: &TargetInfo) -> Option<StrongId> {
    let id = match (a.strong_id(), b.strong_id()) {
        (Some(x), Some(y)) if x == y => x,
        _ => return None,
    };
    let file = |t: &TargetInfo| match &t.filesystem {
        Some(fs) if !fs.file.is_empty() => fs.file.clone(),
        _ => t.path.clone(),
    };
    if a.kind != b.kind || (a.kind == TargetKind::File && file(a) != file(b)) {
        return None;
    }
    if a.others.len() != b.others.len()
        || a.others
            .iter()
            .zip(&b.others)
            .any(|(x, y)| same_drive(x, y).is_none())
    {
        return None;
    }
    Some(id)
}

impl TargetInfo {
    /// The drive's [`StrongId`]: its WWN, else its serial; None without
    /// either (then no other result is taken for a run of the same drive).
    pub fn strong_id(&self) -> Option<StrongId> {
        let d = self.drive_identity()?;
        if let Some(w) = d.wwn.as_deref().and_then(hashed) {
            return Some(StrongId::Wwn(w));
        }
        d.serial.as_deref().and_then(hashed).map(StrongId::Serial)
    }

    /// A key equal for two targets exactly when [`same_drive`] pools them
    /// (further targets aside): the strong identity, and for a file target
    /// the file. None without a strong identity.
    pub fn pool_key(&self) -> Option<String> {
        let id = self.strong_id()?;
        Some(match (&self.kind, &self.filesystem) {
            (TargetKind::BlockDevice, _) => id.to_string(),
            (TargetKind::File, Some(fs)) if !fs.file.is_empty() => {
                format!("{id}, file {}", fs.file)
            }
            (TargetKind::File, _) => format!("{id}, file {}", self.path),
        })
    }

    /// The drive the figures belong to: the device itself, or the one
    /// under a file target's filesystem.
    pub fn drive_identity(&self) -> Option<&DriveIdentity> {
        self.drive
            .as_ref()
            .or_else(|| self.filesystem.as_ref()?.drive.as_ref())
    }

    /// A key that names the same drive in every result: its serial's hash
    /// (whether the result kept the serial or stored it hashed, so runs with
    /// and without `--keep-serial` group together), else model and
    /// capacity; for a file target the file and the device under it; else
    /// the path.
    pub fn drive_key(&self) -> String {
        match self.kind {
            TargetKind::BlockDevice => match &self.drive {
                Some(DriveIdentity {
                    serial: Some(s), ..
                }) if is_hashed_serial(s) => format!("serial {s}"),
                Some(DriveIdentity {
                    serial: Some(s), ..
                }) => format!("serial {}", hash_serial(s)),
                Some(d) if d.model.is_some() => format!(
                    "model {} {}",
                    d.model.as_deref().unwrap_or_default(),
                    d.capacity_bytes
                ),
                _ => format!(
                    "device {} {}",
                    self.path,
                    self.model.as_deref().unwrap_or_default()
                ),
            },
            TargetKind::File => match &self.filesystem {
                Some(fs) if !fs.file.is_empty() => format!("file {} on {}", fs.file, fs.source),
                Some(fs) => format!("file {} on {}", self.path, fs.source),
                None => format!("file {}", self.path),
            },
        }
    }

    /// What people call the drive: its model, else the target's path.
    pub fn drive_name(&self) -> String {
        let model = self
            .drive_identity()
            .and_then(|d| d.model.clone())
            .or_else(|| self.model.clone());
        match (self.kind, model) {
            (TargetKind::BlockDevice, Some(m)) => m,
            (TargetKind::File, Some(m)) => format!("{} ({m})", self.path),
            (_, None) => self.path.clone(),
        }
    }
}

impl SuiteResult {
    /// A hash over the names and checksums of the traces replayed, in order
    /// (16 hex digits, FNV-1a 64): results with different hashes ran
    /// different trace sets and are never ranked together. None when a trace
    /// has no identity (files older than trace checksums).
    pub fn computed_trace_set_hash(&self) -> Option<String> {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            // A separator no name contains, so ("ab","c") != ("a","bc").
            h ^= 0xff;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        };
        for t in &self.traces {
            eat(t.name.as_bytes());
            eat(t.trace_id.as_ref()?.checksum.as_bytes());
        }
        Some(format!("{h:016x}"))
    }

    /// The trace set's hash as recorded, else computed from the traces.
    pub fn trace_set_hash(&self) -> Option<String> {
        self.trace_set
            .clone()
            .or_else(|| self.computed_trace_set_hash())
    }
}

fn drive_line(d: &DriveIdentity) -> String {
    let mut parts = vec![match &d.model {
        Some(m) => format!("{m} ({})", d.name),
        None => d.name.clone(),
    }];
    if let Some(f) = &d.firmware {
        parts.push(format!("firmware {f}"));
    }
    if let Some(s) = &d.serial {
        parts.push(format!("serial {s}"));
    }
    parts.push(format!("{:.1} GB", d.capacity_bytes as f64 / 1e9));
    parts.push(format!(
        "{}/{}-byte blocks",
        d.logical_block_size, d.physical_block_size
    ));
    parts.push(
        if d.rotational {
            "rotational"
        } else {
            "non-rotational"
        }
        .to_string(),
    );
    if let Some(t) = &d.transport {
        parts.push(t.clone());
    }
    if let Some(s) = &d.scheduler {
        parts.push(format!("scheduler {s}"));
    }
    if let Some(kb) = d.max_sectors_kb {
        parts.push(format!(
            "requests up to {kb} KiB{}",
            d.max_hw_sectors_kb
                .map(|hw| format!(" (hardware {hw})"))
                .unwrap_or_default()
        ));
    }
    if let Some(n) = d.nr_requests {
        parts.push(format!("{n} requests queued"));
    }
    parts.join(", ")
}

/// What a result says about its drive, filesystem, host and trace set, one
/// line each (unescaped; the text and HTML reports escape them). Lines a
/// file older than schema version 2 has nothing for are left out.
pub fn describe_lines(
    target: &TargetInfo,
    host: &crate::schema::HostInfo,
    tool_version: &str,
    trace_set: Option<&str>,
) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(d) = &target.drive {
        lines.push(format!("drive: {}", drive_line(d)));
    }
    if let Some(fs) = &target.filesystem {
        lines.push(format!(
            "filesystem: {} on {} ({}), mounted at {}",
            fs.fs_type, fs.source, fs.mount_options, fs.mount_point
        ));
        if let Some(d) = &fs.drive {
            lines.push(format!("drive under it: {}", drive_line(d)));
        }
    }
    if host.cpu_model.is_some() || host.memory_bytes.is_some() {
        lines.push(format!(
            "host: {}, kernel {}, {} CPUs{}{}, tracemark {tool_version}{}",
            host.hostname,
            host.kernel,
            host.cpus,
            host.cpu_model
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default(),
            host.memory_bytes
                .map(|b| format!(", {:.1} GiB memory", b as f64 / (1u64 << 30) as f64))
                .unwrap_or_default(),
            trace_set
                .map(|h| format!(", trace set {h}"))
                .unwrap_or_default()
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(serial: Option<&str>) -> TargetInfo {
        TargetInfo {
            path: "/dev/sdb".into(),
            kind: TargetKind::BlockDevice,
            size_bytes: 500_107_862_016,
            model: Some("Samsung SSD 870".into()),
            logical_block_size: 512,
            direct_io: true,
            io_path: None,
            others: Vec::new(),
            drive: Some(DriveIdentity {
                name: "sdb".into(),
                model: Some("Samsung SSD 870".into()),
                serial: serial.map(str::to_string),
                capacity_bytes: 500_107_862_016,
                ..Default::default()
            }),
            filesystem: None,
        }
    }

    #[test]
    fn a_serial_hashes_to_a_short_stable_digest_without_the_serial_in_it() {
        let h = hash_serial("S4EWNX0R123456");
        assert_eq!(h, "sha256:cd070ab6854646e7");
        assert_eq!(h, hash_serial("S4EWNX0R123456"));
        assert_ne!(h, hash_serial("S4EWNX0R123457"));
        assert!(is_hashed_serial(&h));
        assert!(!is_hashed_serial("S4EWNX0R123456"));
        assert!(!is_hashed_serial("sha256:xyz"));
    }

    #[test]
    fn runs_of_one_drive_share_a_key_whether_the_serial_was_kept_or_hashed() {
        let hashed = device(Some(&hash_serial("S4EWNX0R123456")));
        let hashed_again = device(Some(&hash_serial("S4EWNX0R123456")));
        let kept = device(Some("S4EWNX0R123456"));
        let other = device(Some(&hash_serial("S4EWNX0R999999")));
        assert_eq!(hashed.drive_key(), hashed_again.drive_key());
        assert_eq!(hashed.drive_key(), kept.drive_key());
        assert!(!kept.drive_key().contains("S4EWNX0R123456"));
        // Two drives of one model and size: told apart by the serial.
        assert_ne!(hashed.drive_key(), other.drive_key());
        assert_eq!(
            same_drive(&kept, &hashed),
            Some(StrongId::Serial(hash_serial("S4EWNX0R123456")))
        );
        assert_eq!(same_drive(&hashed, &other), None);
        // Equal weak identities (model, size, path) are not one drive.
        assert_eq!(same_drive(&device(None), &device(None)), None);
        let mut wwn_a = device(Some("S4EWNX0R123456"));
        let mut wwn_b = device(Some("S4EWNX0R123456"));
        wwn_a.drive.as_mut().unwrap().wwn = Some("eui.0025388b71b2a3c4".into());
        wwn_b.drive.as_mut().unwrap().wwn = Some("eui.0025388b71b2a3c5".into());
        // A WWN outranks the serial (a bridge may report one serial for two).
        assert_eq!(same_drive(&wwn_a, &wwn_b), None);
        // Without a serial: model and capacity.
        assert_eq!(
            device(None).drive_key(),
            "model Samsung SSD 870 500107862016"
        );
    }
}
