//! Whether writing a target would write data that something else is using,
//! following the data rather than the name: a block device and its
//! partitions (mounted, swap, held by device-mapper or md), a partition's
//! whole disk, and, through loop devices, every other name of the same bytes.
//! Two loop devices over one image file are the same data; so are a loop
//! device and its backing file; so is a file and the loop device it backs.
//!
//! Identities are numbers, never paths: block devices by MAJ:MIN, files by
//! (device, inode), a loop device's backing file by what the kernel reports
//! for it (`LOOP_GET_STATUS64`), so hard links, symlinks, other device nodes
//! and renamed images are all caught.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A file's identity: the device it lives on and its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev: (u32, u32),
    pub ino: u64,
}

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: (libc::major(meta.dev()), libc::minor(meta.dev())),
            ino: meta.ino(),
        }
    }
}

/// What a loop device reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LoopBacking {
    /// A regular file (its identity, and its path as the kernel names it).
    File(FileId, String),
    /// A block device (loop over a device node).
    Device((u32, u32), String),
}

/// An attached loop device.
#[derive(Debug, Clone)]
struct LoopDevice {
    /// `/dev/loopN`.
    path: PathBuf,
    dev: (u32, u32),
    backing: LoopBacking,
}

/// Every attached loop device and what backs it.
fn attached_loops() -> Vec<LoopDevice> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.starts_with("loop") {
            continue;
        }
        let sys = e.path();
        let Some(dev) = std::fs::read_to_string(sys.join("dev"))
            .ok()
            .and_then(|s| parse_dev(s.trim()))
        else {
            continue;
        };
        let Ok(backing_path) = std::fs::read_to_string(sys.join("loop/backing_file")) else {
            continue; // not attached
        };
        let backing_path = backing_path.trim().to_string();
        let path = PathBuf::from("/dev").join(&name);
        if let Some(backing) = loop_backing(&path, &backing_path) {
            out.push(LoopDevice { path, dev, backing });
        }
    }
    out
}

/// The kernel's own record of a loop device's backing file (the device and
/// inode it holds open), or, when the node cannot be queried, the sysfs path.
fn loop_backing(node: &Path, sysfs_path: &str) -> Option<LoopBacking> {
    #[repr(C)]
    struct LoopInfo64 {
        lo_device: u64,
        lo_inode: u64,
        lo_rdevice: u64,
        lo_offset: u64,
        lo_sizelimit: u64,
        lo_number: u32,
        lo_encrypt_type: u32,
        lo_encrypt_key_size: u32,
        lo_flags: u32,
        lo_file_name: [u8; 64],
        lo_crypt_name: [u8; 64],
        lo_encrypt_key: [u8; 32],
        lo_init: [u64; 2],
    }
    const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;
    let stat_path = || {
        // The sysfs path: exact unless the file was renamed or replaced since.
        let meta = std::fs::metadata(sysfs_path).ok()?;
        Some(if meta.file_type().is_block_device() {
            LoopBacking::Device(
                (libc::major(meta.rdev()), libc::minor(meta.rdev())),
                sysfs_path.to_string(),
            )
        } else {
            LoopBacking::File(FileId::of(&meta), sysfs_path.to_string())
        })
    };
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(node)
    else {
        return stat_path();
    };
    // SAFETY: an all-zero loop_info64 is valid; the ioctl fills it.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    use std::os::fd::AsRawFd;
    // SAFETY: LOOP_GET_STATUS64 writes one loop_info64.
    if unsafe { libc::ioctl(f.as_raw_fd(), LOOP_GET_STATUS64 as _, &mut info) } != 0 {
        return stat_path();
    }
    // The kernel reports the device in the user-space encoding (as stat does).
    let dev = (libc::major(info.lo_device), libc::minor(info.lo_device));
    let id = FileId {
        dev,
        ino: info.lo_inode,
    };
    // A device node as backing: its identity is the device it names.
    match stat_path() {
        Some(LoopBacking::Device(rdev, p)) => Some(LoopBacking::Device(rdev, p)),
        Some(LoopBacking::File(found, p)) if found == id => Some(LoopBacking::File(id, p)),
        // Renamed, deleted or replaced: the kernel's identity is the truth.
        _ => Some(LoopBacking::File(id, sysfs_path.to_string())),
    }
}

/// Whether the kernel refuses exclusive access to a block device (it is
/// mounted, swapped on, or claimed by a driver or program): opens it
/// read-only with `O_EXCL`, which touches no data.
fn claimed(path: &Path) -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL | libc::O_NONBLOCK)
        .open(path)
        .err()
        .is_some_and(|e| e.raw_os_error() == Some(libc::EBUSY))
}

fn dev_node(dev: (u32, u32)) -> PathBuf {
    let uevent = std::fs::read_to_string(format!("/sys/dev/block/{}:{}/uevent", dev.0, dev.1))
        .unwrap_or_default();
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(|n| PathBuf::from("/dev").join(n))
        .unwrap_or_else(|| PathBuf::from(format!("/dev/block/{}:{}", dev.0, dev.1)))
}

/// The whole disk of a partition, `None` for a whole disk.
fn parent_disk(dev: (u32, u32)) -> Option<(u32, u32)> {
    let sys = PathBuf::from(format!("/sys/dev/block/{}:{}", dev.0, dev.1));
    if !sys.join("partition").exists() {
        return None;
    }
    std::fs::read_to_string(sys.join("../dev"))
        .ok()
        .and_then(|s| parse_dev(s.trim()))
}

/// Why writing block device `path` (`major:minor`) would write data in use:
/// the device, its partitions, its whole disk, and every other name of its
/// bytes through loop devices (a second loop device over the same image, the
/// partition of one, a loop device over this device).
pub fn block_device_refusal(path: &Path, major: u32, minor: u32) -> Option<String> {
    block_device_refusal_from(path, (major, minor), &mut Vec::new())
}

/// `seen`: the devices on the way here. A device met again is the one a
/// caller is checking (a loop device over `dev` that is the target itself,
/// say), not another user of the bytes.
fn block_device_refusal_from(
    path: &Path,
    dev: (u32, u32),
    seen: &mut Vec<(u32, u32)>,
) -> Option<String> {
    if seen.contains(&dev) {
        return None;
    }
    if seen.len() > 8 {
        return Some("its loop devices nest too deep to check".into());
    }
    seen.push(dev);
    if let Some(why) = busy_reason(path, dev.0, dev.1) {
        return Some(why);
    }
    let root = match parent_disk(dev) {
        Some(parent) => {
            let node = dev_node(parent);
            if let Some(why) = busy_reason_of_one(&node, parent) {
                return Some(format!("its whole disk {}: {why}", node.display()));
            }
            parent
        }
        None => dev,
    };
    let loops = attached_loops();
    // Loop devices over this device (or its disk): their users write here too.
    for l in &loops {
        if let LoopBacking::Device(d, _) = &l.backing {
            if *d == dev || *d == root {
                if let Some(why) = block_device_refusal_from(&l.path, l.dev, seen) {
                    // "the device" of the reason is that loop device.
                    let why = match why.strip_prefix("the device ") {
                        Some(rest) => format!("it {rest}"),
                        None => why,
                    };
                    return Some(format!(
                        "it backs loop device {}, and {why}",
                        l.path.display()
                    ));
                }
            }
        }
    }
    // This device is a loop device (or a partition of one): every other
    // name of its backing file.
    let me = loops.iter().find(|l| l.dev == root)?;
    match &me.backing {
        LoopBacking::Device(d, p) => block_device_refusal_from(&dev_node(*d), *d, seen)
            .map(|why| format!("it is a loop device over {p}, and {why}")),
        LoopBacking::File(id, p) => {
            for other in loops.iter().filter(|l| l.dev != root) {
                if other.backing_file() != Some(*id) {
                    continue;
                }
                if let Some(why) = loop_in_use(other) {
                    return Some(format!(
                        "it shares its backing file {p} with loop device {}, {why}",
                        other.path.display()
                    ));
                }
            }
            file_use_outside_loops(*id).map(|why| format!("its backing file {p} {why}"))
        }
    }
}

impl LoopDevice {
    fn backing_file(&self) -> Option<FileId> {
        match self.backing {
            LoopBacking::File(id, _) => Some(id),
            LoopBacking::Device(..) => None,
        }
    }
}

/// Why another loop device is in use: mounted, swap, held, a partition of it
/// in use, or claimed exclusively by anyone.
fn loop_in_use(l: &LoopDevice) -> Option<String> {
    if let Some(why) = busy_reason(&l.path, l.dev.0, l.dev.1) {
        return Some(format!("where {}", why.replacen("the device", "it", 1)));
    }
    claimed(&l.path).then(|| "which is in use (the kernel refuses exclusive access)".into())
}

/// Uses of a file that are not through a loop device: an active swap file,
/// or a filesystem image mounted directly (file-backed mounts).
fn file_use_outside_loops(id: FileId) -> Option<String> {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for line in swaps.lines().skip(1) {
        let mut fields = line.split_whitespace();
        let (Some(name), Some("file")) = (fields.next(), fields.next()) else {
            continue;
        };
        let name = unescape_octal(name);
        if std::fs::metadata(&name).is_ok_and(|m| FileId::of(&m) == id) {
            return Some("is an active swap file".into());
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mountinfo.lines() {
        let Some(source) = line
            .split(" - ")
            .nth(1)
            .and_then(|rest| rest.split(' ').nth(1))
        else {
            continue;
        };
        if !source.starts_with('/') {
            continue;
        }
        let source = unescape_octal(source);
        let same = std::fs::metadata(&source)
            .is_ok_and(|m| m.file_type().is_file() && FileId::of(&m) == id);
        if same {
            let at = line.split(' ').nth(4).unwrap_or("?");
            return Some(format!("is mounted as a filesystem image at {at}"));
        }
    }
    None
}

/// Why writing regular file `file` (opened as `path`) would write data in
/// use: it backs an attached loop device (whose users see its bytes), is an
/// active swap file, or is mounted as an image.
pub fn file_refusal(file: &File) -> Option<String> {
    let id = FileId::of(&file.metadata().ok()?);
    let backed: Vec<LoopDevice> = attached_loops()
        .into_iter()
        .filter(|l| l.backing_file() == Some(id))
        .collect();
    // Name a loop device in use first, else any attached one.
    for l in &backed {
        if let Some(why) = loop_in_use(l) {
            return Some(format!("backs loop device {}, {why}", l.path.display()));
        }
    }
    if let Some(l) = backed.first() {
        return Some(format!(
            "backs loop device {}, which is attached (detach it with losetup -d first)",
            l.path.display()
        ));
    }
    file_use_outside_loops(id)
}

/// Undoes the octal escapes of /proc/swaps and mountinfo (`\040` for a space).
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why one device alone (not its partitions) is in use.
fn busy_reason_of_one(path: &Path, dev: (u32, u32)) -> Option<String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    check_one(
        Path::new("/sys/dev/block"),
        &mountinfo,
        &swaps,
        path,
        dev,
        "the device",
    )
}

/// Why the device (or one of its partitions) is in use, if it is: mounted,
/// used as swap, or held by another driver (device-mapper, md, ...).
pub fn busy_reason(path: &Path, major: u32, minor: u32) -> Option<String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    busy_reason_in(
        Path::new("/sys/dev/block"),
        &mountinfo,
        &swaps,
        path,
        major,
        minor,
    )
}

/// [`busy_reason`] over a given sysfs `dev/block` directory and the texts
/// of `/proc/self/mountinfo` and `/proc/swaps` (tests feed it fakes).
fn busy_reason_in(
    sys_dev_block: &Path,
    mountinfo: &str,
    swaps: &str,
    path: &Path,
    major: u32,
    minor: u32,
) -> Option<String> {
    let sys_dir = |a: u32, b: u32| sys_dev_block.join(format!("{a}:{b}"));
    let mut devs = vec![(major, minor, path.to_path_buf())];
    let dir = sys_dir(major, minor);
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.join("partition").exists() {
                if let Some((a, b)) = std::fs::read_to_string(p.join("dev"))
                    .ok()
                    .and_then(|s| parse_dev(s.trim()))
                {
                    devs.push((a, b, PathBuf::from("/dev").join(e.file_name())));
                }
            }
        }
    }
    for (i, (a, b, dev_path)) in devs.iter().enumerate() {
        let what = if i == 0 {
            "the device".to_string()
        } else {
            format!("its partition {}", dev_path.display())
        };
        if let Some(why) = check_one(sys_dev_block, mountinfo, swaps, dev_path, (*a, *b), &what) {
            return Some(why);
        }
    }
    None
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Why one block device is in use: mounted (by number or by source path),
/// swap, or held; `what` names it in the sentence.
fn check_one(
    sys_dev_block: &Path,
    mountinfo: &str,
    swaps: &str,
    dev_path: &Path,
    dev: (u32, u32),
    what: &str,
) -> Option<String> {
    let (a, b) = (&dev.0, &dev.1);
    let sys_dir = |a: u32, b: u32| sys_dev_block.join(format!("{a}:{b}"));
    let canon = std::fs::canonicalize(dev_path).unwrap_or_else(|_| dev_path.to_path_buf());
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let by_number = fields.get(2).and_then(|d| parse_dev(d)) == Some((*a, *b));
        let source = line
            .split(" - ")
            .nth(1)
            .and_then(|rest| rest.split(' ').nth(1))
            .map(PathBuf::from);
        let by_source = source
            .map(|s| std::fs::canonicalize(&s).unwrap_or(s) == canon)
            .unwrap_or(false);
        if by_number || by_source {
            let at = fields.get(4).copied().unwrap_or("?");
            return Some(format!("{what} is mounted at {at}"));
        }
    }
    for line in swaps.lines().skip(1) {
        if let Some(first) = line.split_whitespace().next() {
            if std::fs::canonicalize(first)
                .map(|p| p == canon)
                .unwrap_or(false)
            {
                return Some(format!("{what} is in use as swap"));
            }
        }
    }
    let holders = sys_dir(*a, *b).join("holders");
    if let Ok(mut entries) = std::fs::read_dir(&holders) {
        if let Some(Ok(h)) = entries.next() {
            return Some(format!(
                "{what} is held by {}",
                h.file_name().to_string_lossy()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holders, mounted partitions and swap, on a fake sysfs tree: a real
    /// holder needs device-mapper or md, which not every test kernel has.
    #[test]
    fn busy_reasons_from_holders_partitions_and_swap() {
        let root = tempfile::tempdir().unwrap();
        let sys = root.path();
        let dev = Path::new("/nonexistent/loop9");
        std::fs::create_dir_all(sys.join("7:9/holders")).unwrap();
        std::fs::create_dir_all(sys.join("7:9/loop9p1")).unwrap();
        std::fs::write(sys.join("7:9/loop9p1/partition"), "1\n").unwrap();
        std::fs::write(sys.join("7:9/loop9p1/dev"), "259:4\n").unwrap();
        std::fs::create_dir_all(sys.join("259:4/holders")).unwrap();
        let swaps = "Filename Type Size Used Priority\n";
        assert_eq!(busy_reason_in(sys, "", swaps, dev, 7, 9), None);

        // a holder of the device itself
        std::fs::create_dir_all(sys.join("7:9/holders/dm-3")).unwrap();
        let why = busy_reason_in(sys, "", swaps, dev, 7, 9).unwrap();
        assert_eq!(why, "the device is held by dm-3");
        std::fs::remove_dir(sys.join("7:9/holders/dm-3")).unwrap();

        // a holder of its partition
        std::fs::create_dir_all(sys.join("259:4/holders/md0")).unwrap();
        let why = busy_reason_in(sys, "", swaps, dev, 7, 9).unwrap();
        assert!(
            why.contains("partition /dev/loop9p1 is held by md0"),
            "{why}"
        );
        std::fs::remove_dir(sys.join("259:4/holders/md0")).unwrap();

        // its partition mounted (matched by device number)
        let mi = "36 25 259:4 / /mnt/data rw,relatime shared:1 - ext4 /dev/whatever rw\n";
        let why = busy_reason_in(sys, mi, swaps, dev, 7, 9).unwrap();
        assert!(
            why.contains("partition /dev/loop9p1 is mounted at /mnt/data"),
            "{why}"
        );
        // the device mounted
        let mi = "36 25 7:9 / /srv rw - xfs /dev/loop9 rw\n";
        let why = busy_reason_in(sys, mi, swaps, dev, 7, 9).unwrap();
        assert_eq!(why, "the device is mounted at /srv");
    }

    #[test]
    fn parse_dev_reads_major_minor() {
        assert_eq!(parse_dev("7:3"), Some((7, 3)));
        assert_eq!(parse_dev("x"), None);
    }

    #[test]
    fn octal_escapes_are_undone() {
        assert_eq!(unescape_octal("/a\\040b"), "/a b");
        assert_eq!(unescape_octal("/plain"), "/plain");
        assert_eq!(unescape_octal("/end\\04"), "/end\\04");
    }
}
