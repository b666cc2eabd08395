//! An output that is one of the command's inputs (or the results database)
//! is refused: compared by device and inode, so a symbolic link, a hard link
//! or `/proc/self/fd/N` to the same file is caught as well as its name.

use crate::error::OutputError;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Device and inode of what `path` leads to (links followed); None when
/// there is nothing there (or it cannot be looked at: then it is not read
/// either, and the open that reads it reports why).
fn identity(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}

/// `Err` when `output` is the same file as any of `inputs` (what the
/// command reads) or `db` (the results database it uses). `-` is never an
/// input's file.
pub fn refuse_inputs<I, P>(output: &Path, inputs: I, db: Option<&Path>) -> Result<(), OutputError>
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    if output.as_os_str() == "-" {
        return Ok(());
    }
    let Some(out) = identity(output) else {
        return Ok(());
    };
    if let Some(db) = db {
        if identity(db) == Some(out) {
            return Err(OutputError::IsDatabase {
                output: output.to_path_buf(),
                db: db.to_path_buf(),
            });
        }
    }
    for input in inputs {
        let input = input.as_ref();
        if input.as_os_str() != "-" && identity(input) == Some(out) {
            return Err(OutputError::IsInput {
                output: output.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
    }
    Ok(())
}
