//! `convert` refuses, with one clear message and a failing exit status, what
//! used to write an empty trace and exit 0: a `--device` or `--volume` that
//! matches no device of the input (the message lists the devices there are,
//! with their I/O counts), and a `--skip-bad` that leaves no I/O.

use crate::support::{blktrace_issue_on, tracemark};
use std::fs;
use std::path::Path;
use std::process::Output;

/// Two devices: 8:0 with two I/Os, 8:16 with one.
const TWO_DEVICES: &str = "\
  8,0    1        1     0.000000000   100  Q   R 2048 + 8 [app]
  8,0    1        2     0.000001000   100  D   R 2048 + 8 [app]
  8,16   1        3     0.000002000   100  D   W 64 + 8 [app]
  8,0    1        4     0.000003000   100  D   R 4096 + 8 [app]
  8,0    1        5     0.000100000     0  C   R 2048 + 8 [0]
";

fn convert(dir: &Path, input: &str, args: &[&str]) -> Output {
    let path = dir.join("in.txt");
    fs::write(&path, input).unwrap();
    tracemark()
        .arg("convert")
        .arg(&path)
        .arg("-o")
        .arg(dir.join("out.tmt"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn a_device_that_matches_nothing_fails_and_lists_the_devices() {
    let dir = tempfile::tempdir().unwrap();
    let out = convert(dir.path(), TWO_DEVICES, &["--device", "8:32"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--device 8:32 matches no device of the input")
            && err.contains("8:0 (2 I/Os), 8:16 (1 I/Os)"),
        "{err}"
    );
    assert!(!dir.path().join("out.tmt").exists());

    let out = convert(dir.path(), TWO_DEVICES, &["--volume", "3"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--volume 3 (device 0:3) matches no device"),
        "{err}"
    );

    // A device that is there converts.
    let out = convert(dir.path(), TWO_DEVICES, &["--device", "8:16", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn skip_bad_that_leaves_no_io_fails() {
    let dir = tempfile::tempdir().unwrap();
    let bad = "\
  8,0    1        1     0.000000000   100  D   R 2048 +
  8,0    1        2     0.000001000   100  D   R 99999999999999999999 + 8 [app]
";
    let out = convert(dir.path(), bad, &["--skip-bad", "--format", "blkparse"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no I/O left: --skip-bad skipped 2 bad line(s)") && err.contains("in.txt:1"),
        "{err}"
    );
    assert!(!dir.path().join("out.tmt").exists());
}

/// One blktrace v7 record (native little-endian): a 4 KiB read of 8:0 issued
/// (`D`) at `time_ns`.
fn blktrace_issue(seq: u32, time_ns: u64, sector: u64) -> Vec<u8> {
    blktrace_issue_on(0, seq, time_ns, sector)
}

fn blktrace_file(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut bytes = Vec::new();
    for i in 0..4u32 {
        bytes.extend(blktrace_issue(i + 1, u64::from(i) * 1000, u64::from(i) * 8));
    }
    fs::write(&path, bytes).unwrap();
    path
}

fn run(args: &[&std::ffi::OsStr], stdin: Option<&Path>) -> Output {
    let mut cmd = tracemark();
    cmd.arg("convert").args(args);
    if let Some(file) = stdin {
        cmd.stdin(fs::File::open(file).unwrap());
    }
    cmd.output().unwrap()
}

/// What the user did wrong, said in their terms: binary on standard input, a
/// text file among binary ones or after a text one, a directory or missing
/// name (with the NAME.blktrace.N convention), an archive tracemark does not
/// read (named, its bytes not printed).
#[test]
fn input_mistakes_get_a_message_that_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out_tmt = d.join("out.tmt");
    let o = out_tmt.as_os_str();
    let bin = blktrace_file(d, "sda.blktrace.0");
    let text = d.join("log.txt");
    fs::write(&text, TWO_DEVICES).unwrap();
    let dash = std::ffi::OsStr::new("-");
    let flag = std::ffi::OsStr::new("-o");

    // The set converts by itself (the fixture is valid).
    let ok = run(&[bin.as_os_str(), flag, o], None);
    assert!(ok.status.success(), "{}", stderr(&ok));

    let cases: Vec<(Output, &str)> = vec![
        (
            run(&[dash, flag, o], Some(&bin)),
            "standard input is blktrace binary, which is read from files",
        ),
        (
            run(&[bin.as_os_str(), text.as_os_str(), flag, o], None),
            "log.txt: is blkparse text, but",
        ),
        (
            run(&[text.as_os_str(), bin.as_os_str(), flag, o], None),
            "sda.blktrace.0: is blktrace binary, but",
        ),
        (
            run(&[d.as_os_str(), flag, o], None),
            "is a directory, and not the prefix NAME of a blktrace capture",
        ),
        (
            run(&[d.join("nope").as_os_str(), flag, o], None),
            "nope: no such file, and not the prefix NAME of a blktrace capture (its per-CPU files are NAME.blktrace.0",
        ),
    ];
    for (out, gist) in &cases {
        let err = stderr(out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(gist), "wanted `{gist}` in: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let dir_err = stderr(&cases[3].0);
    assert!(
        dir_err.contains("it holds the capture(s)") && dir_err.contains("/sda"),
        "{dir_err}"
    );

    let zip = d.join("t.zip");
    let mut bytes = b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec();
    bytes.extend((0..200u8).map(|b| b.wrapping_mul(37) | 0x80));
    fs::write(&zip, &bytes).unwrap();
    let out = run(
        &[
            std::ffi::OsStr::new("--format"),
            std::ffi::OsStr::new("blkparse"),
            zip.as_os_str(),
            flag,
            o,
        ],
        None,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("t.zip: is a zip archive") && err.contains("unzip -p"),
        "{err}"
    );
    assert!(!err.contains('\u{FFFD}'), "{err}");
}

/// A `#` column header above blkparse text is detected and skipped.
#[test]
fn comment_lines_above_blkparse_text_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("#Maj,Mn CPU  Seq  Time  PID  Act RWBS\n{TWO_DEVICES}");
    let out = convert(dir.path(), &text, &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(" 3 I/Os from blkparse input"));
    let out = convert(dir.path(), &text, &["--format", "blkparse", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A per-CPU file of CPU `cpu` with 4 I/Os from `start_ns`, 1 ms apart.
fn cpu_file(dir: &Path, name: &str, cpu: u32, start_ns: u64) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut bytes = Vec::new();
    for i in 0..4u32 {
        let t = start_ns + u64::from(i) * 1_000_000;
        bytes.extend(blktrace_issue_on(
            cpu,
            i + 1,
            t,
            u64::from(cpu * 1000 + i * 8),
        ));
    }
    fs::write(&path, bytes).unwrap();
    path
}

/// Files that cannot be one capture: the same CPU of the same device in two
/// files (two dumps, or one twice) is refused; a gap in the per-CPU
/// numbering, or files that do not overlap in time, are warned of.
#[test]
fn inputs_that_cannot_be_one_capture_are_refused_or_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = d.join("out.tmt");
    let convert_files = |files: &[&Path]| {
        let mut cmd = tracemark();
        cmd.arg("convert").args(files).arg("-o").arg(&o).arg("-q");
        cmd.output().unwrap()
    };

    // Two dumps holding CPU 1 of 8:0 each, both from time 0.
    let a = cpu_file(d, "a.dump", 1, 0);
    let b = cpu_file(d, "b.dump", 1, 500);
    let out = convert_files(&[&a, &b]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("a.dump and")
            && err.contains("b.dump both hold events of CPU 1 on device 8:0"),
        "{err}"
    );

    // A set with .0 and .2 but no .1: converted, with a warning naming .1.
    let s0 = cpu_file(d, "sda.blktrace.0", 0, 0);
    let s2 = cpu_file(d, "sda.blktrace.2", 2, 300);
    let out = convert_files(&[&d.join("sda")]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: ")
            && err.contains("sda.blktrace.N: the set has no file .1 below .2"),
        "{err}"
    );
    let out = convert_files(&[&s0, &s2]);
    assert!(
        stderr(&out).contains("no file .1 below .2"),
        "{}",
        stderr(&out)
    );

    // The per-CPU files of one capture overlap in time: no warning.
    fs::remove_file(&s2).unwrap();
    let _ = cpu_file(d, "sda.blktrace.1", 1, 300);
    let out = convert_files(&[&d.join("sda")]);
    assert!(
        out.status.success() && stderr(&out).is_empty(),
        "{}",
        stderr(&out)
    );

    // A file that starts an hour after the other ended.
    let late = cpu_file(d, "late.dump", 3, 3_600_000_000_000);
    let out = convert_files(&[&s0, &late]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("late.dump starts 3600.0 s after") && err.contains("do not overlap in time"),
        "{err}"
    );
}

/// Two blkparse texts of separate captures, each from time 0 (read one after
/// the other as text inputs are): refused at the second file's first line as
/// an input out of time order.
#[test]
fn two_text_captures_from_time_zero_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..50u32 {
        let t = f64::from(i) * 0.1;
        text.push_str(&format!("  8,0 1 {i} {t:.9} 5 D R {} + 8 [x]\n", i * 8));
    }
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    fs::write(&a, &text).unwrap();
    fs::write(&b, &text).unwrap();
    let out = tracemark()
        .arg("convert")
        .args([&a, &b])
        .arg("-o")
        .arg(dir.path().join("out.tmt"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("b.txt:1: time goes backwards by 4.9") && err.contains("not in time order"),
        "{err}"
    );
}

/// A dataset merged from two sources out of step by 2.5 s (all of one
/// volume's requests of a stretch, then the other's): refused by default with
/// a message that names the line and points at `--reorder-window`, and put in
/// time order, every request kept, with a wide enough window.
#[test]
fn a_dataset_out_of_step_by_more_than_a_second_needs_a_wider_reorder_window() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("device_id,opcode,offset,length,timestamp\n");
    let base = 1_577_808_000_000_000u64;
    // Volume 0 from 0 to 5 s, then volume 1 from 2.5 s, then volume 0 again.
    for i in 0..6u64 {
        text += &format!("0,R,{},4096,{}\n", i * 4096, base + i * 1_000_000);
    }
    for i in 0..4u64 {
        text += &format!(
            "1,W,{},4096,{}\n",
            i * 8192,
            base + 2_500_000 + i * 1_000_000
        );
    }
    for i in 6..9u64 {
        text += &format!("0,R,{},4096,{}\n", i * 4096, base + i * 1_000_000);
    }
    let out = convert(dir.path(), &text, &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("in.txt:8"), "{err}");
    assert!(err.contains("--reorder-window"), "{err}");

    let out = convert(dir.path(), &text, &["--reorder-window", "3s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = tracemark()
        .args(["export", "--to", "csv"])
        .arg(dir.path().join("out.tmt"))
        .output()
        .unwrap();
    assert!(csv.status.success());
    let times: Vec<u64> = String::from_utf8(csv.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(times.len(), 13);
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert_eq!(times[3], 2_500_000_000, "{times:?}");
}

/// The refusals above, asked of the library: each says its kind, so a caller
/// acts on it without reading the message.
#[test]
fn the_library_names_the_kind_of_each_refusal() {
    use recorder::convert::{convert, ConvertOptions};
    use recorder::UsageKind;
    use trace_format::{DeviceId, Nanos};

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out.tmt");
    let bin = blktrace_file(d, "sda.blktrace.0");
    let text = d.join("log.txt");
    fs::write(&text, TWO_DEVICES).unwrap();
    let bad = d.join("bad.txt");
    fs::write(
        &bad,
        "  8,0    1        1     0.000000000   100  D   R 2048 +\n",
    )
    .unwrap();
    let zip = d.join("t.zip");
    fs::write(&zip, b"PK\x03\x04\x14\x00\x00\x00\x08\x00 and the rest").unwrap();
    let a = cpu_file(d, "a.dump", 1, 0);
    let b = cpu_file(d, "b.dump", 1, 500);
    let defaults = ConvertOptions::default();
    let kind = |inputs: &[&Path], output: &Path, opts: &ConvertOptions| {
        let inputs: Vec<_> = inputs.iter().map(|p| p.to_path_buf()).collect();
        match convert(&inputs, output, opts) {
            Ok(_) => panic!("{inputs:?} converted"),
            Err(e) => e
                .usage_kind()
                .unwrap_or_else(|| panic!("not a usage error: {e}")),
        }
    };
    assert_eq!(kind(&[], &out, &defaults), UsageKind::NoInputs);
    assert_eq!(
        kind(&[&bin, &text], &out, &defaults),
        UsageKind::MixedFormats
    );
    assert_eq!(
        kind(&[&text, &bin], &out, &defaults),
        UsageKind::MixedFormats
    );
    assert_eq!(kind(&[d], &out, &defaults), UsageKind::NotAnInput);
    assert_eq!(
        kind(&[&d.join("nope")], &out, &defaults),
        UsageKind::NotAnInput
    );
    assert_eq!(kind(&[&a, &b], &out, &defaults), UsageKind::SeveralCaptures);
    assert_eq!(kind(&[&text], &text, &defaults), UsageKind::BadOutput);
    assert_eq!(kind(&[&text], d, &defaults), UsageKind::BadOutput);
    let blkparse = ConvertOptions {
        format: recorder::formats::Format::from_name("blkparse"),
        ..ConvertOptions::default()
    };
    assert_eq!(
        kind(&[&zip], &out, &blkparse),
        UsageKind::UnreadableContainer
    );
    let backwards = ConvertOptions {
        from: Some(Nanos(2_000)),
        to: Some(Nanos(1_000)),
        ..ConvertOptions::default()
    };
    assert_eq!(
        kind(&[&text], &out, &backwards),
        UsageKind::ConflictingOptions
    );
    let elsewhere = ConvertOptions {
        device: Some(DeviceId {
            major: 8,
            minor: 32,
        }),
        ..ConvertOptions::default()
    };
    assert_eq!(kind(&[&text], &out, &elsewhere), UsageKind::NoSuchDevice);
    let skip_bad = ConvertOptions {
        skip_bad: true,
        ..blkparse.clone()
    };
    assert_eq!(kind(&[&bad], &out, &skip_bad), UsageKind::NoIo);
    assert!(!out.exists());
}
