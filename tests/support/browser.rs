//! Pages in a real browser (headless Chromium): what it laid out, as a probe
//! script appended to a copy of the page reports it (the pages themselves
//! have no script).

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Chromium with the flags that keep it off the network and out of the
/// user's profile.
pub fn chromium(profile: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

pub fn html_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Lays out a copy of `html` (written in `dir`) with `probe` before
/// `</body>`: a `<pre id="probe">` and a script that fills it with JSON.
/// Returns that JSON as the browser's DOM holds it.
pub fn probe(dir: &Path, html: &str, probe: &str) -> Value {
    let probe_page = dir.join("probe.html");
    std::fs::write(
        &probe_page,
        html.replace("</body>", &format!("{probe}</body>")),
    )
    .unwrap();
    let profile = tempfile::tempdir().unwrap();
    let dom = chromium(profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}", probe_page.display()))
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    let start = dom.find("<pre id=\"probe\">").expect("probe in the DOM") + 16;
    let end = start + dom[start..].find("</pre>").unwrap();
    serde_json::from_str(&html_unescape(&dom[start..end]))
        .unwrap_or_else(|e| panic!("{e}: {}", &dom[start..end]))
}
