//! Issue 43, item 1: a package whose input or output schema is a recursive `anyOf` gets a typed
//! refusal at once for a deep value, instead of validation doubling with each level.

use super::*;
use std::time::{Duration, Instant};

/// A schema whose validation doubles with each level of nesting of the value.
const DOUBLING: &str = r##"{"$defs": {"n": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/n"}}, {"type": "array", "items": {"$ref": "#/$defs/n"}}, {"type": "string"}]}}, "$ref": "#/$defs/n"}"##;

/// Writes the package `deep` under `ws`: `take` checks its input `tree` against the doubling
/// schema, `give` returns a value nested `depth` deep under an output with that schema.
pub fn deep_package(ws: &Path, depth: usize) -> PathBuf {
    let pkg = ws.join("deep");
    std::fs::create_dir_all(&pkg).unwrap();
    let profile = format!(
        "skill: deep\nrunners:\n  take:\n    type: javascript\n    module: m.mjs\n    export: take\n    inputs:\n      tree: {{ type: json, required: true, schema: {DOUBLING} }}\n  give:\n    type: javascript\n    module: m.mjs\n    export: give\n    outputs:\n      tree: {{ type: json, schema: {DOUBLING} }}\n"
    );
    std::fs::write(pkg.join("X.yaml"), profile).unwrap();
    std::fs::write(
        pkg.join("m.mjs"),
        format!(
            "export function take() {{ return {{ ok: true }}; }}\nexport function give() {{ let v = 1; for (let i = 0; i < {depth}; i++) v = [v]; return {{ tree: v }}; }}\n"
        ),
    )
    .unwrap();
    pkg
}

/// `[[[...1...]]]`, `depth` levels: no branch matches at the bottom, so every branch is tried.
pub fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

const QUICKLY: Duration = Duration::from_secs(10);

#[test]
fn a_deep_input_under_a_recursive_any_of_is_refused_at_once() {
    let ws = tempfile::tempdir().unwrap();
    deep_package(ws.path(), 0);
    let started = Instant::now();
    let tree = format!("tree={}", nested(24));
    let (v, code) = json_in(ws.path(), &["skill", "deep", "take", "-i", &tree], &[]);
    assert!(started.elapsed() < QUICKLY, "{:?}", started.elapsed());
    assert_eq!(code, 64, "an input error: {v}");
    assert_eq!(v["error"]["kind"], "input", "{v}");
    assert_eq!(v["error"]["code"], "validation_steps", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`tree`") && message.contains("validation_steps"),
        "{message}"
    );
    // A shallow value is validated as ever.
    let tree = format!("tree={}", nested(3));
    let (v, _) = json_in(ws.path(), &["skill", "deep", "take", "-i", &tree], &[]);
    assert_eq!(v["error"]["code"], "schema", "{v}");
    let (v, code) = json_in(
        ws.path(),
        &["skill", "deep", "take", "-i", r#"tree=[["x"]]"#],
        &[],
    );
    assert_eq!(code, 0, "{v}");
}

#[test]
fn a_deep_output_under_a_recursive_any_of_is_refused_at_once() {
    let ws = tempfile::tempdir().unwrap();
    deep_package(ws.path(), 24);
    let started = Instant::now();
    let (v, code) = json_in(ws.path(), &["skill", "deep", "give"], &[]);
    assert!(started.elapsed() < QUICKLY, "{:?}", started.elapsed());
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["kind"], "output_rejected", "{v}");
    assert_eq!(v["error"]["code"], "validation_steps", "{v}");
}
