//! The reference suite that travels inside the binary: the profiles
//! (`traces/quick.toml`, `full.toml`, `data.toml`) and their traces, embedded
//! at build time (see `build.rs`) and written out on first use to a cache
//! folder named by their content hash, where `tracemark suite` reads them as
//! it reads any suite file. Works the same from the checkout, from
//! `cargo install`, or with the checkout gone.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/reference_traces.rs"));
}

/// The profiles, PCMark 10 style: `quick` (the default), `full` (every
/// trace), `data` (file copies).
pub const PROFILES: [&str; 3] = ["quick", "full", "data"];
pub const DEFAULT_PROFILE: &str = "quick";

/// Where the embedded files go: `$XDG_CACHE_HOME/tracemark/reference-HASH`,
/// else `$HOME/.cache/...`, else the temporary folder.
fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })
        .unwrap_or_else(std::env::temp_dir);
    base.join("tracemark")
        .join(format!("reference-{}", embedded::CONTENT_HASH))
}

/// Writes `bytes` to `path` unless it already holds exactly them (through a
/// temporary name and a rename, so a concurrent run never reads half a file).
fn write_if_different(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).is_ok_and(|have| have == bytes) {
        return Ok(());
    }
    Ok(outfile::write_own(path, bytes)?)
}

/// The suite file of profile `name`, with its traces beside it, written out
/// from the binary to the cache folder when not there already.
pub fn profile_path(name: &str) -> Result<PathBuf> {
    let file = format!("{name}.toml");
    if !embedded::FILES.iter().any(|(n, _)| *n == file) {
        bail!("no profile '{name}' (profiles: {})", PROFILES.join(", "));
    }
    let dir = cache_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the reference-trace cache {}", dir.display()))?;
    for (n, bytes) in embedded::FILES {
        write_if_different(&dir.join(n), bytes)
            .context("writing out the reference traces embedded in tracemark")?;
    }
    Ok(dir.join(file))
}
