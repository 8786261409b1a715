//! The environment names of receipt keys, and which of them no runner may see.
//!
//! Keys come from the environment (`RUNX_RECEIPT_SIGN_*`, `RUNX_RECEIPT_VERIFY_*`) or from a
//! key file of `NAME=VALUE` lines with the same names ([`crate::keys`]). The signing seed is
//! secret: a runner that declares a `RUNX_RECEIPT_SIGN_*` name is refused when its profile
//! loads ([`is_signing_name`]).

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
pub(crate) const SIGN_NAMES: [&str; 3] = [SIGN_KID_ENV, SIGN_SEED_ENV, SIGN_ISSUER_TYPE_ENV];
/// The names a verification key needs, in the order [`VerifyKey::new`] takes them.
pub(crate) const VERIFY_NAMES: [&str; 2] = [VERIFY_KID_ENV, VERIFY_PUBLIC_KEY_ENV];

/// Whether `name` is a receipt-signing variable, which no runner may declare. Compared without
/// regard to case, so a look-alike spelling cannot be declared either.
pub fn is_signing_name(name: &str) -> bool {
    name.len() >= SIGN_ENV_PREFIX.len()
        && name[..SIGN_ENV_PREFIX.len()].eq_ignore_ascii_case(SIGN_ENV_PREFIX)
}
