//! The write refusal follows the data, not the name: with ext4 mounted from
//! one loop device over an image, every other way to those bytes is refused
//! for writing — a second loop device over the same image, that loop
//! device's partition, the image file itself (also by a hard link or a
//! symlink), and a file that is an active swap file. Each test checks with
//! `e2fsck -fn` that the filesystem is untouched, and a control shows the
//! same target is accepted once nothing uses it (so the refusal is not blanket).

use crate::support::devices::LoopDevice;
use crate::support::mount::Mount;
use crate::support::replay::*;
use crate::support::{require_root, require_tool, require_tools};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use trace_format::Op;

/// Swap on a file, turned off on drop.
struct SwapFile(PathBuf);

impl Drop for SwapFile {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
    }
}

fn ready() -> bool {
    require_root() && require_tools(&["losetup", "mkfs.ext4", "mount", "e2fsck"])
}

fn writing_trace(dir: &Path) -> PathBuf {
    let recs: Vec<_> = (0..64u64)
        .map(|i| rec(i * 50, Op::Write, (i % 16) * MIB, 64 * KIB))
        .collect();
    let p = dir.join("writes.tmt");
    write_trace(&p, "writes", &recs);
    p
}

fn replay_onto(dir: &Path, target: &Path, allow_write: bool) -> Output {
    let trace = writing_trace(dir);
    let mut args = vec![
        trace.to_str().unwrap().to_string(),
        "--target".into(),
        target.to_str().unwrap().to_string(),
        "--mode".into(),
        "compressed".into(),
        "--passes".into(),
        "1".into(),
    ];
    if allow_write {
        args.push("--allow-write".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    replay(dir, &args)
}

fn assert_refused(out: &Output, words: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a write to in-use data ran: {err}");
    assert!(err.contains(words), "message lacks '{words}': {err}");
    assert!(err.contains("never writes to a device in use"), "{err}");
}

/// `e2fsck -fn` finds the filesystem on `dev` clean (exit 0).
fn assert_clean(dev: &Path) {
    let out = Command::new("e2fsck").arg("-fn").arg(dev).output().unwrap();
    assert!(
        out.status.success(),
        "e2fsck -fn {}: {}{}",
        dev.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn mkfs(dev: &Path) {
    let out = Command::new("mkfs.ext4")
        .arg("-qF")
        .arg(dev)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sparse_image(path: &Path, mib: u64) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(mib << 20)
        .unwrap();
}

#[test]
fn a_mounted_image_is_refused_by_every_other_name() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("img.bin");
    sparse_image(&image, 64);
    mkfs(&image);
    let a = LoopDevice::over(&image, false).unwrap();
    let b = LoopDevice::over(&image, false).unwrap();
    {
        let mnt = Mount::new([&a.path], &dir.path().join("mnt"));
        std::fs::write(mnt.0.join("precious"), b"data").unwrap();
        assert!(Command::new("sync").status().unwrap().success());

        // The second loop device over the same image, even with --allow-write.
        assert_refused(
            &replay_onto(dir.path(), &b.path, true),
            &format!("shares its backing file {}", image.display()),
        );
        // The image itself, by its name, a hard link and a symlink (no
        // --allow-write needed for files: the refusal must still come).
        let hard = dir.path().join("hard.bin");
        std::fs::hard_link(&image, &hard).unwrap();
        let soft = dir.path().join("soft.bin");
        std::os::unix::fs::symlink(&image, &soft).unwrap();
        for name in [&image, &hard, &soft] {
            assert_refused(
                &replay_onto(dir.path(), name, true),
                &format!(
                    "backs loop device {}, where it is mounted at",
                    a.path.display()
                ),
            );
        }
        assert_eq!(std::fs::read(mnt.0.join("precious")).unwrap(), b"data");
    }
    assert_clean(&image);
    // Attached but unused, the image is still refused (its loop devices'
    // users would read stale data); detached, it is an ordinary file.
    assert_refused(&replay_onto(dir.path(), &image, false), "is attached");
    drop(a);
    drop(b);
    // Detached, it is a file with data tracemark did not write: written
    // only when given up with --allow-write.
    let out = replay_onto(dir.path(), &image, false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("that tracemark did not make"), "{err}");
    let out = replay_onto(dir.path(), &image, true);
    assert!(
        out.status.success(),
        "control: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_second_loop_devices_partition_is_refused() {
    if !ready() || !require_tool("sfdisk") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.bin");
    sparse_image(&image, 64);
    let mut sfdisk = Command::new("sfdisk")
        .arg("-q")
        .arg(&image)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    sfdisk
        .stdin
        .take()
        .unwrap()
        .write_all(b"start=2048, type=83\n")
        .unwrap();
    assert!(sfdisk.wait().unwrap().success());
    let a = LoopDevice::over(&image, true).unwrap();
    let a1 = a.first_partition(2048).unwrap();
    mkfs(&a1);
    let b = LoopDevice::over(&image, true).unwrap();
    let b1 = b.first_partition(2048).unwrap();
    {
        let _mnt = Mount::new([&a1], &dir.path().join("mnt"));
        assert_refused(
            &replay_onto(dir.path(), &b1, true),
            &format!("shares its backing file {}", image.display()),
        );
        assert_refused(
            &replay_onto(dir.path(), &b.path, true),
            "shares its backing file",
        );
    }
    assert_clean(&a1);
}

#[test]
fn an_active_swap_file_is_refused() {
    if !require_root() || !require_tools(&["mkswap", "swapon"]) {
        return;
    }
    // Under the current directory's filesystem, not a tmpfs (no swap files there).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let swap = dir.path().join("swapfile");
    let f = std::fs::File::create(&swap).unwrap();
    f.set_len(16 << 20).unwrap();
    // Swap files must not be sparse: write it out.
    std::fs::write(&swap, vec![0u8; 16 << 20]).unwrap();
    drop(f);
    let mut perms = std::fs::metadata(&swap).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o600);
    std::fs::set_permissions(&swap, perms).unwrap();
    assert!(Command::new("mkswap")
        .arg("-q")
        .arg(&swap)
        .status()
        .unwrap()
        .success());
    let on = Command::new("swapon").arg(&swap).output().unwrap();
    if !on.status.success() {
        crate::support::skip(&format!(
            "swapon refused a swap file here: {}",
            String::from_utf8_lossy(&on.stderr)
        ));
        return;
    }
    let _swap = SwapFile(swap.clone());
    let before = std::fs::read(&swap).unwrap();
    assert_refused(
        &replay_onto(dir.path(), &swap, false),
        "is an active swap file",
    );
    assert_eq!(
        std::fs::read(&swap).unwrap(),
        before,
        "the swap file was written"
    );
}

/// A drive stacked on another loop device (drive -> medium -> image, as the
/// validity study's throttled drives are) is a target like any other while
/// nothing uses either; its bytes are refused once the medium, or a second
/// loop device over the medium, is mounted.
#[test]
fn a_loop_device_over_a_loop_device_is_checked_through_the_stack() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("medium.bin");
    sparse_image(&image, 64);
    let medium = LoopDevice::over(&image, false).unwrap();
    let drive = LoopDevice::over(&medium.path, false).unwrap();
    let out = replay_onto(dir.path(), &drive.path, true);
    assert!(
        out.status.success(),
        "a stacked drive nobody uses was refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    mkfs(&drive.path);
    let other = LoopDevice::over(&medium.path, false).unwrap();
    {
        let _mnt = Mount::new([&other.path], &dir.path().join("mnt"));
        assert_refused(
            &replay_onto(dir.path(), &drive.path, true),
            &format!(
                "it is a loop device over {}, and it backs loop device {}, and it is mounted at",
                medium.path.display(),
                other.path.display()
            ),
        );
    }
    assert_clean(&other.path);
    drop(other);
    {
        let _mnt = Mount::new([&medium.path], &dir.path().join("mnt2"));
        assert_refused(
            &replay_onto(dir.path(), &drive.path, true),
            &format!("it is a loop device over {}", medium.path.display()),
        );
    }
}
