//! What a cli-tool run would start: the process, computed by the functions a run computes it
//! with, and told without the value of any environment variable.

use crate::failure::RunError;
use crate::runner::cli_tool::{self, Invocation};
use crate::runner::step::Step;
use crate::subprocess::{self, StagedFile};
use runx_profile::{CliToolRunner, KILL_GRACE, Runner};
use serde::Serialize;

/// The process a cli-tool run would start.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessPlan {
    /// The command as declared.
    pub command: String,
    /// The executable it resolves to, looked up as the run looks it up.
    pub program: String,
    /// The argument vector: the program, then each argument with its templates filled. Where
    /// an argument holds the value of a declared environment name, the value is left out and
    /// its `{{env.NAME}}` placeholder shown instead ([`ProcessPlan::hidden`]).
    pub argv: Vec<String>,
    /// The arguments of `argv` shown without the environment values they hold.
    pub hidden: Vec<HiddenValues>,
    /// The working directory.
    pub cwd: String,
    /// What stdin receives: `none`, `args` (both: closed at once) or `stdin` (the inputs).
    pub input_mode: &'static str,
    /// Bytes written to stdin (the input object as JSON) when `input_mode` is `stdin`.
    pub stdin_bytes: Option<u64>,
    /// Every name of the process's environment, in the order it is built, with where its
    /// value comes from. Never a value.
    pub environment: Vec<EnvName>,
    /// The files the run would stage in its private input directory.
    pub staged_files: Vec<StagedFile>,
    /// How many times the process may run (more than 1 only with a retry that applies).
    pub max_attempts: u32,
    /// Time between SIGTERM and SIGKILL at the timeout.
    pub kill_grace_ms: u64,
}

/// An argument shown without the values of the environment names it holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HiddenValues {
    /// The argument's index in `argv` (1 is the first argument after the program).
    pub index: usize,
    /// The environment names whose values it holds.
    pub names: Vec<String>,
}

/// One name of a process's environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnvName {
    /// The variable's name.
    pub name: String,
    /// Where its value comes from.
    pub source: EnvOrigin,
}

/// Where a value of a cli-tool's environment comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvOrigin {
    /// The host baseline (`PATH`, `HOME`, locale, certificates, ...).
    Baseline,
    /// A name the runner declares.
    Declared,
    /// runx itself: `RUNX_CWD`, `RUNX_RECEIPT_DIR`, the receipt verification key.
    Runx,
    /// The staged inputs: `RUNX_INPUTS_PATH`, `RUNX_INPUTS_JSON`, `RUNX_INPUT_<NAME>[_PATH]`.
    Input,
}

impl EnvOrigin {
    /// The name as printed.
    pub fn name(self) -> &'static str {
        match self {
            EnvOrigin::Baseline => "baseline",
            EnvOrigin::Declared => "declared",
            EnvOrigin::Runx => "runx",
            EnvOrigin::Input => "input",
        }
    }
}

/// The process `step` would start, up to the point where a run writes its staged inputs and
/// spawns: arguments and cwd, staging (computed, not written), the environment, the command
/// lookup, the `execve` checks and the working directory's check.
pub(super) fn plan(step: &Step<'_>, tool: &CliToolRunner) -> Result<ProcessPlan, RunError> {
    let invocation = cli_tool::invocation(step, tool)?;
    let staging = subprocess::plan_staging(&step.inputs)?;
    // Sized like a real staging directory, so the `execve` checks see what a run would hand it.
    let staged = staging.env(&subprocess::staging_dir_example());
    let input_names: Vec<String> = staged.iter().map(|(name, _)| name.clone()).collect();
    let spec = cli_tool::process_spec(step, tool, &invocation, staged)?;
    subprocess::check_cwd(&spec.cwd)?;
    let runx_names: Vec<&str> = step
        .transport
        .iter()
        .map(|(name, _)| name.as_str())
        .chain(["RUNX_CWD"])
        .collect();
    let environment = spec
        .env
        .iter()
        .map(|(name, _)| {
            let name = name.to_string_lossy().into_owned();
            let source = origin(&name, step.runner, &input_names, &runx_names);
            EnvName { name, source }
        })
        .collect();
    let program = spec.program.display().to_string();
    let (argv, hidden) = shown_argv(&program, &invocation);
    Ok(ProcessPlan {
        command: tool.command.clone(),
        program,
        argv,
        hidden,
        cwd: spec.cwd.display().to_string(),
        input_mode: tool.input_mode.name(),
        stdin_bytes: spec.stdin.as_ref().map(|s| s.len() as u64),
        environment,
        staged_files: staging.files(),
        max_attempts: tool
            .active_retry()
            .map_or(1, |r| r.attempts.saturating_add(1)),
        kill_grace_ms: KILL_GRACE.max,
    })
}

/// Where the value of `name` comes from; later sources win in the environment a run builds,
/// so they are asked first.
fn origin(name: &str, runner: &Runner, inputs: &[String], runx: &[&str]) -> EnvOrigin {
    if inputs.iter().any(|n| n == name) {
        EnvOrigin::Input
    } else if runx.contains(&name) {
        EnvOrigin::Runx
    } else if runner.environment.declares(name) {
        EnvOrigin::Declared
    } else {
        EnvOrigin::Baseline
    }
}

/// The argument vector as shown: the program, then each argument without the environment
/// values it holds; and which arguments hold some.
fn shown_argv(program: &str, invocation: &Invocation) -> (Vec<String>, Vec<HiddenValues>) {
    let mut argv = vec![program.to_string()];
    let mut hidden = Vec::new();
    for (n, arg) in invocation.args.iter().enumerate() {
        argv.push(arg.shown.clone());
        if !arg.hidden.is_empty() {
            hidden.push(HiddenValues {
                index: n + 1,
                names: arg.hidden.clone(),
            });
        }
    }
    (argv, hidden)
}
