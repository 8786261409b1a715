//! Sealing a `runx.receipt.v1`: its content address, its digest and its signature, in that
//! order (the digest covers the id; the signature covers the digest).
//!
//! With a signing key the signature is Ed25519 over the ASCII bytes of the digest string
//! (`sha256:<hex>`), written `base64:` and URL-safe base64 without padding, and the issuer
//! names the key. Without one the receipt gets runx's *local-development* signature: the issuer
//! is the fixed local one and the value is `sig:` followed by the digest. That proves nothing
//! about who wrote the receipt, but every receipt can still be checked for integrity (its
//! digest and content address), which a verifier does only when asked to accept local
//! development signatures.

use super::c14n::{body_digest, identity_digest};
use crate::keys::Signer;
use serde_json::{Value, json};

/// The issuer type of a local-development signature.
pub const LOCAL_ISSUER_TYPE: &str = "local";
/// The key id runx gives local-development signatures.
pub const LOCAL_KID: &str = "runtime-skeleton";
/// The public key "digest" runx gives local-development signatures (no key stands behind it).
pub const LOCAL_PUBLIC_KEY_SHA256: &str = "sha256:runtime-skeleton-public";
/// The prefix of a local-development signature value; the digest follows.
pub const LOCAL_SIGNATURE_PREFIX: &str = "sig:";
/// The signature algorithm of every receipt.
pub const ALGORITHM: &str = "Ed25519";

/// Seals `doc` (a receipt made by [`super::skill_receipt`]): sets `issuer`, `id`, `digest` and
/// `signature`, signing with `signer` or, without one, with a local-development signature.
/// Does nothing to a value that is not an object.
pub fn seal(doc: &mut Value, signer: Option<&Signer>) {
    let Some(map) = doc.as_object_mut() else {
        return;
    };
    let issuer = match signer {
        Some(s) => json!({
            "type": s.issuer_type().name(),
            "kid": s.kid(),
            "public_key_sha256": s.verify_key().public_key_sha256(),
        }),
        None => json!({
            "type": LOCAL_ISSUER_TYPE,
            "kid": LOCAL_KID,
            "public_key_sha256": LOCAL_PUBLIC_KEY_SHA256,
        }),
    };
    map.insert("issuer".to_string(), issuer);
    let id = identity_digest(doc).unwrap_or_default();
    doc["id"] = Value::String(id);
    let digest = body_digest(doc).unwrap_or_default();
    doc["digest"] = Value::String(digest.clone());
    let value = match signer {
        Some(s) => s.sign_digest(&digest),
        None => format!("{LOCAL_SIGNATURE_PREFIX}{digest}"),
    };
    doc["signature"] = json!({ "alg": ALGORITHM, "value": value });
}

/// The file name runx gives a receipt: `sha256-<hex>.json` for an id `sha256:<hex>`.
pub fn file_name(id: &str) -> String {
    format!("{}.json", id.replacen(':', "-", 1))
}

/// Writes a sealed receipt as `<dir>/sha256-<hex>.json` (runx's name for it), creating `dir`
/// when needed, atomically: the file appears whole or not at all.
pub fn write(dir: &std::path::Path, doc: &Value) -> std::io::Result<std::path::PathBuf> {
    let id = doc.get("id").and_then(Value::as_str).unwrap_or_default();
    if !id.starts_with("sha256:") {
        return Err(std::io::Error::other(
            "the receipt is not sealed: it has no id",
        ));
    }
    let mut text = serde_json::to_vec_pretty(doc).map_err(std::io::Error::other)?;
    text.push(b'\n');
    crate::durable::write_new(dir, &file_name(id), &text)
}
