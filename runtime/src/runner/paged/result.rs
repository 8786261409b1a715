//! A page's reply: parsed, split into the state for the next page and the rest, and checked
//! against the state limit.

use crate::failure::{FailureKind, RunError};
use runx_profile::STATE_BYTES;
use runx_worker::Reply;
use serde_json::{Map, Value};

/// Parses a page's reply and splits it into (state, done, the rest); the state must fit its
/// limit.
pub(super) fn page_result(
    reply: &Reply,
    eof: bool,
) -> Result<(Value, bool, Map<String, Value>), RunError> {
    let output: Value = serde_json::from_slice(&reply.output)
        .map_err(|e| RunError::new(FailureKind::OutputRejected, "invalid_json", e.to_string()))?;
    let (state, done, rest) = split_result(output, eof)?;
    let state_len = serde_json::to_vec(&state).map_or(0, |v| v.len());
    if state_len as u64 > STATE_BYTES.max {
        return Err(RunError::limit(
            &STATE_BYTES,
            format!(
                "the continuation state is {state_len} bytes; at most {} bytes (2 MiB) are carried between pages",
                STATE_BYTES.max
            ),
        ));
    }
    Ok((state, done, rest))
}

/// Splits a page result into (state, done, the rest). An intermediate result must be exactly
/// `{runx_page: {state, done?}}`.
fn split_result(output: Value, eof: bool) -> Result<(Value, bool, Map<String, Value>), RunError> {
    let bad = |m: String| RunError::new(FailureKind::OutputRejected, "page_result", m);
    let Value::Object(mut obj) = output else {
        return Err(bad("a page result must be an object".to_string()));
    };
    let (state, done) = match obj.remove("runx_page") {
        None if eof => (Value::Null, false),
        None => {
            return Err(bad(
                "an intermediate page result must be `{runx_page: {state, done?}}`; `runx_page` is missing".to_string(),
            ));
        }
        Some(Value::Object(mut p)) => {
            let state = p.remove("state").unwrap_or(Value::Null);
            let done = match p.remove("done") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => b,
                Some(other) => {
                    return Err(bad(format!(
                        "`runx_page.done` must be a boolean, not {other}"
                    )));
                }
            };
            if let Some(extra) = p.keys().next() {
                return Err(bad(format!(
                    "`runx_page` may hold only `state` and `done`; it also holds `{extra}`"
                )));
            }
            (state, done)
        }
        Some(other) => return Err(bad(format!("`runx_page` must be an object, not {other}"))),
    };
    if !eof
        && !done
        && let Some(extra) = obj.keys().next()
    {
        return Err(bad(format!(
            "an intermediate page result must be exactly `{{runx_page: {{state, done?}}}}`; it also holds `{extra}` (return domain outputs only with `done: true` or on the eof page)"
        )));
    }
    Ok((state, done, obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn intermediate_results_are_exact() {
        assert!(split_result(json!({"runx_page": {"state": 1}}), false).is_ok());
        assert!(split_result(json!({"runx_page": {"state": 1}, "x": 1}), false).is_err());
        assert!(split_result(json!({"runx_page": {"state": 1, "y": 2}}), false).is_err());
        assert!(split_result(json!({"x": 1}), false).is_err());
        let (_, done, rest) = split_result(
            json!({"runx_page": {"state": 1, "done": true}, "x": 1}),
            false,
        )
        .expect("done with outputs");
        assert!(done);
        assert_eq!(rest["x"], 1);
        let (_, _, rest) = split_result(json!({"x": 2}), true).expect("eof result");
        assert_eq!(rest["x"], 2);
    }
}
