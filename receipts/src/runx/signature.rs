//! Ed25519 over a receipt's digest, as runx signs a `runx.receipt.v1`: the message is the ASCII
//! bytes of the digest string (`sha256:<hex>`), the value `base64:` and the 64-byte signature.

use crate::keys::{Signer, VerifyKey};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::Signer as _;

/// The prefix of a signature value.
const VALUE_PREFIX: &str = "base64:";

/// Why a signature over a digest does not verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestSignature {
    /// Not `base64:` and 64 bytes of base64.
    Malformed,
    /// Well formed, but not this key's signature of this digest.
    Invalid,
}

impl Signer {
    /// The signature of a receipt whose digest is `digest`, written URL-safe without padding.
    pub fn sign_digest(&self, digest: &str) -> String {
        let signature = self.signing_key().sign(digest.as_bytes());
        format!(
            "{VALUE_PREFIX}{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )
    }
}

impl VerifyKey {
    /// Checks `value` as this key's signature of `digest`. The base64 may be URL-safe without
    /// padding or standard with it, as runx reads it.
    pub fn verify_digest(&self, digest: &str, value: &str) -> Result<(), DigestSignature> {
        let encoded = value
            .strip_prefix(VALUE_PREFIX)
            .ok_or(DigestSignature::Malformed)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(encoded)
            .or_else(|_| STANDARD.decode(encoded))
            .map_err(|_| DigestSignature::Malformed)?;
        let bytes: [u8; 64] = bytes.try_into().map_err(|_| DigestSignature::Malformed)?;
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        self.verifying_key()
            .verify_strict(digest.as_bytes(), &signature)
            .map_err(|_| DigestSignature::Invalid)
    }
}
