//! A run's outcome as a `tools/call` result.

use crate::receipt::{RECEIPT_META_KEY, receipt_meta};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use runx_runtime::RunOutcome;
use serde_json::{Map, json};

/// The `_meta` key of a failed result's `{kind, code, message}`.
pub const ERROR_META_KEY: &str = "runx/error";

/// A sealed run: its output as `structuredContent` and as a text block of its JSON. A failed
/// run: `isError: true` and a text block of runx's `{"kind", "code", "message"}` (also in
/// `_meta` under [`ERROR_META_KEY`]). Either way `_meta` names the receipt
/// ([`RECEIPT_META_KEY`]).
pub fn call_result(outcome: &RunOutcome) -> CallToolResult {
    let mut meta = Map::new();
    meta.insert(RECEIPT_META_KEY.into(), receipt_meta(outcome));
    let mut result = match &outcome.result {
        Ok(output) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(output.to_string())]);
            r.structured_content = Some(output.clone());
            r
        }
        Err(e) => {
            let error = json!({"kind": e.kind, "code": e.code, "message": e.message});
            meta.insert(ERROR_META_KEY.into(), error.clone());
            CallToolResult::error(vec![ContentBlock::text(error.to_string())])
        }
    };
    result.meta = Some(MetaObject(meta));
    result
}
