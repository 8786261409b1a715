//! A case's `expect.receipt` against the receipt its run wrote, in runx's vocabulary.
//!
//! runx's fixtures assert on a view of the receipt, not on its fields as written: `schema`,
//! `receipt_id` (the id), `body_digest` (the digest of the body), `receipt_digest` (of the whole
//! receipt), `harness_id` (the subject's uri), `state` (`deferred` for a deferred seal, else
//! `sealed`), `disposition` and `reason_code` (the seal's), `act_ids`, `decision_ids`,
//! `child_receipt_refs`, `child_receipt_count` and `verification_refs`. The lists are compared
//! in order and only when the expected list is not empty, as runx compares them. Any other key
//! is looked up in this runtime's evidence (`status`, `skill`, `failure`, ...), as fixtures
//! written for this runtime assert. Keys runx retired are refused, naming the key.

use crate::compare::{Mismatch, match_subset};
use runx_receipts::runx::{Trust, full_digest, verdict};
use serde_json::{Map, Value, json};

/// Keys of runx's fixtures that runx itself no longer accepts.
pub const RETIRED_RECEIPT_KEYS: &[&str] = &[
    "kind",
    "skill_name",
    "source_type",
    "graph_name",
    "owner",
    "skill_execution",
    "graph_execution",
];

/// Keys whose value is a list compared only when the expected list is not empty.
const LIST_KEYS: &[&str] = &[
    "act_ids",
    "decision_ids",
    "child_receipt_refs",
    "verification_refs",
];

fn ids(receipt: &Value, list: &str, key: &str) -> Vec<Value> {
    receipt[list]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| item[key].clone())
        .collect()
}

/// The view of `receipt` runx's fixtures assert on, over this runtime's evidence.
pub fn view(receipt: &Value) -> Value {
    let mut out: Map<String, Value> = receipt["metadata"]["evidence"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let seal = &receipt["seal"];
    let children = ids(&receipt["lineage"], "children", "uri");
    let verification_refs: Vec<Value> = receipt["acts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| {
            a["criterion_bindings"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|b| ids(&b, "verification_refs", "uri"))
        .collect();
    let state = if seal["disposition"] == "deferred" {
        "deferred"
    } else {
        "sealed"
    };
    for (key, value) in [
        ("schema", receipt["schema"].clone()),
        ("receipt_id", receipt["id"].clone()),
        ("body_digest", receipt["digest"].clone()),
        ("receipt_digest", json!(full_digest(receipt))),
        ("harness_id", receipt["subject"]["ref"]["uri"].clone()),
        ("state", json!(state)),
        ("disposition", seal["disposition"].clone()),
        ("reason_code", seal["reason_code"].clone()),
        ("act_ids", Value::Array(ids(receipt, "acts", "id"))),
        (
            "decision_ids",
            Value::Array(ids(receipt, "decisions", "decision_id")),
        ),
        ("child_receipt_count", json!(children.len())),
        ("child_receipt_refs", Value::Array(children)),
        ("verification_refs", Value::Array(verification_refs)),
    ] {
        out.insert(key.to_string(), value);
    }
    Value::Object(out)
}

/// The first difference between `expected` and the receipt written at `receipt`, after checking
/// that the receipt is whole: its digest, content address and evidence recomputed.
pub fn check(expected: &Map<String, Value>, receipt: &Value) -> Option<Mismatch> {
    let mismatch = |path: String, want: Value, got: Value, message: String| {
        Some(Mismatch {
            path,
            expected: want,
            actual: got,
            message,
        })
    };
    // Integrity only: the signature is the verifier's business (`runx receipt verify`).
    let v = verdict(receipt, &Trust::LocalDevelopment);
    let whole = [&v.digest, &v.content_address, &v.evidence]
        .iter()
        .all(|r| r.status != "invalid")
        && !v.findings.iter().any(|f| f.code == "receipt_parse_error");
    if !whole {
        let why = v
            .first_problem()
            .map_or_else(|| "it does not verify".to_string(), |(_, m)| m);
        return mismatch(
            "$.receipt".to_string(),
            Value::Object(expected.clone()),
            Value::Null,
            format!("the receipt the run wrote is not whole: {why}"),
        );
    }
    if let Some(key) = expected
        .keys()
        .find(|k| RETIRED_RECEIPT_KEYS.contains(&k.as_str()))
    {
        return mismatch(
            format!("$.receipt.{key}"),
            expected[key].clone(),
            Value::Null,
            format!("`{key}` is a receipt expectation runx retired; remove it"),
        );
    }
    let actual = view(receipt);
    let mut rest = expected.clone();
    for key in LIST_KEYS {
        let Some(want) = rest.remove(*key) else {
            continue;
        };
        if want.as_array().is_some_and(Vec::is_empty) || want == actual[*key] {
            continue;
        }
        return mismatch(
            format!("$.receipt.{key}"),
            want,
            actual[*key].clone(),
            format!("the receipt's {key} differ"),
        );
    }
    match_subset(&Value::Object(rest), &actual, "$.receipt")
}
