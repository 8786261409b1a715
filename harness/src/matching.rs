//! Comparing a run's outcome with what its case expects; the first difference, with its JSON
//! path.

use crate::fixture::{Case, ErrorExpect, Expect, ExpectStatus};
use runx_runtime::RunOutcome;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

/// The first difference between what a case expected and what it got.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mismatch {
    /// JSON path of the difference, like `$.output.items[2].name` or `$.error.kind`.
    pub path: String,
    /// The expected value (`null` when the expectation is that nothing is there).
    pub expected: Value,
    /// The actual value (`null` when nothing is there).
    pub actual: Value,
    /// A one-line explanation.
    pub message: String,
}

/// Receipt fields of runx's signed graph receipts that this runtime's receipts do not have. An
/// expectation naming one is a failure that says so, never silently passed.
pub const RECEIPT_KEYS_NOT_PRODUCED: &[&str] = &[
    "body_digest",
    "receipt_id",
    "receipt_digest",
    "harness_id",
    "act_ids",
    "decision_ids",
    "child_receipt_refs",
    "child_receipt_count",
    "verification_refs",
    "kind",
    "skill_name",
    "source_type",
    "graph_name",
    "owner",
    "skill_execution",
    "graph_execution",
];

/// Compares an outcome with a whole case: its expectation ([`check`]), then what the caller
/// would supply that a javascript or cli-tool run can never consume.
pub fn check_case(case: &Case, outcome: &RunOutcome) -> Option<Mismatch> {
    check(&case.expect, outcome).or_else(|| {
        if case.caller.answers.is_empty() {
            return None;
        }
        let ids: Vec<Value> = case
            .caller
            .answers
            .keys()
            .map(|k| Value::from(k.as_str()))
            .collect();
        Some(Mismatch {
            path: "$.caller.answers".to_string(),
            expected: Value::Array(ids),
            actual: Value::Array(Vec::new()),
            message: "these agent answers were never consumed: a javascript or cli-tool runner asks no agent".to_string(),
        })
    })
}

/// Compares an outcome with a case's expectation; the first difference, if any, in the
/// order status, output, error, receipt, graph steps.
pub fn check(expect: &Expect, outcome: &RunOutcome) -> Option<Mismatch> {
    check_status(expect.status(), outcome)
        .or_else(|| {
            let out = expect.output.as_ref()?;
            let actual = outcome.output().cloned().unwrap_or(Value::Null);
            let exact = out.exact.as_ref();
            exact
                .and_then(|v| match_exact(v, &actual, "$.output"))
                .or_else(|| {
                    let subset = out.subset.as_ref()?;
                    match_subset(subset, &actual, "$.output")
                })
        })
        .or_else(|| check_error(expect.error.as_ref()?, outcome))
        .or_else(|| check_receipt(expect.receipt.as_ref()?, outcome))
        .or_else(|| check_graph(expect))
}

/// The status the case expects against the status the run ended with.
fn check_status(want: ExpectStatus, outcome: &RunOutcome) -> Option<Mismatch> {
    let got = outcome.status();
    if want.name() == got.name() {
        return None;
    }
    let detail = match outcome.error() {
        Some(e) => format!(" ({e})"),
        None => String::new(),
    };
    let only_graphs = match want {
        ExpectStatus::Sealed | ExpectStatus::Failure => "",
        _ => {
            "; javascript and cli-tool runs end sealed or failure, this status comes from graph and agent runs"
        }
    };
    Some(Mismatch {
        path: "$.status".to_string(),
        expected: Value::from(want.name()),
        actual: Value::from(got.name()),
        message: format!(
            "expected the run to be {}, it was {got}{detail}{only_graphs}",
            want.name()
        ),
    })
}

/// The failure the case expects (kind, code, a part of the message) against the run's.
fn check_error(err: &ErrorExpect, outcome: &RunOutcome) -> Option<Mismatch> {
    let actual = outcome.error();
    let field = |name: &str, want: &Option<String>, got: Option<&str>| {
        let want = want.as_deref()?;
        if got == Some(want) {
            return None;
        }
        Some(Mismatch {
            path: format!("$.error.{name}"),
            expected: Value::from(want),
            actual: got.map_or(Value::Null, Value::from),
            message: format!("the failure {name} differs"),
        })
    };
    if let Some(m) = field("kind", &err.kind, actual.map(|e| e.kind.name()))
        .or_else(|| field("code", &err.code, actual.map(|e| e.code.as_str())))
    {
        return Some(m);
    }
    let want = err.message_contains.as_ref()?;
    let got = actual.map(|e| e.message.as_str());
    if got.is_some_and(|g| g.contains(want.as_str())) {
        return None;
    }
    Some(Mismatch {
        path: "$.error.message".to_string(),
        expected: Value::from(want.as_str()),
        actual: got.map_or(Value::Null, Value::from),
        message: format!("the failure message does not contain `{want}`"),
    })
}

/// Graph steps and step outputs, which no javascript or cli-tool run has.
fn check_graph(expect: &Expect) -> Option<Mismatch> {
    if let Some(steps) = expect.steps.as_ref().filter(|s| !s.is_empty()) {
        return Some(Mismatch {
            path: "$.steps".to_string(),
            expected: Value::from(steps.clone()),
            actual: Value::Array(Vec::new()),
            message: "a javascript or cli-tool run has no graph steps".to_string(),
        });
    }
    let step_outputs = expect.step_outputs.as_ref()?;
    Some(Mismatch {
        path: "$.step_outputs".to_string(),
        expected: Value::Object(step_outputs.clone()),
        actual: Value::Null,
        message: "only a graph run has step outputs; this run is a javascript or cli-tool run"
            .to_string(),
    })
}

/// Compares the receipt as written with the expected subset; a key runx receipts never have is
/// named as such.
fn check_receipt(
    receipt: &serde_json::Map<String, Value>,
    outcome: &RunOutcome,
) -> Option<Mismatch> {
    let written = outcome
        .receipt_path
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let Some(actual) = written else {
        return Some(Mismatch {
            path: "$.receipt".to_string(),
            expected: Value::Object(receipt.clone()),
            actual: Value::Null,
            message: "no readable receipt was written".to_string(),
        });
    };
    if let Some((key, want)) = receipt.iter().find(|(k, _)| {
        actual.get(k.as_str()).is_none() && RECEIPT_KEYS_NOT_PRODUCED.contains(&k.as_str())
    }) {
        return Some(Mismatch {
            path: key_path("$.receipt", key),
            expected: want.clone(),
            actual: Value::Null,
            message: format!(
                "runx receipts have no `{key}` (a field of runx's signed graph receipts), so this expectation cannot be checked; remove it"
            ),
        });
    }
    match_subset(&Value::Object(receipt.clone()), &actual, "$.receipt")
}

/// A path segment for an object key: `.key` for identifier-like keys, else `["key"]`.
fn key_path(path: &str, key: &str) -> String {
    let simple = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut out = path.to_string();
    if simple {
        let _ = write!(out, ".{key}");
    } else {
        let _ = write!(out, "[{}]", Value::from(key));
    }
    out
}

fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y
                || match (x.as_f64(), y.as_f64()) {
                    (Some(p), Some(q)) => p == q,
                    _ => false,
                }
        }
        _ => a == b,
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn differ(path: &str, expected: &Value, actual: &Value, message: String) -> Option<Mismatch> {
    Some(Mismatch {
        path: path.to_string(),
        expected: expected.clone(),
        actual: actual.clone(),
        message,
    })
}

/// Whether `actual` contains `expected`: every key of an expected object matches the actual key
/// (an absent key counts as `null`, so `key: null` matches absence), every element of an expected
/// array matches the actual element at the same index (the actual array may be longer: an
/// ordered prefix), and scalars are equal. The first difference, with its JSON path under
/// `path`, or `None` when it matches.
pub fn match_subset(expected: &Value, actual: &Value, path: &str) -> Option<Mismatch> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().find_map(|(k, ev)| {
            let p = key_path(path, k);
            match a.get(k) {
                Some(av) => match_subset(ev, av, &p),
                None if ev.is_null() => None,
                None => differ(&p, ev, &Value::Null, "missing key".to_string()),
            }
        }),
        (Value::Array(e), Value::Array(a)) => e.iter().enumerate().find_map(|(i, ev)| {
            let p = format!("{path}[{i}]");
            match a.get(i) {
                Some(av) => match_subset(ev, av, &p),
                None => differ(
                    &p,
                    ev,
                    &Value::Null,
                    format!("missing element (the array has {} elements)", a.len()),
                ),
            }
        }),
        _ => scalar_mismatch(expected, actual, path),
    }
}

/// Whether `actual` equals `expected` (numbers compare by value). The first difference, with its
/// JSON path under `path`, or `None` when equal.
pub fn match_exact(expected: &Value, actual: &Value, path: &str) -> Option<Mismatch> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .find_map(|(k, ev)| {
                let p = key_path(path, k);
                match a.get(k) {
                    Some(av) => match_exact(ev, av, &p),
                    None => differ(&p, ev, &Value::Null, "missing key".to_string()),
                }
            })
            .or_else(|| {
                a.iter()
                    .find(|(k, _)| !e.contains_key(*k))
                    .and_then(|(k, av)| {
                        differ(
                            &key_path(path, k),
                            &Value::Null,
                            av,
                            "unexpected key".to_string(),
                        )
                    })
            }),
        (Value::Array(e), Value::Array(a)) => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (ev, av))| match_exact(ev, av, &format!("{path}[{i}]")))
            .or_else(|| {
                if e.len() == a.len() {
                    None
                } else {
                    differ(
                        path,
                        expected,
                        actual,
                        format!("expected {} elements, got {}", e.len(), a.len()),
                    )
                }
            }),
        _ => scalar_mismatch(expected, actual, path),
    }
}

fn scalar_mismatch(expected: &Value, actual: &Value, path: &str) -> Option<Mismatch> {
    if scalar_eq(expected, actual) {
        return None;
    }
    let message = if kind_name(expected) == kind_name(actual) {
        "values differ".to_string()
    } else {
        format!(
            "expected {}, got {}",
            kind_name(expected),
            kind_name(actual)
        )
    };
    differ(path, expected, actual, message)
}
