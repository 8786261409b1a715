//! Why the harness could not start.

use std::path::{Path, PathBuf};

/// Why the harness could not start: a malformed fixture or an unusable path. Exit code 64.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// A fixture (or the `harness:` block of an `X.yaml`) does not parse.
    #[error("{}{}: malformed fixture: {message}", file.display(), location(*line, *column))]
    Malformed {
        /// The file concerned.
        file: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A case's scratch workspace could not be prepared.
    #[error("cannot prepare the scratch workspace: {context}: {source}")]
    Workspace {
        /// What was being done.
        context: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A path given to the harness is not a package, fixture file or directory of packages.
    #[error("{}: {message}", path.display())]
    Path {
        /// The path concerned.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

impl HarnessError {
    pub(crate) fn yaml(file: &Path, e: &serde_yaml_ng::Error) -> HarnessError {
        let loc = e.location();
        HarnessError::Malformed {
            file: file.to_path_buf(),
            line: loc.as_ref().map(|l| l.line()),
            column: loc.as_ref().map(|l| l.column()),
            message: e.to_string(),
        }
    }

    pub(crate) fn path(path: &Path, message: impl Into<String>) -> HarnessError {
        HarnessError::Path {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}
