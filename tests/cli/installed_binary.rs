//! `cargo install` and then the checkout gone: `tracemark suite` still finds
//! its profiles and traces, because they are built into the binary.

use std::path::Path;
use std::process::Command;

/// Copies the source tree (without cargo's `target/` and `.git`; a
/// `target/` beside a `target.rs` is a module's folder, and is copied).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let build_dir = name == "target" && !entry.path().with_extension("rs").exists();
        if build_dir || name == ".git" {
            continue;
        }
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(&name));
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

#[test]
fn an_installed_binary_runs_the_suite_with_the_checkout_deleted() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let checkout = tmp.path().join("checkout");
    copy_tree(repo, &checkout);
    // A target folder of this run's own, in its temporary folder: a shared
    // one (the running `cargo test` holds the lock of the main one) kept the
    // build script's output of another run, whose `include_bytes!` named that
    // run's checkout, deleted by then. Unoptimised and without debug
    // information, so the whole build costs what a debug build does.
    let target_dir = tmp.path().join("target");
    let root = tmp.path().join("root");
    let out = Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(["install", "--quiet", "--locked", "--offline", "--path"])
        .arg(&checkout)
        .arg("--root")
        .arg(&root)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "false")
        .output()
        .unwrap();

    assert!(
        out.status.success(),
        "cargo install failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&checkout).unwrap();

    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(root.join("bin/tracemark"))
            .current_dir(&elsewhere)
            .env("XDG_CACHE_HOME", tmp.path().join("cache"))
            .env("XDG_DATA_HOME", tmp.path().join("data"))
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "tracemark {args:?}: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    // The default profile and the full one: every trace written out and read through.
    let quick = run(&["suite", "--verify"]);
    assert!(quick.starts_with("profile quick:"), "{quick}");
    let traces_in = |name: &str| {
        let text = std::fs::read_to_string(repo.join("traces").join(name)).unwrap();
        text.matches("[[trace]]").count()
    };
    assert_eq!(
        quick.matches(" ok ").count(),
        traces_in("quick.toml"),
        "{quick}"
    );
    let full = run(&["suite", "--profile", "full", "--verify"]);
    assert_eq!(
        full.matches(" ok ").count(),
        traces_in("full.toml"),
        "{full}"
    );
    // They were written out to the cache (keyed by content), nowhere else.
    let cached: Vec<_> = std::fs::read_dir(tmp.path().join("cache/tracemark"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    for profile in ["quick.toml", "full.toml", "data.toml"] {
        assert!(
            cached[0].join(profile).is_file(),
            "{profile} not in {cached:?}"
        );
    }
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
