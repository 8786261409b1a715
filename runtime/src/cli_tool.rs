//! `type: cli-tool` runners: a supervised subprocess with a rebuilt environment, staged input
//! files, bounded and hashed output capture, and process-group timeouts.

use crate::digest::digest;
use crate::error::RunError;
use crate::profile::{CliToolRunner, InputMode, RetryOn, Runner};
use crate::receipt::{ProcessRecord, Receipt, StreamRecord};
use crate::runtime::{Produced, Runtime, Step};
use crate::subprocess::{
    self, CAPTURE_LIMIT, Capture, DEFAULT_GRACE, ProcessSpec, SubprocessError, Termination,
};
use runx_worker::engine::ConsoleLog;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;

/// The exact cwd token that names the workspace root.
pub const WORKSPACE_CWD_TOKEN: &str = "{{env.RUNX_CWD}}";
/// Stderr lines quoted in an `exit` failure.
const STDERR_LINES_QUOTED: usize = 5;

fn sub_error(e: SubprocessError) -> RunError {
    let code = match &e {
        SubprocessError::NotFound { .. } => "command_not_found",
        SubprocessError::MissingEnvironment { .. } => "missing_environment",
        SubprocessError::InputNameCollision { .. } => "input_name_collision",
        _ => e.kind(),
    };
    RunError::new(e.kind(), code, e.to_string())
}

/// Runs a cli-tool runner.
pub(crate) fn run(
    rt: &Runtime,
    step: Step<'_>,
    tool: &CliToolRunner,
    receipt: &mut Receipt,
) -> Result<Produced, RunError> {
    let Step {
        profile,
        runner,
        inputs,
        environment,
        req,
    } = step;
    receipt.input_digest = Some(digest(&Value::Object(inputs.clone())));
    receipt.limits = BTreeMap::from([
        (
            "wall_milliseconds".to_string(),
            runner.timeout.as_millis() as u64,
        ),
        ("capture_bytes".to_string(), CAPTURE_LIMIT as u64),
    ]);
    let workspace = &req.workspace;
    let args = tool
        .args
        .iter()
        .map(|a| expand(a, runner, &inputs, &environment, workspace).map(OsString::from))
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = match tool.cwd.as_deref() {
        None => profile.dir.clone(),
        Some(WORKSPACE_CWD_TOKEN) => workspace.clone(),
        Some(c) if c.contains("{{") => {
            return Err(RunError::new(
                "profile",
                "cwd_template",
                format!(
                    "runner `{}`: cwd `{c}` uses a template; only the exact token `{WORKSPACE_CWD_TOKEN}` is allowed",
                    runner.name
                ),
            ));
        }
        Some(c) => profile.dir.join(c),
    };
    let (files, staged) = subprocess::stage_inputs(&inputs).map_err(sub_error)?;
    let declared = |name: &str| -> Option<OsString> {
        if runner.environment.required.iter().any(|n| n == name)
            || runner.environment.optional.iter().any(|n| n == name)
        {
            environment.get(name).map(OsString::from)
        } else {
            std::env::var_os(name)
        }
    };
    let env = subprocess::build_env(
        &declared,
        workspace,
        &runner.environment.required,
        &runner.environment.optional,
        &staged,
    )
    .map_err(sub_error)?;
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let program = subprocess::resolve_command(&tool.command, path_var.as_deref(), &profile.dir)
        .map_err(sub_error)?;
    let stdin = match tool.input_mode {
        InputMode::Stdin => Some(
            serde_json::to_vec(&Value::Object(inputs.clone()))
                .map_err(|e| RunError::new("internal", "encode", e.to_string()))?,
        ),
        InputMode::Closed => None,
    };
    let spec = ProcessSpec {
        program: program.clone(),
        args,
        cwd: cwd.clone(),
        env,
        stdin,
        timeout: runner.timeout,
        grace: DEFAULT_GRACE,
        capture_limit: CAPTURE_LIMIT,
    };
    let retry = tool
        .retry
        .as_ref()
        .filter(|r| tool.idempotent && r.on.contains(&RetryOn::Crash));
    let mut attempts = 0u32;
    let outcome = loop {
        attempts += 1;
        let outcome = subprocess::run(&spec, rt.cancel_token()).map_err(sub_error)?;
        let crashed = matches!(outcome.termination, Termination::Signaled(_));
        match retry {
            Some(r) if crashed && outcome.stdout.total_bytes == 0 && attempts <= r.attempts => {
                tracing::info!(
                    attempt = attempts,
                    "cli-tool crashed before any output; retrying"
                );
                std::thread::sleep(r.backoff);
            }
            _ => break outcome,
        }
    };
    // Staged inputs are removed whatever happened.
    drop(files);
    let record = |c: &Capture| StreamRecord {
        total_bytes: c.total_bytes,
        sha256: c.sha256.clone(),
        truncated: c.truncated,
    };
    let (exit_code, signal) = match outcome.termination {
        Termination::Exited(c) => (Some(c), None),
        Termination::Signaled(s) => (None, Some(s)),
        _ => (None, None),
    };
    receipt.process = Some(ProcessRecord {
        command: program.display().to_string(),
        cwd: cwd.display().to_string(),
        exit_code,
        signal,
        timed_out: outcome.termination == Termination::TimedOut,
        attempts,
        stdout: record(&outcome.stdout),
        stderr: record(&outcome.stderr),
    });
    let stderr_tail = last_lines(&outcome.stderr.kept, STDERR_LINES_QUOTED);
    match outcome.termination {
        Termination::Exited(0) => {}
        Termination::Exited(code) => {
            return Err(RunError::new(
                "exit",
                &format!("exit_{code}"),
                format!(
                    "`{}` exited with code {code}{}",
                    tool.command,
                    quote(&stderr_tail)
                ),
            ));
        }
        Termination::Signaled(sig) => {
            return Err(RunError::new(
                "crash",
                &format!("signal_{sig}"),
                format!(
                    "`{}` was killed by signal {sig}{}",
                    tool.command,
                    quote(&stderr_tail)
                ),
            ));
        }
        Termination::TimedOut => {
            return Err(RunError::new(
                "timeout",
                "wall_milliseconds",
                format!(
                    "`{}` ran past its timeout of {} s; its process group was terminated",
                    tool.command,
                    runner.timeout.as_secs()
                ),
            ));
        }
        Termination::Cancelled => {
            return Err(RunError::new(
                "interrupted",
                "interrupted",
                format!(
                    "`{}` was interrupted; its process group was terminated",
                    tool.command
                ),
            ));
        }
    }
    if outcome.stdout.truncated {
        return Err(RunError::new(
            "truncated",
            "stdout_bytes",
            format!(
                "`{}` wrote {} bytes to stdout; only the first {CAPTURE_LIMIT} bytes are kept, so the output would be partial (sha256 of the whole stream: {})",
                tool.command, outcome.stdout.total_bytes, outcome.stdout.sha256
            ),
        ));
    }
    let output = match serde_json::from_slice::<Value>(&outcome.stdout.kept) {
        Ok(Value::Object(o)) => Value::Object(o),
        _ => {
            let mut o = Map::new();
            o.insert(
                "stdout".to_string(),
                Value::String(String::from_utf8_lossy(&outcome.stdout.kept).into_owned()),
            );
            Value::Object(o)
        }
    };
    Ok(Produced {
        output,
        log: ConsoleLog::default(),
    })
}

/// Expands `{{input.NAME}}` and `{{env.NAME}}` in one argument. Only declared inputs and
/// environment names (and `RUNX_CWD`) may be named; anything else fails before spawn.
fn expand(
    arg: &str,
    runner: &Runner,
    inputs: &Map<String, Value>,
    env: &BTreeMap<String, String>,
    workspace: &std::path::Path,
) -> Result<String, RunError> {
    let mut out = String::new();
    let mut rest = arg;
    let bad = |m: String| RunError::new("profile", "template", m);
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(bad(format!("argument `{arg}` has an unclosed `{{{{`")));
        };
        let key = after[..end].trim();
        if let Some(name) = key.strip_prefix("input.") {
            if !runner.inputs.contains_key(name) {
                return Err(bad(format!(
                    "argument `{arg}` names input `{name}`, which runner `{}` does not declare",
                    runner.name
                )));
            }
            match inputs.get(name) {
                Some(Value::String(s)) => out.push_str(s),
                Some(Value::Null) | None => {}
                Some(v) => out.push_str(&v.to_string()),
            }
        } else if key == "input" {
            out.push_str(&Value::Object(inputs.clone()).to_string());
        } else if let Some(name) = key.strip_prefix("env.") {
            if name == "RUNX_CWD" {
                out.push_str(&workspace.display().to_string());
            } else if runner.environment.required.iter().any(|n| n == name)
                || runner.environment.optional.iter().any(|n| n == name)
            {
                out.push_str(env.get(name).map(String::as_str).unwrap_or(""));
            } else {
                return Err(bad(format!(
                    "argument `{arg}` names environment variable `{name}`, which runner `{}` does not declare",
                    runner.name
                )));
            }
        } else {
            return Err(bad(format!(
                "argument `{arg}` uses `{{{{{key}}}}}`; only `{{{{input.NAME}}}}`, `{{{{input}}}}` and `{{{{env.NAME}}}}` exist"
            )));
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
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
