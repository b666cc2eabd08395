//! The public-dataset importers and compressed inputs, end to end through the
//! `tracemark` binary: a generated multi-volume Alibaba file converts to the
//! same records (same trace checksum) plain and in each of gzip, xz, zstd and
//! bzip2; `--volume` keeps one volume; unsorted rows within the reorder window
//! come out sorted; a compressed file forced through another text parser gives
//! a decoded error, not raw bytes. The shared samples (`../shared/samples`,
//! skipped when absent) convert identically compressed and plain, and the
//! CloudPhysics and MQSim samples match an independent count.

use std::io::Write;
use std::path::{Path, PathBuf};
use trace_format::RecordChecksum;
use trace_format::{Op, TraceFile};

/// Records of a trace and their checksum (what a result's `trace_id` holds).
fn checksum(trace: &Path) -> (u64, String) {
    let t = TraceFile::open(trace).unwrap_or_else(|e| panic!("{}: {e}", trace.display()));
    let mut sum = RecordChecksum::default();
    let mut n = 0;
    for r in t.records() {
        sum.add(&r.unwrap());
        n += 1;
    }
    (n, sum.hex())
}

fn convert(args: &[&str]) -> std::process::Output {
    crate::support::tracemark()
        .arg("convert")
        .args(args)
        .output()
        .expect("run tracemark")
}

fn convert_ok(input: &Path, output: &Path, extra: &[&str]) {
    let out = crate::support::tracemark()
        .arg("convert")
        .arg(input)
        .arg("-o")
        .arg(output)
        .arg("-q")
        .args(extra)
        .output()
        .expect("run tracemark");
    assert!(
        out.status.success(),
        "{}: {}",
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every compressed form of `data`, with the file name suffix it would have.
fn compressed_forms(data: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).unwrap();
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(data).unwrap();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    bz.write_all(data).unwrap();
    vec![
        ("gz", gz.finish().unwrap()),
        ("xz", xz.finish().unwrap()),
        ("zst", zstd::encode_all(data, 3).unwrap()),
        ("bz2", bz.finish().unwrap()),
    ]
}

/// An Alibaba-format file: 3 volumes, 4 KiB-64 KiB requests, times in µs
/// since the epoch, every 10th row 300 µs early (unsorted within the window).
fn alibaba_rows(n: u64) -> Vec<u8> {
    let mut text = String::new();
    let mut rng = trace_format::rng::WyRand::new(0x9e37_79b9_7f4a_7c15);
    for i in 0..n {
        let x = rng.next_u64();
        let volume = [0, 7, 42][(x % 3) as usize];
        let op = if x % 5 < 2 { 'W' } else { 'R' };
        let len = 4096 << (x % 5);
        let offset = (x >> 20) % (1 << 30) * 4096;
        let late = if i % 10 == 9 { 300 } else { 0 };
        let time = 1_577_808_000_000_000u64 + i * 100 - late;
        text.push_str(&format!("{volume},{op},{offset},{len},{time}\n"));
    }
    text.into_bytes()
}

#[test]
fn compressed_forms_convert_to_the_same_trace() {
    let dir = tempfile::tempdir().unwrap();
    let data = alibaba_rows(20_000);
    let plain = dir.path().join("io_traces.csv");
    std::fs::write(&plain, &data).unwrap();
    let plain_tmt = dir.path().join("plain.tmt");
    convert_ok(&plain, &plain_tmt, &[]);
    let (n, want) = checksum(&plain_tmt);
    assert_eq!(n, 20_000);
    let records: Vec<_> = TraceFile::open(&plain_tmt)
        .unwrap()
        .records()
        .map(Result::unwrap)
        .collect();
    assert!(
        records.windows(2).all(|w| w[0].time <= w[1].time),
        "records out of time order"
    );
    for (suffix, bytes) in compressed_forms(&data) {
        let input = dir.path().join(format!("io_traces.csv.{suffix}"));
        std::fs::write(&input, bytes).unwrap();
        let out = dir.path().join(format!("{suffix}.tmt"));
        convert_ok(&input, &out, &[]);
        assert_eq!(checksum(&out), (n, want.clone()), "{suffix}");
        // Also without the file name's hint, and with the format forced.
        let renamed = dir.path().join(format!("{suffix}.data"));
        std::fs::rename(&input, &renamed).unwrap();
        let forced = dir.path().join(format!("{suffix}-forced.tmt"));
        convert_ok(&renamed, &forced, &["--format", "alibaba"]);
        assert_eq!(checksum(&forced), (n, want.clone()), "{suffix} forced");
    }
}

#[test]
fn volume_keeps_one_volume() {
    let dir = tempfile::tempdir().unwrap();
    let data = alibaba_rows(3_000);
    let plain = dir.path().join("io_traces.csv");
    std::fs::write(&plain, &data).unwrap();
    let want: u64 = data
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"7,"))
        .count() as u64;
    assert!(want > 500);
    let out = dir.path().join("v7.tmt");
    convert_ok(&plain, &out, &["--volume", "7"]);
    let t = TraceFile::open(&out).unwrap();
    assert_eq!(t.summary().ios, want);
    let devices: Vec<String> = t
        .footer()
        .tail
        .devices
        .iter()
        .map(|d| d.id.to_string())
        .collect();
    assert_eq!(devices, vec!["0:7".to_string()]);
}

#[test]
fn compressed_input_forced_through_another_parser_is_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let data = alibaba_rows(10);
    for (suffix, bytes) in compressed_forms(&data) {
        let input = dir.path().join(format!("t.{suffix}"));
        std::fs::write(&input, bytes).unwrap();
        let out = dir.path().join("t.tmt");
        let run = convert(&[
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--format",
            "blkparse",
        ]);
        assert!(!run.status.success(), "{suffix}");
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains(":1:"), "{suffix}: {err}");
        // The first row as text, not the compressed bytes.
        let first = String::from_utf8_lossy(data.split(|&b| b == b'\n').next().unwrap());
        assert!(err.contains(first.as_ref()), "{suffix}: {err}");
        assert!(!err.contains("\\x"), "{suffix}: {err}");
    }
}

#[test]
fn a_tar_archive_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let mut tar = vec![0u8; 1024];
    tar[..13].copy_from_slice(b"io_traces.csv");
    tar[257..263].copy_from_slice(b"ustar\0");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    let input = dir.path().join("2018-10-01-01.tgz");
    std::fs::write(&input, gz.finish().unwrap()).unwrap();
    let out = dir.path().join("x.tmt");
    let run = convert(&[input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("tar archive") && err.contains("2018-10-01-01.tgz"),
        "{err}"
    );
}

/// `../shared/samples` next to the repository, or `TRACEMARK_SAMPLES`.
fn samples_dir() -> PathBuf {
    match std::env::var_os("TRACEMARK_SAMPLES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/samples"),
    }
}

fn sample(folder: &str) -> Option<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(samples_dir().join(folder))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Some(files)
}

#[test]
fn every_compressed_sample_converts_like_the_plain_one() {
    let Some(_) = sample("") else {
        eprintln!("SKIP every_compressed_sample_converts_like_the_plain_one: no shared samples");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for folder in [
        "blkparse",
        "cloudphysics-vscsi",
        "mqsim-disksim-ascii",
        "fio-iolog",
        "windows-etw-wpa",
        "blktrace-binary",
    ] {
        for file in sample(folder).unwrap_or_default() {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            // One file of a per-CPU set is a capture of its own only as a whole
            // set; the single-file sample stands for binary input.
            if folder == "blktrace-binary" && !name.starts_with("takeoverjp") {
                continue;
            }
            let plain = dir.path().join(format!("{name}.tmt"));
            convert_ok(&file, &plain, &[]);
            let want = checksum(&plain);
            let data = std::fs::read(&file).unwrap();
            for (suffix, bytes) in compressed_forms(&data) {
                let input = dir.path().join(format!("{name}.{suffix}"));
                std::fs::write(&input, bytes).unwrap();
                let out = dir.path().join(format!("{name}.{suffix}.tmt"));
                convert_ok(&input, &out, &[]);
                assert_eq!(checksum(&out), want, "{name}.{suffix}");
                std::fs::remove_file(&input).unwrap();
            }
            checked += 1;
        }
    }
    assert!(checked >= 6, "only {checked} samples found");
}

/// Independent tallies (count, bytes) per op of the CloudPhysics and MQSim
/// samples by plain splitting, against the converted trace.
#[test]
fn dataset_samples_match_an_independent_count() {
    let Some(cloud) = sample("cloudphysics-vscsi") else {
        eprintln!("SKIP dataset_samples_match_an_independent_count: no shared samples");
        return;
    };
    let mqsim = sample("mqsim-disksim-ascii").unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    let cases = cloud
        .iter()
        .map(|p| (p, "cloudphysics"))
        .chain(mqsim.iter().map(|p| (p, "mqsim")));
    let mut checked = 0;
    for (path, format) in cases {
        let text = std::fs::read_to_string(path).unwrap();
        let mut want = [(0u64, 0u64); 2];
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (is_read, bytes) = if format == "cloudphysics" {
                let c: Vec<&str> = line.split(',').collect();
                if c[0] == "version" {
                    continue;
                }
                let read = match c[2] {
                    "28" | "08" | "a8" | "88" => true,
                    "2a" | "0a" | "aa" | "8a" => false,
                    other => panic!("op {other} in the sample"),
                };
                (read, c[3].parse::<u64>().unwrap())
            } else {
                let c: Vec<&str> = line.split_whitespace().collect();
                (c[4] == "1", c[3].parse::<u64>().unwrap() * 512)
            };
            let slot = &mut want[usize::from(!is_read)];
            slot.0 += 1;
            slot.1 += bytes;
        }
        let out = dir.path().join("s.tmt");
        let run = crate::support::tracemark()
            .arg("convert")
            .arg(path)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(
            String::from_utf8_lossy(&run.stdout).contains(&format!("from {format} input")),
            "{}: detected as {}",
            path.display(),
            String::from_utf8_lossy(&run.stdout)
        );
        let mut got = [(0u64, 0u64); 2];
        for r in TraceFile::open(&out).unwrap().records() {
            let r = r.unwrap();
            let slot = &mut got[usize::from(r.op != Op::Read)];
            slot.0 += 1;
            slot.1 += r.len.0;
        }
        assert_eq!(got, want, "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 2);
}

#[test]
fn split_by_volume_equals_one_conversion_per_volume() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("io_traces.csv");
    std::fs::write(&plain, alibaba_rows(6_000)).unwrap();
    let folder = dir.path().join("volumes");
    let run = convert(&[
        plain.to_str().unwrap(),
        "--split-by",
        "volume",
        "-o",
        folder.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "io_traces-vol0.tmt",
            "io_traces-vol42.tmt",
            "io_traces-vol7.tmt"
        ]
    );
    let mut total = 0;
    for volume in [0, 7, 42] {
        let one = dir.path().join(format!("one-{volume}.tmt"));
        convert_ok(&plain, &one, &["--volume", &volume.to_string()]);
        let split = folder.join(format!("io_traces-vol{volume}.tmt"));
        let (n, sum) = checksum(&split);
        assert_eq!((n, sum), checksum(&one), "volume {volume}");
        let t = TraceFile::open(&split).unwrap();
        let devices: Vec<String> = t
            .footer()
            .tail
            .devices
            .iter()
            .map(|d| d.id.to_string())
            .collect();
        assert_eq!(devices, vec![format!("0:{volume}")]);
        total += n;
    }
    assert_eq!(total, 6_000);
    // Combined with --volume it is refused, and a failed split leaves nothing,
    // not even the folder it made.
    let run = convert(&[
        plain.to_str().unwrap(),
        "--split-by",
        "volume",
        "--volume",
        "7",
        "-o",
        dir.path().join("v2").to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        b"0,R,0,4096,1577808000000000\n7,R,0,4096,1577808000000100\nbroken\n",
    )
    .unwrap();
    let out = dir.path().join("v3");
    let run = convert(&[
        bad.to_str().unwrap(),
        "--format",
        "alibaba",
        "--split-by",
        "volume",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("bad.csv:3"), "{err}");
    assert!(!out.exists(), "the folder the split made is left behind");
}

/// A SYSTOR '17-format file: two LUNs, response times (one in 7 unknown),
/// reads and writes.
#[cfg(feature = "parquet")]
fn systor_rows(n: u64) -> Vec<u8> {
    let mut text = String::from("Timestamp,Response,IOType,LUN,Offset,Size\n");
    for i in 0..n {
        let response = if i % 7 == 3 {
            String::new()
        } else {
            format!("0.{:06}", 100 + i % 900)
        };
        let op = if i % 3 == 0 { 'W' } else { 'R' };
        text.push_str(&format!(
            "1487065205.{:06},{response},{op},{},{},{}\n",
            i * 10,
            i % 2 * 4,
            (i * 7919 % 100_000) * 4096,
            4096 << (i % 4)
        ));
    }
    text.into_bytes()
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_round_trip_gives_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("lun.csv");
    std::fs::write(&csv, systor_rows(50_000)).unwrap();
    let a = dir.path().join("a.tmt");
    convert_ok(&csv, &a, &[]);
    let pq = dir.path().join("a.parquet");
    let run = crate::support::tracemark()
        .args(["export", a.to_str().unwrap(), "--to", "parquet", "-o"])
        .arg(&pq)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let b = dir.path().join("b.tmt");
    convert_ok(&pq, &b, &[]);
    let records = |p: &Path| -> Vec<_> {
        let t = TraceFile::open(p).unwrap();
        let devices: Vec<String> = t
            .footer()
            .tail
            .devices
            .iter()
            .map(|d| d.id.to_string())
            .collect();
        t.records()
            .map(|r| {
                let r = r.unwrap();
                (
                    r.time,
                    r.op,
                    r.offset,
                    r.len,
                    r.latency,
                    r.flags,
                    devices[usize::from(r.device)].clone(),
                )
            })
            .collect()
    };
    let (ra, rb) = (records(&a), records(&b));
    assert_eq!(ra.len(), 50_000);
    assert!(ra.iter().any(|r| r.4.is_none()) && ra.iter().any(|r| r.4.is_some()));
    assert!(ra == rb, "records differ after the Parquet round trip");
    assert_eq!(checksum(&a), checksum(&b));
}

/// DuckDB (from PyPI, installed by `.ci/run`) reads the exported file: its
/// counts and bytes equal `tracemark info --json`.
#[cfg(feature = "parquet")]
#[test]
fn parquet_export_reads_in_duckdb_like_info_says() {
    let have = std::process::Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        crate::support::skip("python3 cannot import duckdb (pip install duckdb)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("io_traces.csv");
    std::fs::write(&csv, alibaba_rows(30_000)).unwrap();
    let t = dir.path().join("t.tmt");
    convert_ok(&csv, &t, &[]);
    let pq = dir.path().join("t.parquet");
    let run = crate::support::tracemark()
        .args(["export", t.to_str().unwrap(), "--to", "parquet", "-o"])
        .arg(&pq)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let info = crate::support::tracemark()
        .args(["info", "--json"])
        .arg(&t)
        .output()
        .unwrap();
    assert!(info.status.success());
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let query = format!(
        "import duckdb; print(*duckdb.sql(\"select count(*), count(*) filter (where op='read'), count(*) filter (where op='write'), coalesce(sum(length) filter (where op='read'),0), coalesce(sum(length) filter (where op='write'),0), count(distinct device) from '{}'\").fetchall()[0])",
        pq.display()
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &query])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let key = |k: &str| {
        info[k]
            .as_u64()
            .unwrap_or_else(|| panic!("info --json has no {k}"))
    };
    assert_eq!(
        got,
        vec![
            key("ios"),
            key("reads"),
            key("writes"),
            key("read_bytes"),
            key("write_bytes"),
            3
        ]
    );
}
