//! A runner's contract: resolving a call's inputs and checking its outputs against the
//! declarations of the profile.
//!
//! Inputs are checked on the host, before a worker or subprocess starts, so a caller learns about
//! a missing or mistyped input from a message naming the key instead of from whatever the skill
//! code does with it. Outputs are checked after the call, so a runner that breaks its declared
//! contract fails rather than handing a graph runner a value its next step cannot use.
//!
//! JSON Schemas are compiled by `jsonschema` built without its network and file resolvers: a
//! profile cannot make the runtime fetch anything.

use serde_json::{Map, Value};

use crate::decl::{ValueType, with_article};
use crate::model::{PathScope, RESERVED_PAGE_INPUT, Runner, RunnerKind};
use crate::numbers::{MAX_SAFE_INTEGER, unsafe_integer};
use crate::schema::{Refusal, too_complex};

/// Why a call's inputs were refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A required input was not given and has no default.
    #[error("input `{key}` is required by runner `{runner}` but was not given")]
    Missing {
        /// The runner.
        runner: String,
        /// The input.
        key: String,
    },
    /// An input has another JSON type than declared.
    #[error("input `{key}` must be {}, but {} was given{}", with_article(expected.name()), with_article(actual), quote_hint(key, *expected, given.as_deref()))]
    WrongType {
        /// The input.
        key: String,
        /// The declared type.
        expected: ValueType,
        /// The type given.
        actual: &'static str,
        /// The value given, as JSON text, when it is a short scalar a caller may have meant as
        /// text (`42`, `true`, `null`).
        given: Option<String>,
    },
    /// An input breaks its JSON Schema.
    #[error("input `{key}` does not match its schema: {details}")]
    Schema {
        /// The input.
        key: String,
        /// The first violations, with their paths.
        details: String,
    },
    /// Validating an input against its schema could take more than `validation_steps`.
    #[error("input `{key}` {}", too_complex(*steps))]
    TooComplex {
        /// The input.
        key: String,
        /// The bound counted.
        steps: u64,
    },
    /// The caller gave `runx_page` to a paged runner.
    #[error(
        "input `{key}` is reserved: the runtime passes page metadata under that name to paged runners"
    )]
    Reserved {
        /// The input.
        key: String,
    },
    /// An `artifact: true` input holds an artifact envelope without `data`.
    #[error(
        "input `{key}` is an artifact envelope without `data`; pass the artifact with its data, or the value itself"
    )]
    EmptyArtifact {
        /// The input.
        key: String,
    },
    /// A page path or scope input is missing or unusable.
    #[error("page input `{key}` {problem}")]
    PageInput {
        /// The input.
        key: String,
        /// What is wrong.
        problem: String,
    },
    /// An input the runner neither declares nor names in an argument template.
    #[error("{}", undeclared_message(runner, key, declared))]
    Undeclared {
        /// The runner.
        runner: String,
        /// The input given.
        key: String,
        /// The names the runner takes, sorted.
        declared: Vec<String>,
    },
    /// An input holds an integer a JSON number does not carry exactly.
    #[error(
        "input `{key}` holds the integer {value}{}, beyond ±{MAX_SAFE_INTEGER} (2^53 - 1), which a JSON number does not carry exactly; pass it as a string",
        at_pointer(at)
    )]
    UnsafeInteger {
        /// The input.
        key: String,
        /// Where inside the input, as a JSON pointer (empty: the input itself).
        at: String,
        /// The integer as given.
        value: String,
    },
}

/// The refusal of an undeclared input: what it is, the nearest name the runner takes, and what
/// it takes.
fn undeclared_message(runner: &str, key: &str, declared: &[String]) -> String {
    let takes = if declared.is_empty() {
        "no inputs".to_string()
    } else {
        let names: Vec<String> = declared.iter().map(|n| format!("`{n}`")).collect();
        names.join(", ")
    };
    format!(
        "input `{key}` is not declared by runner `{runner}`, which takes {takes}{}",
        runx_rules::did_you_mean(key, declared.iter().map(String::as_str))
    )
}

/// For a string input given a number, a boolean or null: how to give the same characters as
/// text. `-i name=42` reads the value as JSON, so a caller who meant the text must quote it.
fn quote_hint(key: &str, expected: ValueType, given: Option<&str>) -> String {
    match given {
        Some(text) if expected == ValueType::String => format!(
            "; to give the text {text}, quote it: `-i '{key}=\"{text}\"'` on the command line, `\"{text}\"` in JSON"
        ),
        _ => String::new(),
    }
}

/// ` at /a/0` for a place inside a value, nothing for the value itself.
fn at_pointer(at: &str) -> String {
    if at.is_empty() {
        String::new()
    } else {
        format!(" at {at}")
    }
}

impl InputError {
    /// The failure code of this error (the kind is always `input`).
    pub fn code(&self) -> &'static str {
        match self {
            InputError::Missing { .. } => "missing_input",
            InputError::WrongType { .. } => "wrong_type",
            InputError::Schema { .. } => "schema",
            InputError::TooComplex { .. } => "validation_steps",
            InputError::Reserved { .. } => "reserved_input",
            InputError::EmptyArtifact { .. } => "artifact_input",
            InputError::PageInput { .. } => "page_input",
            InputError::UnsafeInteger { .. } => "unsafe_integer",
            InputError::Undeclared { .. } => "undeclared_input",
        }
    }
}

/// Why a runner's output was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The output is not an object.
    #[error(
        "the output must be a JSON object of named outputs, but it is {}",
        with_article(actual)
    )]
    NotObject {
        /// The JSON type it is.
        actual: &'static str,
    },
    /// A cli-tool's output holds an integer a JSON number does not carry exactly.
    #[error(
        "the output holds the integer {value} at {at}, beyond ±{MAX_SAFE_INTEGER} (2^53 - 1), which a JSON number does not carry exactly; return it as a string"
    )]
    UnsafeInteger {
        /// Where, as a JSON pointer into the output.
        at: String,
        /// The integer as returned.
        value: String,
    },
    /// A declared output is missing.
    #[error("output `{key}` is declared by runner `{runner}` but missing from the result")]
    Missing {
        /// The runner.
        runner: String,
        /// The output.
        key: String,
    },
    /// An output has another JSON type than declared.
    #[error("output `{key}` must be {}, but the result holds {}", with_article(expected.name()), with_article(actual))]
    WrongType {
        /// The output.
        key: String,
        /// The declared type.
        expected: ValueType,
        /// The type returned.
        actual: &'static str,
    },
    /// An output breaks its JSON Schema.
    #[error("output `{key}` does not match its schema: {details}")]
    Schema {
        /// The output.
        key: String,
        /// The first violations, with their paths.
        details: String,
    },
    /// Validating an output against its schema could take more than `validation_steps`.
    #[error("output `{key}` {}", too_complex(*steps))]
    TooComplex {
        /// The output.
        key: String,
        /// The bound counted.
        steps: u64,
    },
}

impl OutputError {
    /// The failure code of this error (the kind is always `output_rejected`).
    pub fn code(&self) -> &'static str {
        match self {
            OutputError::NotObject { .. } => "not_object",
            OutputError::UnsafeInteger { .. } => "unsafe_integer",
            OutputError::Missing { .. } => "missing_output",
            OutputError::WrongType { .. } => "wrong_type",
            OutputError::Schema { .. } => "schema",
            OutputError::TooComplex { .. } => "validation_steps",
        }
    }
}

/// Where a paged runner's artifact comes from, read from the call's inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSource {
    /// The path as given; admission resolves and contains it.
    pub path: String,
    /// The directory it is relative to.
    pub scope: PathScope,
}

/// A call's inputs after [`resolve_inputs`]: defaults applied, every declared input checked,
/// and, for a paged runner, where its artifact comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The input object the runner receives.
    pub inputs: Map<String, Value>,
    /// The artifact path and scope of a paged runner.
    pub page_source: Option<PageSource>,
}

/// Applies declared defaults and checks every declared input.
///
/// An input the runner does not declare is refused with the nearest declared name, as runx
/// refuses it: a misspelt flag (`excitd`) must not seal a run that silently ignored it. The one
/// exception is a name a cli-tool's argument template reads (`{{extra}}`): the template is the
/// runner's declaration that it takes that input.
///
/// For a paged javascript runner it also reads the two page inputs (`path_from`, `path_scope_from`) and
/// refuses a caller-supplied `runx_page`.
pub fn resolve_inputs(runner: &Runner, given: Map<String, Value>) -> Result<Resolved, InputError> {
    for (key, value) in &given {
        if let Some((at, value)) = unsafe_integer(value) {
            return Err(InputError::UnsafeInteger {
                key: key.clone(),
                at,
                value,
            });
        }
    }
    let paged = matches!(&runner.kind, RunnerKind::Javascript(js) if js.pages.is_some());
    if paged && given.contains_key(RESERVED_PAGE_INPUT) {
        return Err(InputError::Reserved {
            key: RESERVED_PAGE_INPUT.to_string(),
        });
    }
    if let Some(key) = given.keys().find(|k| !runner.takes_input(k)) {
        return Err(InputError::Undeclared {
            runner: runner.name.clone(),
            key: key.clone(),
            declared: runner.input_names(),
        });
    }
    let inputs = resolve_declared(runner, given)?;
    let page_source = page_source(runner, &inputs)?;
    Ok(Resolved {
        inputs,
        page_source,
    })
}

/// Checks one of a runner's `examples` at load: every key declared, and the object accepted as
/// inputs (required inputs, types, schemas).
pub fn check_example(runner: &Runner, example: &Map<String, Value>) -> Result<(), String> {
    if let Some(key) = example.keys().find(|k| !runner.inputs.contains_key(*k)) {
        return Err(format!("input `{key}` is not declared"));
    }
    resolve_declared(runner, example.clone())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Applies defaults, unwraps artifact envelopes and checks every declared input.
fn resolve_declared(
    runner: &Runner,
    given: Map<String, Value>,
) -> Result<Map<String, Value>, InputError> {
    let mut inputs = given;
    for (key, decl) in &runner.inputs {
        if !inputs.contains_key(key)
            && let Some(default) = &decl.default
        {
            inputs.insert(key.clone(), default.clone());
        }
        if decl.artifact
            && let Some(value) = inputs.get_mut(key)
        {
            *value = unwrap_artifact(key, value)?;
        }
        let Some(value) = inputs.get(key) else {
            if decl.required {
                return Err(InputError::Missing {
                    runner: runner.name.clone(),
                    key: key.clone(),
                });
            }
            continue;
        };
        if !decl.ty.matches(value) {
            let given = match value {
                Value::Number(_) | Value::Bool(_) | Value::Null => {
                    Some(value.to_string()).filter(|t| t.len() <= 40)
                }
                _ => None,
            };
            return Err(InputError::WrongType {
                given,
                key: key.clone(),
                expected: decl.ty,
                actual: ValueType::describe(value),
            });
        }
        if let Some(schema) = &decl.schema {
            schema.check(value).map_err(|e| match e {
                Refusal::TooComplex { steps } => InputError::TooComplex {
                    key: key.clone(),
                    steps,
                },
                Refusal::Mismatch(details) => InputError::Schema {
                    key: key.clone(),
                    details,
                },
            })?;
        }
    }
    Ok(inputs)
}

/// The value an `artifact: true` input stands for: the `data` of an artifact envelope
/// (`{data}`, `{artifact: {data}}` or `{output: {data}}`), else the value itself. An envelope
/// that has `schema` or `meta` but no data is refused rather than passed on as the value.
fn unwrap_artifact(key: &str, value: &Value) -> Result<Value, InputError> {
    let Value::Object(object) = value else {
        return Ok(value.clone());
    };
    if let Some(data) = object.get("data") {
        return Ok(data.clone());
    }
    for envelope in ["artifact", "output"] {
        if let Some(Value::Object(nested)) = object.get(envelope)
            && let Some(data) = nested.get("data")
        {
            return Ok(data.clone());
        }
    }
    if object.contains_key("schema") || object.contains_key("meta") {
        return Err(InputError::EmptyArtifact {
            key: key.to_string(),
        });
    }
    Ok(value.clone())
}

/// Reads the artifact path and scope of a paged runner from resolved inputs: the path input must
/// be a non-empty string; the scope input, when given, is `workspace` or `skill` (default
/// `workspace`). `None` for a runner without `pages`.
fn page_source(
    runner: &Runner,
    inputs: &Map<String, Value>,
) -> Result<Option<PageSource>, InputError> {
    let RunnerKind::Javascript(js) = &runner.kind else {
        return Ok(None);
    };
    let Some(pages) = &js.pages else {
        return Ok(None);
    };
    let path = match inputs.get(&pages.path_from) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) => {
            return Err(InputError::PageInput {
                key: pages.path_from.clone(),
                problem: "is empty; give the path of the JSON array file".to_string(),
            });
        }
        Some(other) => {
            return Err(InputError::PageInput {
                key: pages.path_from.clone(),
                problem: format!(
                    "must be a path string, but {} was given",
                    with_article(ValueType::describe(other))
                ),
            });
        }
        None => {
            return Err(InputError::PageInput {
                key: pages.path_from.clone(),
                problem: "is required: it names the JSON array file to page through".to_string(),
            });
        }
    };
    let scope = match inputs.get(&pages.path_scope_from) {
        None | Some(Value::Null) => PathScope::Workspace,
        Some(Value::String(s)) => PathScope::from_name(s).ok_or_else(|| InputError::PageInput {
            key: pages.path_scope_from.clone(),
            problem: format!("is `{s}`; use `workspace` (the default) or `skill`"),
        })?,
        Some(other) => {
            return Err(InputError::PageInput {
                key: pages.path_scope_from.clone(),
                problem: format!(
                    "must be `workspace` or `skill`, but {} was given",
                    with_article(ValueType::describe(other))
                ),
            });
        }
    };
    Ok(Some(PageSource { path, scope }))
}

/// Checks a runner's result: an object holding every declared output with its declared type and
/// schema. Extra keys are allowed (a paged runner's `runx_page`, diagnostic fields).
pub fn check_outputs(runner: &Runner, output: &Value) -> Result<(), OutputError> {
    let Value::Object(map) = output else {
        return Err(OutputError::NotObject {
            actual: ValueType::describe(output),
        });
    };
    // A cli-tool writes JSON text, whose digits may hold an integer no double holds: refused.
    // A javascript result is made of doubles already, so its text names each one exactly.
    if matches!(runner.kind, RunnerKind::CliTool(_))
        && let Some((at, value)) = unsafe_integer(output)
    {
        return Err(OutputError::UnsafeInteger { at, value });
    }
    for (key, decl) in &runner.outputs {
        let Some(value) = map.get(key) else {
            if !decl.required {
                continue;
            }
            return Err(OutputError::Missing {
                runner: runner.name.clone(),
                key: key.clone(),
            });
        };
        if !decl.ty.matches(value) {
            return Err(OutputError::WrongType {
                key: key.clone(),
                expected: decl.ty,
                actual: ValueType::describe(value),
            });
        }
        if let Some(schema) = &decl.schema {
            schema.check(value).map_err(|e| match e {
                Refusal::TooComplex { steps } => OutputError::TooComplex {
                    key: key.clone(),
                    steps,
                },
                Refusal::Mismatch(details) => OutputError::Schema {
                    key: key.clone(),
                    details,
                },
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;
    use crate::parse::parse;
    use serde_json::json;
    use std::path::Path;

    fn profile(text: &str) -> Profile {
        match parse(text, Path::new("/pkg"), Path::new("/pkg/X.yaml")) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    const INPUTS: &str = r#"
skill: s
run:
  type: javascript
  module: a.mjs
  inputs:
    name: { type: string, required: true }
    greeting: { type: string, default: "hello" }
    count: { type: integer, schema: { minimum: 1, maximum: 10 } }
    ratio: number
    tags: { type: array, schema: { items: { type: string } } }
    flag: boolean
    nothing: "null"
    blob: any
    opts: object
"#;

    fn resolve(given: Value) -> Result<Map<String, Value>, InputError> {
        let p = profile(INPUTS);
        let runner = p.runner(None).expect("runner");
        resolve_inputs(runner, obj(given)).map(|r| r.inputs)
    }

    #[test]
    fn defaults_applied_and_undeclared_inputs_refused() {
        let got = resolve(json!({"name": "Ada"})).expect("valid");
        assert_eq!(
            Value::Object(got),
            json!({"name": "Ada", "greeting": "hello"})
        );
        let e = resolve(json!({"name": "Ada", "greting": "hi"})).expect_err("undeclared");
        assert_eq!(e.code(), "undeclared_input");
        assert_eq!(
            e.to_string(),
            "input `greting` is not declared by runner `default`, which takes `blob`, `count`, \
             `flag`, `greeting`, `name`, `nothing`, `opts`, `ratio`, `tags`; did you mean `greeting`?"
        );
        let e = resolve(json!({"name": "Ada", "zzz": 1})).expect_err("undeclared");
        assert!(!e.to_string().contains("did you mean"), "{e}");
        let got = resolve(json!({"name": "Ada", "greeting": "hi"})).expect("valid");
        assert_eq!(
            got["greeting"],
            json!("hi"),
            "given values win over defaults"
        );
    }

    #[test]
    fn every_type_accepted() {
        let got = resolve(json!({
            "name": "a", "count": 3.0, "ratio": 0.5, "tags": ["x"], "flag": false,
            "nothing": null, "blob": {"k": [1]}, "opts": {}
        }));
        assert!(got.is_ok(), "{got:?}");
    }

    #[test]
    fn json_and_untyped_inputs() {
        let p = profile(
            "skill: s\nrun:\n  type: javascript\n  module: a.mjs\n  inputs:\n    j: json\n    plain: { description: no type }\n",
        );
        let r = p.runner(None).expect("runner");
        for v in [
            json!(null),
            json!(1),
            json!("s"),
            json!([1]),
            json!({"a": {}}),
        ] {
            assert!(
                resolve_inputs(r, obj(json!({"j": v.clone()}))).is_ok(),
                "{v}"
            );
        }
        // No type means string: a number is refused rather than passed on.
        let e = resolve_inputs(r, obj(json!({"plain": 42}))).expect_err("string");
        assert_eq!(
            e.to_string(),
            "input `plain` must be a string, but an integer was given; to give the text 42, \
             quote it: `-i 'plain=\"42\"'` on the command line, `\"42\"` in JSON"
        );
    }

    #[test]
    fn artifact_inputs_are_unwrapped() {
        let p = profile(
            "skill: s\nrun:\n  type: javascript\n  module: a.mjs\n  inputs:\n    doc: { type: object, artifact: true, schema: { required: [id] } }\n    raw: { type: object }\n",
        );
        let r = p.runner(None).expect("runner");
        let unwrap =
            |v: Value| resolve_inputs(r, obj(json!({"doc": v}))).map(|r| r.inputs["doc"].clone());
        let want = json!({"id": 1});
        for envelope in [
            json!({"data": {"id": 1}, "schema": "x.v1"}),
            json!({"artifact": {"data": {"id": 1}}}),
            json!({"output": {"data": {"id": 1}, "meta": {}}}),
            json!({"id": 1}),
        ] {
            assert_eq!(
                unwrap(envelope.clone()).expect("unwraps"),
                want,
                "{envelope}"
            );
        }
        let e = unwrap(json!({"schema": "x.v1", "meta": {}})).expect_err("no data");
        assert_eq!(e.code(), "artifact_input");
        // The unwrapped value is what the schema checks.
        let e = unwrap(json!({"data": {"name": "x"}})).expect_err("schema");
        assert!(matches!(e, InputError::Schema { .. }), "{e}");
        // Without `artifact: true` an envelope is the value itself.
        let got = resolve_inputs(r, obj(json!({"raw": {"data": 1}}))).expect("valid");
        assert_eq!(got.inputs["raw"], json!({"data": 1}));
    }

    #[test]
    fn missing_required_names_key() {
        let e = resolve(json!({"greeting": "x"})).expect_err("missing");
        assert!(matches!(&e, InputError::Missing { key, .. } if key == "name"));
        assert_eq!(
            e.to_string(),
            "input `name` is required by runner `default` but was not given"
        );
    }

    #[test]
    fn wrong_types_name_key_expected_and_actual() {
        let cases = [
            (json!({"name": 5}), "name", "string", "integer"),
            (
                json!({"name": "a", "count": 2.5}),
                "count",
                "integer",
                "number",
            ),
            (
                json!({"name": "a", "ratio": "1"}),
                "ratio",
                "number",
                "string",
            ),
            (
                json!({"name": "a", "flag": "yes"}),
                "flag",
                "boolean",
                "string",
            ),
            (
                json!({"name": "a", "nothing": 0}),
                "nothing",
                "null",
                "integer",
            ),
            (json!({"name": "a", "opts": []}), "opts", "object", "array"),
            (json!({"name": "a", "tags": {}}), "tags", "array", "object"),
        ];
        for (given, key, expected, actual) in cases {
            let e = resolve(given).expect_err("wrong type");
            assert!(
                e.to_string().starts_with(&format!(
                    "input `{key}` must be {}, but {} was given",
                    with_article(expected),
                    with_article(actual)
                )),
                "{e}"
            );
            // The quoting hint is for a string input given a scalar only.
            assert_eq!(
                e.to_string().contains("quote it"),
                expected == "string",
                "{e}"
            );
        }
    }

    #[test]
    fn schema_checked() {
        let e = resolve(json!({"name": "a", "count": 11})).expect_err("schema");
        let msg = e.to_string();
        assert!(
            matches!(&e, InputError::Schema { key, .. } if key == "count"),
            "{msg}"
        );
        assert!(msg.contains("at the value"), "{msg}");
        let e = resolve(json!({"name": "a", "tags": ["ok", 3]})).expect_err("schema");
        assert!(e.to_string().contains("at /1"), "{e}");
        assert!(resolve(json!({"name": "a", "count": 10, "tags": ["ok"]})).is_ok());
    }

    #[test]
    fn many_schema_errors_are_summarised() {
        let p = profile(
            "skill: s\nrun:\n  type: javascript\n  module: a.mjs\n  inputs:\n    xs: { type: array, schema: { items: { type: string } } }\n",
        );
        let r = p.runner(None).expect("runner");
        let e = resolve_inputs(r, obj(json!({"xs": [1, 2, 3, 4, 5, 6, 7]}))).expect_err("schema");
        assert!(e.to_string().ends_with("; and 2 more"), "{e}");
    }

    #[test]
    fn page_inputs_checked() {
        let p = profile(
            "skill: s\nrun:\n  type: javascript\n  module: a.mjs\n  pages: { path_from: archive_file, path_scope_from: archive_base }\n",
        );
        let r = p.runner(None).expect("runner");
        let ok = resolve_inputs(r, obj(json!({"archive_file": "a.json"}))).expect("valid");
        assert_eq!(
            ok.page_source,
            Some(PageSource {
                path: "a.json".into(),
                scope: PathScope::Workspace
            })
        );
        let ok = resolve_inputs(
            r,
            obj(json!({"archive_file": "a.json", "archive_base": "skill"})),
        )
        .expect("valid");
        assert_eq!(ok.page_source.map(|s| s.scope), Some(PathScope::Skill));

        let e = resolve_inputs(r, obj(json!({}))).expect_err("no path");
        assert!(
            e.to_string()
                .starts_with("page input `archive_file` is required"),
            "{e}"
        );
        let e = resolve_inputs(r, obj(json!({"archive_file": 3}))).expect_err("bad path");
        assert!(e.to_string().contains("must be a path string"), "{e}");
        let e = resolve_inputs(r, obj(json!({"archive_file": ""}))).expect_err("empty path");
        assert!(e.to_string().contains("is empty"), "{e}");
        let e = resolve_inputs(r, obj(json!({"archive_file": "a", "archive_base": "home"})))
            .expect_err("scope");
        assert!(e.to_string().contains("`archive_base` is `home`"), "{e}");
        let e = resolve_inputs(r, obj(json!({"archive_file": "a", "runx_page": {}})))
            .expect_err("reserved");
        assert!(matches!(e, InputError::Reserved { .. }));

        let plain = profile(INPUTS);
        let plain = plain.runner(None).expect("runner");
        assert_eq!(page_source(plain, &Map::new()).expect("none"), None);
    }

    const OUTPUTS: &str = r#"
skill: s
run:
  type: javascript
  module: a.mjs
  outputs:
    greeting: string
    n: integer
    stats: { type: object, schema: { type: object, required: [total], properties: { total: { type: integer } } } }
"#;

    fn check(output: Value) -> Result<(), OutputError> {
        let p = profile(OUTPUTS);
        check_outputs(p.runner(None).expect("runner"), &output)
    }

    #[test]
    fn outputs_accepted_with_extra_keys() {
        assert!(
            check(json!({"greeting": "hi", "n": 2, "stats": {"total": 1}, "extra": true})).is_ok()
        );
    }

    #[test]
    fn output_errors_name_key() {
        let e = check(json!(["not", "object"])).expect_err("array");
        assert_eq!(
            e.to_string(),
            "the output must be a JSON object of named outputs, but it is an array"
        );
        let e = check(json!({"n": 2, "stats": {"total": 1}})).expect_err("missing");
        assert!(
            matches!(&e, OutputError::Missing { key, .. } if key == "greeting"),
            "{e}"
        );
        let e =
            check(json!({"greeting": "hi", "n": 2.5, "stats": {"total": 1}})).expect_err("type");
        assert_eq!(
            e.to_string(),
            "output `n` must be an integer, but the result holds a number"
        );
        let e =
            check(json!({"greeting": "hi", "n": 2, "stats": {"count": 1}})).expect_err("schema");
        assert!(
            matches!(&e, OutputError::Schema { key, .. } if key == "stats"),
            "{e}"
        );
        assert!(e.to_string().contains("total"), "{e}");
    }

    #[test]
    fn integers_a_json_number_cannot_carry_are_refused_in_inputs_and_outputs() {
        let given: Value =
            serde_json::from_str(r#"{"name": "Ada", "blob": {"ids": [1, 9007199254740993]}}"#)
                .expect("json");
        let e = resolve(given).expect_err("refused");
        assert_eq!(e.code(), "unsafe_integer");
        let text = e.to_string();
        assert!(text.contains("input `blob`"), "{text}");
        assert!(text.contains("9007199254740993 at /ids/1"), "{text}");
        assert!(text.contains("pass it as a string"), "{text}");
        // The largest safe integer and the same number as a string pass.
        assert!(resolve(json!({"name": "Ada", "blob": 9007199254740991u64})).is_ok());
        assert!(resolve(json!({"name": "Ada", "blob": "9007199254740993"})).is_ok());
        // A cli-tool's output text may name an integer no double holds; a javascript result
        // is doubles already (2^60 is one of them) and passes.
        let out: Value = serde_json::from_str(
            r#"{"greeting": "hi", "n": 2, "stats": {"total": -9007199254740992}}"#,
        )
        .expect("json");
        let tool = profile(&OUTPUTS.replace(
            "type: javascript\n  module: a.mjs",
            "type: cli-tool\n  command: echo",
        ));
        let e = check_outputs(tool.runner(None).expect("runner"), &out).expect_err("refused");
        assert_eq!(e.code(), "unsafe_integer");
        assert!(e.to_string().contains("at /stats/total"), "{e}");
        assert!(check(out).is_ok());
    }
}
