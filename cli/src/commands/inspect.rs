//! `runx skill inspect DIR`: what a package declares, what of it this runtime runs and what it
//! only shows, the limits it runs under, and the problems `runx skill check` finds in it (exit
//! 64 when one is an error).

use runx_profile::Profile;
use runx_runtime::describe_json;
use serde_json::{Value, json};
use std::path::Path;
use std::process::ExitCode;

/// Prints the description of the package in `dir` (one JSON object with `as_json`), then the
/// problems the checks of `runx skill check` find.
pub fn inspect(dir: &Path, as_json: bool, engine: Option<&str>) -> ExitCode {
    let dir = match crate::package::find_package(dir) {
        Ok(dir) => dir,
        Err(message) => return crate::exit::usage(&message),
    };
    let (p, text) = match runx_profile::load_with_text(&dir) {
        Ok(loaded) => loaded,
        Err(e) => {
            errln!("runx: {e}");
            return ExitCode::from(crate::exit::EXIT_USAGE);
        }
    };
    let rt = crate::launch::configured_runtime(engine, crate::keys::Keys::default());
    let checked = rt.check_loaded(&dir, &p, text);
    let mut doc = describe_json(&p);
    if as_json {
        doc["problems"] = serde_json::to_value(&checked.problems).unwrap_or_default();
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print_human(&p, &doc);
        if !checked.problems.is_empty() {
            outln!("\nproblems (`runx skill check`):");
            for problem in &checked.problems {
                outln!("  {problem}");
            }
        }
    }
    if checked.errors() > 0 {
        ExitCode::from(crate::exit::EXIT_USAGE)
    } else {
        ExitCode::SUCCESS
    }
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
    outln!("{indent}{title}:");
    for (k, d) in entries {
        outln!("{indent}  {k}: {}", elide(without_nulls(d).to_string()));
    }
}

/// Most characters of one value on a line; a graph block can be thousands.
const SHOWN_CHARS: usize = 160;

/// `text` cut after [`SHOWN_CHARS`] characters, saying how much was left out and where to find
/// it.
fn elide(text: String) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        None => text,
        Some((cut, _)) => {
            let left = text[cut..].chars().count();
            format!(
                "{}… ({left} more characters; `--json` shows all)",
                &text[..cut]
            )
        }
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
    outln!("{} {} ({})", p.skill, p.version, p.dir.display());
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
            outln!("\nrunner {name}{default} — {ty} (not run by this runtime)");
            print_map("  ", "declared", &r["keys"], &[]);
            continue;
        }
        outln!("\nrunner {name}{default} — {ty}");
        for key in ["module", "export", "command", "cwd", "input_mode"] {
            if let Some(v) = r[key].as_str() {
                outln!("  {key}: {v}");
            }
        }
        if r["engine"].is_object() {
            outln!("  engine: {}", engine_line(&r["engine"]));
        }
        for key in ["pages", "args", "retry", "artifacts"] {
            if !r[key].is_null() {
                outln!("  {key}: {}", elide(without_nulls(&r[key]).to_string()));
            }
        }
        print_map("  ", "inputs", &r["inputs"], &[]);
        print_map("  ", "outputs", &r["output_declarations"], &[]);
        if let Some(examples) = r["examples"].as_array().filter(|e| !e.is_empty()) {
            outln!("  examples: {} (each matches the inputs)", examples.len());
        }
        print_map(
            "  ",
            "shown, not run by this runtime",
            &r["declared_only"],
            &["artifacts", "examples", "retry"],
        );
        outln!("  environment: {}", r["environment"]);
        if let Some(runner) = p.runners.get(name) {
            outln!("  limits:");
            for (def, value) in runx_profile::limits_for(runner).entries() {
                outln!(
                    "    {}: {} — {}",
                    def.name,
                    runx_profile::human(def, *value),
                    def.bounds
                );
            }
        }
    }
}

/// `v8 (declared by `engine:`; ...)`, or the default when nothing is declared.
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

#[cfg(test)]
mod tests {
    use super::{SHOWN_CHARS, elide};

    #[test]
    fn long_values_are_cut_at_a_character_and_say_so() {
        assert_eq!(elide("short".into()), "short");
        let long = "é".repeat(SHOWN_CHARS + 40);
        let cut = elide(long);
        assert!(cut.starts_with(&"é".repeat(SHOWN_CHARS)), "{cut}");
        assert!(
            cut.ends_with("… (40 more characters; `--json` shows all)"),
            "{cut}"
        );
        assert_eq!(elide("x".repeat(SHOWN_CHARS)), "x".repeat(SHOWN_CHARS));
    }
}
