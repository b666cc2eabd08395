//! The leaderboard page of runs on two targets, in a real browser (headless
//! Chromium): one row per drive in score order, each run linked to a report
//! that exists, the per-trace column, the chart's bars laid out in the
//! order of the scores, and nothing loaded from anywhere; the predicted
//! task time column only where runs predict one.

use crate::support;
use crate::support::browser;
use crate::support::replay::{rec, write_trace, KIB, MIB};
use crate::support::result_fixture::{result, write, Figures};
use trace_format::Op;

const PROBE: &str = r#"
<pre id="probe"></pre>
<script>
const rows = [...document.querySelectorAll('table.leaderboard tr.drive')].map(tr => ({
  rank: tr.dataset.rank, group: tr.dataset.group, score: parseFloat(tr.dataset.score),
  name: tr.querySelector('td.name').textContent,
  runs: [...tr.querySelectorAll('a.run')].map(a => a.getAttribute('href')),
  task: tr.querySelector('td.task') ? tr.querySelector('td.task').textContent : null,
  visible: tr.getBoundingClientRect().height > 0,
}));
const bars = [...document.querySelectorAll('rect.bar')].map(r => ({
  drive: r.dataset.drive, width: r.getBBox().width }));
const traces = [...document.querySelectorAll('table.leaderboard th.trace')].map(th => th.textContent);
const task_head = [...document.querySelectorAll('table.leaderboard th.task')].map(th => th.textContent);
const scripts = document.scripts.length;
document.getElementById('probe').textContent = JSON.stringify({ rows, bars, traces, task_head, scripts });
</script>
"#;

#[test]
fn the_leaderboard_of_two_targets_renders_in_chromium() {
    if !support::require_tool("chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let trace = dir.path().join("t.tmt");
    let recs: Vec<_> = (0..64u64)
        .map(|i| {
            rec(
                i * 200,
                if i % 4 == 0 { Op::Write } else { Op::Read },
                (i * 37 % 64) * MIB / 4,
                64 * KIB,
            )
        })
        .collect();
    write_trace(&trace, "small", &recs);
    let targets = [dir.path().join("a.bin"), dir.path().join("b.bin")];
    for target in &targets {
        for _ in 0..2 {
            let out = support::tracemark()
                .current_dir(dir.path())
                .arg("replay")
                .arg(&trace)
                .args([
                    "--mode",
                    "compressed",
                    "--passes",
                    "2",
                    "--no-warmup",
                    "--target",
                ])
                .arg(target)
                .arg("--db")
                .arg(&db)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // Runs share a line only by a strong identity (serial, WWN) or a label;
    // a scratch file's disk may have neither, so the runs are labelled.
    for (id, name) in [
        ("1", "a.bin"),
        ("2", "a.bin"),
        ("3", "b.bin"),
        ("4", "b.bin"),
    ] {
        let out = support::tracemark()
            .args(["results", "label", id, name, "--db"])
            .arg(&db)
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let page = dir.path().join("board.html");
    let out = support::tracemark()
        .args(["results", "leaderboard", "--html"])
        .arg(&page)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("2 drives"), "{text}");
    assert!(
        text.contains("runs 1,2 pooled as one drive: label a.bin"),
        "{text}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    for needle in ["<script", "http://", "https://", "src=", "@import", "url("] {
        assert!(!html.contains(needle), "page contains {needle}");
    }

    let probe = browser::probe(dir.path(), &html, PROBE);

    assert_eq!(probe["scripts"], 1, "the page itself has no script");
    assert_eq!(probe["traces"], serde_json::json!(["small"]));
    // The trace has no task marks: no run predicts a task time, no column.
    assert_eq!(probe["task_head"], serde_json::json!([]), "{probe}");
    let rows = probe["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{probe}");
    assert_eq!(
        (rows[0]["rank"].as_str(), rows[1]["rank"].as_str()),
        (Some("1"), Some("2"))
    );
    assert!(rows[0]["score"].as_f64() >= rows[1]["score"].as_f64());
    let mut names: Vec<String> = Vec::new();
    for row in rows {
        assert_eq!(row["visible"], true);
        let runs = row["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{row}");
        for href in runs {
            let report = dir.path().join(href.as_str().unwrap());
            let report = std::fs::read_to_string(&report)
                .unwrap_or_else(|e| panic!("{}: {e}", report.display()));
            assert!(report.contains("drive comparison"));
        }
        names.push(row["name"].as_str().unwrap().to_string());
    }
    names.sort();
    assert!(
        names[0].contains("a.bin") && names[1].contains("b.bin"),
        "{names:?}"
    );
    // Bars: one per drive, drawn, longest for the first.
    let bars = probe["bars"].as_array().unwrap();
    assert_eq!(bars.len(), 2);
    let (w0, w1) = (
        bars[0]["width"].as_f64().unwrap(),
        bars[1]["width"].as_f64().unwrap(),
    );
    assert!(w0 > 0.0 && w1 > 0.0 && w0 >= w1, "{bars:?}");
}

#[test]
fn the_leaderboard_page_shows_each_drives_predicted_task_time() {
    if !support::require_tool("chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // Timed Drive predicts 12.25 s for alpha and 3.5 s for beta (15.75 s for
    // the suite); Untimed Drive's runs predict none.
    let mut files = Vec::new();
    for (i, (model, task)) in [("Timed Drive", Some([12.25, 3.5])), ("Untimed Drive", None)]
        .into_iter()
        .enumerate()
    {
        let mut v = result(
            "realtime",
            &format!("/dev/sd{}", ["x", "y"][i]),
            Some(model),
            &[
                Figures::new("alpha", 1000.0 * (i + 1) as f64, 200.0, 100.0),
                Figures::new("beta", 900.0 * (i + 1) as f64, 180.0, 110.0),
            ],
        );
        for (t, s) in task.iter().flatten().enumerate() {
            v["traces"][t]["task"] = serde_json::json!({"predicted_s": s, "model": "blocking",
                "models": {"blocking": s}, "captured_s": 10.0, "span": "task marks"});
        }
        files.push(write(dir.path(), &format!("{i}.json"), &v));
    }
    let out = support::tracemark()
        .args(["results", "import"])
        .args(&files)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = dir.path().join("board.html");
    let out = support::tracemark()
        .args(["results", "leaderboard", "--html"])
        .arg(&page)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The text board's figure, for the page to match.
    let text = String::from_utf8_lossy(&out.stdout);
    let timed = text
        .lines()
        .find(|l| l.contains("Timed Drive") && !l.contains("Untimed"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(timed.contains("15.750"), "{text}");

    let html = std::fs::read_to_string(&page).unwrap();
    let probe = browser::probe(dir.path(), &html, PROBE);
    assert_eq!(probe["task_head"], serde_json::json!(["task s"]), "{probe}");
    let rows = probe["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{probe}");
    let task_of = |name: &str| {
        rows.iter()
            .find(|r| r["name"].as_str().is_some_and(|n| n.starts_with(name)))
            .unwrap_or_else(|| panic!("{name}: {probe}"))["task"]
            .clone()
    };
    assert_eq!(task_of("Timed Drive"), "15.750", "{probe}");
    assert_eq!(task_of("Untimed Drive"), "-", "{probe}");
}
