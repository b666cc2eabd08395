use super::*;
use std::os::unix::fs::{symlink, FileTypeExt};

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn writes_whole_and_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    write(&out, b"old").unwrap();
    write(&out, b"new").unwrap();
    assert_eq!(fs::read(&out).unwrap(), b"new");
    assert_eq!(entries(dir.path()), ["r.json"]);
}

#[test]
fn dropped_without_commit_keeps_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    write(&out, b"old").unwrap();
    let mut f = AtomicFile::create(&out).unwrap();
    f.write_all(b"half").unwrap();
    drop(f);
    let r = write_with(&out, |w| {
        w.write_all(b"half")?;
        Err(io::Error::other("stopped"))
    });
    assert!(r.is_err());
    assert_eq!(fs::read(&out).unwrap(), b"old");
    assert_eq!(entries(dir.path()), ["r.json"]);
}

#[test]
fn a_symlink_is_followed_and_stays() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.tmt");
    write(&real, b"old").unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link.tmt");
    symlink("real.tmt", &link).unwrap();
    write(&link, b"new").unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&real).unwrap(), b"new");
    assert_eq!(fs::metadata(&real).unwrap().mode() & 0o7777, 0o600);
    // A dangling link: its target is created.
    let dangling = dir.path().join("d");
    symlink("made.json", &dangling).unwrap();
    write(&dangling, b"x").unwrap();
    assert_eq!(fs::read(dir.path().join("made.json")).unwrap(), b"x");
}

#[test]
fn special_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.path().join("to-null");
    symlink("/dev/null", &link).unwrap();
    for p in [
        dir.path().to_path_buf(),
        fifo.clone(),
        PathBuf::from("/dev/null"),
        link.clone(),
    ] {
        let e = write(&p, b"x").unwrap_err();
        assert!(matches!(e, OutputError::Special { .. }), "{p:?}: {e}");
        assert!(e.to_string().contains("refusing"), "{e}");
    }
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn a_long_name_works_and_a_too_long_one_is_refused_early() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join(format!("{}.json", "r".repeat(250)));
    write(&long, b"x").unwrap();
    assert_eq!(fs::read(&long).unwrap(), b"x");
    let too = dir.path().join("r".repeat(256));
    assert!(matches!(check(&too), Err(OutputError::NameTooLong { .. })));
    let missing = dir.path().join("no/such/dir/r.json");
    assert!(check(&missing).is_err());
}

#[test]
fn the_same_file_by_any_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tmt");
    fs::write(&input, b"trace").unwrap();
    let hard = dir.path().join("hard");
    fs::hard_link(&input, &hard).unwrap();
    let soft = dir.path().join("soft");
    symlink(&input, &soft).unwrap();
    let held = File::open(&input).unwrap();
    let proc_fd = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
    for out in [&input, &hard, &soft, &proc_fd] {
        let e = refuse_inputs(out, [&input], None).unwrap_err();
        assert!(matches!(e, OutputError::IsInput { .. }), "{out:?}");
        let e = refuse_inputs(out, [Path::new("/nonexistent")], Some(&input)).unwrap_err();
        assert!(matches!(e, OutputError::IsDatabase { .. }), "{out:?}");
    }
    let other = dir.path().join("other");
    refuse_inputs(&other, [&input], Some(&input)).unwrap();
    fs::write(&other, b"x").unwrap();
    refuse_inputs(&other, [&input], Some(&input)).unwrap();
    refuse_inputs(Path::new("-"), [&input], None).unwrap();
}

#[test]
fn a_database_not_made_yet_or_its_journal_is_refused_as_an_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let again = dir.path().join(".").join("results.db");
    let e = refuse_inputs(&again, [Path::new("/nonexistent")], Some(&db)).unwrap_err();
    assert!(matches!(e, OutputError::IsDatabase { .. }), "{e}");
    fs::write(&db, b"db").unwrap();
    let wal = dir.path().join("results.db-wal");
    fs::write(&wal, b"wal").unwrap();
    let link = dir.path().join("wal-link");
    symlink(&wal, &link).unwrap();
    let e = refuse_inputs(&link, [Path::new("/nonexistent")], Some(&db)).unwrap_err();
    assert!(matches!(e, OutputError::IsDatabase { .. }), "{e}");
    refuse_inputs(&dir.path().join("r.json"), [&db], Some(&db)).unwrap();
}

#[test]
fn two_outputs_of_one_command_that_are_one_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let via = dir.path().join("via");
    symlink(&sub, &via).unwrap();
    let json = sub.join("r.out");
    // Not made yet: the same folder and name by two paths.
    for other in [sub.join(".").join("r.out"), via.join("r.out")] {
        let e = refuse_same_outputs([json.as_path(), other.as_path()]).unwrap_err();
        assert!(
            matches!(e, OutputError::SameOutput { .. }),
            "{other:?}: {e}"
        );
    }
    // Made: a hard link is the same file too.
    fs::write(&json, b"x").unwrap();
    let hard = dir.path().join("hard");
    fs::hard_link(&json, &hard).unwrap();
    assert!(refuse_same_outputs([json.as_path(), hard.as_path()]).is_err());
    refuse_same_outputs([json.as_path(), sub.join("r.html").as_path()]).unwrap();
    refuse_same_outputs([Path::new("-"), Path::new("-")]).unwrap();
}

#[test]
fn a_killed_runs_temporary_is_swept_by_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let left = dir.path().join(".tmk-4194305-7-0.tmp");
    fs::write(&left, b"partial").unwrap();
    write(&dir.path().join("r.json"), b"x").unwrap();
    assert_eq!(entries(dir.path()), ["r.json"]);
}

#[test]
fn a_new_file_follows_the_umask_and_an_old_one_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    write(&out, b"a").unwrap();
    let mode = fs::metadata(&out).unwrap().mode() & 0o777;
    assert_eq!(mode & 0o022 & !0o644, 0, "{mode:o}");
    fs::set_permissions(&out, fs::Permissions::from_mode(0o640)).unwrap();
    write(&out, b"b").unwrap();
    assert_eq!(fs::metadata(&out).unwrap().mode() & 0o7777, 0o640);
}

/// Where the filesystem has no `O_TMPFILE` the temporary has a name: a
/// stop signal (default action) removes it before the process ends, and
/// the old file stays. Run in a child process of this test binary.
#[test]
fn a_stop_signal_removes_a_named_temporary() {
    if let Some(out) = std::env::var_os("OUTFILE_SIGNAL_CHILD") {
        let sig: i32 = std::env::var("OUTFILE_SIGNAL").unwrap().parse().unwrap();
        let mut f = AtomicFile::create_with(Path::new(&out), false, Replace::IfOurs).unwrap();
        f.write_all(b"half of the new").unwrap();
        // SAFETY: signals this process.
        unsafe { libc::kill(libc::getpid(), sig) };
        std::thread::sleep(std::time::Duration::from_secs(5));
        unreachable!("the signal ends the process");
    }
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        write(&out, b"old").unwrap();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        // No core file from SIGQUIT, and none in the source tree.
        // SAFETY: setrlimit is async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut child, || {
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                Ok(())
            });
        }
        let status = child
            .current_dir(dir.path().parent().unwrap())
            .args(["--exact", "tests::a_stop_signal_removes_a_named_temporary"])
            .env("OUTFILE_SIGNAL_CHILD", &out)
            .env("OUTFILE_SIGNAL", sig.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        assert_eq!(fs::read(&out).unwrap(), b"old");
        assert_eq!(entries(dir.path()), ["r.json"], "signal {sig}");
    }
}

/// A named temporary is removed when the write is dropped, and renamed
/// over the output on commit.
#[test]
fn a_named_temporary_is_whole_or_gone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    write(&out, b"old").unwrap();
    let mut f = AtomicFile::create_with(&out, false, Replace::IfOurs).unwrap();
    f.write_all(b"new").unwrap();
    assert_eq!(entries(dir.path()).len(), 2);
    drop(f);
    assert_eq!(entries(dir.path()), ["r.json"]);
    let mut f = AtomicFile::create_with(&out, false, Replace::IfOurs).unwrap();
    f.write_all(b"new").unwrap();
    f.commit().unwrap();
    assert_eq!(fs::read(&out).unwrap(), b"new");
    assert_eq!(entries(dir.path()), ["r.json"]);
}

/// tracemark replaces its own unchanged output and an empty file; a file it
/// did not write, one written since, and a copy of its output are refused
/// (before any bytes go anywhere) and kept; a move keeps the file its own.
#[test]
fn only_its_own_unchanged_output_is_replaced_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let refused = |path: &Path, why: NotOurs| match AtomicFile::create(path) {
        Err(OutputError::NotOurs { why: w, .. }) => assert_eq!(w, why, "{}", path.display()),
        Err(e) => panic!("{}: {e}", path.display()),
        Ok(_) => panic!("{} was accepted", path.display()),
    };

    write(&p("ours.json"), b"one").unwrap();
    write(&p("ours.json"), b"two").unwrap();
    assert_eq!(fs::read(p("ours.json")).unwrap(), b"two");

    fs::write(p("doc.txt"), b"the user's").unwrap();
    refused(&p("doc.txt"), NotOurs::Unmarked);
    assert!(check(&p("doc.txt")).is_err());
    assert_eq!(fs::read(p("doc.txt")).unwrap(), b"the user's");

    // Written in place since (same inode, new length or time).
    write(&p("edited.csv"), b"a,b\n").unwrap();
    let mut f = OpenOptions::new()
        .append(true)
        .open(p("edited.csv"))
        .unwrap();
    f.write_all(b"1,2\n").unwrap();
    drop(f);
    refused(&p("edited.csv"), NotOurs::Changed);

    // A copy keeping the attribute is another inode: the user's.
    fs::copy(p("ours.json"), p("copy.json")).unwrap();
    let value = xattr(&p("ours.json")).expect("the output carries its mark");
    set_xattr(&p("copy.json"), &value);
    refused(&p("copy.json"), NotOurs::Changed);

    // A move keeps inode, time and length: still tracemark's.
    fs::rename(p("ours.json"), p("moved.json")).unwrap();
    write(&p("moved.json"), b"three").unwrap();

    // An empty file holds nothing to lose.
    fs::write(p("empty"), b"").unwrap();
    write(&p("empty"), b"x").unwrap();

    // A link to a user's file is refused for its target, named as such.
    symlink("doc.txt", p("link")).unwrap();
    match write(&p("link"), b"x") {
        Err(e @ OutputError::NotOurs { .. }) => {
            let text = e.to_string();
            assert!(text.contains("doc.txt (the target of the link"), "{text}");
            assert!(text.contains("--overwrite"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fs::read(p("doc.txt")).unwrap(), b"the user's");

    // A file put there while the run worked is not replaced at commit.
    let mut late = AtomicFile::create(&p("late.json")).unwrap();
    late.write_all(b"new").unwrap();
    fs::write(p("late.json"), b"the user's, meanwhile").unwrap();
    assert!(matches!(late.commit(), Err(OutputError::NotOurs { .. })));
    assert_eq!(fs::read(p("late.json")).unwrap(), b"the user's, meanwhile");

    // tracemark's own cache and state files are replaced whatever is there.
    write_own(&p("doc.txt"), b"cache").unwrap();
    assert_eq!(fs::read(p("doc.txt")).unwrap(), b"cache");
}

#[test]
fn a_set_of_outputs_is_put_in_place_all_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    write(&p("a.tmt"), b"old a").unwrap();
    write(&p("b.tmt"), b"old b").unwrap();
    let set = |a: &[u8], b: &[u8]| {
        let mut fa = AtomicFile::create(&p("a.tmt")).unwrap();
        fa.write_all(a).unwrap();
        let mut fb = AtomicFile::create(&p("b.tmt")).unwrap();
        fb.write_all(b).unwrap();
        vec![fa, fb]
    };
    // A file of the user's put at the second output while the set was
    // written: refused, and the first output is not replaced either.
    let files = set(b"new a", b"new b");
    fs::remove_file(p("b.tmt")).unwrap();
    fs::write(p("b.tmt"), b"the user's").unwrap();
    assert!(matches!(
        AtomicFile::commit_all(files),
        Err(OutputError::NotOurs { .. })
    ));
    assert_eq!(fs::read(p("a.tmt")).unwrap(), b"old a");
    assert_eq!(fs::read(p("b.tmt")).unwrap(), b"the user's");
    assert_eq!(entries(dir.path()), ["a.tmt", "b.tmt"], "no temporary left");
    // Every output replaceable: all replaced, and each is tracemark's.
    write(&p("b.tmt"), b"old b").unwrap_err();
    fs::remove_file(p("b.tmt")).unwrap();
    write(&p("b.tmt"), b"old b").unwrap();
    AtomicFile::commit_all(set(b"new a", b"new b")).unwrap();
    assert_eq!(fs::read(p("a.tmt")).unwrap(), b"new a");
    assert_eq!(fs::read(p("b.tmt")).unwrap(), b"new b");
    assert_eq!(entries(dir.path()), ["a.tmt", "b.tmt"]);
    AtomicFile::commit_all(set(b"a again", b"b again")).unwrap();
    assert_eq!(fs::read(p("b.tmt")).unwrap(), b"b again");
}

fn xattr(path: &Path) -> Option<Vec<u8>> {
    match crate::xattr::get_at(path, c"user.tracemark.output") {
        crate::xattr::Attr::Value(v) => Some(v),
        _ => None,
    }
}

fn set_xattr(path: &Path, value: &[u8]) {
    let f = fs::File::open(path).unwrap();
    crate::xattr::set(&f, c"user.tracemark.output", value).unwrap();
}
