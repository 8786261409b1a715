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
//! keys themselves, their sources and their checks are in `keys`.

use crate::digest::{canonical_json, sha256_hex};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod keys;

pub use keys::{IssuerType, KeyError, KeyRole, SignatureCheck, Signer, VerifyKey};

/// The key id of the signing key.
pub const SIGN_KID_ENV: &str = "RUNX_RECEIPT_SIGN_KID";
/// The 32-byte Ed25519 seed of the signing key, base64 (standard or URL-safe, padded or not).
pub const SIGN_SEED_ENV: &str = "RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64";
/// Who signs: `hosted` or `ci`.
pub const SIGN_ISSUER_TYPE_ENV: &str = "RUNX_RECEIPT_SIGN_ISSUER_TYPE";
/// The prefix of every signing variable; no runner may declare a name that starts with it.
pub const SIGN_ENV_PREFIX: &str = "RUNX_RECEIPT_SIGN_";
/// The key id of the verification key.
pub const VERIFY_KID_ENV: &str = "RUNX_RECEIPT_VERIFY_KID";
/// The 32-byte Ed25519 public key of the verification key, base64.
pub const VERIFY_PUBLIC_KEY_ENV: &str = "RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64";
/// Set to `1`/`true` to make an unsigned run a usage error (the twin of `--require-signed`).
pub const REQUIRE_SIGNED_ENV: &str = "RUNX_RECEIPT_REQUIRE_SIGNED";
/// The receipt directory, as given to cli-tool children.
pub const RECEIPT_DIR_ENV: &str = "RUNX_RECEIPT_DIR";
/// The names a signing key needs, in the order [`Signer::new`] takes them.
const SIGN_NAMES: [&str; 3] = [SIGN_KID_ENV, SIGN_SEED_ENV, SIGN_ISSUER_TYPE_ENV];
/// The names a verification key needs, in the order [`VerifyKey::new`] takes them.
const VERIFY_NAMES: [&str; 2] = [VERIFY_KID_ENV, VERIFY_PUBLIC_KEY_ENV];
/// The only signature algorithm.
pub const ALGORITHM: &str = "Ed25519";
/// The prefix of a signature value: URL-safe base64 without padding follows.
const VALUE_PREFIX: &str = "base64:";

/// Whether `name` is a receipt-signing variable, which no runner may declare. Compared without
/// regard to case, so a look-alike spelling cannot be declared either.
pub fn is_signing_name(name: &str) -> bool {
    name.len() >= SIGN_ENV_PREFIX.len()
        && name[..SIGN_ENV_PREFIX.len()].eq_ignore_ascii_case(SIGN_ENV_PREFIX)
}

/// The `signature` block of a signed receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// Whether `RUNX_RECEIPT_REQUIRE_SIGNED` asks for signed receipts (`1`/`true`/`yes`; unset,
/// empty, `0`/`false`/`no` do not).
pub fn require_signed_from_env() -> Result<bool, KeyError> {
    let Some(value) = std::env::var_os(REQUIRE_SIGNED_ENV) else {
        return Ok(false);
    };
    match value
        .to_str()
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some("" | "0" | "false" | "no") => Ok(false),
        Some("1" | "true" | "yes") => Ok(true),
        _ => Err(KeyError::Malformed {
            name: REQUIRE_SIGNED_ENV,
            problem: "is neither `1`/`true`/`yes` nor `0`/`false`/`no`".to_string(),
        }),
    }
}

/// Makes this process non-dumpable (Linux), so that processes of the same user, the cli-tool
/// children among them, cannot read its environment or memory through `/proc` or `ptrace`,
/// where a signing key given in the environment would be visible. A process with
/// `CAP_SYS_PTRACE` (root) still can. Called once a signing key is loaded; failure is logged
/// and not fatal (the key is never *given* to a child either way).
pub fn guard_process() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!("cannot make runx non-dumpable: {e}");
    }
}

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

/// Text from a receipt or key file quoted in a message: control characters escaped and long
/// values cut, so a hostile file cannot rewrite the terminal or flood the report.
pub(crate) fn printable(text: &str) -> String {
    const MAX: usize = 120;
    let mut out = String::new();
    for c in text.chars().take(MAX) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
