//! The comparison report in a real browser (headless Chromium): the charts
//! are laid out with the right number of bars and points, the task-time
//! bars as long as their seconds, and a screenshot of the page is drawn.

use crate::support;
use crate::support::browser::{self, chromium};
use crate::support::result_fixture::{result, write, Figures};
use serde_json::Value;
use std::path::Path;

const CDF_POINTS: usize = 40;

fn figures(name: &'static str, score: f64, timeline_points: usize) -> Figures {
    let mut f = Figures::new(name, score, score / 5.0, 1e6 / score);
    f.cdf_points = CDF_POINTS;
    f.timeline_points = timeline_points;
    f
}

/// `r` with a predicted task time of `seconds[i]` for its i-th trace.
fn with_task_times(mut r: Value, seconds: &[f64]) -> Value {
    for (i, s) in seconds.iter().enumerate() {
        r["traces"][i]["task"] = serde_json::json!({"predicted_s": s, "model": "blocking",
            "models": {"blocking": s}, "captured_s": 10.0, "span": "task marks"});
    }
    r
}

/// What the browser laid out, measured by a script appended to a copy of
/// the report (the report itself has no script).
const PROBE: &str = r#"
<pre id="probe"></pre>
<script>
const drawn = e => { const b = e.getBBox(); return b.width > 0 && b.height > 0; };
const r = { bars: {}, lines: [], task: [] };
for (const e of document.querySelectorAll('rect.bar')) {
  if (!drawn(e)) continue;
  const k = e.dataset.metric + '/' + e.dataset.trace;
  r.bars[k] = (r.bars[k] || 0) + 1;
  if (e.dataset.metric === 'task_time') {
    const label = e.nextElementSibling;
    r.task.push({ trace: e.dataset.trace, drive: e.dataset.drive, width: e.getBBox().width,
                  label: label && label.tagName === 'text' ? label.textContent : null,
                  label_x: label ? label.getBBox().x : null,
                  end: e.getBBox().x + e.getBBox().width });
  }
}
for (const p of document.querySelectorAll('polyline.cdf, polyline.timeline')) {
  r.lines.push({ cls: p.getAttribute('class'), trace: p.dataset.trace, drive: p.dataset.drive,
                 op: p.dataset.op || null, metric: p.dataset.metric || null,
                 points: p.points.numberOfItems, length: p.getTotalLength() });
}
r.scripts = document.scripts.length;
document.getElementById('probe').textContent = JSON.stringify(r);
</script>
"#;

#[test]
fn report_charts_render_in_chromium() {
    if !support::require_tool("chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Predicted task seconds per drive for alpha, beta, gamma, in an order
    // unlike the scores' (the third drive has no gamma).
    const TASK_S: [[f64; 3]; 3] = [[12.5, 3.25, 40.0], [20.0, 2.75, 55.5], [31.0, 4.125, 0.0]];
    // Three drives; the third has no 'gamma'. Timelines of different lengths.
    let a = write(
        dir.path(),
        "a.json",
        &with_task_times(
            result(
                "realtime",
                "/dev/nvme0n1",
                Some("Fast <NVMe> & co"),
                &[
                    figures("alpha", 2000.0, 30),
                    figures("beta", 1200.0, 12),
                    figures("gamma", 800.0, 7),
                ],
            ),
            &TASK_S[0],
        ),
    );
    let b = write(
        dir.path(),
        "b.json",
        &with_task_times(
            result(
                "realtime",
                "/dev/sda",
                Some("SATA SSD"),
                &[
                    figures("alpha", 900.0, 31),
                    figures("beta", 700.0, 13),
                    figures("gamma", 300.0, 8),
                ],
            ),
            &TASK_S[1],
        ),
    );
    let c = write(
        dir.path(),
        "c.json",
        &with_task_times(
            result(
                "realtime",
                "/dev/sdb",
                None,
                &[figures("alpha", 120.0, 32), figures("beta", 90.0, 14)],
            ),
            &TASK_S[2][..2],
        ),
    );
    let report = dir.path().join("report.html");
    let out = support::tracemark()
        .arg("compare")
        .args([&a, &b, &c])
        .arg("--html")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&report).unwrap();

    // Self-contained: nothing fetched, no script.
    for needle in ["<script", "http://", "https://", "src=", "@import", "url("] {
        assert!(!html.contains(needle), "report contains {needle}");
    }
    assert!(html.contains("Fast &lt;NVMe&gt; &amp; co"));

    // The DOM as the browser built and laid it out.
    let probe = browser::probe(dir.path(), &html, PROBE);

    // Bars: one per drive that has the trace, and the suite group.
    for metric in ["score", "bandwidth", "task_time"] {
        for (trace, n) in [("alpha", 3), ("beta", 3), ("gamma", 2), ("suite", 3)] {
            assert_eq!(
                probe["bars"][format!("{metric}/{trace}")],
                n,
                "{metric}/{trace}: {}",
                probe["bars"]
            );
        }
    }
    assert_eq!(probe["bars"].as_object().unwrap().len(), 12);

    // Task time: one bar per trace per drive plus the suite total, each
    // labelled with its seconds, the longer bar for the longer time.
    let expected_task = |trace: &str, drive: usize| -> f64 {
        match trace {
            "alpha" => TASK_S[drive][0],
            "beta" => TASK_S[drive][1],
            "gamma" => TASK_S[drive][2],
            _ => TASK_S[drive].iter().sum(),
        }
    };
    let task: Vec<(f64, f64)> = probe["task"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let trace = b["trace"].as_str().unwrap();
            let drive: usize = b["drive"].as_str().unwrap().parse().unwrap();
            let seconds = expected_task(trace, drive);
            assert_eq!(b["label"], format!("{seconds:.3}"), "{b}");
            assert!(
                b["label_x"].as_f64().unwrap() >= b["end"].as_f64().unwrap(),
                "label beside its bar: {b}"
            );
            (seconds, b["width"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(task.len(), 3 + 3 + 2 + 3, "{}", probe["task"]);
    for (s1, w1) in &task {
        for (s2, w2) in &task {
            if s1 < s2 {
                assert!(w1 < w2, "{s1} s drawn {w1} wide, {s2} s {w2}");
            }
        }
    }

    // CDFs: read and write per drive per trace, every point drawn.
    let lines = probe["lines"].as_array().unwrap();
    let cdfs: Vec<&Value> = lines.iter().filter(|l| l["cls"] == "cdf").collect();
    assert_eq!(cdfs.len(), (3 + 3 + 2) * 2);
    for l in &cdfs {
        assert_eq!(l["points"], CDF_POINTS, "{l}");
        assert!(l["length"].as_f64().unwrap() > 10.0, "{l}");
    }
    assert!(!cdfs
        .iter()
        .any(|l| l["trace"] == "gamma" && l["drive"] == "2"));

    // Timelines: bandwidth and latency per drive per trace, one point per interval.
    let timelines: Vec<&Value> = lines.iter().filter(|l| l["cls"] == "timeline").collect();
    assert_eq!(timelines.len(), (3 + 3 + 2) * 2);
    let expected = |trace: &str, drive: &str| -> u64 {
        let base = match trace {
            "alpha" => 30,
            "beta" => 12,
            _ => 7,
        };
        base + drive.parse::<u64>().unwrap()
    };
    for l in &timelines {
        let (trace, drive) = (l["trace"].as_str().unwrap(), l["drive"].as_str().unwrap());
        assert_eq!(l["points"], expected(trace, drive), "{l}");
        assert!(l["length"].as_f64().unwrap() > 10.0, "{l}");
        assert!(l["metric"] == "bandwidth" || l["metric"] == "latency");
    }
    // The only script is the probe.
    assert_eq!(probe["scripts"], 1);

    // A screenshot of the report itself.
    let png = dir.path().join("report.png");
    let profile = tempfile::tempdir().unwrap();
    let shot = chromium(profile.path())
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,2000")
        .arg(format!("file://{}", report.display()))
        .output()
        .unwrap();
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // IHDR: width and height, big-endian, at bytes 16..24.
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 2000));
    // A blank page of that size compresses to a few kB; charts and tables don't.
    assert!(
        bytes.len() > 40_000,
        "screenshot only {} bytes",
        bytes.len()
    );
    if let Ok(keep) = std::env::var("TRACEMARK_KEEP_REPORT") {
        let _ = std::fs::copy(&report, Path::new(&keep).join("report.html"));
        let _ = std::fs::copy(&png, Path::new(&keep).join("report.png"));
    }
}
