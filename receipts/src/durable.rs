//! Durable writes: a file that appears whole, or not at all.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Writes `bytes` as `dir/name` (creating `dir` when needed) so that no reader, crash or full
/// disk ever sees a partial file: a temporary file in the same directory is written and
/// synced, renamed into place, and the directory is synced so the rename survives a crash.
/// On any failure nothing is left behind, neither the temporary file nor a partial `name`.
pub fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let path = dir.join(name);
    let temp = dir.join(format!(".{name}.tmp"));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&temp, &path));
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    if let Err(e) = fs::File::open(dir).and_then(|d| d.sync_all()) {
        // Without the directory synced the file may vanish in a crash: do not claim it.
        let _ = fs::remove_file(&path);
        return Err(e);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_files_and_leaves_nothing_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_new(&dir.path().join("a/b"), "r.json", b"{}\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"{}\n");
        // A directory that cannot exist (under a regular file).
        let file = dir.path().join("f");
        fs::write(&file, "x").unwrap();
        assert!(write_new(&file.join("sub"), "r.json", b"{}").is_err());
        // The name is taken: the write fails and leaves the old file and no temporary.
        fs::create_dir(dir.path().join("taken.json")).unwrap();
        assert!(write_new(dir.path(), "taken.json", b"{}").is_err());
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    }
}
