//! Comparing JSON values as fixture cases do: a subset (objects by key, arrays as an ordered
//! prefix) or exact equality, numbers by value, the first difference with its JSON path.

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
