//! Why an artifact was not admitted.

use runx_profile::{ARTIFACT_BYTES, LimitDef};
use std::io;
use std::path::PathBuf;

/// Why an artifact was not admitted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The path is empty or absolute.
    #[error("artifact path `{path}` must be a relative path inside its scope")]
    NotRelative {
        /// The path as given.
        path: String,
    },
    /// The scope directory cannot be opened.
    #[error("the artifact scope {} cannot be opened: {source}", root.display())]
    Scope {
        /// The scope directory.
        root: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file cannot be opened or examined.
    #[error("artifact `{path}` cannot be opened in {}: {source}", root.display())]
    Open {
        /// The path as given.
        path: String,
        /// The scope directory.
        root: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The path climbs out of its scope (`..`), is or passes through a symbolic link, or
    /// crosses into another file system: it may lead outside its scope.
    #[error("artifact `{path}` is refused: {reason}")]
    OutsideScope {
        /// The path as given.
        path: String,
        /// Why, naming the scope.
        reason: String,
    },
    /// The path names something other than a regular file.
    #[error("artifact `{path}` is {found}, not a regular file")]
    NotAFile {
        /// The path as given.
        path: String,
        /// What it is: `a directory`, `a FIFO`, ...
        found: &'static str,
    },
    /// The file is larger than [`ARTIFACT_BYTES`] (or grew past it while it was copied).
    #[error("artifact `{path}` is {bytes} bytes or more; at most {} bytes (512 MiB) are admitted", ARTIFACT_BYTES.max)]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size, as far as it was read.
        bytes: u64,
    },
    /// Reading, hashing or writing the file into its snapshot failed.
    #[error("copying `{path}` into its snapshot: {source}")]
    Copy {
        /// The path as given.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file was written while it was read into its snapshot: it ended before the size it
    /// had when it was opened, or its size or modification time moved.
    #[error(
        "artifact `{path}` changed while it was copied into its snapshot; run again once nothing writes to it"
    )]
    Changed {
        /// The path as given.
        path: String,
    },
}

impl AdmissionError {
    /// The failure code (kind `page`), unless a limit was exceeded.
    pub fn code(&self) -> &'static str {
        match self {
            AdmissionError::NotRelative { .. }
            | AdmissionError::Scope { .. }
            | AdmissionError::Open { .. } => "artifact_path",
            AdmissionError::OutsideScope { .. } => "artifact_scope",
            AdmissionError::NotAFile { .. } => "artifact_type",
            AdmissionError::TooLarge { .. } => ARTIFACT_BYTES.name,
            AdmissionError::Copy { .. } => "artifact_copy",
            AdmissionError::Changed { .. } => "artifact_changed",
        }
    }

    /// The limit the artifact exceeded, if that is why it was refused.
    pub fn limit(&self) -> Option<&'static LimitDef> {
        matches!(self, AdmissionError::TooLarge { .. }).then_some(&ARTIFACT_BYTES)
    }
}
