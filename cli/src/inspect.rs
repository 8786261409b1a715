//! `runx skill inspect DIR`: what a package declares, and the limits it runs under.

use runx_runtime::limits::{self, AppliedLimits};
use runx_runtime::profile::{self, Profile, Runner, RunnerKind};
use runx_runtime::workers::{DEFAULT_ENGINE, engines_built};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::process::ExitCode;

/// Prints the description of the package in `dir` (one JSON object with `as_json`).
pub fn inspect(dir: &Path, as_json: bool) -> ExitCode {
    let p = match profile::load(dir) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("runx: {e}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    let doc = describe(&p);
    if as_json {
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
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
    let (module, export, pages, command, engine) = match &r.kind {
        RunnerKind::Javascript(js) => (
            Some(js.module.clone()),
            js.export.clone(),
            js.pages.as_ref().map(|pg| {
                json!({"path_from": pg.path_from, "path_scope_from": pg.path_scope_from,
                       "media_type": pg.media_type, "framing": "json_array", "page_bytes": pg.page_bytes})
            }),
            None,
            Some(engine_json(js.engine.as_deref())),
        ),
        RunnerKind::CliTool(t) => (None, None, None, Some(t.command.clone()), None),
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
        "engine": engine,
        "inputs": inputs,
        "outputs": outputs,
        "environment": {"required": r.environment.required, "optional": r.environment.optional},
        "limits": limits_json(&limits::for_runner(r)),
    })
}

/// What a javascript runner declares about its engine and what this executable has. The
/// runner runs on `--engine` when given, else on `declared`, else on `default`.
fn engine_json(declared: Option<&str>) -> Value {
    json!({
        "declared": declared,
        "default": DEFAULT_ENGINE,
        "built": engines_built(),
    })
}

/// The limits as `name → value`, the same map a receipt records.
fn limits_json(applied: &AppliedLimits) -> Value {
    json!(applied.to_map())
}

fn print_human(p: &Profile, doc: &Value) {
    println!("{} {} ({})", p.skill, p.version, p.dir.display());
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
            println!("\nrunner {name}{default} — {ty} (not run by this runtime)");
            continue;
        }
        println!("\nrunner {name}{default} — {ty}");
        for key in ["module", "export", "command"] {
            if let Some(v) = r[key].as_str() {
                println!("  {key}: {v}");
            }
        }
        if !r["pages"].is_null() {
            println!("  pages: {}", r["pages"]);
        }
        if r["engine"].is_object() {
            println!("  engine: {}", engine_line(&r["engine"]));
        }
        for (section, v) in [("inputs", &r["inputs"]), ("outputs", &r["outputs"])] {
            if let Some(m) = v.as_object().filter(|m| !m.is_empty()) {
                println!("  {section}:");
                for (k, d) in m {
                    println!("    {k}: {d}");
                }
            }
        }
        println!("  environment: {}", r["environment"]);
        if let Some(runner) = p.runners.get(name) {
            println!("  limits:");
            for (def, value) in limits::for_runner(runner).entries() {
                println!(
                    "    {}: {} — {}",
                    def.name,
                    limits::human(def, *value),
                    def.bounds
                );
            }
        }
    }
}

/// `v8 (declared; this runx has quickjs, v8)`, or the default when nothing is declared.
fn engine_line(engine: &Value) -> String {
    let built: Vec<&str> = engine["built"]
        .as_array()
        .map(|b| b.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let (name, how) = match engine["declared"].as_str() {
        Some(declared) => (declared, "declared by `engine:`"),
        None => (engine["default"].as_str().unwrap_or(""), "the default"),
    };
    let missing = if built.contains(&name) {
        ""
    } else {
        ", NOT built into this runx: runs fail unless `--engine` picks another"
    };
    format!(
        "{name} ({how}; `--engine` overrides; this runx has {}{missing})",
        built.join(", ")
    )
}
