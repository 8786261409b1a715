//! Receipt signing keys, the seal of a receipt, and the check of a seal.
//!
//! A receipt is *sealed* when it is written: its `body_digest` is the SHA-256 of the RFC 8785
//! canonical JSON of every field except `body_digest` and `signature` ([`body_digest`]). With
//! a signing key ([`Signer`]) it is also *signed*: the `signature` block names the algorithm,
//! the key id, the issuer type and the SHA-256 of the public key, and carries an Ed25519
//! signature over the canonical JSON of those fields plus the body digest ([`statement`]), so
//! neither the body nor the block's own fields can change without the signature failing.
//! Without a key the receipt is *unsigned*: `signature` is `null`.
//!
//! Keys come from the environment (`RUNX_RECEIPT_SIGN_*`, `RUNX_RECEIPT_VERIFY_*`) or from a
//! key file of `NAME=VALUE` lines with the same names. The signing seed is secret: it is never
//! printed, logged, written to a receipt or given to a worker or child process (a runner that
//! declares a `RUNX_RECEIPT_SIGN_*` name is refused when its profile loads, see
//! [`is_signing_name`]), and error messages name the variable at fault, never its value. The
//! keys themselves, their sources and their checks are in [`crate::keys`].

use crate::digest::{canonical_json, sha256_hex};
use crate::keys::Signer;
use crate::signature::SignatureBlock;
use serde::Serialize;
use serde_json::Value;

/// The body digest of a sealed document (a receipt as JSON): `sha256:` of the canonical JSON
/// of every field except `body_digest` and `signature`. `None` when `doc` is not an object.
pub fn body_digest(doc: &Value) -> Option<String> {
    let mut body = doc.as_object()?.clone();
    body.remove("body_digest");
    body.remove("signature");
    Some(sha256_hex(&canonical_json(&Value::Object(body))))
}

/// `doc` as a reader of its file will see it. Numbers go through their JSON text first, so the
/// digest computed here is the one a verifier computes from the file: serde_json's float
/// parsing is deterministic but not always exact, and both sides must parse the same text.
pub fn as_written<T: Serialize>(doc: &T) -> Option<Value> {
    let text = serde_json::to_string(doc).ok()?;
    serde_json::from_str(&text).ok()
}

/// The seal of `doc`: its body digest and, with a signer, its signature block.
pub fn seal<T: Serialize>(
    doc: &T,
    signer: Option<&Signer>,
) -> (Option<String>, Option<SignatureBlock>) {
    let digest = as_written(doc).as_ref().and_then(body_digest);
    let signature = match (&digest, signer) {
        (Some(d), Some(s)) => Some(s.sign(d)),
        _ => None,
    };
    (digest, signature)
}
