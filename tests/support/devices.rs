//! Private block devices for one test: loop devices over image files and zram
//! devices made with `zram-control/hot_add`. Each is removed on drop (also
//! when the test fails); nothing assumes a device number or that a shared
//! device such as `/dev/zram0` is free.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A name no other device of this process (or another process) uses.
fn unique(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

/// `MAJ:MIN` of `/sys/block/NAME`.
fn sys_dev_id(name: &str) -> (u32, u32) {
    let dev = fs::read_to_string(format!("/sys/block/{name}/dev"))
        .unwrap_or_else(|e| panic!("/sys/block/{name}/dev: {e}"));
    let (a, b) = dev.trim().split_once(':').expect("MAJ:MIN");
    (a.parse().expect("major"), b.parse().expect("minor"))
}

/// A loop device over an image file, detached on drop (and the image removed
/// when the device made it).
pub struct LoopDevice {
    pub path: PathBuf,
    image: PathBuf,
    owns_image: bool,
}

impl LoopDevice {
    /// Creates a `size_mib` sparse image in `dir` and attaches it with direct I/O.
    pub fn new(dir: &Path, size_mib: u64) -> std::io::Result<LoopDevice> {
        let image = dir.join(format!("{}.img", unique("loop")));
        fs::File::create(&image)?.set_len(size_mib << 20)?;
        Self::attach(image, &[])
    }

    /// A loop device over an existing `image` the caller keeps (several loop
    /// devices may share it), with the kernel's partition scan when
    /// `partitions`. Buffered I/O, as plain `losetup` gives.
    pub fn over(image: &Path, partitions: bool) -> std::io::Result<LoopDevice> {
        let extra: &[&str] = if partitions { &["-P"] } else { &[] };
        Self::attach_with(image.to_path_buf(), "--direct-io=off", extra, false)
    }

    /// The device's first partition (`/dev/loopNp1`) from `start_sector` to
    /// the end of the device, waited for; added explicitly (BLKPG, `addpart`)
    /// where the kernel has no MBR parser (CONFIG_MSDOS_PARTITION off) and the
    /// scan finds nothing.
    pub fn first_partition(&self, start_sector: u64) -> std::io::Result<PathBuf> {
        let size: u64 = fs::read_to_string(format!("/sys/block/{}/size", self.name()))?
            .trim()
            .parse()
            .map_err(|e| std::io::Error::other(format!("{} size: {e}", self.name())))?;
        wait_for_partition(&self.path, start_sector, size.saturating_sub(start_sector))
    }

    /// Attaches `image` on the first free loop device. `losetup -f` can lose
    /// the free device it found to another process attaching at the same
    /// moment: tried again then.
    fn attach(image: PathBuf, extra: &[&str]) -> std::io::Result<LoopDevice> {
        Self::attach_with(image, "--direct-io=on", extra, true)
    }

    /// As [`LoopDevice::attach`]; `owns_image`: the image is removed with the
    /// device (or at once, when no device could be attached).
    fn attach_with(
        image: PathBuf,
        io: &str,
        extra: &[&str],
        owns_image: bool,
    ) -> std::io::Result<LoopDevice> {
        let mut last = String::new();
        for _ in 0..10 {
            let out = Command::new("losetup")
                .args(["-f", "--show", io])
                .args(extra)
                .arg(&image)
                .output()?;
            if out.status.success() {
                let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
                return Ok(LoopDevice {
                    path: PathBuf::from(path),
                    image,
                    owns_image,
                });
            }
            last = String::from_utf8_lossy(&out.stderr).to_string();
            std::thread::sleep(Duration::from_millis(50));
        }
        if owns_image {
            let _ = fs::remove_file(&image);
        }
        Err(std::io::Error::other(format!("losetup failed: {last}")))
    }

    /// A `size_mib` loop device (direct I/O) whose MBR holds one partition of
    /// `sectors` 512-byte sectors from `start_sector`; returns the device and
    /// the partition's node (`/dev/loopNp1`), waiting for the node to appear.
    pub fn with_partition(
        dir: &Path,
        size_mib: u64,
        start_sector: u32,
        sectors: u32,
    ) -> std::io::Result<(LoopDevice, PathBuf)> {
        let image = dir.join(format!("{}.img", unique("loop-part")));
        let mut mbr = [0u8; 512];
        let entry = &mut mbr[446..462];
        entry[1..4].copy_from_slice(&[0xfe, 0xff, 0xff]);
        entry[4] = 0x83;
        entry[5..8].copy_from_slice(&[0xfe, 0xff, 0xff]);
        entry[8..12].copy_from_slice(&start_sector.to_le_bytes());
        entry[12..16].copy_from_slice(&sectors.to_le_bytes());
        mbr[510] = 0x55;
        mbr[511] = 0xaa;
        fs::write(&image, mbr)?;
        fs::OpenOptions::new()
            .write(true)
            .open(&image)?
            .set_len(size_mib << 20)?;
        let dev = Self::attach(image, &["-P"])?;
        let part = wait_for_partition(&dev.path, u64::from(start_sector), u64::from(sectors))?;
        Ok((dev, part))
    }

    /// `MAJ:MIN` of the device.
    pub fn dev_id(&self) -> (u32, u32) {
        sys_dev_id(&self.name())
    }

    /// `loopN`.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .expect("a loop device path has a file name")
            .to_string_lossy()
            .to_string()
    }
}

/// `DEVp1`, waited for; added with `addpart` (`start_sector`, `sectors`)
/// when the kernel's partition scan has not made it after 200 ms.
fn wait_for_partition(dev: &Path, start_sector: u64, sectors: u64) -> std::io::Result<PathBuf> {
    let part = PathBuf::from(format!("{}p1", dev.display()));
    for attempt in 0..200 {
        if part.exists() {
            return Ok(part);
        }
        if attempt == 10 {
            let _ = Command::new("addpart")
                .arg(dev)
                .args(["1", &start_sector.to_string(), &sectors.to_string()])
                .status();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(std::io::Error::other(format!(
        "{} did not appear",
        part.display()
    )))
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
        // A device another process holds open for a moment (a concurrent
        // test run's tracemark looking at every loop device) is detached
        // only at its last close: wait until the kernel lets go of the file.
        let backing = format!("/sys/block/{}/loop/backing_file", self.name());
        for _ in 0..250 {
            if !Path::new(&backing).exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.owns_image {
            let _ = fs::remove_file(&self.image);
        }
    }
}

const ZRAM_CONTROL: &str = "/sys/class/zram-control";

/// A zram device of this test's own (`hot_add`), a RAM block device without
/// non-blocking I/O; reset and removed (`hot_remove`) on drop.
pub struct Zram {
    pub path: PathBuf,
    id: u32,
}

impl Zram {
    /// Whether the kernel can make zram devices (loading the module if needed).
    pub fn available() -> bool {
        if !Path::new(ZRAM_CONTROL).exists() {
            let _ = Command::new("modprobe").arg("zram").status();
        }
        Path::new(ZRAM_CONTROL).join("hot_add").exists()
    }

    /// A new `size_mib` zram device, its node waited for.
    pub fn new(size_mib: u64) -> std::io::Result<Zram> {
        let id: u32 = fs::read_to_string(Path::new(ZRAM_CONTROL).join("hot_add"))?
            .trim()
            .parse()
            .map_err(|e| std::io::Error::other(format!("hot_add: {e}")))?;
        // From here on the device is ours: removed on drop whatever fails.
        let zram = Zram {
            path: PathBuf::from(format!("/dev/zram{id}")),
            id,
        };
        fs::write(zram.sys().join("disksize"), format!("{size_mib}M"))?;
        for _ in 0..250 {
            if zram.path.exists() {
                return Ok(zram);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(std::io::Error::other(format!(
            "{} did not appear",
            zram.path.display()
        )))
    }

    fn sys(&self) -> PathBuf {
        PathBuf::from(format!("/sys/block/zram{}", self.id))
    }

    /// `zramN`.
    pub fn name(&self) -> String {
        format!("zram{}", self.id)
    }

    /// `MAJ:MIN` of the device.
    pub fn dev_id(&self) -> (u32, u32) {
        sys_dev_id(&self.name())
    }

    /// The fields of its `mm_stat` (the kernel's zram documentation names
    /// them: 0 `orig_data_size` bytes, 1 `compr_data_size`, ... 5
    /// `same_pages`).
    pub fn mm_stat(&self) -> Vec<u64> {
        fs::read_to_string(self.sys().join("mm_stat"))
            .unwrap()
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect()
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        // A process that just closed the device may hold it for a moment
        // (io_uring tears down asynchronously): reset and removal are
        // refused (EBUSY) until then.
        for _ in 0..100 {
            let _ = fs::write(self.sys().join("reset"), "1");
            if fs::write(
                Path::new(ZRAM_CONTROL).join("hot_remove"),
                self.id.to_string(),
            )
            .is_ok()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("warning: could not remove {}", self.path.display());
    }
}
