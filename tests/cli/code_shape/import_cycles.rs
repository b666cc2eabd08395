//! No import cycle between the files of one crate (each library, the
//! binary): a file that names another file's module, by `use crate::...`,
//! `use super::...` or a `crate::a::b` / `super::b` path in code, depends
//! on it, and no file may depend on itself around a loop.
//!
//! A module's own parent and children are left out: a `mod.rs` re-exporting
//! its children's items while they use its types is how a module is built,
//! not a loop between concerns. So `cmd/fleet.rs` naming `cmd/replay.rs` and
//! `cmd/replay.rs` naming `cmd/fleet.rs` is a cycle; `cmd/mod.rs` and
//! `cmd/fleet.rs` naming each other is not. A path is mapped to the file of
//! the longest module it names (an item re-exported by a parent counts as
//! the parent's). Test code (`tests/`, `#[cfg(test)]` items and files),
//! comments and string literals are not read, except a string that is a
//! path and nothing else (serde's `with = "crate::a::b"`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{outside_test_items, relative, root};

/// A file of a crate and the module it holds (`["cmd", "fleet"]`; the crate
/// root's is empty).
#[derive(Debug)]
struct ModuleFile {
    path: PathBuf,
    module: Vec<String>,
    source: String,
}

/// The directory a module file's `mod NAME;` children live in.
fn child_dir(path: &Path, is_root: bool) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new(""));
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if is_root || stem == "mod" {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    }
}

/// The names of the `mod NAME;` declarations of `source` outside tests.
fn declared_modules(source: &str) -> Vec<String> {
    outside_test_items(source)
        .into_iter()
        .filter_map(|(_, line)| {
            let mut rest = line.trim();
            if let Some(after) = rest.strip_prefix("pub") {
                rest = match after.strip_prefix('(') {
                    Some(scoped) => scoped.split_once(')')?.1,
                    None => after,
                };
                rest = rest.trim_start();
            }
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

/// The files of the crate rooted at `root_file`, found by following `mod
/// NAME;` declarations outside tests; `read` gives a file's text, `None` for
/// a file that does not exist.
fn crate_files(root_file: &Path, read: &dyn Fn(&Path) -> Option<String>) -> Vec<ModuleFile> {
    let mut files = Vec::new();
    let Some(source) = read(root_file) else {
        return files;
    };
    let mut pending = vec![(root_file.to_path_buf(), Vec::new(), source, true)];
    while let Some((path, module, source, is_root)) = pending.pop() {
        let dir = child_dir(&path, is_root);
        for name in declared_modules(&source) {
            let candidates = [
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            ];
            for candidate in candidates {
                if let Some(text) = read(&candidate) {
                    let mut child = module.clone();
                    child.push(name.clone());
                    pending.push((candidate, child, text, false));
                    break;
                }
            }
        }
        files.push(ModuleFile {
            path,
            module,
            source,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// Skips the string literal that starts at `chars[i]` (`"`, `r"`, `r#"`,
/// `b"`, `br"`), returning the index after it, or `None` if none starts there.
fn skip_string(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') || (!raw && hashes > 0) {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if !raw && chars[j] == '\\' {
            j += 2;
            continue;
        }
        if chars[j] == '"'
            && chars[j + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// The tokens of `code`, without comments and without string and
/// character literals (but for a string that is a path).
fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let word_start = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if let Some(end) = (c == '"' || (word_start && (c == 'r' || c == 'b')))
            .then(|| skip_string(&chars, i))
            .flatten()
        {
            // A string that is a path and nothing else names code (serde's
            // `with = "crate::x::y"`): it is read; other text is not.
            let text: String = chars[i..end].iter().collect();
            let inner = text.trim_matches(|c: char| c == '"' || c == '#' || c == 'r' || c == 'b');
            let is_path = inner.contains("::")
                && inner
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == ':');
            if is_path {
                out.extend(tokens(inner));
            }
            i = end;
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || chars.get(i + 1) == Some(&'\\'))
        {
            // A character literal ('x', '\n', '\''); a lifetime has no closing quote.
            let close = chars[i + 2..]
                .iter()
                .position(|c| *c == '\'')
                .map_or(chars.len(), |p| i + 3 + p);
            i = close;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            i = chars[i..]
                .iter()
                .position(|c| *c == '\n')
                .map_or(chars.len(), |p| i + p);
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i = (i + 2..chars.len())
                .find(|j| chars[*j] == '*' && chars.get(j + 1) == Some(&'/'))
                .map_or(chars.len(), |j| j + 2);
        } else if c.is_alphanumeric() || c == '_' {
            let end = chars[i..]
                .iter()
                .position(|c| !(c.is_alphanumeric() || *c == '_'))
                .map_or(chars.len(), |p| i + p);
            out.push(Token::Ident(chars[i..end].iter().collect()));
            i = end;
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// The lines of `source` outside tests, comments and all.
fn code_outside_tests(source: &str) -> String {
    let mut code = String::new();
    for (_, line) in outside_test_items(source) {
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Reads the use tree at `tokens[*at]` under `prefix`, adding each full path
/// it imports to `out`.
fn use_tree(tokens: &[Token], at: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match tokens.get(*at) {
            Some(Token::Ident(name)) if name == "as" => {
                *at += 2;
                break;
            }
            Some(Token::Ident(name)) => {
                if name != "self" || path.is_empty() {
                    path.push(name.clone());
                }
                *at += 1;
                if tokens.get(*at) == Some(&Token::PathSep) {
                    *at += 1;
                    continue;
                }
                break;
            }
            Some(Token::PathSep) => *at += 1,
            Some(Token::Punct('{')) => {
                *at += 1;
                while !matches!(tokens.get(*at), None | Some(Token::Punct('}'))) {
                    use_tree(tokens, at, path.clone(), out);
                    if tokens.get(*at) == Some(&Token::Punct(',')) {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            Some(Token::Punct('*')) => {
                *at += 1;
                break;
            }
            _ => break,
        }
    }
    out.push(path);
}

/// The paths in `source`'s code outside tests that start at `crate` or
/// `super`: each `use` tree's imports and each path in code.
fn crate_paths(source: &str) -> Vec<Vec<String>> {
    let tokens = tokens(&code_outside_tests(source));
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let previous = i.checked_sub(1).map(|p| &tokens[p]);
        match &tokens[i] {
            Token::Ident(word) if word == "use" => {
                i += 1;
                use_tree(&tokens, &mut i, Vec::new(), &mut paths);
                continue;
            }
            Token::Ident(word)
                if (word == "crate" || word == "super")
                    && tokens.get(i + 1) == Some(&Token::PathSep)
                    && !matches!(previous, Some(Token::PathSep | Token::Punct('$')))
                    && previous != Some(&Token::Ident("in".into())) =>
            {
                let mut path = vec![word.clone()];
                while tokens.get(i + 1) == Some(&Token::PathSep) {
                    match tokens.get(i + 2) {
                        Some(Token::Ident(name)) => path.push(name.clone()),
                        _ => break,
                    }
                    i += 2;
                }
                paths.push(path);
            }
            _ => {}
        }
        i += 1;
    }
    paths.retain(|p| matches!(p.first().map(String::as_str), Some("crate" | "super")));
    paths
}

/// The module `path` names from inside `module`, from the crate root.
fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    if path.first().map(String::as_str) == Some("crate") {
        return Some(path[1..].to_vec());
    }
    let supers = path.iter().take_while(|s| *s == "super").count();
    let base = module.len().checked_sub(supers)?;
    Some(
        module[..base]
            .iter()
            .chain(&path[supers..])
            .cloned()
            .collect(),
    )
}

/// The dependencies between the files of one crate: (from, to) indexes into
/// `files`, each with the path that makes it.
fn dependencies(files: &[ModuleFile]) -> BTreeMap<(usize, usize), String> {
    let index: BTreeMap<&[String], usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.module.as_slice(), i))
        .collect();
    let mut edges = BTreeMap::new();
    for (from, file) in files.iter().enumerate() {
        for path in crate_paths(&file.source) {
            let Some(target) = absolute(&file.module, &path) else {
                continue;
            };
            let Some(to) = (0..=target.len())
                .rev()
                .find_map(|n| index.get(&target[..n]).copied())
            else {
                continue;
            };
            let other = &files[to].module;
            let related = other.starts_with(&file.module) || file.module.starts_with(other);
            if !related {
                edges.entry((from, to)).or_insert_with(|| path.join("::"));
            }
        }
    }
    edges
}

/// The import cycles among `files`: each strongly connected group of more
/// than one file, as one loop through it, each step with the path that makes
/// it (`a.rs -> b.rs (super::b::X)`).
fn cycles(files: &[ModuleFile]) -> Vec<Vec<String>> {
    let edges = dependencies(files);
    let next = |n: usize| edges.range((n, 0)..(n + 1, 0)).map(|((_, to), _)| *to);
    let reaches = |start: usize| {
        let mut seen = BTreeSet::from([start]);
        let mut stack = vec![start];
        while let Some(n) = stack.pop() {
            for to in next(n) {
                if seen.insert(to) {
                    stack.push(to);
                }
            }
        }
        seen
    };
    let reach: Vec<BTreeSet<usize>> = (0..files.len()).map(reaches).collect();
    let mut grouped: BTreeSet<usize> = BTreeSet::new();
    let mut found = Vec::new();
    for start in 0..files.len() {
        if grouped.contains(&start) {
            continue;
        }
        let group: BTreeSet<usize> = reach[start]
            .iter()
            .copied()
            .filter(|n| reach[*n].contains(&start))
            .collect();
        grouped.extend(&group);
        if group.len() < 2 {
            continue;
        }
        found.push(one_loop(files, &edges, &group, start));
    }
    found
}

/// A shortest loop from `start` through `group` back to it, as steps.
fn one_loop(
    files: &[ModuleFile],
    edges: &BTreeMap<(usize, usize), String>,
    group: &BTreeSet<usize>,
    start: usize,
) -> Vec<String> {
    let mut came_from = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    'search: while let Some(n) = queue.pop_front() {
        for ((_, to), _) in edges.range((n, 0)..(n + 1, 0)) {
            if !group.contains(to) || came_from.contains_key(to) {
                continue;
            }
            came_from.insert(*to, n);
            if *to == start {
                break 'search;
            }
            queue.push_back(*to);
        }
    }
    let mut steps = Vec::new();
    let mut at = start;
    loop {
        let from = came_from[&at];
        steps.push(format!(
            "{} -> {} ({})",
            relative(&files[from].path),
            relative(&files[at].path),
            edges[&(from, at)]
        ));
        at = from;
        if at == start {
            break;
        }
    }
    steps.reverse();
    steps
}

/// The crate roots of the workspace: each package's `src/lib.rs`,
/// `src/main.rs` and `src/bin/*.rs`.
fn crate_roots() -> Vec<PathBuf> {
    let mut manifests = Vec::new();
    let mut dirs = vec![root().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() && !(name == "target" || name == "tests" || name.starts_with('.')) {
                dirs.push(path);
            } else if name == "Cargo.toml" {
                manifests.push(dir.clone());
            }
        }
    }
    let mut roots = Vec::new();
    for package in manifests {
        let src = package.join("src");
        roots.extend(
            ["lib.rs", "main.rs"]
                .map(|f| src.join(f))
                .into_iter()
                .filter(|f| f.exists()),
        );
        if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
            roots.extend(
                bins.map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|e| e == "rs")),
            );
        }
    }
    roots.sort();
    roots
}

#[test]
fn no_import_cycle_between_the_files_of_one_crate() {
    let roots = crate_roots();
    assert!(roots.len() >= 7, "found only {roots:?}");
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let mut found = Vec::new();
    let mut scanned = 0;
    for crate_root in &roots {
        let files = crate_files(crate_root, &read);
        scanned += files.len();
        for cycle in cycles(&files) {
            found.push(format!(
                "in {}:\n  {}",
                relative(crate_root),
                cycle.join("\n  ")
            ));
        }
    }
    assert!(scanned > 100, "scanned only {scanned} files");
    assert!(
        found.is_empty(),
        "files that import each other (move what both need to one of them, or to a \
         module both use):\n{}",
        found.join("\n")
    );
}

/// A synthetic crate: `(path, text)` files, scanned from `src/main.rs`.
fn scan(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let tree: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    let read = |p: &Path| tree.get(p).cloned();
    cycles(&crate_files(Path::new("src/main.rs"), &read))
}

/// A binary with `cmd/` (two commands and a store) and `output/`; the
/// commands use the parent's types and the parent re-exports them, which is
/// no cycle. The test module and `cmd/tests.rs` name everything.
const TREE: &[(&str, &str)] = &[
    ("src/main.rs", "mod cmd;\nmod output;\n"),
    (
        "src/cmd/mod.rs",
        "pub mod fleet;\npub(crate) mod replay;\nmod store;\n#[cfg(test)]\nmod tests;\n\n\
         pub use fleet::run;\nuse crate::cmd::store::Store;\npub struct Args;\n",
    ),
    (
        "src/cmd/fleet.rs",
        "use super::replay::{self, Plan};\nuse crate::output::table as t;\nuse super::Args;\n\n\
         pub fn run(_: Args) {\n    replay::go(Plan);\n}\n",
    ),
    (
        "src/cmd/replay.rs",
        "//! Not `crate::cmd::fleet::run`, which is a comment.\nuse super::{\n    store::Store,\n    \
         Args,\n};\n\npub struct Plan;\n\npub fn go(_: Plan) {\n    let _ = \"from crate::cmd::fleet\"; // super::fleet\n    \
         let _ = '\"';\n    let _ = \"a\n// super::fleet\";\n    /* crate::cmd::fleet */\n}\n\n#[cfg(test)]\nmod tests {\n    use crate::cmd::fleet::run;\n}\n",
    ),
    (
        "src/cmd/store.rs",
        "use super::Args;\n\n#[derive(Serialize)]\npub struct Store(\n    \
         #[serde(serialize_with = \"crate::output::table::as_text\")] pub Args,\n);\n",
    ),
    ("src/cmd/tests.rs", "use crate::cmd::fleet;\nuse super::replay::go;\n"),
    ("src/output/mod.rs", "pub mod table;\n"),
    ("src/output/table.rs", "pub fn table() {}\n"),
];

/// `TREE` with `file`'s text extended by `more`.
fn with(file: &str, more: &str) -> Vec<(&'static str, String)> {
    TREE.iter()
        .map(|(p, t)| {
            (
                *p,
                if *p == file {
                    format!("{t}{more}")
                } else {
                    t.to_string()
                },
            )
        })
        .collect()
}

fn scan_owned(files: &[(&str, String)]) -> Vec<Vec<String>> {
    let borrowed: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    scan(&borrowed)
}

#[test]
fn the_cycle_scan_reports_no_cycle_where_there_is_none() {
    assert_eq!(scan(TREE), Vec::<Vec<String>>::new());
    // The imports it sees: grouped, renamed and nested trees, `self` in a
    // group, paths in code.
    let paths: Vec<String> = crate_paths(TREE[2].1)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "super::replay",
            "super::replay::Plan",
            "crate::output::table",
            "super::Args"
        ]
    );
    // A string that is a path is read; other strings and comments are not.
    let store: Vec<String> = crate_paths(TREE[4].1)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(store, ["super::Args", "crate::output::table::as_text"]);
    // In `replay.rs`: the use tree only, not the comments, the strings of
    // text (one with a `//` line), the character literal or the test module.
    let replay: Vec<String> = crate_paths(TREE[3].1)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(replay, ["super::store::Store", "super::Args"]);
}

#[test]
fn the_cycle_scan_finds_two_files_that_import_each_other() {
    // `replay.rs` now calls into `fleet.rs` (by `super::super::`, from the
    // crate root), which imports `replay.rs`.
    let tree = with(
        "src/cmd/replay.rs",
        "pub fn back() {\n    super::super::cmd::fleet::run(super::Args);\n}\n",
    );
    assert_eq!(
        scan_owned(&tree),
        [[
            "src/cmd/fleet.rs -> src/cmd/replay.rs (super::replay)",
            "src/cmd/replay.rs -> src/cmd/fleet.rs (super::super::cmd::fleet::run)",
        ]]
    );
}

#[test]
fn the_cycle_scan_finds_a_loop_through_three_files() {
    // replay -> store (a grouped use), store -> table (a path in a serde
    // attribute), and now table -> replay (a path in a type).
    let tree = with(
        "src/output/table.rs",
        "pub fn plan() -> Option<crate::cmd::replay::Plan> {\n    None\n}\n",
    );
    assert_eq!(
        scan_owned(&tree),
        [[
            "src/cmd/replay.rs -> src/cmd/store.rs (super::store::Store)",
            "src/cmd/store.rs -> src/output/table.rs (crate::output::table::as_text)",
            "src/output/table.rs -> src/cmd/replay.rs (crate::cmd::replay::Plan)",
        ]]
    );
}
