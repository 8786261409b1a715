//! A tool's `inputSchema` and `outputSchema`, made from its runner's declarations.
//!
//! The schema says what the runtime's own checks accept (`runx_profile::resolve_inputs` and
//! `check_outputs`), so an agent that follows it is not refused: every declared input with its
//! type, description, default and schema (a packet input's packet schema; an
//! `input_definitions` reference as the definition it names); what is required (declared
//! `required: true` without a default, and the names a paged runner or a cli-tool's argument
//! templates read without declaring them); no other property. The runtime stays the one judge:
//! a call is checked by the run itself, so a call the schema would refuse fails with the
//! runtime's message, naming the input, and leaves a receipt.

use runx_profile::{InputDecl, OutputDecl, RESERVED_PAGE_INPUT, Runner, RunnerKind, ValueType};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The envelopes an `artifact: true` input may come in; `data` is what the runner sees.
const ARTIFACT_ENVELOPES: [&str; 2] = ["artifact", "output"];

/// The `inputSchema` of `runner`: a JSON Schema object with `additionalProperties: false`.
pub fn input_schema(runner: &Runner) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let pages = match &runner.kind {
        RunnerKind::Javascript(js) => js.pages.as_ref(),
        RunnerKind::CliTool(_) => None,
    };
    for name in runner.input_names() {
        if name == RESERVED_PAGE_INPUT {
            continue;
        }
        let is_path = pages.is_some_and(|p| p.path_from == name);
        let is_scope = pages.is_some_and(|p| p.path_scope_from == name);
        let mut property = match runner.inputs.get(&name) {
            Some(decl) => {
                if decl.required && decl.default.is_none() {
                    required.push(Value::String(name.clone()));
                }
                declared_input(decl)
            }
            None if is_scope => Map::new(),
            None => {
                // A path a paged runner reads, or a name an argument template reads: the run
                // fails without it.
                required.push(Value::String(name.clone()));
                let what = if is_path {
                    "the JSON array file this runner pages through"
                } else {
                    "read by an argument template of the command"
                };
                let mut p = Map::new();
                p.insert("description".into(), Value::String(what.into()));
                p
            }
        };
        if is_path && !property.contains_key("type") {
            property.insert("type".into(), json!("string"));
        }
        if is_path {
            property.insert("minLength".into(), json!(1));
        }
        if is_scope {
            property.insert("enum".into(), json!(["workspace", "skill"]));
            property
                .entry("description")
                .or_insert_with(|| json!("where the page file's path is resolved: the server's working directory (`workspace`, the default) or the package (`skill`)"));
        }
        properties.insert(name, Value::Object(property));
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), Value::Bool(false));
    schema
}

/// The `outputSchema` of `runner`, for runx's result shape (`result.rs`): an object whose
/// `output`, when the run completed, holds the declared outputs (other members are allowed, as
/// the runtime allows them), beside runx's `runx` object.
pub fn output_schema(runner: &Runner) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, decl) in &runner.outputs {
        if decl.required {
            required.push(Value::String(name.clone()));
        }
        properties.insert(name.clone(), Value::Object(declared_output(decl)));
    }
    let mut output = Map::new();
    output.insert("type".into(), json!("object"));
    output.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        output.insert("required".into(), Value::Array(required));
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert(
        "properties".into(),
        json!({
            "output": Value::Object(output),
            "runx": {
                "type": "object",
                "properties": {
                    "status": {"type": "string"},
                    "skillName": {"type": "string"},
                    "runId": {"type": "string"},
                    "receiptId": {"type": "string"},
                    "events": {"type": "array"},
                },
                "required": ["status", "skillName", "runId", "events"],
            },
        }),
    );
    schema.insert("required".into(), json!(["runx"]));
    schema
}

fn declared_input(decl: &InputDecl) -> Map<String, Value> {
    let value = typed(
        decl.ty,
        decl.schema.as_ref().map(runx_profile::Schema::value),
    );
    let mut property = if decl.artifact {
        // The value itself, or an envelope whose `data` is the value (`unwrap_artifact`).
        let inner = Value::Object(value.clone());
        let mut any_of = vec![inner.clone(), envelope("data", inner.clone())];
        for name in ARTIFACT_ENVELOPES {
            any_of.push(envelope(name, envelope("data", inner.clone())));
        }
        let mut p = Map::new();
        p.insert("anyOf".into(), Value::Array(any_of));
        p
    } else {
        value
    };
    if let Some(text) = &decl.description {
        property.insert("description".into(), Value::String(text.clone()));
    }
    if let Some(default) = &decl.default {
        property.insert("default".into(), default.clone());
    }
    if let Some(packet) = &decl.packet {
        property.insert("x-runx-packet".into(), Value::String(packet.id.clone()));
    }
    property
}

fn declared_output(decl: &OutputDecl) -> Map<String, Value> {
    let mut property = typed(
        decl.ty,
        decl.schema.as_ref().map(runx_profile::Schema::value),
    );
    if let Some(text) = &decl.description {
        property.insert("description".into(), Value::String(text.clone()));
    }
    property
}

/// An object whose member `name` is required and matches `inner`.
fn envelope(name: &str, inner: Value) -> Value {
    json!({"type": "object", "properties": {name: inner}, "required": [name]})
}

/// The schema of a value of type `ty` that also matches `schema` when there is one.
fn typed(ty: ValueType, schema: Option<&Value>) -> Map<String, Value> {
    let mut out = Map::new();
    if !ty.is_any() {
        out.insert("type".into(), Value::String(ty.name().to_string()));
    }
    if let Some(schema) = schema {
        out.insert("allOf".into(), Value::Array(vec![embedded(schema)]));
    }
    out
}

/// A declared schema placed inside the tool's schema. Its `#` references and its `$schema`
/// were written for a document of their own: without an `$id` they would resolve against the
/// tool's schema, so such a schema gets one, made from its own bytes (the same on every start).
fn embedded(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if map.contains_key("$id") || !(map.contains_key("$schema") || has_local_ref(schema)) {
        return schema.clone();
    }
    let digest = Sha256::digest(schema.to_string().as_bytes());
    let mut map = map.clone();
    map.insert(
        "$id".into(),
        Value::String(format!("urn:runx:schema:{}", &hex::encode(digest)[..16])),
    );
    Value::Object(map)
}

fn has_local_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| {
            (k == "$ref" && v.as_str().is_some_and(|r| r.starts_with('#'))) || has_local_ref(v)
        }),
        Value::Array(items) => items.iter().any(has_local_ref),
        _ => false,
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
