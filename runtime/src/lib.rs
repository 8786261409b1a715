//! Skill packages and their runners: the behaviour behind the `runx` command.
//!
//! A skill package is a directory with an execution profile, `X.yaml` ([`profile`]). This crate
//! resolves a runner's inputs ([`inputs`]) and environment ([`environment`]), runs it
//! ([`runner`]: a javascript export in the no-host workers of `runx-worker`, a paged javascript
//! runner over an admitted JSON array, or a supervised cli-tool subprocess), checks the output
//! contract and writes a `runx.receipt.v1` receipt ([`receipt`]). [`harness`] runs a package's
//! fixture cases through the same path. It does not parse command lines or print anything: that
//! is the `runx` binary's job.
//!
//! Where each behaviour lives:
//!
//! | module | what it holds |
//! |---|---|
//! | [`runtime`] | [`Runtime`], [`RunRequest`], [`RunOutcome`]: one step, start to receipt |
//! | `runner` | the javascript, paged and cli-tool runners |
//! | [`profile`] | the `X.yaml` model, its parser and its rules |
//! | [`yaml`] | the nesting guard every YAML document passes before it is parsed |
//! | [`inputs`] | input resolution and the output contract |
//! | [`environment`] | where environment values come from; the declared-names check |
//! | [`limits`] | every limit, once, as data |
//! | [`failure`] | the failure vocabulary ([`FailureKind`], [`RunError`]) and every mapping into it |
//! | [`artifact`], [`framing`] | admission of paged artifacts; pages of whole records |
//! | [`subprocess`] | staging, environment, command lookup, supervision, capture of a process |
//! | [`receipt`], [`digest`] | receipts; canonical JSON and digests |
//! | [`signing`], [`verification`] | receipt keys, seals and signatures; checking receipt files |
//! | [`report`] | the JSON of a run's result and of a package's description, as printed |
//! | [`harness`] | fixture cases: discovery, running, matching |
//! | [`workers`], [`cancel`], [`progress`] | the worker pool, cancellation, page progress |
//!
//! # Calling a runner as a step
//!
//! A graph runner keeps one [`Runtime`] (and so one warm worker pool) and calls
//! [`Runtime::run`] once per step. The workers are processes: name the worker executable (the
//! `runx-worker` binary of `runx-worker`, or `runx` with its `__worker` subcommand), or let
//! [`Runtime::discover`] find it (`RUNX_WORKER`, then `runx-worker` next to the current
//! executable).
//!
//! ```no_run
//! use runx_runtime::{EnvSource, RunRequest, Runtime};
//! use runx_worker::process::WorkerCommand;
//! use serde_json::json;
//! use std::collections::BTreeMap;
//!
//! let runtime = Runtime::new(WorkerCommand::new("/usr/local/bin/runx").arg("__worker"));
//! let inputs = json!({ "name": "Ada" }).as_object().cloned().unwrap_or_default();
//! let mut step = RunRequest::new("skill-fixtures/hello", inputs);
//! step.runner = Some("greet".to_string());
//! // Only these values are visible to the runner, and only for names it declares.
//! step.env = EnvSource::Map(BTreeMap::from([("REGION".to_string(), "eu".to_string())]));
//! let outcome = runtime.run(&step);
//! match &outcome.result {
//!     Ok(output) => println!("sealed: {output}"),
//!     Err(e) => eprintln!("{}/{}: {}", e.kind, e.code, e.message),
//! }
//! // Every run whose package loads, sealed or not, leaves a receipt.
//! println!("receipt: {:?}", outcome.receipt_path);
//! // Another thread may stop this one step: `step.cancel.cancel()` kills its worker (or its
//! // cli-tool process group) and the run ends `interrupted`, with its receipt.
//! ```
//!
//! Graph runners in other languages reach the same warm runtime through `runx serve`
//! (the `runx-serve` crate): JSON-RPC 2.0 over stdio, one step per `run` request.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod artifact;
pub mod cancel;
pub mod digest;
mod durable;
pub mod environment;
pub mod failure;
pub mod framing;
pub mod harness;
pub mod inputs;
pub mod limits;
pub mod profile;
pub mod progress;
pub mod receipt;
pub mod report;
mod runner;
pub mod runtime;
pub mod signing;
pub mod subprocess;
pub mod verification;
pub mod workers;
pub mod yaml;

pub use environment::EnvSource;

/// Property-test settings: `default` cases, or as many as `PROPTEST_CASES` says (the long runs
/// recorded in the README set it to 1,000,000).
#[cfg(test)]
pub(crate) fn proptest_config(default: u32) -> proptest::test_runner::Config {
    let mut config = proptest::test_runner::Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default;
    }
    config
}
pub use failure::{FailureKind, RunError};
pub use runner::cli_tool::WORKSPACE_CWD_TOKEN;
pub use runtime::{RunOutcome, RunRequest, Runtime};
/// The console output of a javascript run ([`RunOutcome::log`]).
pub use runx_worker::engine::{ConsoleLog, LogLine};
