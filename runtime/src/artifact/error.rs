//! Why an artifact was not admitted.

use runx_profile::{ARTIFACT_BYTES, LimitDef, PAGE_BYTES, PAGE_COUNT};
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
    /// The file cannot fit in the pages a run may deliver ([`PAGE_COUNT`]) at its runner's
    /// `page_bytes`, however its records fall: its significant bytes (all but whitespace)
    /// need more pages, each spanning at most `page_bytes` of them and a separator
    /// (`crate::framing::least_pages`).
    #[error(
        "artifact `{path}` needs at least {least_pages} pages of page_bytes {page_bytes}, and a run may deliver at most {}: its {bytes} bytes hold {significant} bytes that are not whitespace, and a page spans at most page_bytes of them; declare page_bytes of at least {least_page_bytes} ({} at most), or split the file",
        PAGE_COUNT.max,
        PAGE_BYTES.max
    )]
    TooManyPages {
        /// The path as given.
        path: String,
        /// Its size.
        bytes: u64,
        /// Its bytes that are not JSON whitespace.
        significant: u64,
        /// The runner's `page_bytes`.
        page_bytes: usize,
        /// The fewest pages it can take at `page_bytes`.
        least_pages: u64,
        /// The smallest `page_bytes` at which it could fit (it may need more).
        least_page_bytes: u64,
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
            AdmissionError::TooManyPages { .. } => PAGE_COUNT.name,
        }
    }

    /// The limit the artifact exceeded, if that is why it was refused.
    pub fn limit(&self) -> Option<&'static LimitDef> {
        match self {
            AdmissionError::TooLarge { .. } => Some(&ARTIFACT_BYTES),
            AdmissionError::TooManyPages { .. } => Some(&PAGE_COUNT),
            _ => None,
        }
    }
}
