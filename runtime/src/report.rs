//! The JSON objects runx answers with: a run's result (what `runx skill --json` prints and a
//! step server returns for `run`) and a package's description (`runx skill inspect --json`,
//! a step server's `inspect`). Built here once, so every caller prints the same bytes.

use crate::failure::RunError;
use crate::limits;
use crate::profile::{Profile, Runner, RunnerKind};
use crate::runtime::RunOutcome;
use serde_json::{Map, Value, json};

/// The result of a run: `{"status", "skill", "runner", "output", "receipt", "error",
/// "console"}`, where `error` is `{"kind", "code", "message"}` or `null` and `console` holds
/// the `{"level", "message"}` lines a javascript runner logged.
pub fn run_result(o: &RunOutcome) -> Value {
    json!({
        "status": o.status(),
        "skill": o.skill,
        "runner": o.runner,
        "output": o.output(),
        "receipt": o.receipt_path.as_ref().map(|p| p.display().to_string()),
        "error": o.error(),
        "console": o.log.lines,
    })
}

/// The result for a request refused before any run (no package loaded, no receipt): the same
/// keys as [`run_result`].
pub fn refused(runner: Option<&str>, error: &RunError) -> Value {
    json!({
        "status": "failure", "skill": null, "runner": runner,
        "output": null, "receipt": null, "error": error, "console": [],
    })
}

/// The package as one JSON object: `{"skill", "version", "dir", "runners"}` with every
/// runner in name order, each with its inputs, outputs, environment and limits.
pub fn describe(p: &Profile) -> Value {
    let mut runners: Vec<(String, Value)> = p
        .runners
        .values()
        .map(|r| (r.name.clone(), describe_runner(p, r)))
        .collect();
    runners.extend(p.other_runners.iter().map(|(name, other)| {
        (
            name.clone(),
            json!({
                "name": name,
                "type": other.ty,
                "default": p.default_runner.as_deref() == Some(name.as_str()),
                "runs_here": false,
            }),
        )
    }));
    runners.sort_by(|a, b| a.0.cmp(&b.0));
    let runners: Vec<Value> = runners.into_iter().map(|(_, v)| v).collect();
    json!({"skill": p.skill, "version": p.version, "dir": p.dir, "runners": runners})
}

fn describe_runner(p: &Profile, r: &Runner) -> Value {
    let (module, export, pages, command) = match &r.kind {
        RunnerKind::Javascript(js) => (
            Some(js.module.clone()),
            js.export.clone(),
            js.pages.as_ref().map(|pg| {
                json!({"path_from": pg.path_from, "path_scope_from": pg.path_scope_from,
                       "media_type": pg.media_type, "framing": "json_array", "page_bytes": pg.page_bytes})
            }),
            None,
        ),
        RunnerKind::CliTool(t) => (None, None, None, Some(t.command.clone())),
    };
    let inputs: Map<String, Value> = r
        .inputs
        .iter()
        .map(|(k, d)| {
            let decl = json!({
                "type": d.ty.name(), "required": d.required, "default": d.default,
                "description": d.description,
            });
            (k.clone(), decl)
        })
        .collect();
    let outputs: Map<String, Value> = r
        .outputs
        .iter()
        .map(|(k, d)| (k.clone(), json!(d.ty.name())))
        .collect();
    json!({
        "name": r.name,
        "type": r.kind.type_name(),
        "default": p.default_runner.as_deref() == Some(r.name.as_str()),
        "runs_here": true,
        "module": module, "export": export, "pages": pages, "command": command,
        "inputs": inputs,
        "outputs": outputs,
        "environment": {"required": r.environment.required, "optional": r.environment.optional},
        // The same name → value map a receipt records.
        "limits": limits::for_runner(r).to_map(),
    })
}
