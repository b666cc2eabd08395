//! The identity of what a result was measured on, read from sysfs and
//! /proc: a block device's model, firmware, serial (hashed), geometry,
//! queue limits, scheduler and transport; the filesystem under a file
//! target; the host's CPU and memory. Everything is best effort: a field
//! the kernel does not show is left out, never guessed.

pub use results::identity::hash_serial;
use results::schema::{DriveIdentity, FilesystemInfo};
use results::schema::{HostInfo, TargetInfo};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Where the devices are read from: the kernel's `/sys` (the tests give a
/// tree of the same shape).
const SYSFS: &str = "/sys";

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn read_number(path: &Path) -> Option<u64> {
    read_trimmed(path)?.parse().ok()
}

/// The whole disk's sysfs directory for device `major:minor` (a partition's
/// parent), resolved, under `sys`.
fn disk_dir(sys: &Path, major: u32, minor: u32) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(sys.join(format!("dev/block/{major}:{minor}"))).ok()?;
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

/// Device `major:minor`'s identity (its whole disk's, for a partition),
/// the serial hashed; None when sysfs does not know it.
pub fn drive_identity(major: u32, minor: u32) -> Option<DriveIdentity> {
    drive_identity_in(Path::new(SYSFS), major, minor)
}

/// [`drive_identity`] read from the sysfs tree at `sys`.
fn drive_identity_in(sys: &Path, major: u32, minor: u32) -> Option<DriveIdentity> {
    let dir = disk_dir(sys, major, minor)?;
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
        wwn: read_trimmed(&dir.join("wwid"))
            .or_else(|| read_trimmed(&dir.join("device/wwid")))
            .map(|w| hash_serial(&w)),
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
    keep_serial_in(Path::new(SYSFS), info)
}

/// [`keep_serial`] reading the devices from the sysfs tree at `sys`.
fn keep_serial_in(sys: &Path, info: &mut TargetInfo) {
    let unhashed = |d: &mut DriveIdentity| {
        let dir = sys.join("class/block").join(&d.name);
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
        keep_serial_in(sys, other);
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

    /// A sysfs tree of the kernel's shape under `sys`: a SATA disk `sda`
    /// (8:0, serial in the VPD page 0x80) with a partition `sda1` (8:1), a
    /// virtio disk `vdb` (254:16, a `serial` file), an NVMe namespace
    /// `nvme0n1` (259:0, the controller's `serial`), and a loop device
    /// `loop3` (7:3, no serial).
    fn fake_sysfs(sys: &Path) {
        use std::os::unix::fs::symlink;
        let write = |path: PathBuf, text: &[u8]| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        let disk = |devpath: &str, name: &str, majmin: &str| -> PathBuf {
            let dir = sys.join(devpath).join(name);
            write(dir.join("size"), b"976773168\n");
            write(dir.join("queue/logical_block_size"), b"512\n");
            write(dir.join("queue/physical_block_size"), b"4096\n");
            write(dir.join("queue/rotational"), b"0\n");
            write(dir.join("queue/scheduler"), b"none [mq-deadline] kyber\n");
            std::fs::create_dir_all(sys.join("dev/block")).unwrap();
            std::fs::create_dir_all(sys.join("class/block")).unwrap();
            symlink(&dir, sys.join("dev/block").join(majmin)).unwrap();
            symlink(&dir, sys.join("class/block").join(name)).unwrap();
            dir
        };
        let sda = disk(
            "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block",
            "sda",
            "8:0",
        );
        write(sda.join("device/model"), b"Samsung SSD 870\n");
        write(sda.join("device/rev"), b"SVT02B6Q\n");
        let mut page = vec![0u8, 0x80, 0, 16];
        page.extend_from_slice(b"  S6PNNS0T1234X ");
        write(sda.join("device/vpd_pg80"), &page);
        write(sda.join("sda1/partition"), b"1\n");
        symlink(sda.join("sda1"), sys.join("dev/block/8:1")).unwrap();
        let vdb = disk(
            "devices/pci0000:00/0000:00:05.0/virtio2/block",
            "vdb",
            "254:16",
        );
        write(vdb.join("serial"), b"vol-0abc\n");
        let nvme = disk(
            "devices/pci0000:00/0000:00:06.0/nvme/nvme0",
            "nvme0n1",
            "259:0",
        );
        write(nvme.join("device/serial"), b"PHLJ123400AB1P0F \n");
        write(nvme.join("device/model"), b"INTEL SSDPEKKF256G8L\n");
        disk("devices/virtual/block", "loop3", "7:3");
    }

    fn block_target(path: &str, drive: Option<DriveIdentity>) -> TargetInfo {
        TargetInfo {
            path: path.into(),
            kind: results::schema::TargetKind::BlockDevice,
            size_bytes: 0,
            model: None,
            logical_block_size: 512,
            direct_io: true,
            io_path: None,
            others: Vec::new(),
            drive,
            filesystem: None,
        }
    }

    #[test]
    fn serials_are_stored_hashed_and_kept_only_when_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = tmp.path();
        fake_sysfs(sys);
        // A partition reports its whole disk, the serial hashed.
        let sda = drive_identity_in(sys, 8, 1).unwrap();
        assert_eq!(sda.name, "sda");
        assert_eq!(sda.model.as_deref(), Some("Samsung SSD 870"));
        assert_eq!(sda.firmware.as_deref(), Some("SVT02B6Q"));
        assert_eq!(sda.transport.as_deref(), Some("sata"));
        assert_eq!(sda.scheduler.as_deref(), Some("mq-deadline"));
        assert_eq!(sda.capacity_bytes, 976_773_168 * 512);
        assert_eq!(sda.serial, Some(hash_serial("S6PNNS0T1234X")));
        let vdb = drive_identity_in(sys, 254, 16).unwrap();
        assert_eq!(vdb.serial, Some(hash_serial("vol-0abc")));
        assert_eq!(vdb.transport.as_deref(), Some("virtio"));
        let nvme = drive_identity_in(sys, 259, 0).unwrap();
        assert_eq!(nvme.serial, Some(hash_serial("PHLJ123400AB1P0F")));
        assert_eq!(nvme.transport.as_deref(), Some("nvme"));
        let loop3 = drive_identity_in(sys, 7, 3).unwrap();
        assert_eq!(loop3.serial, None);
        assert!(drive_identity_in(sys, 8, 2).is_none());

        // Read again: the same hash, so the same drive key.
        let again = drive_identity_in(sys, 8, 0).unwrap();
        assert_eq!(again.serial, sda.serial);
        let hashed = block_target("/dev/sda1", Some(sda));
        let hashed_again = block_target("/dev/sda", Some(again));
        assert_eq!(hashed.drive_key(), hashed_again.drive_key());

        // --keep-serial: the serials as reported, in the further targets
        // too; a device without one keeps none.
        let mut kept = hashed.clone();
        kept.others = vec![
            block_target("/dev/nvme0n1", Some(nvme)),
            block_target("/dev/loop3", Some(loop3)),
        ];
        keep_serial_in(sys, &mut kept);
        let serial = |t: &TargetInfo| t.drive.as_ref().and_then(|d| d.serial.clone());
        assert_eq!(serial(&kept).as_deref(), Some("S6PNNS0T1234X"));
        assert_eq!(serial(&kept.others[0]).as_deref(), Some("PHLJ123400AB1P0F"));
        assert_eq!(serial(&kept.others[1]), None);
        // Kept or hashed, one drive groups as one on the leaderboard.
        assert_eq!(kept.drive_key(), hashed.drive_key());
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
