//! `suite.toml`: which traces make a suite.
//!
//! ```toml
//! name = "tracemark reference suite"
//! idle_cap = "100ms"              # realtime default "1s"; "10ms", "none" (kept whole),
//!                                 # any duration `--idle-cap` takes
//!
//! [[trace]]
//! name = "office-writer"
//! file = "office-writer.tmt"      # relative to the suite file
//! category = "office"
//! description = "LibreOffice Writer: a long document edited and saved"
//! ```

use crate::options::IdleCap;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The suite's idle policy in realtime mode (None: the program's default).
    #[serde(default)]
    pub idle_cap: Option<IdleCap>,
    /// Empty only in a profile whose traces are not captured yet (then
    /// [`SuiteFile::load`] refuses it and says so).
    #[serde(rename = "trace", alias = "traces", default)]
    pub traces: Vec<SuiteEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteEntry {
    pub name: String,
    pub file: PathBuf,
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub description: String,
}

/// Why a suite file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteFileError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: the suite names no traces ([[trace]] tables){}", path.display(), if description.is_empty() { String::new() } else { format!(": {description}") })]
    NoTraces { path: PathBuf, description: String },
}

impl SuiteFile {
    /// Reads a suite file; trace paths become relative to its folder, and
    /// every trace must exist; a suite without traces is refused.
    pub fn load(path: &Path) -> Result<SuiteFile, SuiteFileError> {
        let suite = SuiteFile::load_allow_empty(path)?;
        if suite.traces.is_empty() {
            return Err(SuiteFileError::NoTraces {
                path: path.to_path_buf(),
                description: suite.description,
            });
        }
        Ok(suite)
    }

    /// [`SuiteFile::load`], but a suite naming no traces is returned as it is.
    pub fn load_allow_empty(path: &Path) -> Result<SuiteFile, SuiteFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| SuiteFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut suite: SuiteFile = toml::from_str(&text).map_err(|e| SuiteFileError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for t in &mut suite.traces {
            if t.file.is_relative() {
                t.file = dir.join(&t.file);
            }
            // Say what the entry really is: missing, unreadable, or not a
            // regular file (a directory, a FIFO, /dev/zero).
            let problem = match std::fs::metadata(&t.file) {
                Ok(m) if m.is_file() => None,
                Ok(m) => Some(format!(
                    "is {}, not a trace file",
                    outfile::kind_name(&m.file_type())
                )),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Some("does not exist".to_string())
                }
                Err(e) => Some(format!("cannot be read: {e}")),
            };
            if let Some(problem) = problem {
                return Err(SuiteFileError::Parse {
                    path: path.to_path_buf(),
                    message: format!("trace '{}': {} {problem}", t.name, t.file.display()),
                });
            }
        }
        Ok(suite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_suite_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.tmt"), b"x").unwrap();
        let p = dir.path().join("suite.toml");
        std::fs::write(
            &p,
            "name = \"s\"\n[[trace]]\nname = \"a\"\nfile = \"a.tmt\"\ncategory = \"office\"\n",
        )
        .unwrap();
        let s = SuiteFile::load(&p).unwrap();
        assert_eq!(s.traces[0].file, dir.path().join("a.tmt"));
        std::fs::write(&p, "[[trace]]\nname = \"b\"\nfile = \"b.tmt\"\n").unwrap();
        let e = SuiteFile::load(&p).unwrap_err().to_string();
        assert!(e.contains("b.tmt does not exist"), "{e}");
        // A directory, a FIFO and /dev/zero are named for what they are.
        std::fs::create_dir(dir.path().join("d.tmt")).unwrap();
        let fifo = dir.path().join("f.tmt");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        for (file, words) in [
            ("d.tmt", "d.tmt is a directory"),
            ("f.tmt", "f.tmt is a FIFO (named pipe)"),
            ("/dev/zero", "/dev/zero is a character device"),
        ] {
            std::fs::write(&p, format!("[[trace]]\nname = \"x\"\nfile = \"{file}\"\n")).unwrap();
            let e = SuiteFile::load(&p).unwrap_err().to_string();
            assert!(e.contains(words), "{e}");
        }
        std::fs::write(&p, "[[trace]]\nname = \"b\"\nfil = \"b.tmt\"\n").unwrap();
        let e = SuiteFile::load(&p).unwrap_err().to_string();
        assert!(e.contains("suite.toml") && e.contains("fil"), "{e}");
    }

    #[test]
    fn the_idle_cap_parses_and_an_empty_suite_is_refused_with_its_description() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("data.toml");
        std::fs::write(
            &p,
            "description = \"copies, not captured yet\"\nidle_cap = \"1s\"\n",
        )
        .unwrap();
        let s = SuiteFile::load_allow_empty(&p).unwrap();
        assert_eq!(
            s.idle_cap,
            Some(IdleCap::Cap(trace_format::Nanos(1_000_000_000)))
        );
        assert!(s.traces.is_empty());
        let e = SuiteFile::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("names no traces") && e.contains("copies, not captured yet"),
            "{e}"
        );
        // The command line's grammar: a fraction and a bare number of
        // seconds read as `--idle-cap` reads them.
        std::fs::write(&p, "idle_cap = \"1.5\"\n").unwrap();
        let s = SuiteFile::load_allow_empty(&p).unwrap();
        assert_eq!(s.idle_cap, Some("1500ms".parse().unwrap()));
        std::fs::write(&p, "idle_cap = \"10 parsecs\"\n").unwrap();
        let e = SuiteFile::load_allow_empty(&p).unwrap_err().to_string();
        // One error, naming the file, the line and the key.
        assert!(
            e.contains("data.toml") && e.contains("line 1") && e.contains("idle_cap"),
            "{e}"
        );
    }
}
