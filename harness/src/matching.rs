//! Comparing a run's outcome with what its case expects; the first difference, with its JSON
//! path.

use crate::compare::{Mismatch, match_exact, match_subset};
use crate::fixture::{Case, ErrorExpect, Expect, ExpectStatus};
use runx_runtime::RunOutcome;
use serde_json::Value;

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

/// Compares the receipt as written with the expected view of it
/// ([`crate::receipt_view::check`]).
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
    crate::receipt_view::check(receipt, &actual)
}
