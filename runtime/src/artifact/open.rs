//! The source file of an artifact, opened inside its scope.

use super::error::AdmissionError;
use runx_profile::ARTIFACT_BYTES;
use runx_worker::{Scope, ScopeError};
use std::path::Path;

/// Opens `path` inside `root` through [`Scope`]: relative, reached without any symlink, a
/// regular file on the scope's device (checked on the opened descriptor), within the size
/// limit. Nothing is looked up by path twice, so the file cannot be swapped for a link between
/// a check and the open.
pub(super) fn open_contained(path: &str, root: &Path) -> Result<std::fs::File, AdmissionError> {
    let scope = Scope::open(root).map_err(|source| AdmissionError::Scope {
        root: root.to_path_buf(),
        source,
    })?;
    let file = scope.open_file(path).map_err(|e| refused(path, root, e))?;
    let len = file
        .metadata()
        .map_err(|source| AdmissionError::Open {
            path: path.to_string(),
            root: root.to_path_buf(),
            source,
        })?
        .len();
    if len > ARTIFACT_BYTES.max {
        return Err(AdmissionError::TooLarge {
            path: path.to_string(),
            bytes: len,
        });
    }
    Ok(file)
}

/// Why the scope refused the artifact, in admission's words.
fn refused(path: &str, root: &Path, e: ScopeError) -> AdmissionError {
    let path = path.to_string();
    match e {
        ScopeError::NotRelative { .. } => AdmissionError::NotRelative { path },
        ScopeError::Escapes { .. }
        | ScopeError::Symlink { .. }
        | ScopeError::OtherDevice { .. } => AdmissionError::OutsideScope {
            path,
            reason: e.to_string(),
        },
        ScopeError::WrongType { found, .. } => AdmissionError::NotAFile { path, found },
        ScopeError::TooLarge { bytes, .. } => AdmissionError::TooLarge { path, bytes },
        ScopeError::NotFound { .. } => AdmissionError::Open {
            path,
            root: root.to_path_buf(),
            // Not `ErrorKind::NotFound`, whose text is "entity not found".
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        },
        ScopeError::Io { source, .. } => AdmissionError::Open {
            path,
            root: root.to_path_buf(),
            source,
        },
        other => AdmissionError::Open {
            path,
            root: root.to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    }
}
