//! The `runx_page` object every call of a paged run sees, as one typed value, and its one
//! encoder.
//!
//! A sequential page sees the page's metadata and `state`; a map sees the metadata alone; a
//! fold sees the metadata, `state` and its page's map `result`. The keys always come in one
//! order: the metadata's, then `state`, then `result`. A page sent ahead of the reply before it
//! is encoded up to `"state":`, and the worker appends the state it kept and the closing brace
//! (`runx_worker::PagePayload::state_from`).

use crate::failure::RunError;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A page's metadata, as every call of the page sees it, its keys in the order runx has always
/// written them (by name, then `whole_digest`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(super) struct PageMeta {
    pub artifact_bytes: u64,
    pub artifact_ref: String,
    pub eof: bool,
    pub length: u64,
    pub media_type: String,
    pub next_offset: u64,
    pub offset: u64,
    pub page_index: u32,
    pub range_digest: String,
    /// The digest of the whole artifact, known once admission is over: no page is called
    /// before (`PageLoop::with_digest`).
    pub whole_digest: String,
}

/// What a call's `runx_page` holds beside the page's metadata.
#[derive(Clone, Copy, Debug)]
pub(super) enum Beside<'a> {
    /// Nothing: a map sees its page alone.
    Nothing,
    /// The state the page before returned (a sequential page).
    State(&'a Value),
    /// `"state":` and no more: the worker appends the state it kept from the page before.
    KeptState,
    /// The fold's state so far and the page's map result, its JSON text as it came.
    Fold {
        state: &'a Value,
        result: &'a RawValue,
    },
}

#[derive(Serialize)]
struct Encoded<'a> {
    #[serde(flatten)]
    meta: &'a PageMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
}

/// A fold's input: the run's inputs with `runx_page`.
#[derive(Serialize)]
struct FoldInput<'a> {
    #[serde(flatten)]
    inputs: &'a Map<String, Value>,
    runx_page: Encoded<'a>,
}

impl PageMeta {
    /// The JSON text of `runx_page` for a call of this page with `beside`.
    pub(super) fn encode(&self, beside: Beside<'_>) -> Result<Vec<u8>, RunError> {
        let (encoded, open) = self.encoded(beside);
        let mut json = serde_json::to_vec(&encoded).map_err(encode_failed)?;
        if open {
            // `{…"page_index":…,"whole_digest":"…"}` becomes `{…,"whole_digest":"…","state":`.
            json.pop();
            json.extend_from_slice(b",\"state\":");
        }
        Ok(json)
    }

    /// The input of a fold of this page: the run's `inputs` with `runx_page` (its metadata,
    /// the fold's `state` and the page's map `result`).
    pub(super) fn fold_input(
        &self,
        inputs: &Map<String, Value>,
        state: &Value,
        result: &RawValue,
    ) -> Result<Vec<u8>, RunError> {
        let (runx_page, _) = self.encoded(Beside::Fold { state, result });
        serde_json::to_vec(&FoldInput { inputs, runx_page }).map_err(encode_failed)
    }

    /// The value to encode, and whether it stays open before its state.
    fn encoded<'a>(&'a self, beside: Beside<'a>) -> (Encoded<'a>, bool) {
        let (state, result, open) = match beside {
            Beside::Nothing => (None, None, false),
            Beside::State(state) => (Some(state), None, false),
            Beside::KeptState => (None, None, true),
            Beside::Fold { state, result } => (Some(state), Some(result), false),
        };
        let encoded = Encoded {
            meta: self,
            state,
            result,
        };
        (encoded, open)
    }
}

fn encode_failed(e: serde_json::Error) -> RunError {
    RunError::internal("encode", e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta() -> PageMeta {
        PageMeta {
            artifact_ref: "a".into(),
            media_type: "application/json".into(),
            artifact_bytes: 9,
            page_index: 2,
            offset: 3,
            length: 4,
            next_offset: 7,
            eof: false,
            range_digest: "sha256:r".into(),
            whole_digest: "sha256:w".into(),
        }
    }

    const KEYS: [&str; 10] = [
        "artifact_bytes",
        "artifact_ref",
        "eof",
        "length",
        "media_type",
        "next_offset",
        "offset",
        "page_index",
        "range_digest",
        "whole_digest",
    ];

    fn keys(json: &[u8]) -> Vec<String> {
        // serde_json's map sorts keys; the text's order is read from the text itself.
        let text = std::str::from_utf8(json).unwrap();
        let mut found: Vec<(usize, String)> = KEYS
            .iter()
            .chain(["state", "result"].iter())
            .filter_map(|k| text.find(&format!("\"{k}\":")).map(|i| (i, k.to_string())))
            .collect();
        found.sort();
        found.into_iter().map(|(_, k)| k).collect()
    }

    #[test]
    fn every_call_sees_the_metadata_in_one_key_order() {
        let state = json!({"n": 1});
        let result = RawValue::from_string("[1,2]".into()).unwrap();
        let m = meta();
        let map = m.encode(Beside::Nothing).unwrap();
        assert_eq!(keys(&map), KEYS);
        let page = m.encode(Beside::State(&state)).unwrap();
        let v: Value = serde_json::from_slice(&page).unwrap();
        assert_eq!(v["state"], state);
        assert_eq!(keys(&page)[..10], KEYS);
        assert_eq!(keys(&page)[10], "state");
        let inputs = json!({"k": 1}).as_object().unwrap().clone();
        let fold = m.fold_input(&inputs, &state, &result).unwrap();
        let v: Value = serde_json::from_slice(&fold).unwrap();
        assert_eq!(v["k"], 1);
        assert_eq!(v["runx_page"]["result"], json!([1, 2]));
        assert_eq!(v["runx_page"]["state"], state);
        assert_eq!(v["runx_page"]["page_index"], 2);
    }

    #[test]
    fn a_page_sent_ahead_stops_before_its_state() {
        let open = meta().encode(Beside::KeptState).unwrap();
        assert!(open.ends_with(b"\"whole_digest\":\"sha256:w\",\"state\":"));
        let mut closed = open.clone();
        closed.extend_from_slice(b"[7]}");
        let v: Value = serde_json::from_slice(&closed).unwrap();
        assert_eq!(v["state"], json!([7]));
        // The same bytes as a page given that state by the host.
        assert_eq!(closed, meta().encode(Beside::State(&json!([7]))).unwrap());
    }
}
