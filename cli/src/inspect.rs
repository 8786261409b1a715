//! `runx skill inspect DIR`: what a package declares, and the limits it runs under.

use runx_runtime::limits;
use runx_runtime::profile::{self, Profile};
use runx_runtime::report::describe;
use serde_json::{Value, json};
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
