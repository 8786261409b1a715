//! What a tool result says of its run's receipt.
//!
//! One function reads the run's outcome for it, so that when the receipt's shape or the JSON
//! envelope of a run changes, this is the one place to follow.

use runx_runtime::RunOutcome;
use serde_json::{Value, json};

/// The `_meta` key of a result's receipt.
pub const RECEIPT_META_KEY: &str = "runx/receipt";

/// The receipt of a run as a tool result's `_meta` names it: `{"id", "path", "digest",
/// "signer", "status", "disposition", "reason_code"}`, where `id` is the receipt's content
/// address (runx's `receipt_id`), `digest` the `sha256:` digest of its canonical body (what
/// the signature covers and `runx verify` checks), `signer` its issuer `{"type", "kid",
/// "public_key_sha256"}` with the signature's `alg` (`type: local` for runx's
/// local-development signature, made without a key), `status` the run's `sealed` or
/// `failure`, and `disposition`/`reason_code` its seal. `null` when no receipt was written (a
/// package that did not load, a receipt directory that could not be written): a receipt in no
/// file vouches for nothing.
pub fn receipt_meta(outcome: &RunOutcome) -> Value {
    let Some(path) = &outcome.receipt_path else {
        return Value::Null;
    };
    let receipt = &outcome.receipt;
    let issuer = &receipt["issuer"];
    json!({
        "id": receipt["id"],
        "path": path.display().to_string(),
        "digest": receipt["digest"],
        "signer": {
            "type": issuer["type"],
            "kid": issuer["kid"],
            "public_key_sha256": issuer["public_key_sha256"],
            "alg": receipt["signature"]["alg"],
        },
        "status": outcome.evidence.status,
        "disposition": receipt["seal"]["disposition"],
        "reason_code": receipt["seal"]["reason_code"],
    })
}
