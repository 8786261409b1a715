//! Supervision of one `cli-tool` process: the Unix side of the v1 subprocess ABI, as plain
//! data and functions (the profile and the runner decide what runs; this runs it).
//!
//! - `stage`: the input object delivered as files in a private `0700` directory, plus inline
//!   mirrors ([`stage_inputs`]), computed before anything is written ([`plan_staging`]);
//! - `env`: the deny-by-default child environment ([`build_env`]);
//! - `command`: finding the executable without a shell ([`resolve_command`]);
//! - `supervise`: the process in its own group, stdin fed, the timeout and cancellation
//!   enforced (SIGTERM to the group, SIGKILL after the grace period), descendants left behind
//!   killed, the child always reaped ([`run`]);
//! - `error`: what can stop a run before or while it is supervised ([`SubprocessError`]);
//! - `descendants`: every descendant, whatever its session: a cgroup per run, or a child
//!   subreaper and a sweep where no cgroup can be made;
//! - `capture`: stdout and stderr drained concurrently, a bounded prefix kept on a UTF-8
//!   boundary, the whole stream counted and hashed.

mod capture;
mod command;
mod confine;
mod descendants;
mod env;
mod error;
mod stage;
mod supervise;

pub use capture::Capture;
pub use command::{check_exec, resolve_command};
pub use descendants::CGROUP_ENV;
pub use env::{BASELINE_ENV, build_env};
pub use error::SubprocessError;
pub use stage::{StagedFile, plan_staging, stage_inputs, staging_dir_example};
pub use supervise::{ProcessOutcome, ProcessSpec, Termination, check_cwd, run};

#[cfg(test)]
mod run_tests;
#[cfg(test)]
mod tests;
