//! A run's outcome as a `tools/call` result, in runx's shape.
//!
//! runx answers a call with `structuredContent` `{"output": OUTPUT, "runx": {"status",
//! "skillName", "runId", "receiptId", "events", "output"}}` (`output` only when the run
//! completed) and one text block: the output as compact JSON (a non-blank string as it is; a
//! null or blank output as "SKILL completed. Inspect receipt ID."), or "SKILL failed. Inspect
//! receipt ID. MESSAGE" with `isError: true`. This runtime answers the same, and adds in
//! `_meta` what runx leaves out: the receipt ([`RECEIPT_META_KEY`]) and, for a failure, its
//! `{kind, code, message}` ([`ERROR_META_KEY`]).

use crate::receipt::{RECEIPT_META_KEY, receipt_meta};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use runx_runtime::RunOutcome;
use serde_json::{Map, Value, json};

/// The `_meta` key of a failed result's `{kind, code, message}`.
pub const ERROR_META_KEY: &str = "runx/error";

/// The `tools/call` result of `outcome` (see the module documentation).
pub fn call_result(outcome: &RunOutcome) -> CallToolResult {
    let mut meta = Map::new();
    meta.insert(RECEIPT_META_KEY.into(), receipt_meta(outcome));
    // A receipt in no file vouches for nothing: its id is named only when it was written.
    let receipt_id = outcome
        .receipt_path
        .as_ref()
        .and_then(|_| outcome.receipt["id"].as_str());
    let inspect = receipt_id.map_or_else(String::new, |id| format!(" Inspect receipt {id}."));
    let mut runx = Map::new();
    runx.insert("events".into(), json!([]));
    if let Some(id) = receipt_id {
        runx.insert("receiptId".into(), json!(id));
    }
    runx.insert("runId".into(), json!(outcome.evidence.run_id));
    runx.insert("skillName".into(), json!(outcome.skill));
    let mut result = match &outcome.result {
        Ok(output) => {
            runx.insert("status".into(), json!("completed"));
            runx.insert("output".into(), output.clone());
            let text = match output {
                Value::String(s) if !s.trim().is_empty() => s.clone(),
                Value::String(_) | Value::Null => {
                    format!("{} completed.{inspect}", outcome.skill)
                }
                other => other.to_string(),
            };
            let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
            r.structured_content = Some(json!({"output": output, "runx": runx}));
            r
        }
        Err(e) => {
            runx.insert("status".into(), json!("failed"));
            meta.insert(
                ERROR_META_KEY.into(),
                json!({"kind": e.kind, "code": e.code, "message": e.message}),
            );
            let text = format!("{} failed.{inspect} {}", outcome.skill, e.message);
            let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
            r.structured_content = Some(json!({"runx": runx}));
            r
        }
    };
    result.meta = Some(MetaObject(meta));
    result
}
