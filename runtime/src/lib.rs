//! Skill packages and their runners: the behaviour behind the `runx` command.
//!
//! A skill package is a directory with an execution profile, `X.yaml` (read and validated by
//! `runx-profile`). This crate runs one of its runners as a step ([`Runtime::run`]): it resolves
//! the runner's inputs and environment, runs it (a javascript export in the no-host workers of
//! `runx-worker`, a paged javascript runner over an admitted JSON array, or a supervised
//! cli-tool subprocess), checks the output contract and writes a `runx.receipt.v1` receipt
//! (the model and its seal are `runx-receipts`'). It does not parse command lines or print
//! anything: that is the `runx` binary's job. Fixture cases are `runx-harness`'.
//!
//! Where each behaviour lives:
//!
//! | module | what it holds |
//! |---|---|
//! | `runtime` | [`Runtime`], [`RunRequest`], [`RunOutcome`]: one step, start to receipt |
//! | `check` | [`Runtime::check`]: a package's mistakes before any run, with their places |
//! | `plan` | [`Runtime::plan`], [`Plan`]: what a run would do, resolved without running |
//! | `runner` | the javascript, paged and cli-tool runners |
//! | `record` | what a run's receipt records: who ran, how the run closed, which engine |
//! | `environment` | where environment values come from; the declared-names check |
//! | `failure` | the failure vocabulary ([`FailureKind`], [`RunError`]) and every mapping into it |
//! | `artifact`, `framing` | admission of paged artifacts; pages of whole records |
//! | `subprocess` | staging, environment, command lookup, supervision, capture of a process |
//! | `report` | the JSON of a run's result and of a package's description, as printed |
//! | `packages` | profiles and module closures kept between runs while their files are unchanged |
//! | `pools`, `progress` | the worker pools (one per engine) and worker discovery; page progress |
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
//! use runx_runtime::{EnvSource, RunRequest, Runtime, WorkerCommand};
//! use serde_json::json;
//! use std::collections::BTreeMap;
//!
//! let runtime = Runtime::new(WorkerCommand::new("/usr/local/bin/runx").arg("__worker"));
//! let inputs = json!({ "name": "Ada" }).as_object().cloned().unwrap_or_default();
//! let mut step = RunRequest::new("skill-fixtures/hello", inputs);
//! step.runner = Some("greet".to_string());
//! // Only these values are visible to the runner, and only for names it declares.
//! step.env = EnvSource::Map(BTreeMap::from([("REGION".to_string(), "eu".to_string())]));
//! let outcome = runtime.run(step);
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
//! [`Runtime::plan`] answers what a step would do (its argv, module closure, pages, limits)
//! without starting a worker or a process and without a receipt, and refuses what
//! [`Runtime::run`] would refuse, with the same failure.
//!
//! Graph runners in other languages reach the same warm runtime through `runx serve`
//! (the `runx-serve` crate): JSON-RPC 2.0 over stdio, one step per `run` request.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod artifact;
mod check;
mod environment;
mod failure;
mod framing;
mod packages;
mod plan;
mod pools;
mod progress;
mod receipt;
mod record;
mod report;
mod run_identity;
mod runner;
mod runtime;
mod subprocess;

pub use artifact::AdmissionError;
pub use check::{Checked, CheckedRunner, PagedShape, Problem, Severity};
pub use environment::{EnvSource, FIXED_BASELINE};
pub use failure::{FailureKind, RunError};
pub use framing::{Framer, FramingError, Page, PageBudget};
pub use packages::{is_bare_name, package_dir};
pub use plan::{
    ArtifactPlan, EnvName, EnvNames, EnvOrigin, HiddenValues, ModuleFile, ModulePlan, PagePlan,
    PageStop, Plan, PlanOutcome, PlannedPage, ProcessPlan,
};
pub use pools::{
    ALLOW_NO_SECCOMP_ENV, DEFAULT_ENGINE, MAX_WORKERS, WORKER_ENV, check_engine,
    current_exe_worker, discover_worker, engines_built, worker_main,
};
pub use progress::{PageProgress, ProgressSink};
pub use receipt::run_id;
pub use record::{Closure, engine_record};
pub use report::{
    SKILL_RUN_SCHEMA, console_json, describe_json, plan_json, refused_json, run_json, stderr_json,
};
pub use runner::cli_tool::WORKSPACE_CWD_TOKEN;
pub use runtime::{RunOutcome, RunRequest, Runtime, default_workspace};
/// The cancellation token of one run ([`RunRequest::cancel`]).
pub use runx_worker::CancelToken;
/// The command that starts a worker process ([`Runtime::new`]).
pub use runx_worker::WorkerCommand;
/// The console output of a javascript run ([`RunOutcome::log`]).
pub use runx_worker::{ConsoleLog, LogLine};
pub use subprocess::{BASELINE_ENV, CGROUP_ENV, Capture, StagedFile, SubprocessError};

/// Property-test settings: `default` cases, or as many as `PROPTEST_CASES` says (the long runs
/// recorded in the docs set it to 1,000,000).
#[cfg(test)]
pub(crate) fn proptest_config(default: u32) -> proptest::test_runner::Config {
    let mut config = proptest::test_runner::Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default;
    }
    config
}
