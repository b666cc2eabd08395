//! `suite.toml`: which traces make a suite.
//!
//! ```toml
//! name = "tracemark reference suite"
//!
//! [[trace]]
//! name = "office-writer"
//! file = "office-writer.tmt"      # relative to the suite file
//! category = "office"
//! description = "LibreOffice Writer: a long document edited and saved"
//! ```

use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "trace", alias = "traces")]
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
}

impl SuiteFile {
    /// Reads a suite file; trace paths become relative to its folder, and
    /// every trace must exist.
    pub fn load(path: &Path) -> Result<SuiteFile, SuiteFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| SuiteFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut suite: SuiteFile = toml::from_str(&text).map_err(|e| SuiteFileError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        if suite.traces.is_empty() {
            return Err(SuiteFileError::Parse {
                path: path.to_path_buf(),
                message: "the suite names no traces ([[trace]] tables)".into(),
            });
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        for t in &mut suite.traces {
            if t.file.is_relative() {
                t.file = dir.join(&t.file);
            }
            if !t.file.is_file() {
                return Err(SuiteFileError::Parse {
                    path: path.to_path_buf(),
                    message: format!("trace '{}': {} does not exist", t.name, t.file.display()),
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
        std::fs::write(&p, "[[trace]]\nname = \"b\"\nfil = \"b.tmt\"\n").unwrap();
        let e = SuiteFile::load(&p).unwrap_err().to_string();
        assert!(e.contains("suite.toml") && e.contains("fil"), "{e}");
    }
}
