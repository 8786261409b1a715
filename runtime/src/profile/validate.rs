//! The rules for a runner's keys: from the raw YAML shape to a validated [`Runner`].
//!
//! Messages name the key (`` `timeout_seconds` is 45; ... ``); the YAML reader adds the runner's
//! key path and line. Limits are checked against their one definition in [`crate::limits`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Deserialize;

use super::{
    CliToolRunner, EnvDecl, Framing, InputDecl, InputMode, JsRunner, OutputDecl, PagesDecl,
    RESERVED_PAGE_INPUT, RetryDecl, RetryOn, Runner, RunnerKind, SUPPORTED_TYPES, ValueType,
};
use crate::limits::{CLI_WALL, JS_WALL, LimitDef, PAGE_BYTES, RETRY_ATTEMPTS, RETRY_BACKOFF};

/// Every runner key this runtime understands; unknown keys are ignored. The same shape is used
/// for the nested `run:` block, whose keys are merged into the runner's.
#[derive(Deserialize, Default)]
pub(super) struct RawRunner {
    #[serde(rename = "type")]
    ty: Option<String>,
    default: Option<bool>,
    module: Option<String>,
    export: Option<String>,
    timeout_seconds: Option<u64>,
    environment: Option<RawEnv>,
    inputs: Option<BTreeMap<String, InputDecl>>,
    outputs: Option<BTreeMap<String, OutputDecl>>,
    pages: Option<RawPages>,
    command: Option<String>,
    args: Option<Vec<String>>,
    cwd: Option<String>,
    input_mode: Option<String>,
    idempotent: Option<bool>,
    retry: Option<RawRetry>,
    run: Option<Box<RawRunner>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnv {
    #[serde(default)]
    required: Vec<String>,
    #[serde(default)]
    optional: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPages {
    path_from: String,
    path_scope_from: String,
    media_type: Option<String>,
    framing: Option<String>,
    page_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    attempts: u32,
    on: Option<Vec<String>>,
    backoff_seconds: Option<u64>,
}

/// Merges the nested `run:` block into the runner, refusing a key given in both places.
fn merge_nested(mut outer: RawRunner) -> Result<RawRunner, String> {
    let Some(inner) = outer.run.take() else {
        return Ok(outer);
    };
    let mut inner = *inner;
    if inner.run.is_some() {
        return Err("`run.run`: a nested `run:` block may not contain another `run:`".to_string());
    }
    fn take<T>(key: &str, outer: &mut Option<T>, inner: &mut Option<T>) -> Result<(), String> {
        match (outer.is_some(), inner.is_some()) {
            (true, true) => Err(format!(
                "`{key}` is given both in `run:` and at the runner level; keep one"
            )),
            (false, true) => {
                *outer = inner.take();
                Ok(())
            }
            _ => Ok(()),
        }
    }
    take("type", &mut outer.ty, &mut inner.ty)?;
    take("default", &mut outer.default, &mut inner.default)?;
    take("module", &mut outer.module, &mut inner.module)?;
    take("export", &mut outer.export, &mut inner.export)?;
    take(
        "timeout_seconds",
        &mut outer.timeout_seconds,
        &mut inner.timeout_seconds,
    )?;
    take(
        "environment",
        &mut outer.environment,
        &mut inner.environment,
    )?;
    take("inputs", &mut outer.inputs, &mut inner.inputs)?;
    take("outputs", &mut outer.outputs, &mut inner.outputs)?;
    take("pages", &mut outer.pages, &mut inner.pages)?;
    take("command", &mut outer.command, &mut inner.command)?;
    take("args", &mut outer.args, &mut inner.args)?;
    take("cwd", &mut outer.cwd, &mut inner.cwd)?;
    take("input_mode", &mut outer.input_mode, &mut inner.input_mode)?;
    take("idempotent", &mut outer.idempotent, &mut inner.idempotent)?;
    take("retry", &mut outer.retry, &mut inner.retry)?;
    Ok(outer)
}

/// Validates a runner's keys. Messages name the key; the YAML error adds the runner's path and
/// line.
pub(super) fn build_runner(name: &str, raw: RawRunner) -> Result<Runner, String> {
    let mut raw = merge_nested(raw)?;
    let ty = raw.ty.take().ok_or_else(|| {
        format!("runner `{name}` has no `type:`; declare `type: javascript` or `type: cli-tool`")
    })?;
    let environment = build_env(raw.environment.take())?;
    let inputs = raw.inputs.take().unwrap_or_default();
    let outputs = raw.outputs.take().unwrap_or_default();
    if inputs.contains_key(RESERVED_PAGE_INPUT) {
        return Err(format!(
            "`inputs.{RESERVED_PAGE_INPUT}` is reserved: the runtime passes page metadata under that name"
        ));
    }
    let default = raw.default.unwrap_or(false);
    let (kind, timeout) = match ty.as_str() {
        "javascript" => build_javascript(raw, &inputs)?,
        "cli-tool" => build_cli_tool(raw)?,
        // Pass 1 routes every other string type to `OtherRunner`; reaching here means the type
        // was not a plain string there, which the typed field above would already have refused.
        other => {
            return Err(format!(
                "runner `{name}` has type `{other}`, which this runtime does not implement (supported: {SUPPORTED_TYPES})"
            ));
        }
    };
    Ok(Runner {
        name: name.to_string(),
        default,
        kind,
        inputs,
        outputs,
        environment,
        timeout,
    })
}

/// Refuses a key that belongs to the other runner type.
fn forbid(key: &str, present: bool, only_for: &str, ty: &str) -> Result<(), String> {
    if present {
        Err(format!(
            "`{key}` applies only to {only_for} runners, not to a `{ty}` runner"
        ))
    } else {
        Ok(())
    }
}

fn build_javascript(
    raw: RawRunner,
    inputs: &BTreeMap<String, InputDecl>,
) -> Result<(RunnerKind, Duration), String> {
    let ty = "javascript";
    forbid("command", raw.command.is_some(), "cli-tool", ty)?;
    forbid("args", raw.args.is_some(), "cli-tool", ty)?;
    forbid("cwd", raw.cwd.is_some(), "cli-tool", ty)?;
    forbid("input_mode", raw.input_mode.is_some(), "cli-tool", ty)?;
    forbid("idempotent", raw.idempotent.is_some(), "cli-tool", ty)?;
    forbid("retry", raw.retry.is_some(), "cli-tool", ty)?;
    let timeout = timeout_of(raw.timeout_seconds, &JS_WALL, ty)?;
    let module = raw.module.ok_or(
        "`module` is missing; a javascript runner names its ES module (`module: src/main.mjs`)",
    )?;
    check_module(&module)?;
    if let Some(export) = &raw.export {
        check_export(export)?;
    }
    let pages = raw.pages.map(|p| build_pages(p, inputs)).transpose()?;
    let js = JsRunner {
        module,
        export: raw.export,
        pages,
    };
    Ok((RunnerKind::Javascript(js), timeout))
}

fn build_cli_tool(raw: RawRunner) -> Result<(RunnerKind, Duration), String> {
    let ty = "cli-tool";
    forbid("module", raw.module.is_some(), "javascript", ty)?;
    forbid("export", raw.export.is_some(), "javascript", ty)?;
    forbid("pages", raw.pages.is_some(), "javascript", ty)?;
    let timeout = timeout_of(raw.timeout_seconds, &CLI_WALL, ty)?;
    let command = raw
        .command
        .ok_or("`command` is missing; a cli-tool runner names the program to start")?;
    if command.trim().is_empty() {
        return Err("`command` is empty; name the program to start".to_string());
    }
    let input_mode = match raw.input_mode.as_deref() {
        None => InputMode::Closed,
        Some("stdin") => InputMode::Stdin,
        Some(other) => {
            return Err(format!(
                "`input_mode` is `{other}`; the only mode is `stdin` (omit it to close stdin without input)"
            ));
        }
    };
    let idempotent = raw.idempotent.unwrap_or(false);
    let retry = raw.retry.map(|r| build_retry(r, idempotent)).transpose()?;
    let tool = CliToolRunner {
        command,
        args: raw.args.unwrap_or_default(),
        cwd: raw.cwd,
        input_mode,
        idempotent,
        retry,
    };
    Ok((RunnerKind::CliTool(tool), timeout))
}

/// The declared `timeout_seconds` within the range of `wall` (a limit in milliseconds).
fn timeout_of(declared: Option<u64>, wall: &LimitDef, ty: &str) -> Result<Duration, String> {
    let (min, max) = (wall.min / 1000, wall.max / 1000);
    let secs = declared.unwrap_or(wall.default / 1000);
    if !(min..=max).contains(&secs) {
        return Err(format!(
            "`timeout_seconds` is {secs}; a {ty} runner allows {min} to {max} seconds"
        ));
    }
    Ok(Duration::from_secs(secs))
}

/// Module paths follow the one rule for what a module path may name
/// ([`runx_worker::specifier::check_entry`]), the rule the worker applies to every import.
fn check_module(module: &str) -> Result<(), String> {
    if module.is_empty() {
        return Err("`module` is empty; name a .mjs or .js file in the package".to_string());
    }
    runx_worker::specifier::check_entry(module)
        .map(|_| ())
        .map_err(|e| {
            format!(
                "`module` `{module}` is not a module of the package: {}",
                e.reason
            )
        })
}

fn check_export(export: &str) -> Result<(), String> {
    let mut chars = export.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$');
    if !first_ok || !chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$') {
        return Err(format!(
            "`export` `{export}` is not a JavaScript export name; omit `export` to use the default export"
        ));
    }
    Ok(())
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Names the runtime sets in a cli-tool's environment: declaring one would let the caller's
/// environment stand in for the runtime's value when the runtime sets none.
fn is_runtime_owned(name: &str) -> bool {
    matches!(name, "RUNX_CWD" | "RUNX_INPUTS_PATH" | "RUNX_INPUTS_JSON")
        || name.starts_with("RUNX_INPUT_")
}

fn build_env(raw: Option<RawEnv>) -> Result<EnvDecl, String> {
    let Some(raw) = raw else {
        return Ok(EnvDecl::default());
    };
    let mut seen = BTreeSet::new();
    for (list, names) in [("required", &raw.required), ("optional", &raw.optional)] {
        for name in names {
            if !is_env_name(name) {
                return Err(format!(
                    "`environment.{list}` entry `{name}` is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
                ));
            }
            if !seen.insert(name.as_str()) {
                return Err(format!(
                    "`environment` lists `{name}` more than once; name each variable once, as required or optional"
                ));
            }
            if is_runtime_owned(name) {
                return Err(format!(
                    "`environment.{list}` entry `{name}` is a name the runtime sets itself (RUNX_CWD, RUNX_INPUTS_PATH, RUNX_INPUTS_JSON, RUNX_INPUT_*); it cannot be declared"
                ));
            }
        }
    }
    Ok(EnvDecl {
        required: raw.required,
        optional: raw.optional,
    })
}

fn is_page_input_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn build_pages(raw: RawPages, inputs: &BTreeMap<String, InputDecl>) -> Result<PagesDecl, String> {
    for (key, value) in [
        ("path_from", &raw.path_from),
        ("path_scope_from", &raw.path_scope_from),
    ] {
        if !is_page_input_name(value) {
            return Err(format!(
                "`pages.{key}` is `{value}`; it names an input and must match [A-Za-z0-9_-]+"
            ));
        }
        if value == RESERVED_PAGE_INPUT {
            return Err(format!(
                "`pages.{key}` may not be `{RESERVED_PAGE_INPUT}`, which the runtime reserves for page metadata"
            ));
        }
        if let Some(decl) = inputs.get(value.as_str())
            && !matches!(decl.ty, ValueType::String | ValueType::Any)
        {
            return Err(format!(
                "`pages.{key}` names input `{value}`, which is declared `{}`; it must be a string",
                decl.ty
            ));
        }
    }
    if raw.path_from == raw.path_scope_from {
        return Err(format!(
            "`pages.path_from` and `pages.path_scope_from` both name `{}`; they must be different inputs",
            raw.path_from
        ));
    }
    let framing = match raw.framing.as_deref() {
        None | Some("json_array") => Framing::JsonArray,
        Some(other) => {
            return Err(format!(
                "`pages.framing` is `{other}`; the only framing is `json_array`"
            ));
        }
    };
    let media_type = raw
        .media_type
        .unwrap_or_else(|| "application/json".to_string());
    if media_type.trim().is_empty() || !media_type.contains('/') {
        return Err(format!(
            "`pages.media_type` is `{media_type}`; give a media type such as application/json"
        ));
    }
    let page_bytes = raw.page_bytes.unwrap_or(PAGE_BYTES.default);
    if !(PAGE_BYTES.min..=PAGE_BYTES.max).contains(&page_bytes) {
        return Err(format!(
            "`pages.page_bytes` is {page_bytes}; allowed {} to {} (default {})",
            PAGE_BYTES.min, PAGE_BYTES.max, PAGE_BYTES.default
        ));
    }
    // At most 4 MiB, so it fits a usize everywhere.
    let page_bytes = usize::try_from(page_bytes).unwrap_or(usize::MAX);
    Ok(PagesDecl {
        path_from: raw.path_from,
        path_scope_from: raw.path_scope_from,
        media_type,
        framing,
        page_bytes,
    })
}

fn build_retry(raw: RawRetry, idempotent: bool) -> Result<RetryDecl, String> {
    if !idempotent {
        return Err(
            "`retry` requires `idempotent: true`: a retried command must be safe to run twice"
                .to_string(),
        );
    }
    if !(RETRY_ATTEMPTS.min..=RETRY_ATTEMPTS.max).contains(&u64::from(raw.attempts)) {
        return Err(format!(
            "`retry.attempts` is {}; allowed {} to {} additional runs",
            raw.attempts, RETRY_ATTEMPTS.min, RETRY_ATTEMPTS.max
        ));
    }
    let on = match raw.on {
        None => vec![RetryOn::Crash],
        Some(list) => {
            if list.is_empty() {
                return Err("`retry.on` is empty; use `[crash]` or remove `retry`".to_string());
            }
            let mut on = Vec::new();
            for kind in list {
                match kind.as_str() {
                    "crash" => {
                        if !on.contains(&RetryOn::Crash) {
                            on.push(RetryOn::Crash);
                        }
                    }
                    other => {
                        return Err(format!(
                            "`retry.on` contains `{other}`; only `crash` may be retried, other failures may follow side effects"
                        ));
                    }
                }
            }
            on
        }
    };
    let backoff = raw.backoff_seconds.unwrap_or(RETRY_BACKOFF.default / 1000);
    let (min, max) = (RETRY_BACKOFF.min / 1000, RETRY_BACKOFF.max / 1000);
    if !(min..=max).contains(&backoff) {
        return Err(format!(
            "`retry.backoff_seconds` is {backoff}; allowed {min} to {max}"
        ));
    }
    Ok(RetryDecl {
        attempts: raw.attempts,
        on,
        backoff: Duration::from_secs(backoff),
    })
}
