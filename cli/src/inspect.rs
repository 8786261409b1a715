//! `runx skill inspect DIR`: what a package declares, and the limits it runs under.

use runx_runtime::limits::{self, AppliedLimits};
use runx_runtime::profile::{self, Profile, Runner, RunnerKind};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::process::ExitCode;

/// Prints the description of the package in `dir` (one JSON object with `as_json`).
pub fn inspect(dir: &Path, as_json: bool) -> ExitCode {
    let p = match profile::load(dir) {
        Ok(p) => p,
        Err(e) => {
            errln!("runx: {e}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    let doc = describe(&p);
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print_human(&p, &doc);
    }
    ExitCode::SUCCESS
}

/// The package as one JSON object: every runner, in name order.
fn describe(p: &Profile) -> Value {
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
        "limits": limits_json(&limits::for_runner(r)),
    })
}

/// The limits as `name → value`, the same map a receipt records.
fn limits_json(applied: &AppliedLimits) -> Value {
    json!(applied.to_map())
}

fn print_human(p: &Profile, doc: &Value) {
    outln!("{} {} ({})", p.skill, p.version, p.dir.display());
    let empty = Vec::new();
    for r in doc["runners"].as_array().unwrap_or(&empty) {
        let name = r["name"].as_str().unwrap_or("");
        let default = if r["default"] == json!(true) {
            " (default)"
        } else {
            ""
        };
        let ty = r["type"].as_str().unwrap_or("");
        if r["runs_here"] == json!(false) {
            outln!("\nrunner {name}{default} — {ty} (not run by this runtime)");
            continue;
        }
        outln!("\nrunner {name}{default} — {ty}");
        for key in ["module", "export", "command"] {
            if let Some(v) = r[key].as_str() {
                outln!("  {key}: {v}");
            }
        }
        if !r["pages"].is_null() {
            outln!("  pages: {}", r["pages"]);
        }
        for (section, v) in [("inputs", &r["inputs"]), ("outputs", &r["outputs"])] {
            if let Some(m) = v.as_object().filter(|m| !m.is_empty()) {
                outln!("  {section}:");
                for (k, d) in m {
                    outln!("    {k}: {d}");
                }
            }
        }
        outln!("  environment: {}", r["environment"]);
        if let Some(runner) = p.runners.get(name) {
            outln!("  limits:");
            for (def, value) in limits::for_runner(runner).entries() {
                outln!(
                    "    {}: {} — {}",
                    def.name,
                    limits::human(def, *value),
                    def.bounds
                );
            }
        }
    }
}
