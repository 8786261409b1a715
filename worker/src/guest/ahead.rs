//! Pages sent ahead: the host may send page N+1 before page N's reply reaches it, so the
//! worker goes from one page to the next without waiting for the host.
//!
//! Page N then asks the worker to keep the state its result carries forward (`keep_state`);
//! page N+1 arrives with its metadata cut just before its state and names the call whose kept
//! state it takes (`state_from`). The worker appends that state and the closing brace, and
//! answers with the state's digest so the host can check it against the state it parsed from
//! page N's reply itself. A state is kept for the very next call only: any call takes it.

use sha2::{Digest, Sha256};

/// The state an intermediate page result carries forward, kept for the next call.
pub(super) struct KeptState {
    /// The call whose result it came from.
    pub(super) call_id: u64,
    /// The state as JSON, encoded as the host encodes the state it sends.
    pub(super) state: Vec<u8>,
}

/// The state an intermediate page result (`{runx_page: {state, done?}}`, `done` not true)
/// carries forward; `None` for a result that ends the run or that the host will refuse, so
/// that the page sent after it is refused too.
pub(super) fn carried_state(output: &[u8]) -> Option<Vec<u8>> {
    use serde_json::Value;
    let Value::Object(mut result) = serde_json::from_slice(output).ok()? else {
        return None;
    };
    let Value::Object(mut page) = result.remove("runx_page")? else {
        return None;
    };
    let state = page.remove("state").unwrap_or(Value::Null);
    let goes_on = matches!(
        page.remove("done"),
        None | Some(Value::Null) | Some(Value::Bool(false))
    );
    if !goes_on || !page.is_empty() || !result.is_empty() {
        return None;
    }
    serde_json::to_vec(&state).ok()
}

/// The kept state a call asks for with `state_from`, or why the worker cannot give it.
pub(super) fn take_state(
    kept: Option<KeptState>,
    call_id: u64,
    from: u64,
) -> Result<Vec<u8>, String> {
    match kept {
        Some(k) if k.call_id == from => Ok(k.state),
        _ => Err(format!(
            "call {call_id} takes the state kept from call {from}, which this worker does not hold"
        )),
    }
}

/// The metadata of a page sent ahead: the part the host sent, then the kept state and the
/// closing brace.
pub(super) fn joined_meta(head: &[u8], state: &[u8]) -> Vec<u8> {
    let mut meta = Vec::with_capacity(head.len() + state.len() + 1);
    meta.extend_from_slice(head);
    meta.extend_from_slice(state);
    meta.push(b'}');
    meta
}

/// `sha256:<hex>` of a state, as the reply reports it.
pub fn state_digest(state: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(state)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_intermediate_result_carries_its_state() {
        let state = |s: &str| carried_state(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(
            state(r#"{"runx_page":{"state":{"b":1,"a":[2]}}}"#).as_deref(),
            Some(r#"{"a":[2],"b":1}"#)
        );
        assert_eq!(state(r#"{"runx_page":{}}"#).as_deref(), Some("null"));
        assert_eq!(
            state(r#"{"runx_page":{"state":7,"done":false}}"#).as_deref(),
            Some("7")
        );
        for ends_or_refused in [
            r#"{"runx_page":{"state":7,"done":true}}"#,
            r#"{"runx_page":{"state":7,"done":"yes"}}"#,
            r#"{"runx_page":{"state":7,"extra":1}}"#,
            r#"{"runx_page":{"state":7},"answer":1}"#,
            r#"{"runx_page":[]}"#,
            r#"{"state":7}"#,
            r#"[1]"#,
            r#"{"runx_page":"#,
        ] {
            assert_eq!(state(ends_or_refused), None, "{ends_or_refused}");
        }
    }

    #[test]
    fn a_state_goes_to_the_call_that_names_it_and_no_other() {
        let kept = || {
            Some(KeptState {
                call_id: 4,
                state: b"{}".to_vec(),
            })
        };
        assert_eq!(take_state(kept(), 5, 4).unwrap(), b"{}");
        assert!(take_state(kept(), 5, 3).unwrap_err().contains("call 3"));
        assert!(take_state(None, 5, 4).is_err());
        assert_eq!(
            joined_meta(br#"{"eof":false,"state":"#, b"[1]"),
            br#"{"eof":false,"state":[1]}"#
        );
    }
}
