//! What a tool result says of its run's receipt.
//!
//! One function reads the run's outcome for it, so that when the receipt's shape or the JSON
//! envelope of a run changes, this is the one place to follow.

use runx_runtime::RunOutcome;
use serde_json::{Value, json};

/// The `_meta` key of a result's receipt.
pub const RECEIPT_META_KEY: &str = "runx/receipt";

/// The receipt of a run as a tool result's `_meta` names it: `{"id", "path", "digest",
/// "signer", "status"}`, where `digest` is the `sha256:` digest of the receipt's canonical
/// body (what a signature covers and `runx receipt verify` checks) and `signer` is `null` for
/// an unsigned receipt, else `{"kid", "issuer_type", "alg", "public_key_sha256"}`. `null`
/// when no receipt was written (a package that did not load, a receipt directory that could
/// not be written): a receipt in no file vouches for nothing.
pub fn receipt_meta(outcome: &RunOutcome) -> Value {
    let Some(path) = &outcome.receipt_path else {
        return Value::Null;
    };
    let receipt = &outcome.receipt;
    let signer = receipt.signature.as_ref().map(|s| {
        json!({
            "kid": s.kid,
            "issuer_type": s.issuer_type,
            "alg": s.alg,
            "public_key_sha256": s.public_key_sha256,
        })
    });
    json!({
        "id": receipt.id,
        "path": path.display().to_string(),
        "digest": receipt.body_digest,
        "signer": signer,
        "status": receipt.status,
    })
}
