//! `docs/tracemark.wprp`, the Windows Performance Recorder profile the
//! Windows guide ships, checked against the documented WPR profile schema
//! (WPRControlProfiles.xsd and the "Profile Definitions" rules): the element
//! hierarchy, the order of collectors, providers and profiles, the profile
//! ids `Name.DetailLevel.LoggingMode` with one Name and both a File and a
//! Memory profile, the attribute values the schema enumerates, references
//! that resolve, and exactly the kernel keywords tracemark needs. The
//! profile has not been run on Windows here; this checks its shape only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One element: name, attributes, parent index, children indices.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: BTreeMap<String, String>,
    parent: Option<usize>,
    children: Vec<usize>,
}

/// A small XML reader (elements and attributes; comments, the declaration
/// and text skipped), enough for a profile: panics on malformed input.
fn parse(xml: &str) -> Vec<Element> {
    let mut elements: Vec<Element> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        rest = &rest[start..];
        if let Some(after) = rest.strip_prefix("<!--") {
            let end = after.find("-->").expect("unclosed comment");
            rest = &after[end + 3..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("<?") {
            let end = after.find("?>").expect("unclosed declaration");
            rest = &after[end + 2..];
            continue;
        }
        let end = rest.find('>').expect("unclosed tag");
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let top = open.pop().expect("closing tag without an open one");
            assert_eq!(elements[top].name, name.trim(), "mismatched closing tag");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attr_text) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
        let mut attrs = BTreeMap::new();
        loop {
            attr_text = attr_text.trim_start();
            if attr_text.is_empty() {
                break;
            }
            let (key, after) = attr_text
                .split_once('=')
                .expect("attribute without a value");
            let after = after.trim_start();
            let quote = after.chars().next().expect("empty attribute value");
            assert!(quote == '"' || quote == '\'', "unquoted attribute {key}");
            let value_end = after[1..].find(quote).expect("unclosed attribute value");
            let value = &after[1..1 + value_end];
            assert!(
                attrs
                    .insert(key.trim().to_string(), value.to_string())
                    .is_none(),
                "attribute {key} twice"
            );
            attr_text = &after[value_end + 2..];
        }
        let index = elements.len();
        let parent = open.last().copied();
        elements.push(Element {
            name: name.to_string(),
            attrs,
            parent,
            children: Vec::new(),
        });
        if let Some(p) = parent {
            elements[p].children.push(index);
        } else {
            assert_eq!(index, 0, "a second root element");
        }
        if !self_closing {
            open.push(index);
        }
    }
    assert!(open.is_empty(), "unclosed elements");
    elements
}

/// The children each element may have (the schema's hierarchy, the part a
/// system-provider profile uses).
fn allowed_children(parent: &str) -> &'static [&'static str] {
    match parent {
        "WindowsPerformanceRecorder" => &["Profiles"],
        "Profiles" => &[
            "SystemCollector",
            "EventCollector",
            "HeapEventCollector",
            "SystemProvider",
            "EventProvider",
            "HeapEventProvider",
            "Profile",
        ],
        "SystemCollector" | "EventCollector" => {
            &["BufferSize", "Buffers", "FlushThreshold", "MaxFileSize"]
        }
        "SystemProvider" => &["Keywords", "Stacks", "PoolTags"],
        "Keywords" => &["Keyword"],
        "Profile" => &["Collectors", "ProblemCategories", "TraceMergeProperties"],
        "Collectors" => &[
            "SystemCollectorId",
            "EventCollectorId",
            "HeapEventCollectorId",
        ],
        "SystemCollectorId" => &["SystemProviderId"],
        _ => &[],
    }
}

/// Keywords of the schema's SystemKeywordEnumeration this profile may use.
const DOCUMENTED_KEYWORDS: [&str; 5] =
    ["DiskIO", "DiskIOInit", "ProcessThread", "FileIO", "Loader"];

#[test]
fn the_wpr_profile_follows_the_documented_schema() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/tracemark.wprp");
    let xml = std::fs::read_to_string(&path).unwrap();
    let el = parse(&xml);
    assert_eq!(el[0].name, "WindowsPerformanceRecorder");
    assert!(el[0].attrs.contains_key("Version"));
    for e in &el {
        if let Some(p) = e.parent {
            let parent = &el[p].name;
            assert!(
                allowed_children(parent).contains(&e.name.as_str()),
                "{} inside {parent}",
                e.name
            );
        }
        if [
            "BufferSize",
            "Buffers",
            "Keyword",
            "SystemCollectorId",
            "SystemProviderId",
        ]
        .contains(&e.name.as_str())
        {
            assert!(e.attrs.contains_key("Value"), "{} has no Value", e.name);
        }
    }
    // Collectors, then providers, then profiles.
    let profiles = el.iter().position(|e| e.name == "Profiles").unwrap();
    let rank = |name: &str| match name {
        n if n.ends_with("Collector") => 0,
        n if n.ends_with("Provider") => 1,
        _ => 2,
    };
    let ranks: Vec<i32> = el[profiles]
        .children
        .iter()
        .map(|&c| rank(&el[c].name))
        .collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "order: {ranks:?}");

    let ids = |name: &str| -> BTreeSet<String> {
        el.iter()
            .filter(|e| e.name == name)
            .map(|e| e.attrs["Id"].clone())
            .collect()
    };
    let collectors = ids("SystemCollector");
    let providers = ids("SystemProvider");
    for e in el.iter().filter(|e| e.name == "SystemCollector") {
        assert_eq!(e.attrs["Name"], "NT Kernel Logger");
        for c in &e.children {
            let v: u64 = el[*c].attrs["Value"].parse().unwrap();
            assert!(v > 0 && v <= 1024, "{} {v}", el[*c].name);
        }
    }
    for e in el.iter().filter(|e| e.name == "SystemCollectorId") {
        assert!(collectors.contains(&e.attrs["Value"]), "unknown collector");
    }
    for e in el.iter().filter(|e| e.name == "SystemProviderId") {
        assert!(providers.contains(&e.attrs["Value"]), "unknown provider");
    }

    let mut names = BTreeSet::new();
    let mut modes = BTreeSet::new();
    for p in el.iter().filter(|e| e.name == "Profile") {
        for key in ["Id", "Name", "Description", "DetailLevel", "LoggingMode"] {
            assert!(p.attrs.contains_key(key), "profile without {key}");
        }
        let (name, level, mode) = (
            &p.attrs["Name"],
            &p.attrs["DetailLevel"],
            &p.attrs["LoggingMode"],
        );
        assert!(["Verbose", "Light"].contains(&level.as_str()));
        assert!(["File", "Memory"].contains(&mode.as_str()));
        assert_eq!(p.attrs["Id"], format!("{name}.{level}.{mode}"));
        assert!(!p.attrs["Id"].contains([':', ' ']));
        names.insert(name.clone());
        modes.insert(mode.clone());
    }
    assert_eq!(names.len(), 1, "one Name for every profile");
    assert_eq!(
        modes,
        BTreeSet::from(["File".to_string(), "Memory".to_string()])
    );

    let keywords: BTreeSet<&str> = el
        .iter()
        .filter(|e| e.name == "Keyword")
        .map(|e| e.attrs["Value"].as_str())
        .collect();
    assert!(
        keywords.iter().all(|k| DOCUMENTED_KEYWORDS.contains(k)),
        "{keywords:?}"
    );
    assert_eq!(
        keywords,
        BTreeSet::from(["DiskIO", "DiskIOInit", "ProcessThread"])
    );
}

#[test]
fn the_reader_rejects_malformed_xml() {
    let bad = ["<a><b></a>", "<a x=1/>", "<a/><b/>", "<a>"];
    for xml in bad {
        assert!(std::panic::catch_unwind(|| parse(xml)).is_err(), "{xml}");
    }
    let ok = parse("<?xml version='1.0'?><!-- c --><a k='v'><b/></a>");
    assert_eq!(ok.len(), 2);
    assert_eq!(ok[0].attrs["k"], "v");
}
