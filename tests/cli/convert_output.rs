//! Where `convert -o` writes: nothing is left by a killed conversion (the
//! trace is an unnamed temporary file until it is complete), a symbolic link
//! is followed, and a device node, FIFO or directory is refused, not replaced.

use crate::support::{skip, tracemark};
use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const LINES: &str = "  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kjournald]\n  8,0    3        2     0.000001000   697  D  WS 223490 + 8 [kjournald]\n  8,0    3        3     0.000101000     0  C  WS 223490 + 8 [0]\n";

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

/// Whether the filesystem of `dir` has `O_TMPFILE`.
fn has_tmpfile(dir: &Path) -> bool {
    let c = CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid path; the descriptor is closed at once.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_TMPFILE | libc::O_WRONLY, 0o600) };
    if fd < 0 {
        return false;
    }
    // SAFETY: fd was just opened.
    unsafe { libc::close(fd) };
    true
}

/// Whether process `pid` has a file open in `dir` (its output, named or not).
fn has_file_open_in(pid: u32, dir: &Path) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .any(|target| target.starts_with(dir))
}

#[test]
fn a_killed_conversion_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    fs::create_dir(&out_dir).unwrap();
    if !has_tmpfile(&out_dir) {
        skip("the filesystem of the temporary folder has no O_TMPFILE");
        return;
    }
    // Standard input stays open: the conversion waits for more input with
    // its output open, and is killed there.
    let mut child = tracemark()
        .args(["convert", "--format", "blkparse", "-", "-o"])
        .arg(out_dir.join("t.tmt"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(LINES.as_bytes()).unwrap();
    let start = Instant::now();
    while !has_file_open_in(child.id(), &out_dir) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "convert never opened its output"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    assert_eq!(entries(&out_dir), Vec::<String>::new());

    // The same conversion, not killed, writes the trace and nothing else.
    let mut child = tracemark()
        .args(["convert", "--format", "blkparse", "-", "-q", "-o"])
        .arg(out_dir.join("t.tmt"))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(LINES.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(entries(&out_dir), ["t.tmt"]);
}

#[test]
fn output_special_files_are_refused_and_links_followed() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, LINES).unwrap();
    let convert_to = |out: &Path| {
        tracemark()
            .arg("convert")
            .arg(&input)
            .arg("-q")
            .arg("-o")
            .arg(out)
            .output()
            .unwrap()
    };

    // A FIFO, directly or through a link: refused, and still a FIFO.
    let fifo = dir.path().join("fifo");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.path().join("fifo-link.tmt");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    for out in [&fifo, &link] {
        let o = convert_to(out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("{} is a FIFO", fifo.display()))
                && err.contains("refusing to replace it"),
            "{err}"
        );
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
    // A character device and a directory.
    let o = convert_to(Path::new("/dev/null"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("/dev/null is a character device"), "{err}");
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let o = convert_to(&sub);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("is a directory"), "{err}");
    assert!(sub.is_dir());

    // A link to a regular file: the file is written, the link stays a link.
    // (A file of the user's at the link's end is refused, and kept.)
    let real = dir.path().join("real.tmt");
    fs::write(&real, b"old").unwrap();
    let link = dir.path().join("link.tmt");
    std::os::unix::fs::symlink("real.tmt", &link).unwrap();
    let o = convert_to(&link);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("is a file tracemark did not write"), "{err}");
    assert_eq!(fs::read(&real).unwrap(), b"old");
    fs::write(&real, b"").unwrap();
    let o = convert_to(&link);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::read(&real).unwrap().len() > 3);
    let info = tracemark().arg("info").arg(&link).output().unwrap();
    assert!(info.status.success());
}
