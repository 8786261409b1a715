//! The receipt directory a command reads or writes, and the receipts in it.
//!
//! Where: `--receipt-dir`, else a non-empty `RUNX_RECEIPT_DIR` (runx's name for it, also what a
//! cli-tool step's own `runx` finds in its environment, so that receipts of nested runs land
//! beside the step's), else `.runx/receipts` of the workspace (`RUNX_CWD`, `INIT_CWD`, the
//! working directory). A receipt there is a `sha256-<hex>.json` file, as runx names them; other
//! files (harness receipts, runx's index) are not receipts of runs.

use runx_receipts::RECEIPT_DIR_ENV;
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The receipt directory named by `flag`, else by `env` (the value of `RUNX_RECEIPT_DIR`);
/// `None` leaves the runtime's default.
pub fn receipt_dir(flag: Option<&Path>, env: Option<OsString>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| env.filter(|v| !v.is_empty()).map(PathBuf::from))
}

/// The receipt directory a reading command uses: as a run would write there.
pub fn reading_dir(flag: Option<&Path>) -> PathBuf {
    receipt_dir(flag, std::env::var_os(RECEIPT_DIR_ENV)).unwrap_or_else(|| {
        runx_runtime::default_workspace()
            .join(".runx")
            .join("receipts")
    })
}

/// Whether `name` is a receipt's file name: `sha256-` and 64 lowercase hex digits, `.json`.
pub fn is_receipt_name(name: &str) -> bool {
    name.strip_prefix("sha256-")
        .and_then(|rest| rest.strip_suffix(".json"))
        .is_some_and(|hex| {
            hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// A receipt file that could not be read, and why.
pub struct Unreadable {
    pub file: PathBuf,
    pub message: String,
}

/// The receipts read from a directory, each with its file, and the files that could not be.
pub type Listing = (Vec<(PathBuf, Value)>, Vec<Unreadable>);

/// The receipts in `dir`, read and parsed, in file-name order, with the files that are named as
/// receipts but cannot be read. A missing directory holds none.
pub fn receipts(dir: &Path) -> std::io::Result<Listing> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), Vec::new()));
        }
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_name().to_str().is_some_and(is_receipt_name) {
            files.push(entry.path());
        }
    }
    files.sort();
    let mut read = Vec::new();
    let mut unreadable = Vec::new();
    for file in files {
        // Opened as a receipt is: no FIFO waits, no link is followed out of the directory.
        let linked = file
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink());
        if linked {
            unreadable.push(Unreadable {
                file,
                message: "is a symbolic link; links inside a receipt directory are not followed"
                    .to_string(),
            });
            continue;
        }
        match runx_receipts::read_receipt(&file) {
            Ok(doc) => read.push((file, doc)),
            Err(p) => unreadable.push(Unreadable {
                file,
                message: p.message,
            }),
        }
    }
    Ok((read, unreadable))
}

/// The receipt directory a reading command uses (`flag`, else as a run writes) and its
/// receipts; `None` after saying on stderr why it cannot be listed.
pub fn listing(flag: Option<&Path>) -> Option<(PathBuf, Listing)> {
    let dir = reading_dir(flag);
    match receipts(&dir) {
        Ok(found) => Some((dir, found)),
        Err(e) => {
            errln!("runx: cannot list {}: {e}", dir.display());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_then_runx_receipt_dir_name_the_receipt_folder() {
        let env = Some("/from/env".into());
        assert_eq!(
            receipt_dir(Some(Path::new("flag")), env.clone()),
            Some(PathBuf::from("flag"))
        );
        assert_eq!(receipt_dir(None, env), Some(PathBuf::from("/from/env")));
        assert_eq!(receipt_dir(None, Some("".into())), None);
        assert_eq!(receipt_dir(None, None), None);
    }

    #[test]
    fn receipt_names_are_runx_names() {
        let hex = "a".repeat(64);
        assert!(is_receipt_name(&format!("sha256-{hex}.json")));
        assert!(!is_receipt_name(&format!("sha256-{}.json", "A".repeat(64))));
        assert!(!is_receipt_name("harness-1-2-3.json"));
        assert!(!is_receipt_name(&format!("sha256-{hex}.json.tmp")));
        assert!(!is_receipt_name("index.json"));
    }
}
