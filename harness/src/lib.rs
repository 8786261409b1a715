//! The harness: fixture cases of skill packages, run through the same [`Runtime::run`](runx_runtime::Runtime::run) as
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
//! are found too. Before its cases run, a package is checked as `runx skill check` checks it
//! (module closures, exports, commands): an error there makes it broken too, except in a
//! runner that one of its cases names and expects to fail.
//!
//! # Isolation
//!
//! Each case runs in its own scratch workspace: a fresh temporary directory holding a copy of the
//! regular files and directories of the package's `fixtures/data/` directory (as `data/`; read
//! through `runx_worker`'s contained opens, so no symlink is followed and a symlinked `fixtures/data`
//! fails the case) and the case's `files`. The run's workspace and receipt directory
//! (`.runx/receipts`) are inside it, and the run's environment is exactly the case's `env`
//! ([`EnvSource::Map`](runx_runtime::EnvSource::Map)): nothing of the harness's own environment leaks. A
//! cli-tool case's process starts from the fixed baseline
//! `FIXED_BASELINE` of `runx-runtime` (`HOME` = the workspace) instead of
//! the harness's `PATH`, `HOME`, locale and time zone. `X.yaml` and fixture files are read like
//! profiles: contained, capped and checked for nesting before they are parsed.
//!
//! # Use
//!
//! - `fixture`: what a case says (inputs, environment, files, expectations);
//! - `discover`: finding packages and their cases;
//! - `run`: running cases in scratch workspaces into a [`Report`];
//! - `matching`: comparing an outcome with an expectation;
//! - `receipt`: the one sealed receipt of a whole harness run ([`HarnessReceipt`]).
//!
//! [`discover()`] turns paths into [`Suite`]s (a broken package carries a [`PackageError`] naming
//! file and line; only unusable paths are a [`HarnessError`]), and [`run_suites`] runs them on
//! one [`Runtime`](runx_runtime::Runtime) into a serializable [`Report`]:
//!
//! ```no_run
//! use runx_harness::{ReportStatus, discover, run_suites};
//! use runx_runtime::Runtime;
//! use std::path::PathBuf;
//!
//! let suites = discover(&[PathBuf::from("skill-fixtures")])?;
//! let report = run_suites(&Runtime::discover(), &suites);
//! println!("{} passed, {} failed", report.passed, report.failed);
//! assert_eq!(report.status, ReportStatus::Passed);
//! # Ok::<(), runx_harness::HarnessError>(())
//! ```
//!
//! This crate is not where cases are printed (the `runx harness` command does that) nor where a
//! run happens (`runx-runtime`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod checks;
mod compare;
mod discover;
mod error;
mod fixture;
mod matching;
mod plan;
mod receipt;
mod receipt_view;
mod run;

pub use compare::{Mismatch, match_exact, match_subset};
pub use discover::{PackageError, Suite, SuiteCase, discover};
pub use error::HarnessError;
pub use fixture::{
    Caller, Case, CaseKind, ErrorExpect, Expect, ExpectStatus, Journey, JourneyMode, OutputExpect,
    RelPath, Setup,
};
pub use fixture::{DATA_DIR, FIXTURES_DIR};
pub use matching::{check, check_case};
pub use receipt::{CaseRecord, HarnessReceipt};
pub use receipt_view::{RETIRED_RECEIPT_KEYS, view as receipt_view};
pub use run::{
    CaseFailure, CaseResult, CaseVerdict, PackageFailure, PackageResult, PackageStatus, Report,
    ReportStatus, counted, run_case, run_suites, run_suites_with,
};
pub use runx_receipts::HARNESS_RECEIPT_SCHEMA;

#[cfg(test)]
mod receipt_tests;
#[cfg(test)]
mod tests;
