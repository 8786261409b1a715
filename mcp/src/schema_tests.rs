//! The schemas of the fixture packages, and their agreement with the runtime's own checks.

use super::*;
use runx_profile::{Profile, resolve_inputs};
use std::path::Path;

fn profile(name: &str) -> Profile {
    runx_profile::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../skill-fixtures")
            .join(name),
    )
    .expect("fixture loads")
}

fn input(name: &str, runner: &str) -> Value {
    Value::Object(input_schema(
        profile(name).runner(Some(runner)).expect("runner"),
    ))
}

#[test]
fn declared_inputs_types_required_defaults_descriptions() {
    let s = input("hello", "greet");
    assert_eq!(
        s,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "who to greet"},
                "excited": {"type": "boolean", "default": false},
            },
            "required": ["name"],
            "additionalProperties": false,
        })
    );
    let p = profile("hello");
    let out = output_schema(p.runner(Some("shout")).expect("shout"));
    assert_eq!(out["required"], json!(["runx"]));
    assert_eq!(
        out["properties"]["output"],
        json!({
            "type": "object",
            "properties": {"greeting": {"type": "string", "allOf": [{"pattern": "^[A-Z ,!]+$"}]}},
            "required": ["greeting"],
        })
    );
}

#[test]
fn pages_templates_definitions_packets_and_artifacts() {
    let s = input("archive", "select");
    assert_eq!(s["properties"]["archive_file"]["minLength"], json!(1));
    assert_eq!(
        s["properties"]["archive_base"]["enum"],
        json!(["workspace", "skill"])
    );
    assert_eq!(s["required"], json!(["archive_file"]));
    assert!(s["properties"].get("runx_page").is_none());

    let s = input("templates", "undeclared");
    assert_eq!(s["required"], json!(["extra"]));

    let s = input("ledger-defs", "post");
    assert_eq!(
        s["properties"]["from"]["allOf"][0]["pattern"],
        json!("^[a-z]+/[a-z0-9-]+$")
    );
    assert_eq!(
        s["properties"]["from"]["description"],
        json!("Ledger account as book/name.")
    );
    assert_eq!(s["required"], json!(["cents", "from", "to"]));

    let s = input("packet-triage", "triage");
    let ticket = &s["properties"]["ticket"];
    assert_eq!(ticket["x-runx-packet"], json!("corpus.ticket.v1"));
    assert_eq!(
        ticket["allOf"][0]["$id"],
        json!("https://example.invalid/corpus/ticket/v1.json")
    );

    let s = input("artifact-inputs", "summarize");
    assert_eq!(
        s["properties"]["report"]["anyOf"].as_array().map(Vec::len),
        Some(4)
    );
}

#[test]
fn local_references_get_an_id_of_their_own() {
    let with_ref = json!({"$defs": {"x": {"type": "string"}}, "$ref": "#/$defs/x"});
    let e = embedded(&with_ref);
    assert!(
        e["$id"]
            .as_str()
            .is_some_and(|id| id.starts_with("urn:runx:schema:"))
    );
    assert_eq!(embedded(&with_ref), e, "the same on every start");
    assert_eq!(embedded(&json!({"minimum": 1})), json!({"minimum": 1}));
    // Inside a tool's schema the reference still resolves.
    let tool = json!({"type": "object", "properties": {"a": {"allOf": [e]}}});
    let v = jsonschema::validator_for(&tool).expect("compiles");
    assert!(v.is_valid(&json!({"a": "s"})));
    assert!(!v.is_valid(&json!({"a": 1})));
}

/// Whatever the schema accepts, the runtime accepts, and the other way round: an agent that
/// follows the schema is not refused, and the runtime is not stricter than it says.
#[test]
fn the_schema_and_the_runtime_agree() {
    let cases: &[(&str, &str, &[Value])] = &[
        (
            "hello",
            "greet",
            &[
                json!({"name": "Ada"}),
                json!({}),
                json!({"name": 1}),
                json!({"name": "A", "excited": true}),
                json!({"name": "A", "excited": "yes"}),
                json!({"name": "A", "other": 1}),
            ],
        ),
        (
            "imports",
            "default",
            &[json!({}), json!({"values": [1, 2]}), json!({"values": "x"})],
        ),
        (
            "archive",
            "select",
            &[
                json!({"archive_file": "data/tweets.js"}),
                json!({}),
                json!({"archive_file": ""}),
                json!({"archive_file": "a", "archive_base": "skill"}),
                json!({"archive_file": "a", "archive_base": "elsewhere"}),
                json!({"archive_file": "a", "stop_after": 2.5}),
                json!({"archive_file": "a", "runx_page": {}}),
            ],
        ),
        (
            "ledger-defs",
            "post",
            &[
                json!({"from": "ops/cash", "to": "ops/rent", "cents": 5}),
                json!({"from": "ops/cash", "to": "ops/rent", "cents": 0}),
                json!({"from": "Ops", "to": "ops/rent", "cents": 5}),
            ],
        ),
        (
            "packet-triage",
            "triage",
            &[
                json!({"ticket": {"id": "T-1", "subject": "s", "channel": "chat"}}),
                json!({"ticket": {"id": "X-1", "subject": "s", "channel": "chat"}}),
                json!({"ticket": {"id": "T-1", "subject": "s", "channel": "fax"}}),
            ],
        ),
        (
            "artifact-inputs",
            "summarize",
            &[
                json!({"report": {"rows": [1]}}),
                json!({"report": {"data": {"rows": [1]}}}),
                json!({"report": {"artifact": {"data": {"rows": [2]}}}}),
                json!({"report": {"rows": ["x"]}}),
                json!({"report": {"data": {"rows": "x"}}}),
            ],
        ),
        (
            "tool",
            "stdin-json",
            &[json!({"message": "hi"}), json!({}), json!({"message": 3})],
        ),
        (
            "templates",
            "undeclared",
            &[json!({"extra": "x"}), json!({"extra": "x", "more": 1})],
        ),
    ];
    for (package, runner, calls) in cases {
        let p = profile(package);
        let r = p.runner(Some(runner)).expect("runner");
        let schema = Value::Object(input_schema(r));
        let v = jsonschema::validator_for(&schema).expect("the input schema compiles");
        for call in *calls {
            let by_schema = v.is_valid(call);
            let by_runtime =
                resolve_inputs(r, call.as_object().cloned().unwrap_or_default()).is_ok();
            assert_eq!(
                by_schema, by_runtime,
                "{package}.{runner} with {call}: schema {by_schema}, runtime {by_runtime}"
            );
        }
    }
}

#[test]
fn every_fixture_schema_compiles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../skill-fixtures");
    for entry in std::fs::read_dir(&root).expect("fixtures") {
        let dir = entry.expect("entry").path();
        let Ok(p) = runx_profile::load(&dir) else {
            continue;
        };
        for r in p.runners.values() {
            jsonschema::validator_for(&Value::Object(input_schema(r))).expect("input schema");
            jsonschema::validator_for(&Value::Object(output_schema(r))).expect("output schema");
        }
    }
}
