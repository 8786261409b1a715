//! Skill packages and their runners: the behaviour behind the `runx` command.
//!
//! A skill package is a directory with an execution profile, `X.yaml` ([`profile`]). This crate
//! resolves a runner's inputs and environment ([`inputs`]), runs it — a javascript export in the
//! no-host workers of `runx-worker`, a paged javascript runner over an admitted JSON array
//! ([`artifact`], [`framing`], [`paged`]), or a supervised cli-tool subprocess ([`cli_tool`],
//! [`subprocess`]) — checks the output contract and writes a `runx.receipt.v1` receipt
//! ([`receipt`]). [`harness`] runs a package's fixture cases through the same path. It does not
//! parse command lines or print anything: that is the `runx` binary's job.
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
//! match (&outcome.output, &outcome.error) {
//!     (Some(output), _) => println!("sealed: {output}"),
//!     (None, Some(e)) => eprintln!("{}/{}: {}", e.kind, e.code, e.message),
//!     (None, None) => unreachable!(),
//! }
//! // Every run, sealed or not, leaves a receipt.
//! println!("receipt: {:?}", outcome.receipt_path);
//! ```
#![deny(unsafe_code)]

pub mod artifact;
pub mod cli_tool;
pub mod digest;
pub mod error;
pub mod framing;
pub mod harness;
pub mod inputs;
pub mod paged;
pub mod profile;
pub mod receipt;
pub mod runtime;
pub mod subprocess;
pub mod workload;

pub use error::RunError;
pub use runtime::{EnvSource, RunOutcome, RunRequest, Runtime};
