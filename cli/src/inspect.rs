//! `runx skill inspect DIR`: what a package declares, what of it this runtime runs and what it
//! only shows, the load-time diagnostics, and the limits it runs under.

use runx_runtime::limits::{self, AppliedLimits};
use runx_runtime::profile::{self, InputDecl, Profile, Runner, RunnerKind};
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
                "keys": other.keys,
            }),
        )
    }));
    runners.sort_by(|a, b| a.0.cmp(&b.0));
    let runners: Vec<Value> = runners.into_iter().map(|(_, v)| v).collect();
    let definitions: Map<String, Value> = p
        .input_definitions
        .iter()
        .map(|(k, d)| (k.clone(), describe_input(d)))
        .collect();
    json!({
        "skill": p.skill, "version": p.version, "dir": p.dir, "runners": runners,
        "input_definitions": definitions,
        "declared_only": p.declared_only,
        "diagnostics": p.diagnostics,
    })
}

/// One input declaration, with where its schema came from.
fn describe_input(d: &InputDecl) -> Value {
    json!({
        "type": d.ty.name(), "required": d.required, "default": d.default,
        "description": d.description, "schema": d.schema, "artifact": d.artifact,
        "definition": d.definition,
        "packet": d.packet.as_ref().map(|pk| json!({"id": pk.id, "file": pk.file, "digest": pk.digest})),
    })
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
        .map(|(k, d)| (k.clone(), describe_input(d)))
        .collect();
    let outputs: Map<String, Value> = r
        .outputs
        .iter()
        .map(|(k, d)| (k.clone(), json!(d.ty.name())))
        .collect();
    let output_declarations: Map<String, Value> = r
        .outputs
        .iter()
        .map(|(k, d)| {
            let decl = json!({
                "type": d.ty.name(), "required": d.required, "schema": d.schema,
                "description": d.description, "wrap_as": d.wrap_as,
            });
            (k.clone(), decl)
        })
        .collect();
    let mut doc = json!({
        "name": r.name,
        "type": r.kind.type_name(),
        "default": p.default_runner.as_deref() == Some(r.name.as_str()),
        "runs_here": true,
        "module": module, "export": export, "pages": pages, "command": command,
        "engine": engine,
        "inputs": inputs,
        "outputs": outputs,
        "output_declarations": output_declarations,
        "environment": {"required": r.environment.required, "optional": r.environment.optional},
        "limits": limits_json(&limits::for_runner(r)),
        "artifacts": r.artifacts,
        "examples": r.examples,
        "declared_only": r.declared_only,
    });
    if let (RunnerKind::CliTool(t), Some(obj)) = (&r.kind, doc.as_object_mut()) {
        obj.insert("args".into(), json!(t.args));
        obj.insert("cwd".into(), json!(t.cwd));
        obj.insert("input_mode".into(), json!(t.input_mode.name()));
        obj.insert("idempotent".into(), json!(t.idempotent));
        obj.insert(
            "retry".into(),
            json!(t.retry.as_ref().map(|rt| json!({
                "max_attempts": rt.attempts + 1,
                "on": rt.on.iter().map(|_| "crash").collect::<Vec<_>>(),
                "backoff_seconds": rt.backoff.as_secs(),
                "applies": rt.inert.is_none(),
                "inert": rt.inert,
            }))),
        );
    }
    doc
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

/// Prints the entries of an object under `title`, one per line, when there are any; `null`
/// fields inside them are left out, and so are the keys in `skip` (shown elsewhere).
fn print_map(indent: &str, title: &str, v: &Value, skip: &[&str]) {
    let Some(m) = v.as_object() else { return };
    let entries: Vec<(&String, &Value)> = m
        .iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .collect();
    if entries.is_empty() {
        return;
    }
    println!("{indent}{title}:");
    for (k, d) in entries {
        println!("{indent}  {k}: {}", without_nulls(d));
    }
}

/// `v` with the `null` fields of its objects left out, for people.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (k.clone(), without_nulls(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn print_human(p: &Profile, doc: &Value) {
    println!("{} {} ({})", p.skill, p.version, p.dir.display());
    if !p.diagnostics.is_empty() {
        println!("\ndiagnostics:");
        for d in &p.diagnostics {
            println!("  {d}");
        }
    }
    print_map("", "\ninput_definitions", &doc["input_definitions"], &[]);
    print_map(
        "",
        "\nshown, not run by this runtime",
        &doc["declared_only"],
        &[],
    );
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
            print_map("  ", "declared", &r["keys"], &[]);
            continue;
        }
        println!("\nrunner {name}{default} — {ty}");
        for key in ["module", "export", "command", "cwd", "input_mode"] {
            if let Some(v) = r[key].as_str() {
                println!("  {key}: {v}");
            }
        }
        if r["engine"].is_object() {
            println!("  engine: {}", engine_line(&r["engine"]));
        }
        for key in ["pages", "args", "retry", "artifacts"] {
            if !r[key].is_null() {
                println!("  {key}: {}", without_nulls(&r[key]));
            }
        }
        print_map("  ", "inputs", &r["inputs"], &[]);
        print_map("  ", "outputs", &r["output_declarations"], &[]);
        if let Some(examples) = r["examples"].as_array().filter(|e| !e.is_empty()) {
            println!("  examples: {} (each matches the inputs)", examples.len());
        }
        print_map(
            "  ",
            "shown, not run by this runtime",
            &r["declared_only"],
            &["artifacts", "examples", "retry"],
        );
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
