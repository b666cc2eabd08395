//! The markdown files' relative links resolve: the file exists and, for a
//! `#fragment` into a markdown file, a heading of that file has that anchor
//! (GitHub's rule: lower case, punctuation dropped, spaces to hyphens).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            markdown_files(&path, out);
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// GitHub's anchor of a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut seen = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            let base = slug(line.trim_start_matches('#').replace('`', "").as_str());
            // A repeated heading gets -1, -2, ...
            let mut anchor = base.clone();
            let mut n = 0;
            while seen.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            seen.insert(anchor);
        }
    }
    seen
}

/// Every `](target)` of the prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_string());
        }
    }
    out
}

#[test]
fn relative_links_in_the_markdown_files_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    markdown_files(root, &mut files);
    assert!(
        files.len() > 10,
        "only {} markdown files found",
        files.len()
    );
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") || link.contains(' ') {
                continue;
            }
            let (path, fragment) = match link.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            checked += 1;
            let shown = file.strip_prefix(root).unwrap().display();
            if !target.exists() {
                broken.push(format!("{shown}: {link}: no such file"));
                continue;
            }
            if let Some(fragment) = fragment {
                if target.extension().is_some_and(|e| e == "md") {
                    let target_text = std::fs::read_to_string(&target).unwrap();
                    if !anchors(&target_text).contains(fragment) {
                        broken.push(format!("{shown}: {link}: no heading with that anchor"));
                    }
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} links checked");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_anchor_rule_is_githubs() {
    assert_eq!(
        slug("Fleet replay on one machine (8 volumes)"),
        "fleet-replay-on-one-machine-8-volumes"
    );
    assert_eq!(
        slug("Results: the table, the score"),
        "results-the-table-the-score"
    );
    let text = "# A\n```\n# not a heading\n```\n## A\n";
    let got: Vec<_> = anchors(text).into_iter().collect();
    assert_eq!(got, ["a", "a-1"]);
    assert_eq!(
        links("[x](a.md) `[y](b.md)` [z](c.md#d)"),
        ["a.md", "c.md#d"]
    );
}

/// Where `text` names a tracker issue ("issue 12", "Issues #3"): the
/// repository has no tracker, so comments and documents say what was meant.
/// A verb followed by a figure ("ranks issue 1.37x") is not one.
fn issue_references(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = lower[from..].find("issue") {
        let start = from + i;
        from = start + 5;
        if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mut j = start + 5;
        if bytes.get(j) == Some(&b's') {
            j += 1;
        }
        if bytes.get(j) != Some(&b' ') {
            continue;
        }
        j += 1;
        if bytes.get(j) == Some(&b'#') {
            j += 1;
        }
        let digits = j;
        while bytes.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        let figure = matches!(bytes.get(j), Some(b'x'))
            || (bytes.get(j) == Some(&b'.') && bytes.get(j + 1).is_some_and(u8::is_ascii_digit));
        if j > digits && !figure {
            found.push(text[start..j].to_string());
        }
    }
    found
}

fn tree_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            tree_files(&path, out);
        } else if ["rs", "md", "sh", "py", "toml", "c"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
        {
            out.push(path);
        }
    }
}

#[test]
fn no_file_refers_to_a_tracker_issue() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    tree_files(root, &mut files);
    let this = Path::new(file!()).file_name().unwrap();
    let mut hits = Vec::new();
    for file in files.iter().filter(|f| f.file_name() != Some(this)) {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for r in issue_references(line) {
                let shown = file.strip_prefix(root).unwrap().display();
                hits.push(format!("{shown}:{}: {r}", n + 1));
            }
        }
    }
    assert!(hits.is_empty(), "issue numbers:\n{}", hits.join("\n"));
}

#[test]
fn issue_references_are_told_from_the_verb() {
    assert_eq!(
        issue_references("see issue 12, and Issues #3"),
        ["issue 12", "Issues #3"]
    );
    assert!(issue_references("4 ranks issue 1.37x and 1.50x").is_empty());
    assert!(issue_references("the issue lateness p99 18 µs").is_empty());
    assert!(issue_references("reissue 5 times").is_empty());
}
