//! The code's shape, checked on every `.rs` file of the workspace: no file
//! reaches 1,000 lines; no function outside tests is longer than 100 lines
//! unless [`LONG_FUNCTIONS`] names it with the measured reason; a file with
//! more than 700 lines outside tests says in its opening comment why it is
//! kept whole ([`KEPT_WHOLE`]); no two files of one crate import each other,
//! directly or around a loop (`import_cycles`).
//!
//! The scan reads rustfmt-formatted code: a function runs from its `fn` line
//! to the first line that is a lone `}` at the `fn` line's indentation. Test
//! code is left out: `tests/` directories, `#[cfg(test)]` items (inline
//! `mod tests { ... }` and the files of `#[cfg(test)] mod NAME;`) and
//! `target/`.

mod import_cycles;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Every file stays under 1,000 lines.
const MAX_FILE_LINES: usize = 999;
/// Every function outside tests stays within 100 lines...
const MAX_FN_LINES: usize = 100;

/// ...except these: (file from the workspace root, function name, why it is
/// kept whole). An entry that no longer names a long function fails the test,
/// so the list cannot go stale.
const LONG_FUNCTIONS: &[(&str, &str, &str)] = &[];

/// A function longer than the limit.
#[derive(Debug, PartialEq, Eq)]
struct LongFn {
    /// 1-based line of the `fn`.
    line: usize,
    name: String,
    lines: usize,
}

/// The name of the function a trimmed line declares, if it declares one.
fn fn_name(trimmed: &str) -> Option<&str> {
    let mut rest = trimmed;
    if let Some(after) = rest.strip_prefix("pub") {
        rest = match after.strip_prefix('(') {
            Some(scoped) => scoped.split_once(')')?.1,
            None => after,
        };
        rest = rest.strip_prefix(' ')?;
    }
    for qualifier in ["const ", "async ", "unsafe ", "extern \"C\" ", "default "] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The index of the last line of the item starting at `start`, whose first
/// line is indented by `indent`: the same line for a one-line item, the line
/// ending in `;` for a declaration without a body, else the first lone `}`
/// at `indent` after the line that opens the body.
fn item_end(lines: &[&str], start: usize, indent: &str) -> usize {
    let first = lines[start].trim_end();
    if first.ends_with('}') && first.contains('{') {
        return start;
    }
    let close = format!("{indent}}}");
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        let line = line.trim_end();
        if opened && line == close {
            return i;
        }
        if !opened && line.ends_with(';') {
            return i;
        }
        opened |= line.ends_with('{');
    }
    lines.len() - 1
}

/// The functions of `source` longer than `limit` lines, outside
/// `#[cfg(test)]` items.
fn long_functions(source: &str, limit: usize) -> Vec<LongFn> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    let mut cfg_test = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if trimmed.starts_with("#[cfg(test)]") {
            cfg_test = true;
            i += 1;
            continue;
        }
        if trimmed.starts_with("#[") || trimmed.starts_with("//") || trimmed.is_empty() {
            i += 1;
            continue;
        }
        if std::mem::take(&mut cfg_test) {
            i = item_end(&lines, i, indent) + 1;
            continue;
        }
        if let Some(name) = fn_name(trimmed) {
            let length = item_end(&lines, i, indent) - i + 1;
            if length > limit {
                found.push(LongFn {
                    line: i + 1,
                    name: name.to_string(),
                    lines: length,
                });
            }
        }
        i += 1;
    }
    found
}

/// The module files `#[cfg(test)] mod NAME;` lines of `source` (the file
/// `path`) declare.
fn test_module_files(path: &Path, source: &str) -> Vec<PathBuf> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let parent = path.parent().unwrap_or(Path::new(""));
    let dir = if matches!(stem, "mod" | "lib" | "main") {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    };
    let mut files = Vec::new();
    let mut cfg_test = false;
    for line in source.lines().map(str::trim) {
        if line.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        if cfg_test {
            let module = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            if let Some(name) = module
                .strip_prefix("mod ")
                .and_then(|m| m.strip_suffix(';'))
            {
                files.push(dir.join(format!("{name}.rs")));
                files.push(dir.join(name).join("mod.rs"));
            }
        }
        cfg_test = cfg_test && line.starts_with("#[");
    }
    files
}

/// Every `.rs` file under `dir`, outside cargo's `target/` (a `target/`
/// beside a `target.rs` is a module's folder, and is read) and hidden
/// directories; with `skip_tests`, outside `tests/` directories too.
fn rust_files(dir: &Path, skip_tests: bool, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let build_dir = name == "target" && !path.with_extension("rs").exists();
            let skipped = build_dir || name.starts_with('.') || (skip_tests && name == "tests");
            if !skipped {
                rust_files(&path, skip_tests, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn no_file_reaches_1000_lines() {
    let mut files = Vec::new();
    rust_files(root(), false, &mut files);
    assert!(files.len() > 100, "found only {} .rs files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{}: {lines} lines", relative(f)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files of 1,000 lines or more (split them):\n{}",
        long.join("\n")
    );
}

/// Every `.rs` file outside tests (`tests/` directories and the files of
/// `#[cfg(test)] mod NAME;`), with its text.
fn sources_outside_tests() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(root(), true, &mut files);
    let sources: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f, text)
        })
        .collect();
    let test_files: HashSet<PathBuf> = sources
        .iter()
        .flat_map(|(f, text)| test_module_files(f, text))
        .collect();
    sources
        .into_iter()
        .filter(|(f, _)| !test_files.contains(f))
        .collect()
}

#[test]
fn no_function_outside_tests_is_over_100_lines() {
    let sources = sources_outside_tests();
    let mut over = Vec::new();
    let mut allowed_found = HashSet::new();
    for (file, text) in &sources {
        let rel = relative(file);
        for long in long_functions(text, MAX_FN_LINES) {
            let allowed = LONG_FUNCTIONS
                .iter()
                .position(|(f, name, _)| *f == rel && *name == long.name);
            match allowed {
                Some(index) => {
                    allowed_found.insert(index);
                }
                None => over.push(format!(
                    "{rel}:{}: fn {} is {} lines",
                    long.line, long.name, long.lines
                )),
            }
        }
    }
    assert!(
        over.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them into named steps, or add \
         them to LONG_FUNCTIONS with the measured reason):\n{}",
        over.join("\n")
    );
    let stale: Vec<String> = (0..LONG_FUNCTIONS.len())
        .filter(|i| !allowed_found.contains(i))
        .map(|i| format!("{} fn {}", LONG_FUNCTIONS[i].0, LONG_FUNCTIONS[i].1))
        .collect();
    assert!(
        stale.is_empty(),
        "LONG_FUNCTIONS entries that name no function over {MAX_FN_LINES} lines \
         (remove them):\n{}",
        stale.join("\n")
    );
}

/// `n` statement lines of a function body.
fn body(n: usize) -> String {
    (0..n).map(|i| format!("    let _v{i} = {i};\n")).collect()
}

#[test]
fn the_scan_finds_a_function_over_the_limit_and_only_that() {
    // `long`: 101 lines (3 of signature, 97 of body, the brace); `exact`: 100;
    // a declaration without a body; a long function in a test module and one
    // marked `#[cfg(test)]` outside it.
    let source = format!(
        "pub(crate) fn long(\n    a: u32,\n) -> u32 {{\n{}}}\n\n\
         fn exact() {{\n{}}}\n\n\
         trait T {{\n    fn declared(&self) -> u32;\n    fn one_line(&self) {{}}\n}}\n\n\
         #[cfg(test)]\nmod tests {{\n    fn in_tests() {{\n{}    }}\n}}\n\n\
         #[cfg(test)]\n#[allow(dead_code)]\nfn test_helper() {{\n{}}}\n",
        body(97),
        body(98),
        body(200),
        body(150),
    );
    assert_eq!(
        long_functions(&source, MAX_FN_LINES),
        vec![LongFn {
            line: 1,
            name: "long".into(),
            lines: 101,
        }]
    );
    // One line more makes `exact` too long as well.
    let longer = source.replace("fn exact() {\n", "fn exact() {\n    let _one_more = 0;\n");
    let names: Vec<String> = long_functions(&longer, MAX_FN_LINES)
        .into_iter()
        .map(|f| format!("{}:{}:{}", f.name, f.line, f.lines))
        .collect();
    assert_eq!(names, ["long:1:101", "exact:103:101"]);
    assert_eq!(fn_name("pub(in crate::x) unsafe fn f<T>()"), Some("f"));
    assert_eq!(fn_name("let f = fn_pointer;"), None);
}

#[test]
fn test_module_files_are_found() {
    let source = "#[allow(unused)]\nmod a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\npub(crate) mod testing;\n";
    let files = test_module_files(Path::new("src/x/parser.rs"), source);
    assert!(
        files.contains(&PathBuf::from("src/x/parser/tests.rs")),
        "{files:?}"
    );
    assert!(
        files.contains(&PathBuf::from("src/x/parser/testing.rs")),
        "{files:?}"
    );
    assert!(!files.iter().any(|f| f.ends_with("a.rs")), "{files:?}");
    let files = test_module_files(Path::new("src/x/mod.rs"), source);
    assert!(
        files.contains(&PathBuf::from("src/x/tests.rs")),
        "{files:?}"
    );
}

/// A file may have this many lines outside tests (comments and blank lines
/// count)...
const MAX_UNEXPLAINED_LINES: usize = 700;
/// ...or more if its opening `//!` comment has a line starting with this,
/// followed by the reason: `//! Kept in one file because the state machine
/// and its tables are read together.`
const KEPT_WHOLE: &str = "//! Kept in one file because";

/// The reason the opening `//!` comment of `source` gives for keeping the
/// file whole, if it gives one: the text after [`KEPT_WHOLE`] on its line
/// (a reason continued on the next lines is fine; its first words must be
/// on that line).
fn kept_whole_reason(source: &str) -> Option<&str> {
    source
        .lines()
        .map(str::trim_start)
        .take_while(|line| line.starts_with("//!"))
        .find_map(|line| line.strip_prefix(KEPT_WHOLE))
        .map(|reason| reason.trim_matches(|c: char| c.is_whitespace() || c == '.' || c == ':'))
        .filter(|reason| !reason.is_empty())
}

/// The lines of `source` outside tests, if they are more than `limit` and
/// the file does not say why it is kept whole.
fn unexplained_length(source: &str, limit: usize) -> Option<usize> {
    let lines = outside_test_items(source).len();
    (lines > limit && kept_whole_reason(source).is_none()).then_some(lines)
}

#[test]
fn a_file_over_700_lines_outside_tests_says_why_it_is_kept_whole() {
    let sources = sources_outside_tests();
    let long: Vec<String> = sources
        .iter()
        .filter_map(|(f, text)| {
            let lines = unexplained_length(text, MAX_UNEXPLAINED_LINES)?;
            Some(format!("{}: {lines} lines outside tests", relative(f)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_UNEXPLAINED_LINES} lines outside tests (split them by concern, \
         or give the reason in the opening comment, on a line starting `{KEPT_WHOLE}`):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_scan_counts_lines_outside_tests_and_reads_the_reason() {
    // 3 lines of opening comment, 697 of code: 700, at the limit; a test
    // module of 300 lines is not counted.
    let opening = "//! A parser.\n//!\n//! Reads records.\n";
    let tests = format!("#[cfg(test)]\nmod tests {{\n{}}}\n", body(298));
    let source = format!("{opening}fn f() {{\n{}}}\n{tests}", body(695));
    assert_eq!(outside_test_items(&source).len(), 700);
    assert_eq!(unexplained_length(&source, MAX_UNEXPLAINED_LINES), None);
    // One blank line more is over it.
    let over = source.replacen("fn f()", "\nfn f()", 1);
    assert_eq!(unexplained_length(&over, MAX_UNEXPLAINED_LINES), Some(701));
    // A reason in the opening comment lets it be.
    let reason = "//! Kept in one file because the records and their checks are read together.\n";
    let explained = format!("{reason}{over}");
    assert_eq!(
        kept_whole_reason(&explained),
        Some("the records and their checks are read together")
    );
    assert_eq!(unexplained_length(&explained, MAX_UNEXPLAINED_LINES), None);
    // The marker without a reason, or outside the opening comment, does not.
    let bare = format!("//! Kept in one file because.\n{over}");
    assert_eq!(unexplained_length(&bare, MAX_UNEXPLAINED_LINES), Some(702));
    let later = over.replacen("fn f()", &format!("{reason}fn f()"), 1);
    assert_eq!(kept_whole_reason(&later), None);
    assert_eq!(unexplained_length(&later, MAX_UNEXPLAINED_LINES), Some(702));
}

/// The calls that create, replace or truncate a file. Outside the writer
/// crate (`outfile/`) only [`WRITER_EXCEPTIONS`] may use them.
const FILE_WRITING_CALLS: &[&str] = &[
    "File::create(",
    "fs::write(",
    "OpenOptions::new(",
    "File::options(",
    "fs::rename(",
    "fs::copy(",
    "O_TRUNC",
];

/// (file, call, why it is not an output): each entry must still match, so
/// the list cannot go stale.
const WRITER_EXCEPTIONS: &[(&str, &str, &str)] = &[
    ("replayer/src/target.rs", "OpenOptions::new(", "the replay target: a device or scratch file the user names for I/O, written in place by design"),
    ("replayer/src/target/file.rs", "OpenOptions::new(", "the scratch file: created where missing and grown in place as the replay target"),
    ("replayer/src/in_use.rs", "OpenOptions::new(", "opens a device or file only to ask whether it is in use"),
    ("replayer/src/cpu_idle.rs", "OpenOptions::new(", "the kernel's /dev/cpu_dma_latency request, held open"),
    ("recorder/src/capture/ring.rs", "OpenOptions::new(", "reads the kernel's tracefs ring buffers"),
    ("recorder/src/capture/text_pipe.rs", "OpenOptions::new(", "reads the kernel's tracefs trace pipe"),
    ("recorder/src/capture/session.rs", "OpenOptions::new(", "writes tracefs control files (kernel settings, not files)"),
    ("trace-format/src/reader/mod.rs", "OpenOptions::new(", "opens a trace for reading"),
];

/// Whether `line` has `call` not as the tail of a longer name
/// (`AtomicFile::create(` is not `File::create(`).
fn contains_call(line: &str, call: &str) -> bool {
    line.match_indices(call).any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Lines of `source` outside `#[cfg(test)]` items (an item's attributes,
/// the `#[cfg(test)]` among them, belong to it), with their numbers.
fn outside_test_items(source: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut kept = Vec::new();
    let mut cfg_test = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let attribute_or_comment = trimmed.starts_with("#[") || trimmed.starts_with("//");
        if trimmed.starts_with("#[cfg(test)]") {
            cfg_test = true;
        } else if cfg_test && !attribute_or_comment && !trimmed.is_empty() {
            cfg_test = false;
            i = item_end(&lines, i, indent) + 1;
            continue;
        } else {
            cfg_test = cfg_test && attribute_or_comment;
            if !cfg_test {
                kept.push((i + 1, line));
            }
        }
        i += 1;
    }
    kept
}

/// Code lines of `source` outside `#[cfg(test)]` items, with their numbers:
/// no comments, attributes or blank lines.
fn non_test_lines(source: &str) -> Vec<(usize, &str)> {
    outside_test_items(source)
        .into_iter()
        .filter(|(_, line)| {
            let trimmed = line.trim_start();
            !(trimmed.starts_with("#[") || trimmed.starts_with("//") || trimmed.is_empty())
        })
        .collect()
}

/// Every file tracemark writes goes through the one writer (`outfile`):
/// no product code outside it creates, truncates or renames a file.
/// Left out: tests, test modules, `fuzz/` and `bench/` (developer tools
/// that write their own scratch files), examples and `build.rs`.
#[test]
fn every_output_goes_through_the_one_writer() {
    let mut files = Vec::new();
    rust_files(root(), true, &mut files);
    let test_files: HashSet<PathBuf> = files
        .iter()
        .flat_map(|f| test_module_files(f, &std::fs::read_to_string(f).unwrap()))
        .collect();
    let mut found = Vec::new();
    let mut used = HashSet::new();
    for f in &files {
        let rel = relative(f);
        let skipped = ["outfile/", "fuzz/", "bench/"]
            .iter()
            .any(|p| rel.starts_with(p))
            || rel.contains("/examples/")
            || rel == "build.rs"
            || test_files.contains(f);
        if skipped {
            continue;
        }
        let source = std::fs::read_to_string(f).unwrap();
        for (number, line) in non_test_lines(&source) {
            for call in FILE_WRITING_CALLS {
                if !contains_call(line, call) {
                    continue;
                }
                match WRITER_EXCEPTIONS
                    .iter()
                    .position(|(file, c, _)| *file == rel && c == call)
                {
                    Some(i) => {
                        used.insert(i);
                    }
                    None => found.push(format!("{rel}:{number}: {}", line.trim())),
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "files written outside the writer crate (use outfile::write or outfile::AtomicFile):\n{}",
        found.join("\n")
    );
    let stale: Vec<_> = (0..WRITER_EXCEPTIONS.len())
        .filter(|i| !used.contains(i))
        .map(|i| WRITER_EXCEPTIONS[i].0)
        .collect();
    assert!(
        stale.is_empty(),
        "exceptions that no longer match: {stale:?}"
    );
}

#[test]
fn the_writer_scan_skips_test_items_only() {
    let source = "fn a() {\n    std::fs::write(p, b);\n}\n#[cfg(test)]\nmod tests {\n    fn b() {\n        File::create(x);\n    }\n}\nfn c() {}\n";
    let lines: Vec<usize> = non_test_lines(source).iter().map(|(n, _)| *n).collect();
    assert_eq!(lines, [1, 2, 3, 10]);
    assert!(contains_call(
        "let f = std::fs::File::create(p)?;",
        "File::create("
    ));
    assert!(!contains_call(
        "let f = AtomicFile::create(p)?;",
        "File::create("
    ));
}
