//! `runx skill inspect DIR`: what a package declares, and the limits it runs under.

use runx_runtime::profile::{self, RunnerKind};
use runx_worker::limits::Limits;
use serde_json::{Value, json};
use std::path::Path;
use std::process::ExitCode;

pub fn inspect(dir: &Path, as_json: bool) -> ExitCode {
    let p = match profile::load(dir) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("runx: {e}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    let runners: Vec<Value> = p
        .runners
        .values()
        .map(|r| {
            let limits = match &r.kind {
                RunnerKind::Javascript(_) => Limits::default()
                    .with_wall(r.timeout)
                    .entries()
                    .into_iter()
                    .map(|(l, v)| (l.name().to_string(), json!(v)))
                    .collect(),
                _ => serde_json::Map::from_iter([(
                    "wall_milliseconds".to_string(),
                    json!(r.timeout.as_millis() as u64),
                )]),
            };
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
                RunnerKind::Unsupported(_) => (None, None, None, None),
            };
            json!({
                "name": r.name,
                "type": r.kind.type_name(),
                "default": p.default_runner.as_deref() == Some(r.name.as_str()),
                "module": module, "export": export, "pages": pages, "command": command,
                "inputs": r.inputs.iter().map(|(k, d)| (k.clone(), json!({
                    "type": d.ty.name(), "required": d.required, "default": d.default,
                    "description": d.description,
                }))).collect::<serde_json::Map<_, _>>(),
                "outputs": r.outputs.iter().map(|(k, d)| (k.clone(), json!(d.ty.name()))).collect::<serde_json::Map<_, _>>(),
                "environment": {"required": r.environment.required, "optional": r.environment.optional},
                "limits": limits,
            })
        })
        .collect();
    let doc = json!({"skill": p.skill, "version": p.version, "dir": p.dir, "runners": runners});
    if as_json {
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    println!("{} {} ({})", p.skill, p.version, p.dir.display());
    for r in &runners {
        println!(
            "\nrunner {}{} — {}",
            r["name"].as_str().unwrap_or(""),
            if r["default"] == json!(true) {
                " (default)"
            } else {
                ""
            },
            r["type"].as_str().unwrap_or("")
        );
        for key in ["module", "export", "command"] {
            if let Some(v) = r[key].as_str() {
                println!("  {key}: {v}");
            }
        }
        if !r["pages"].is_null() {
            println!("  pages: {}", r["pages"]);
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
        println!("  limits: {}", r["limits"]);
    }
    ExitCode::SUCCESS
}
