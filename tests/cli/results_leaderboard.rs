//! The leaderboard page of runs on two targets, in a real browser (headless
//! Chromium): one row per drive in score order, each run linked to a report
//! that exists, the per-trace column, the chart's bars laid out in the
//! order of the scores, and nothing loaded from anywhere.

use crate::support;
use crate::support::browser;
use crate::support::replay::{rec, write_trace, KIB, MIB};
use trace_format::Op;

const PROBE: &str = r#"
<pre id="probe"></pre>
<script>
const rows = [...document.querySelectorAll('table.leaderboard tr.drive')].map(tr => ({
  rank: tr.dataset.rank, group: tr.dataset.group, score: parseFloat(tr.dataset.score),
  name: tr.querySelector('td.name').textContent,
  runs: [...tr.querySelectorAll('a.run')].map(a => a.getAttribute('href')),
  visible: tr.getBoundingClientRect().height > 0,
}));
const bars = [...document.querySelectorAll('rect.bar')].map(r => ({
  drive: r.dataset.drive, width: r.getBBox().width }));
const traces = [...document.querySelectorAll('table.leaderboard th.trace')].map(th => th.textContent);
const scripts = document.scripts.length;
document.getElementById('probe').textContent = JSON.stringify({ rows, bars, traces, scripts });
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
