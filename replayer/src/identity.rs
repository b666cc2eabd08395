//! The identity of what a result was measured on, read from sysfs and
//! /proc: a block device's model, firmware, serial (hashed), geometry,
//! queue limits, scheduler and transport; the filesystem under a file
//! target; the host's CPU and memory. Everything is best effort: a field
//! the kernel does not show is left out, never guessed.

use results::identity::{DriveIdentity, FilesystemInfo};
use results::schema::{HostInfo, TargetInfo};
use sha2::{Digest, Sha256};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn read_number(path: &Path) -> Option<u64> {
    read_trimmed(path)?.parse().ok()
}

/// `sha256:` and the first 16 hex digits of the serial's SHA-256.
pub fn hash_serial(serial: &str) -> String {
    let digest = Sha256::digest(serial.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The whole disk's sysfs directory for device `major:minor` (a partition's
/// parent), resolved.
fn disk_dir(major: u32, minor: u32) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    if dir.join("partition").exists() {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir)
    }
}

/// The serial number as the device reports it (NVMe, virtio and USB have a
/// `serial` file; SCSI and SATA the unit serial number VPD page).
fn raw_serial(dir: &Path) -> Option<String> {
    read_trimmed(&dir.join("serial"))
        .or_else(|| read_trimmed(&dir.join("device/serial")))
        .or_else(|| {
            // VPD page 0x80: 4 header bytes, then the serial (ASCII).
            let page = std::fs::read(dir.join("device/vpd_pg80")).ok()?;
            let text = String::from_utf8_lossy(page.get(4..)?).trim().to_string();
            Some(text).filter(|s| !s.is_empty())
        })
}

/// NVMe, SATA, USB, ... from the device's name and its place in sysfs.
fn transport(name: &str, dir: &Path) -> Option<String> {
    let path = dir.to_string_lossy();
    let by_name = [
        ("nvme", "nvme"),
        ("loop", "loop"),
        ("zram", "zram"),
        ("dm-", "device-mapper"),
        ("md", "md"),
        ("mmcblk", "mmc"),
        ("nbd", "nbd"),
        ("ram", "ram"),
    ];
    if let Some((_, t)) = by_name.iter().find(|(p, _)| name.starts_with(p)) {
        return Some(t.to_string());
    }
    let by_path = [
        ("/usb", "usb"),
        ("/virtio", "virtio"),
        ("/ata", "sata"),
        ("/host", "scsi"),
    ];
    by_path
        .iter()
        .find(|(p, _)| path.contains(p))
        .map(|(_, t)| t.to_string())
}

/// The scheduler in use: the bracketed one of `queue/scheduler`.
fn scheduler(dir: &Path) -> Option<String> {
    let text = read_trimmed(&dir.join("queue/scheduler"))?;
    match (text.find('['), text.find(']')) {
        (Some(a), Some(b)) if a < b => Some(text[a + 1..b].to_string()),
        _ => Some(text),
    }
}

/// Device `major:minor`'s identity (its whole disk's, for a partition);
/// None when sysfs does not know it.
pub fn drive_identity(major: u32, minor: u32) -> Option<DriveIdentity> {
    let dir = disk_dir(major, minor)?;
    let name = dir.file_name()?.to_string_lossy().to_string();
    let queue = dir.join("queue");
    let model = read_trimmed(&dir.join("device/model")).or_else(|| {
        read_trimmed(&dir.join("loop/backing_file")).map(|f| format!("loop device over {f}"))
    });
    let firmware = read_trimmed(&dir.join("device/firmware_rev"))
        .or_else(|| read_trimmed(&dir.join("device/rev")));
    Some(DriveIdentity {
        model,
        firmware,
        serial: raw_serial(&dir).map(|s| hash_serial(&s)),
        capacity_bytes: read_number(&dir.join("size")).unwrap_or(0) * 512,
        logical_block_size: read_number(&queue.join("logical_block_size")).unwrap_or(512),
        physical_block_size: read_number(&queue.join("physical_block_size")).unwrap_or(512),
        rotational: read_number(&queue.join("rotational")) == Some(1),
        max_sectors_kb: read_number(&queue.join("max_sectors_kb")),
        max_hw_sectors_kb: read_number(&queue.join("max_hw_sectors_kb")),
        nr_requests: read_number(&queue.join("nr_requests")),
        scheduler: scheduler(&dir),
        transport: transport(&name, &dir),
        name,
    })
}

/// The drive at `path` when it is a block device.
pub fn drive_of_path(path: &Path) -> Option<DriveIdentity> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    drive_identity(libc::major(meta.rdev()), libc::minor(meta.rdev()))
}

/// Undoes one octal escape (`\040` for a space) of /proc/self/mountinfo.
fn unescape_mount_field(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let Some(d) = octal {
            let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
            out.push(v as u8);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}

/// The filesystem `path` (a file that exists) lives on: from the
/// /proc/self/mountinfo line of its device whose mount point is the longest
/// prefix of the file's real path.
pub fn filesystem_of(path: &Path) -> Option<FilesystemInfo> {
    let meta = std::fs::metadata(path).ok()?;
    let real = std::fs::canonicalize(path).ok()?;
    let (dev_major, dev_minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, FilesystemInfo)> = None;
    for line in info.lines() {
        // id parent major:minor root mount-point options [optional...] - type source super-options
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if f.len() < 6 || r.len() < 2 {
            continue;
        }
        if f[2] != format!("{dev_major}:{dev_minor}") {
            continue;
        }
        let mount_point = unescape_mount_field(f[4]);
        if !real.starts_with(&mount_point) {
            continue;
        }
        let len = mount_point.len();
        if best.as_ref().is_some_and(|(l, _)| *l >= len) {
            continue;
        }
        let source = unescape_mount_field(r[1]);
        let drive = drive_of_path(Path::new(&source)).or_else(|| {
            // A filesystem on a device with no node in /dev here: by number.
            (dev_major != 0)
                .then(|| drive_identity(dev_major, dev_minor))
                .flatten()
        });
        best = Some((
            len,
            FilesystemInfo {
                file: real.display().to_string(),
                fs_type: r[0].to_string(),
                mount_point,
                mount_options: f[5].to_string(),
                source,
                drive,
            },
        ));
    }
    best.map(|(_, fs)| fs)
}

/// Adds the drive's or filesystem's identity to a target description (and
/// to the further targets'), as the kernel shows them now.
pub fn describe(info: &mut TargetInfo) {
    let path = Path::new(&info.path);
    match info.kind {
        results::schema::TargetKind::BlockDevice => info.drive = drive_of_path(path),
        results::schema::TargetKind::File => info.filesystem = filesystem_of(path),
    }
    for other in &mut info.others {
        describe(other);
    }
}

/// Replaces the hashed serials of `info` (and its further targets) with the
/// serials as the devices report them (`--keep-serial`).
pub fn keep_serial(info: &mut TargetInfo) {
    let unhashed = |d: &mut DriveIdentity| {
        let dir = Path::new("/sys/class/block").join(&d.name);
        if let Ok(dir) = std::fs::canonicalize(dir) {
            d.serial = raw_serial(&dir);
        }
    };
    if let Some(d) = info.drive.as_mut() {
        unhashed(d);
    }
    if let Some(d) = info.filesystem.as_mut().and_then(|f| f.drive.as_mut()) {
        unhashed(d);
    }
    for other in &mut info.others {
        keep_serial(other);
    }
}

/// The machine: host name, kernel, CPUs (count and model), memory.
pub fn host_info() -> HostInfo {
    let read = |p: &str| read_trimmed(Path::new(p)).unwrap_or_default();
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    let memory_bytes = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model,
        memory_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_hash_to_a_short_stable_digest() {
        let h = hash_serial("S4EWNX0R123456");
        assert!(h.starts_with("sha256:"));
        assert_eq!(h.len(), "sha256:".len() + 16);
        assert_eq!(h, hash_serial("S4EWNX0R123456"));
        assert_ne!(h, hash_serial("S4EWNX0R123457"));
        assert!(!h.contains("S4EW"));
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape_mount_field("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_mount_field("/plain"), "/plain");
        assert_eq!(unescape_mount_field("/x\\"), "/x\\");
    }

    #[test]
    fn a_file_in_the_temp_dir_has_a_filesystem() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let fs = filesystem_of(&f).expect("every file is on a mounted filesystem");
        assert!(!fs.fs_type.is_empty());
        assert!(std::fs::canonicalize(&f)
            .unwrap()
            .starts_with(&fs.mount_point));
    }

    #[test]
    fn the_host_has_a_kernel_cpus_and_memory() {
        let h = host_info();
        assert!(!h.kernel.is_empty());
        assert!(h.cpus >= 1);
        assert!(h.memory_bytes.unwrap_or(0) > 0);
    }
}
