//! The harness: fixture cases of skill packages, run through the same [`Runtime::run`](crate::Runtime::run) as
//! `runx skill`, and compared with what each case expects.
//!
//! # Fixtures
//!
//! Cases live inline in a package's `X.yaml` under `harness: { files: [...], cases: [...] }` and
//! in files `fixtures/*.yaml` of the package (a file holds `cases: [...]` or one case). A case,
//! in this runtime's form and in runx packages' (`kind`, `target`, `caller`,
//! `operator_journeys`, `metadata`, `setup`):
//!
//! ```yaml
//! name: greets-world
//! kind: skill                  # graph, agent, agent_task, mcp, a2a cases are skipped
//! target: ..                   # the package, relative to the fixture file
//! runner: greet                # the default runner when absent
//! inputs: { name: World }
//! env: { REGION: eu }          # the only environment the run sees
//! files: { notes/a.txt: "hi" } # created in the scratch workspace before the run
//! expect:
//!   status: sealed             # or failure; default: failure when `error` is given
//!   output: { subset: { greeting: "Hello, World." } }   # and/or { exact: ... }
//!   error: { kind: environment, code: missing_environment, message_contains: REGION }
//!   receipt: { schema: runx.receipt.v1, state: sealed, disposition: closed }
//!   steps: []                  # a javascript or cli-tool run has no graph steps
//! ```
//!
//! A *subset* match holds when every key (and every array element, by index) the expectation
//! gives matches the actual value recursively, an absent key matching `null`; the actual value
//! may hold more. An *exact* match requires equal values (numbers compare by value, so `1`
//! equals `1.0`). A mismatch is reported at the JSON path of the first difference, like
//! `$.output.items[2].name`. Expectations this runtime can never meet (`policy_denied`, graph
//! steps, receipt fields of signed graph receipts, agent answers) fail the case and say so.
//!
//! Every package found is reported: one whose profile does not load or whose fixture is
//! malformed is a broken [`Suite`] (its cases are not run); packages nested below a directory
//! are found too.
//!
//! # Isolation
//!
//! Each case runs in its own scratch workspace: a fresh temporary directory holding a copy of the
//! regular files and directories of the package's `fixtures/data/` directory (as `data/`; read
//! through [`runx_worker::scope`], so no symlink is followed and a symlinked `fixtures/data`
//! fails the case) and the case's `files`. The run's workspace and receipt directory
//! (`.runx/receipts`) are inside it, and the run's environment is exactly the case's `env`
//! ([`EnvSource::Map`](crate::EnvSource::Map)): nothing of the harness's own environment leaks. A
//! cli-tool case's process starts from the fixed baseline
//! [`FIXED_BASELINE`](crate::environment::FIXED_BASELINE) (`HOME` = the workspace) instead of
//! the harness's `PATH`, `HOME`, locale and time zone. `X.yaml` and fixture files are read like
//! profiles: contained, capped and checked for nesting before they are parsed.
//!
//! # Use
//!
//! - [`fixture`]: what a case says (inputs, environment, files, expectations);
//! - [`discover`](mod@discover): finding packages and their cases;
//! - [`run`](mod@run): running cases in scratch workspaces into a [`Report`];
//! - [`matching`]: comparing an outcome with an expectation;
//! - [`receipt`](mod@receipt): the one sealed receipt of a whole harness run.
//!
//! [`discover()`] turns paths into [`Suite`]s (a broken package carries a [`PackageError`] naming
//! file and line; only unusable paths are a [`HarnessError`]), and [`run_suites`] runs them on
//! one [`Runtime`](crate::Runtime) into a serializable [`Report`].

use std::path::{Path, PathBuf};

pub mod discover;
pub mod fixture;
pub mod matching;
pub mod receipt;
pub mod run;

pub use discover::{PackageError, Suite, SuiteCase, discover};
pub use fixture::{
    Caller, Case, CaseKind, ErrorExpect, Expect, ExpectStatus, Journey, JourneyMode, OutputExpect,
    RelPath, Setup,
};
pub use matching::{Mismatch, check, check_case, match_exact, match_subset};
pub use receipt::{CaseRecord, HARNESS_RECEIPT_SCHEMA, HarnessReceipt};
pub use run::{
    CaseFailure, CaseResult, CaseVerdict, PackageFailure, PackageResult, PackageStatus, Report,
    ReportStatus, run_case, run_suites, run_suites_with,
};

/// The directory of fixture files inside a package.
pub const FIXTURES_DIR: &str = "fixtures";
/// The directory inside [`FIXTURES_DIR`] copied into every scratch workspace (as `data/`).
pub const DATA_DIR: &str = "data";

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

#[cfg(test)]
mod tests;
