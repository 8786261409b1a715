//! `type: cli-tool` runners: a supervised subprocess with a rebuilt environment, staged input
//! files, bounded and hashed output capture, and process-group timeouts.
//!
//! This module decides *what* runs (arguments, working directory, environment, program) and
//! what its ending means; [`crate::subprocess`] runs and supervises it.

use super::step::{Produced, Provenance, Ran, RunContext, Step};
use crate::failure::{FailureKind, RunError};
use crate::subprocess::{self, Capture, ProcessOutcome, ProcessSpec, Termination};
use runx_profile::{
    CAPTURE_BYTES, CLI_WALL, CliToolRunner, InputMode, KILL_GRACE, Piece, RetryOn, Runner,
};
use runx_receipts::{ProcessRecord, StreamRecord, digest};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The exact cwd token that names the workspace root.
pub const WORKSPACE_CWD_TOKEN: &str = "{{env.RUNX_CWD}}";
/// Stderr lines quoted in an `exit` failure.
const STDERR_LINES_QUOTED: usize = 5;

/// Runs a cli-tool runner.
pub(crate) fn run(ctx: &RunContext<'_>, step: Step<'_>, tool: &CliToolRunner) -> Ran {
    let mut provenance = Provenance {
        input_digest: Some(digest(&Value::Object(step.inputs.clone()))),
        ..Provenance::of(step.runner)
    };
    let result = prepare_and_run(ctx, &step, tool, &mut provenance);
    Ran { result, provenance }
}

fn prepare_and_run(
    ctx: &RunContext<'_>,
    step: &Step<'_>,
    tool: &CliToolRunner,
    provenance: &mut Provenance,
) -> Result<Produced, RunError> {
    let invocation = invocation(step, tool)?;
    // Dropping `files` removes the staged inputs, whatever happens next.
    let (files, staged) = subprocess::stage_inputs(&step.inputs)?;
    let spec = process_spec(step, tool, &invocation, staged)?;
    let (outcome, attempts) = run_with_retry(ctx, tool, &spec)?;
    drop(files);
    provenance.process = Some(process_record(&spec, &outcome, attempts));
    let result = conclude(tool, step.runner, &outcome);
    provenance.stderr = Some(outcome.stderr);
    result
}

/// One argument as the process receives it, and as a dry run shows it.
pub(crate) struct Argument {
    /// The text the process receives.
    pub value: String,
    /// The same text with each declared environment value left as its `{{env.NAME}}`
    /// placeholder: what may be printed.
    pub shown: String,
    /// The declared environment names whose values `value` holds and `shown` does not.
    pub hidden: Vec<String>,
}

impl Argument {
    /// Appends text that may be shown.
    fn push(&mut self, text: &str) {
        self.value.push_str(text);
        self.shown.push_str(text);
    }
}

/// What a cli-tool run starts with before its inputs are staged: its arguments, expanded
/// from their templates, and its working directory.
pub(crate) struct Invocation {
    pub args: Vec<Argument>,
    pub cwd: PathBuf,
}

/// The arguments and working directory of `step`, or why the run cannot start.
pub(crate) fn invocation(step: &Step<'_>, tool: &CliToolRunner) -> Result<Invocation, RunError> {
    let runner = step.runner;
    let args = tool
        .args
        .iter()
        .map(|a| expand(a, runner, &step.inputs, &step.environment, step.workspace))
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = working_directory(tool, runner, &step.profile.dir, step.workspace)?;
    Ok(Invocation { args, cwd })
}

/// The process to start: the environment rebuilt around the `staged` input pairs and the
/// runtime's variables, the program looked up through that environment's `PATH`, and what
/// `execve` will be handed checked.
pub(crate) fn process_spec(
    step: &Step<'_>,
    tool: &CliToolRunner,
    invocation: &Invocation,
    mut staged: Vec<(String, String)>,
) -> Result<ProcessSpec, RunError> {
    let runner = step.runner;
    staged.extend(step.transport.iter().cloned());
    let baseline = |name: &str| step.env.baseline(name, step.workspace);
    let env = subprocess::build_env(
        &baseline,
        &runner.environment,
        &step.environment,
        step.workspace,
        &staged,
    );
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let program =
        subprocess::resolve_command(&tool.command, path_var.as_deref(), &step.profile.dir)?;
    let args: Vec<OsString> = invocation
        .args
        .iter()
        .map(|a| OsString::from(&a.value))
        .collect();
    subprocess::check_exec(&program, &args, &tool.args, &env)?;
    let stdin = match tool.input_mode {
        InputMode::Stdin => Some(
            serde_json::to_vec(&Value::Object(step.inputs.clone()))
                .map_err(|e| RunError::internal("encode", e.to_string()))?,
        ),
        InputMode::Closed | InputMode::Args => None,
    };
    Ok(ProcessSpec {
        program,
        args,
        cwd: invocation.cwd.clone(),
        env,
        stdin,
        timeout: runner.timeout,
        grace: Duration::from_millis(KILL_GRACE.max),
        capture_limit: usize::try_from(CAPTURE_BYTES.max).unwrap_or(usize::MAX),
    })
}

/// The working directory: the package directory, a path relative to it, or the workspace
/// through the exact token `{{env.RUNX_CWD}}`.
fn working_directory(
    tool: &CliToolRunner,
    runner: &Runner,
    package: &Path,
    workspace: &Path,
) -> Result<PathBuf, RunError> {
    match tool.cwd.as_deref() {
        None => Ok(package.to_path_buf()),
        Some(WORKSPACE_CWD_TOKEN) => Ok(normalized(workspace)),
        Some(c) if c.contains("{{") => Err(RunError::new(
            FailureKind::Profile,
            "cwd_template",
            format!(
                "runner `{}`: cwd `{c}` uses a template; only the exact token `{WORKSPACE_CWD_TOKEN}` is allowed",
                runner.name
            ),
        )),
        Some(c) => Ok(normalized(&package.join(c))),
    }
}

/// `path` as the process will see it: symlinks and `..` resolved when it exists, `.` and `..`
/// applied to the text otherwise (the receipt records this, not `skill/../x`).
fn normalized(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Runs the process, and again after a crash when the runner is idempotent, declares a retry
/// that applies (`retry: {on: [crash]}` or `max_attempts` > 1) and the crashed attempt wrote
/// nothing to stdout.
fn run_with_retry(
    ctx: &RunContext<'_>,
    tool: &CliToolRunner,
    spec: &ProcessSpec,
) -> Result<(ProcessOutcome, u32), RunError> {
    let retry = tool
        .active_retry()
        .filter(|r| tool.idempotent && r.on.contains(&RetryOn::Crash));
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let outcome = subprocess::run(spec, ctx.cancel)?;
        let crashed = matches!(outcome.termination, Termination::Signaled(_));
        match retry {
            Some(r) if crashed && outcome.stdout.total_bytes == 0 && attempts <= r.attempts => {
                tracing::info!(
                    attempt = attempts,
                    "cli-tool crashed before any output; retrying"
                );
                std::thread::sleep(r.backoff);
            }
            _ => return Ok((outcome, attempts)),
        }
    }
}

fn process_record(spec: &ProcessSpec, outcome: &ProcessOutcome, attempts: u32) -> ProcessRecord {
    let stream = |c: &Capture| StreamRecord {
        total_bytes: c.total_bytes,
        sha256: c.sha256.clone(),
        truncated: c.truncated,
    };
    let (exit_code, signal) = match outcome.termination {
        Termination::Exited(c) => (Some(c), None),
        Termination::Signaled(s) => (None, Some(s)),
        _ => (None, None),
    };
    ProcessRecord {
        command: spec.program.display().to_string(),
        cwd: spec.cwd.display().to_string(),
        exit_code,
        signal,
        timed_out: outcome.termination == Termination::TimedOut,
        attempts,
        stdout: stream(&outcome.stdout),
        stderr: stream(&outcome.stderr),
    }
}

/// What the process's ending means: its output, or the failure of the run.
fn conclude(
    tool: &CliToolRunner,
    runner: &Runner,
    outcome: &ProcessOutcome,
) -> Result<Produced, RunError> {
    let command = &tool.command;
    let stderr = || quote(&last_lines(&outcome.stderr.kept, STDERR_LINES_QUOTED));
    match outcome.termination {
        Termination::Exited(0) => {}
        Termination::Exited(code) => {
            return Err(RunError::new(
                FailureKind::Exit,
                format!("exit_{code}"),
                format!("`{command}` exited with code {code}{}", stderr()),
            ));
        }
        Termination::Signaled(sig) => {
            return Err(RunError::new(
                FailureKind::Crash,
                format!("signal_{sig}"),
                format!("`{command}` was killed by signal {sig}{}", stderr()),
            ));
        }
        Termination::TimedOut => {
            return Err(RunError::limit(
                &CLI_WALL,
                format!(
                    "`{command}` ran past its timeout of {} s; its process group was terminated",
                    runner.timeout.as_secs()
                ),
            ));
        }
        Termination::Cancelled => {
            return Err(RunError::new(
                FailureKind::Interrupted,
                "interrupted",
                format!("`{command}` was interrupted; its process group was terminated"),
            ));
        }
    }
    if outcome.stdout.truncated {
        return Err(RunError::limit(
            &CAPTURE_BYTES,
            format!(
                "`{command}` wrote {} bytes to stdout; only the first {} bytes are kept, so the output would be partial (sha256 of the whole stream: {})",
                outcome.stdout.total_bytes, CAPTURE_BYTES.max, outcome.stdout.sha256
            ),
        ));
    }
    let (output, json) = stdout_output(&outcome.stdout.kept);
    // An integer literal beyond 64 bits reads as a double, so the output check cannot see it
    // in the value: it is looked for in the JSON text (64-bit ones are refused there, by place).
    if json
        && runx_profile::unsafe_integer(&output).is_none()
        && let Some((at, value)) = runx_profile::long_integer_in(&outcome.stdout.kept, &output)
    {
        return Err(runx_profile::OutputError::UnsafeInteger { at, value }.into());
    }
    Ok(Produced { output })
}

/// An object on stdout is the output; anything else is returned as `{"stdout": "..."}`. The
/// flag says which.
fn stdout_output(stdout: &[u8]) -> (Value, bool) {
    match serde_json::from_slice::<Value>(stdout) {
        Ok(Value::Object(o)) => (Value::Object(o), true),
        _ => {
            let mut o = Map::new();
            o.insert(
                "stdout".to_string(),
                Value::String(String::from_utf8_lossy(stdout).into_owned()),
            );
            (Value::Object(o), false)
        }
    }
}

/// Expands the placeholders of one argument ([`template`]): an input given at run time, declared
/// or not, gives its value (a declared input not given gives nothing); an input neither declared
/// nor given, an undeclared environment name or a broken template fails before spawn. The value
/// of a declared environment name is kept out of [`Argument::shown`].
fn expand(
    arg: &str,
    runner: &Runner,
    inputs: &Map<String, Value>,
    env: &BTreeMap<String, String>,
    workspace: &Path,
) -> Result<Argument, RunError> {
    let bad = |m: String| RunError::new(FailureKind::Profile, "template", m);
    let mut out = Argument {
        value: String::new(),
        shown: String::new(),
        hidden: Vec::new(),
    };
    for piece in runx_profile::pieces(arg).map_err(bad)? {
        match piece {
            Piece::Text(text) => out.push(text),
            Piece::Input(name) => match inputs.get(name) {
                Some(Value::String(s)) => out.push(s),
                Some(Value::Null) => {}
                Some(v) => out.push(&v.to_string()),
                None if runner.inputs.contains_key(name) => {}
                None => {
                    return Err(bad(format!(
                        "argument `{arg}` names input `{name}`, which runner `{}` does not declare and the run was not given",
                        runner.name
                    )));
                }
            },
            Piece::AllInputs => out.push(&Value::Object(inputs.clone()).to_string()),
            Piece::Env("RUNX_CWD") => out.push(&workspace.display().to_string()),
            // A name that is not set gives nothing, and there is nothing to hide.
            Piece::Env(name) if runner.environment.declares(name) => {
                if let Some(value) = env.get(name) {
                    out.value.push_str(value);
                    out.shown.push_str(&format!("{{{{env.{name}}}}}"));
                    if !out.hidden.iter().any(|h| h == name) {
                        out.hidden.push(name.to_string());
                    }
                }
            }
            Piece::Env(name) => {
                return Err(bad(format!(
                    "argument `{arg}` names environment variable `{name}`, which runner `{}` does not declare",
                    runner.name
                )));
            }
        }
    }
    Ok(out)
}

fn last_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn quote(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; stderr ends with:\n{stderr}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runx_profile::parse;
    use serde_json::json;

    fn runner() -> Runner {
        let p = parse(
            "skill: s\nrun:\n  type: cli-tool\n  command: x\n  environment: { optional: [STAGE] }\n  inputs:\n    name: string\n    quiet: string\n",
            Path::new("/pkg"),
            Path::new("/pkg/X.yaml"),
        )
        .expect("profile");
        p.runners["default"].clone()
    }

    fn expand_with(arg: &str, inputs: serde_json::Value) -> Result<String, RunError> {
        let inputs = inputs.as_object().cloned().unwrap_or_default();
        let env = BTreeMap::from([("STAGE".to_string(), "test".to_string())]);
        expand(arg, &runner(), &inputs, &env, Path::new("/ws")).map(|a| a.value)
    }

    #[test]
    fn every_template_form() {
        let got = expand_with(
            "{{name}}|{{ name }}|{{input.name}}|{{quiet}}|{{extra}}|{{env.STAGE}}|{{env.RUNX_CWD}}|{{n}}",
            json!({"name": "ada", "extra": [1], "n": 2}),
        )
        .expect("expands");
        assert_eq!(got, "ada|ada|ada||[1]|test|/ws|2");
        assert_eq!(
            expand_with("{{input}}", json!({"a": null})).expect("expands"),
            r#"{"a":null}"#
        );
    }

    #[test]
    fn values_are_never_expanded_again() {
        let got =
            expand_with("{{name}}", json!({"name": "{{env.STAGE}} {{quiet}}"})).expect("expands");
        assert_eq!(got, "{{env.STAGE}} {{quiet}}");
    }

    #[test]
    fn unknown_names_fail_before_spawn() {
        for (arg, want) in [
            ("{{extra}}", "does not declare and the run was not given"),
            ("{{env.HOME}}", "environment variable `HOME`"),
            ("{{name", "unclosed"),
        ] {
            let e = expand_with(arg, json!({})).expect_err(arg);
            assert_eq!(
                (e.kind, e.code.as_str()),
                (FailureKind::Profile, "template")
            );
            assert!(e.message.contains(want), "{arg}: {e}");
        }
    }
}
