//! The bound on validation work: linear schemas stay small, doubling schemas are caught early,
//! and counting stays fast.

use std::time::Instant;

use serde_json::{Value, json};

use super::{Refusal, Schema};

fn nested(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |v, _| Value::Array(vec![v]))
}

fn steps(schema: Value, instance: &Value) -> u64 {
    Schema::compile(schema)
        .expect("compiles")
        .steps(instance, u64::MAX)
}

fn doubling() -> Value {
    json!({"$defs": {"n": {"anyOf": [
        {"type": "array", "items": {"$ref": "#/$defs/n"}},
        {"type": "array", "items": {"$ref": "#/$defs/n"}},
        {"type": "string"}
    ]}}, "$ref": "#/$defs/n"})
}

#[test]
fn linear_schemas_stay_small() {
    let schema = json!({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}});
    let instance = Value::Array((0..1000).map(|i| json!({"a": i})).collect());
    let n = steps(schema, &instance);
    assert!(n <= 3 * 1000 + 10, "{n}");
    let tree = json!({"$defs": {"t": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}}, "$ref": "#/$defs/t"});
    let deep = (0..50).fold(json!({}), |v, _| json!({"kids": [v]}));
    assert!(steps(tree, &deep) < 500);
}

#[test]
fn recursive_any_of_doubling_is_caught_at_a_small_depth() {
    let schema = Schema::compile(doubling()).expect("compiles");
    let shallow = schema.steps(&nested(10, json!(1)), u64::MAX);
    let deeper = schema.steps(&nested(11, json!(1)), u64::MAX);
    assert!(deeper >= 2 * shallow - 10, "{shallow} {deeper}");
    let started = Instant::now();
    match schema.check(&nested(24, json!(1))) {
        Err(Refusal::TooComplex { steps }) => assert!(steps > 1_000_000),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed().as_secs() < 2);
    // A shallow value is still validated.
    assert!(matches!(
        schema.check(&nested(3, json!(1))),
        Err(Refusal::Mismatch(_))
    ));
}

#[test]
fn all_of_with_two_recursive_refs_doubles() {
    let schema = json!({"$defs": {"n": {"type": "array", "allOf": [
        {"items": {"$ref": "#/$defs/n"}}, {"items": {"$ref": "#/$defs/n"}}
    ]}}, "$ref": "#/$defs/n"});
    let n = steps(schema, &nested(30, json!([])));
    assert!(n > 1 << 30, "{n}");
}

#[test]
fn ref_cycles_through_properties_are_linear() {
    let schema = json!({"type": "object", "properties": {
        "a": {"$ref": "#"}, "b": {"$ref": "#/properties/a"}
    }});
    let deep = (0..100).fold(json!({}), |v, _| json!({"a": v.clone(), "b": 1}));
    let n = steps(schema, &deep);
    assert!(n < 2000, "{n}");
}

#[test]
fn cycles_on_one_instance_and_unfollowable_refs_are_refused_at_compile() {
    for schema in [
        json!({"$ref": "#"}),
        json!({"allOf": [{"$ref": "#/$defs/a"}], "$defs": {"a": {"anyOf": [{"$ref": "#"}]}}}),
    ] {
        let e = Schema::compile(schema.clone()).expect_err("cycle");
        assert!(e.contains("cycle"), "{schema}: {e}");
    }
    let meta = json!({"$ref": "https://json-schema.org/draft/2020-12/schema"});
    assert!(steps(meta, &json!({"type": "string"})) >= 1024);
}

#[test]
fn unknown_keywords_count_the_instance_and_its_children() {
    let schema = json!({"x-applies": {"anyOf": [{"type": "string"}]}});
    let n = steps(schema, &json!([1, 2, 3]));
    assert!(n >= 9, "{n}");
}

#[test]
fn memoization_keeps_the_count_fast_on_a_large_instance() {
    let schema = doubling();
    let instance = Value::Array((0..100_000).map(|i| json!([[i.to_string()]])).collect());
    let started = Instant::now();
    let n = steps(schema, &instance);
    assert!(n > 100_000, "{n}");
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
}
