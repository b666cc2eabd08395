//! The shell completions and the man page come from the argument
//! definitions: bash completes subcommands and options from
//! `tracemark completions bash`, and `tracemark man` is a roff page naming
//! every subcommand.

use crate::support;

/// What bash's completion function offers for the words typed so far (the
/// last one being completed).
fn bash_complete(words: &[&str]) -> Vec<String> {
    let script = format!(
        r#"source <("$TRACEMARK" completions bash) || exit 3
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
fn=$(complete -p tracemark | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[ -n "$fn" ] || exit 4
"$fn" tracemark "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        words = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("TRACEMARK", env!("CARGO_BIN_EXE_tracemark"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_options() {
    let subs = bash_complete(&["tracemark", "re"]);
    assert!(subs.contains(&"replay".to_string()), "{subs:?}");
    assert!(subs.contains(&"results".to_string()), "{subs:?}");
    assert!(!subs.contains(&"suite".to_string()), "{subs:?}");

    let opts = bash_complete(&["tracemark", "replay", "--ma"]);
    assert!(opts.contains(&"--mapping".to_string()), "{opts:?}");
    let opts = bash_complete(&["tracemark", "suite", "--no-"]);
    for o in ["--no-db", "--no-warmup"] {
        assert!(opts.contains(&o.to_string()), "{o} not in {opts:?}");
    }
    let nested = bash_complete(&["tracemark", "results", "l"]);
    assert!(
        nested.contains(&"list".to_string()) && nested.contains(&"leaderboard".to_string()),
        "{nested:?}"
    );
    // Values of an enumerated option.
    let modes = bash_complete(&["tracemark", "replay", "--mode", ""]);
    assert!(
        modes.contains(&"realtime".to_string()) && modes.contains(&"compressed".to_string()),
        "{modes:?}"
    );
}

#[test]
fn bash_completes_the_values_of_every_enumerated_option() {
    let formats = bash_complete(&["tracemark", "convert", "--format", ""]);
    for name in ["auto", "blkparse", "alibaba", "vscsi-bin"] {
        assert!(
            formats.contains(&name.to_string()),
            "{name} not in {formats:?}"
        );
    }
    for (words, want) in [
        (&["tracemark", "convert", "--event", ""][..], "queue"),
        (&["tracemark", "convert", "--split-by", ""], "volume"),
        (&["tracemark", "capture", "--events", ""], "bio"),
        (
            &["tracemark", "replay", "--precondition", ""],
            "read-regions",
        ),
        (&["tracemark", "replay", "--skip-ops", ""], "write-zeroes"),
        (&["tracemark", "suite", "--cpu-idle", ""], "poll"),
        (&["tracemark", "consistency", "--mode", ""], "realtime"),
    ] {
        let got = bash_complete(words);
        assert!(got.contains(&want.to_string()), "{words:?}: {got:?}");
    }
}

/// `convert --help` lists every name of the recorder's format table.
#[test]
fn convert_help_lists_every_format_name() {
    let out = support::tracemark()
        .args(["convert", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let (_, values) = help
        .split_once("[possible values: auto, ")
        .unwrap_or_else(|| panic!("no list of --format values: {help}"));
    let listed: Vec<&str> = values.split(']').next().unwrap().split(", ").collect();
    let table: Vec<&str> = recorder::formats::Format::all().map(|f| f.name()).collect();
    assert_eq!(listed, table);
}

/// The typed options accept what the hand-matched strings did: any case and
/// the aliases for `--format`, blkparse's letters for `--event`; other
/// values are refused with the list of the valid ones.
#[test]
fn convert_takes_format_aliases_in_any_case_and_blkparse_event_letters() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    let blkparse = recorder::formats::Format::from_name("blkparse").unwrap();
    std::fs::write(&input, blkparse.spec().example).unwrap();
    let convert = |args: &[&str]| {
        support::tracemark()
            .arg("convert")
            .arg(&input)
            .arg("-o")
            .arg(dir.path().join("out.tmt"))
            .args(args)
            .arg("-q")
            .output()
            .unwrap()
    };
    for args in [
        &["--format", "BlkParse", "--event", "D"][..],
        &["--format", "AUTO", "--event", "Q"],
        &["--format", "blkparse", "--event", "queue"],
    ] {
        let out = convert(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = convert(&["--format", "nosuch"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'nosuch'") && err.contains("blkparse, xperf"),
        "{err}"
    );
    let out = convert(&["--event", "A"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[possible values: issue, queue]"), "{err}");
}

#[test]
fn zsh_and_fish_scripts_name_the_subcommands() {
    for shell in ["zsh", "fish"] {
        let out = support::tracemark()
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        for sub in ["replay", "suite", "results", "leaderboard"] {
            assert!(text.contains(sub), "{shell}: no {sub}");
        }
    }
}

#[test]
fn the_man_page_lists_every_subcommand_and_each_has_its_own() {
    let out = support::tracemark().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH tracemark 1"),
        "{page}"
    );
    assert!(page.contains(".TH tracemark 1"));
    for sub in ["convert", "replay", "suite", "results", "consistency"] {
        assert!(page.contains(&format!("tracemark\\-{sub}(1)")), "no {sub}");
        let sub_page = support::tracemark().args(["man", sub]).output().unwrap();
        assert!(sub_page.status.success());
        let text = String::from_utf8_lossy(&sub_page.stdout);
        assert!(
            text.contains(&format!(".TH tracemark-{sub} 1")),
            "{sub}: {text}"
        );
    }
    let replay = support::tracemark()
        .args(["man", "replay"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&replay.stdout).contains("\\-\\-queue\\-depth"));
    let none = support::tracemark()
        .args(["man", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
}

/// The subcommands `tracemark WORDS --help` lists under "Commands:".
fn subcommands(words: &[String]) -> Vec<String> {
    let out = support::tracemark()
        .args(words)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{words:?}");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some((_, rest)) = help.split_once("Commands:\n") else {
        return Vec::new();
    };
    rest.lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// `-q` means `--quiet` wherever a command has it (as in ripgrep and fio):
/// no other option takes the letter, in any subcommand at any depth.
#[test]
fn dash_q_means_quiet_in_every_subcommand() {
    let mut pending: Vec<Vec<String>> = vec![Vec::new()];
    let mut quiet = Vec::new();
    let mut seen = 0;
    while let Some(words) = pending.pop() {
        for sub in subcommands(&words) {
            let mut deeper = words.clone();
            deeper.push(sub);
            pending.push(deeper);
        }
        let out = support::tracemark()
            .args(&words)
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        for line in help.lines().map(str::trim_start) {
            if line.starts_with("-q,") {
                assert!(line.starts_with("-q, --quiet"), "{words:?}: {line}");
                quiet.push(words.join(" "));
            }
        }
        seen += 1;
    }
    assert!(seen > 10, "only {seen} commands walked");
    for cmd in ["convert", "capture"] {
        assert!(quiet.contains(&cmd.to_string()), "{cmd}: {quiet:?}");
    }
    let replay = support::tracemark()
        .args(["replay", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&replay.stdout);
    assert!(help.contains("--queue-depth <QUEUE_DEPTH>"), "{help}");
}
