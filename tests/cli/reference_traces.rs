//! The reference traces: every trace in traces/ opens and verifies, its `info`
//! matches the tables in traces/README.md, the profiles (quick, full, data)
//! name them, the default profile runs end to end from the traces built into
//! the binary, producing a score and a JSON result with every field
//! results/README.md lists, and each profile's idle policy is applied and
//! recorded.

use crate::support;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use trace_format::TraceFile;

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

/// Rows of the traces/README.md table, keyed by trace name: the cells by
/// column title.
fn readme_rows() -> HashMap<String, HashMap<String, String>> {
    let text = std::fs::read_to_string(traces_dir().join("README.md")).expect("traces/README.md");
    let mut rows = HashMap::new();
    let mut titles: Option<Vec<String>> = None;
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            titles = None;
            continue;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        match &titles {
            None if cells.first().is_some_and(|c| c == "trace") => titles = Some(cells),
            None => {}
            Some(_) if cells.iter().all(|c| c.chars().all(|ch| "-: ".contains(ch))) => {}
            Some(t) => {
                // A trace may have a row in several tables (what it did; its
                // figures): the cells of all of them, by column title.
                let name = cells[0].trim_matches('`').to_string();
                rows.entry(name)
                    .or_insert_with(HashMap::new)
                    .extend(t.iter().cloned().zip(cells.clone()));
            }
        }
    }
    rows
}

fn tmt_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(traces_dir())
        .expect("traces/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tmt"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_trace_verifies_and_matches_the_readme_table() {
    let files = tmt_files();
    assert!(!files.is_empty(), "no reference traces in traces/");
    let rows = readme_rows();
    let mut total_bytes = 0;
    for path in &files {
        let f = TraceFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        f.verify()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        total_bytes += f.file_len();
        let h = f.header();
        let s = f.summary();
        assert_eq!(
            h.source_format,
            "capture",
            "{}: not a live capture",
            path.display()
        );
        assert!(s.ios > 0, "{}: empty", path.display());
        let row = rows.get(&h.name).unwrap_or_else(|| {
            panic!(
                "trace {} ({}) is not in traces/README.md's table",
                h.name,
                path.display()
            )
        });
        let num = |col: &str| -> f64 {
            let cell = row
                .get(col)
                .unwrap_or_else(|| panic!("README table has no '{col}' column"));
            cell.replace([',', '%', ' '], "")
                .parse()
                .unwrap_or_else(|_| panic!("{}: '{col}' cell '{cell}'", h.name))
        };
        assert_eq!(num("I/Os") as u64, s.ios, "{}: I/Os", h.name);
        assert!(
            (num("read MB") - s.read_bytes as f64 / 1e6).abs() <= 0.051,
            "{}: read MB",
            h.name
        );
        assert!(
            (num("write MB") - s.write_bytes as f64 / 1e6).abs() <= 0.051,
            "{}: write MB",
            h.name
        );
        assert!(
            (num("duration s") - s.duration.as_secs_f64()).abs() <= 0.051,
            "{}: duration",
            h.name
        );
    }
    assert!(
        total_bytes < 30 << 20,
        "reference traces take {total_bytes} bytes, over 30 MB"
    );
}

/// The profiles' suite files, by name.
const PROFILES: [&str; 3] = ["quick", "full", "data"];

fn load_profile(name: &str) -> replayer::suite_file::SuiteFile {
    let path = traces_dir().join(format!("{name}.toml"));
    replayer::suite_file::SuiteFile::load_allow_empty(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Every profile's traces exist, verify (every record decoded, every
/// checksum) and have rows in traces/README.md; full has every trace; quick
/// and data are parts of full; a profile without traces is refused with a
/// message that says so.
#[test]
fn every_profile_names_traces_that_verify_and_are_in_the_readme() {
    let rows = readme_rows();
    let full = load_profile("full");
    let full_files: Vec<PathBuf> = full.traces.iter().map(|t| t.file.clone()).collect();
    assert_eq!(
        {
            let mut v = full_files.clone();
            v.sort();
            v
        },
        tmt_files(),
        "the full profile must name every trace in traces/, once"
    );
    assert!(
        !load_profile("quick").traces.is_empty(),
        "quick names no traces"
    );
    for name in PROFILES {
        let suite = load_profile(name);
        assert!(suite.idle_cap.is_some(), "{name}: no idle_cap");
        for t in &suite.traces {
            let f = TraceFile::open(&t.file)
                .unwrap_or_else(|e| panic!("{name}: {}: {e}", t.file.display()));
            f.verify()
                .unwrap_or_else(|e| panic!("{name}: {}: {e}", t.file.display()));
            assert_eq!(f.header().name, t.name, "{name}: {}", t.file.display());
            assert!(!t.category.is_empty(), "{name}: {}: no category", t.name);
            assert!(
                !t.description.is_empty(),
                "{name}: {}: no description",
                t.name
            );
            assert!(
                rows.contains_key(&t.name),
                "{name}: {} not in traces/README.md",
                t.name
            );
            assert!(
                full_files.contains(&t.file),
                "{name}: {} not in full",
                t.name
            );
        }
        let cache = tempfile::tempdir().unwrap();
        let out = support::tracemark()
            .env("XDG_CACHE_HOME", cache.path())
            .args(["suite", "--verify", "--profile", name])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if suite.traces.is_empty() {
            assert!(!out.status.success());
            assert!(
                stderr.contains(&format!("profile {name} has no traces yet")),
                "{stderr}"
            );
        } else {
            assert!(out.status.success(), "{name}: {stderr}");
            assert_eq!(
                stdout.lines().filter(|l| l.contains(" ok ")).count(),
                suite.traces.len(),
                "{stdout}"
            );
        }
    }
}

#[test]
fn the_suite_runs_end_to_end_with_every_result_field() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    // Compressed and one pass keep CI short; the default profile (built into
    // the binary, written out to the cache) on the default scratch file in
    // the current directory, as in the README's first command.
    let cache = tempfile::tempdir().unwrap();
    let out = support::tracemark()
        .current_dir(dir.path())
        .env("XDG_CACHE_HOME", cache.path())
        .args(["suite", "--passes", "1", "--mode", "compressed", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "suite failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("suite (geometric mean)"), "{stdout}");
    assert!(dir.path().join("tracemark-scratch.bin").is_file());

    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for key in ["tool", "host", "target", "options", "traces", "suite"] {
        assert!(!v[key].is_null(), "result has no '{key}'");
    }
    // The mode is recorded once, in the options (schema version 3).
    assert_eq!(v["options"]["mode"], "compressed");
    assert!(v.get("mode").is_none(), "mode written twice");
    // Compressed mode asks for no idle cap and gets none: nothing to explain.
    assert!(v["options"]["idle_cap"].is_null());
    assert!(v["options"].get("idle_policy").is_none());
    assert!(idle_change(&v).is_none(), "{v}");
    for key in ["name", "version"] {
        assert!(v["tool"][key].is_string(), "tool.{key}");
    }
    for key in ["path", "kind", "size_bytes"] {
        assert!(!v["target"][key].is_null(), "target.{key}");
    }
    let suite = load_profile("quick");
    let traces = v["traces"].as_array().unwrap();
    assert_eq!(traces.len(), suite.traces.len());
    for (t, entry) in traces.iter().zip(&suite.traces) {
        assert_eq!(t["name"], entry.name.as_str());
    }
    let mut log_score = 0.0;
    for t in traces {
        for key in [
            "name",
            "passes",
            "score",
            "bandwidth_mb_s",
            "access_time_us",
            "playback_s",
            "busy_s",
            "read_bytes",
            "write_bytes",
            "ios",
            "latency_us",
            "fidelity",
        ] {
            assert!(!t[key].is_null(), "trace {} has no '{key}'", t["name"]);
        }
        let score = t["score"].as_f64().unwrap();
        let bw = t["bandwidth_mb_s"].as_f64().unwrap();
        let at = t["access_time_us"].as_f64().unwrap();
        assert!(score > 0.0 && bw > 0.0 && at > 0.0, "{t}");
        // One pass: the score is sqrt(bandwidth / access time in seconds).
        assert!(
            (score - (bw / (at / 1e6)).sqrt()).abs() / score < 1e-6,
            "{}",
            t["name"]
        );
        assert!(!t["fidelity"]["lateness_us"]["p99"].is_null());
        let lat = &t["latency_us"];
        assert!(!lat["read"]["p50"].is_null() || !lat["write"]["p50"].is_null());
        log_score += score.ln();
    }
    let geo = (log_score / traces.len() as f64).exp();
    let suite_score = v["suite"]["score"].as_f64().unwrap();
    assert!(
        (geo - suite_score).abs() / geo < 1e-6,
        "suite score {suite_score} vs geometric mean {geo}"
    );
    assert!(v["suite"]["bandwidth_mb_s"].as_f64().unwrap() > 0.0);
    assert!(v["suite"]["access_time_us"].as_f64().unwrap() > 0.0);
}

/// The recorded reason the run's idle cap is not the command line's, if it
/// is not.
fn idle_change(v: &serde_json::Value) -> Option<&serde_json::Value> {
    v["settings_changed"]
        .as_array()?
        .iter()
        .find(|c| c["setting"] == "idle_cap")
}

/// In realtime mode the suite caps idle periods at 1 s (the built-in
/// profiles' cap) unless told otherwise; `--keep-idle` keeps them whole.
#[test]
fn the_suite_caps_idle_by_default_and_keeps_it_when_asked() {
    use trace_format::*;
    let dir = tempfile::tempdir().unwrap();
    // Two bursts of reads 1.4 s apart: 1.4 s of idle in the original.
    let trace = dir.path().join("idle.tmt");
    let mut w = TraceWriter::new(
        std::fs::File::create(&trace).unwrap(),
        &TraceHeader::new("idle", "test"),
    )
    .unwrap();
    for i in 0..20u64 {
        let t = if i < 10 {
            i * 1000
        } else {
            1_400_000_000 + i * 1000
        };
        w.push(&IoRecord {
            time: Nanos(t),
            op: Op::Read,
            offset: Bytes(i * 4096),
            len: Bytes(4096),
            flags: Flags::NONE,
            latency: None,
            stream: None,
            device: 0,
        })
        .unwrap();
    }
    w.finish(&TraceTail::default()).unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        "[[trace]]\nname = \"idle\"\nfile = \"idle.tmt\"\ncategory = \"test\"\ndescription = \"two bursts\"\n",
    )
    .unwrap();
    let run = |extra: &[&str]| -> serde_json::Value {
        let json = dir.path().join("r.json");
        let out = support::tracemark()
            .current_dir(dir.path())
            .args(["suite", "--passes", "1", "--no-warmup", "--json"])
            .arg(&json)
            .arg("--suite")
            .arg(&suite)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
    };
    let capped = run(&[]);
    assert_eq!(capped["options"]["idle_cap"], 1_000_000_000);
    let why = format!(
        "suite file {} sets no idle_cap: the default",
        suite.display()
    );
    let change = idle_change(&capped).expect("the default cap is explained");
    assert_eq!(change["effective"], "1s");
    assert!(change.get("requested").is_none(), "{change}");
    assert_eq!(change["why"], why.as_str());
    let playback = capped["traces"][0]["playback_s"].as_f64().unwrap();
    assert!(playback < 1.2, "capped playback {playback} s");
    let whole = run(&["--keep-idle"]);
    assert!(whole["options"]["idle_cap"].is_null());
    assert!(idle_change(&whole).is_none(), "asked and had: {whole}");
    let playback = whole["traces"][0]["playback_s"].as_f64().unwrap();
    assert!(playback >= 1.4, "uncapped playback {playback} s");
    // The suite file's idle_cap is its default; the command line still wins.
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, format!("idle_cap = \"none\"\n{text}")).unwrap();
    let from_file = run(&[]);
    assert!(from_file["options"]["idle_cap"].is_null());
    let why = format!("suite file {}: idle_cap", suite.display());
    let change = idle_change(&from_file).expect("the suite file's cap is explained");
    assert_eq!(change["effective"], "none");
    assert_eq!(change["why"], why.as_str());
    let playback = from_file["traces"][0]["playback_s"].as_f64().unwrap();
    assert!(playback >= 1.4, "idle_cap = none: playback {playback} s");
    std::fs::write(&suite, format!("idle_cap = \"50ms\"\n{text}")).unwrap();
    let from_file = run(&[]);
    assert_eq!(from_file["options"]["idle_cap"], 50_000_000);
    let over = run(&["--idle-cap", "20ms"]);
    assert_eq!(over["options"]["idle_cap"], 20_000_000);
    // The command line wins over the suite file: nothing to explain.
    assert!(idle_change(&over).is_none(), "{over}");
    // One grammar: the same cap spelled as a suite file and as the command
    // line may spell it resolves to the same setting.
    std::fs::write(&suite, format!("idle_cap = \"1.5ms\"\n{text}")).unwrap();
    let from_file = run(&[]);
    let from_cli = run(&["--idle-cap", "0.0015"]);
    assert_eq!(from_file["options"]["idle_cap"], 1_500_000);
    assert_eq!(from_cli["options"]["idle_cap"], 1_500_000);
    assert_eq!(idle_change(&from_file).unwrap()["effective"], "1500us");
    assert!(idle_change(&from_cli).is_none());
    // A bad duration: one error, naming the file and line, or the flag.
    let fails = |extra: &[&str]| -> String {
        let out = support::tracemark()
            .current_dir(dir.path())
            .args(["suite", "--no-db", "--suite"])
            .arg(&suite)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(if extra.is_empty() { 1 } else { 2 })
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = fails(&["--idle-cap", "1.5 parsecs"]);
    assert!(e.contains("--idle-cap") && e.contains("parsecs"), "{e}");
    std::fs::write(&suite, format!("idle_cap = \"0ms\"\n{text}")).unwrap();
    let e = fails(&[]);
    assert!(
        e.contains("suite.toml") && e.contains("line 1") && e.contains("above zero"),
        "{e}"
    );
}

/// The README's tables are what `traces/capture/table.sh` prints from the
/// traces: every line of its output (headers and one row per trace of each
/// table) is in traces/README.md, so a recaptured trace with a stale row fails.
#[test]
fn the_readme_tables_are_what_table_sh_prints() {
    let files = tmt_files();
    let out = std::process::Command::new("bash")
        .arg(traces_dir().join("capture/table.sh"))
        .args(&files)
        .env("TRACEMARK", env!("CARGO_BIN_EXE_tracemark"))
        .output()
        .expect("bash traces/capture/table.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "table.sh failed: {stderr}");
    let table = String::from_utf8(out.stdout).unwrap();
    let readme = std::fs::read_to_string(traces_dir().join("README.md")).unwrap();
    let readme_lines: std::collections::HashSet<&str> = readme.lines().map(str::trim).collect();
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
    // Two tables: a header, a rule and a row per trace each.
    assert_eq!(rows.len(), 2 * (2 + files.len()), "{table}");
    let missing: Vec<&str> = rows
        .iter()
        .copied()
        .filter(|l| !readme_lines.contains(l.trim()))
        .collect();
    assert!(
        missing.is_empty(),
        "traces/README.md lacks these lines of `traces/capture/table.sh traces/*.tmt` (rerun it and paste its tables):\n{}",
        missing.join("\n")
    );
}

/// Every trace of the quick profile (the suite a user runs first), and
/// every trace traces/README.md lists under "Task times", carries what makes
/// its task time a prediction that holds across drives: task marks (start
/// and done), the task's untraced time on the capture drive (the one the
/// README gives), and a calibration (a replay on the capture drive,
/// `tracemark calibrate`); a quick-profile trace also the task's CPU time.
/// Without them `suite` falls back to the capture's
/// own timing, which missed by up to 62.6 % in the validity study
/// (docs/validity.md).
#[test]
fn every_calibrated_trace_has_marks_its_readme_untraced_time_and_a_calibration() {
    use replayer::source::{TmtSource, TraceSource};
    const UNTRACED: &str = "untraced s (median of 5)";
    let rows = readme_rows();
    let listed: HashMap<&String, f64> = rows
        .iter()
        .filter_map(|(name, cells)| {
            let s = cells.get(UNTRACED)?;
            Some((
                name,
                s.parse()
                    .unwrap_or_else(|e| panic!("{name}: {UNTRACED} {s:?}: {e}")),
            ))
        })
        .collect();
    let quick: Vec<String> = load_profile("quick")
        .traces
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        listed.len() >= quick.len(),
        "the README's task-time table: {listed:?}"
    );
    let mut missing = Vec::new();
    for name in &quick {
        if !listed.contains_key(name) {
            missing.push(format!(
                "{name}: a quick-profile trace not in the task-time table"
            ));
        }
    }
    for (name, untraced_s) in &listed {
        let path = traces_dir().join(format!("{name}.tmt"));
        let source = TmtSource::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let marks = source.task_marks();
        let mut lacks = Vec::new();
        if marks.start_before.is_none() && marks.start_after.is_none() {
            lacks.push("a start mark".to_string());
        }
        if marks.end.is_none() {
            lacks.push("a done mark".to_string());
        }
        match marks.untraced {
            Some(ns) if ns.0 > 0 => {
                let s = ns.0 as f64 / 1e9;
                if (s - untraced_s).abs() > 0.0005 {
                    lacks.push(format!(
                        "the README's untraced time ({untraced_s} s; it holds {s:.3} s)"
                    ));
                }
            }
            _ => lacks.push("an untraced time".to_string()),
        }
        if !marks.capture_drive.is_set() {
            lacks.push("a calibration".to_string());
        }
        // The floor no prediction on a faster drive goes below.
        if quick.contains(name) && marks.cpu.is_none_or(|c| c.busiest_thread.0 == 0) {
            lacks.push("the task's CPU time (a quick-profile trace)".to_string());
        }
        if !lacks.is_empty() {
            missing.push(format!("{name}: lacks {}", lacks.join(", ")));
        }
    }
    assert!(
        missing.is_empty(),
        "traces without what a calibrated prediction needs (traces/README.md, \"Task times\"):\n{}",
        missing.join("\n")
    );
}
