//! The rules for a runner's keys: from the raw YAML shape to a validated [`Runner`], with the
//! diagnostics of what loads but will not do what it seems to say.
//!
//! Messages name the key (`` `timeout_seconds` is 45; ... ``); the YAML reader adds the runner's
//! key path and line. Limits are checked against their one definition in [`crate::limits`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::contract::check_example;
use crate::decl::InputDecl;
use crate::limits::{CLI_WALL, JS_WALL, LimitDef, RETRY_ATTEMPTS, RETRY_BACKOFF};
use crate::model::{
    ArtifactsDecl, CliToolRunner, Diagnostic, EnvDecl, InputMode, JsRunner, RESERVED_PAGE_INPUT,
    RetryDecl, RetryOn, Runner, RunnerKind, SUPPORTED_TYPES,
};
use crate::pages::{build_pages, is_export_name};
use crate::runner_map::{OneOrMany, RawArtifacts, RawEnv, RawRetry, RawRunner};
use crate::template;

/// Merges the nested `run:`/`source:` block into the runner, refusing a key given in both
/// places.
fn merge_nested(mut outer: RawRunner) -> Result<RawRunner, String> {
    let Some((block, inner)) = outer.nested.take() else {
        return Ok(outer);
    };
    let mut inner = *inner;
    let take = |key: &str, both: bool| -> Result<(), String> {
        if both {
            Err(format!(
                "`{key}` is given both in `{block}:` and at the runner level; keep one"
            ))
        } else {
            Ok(())
        }
    };
    macro_rules! merge {
        ($($field:ident => $key:literal),* $(,)?) => {$(
            take($key, outer.$field.is_some() && inner.$field.is_some())?;
            if outer.$field.is_none() {
                outer.$field = inner.$field.take();
            }
        )*};
    }
    merge!(
        ty => "type", default => "default", module => "module", export => "export",
        engine => "engine",
        timeout_seconds => "timeout_seconds", environment => "environment", inputs => "inputs",
        outputs => "outputs", pages => "pages", command => "command", args => "args",
        cwd => "cwd", input_mode => "input_mode", idempotent => "idempotent", retry => "retry",
        artifacts => "artifacts", examples => "examples", idempotency => "idempotency",
    );
    for (key, value) in inner.declared_only {
        take(&key, outer.declared_only.contains_key(&key))?;
        outer.declared_only.insert(key, value);
    }
    Ok(outer)
}

/// Validates a runner's keys. Messages name the key; the YAML error adds the runner's path and
/// line. What loads but will not do what it seems to say is added to `diagnostics`.
pub(crate) fn build_runner(
    name: &str,
    raw: RawRunner,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Runner, String> {
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
    let artifacts = raw.artifacts.take().map(build_artifacts).transpose()?;
    let examples = raw.examples.take().unwrap_or_default();
    let mut notes = Notes {
        runner: name,
        diagnostics,
    };
    let default = raw.default.unwrap_or(false);
    let mut declared_only = std::mem::take(&mut raw.declared_only);
    let (kind, timeout) = match ty.as_str() {
        "javascript" => build_javascript(raw, &inputs, &mut declared_only, &mut notes)?,
        "cli-tool" => build_cli_tool(raw, &inputs, &environment, &mut notes)?,
        // Pass 1 routes every other string type to `OtherRunner`; reaching here means the type
        // was not a plain string there, which the typed field above would already have refused.
        other => {
            return Err(format!(
                "runner `{name}` has type `{other}`, which this runtime does not implement (supported: {SUPPORTED_TYPES})"
            ));
        }
    };
    let runner = Runner {
        name: name.to_string(),
        default,
        kind,
        inputs,
        outputs,
        environment,
        timeout,
        artifacts,
        examples,
        declared_only,
    };
    for (i, example) in runner.examples.iter().enumerate() {
        check_example(&runner, example)
            .map_err(|e| format!("`examples[{i}]` does not match the runner's inputs: {e}"))?;
    }
    Ok(runner)
}

/// Where a runner's diagnostics go.
struct Notes<'a> {
    runner: &'a str,
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl Notes<'_> {
    fn add(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.push(key.into(), message.into(), false);
    }

    /// A note about something that makes every run of the runner fail.
    fn fatal(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.push(key.into(), message.into(), true);
    }

    fn push(&mut self, key: String, message: String, fails_every_run: bool) {
        self.diagnostics.push(Diagnostic {
            runner: self.runner.to_string(),
            key,
            message,
            fails_every_run,
        });
    }
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
    declared_only: &mut BTreeMap<String, Value>,
    notes: &mut Notes<'_>,
) -> Result<(RunnerKind, Duration), String> {
    let ty = "javascript";
    forbid("command", raw.command.is_some(), "cli-tool", ty)?;
    forbid("args", raw.args.is_some(), "cli-tool", ty)?;
    forbid("cwd", raw.cwd.is_some(), "cli-tool", ty)?;
    forbid("input_mode", raw.input_mode.is_some(), "cli-tool", ty)?;
    forbid("idempotent", raw.idempotent.is_some(), "cli-tool", ty)?;
    if let Some(retry) = &raw.retry {
        // runx packages declare retries on any runner; a javascript call is deterministic and
        // the pool already runs it again on another worker if its worker dies.
        declared_only.insert("retry".to_string(), retry.to_json());
        notes.add(
            "retry",
            "inert: a javascript call is deterministic and is only repeated when its worker dies",
        );
    }
    let timeout = timeout_of(raw.timeout_seconds, &JS_WALL, ty)?;
    let module = raw.module.ok_or(
        "`module` is missing; a javascript runner names its ES module (`module: src/main.mjs`)",
    )?;
    check_module(&module)?;
    if let Some(export) = &raw.export {
        check_export(export)?;
    }
    let pages = raw.pages.map(|p| build_pages(p, inputs)).transpose()?;
    if let (Some(export), Some(parallel)) = (
        &raw.export,
        pages.as_ref().and_then(|p| p.parallel.as_ref()),
    ) {
        return Err(format!(
            "`export` is `{export}`, but a map/fold runner calls `pages.map` (`{}`) and `pages.fold` (`{}`) and never `export`; remove `export`",
            parallel.map, parallel.fold
        ));
    }
    if let Some(engine) = &raw.engine {
        check_engine(engine)?;
    }
    let js = JsRunner {
        module,
        export: raw.export,
        pages,
        engine: raw.engine,
    };
    Ok((RunnerKind::Javascript(js), timeout))
}

/// An `engine:` must name an engine runx knows; whether this executable has it is checked when
/// the runner runs, so that a package preferring V8 still loads everywhere.
fn check_engine(engine: &str) -> Result<(), String> {
    if runx_rules::ENGINES.contains(&engine) {
        return Ok(());
    }
    Err(format!(
        "`engine` is `{engine}`; a javascript runner runs on one of: {}",
        runx_rules::ENGINES.join(", ")
    ))
}

fn build_cli_tool(
    raw: RawRunner,
    inputs: &BTreeMap<String, InputDecl>,
    environment: &EnvDecl,
    notes: &mut Notes<'_>,
) -> Result<(RunnerKind, Duration), String> {
    let ty = "cli-tool";
    forbid("module", raw.module.is_some(), "javascript", ty)?;
    forbid("export", raw.export.is_some(), "javascript", ty)?;
    forbid("pages", raw.pages.is_some(), "javascript", ty)?;
    forbid("engine", raw.engine.is_some(), "javascript", ty)?;
    let timeout = timeout_of(raw.timeout_seconds, &CLI_WALL, ty)?;
    let command = raw
        .command
        .ok_or("`command` is missing; a cli-tool runner names the program to start")?;
    if command.trim().is_empty() {
        return Err("`command` is empty; name the program to start".to_string());
    }
    let input_mode = match raw.input_mode.as_deref() {
        None | Some("none") => InputMode::Closed,
        Some("args") => InputMode::Args,
        Some("stdin") => InputMode::Stdin,
        Some(other) => {
            return Err(format!(
                "`input_mode` is `{other}`; the modes are `stdin` (the input object as JSON on stdin), `args` and `none` (stdin closed without input)"
            ));
        }
    };
    if let Some(key) = &raw.idempotency
        && key.key().trim().is_empty()
    {
        return Err("`idempotency` is empty; give the idempotency key".to_string());
    }
    let idempotent = raw.idempotent.unwrap_or(false) || raw.idempotency.is_some();
    let retry = raw.retry.map(|r| build_retry(r, idempotent)).transpose()?;
    if let Some(reason) = retry.as_ref().and_then(|r| r.inert.as_ref()) {
        notes.add("retry", format!("inert: {reason}"));
    }
    let args = raw.args.unwrap_or_default();
    let found = template::problems(&args, raw.cwd.as_deref(), inputs, |name| {
        environment.declares(name)
    });
    for (key, message, fails_every_run) in found {
        if fails_every_run {
            notes.fatal(key, message);
        } else {
            notes.add(key, message);
        }
    }
    let tool = CliToolRunner {
        command,
        args,
        cwd: raw.cwd,
        input_mode,
        idempotent,
        retry,
    };
    Ok((RunnerKind::CliTool(tool), timeout))
}

/// Checks an `artifacts:` block: names are non-empty, `packets` keys are `named_emits` keys,
/// `packet` goes with `wrap_as`.
fn build_artifacts(raw: RawArtifacts) -> Result<ArtifactsDecl, String> {
    let emits = match raw.emits {
        None => Vec::new(),
        Some(OneOrMany::One(e)) => vec![e],
        Some(OneOrMany::Many(e)) => e,
    };
    let named_emits = raw.named_emits.unwrap_or_default();
    let packets = raw.packets.unwrap_or_default();
    let empty = |what: &str| format!("`artifacts.{what}` holds an empty name");
    if emits.iter().any(|e| e.trim().is_empty()) {
        return Err(empty("emits"));
    }
    if named_emits
        .iter()
        .any(|(k, v)| k.trim().is_empty() || v.trim().is_empty())
    {
        return Err(empty("named_emits"));
    }
    if packets
        .iter()
        .any(|(k, v)| k.trim().is_empty() || v.trim().is_empty())
    {
        return Err(empty("packets"));
    }
    if let Some(field) = packets.keys().find(|k| !named_emits.contains_key(*k)) {
        return Err(format!(
            "`artifacts.packets.{field}` names no `artifacts.named_emits` entry; a packet describes a named emit"
        ));
    }
    if raw.wrap_as.as_ref().is_some_and(|w| w.trim().is_empty()) {
        return Err(empty("wrap_as"));
    }
    match (&raw.packet, &raw.wrap_as) {
        (Some(p), _) if p.trim().is_empty() => return Err(empty("packet")),
        (Some(p), None) => {
            return Err(format!(
                "`artifacts.packet: {p}` needs `artifacts.wrap_as`: the packet describes the wrapped result"
            ));
        }
        _ => {}
    }
    Ok(ArtifactsDecl {
        emits,
        named_emits,
        packets,
        wrap_as: raw.wrap_as,
        packet: raw.packet,
    })
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
/// ([`runx_rules::check_module_entry`]), the rule the worker applies to every import.
fn check_module(module: &str) -> Result<(), String> {
    if module.is_empty() {
        return Err("`module` is empty; name a .mjs or .js file in the package".to_string());
    }
    runx_rules::check_module_entry(module)
        .map(|_| ())
        .map_err(|e| {
            format!(
                "`module` `{module}` is not a module of the package: {}",
                e.reason
            )
        })
}

fn check_export(export: &str) -> Result<(), String> {
    if !is_export_name(export) {
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

/// Whether `name` is the runtime's: runx reserves the whole `RUNX_` prefix, so a package
/// declaring one loads in neither.
pub(crate) fn is_reserved_env_name(name: &str) -> bool {
    name.starts_with("RUNX_")
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
            if runx_receipts::is_signing_name(name) {
                return Err(format!(
                    "`environment.{list}` names `{name}`: receipt-signing material is never given to a runner (names starting with {} are refused)",
                    runx_receipts::SIGN_ENV_PREFIX
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
            if is_reserved_env_name(name) {
                return Err(format!(
                    "`environment.{list}` entry `{name}`: names starting with RUNX_ belong to the runtime, which sets the ones a runner gets (RUNX_RECEIPT_DIR, RUNX_RECEIPT_VERIFY_*); runx refuses them too"
                ));
            }
        }
    }
    Ok(EnvDecl {
        required: raw.required,
        optional: raw.optional,
    })
}

/// Checks a retry policy. One that can never apply (the runner is not idempotent, or
/// `max_attempts: 1`) is kept with the reason it is inert rather than refused: runx packages
/// declare retries the way their other runtime reads them.
fn build_retry(raw: RawRetry, idempotent: bool) -> Result<RetryDecl, String> {
    let attempts = match (raw.attempts, raw.max_attempts) {
        (Some(_), Some(_)) => {
            return Err(
                "`retry` gives both `attempts` (additional runs) and `max_attempts` (all runs); keep one"
                    .to_string(),
            );
        }
        (None, None) => {
            return Err(
                "`retry` needs `max_attempts` (all runs, the first included) or `attempts` (additional runs)"
                    .to_string(),
            );
        }
        (Some(a), None) => {
            if !(RETRY_ATTEMPTS.min..=RETRY_ATTEMPTS.max).contains(&u64::from(a)) {
                return Err(format!(
                    "`retry.attempts` is {a}; allowed {} to {} additional runs",
                    RETRY_ATTEMPTS.min, RETRY_ATTEMPTS.max
                ));
            }
            a
        }
        (None, Some(m)) => {
            let max = RETRY_ATTEMPTS.max + 1;
            if !(1..=max).contains(&u64::from(m)) {
                return Err(format!(
                    "`retry.max_attempts` is {m}; allowed 1 to {max} runs, the first included"
                ));
            }
            m - 1
        }
    };
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
    let inert = if !idempotent {
        Some(
            "the runner is not idempotent (declare `idempotent: true` or an `idempotency` key); a command that may have had effects is never run twice"
                .to_string(),
        )
    } else if attempts == 0 {
        Some("`max_attempts: 1` allows no run after the first".to_string())
    } else {
        None
    };
    Ok(RetryDecl {
        attempts,
        on,
        backoff: Duration::from_secs(backoff),
        inert,
    })
}
