//! The `signature` block of a signed receipt and the bytes its signature covers.

use crate::digest::canonical_json;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The only signature algorithm.
pub const ALGORITHM: &str = "Ed25519";
/// The prefix of a signature value: URL-safe base64 without padding follows.
pub(crate) const VALUE_PREFIX: &str = "base64:";

/// The `signature` block of a signed receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignatureBlock {
    /// Always [`ALGORITHM`].
    pub alg: String,
    /// The signing key's id.
    pub kid: String,
    /// `hosted` or `ci`.
    pub issuer_type: String,
    /// `sha256:<hex>` of the raw 32-byte public key.
    pub public_key_sha256: String,
    /// `base64:` and the URL-safe unpadded base64 of the 64-byte signature over [`statement`].
    pub value: String,
}

/// The bytes an Ed25519 signature covers: the canonical JSON of the signature block without its
/// `value`, plus the body digest. Binding the block's fields means a receipt cannot be
/// relabelled (another key id, issuer type or algorithm) without the signature failing.
pub fn statement(body_digest: &str, block: &SignatureBlock) -> Vec<u8> {
    canonical_json(&json!({
        "alg": block.alg,
        "body_digest": body_digest,
        "issuer_type": block.issuer_type,
        "kid": block.kid,
        "public_key_sha256": block.public_key_sha256,
    }))
}
