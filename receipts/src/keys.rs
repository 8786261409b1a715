//! Signing and verification keys: where they come from (the environment, a key file), how
//! their values are checked, and signing and verifying a body digest with them.

use crate::bounds::KEY_FILE_BYTES;
use crate::digest::sha256_hex;
use crate::names::{
    SIGN_ISSUER_TYPE_ENV, SIGN_KID_ENV, SIGN_NAMES, SIGN_SEED_ENV, VERIFY_KID_ENV, VERIFY_NAMES,
    VERIFY_PUBLIC_KEY_ENV,
};
use crate::quote::printable;
use crate::signature::{ALGORITHM, SignatureBlock, VALUE_PREFIX, statement};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// Longest key id accepted.
const MAX_KID_CHARS: usize = 256;

/// Why a key could not be configured. Messages name the variable, line or file at fault and
/// never quote a seed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Some but not all of the names a key needs were given.
    #[error(
        "{} incomplete: {given} set but {missing} not; set all of {all}, or none",
        what.noun()
    )]
    Incomplete {
        /// Signing or verification key.
        what: KeyRole,
        /// The names that were set.
        given: String,
        /// The names that were not.
        missing: String,
        /// Every name the key needs.
        all: String,
    },
    /// A value is malformed (its text is not repeated).
    #[error("{name} {problem}")]
    Malformed {
        /// The variable (or key file entry) at fault.
        name: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The key file cannot be used.
    #[error("key file {}: {problem}", path.display())]
    File {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

/// Which key a [`KeyError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRole {
    /// The signing key (`RUNX_RECEIPT_SIGN_*`).
    Signing,
    /// The verification key (`RUNX_RECEIPT_VERIFY_*`).
    Verification,
}

impl KeyRole {
    fn noun(self) -> &'static str {
        match self {
            KeyRole::Signing => "the receipt signing key is",
            KeyRole::Verification => "the receipt verification key is",
        }
    }

    fn adjective(self) -> &'static str {
        match self {
            KeyRole::Signing => "signing",
            KeyRole::Verification => "verification",
        }
    }

    fn names(self) -> &'static [&'static str] {
        match self {
            KeyRole::Signing => &SIGN_NAMES,
            KeyRole::Verification => &VERIFY_NAMES,
        }
    }
}

/// Who signs receipts. `local` and `verifier` are not signing issuers and are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssuerType {
    /// A hosted runx service.
    Hosted,
    /// A CI system.
    Ci,
}

impl IssuerType {
    /// `hosted` or `ci`.
    pub const fn name(self) -> &'static str {
        match self {
            IssuerType::Hosted => "hosted",
            IssuerType::Ci => "ci",
        }
    }

    fn parse(text: &str) -> Result<IssuerType, KeyError> {
        match text {
            "hosted" => Ok(IssuerType::Hosted),
            "ci" => Ok(IssuerType::Ci),
            other => Err(KeyError::Malformed {
                name: SIGN_ISSUER_TYPE_ENV,
                problem: format!(
                    "is `{}`; the issuer type of a signing key is `hosted` or `ci`",
                    printable(other)
                ),
            }),
        }
    }
}

/// A signing key: its id, issuer type and Ed25519 secret. `Debug` shows the public half only.
#[derive(Clone)]
pub struct Signer {
    kid: String,
    issuer_type: IssuerType,
    key: SigningKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("kid", &self.kid)
            .field("issuer_type", &self.issuer_type)
            .field("public_key_sha256", &self.verify_key().public_key_sha256())
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer from the three values: key id, base64 seed, issuer type.
    pub fn new(kid: &str, seed_base64: &str, issuer_type: &str) -> Result<Signer, KeyError> {
        let kid = check_kid(SIGN_KID_ENV, kid)?;
        let issuer_type = IssuerType::parse(issuer_type.trim())?;
        let seed = decode_key(SIGN_SEED_ENV, seed_base64, "an Ed25519 seed")?;
        Ok(Signer {
            kid,
            issuer_type,
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// The signer the process environment configures: `None` when no `RUNX_RECEIPT_SIGN_*`
    /// name is set, an error when only some are or a value is malformed.
    pub fn from_env() -> Result<Option<Signer>, KeyError> {
        Signer::from_lookup(&env_value)
    }

    /// Like [`Signer::from_env`], reading names through `get` (empty values count as unset).
    pub fn from_lookup(
        get: &dyn Fn(&str) -> Option<Zeroizing<String>>,
    ) -> Result<Option<Signer>, KeyError> {
        match complete(KeyRole::Signing, SIGN_NAMES, get)? {
            None => Ok(None),
            Some([kid, seed, issuer]) => Signer::new(&kid, &seed, &issuer).map(Some),
        }
    }

    /// The signer in a key file of `NAME=VALUE` lines naming the three `RUNX_RECEIPT_SIGN_*`
    /// values. The file must be a regular file readable by its owner only.
    pub fn from_file(path: &Path) -> Result<Signer, KeyError> {
        let entries = read_key_file(path, KeyRole::Signing, true)?;
        let get = |name: &str| {
            entries
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        match complete(KeyRole::Signing, SIGN_NAMES, &get)? {
            Some([kid, seed, issuer]) => Signer::new(&kid, &seed, &issuer),
            None => Err(KeyError::File {
                path: path.to_path_buf(),
                problem: format!("names none of {}", SIGN_NAMES.join(", ")),
            }),
        }
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The issuer type.
    pub fn issuer_type(&self) -> IssuerType {
        self.issuer_type
    }

    /// The public half, as a verification key with the same id.
    pub fn verify_key(&self) -> VerifyKey {
        VerifyKey {
            kid: self.kid.clone(),
            key: self.key.verifying_key(),
        }
    }

    pub(crate) fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    /// The signature block for a body with `body_digest`.
    pub fn sign(&self, body_digest: &str) -> SignatureBlock {
        let mut block = SignatureBlock {
            alg: ALGORITHM.to_string(),
            kid: self.kid.clone(),
            issuer_type: self.issuer_type.name().to_string(),
            public_key_sha256: self.verify_key().public_key_sha256(),
            value: String::new(),
        };
        let signature = self.key.sign(&statement(body_digest, &block));
        block.value = format!(
            "{VALUE_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature.to_bytes())
        );
        block
    }
}

/// A verification key: a key id and an Ed25519 public key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyKey {
    kid: String,
    key: VerifyingKey,
}

/// Which part of a signature did not check out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignatureCheck {
    /// The algorithm is not Ed25519.
    Algorithm,
    /// The key id is not the verification key's.
    KeyId,
    /// The public key digest is not the verification key's.
    PublicKey,
    /// The issuer type is not a signing issuer.
    IssuerType,
    /// The value is malformed or does not verify.
    Signature,
}

impl VerifyKey {
    /// A verification key from a key id and a base64 public key.
    pub fn new(kid: &str, public_key_base64: &str) -> Result<VerifyKey, KeyError> {
        let kid = check_kid(VERIFY_KID_ENV, kid)?;
        let bytes = decode_key(
            VERIFY_PUBLIC_KEY_ENV,
            public_key_base64,
            "an Ed25519 public key",
        )?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| KeyError::Malformed {
            name: VERIFY_PUBLIC_KEY_ENV,
            problem: "is 32 bytes but not an Ed25519 public key (not a point on the curve)"
                .to_string(),
        })?;
        Ok(VerifyKey { kid, key })
    }

    /// The verification key the environment configures: the `RUNX_RECEIPT_VERIFY_*` pair, or
    /// `None` when neither is set. Half a pair is an error.
    pub fn from_env() -> Result<Option<VerifyKey>, KeyError> {
        VerifyKey::from_lookup(&env_value)
    }

    /// Like [`VerifyKey::from_env`], reading names through `get`.
    pub fn from_lookup(
        get: &dyn Fn(&str) -> Option<Zeroizing<String>>,
    ) -> Result<Option<VerifyKey>, KeyError> {
        match complete(KeyRole::Verification, VERIFY_NAMES, get)? {
            None => Ok(None),
            Some([kid, key]) => VerifyKey::new(&kid, &key).map(Some),
        }
    }

    /// The verification key in a file of `NAME=VALUE` lines naming the two
    /// `RUNX_RECEIPT_VERIFY_*` values.
    pub fn from_file(path: &Path) -> Result<VerifyKey, KeyError> {
        let entries = read_key_file(path, KeyRole::Verification, false)?;
        let get = |name: &str| {
            entries
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        match complete(KeyRole::Verification, VERIFY_NAMES, &get)? {
            Some([kid, key]) => VerifyKey::new(&kid, &key),
            None => Err(KeyError::File {
                path: path.to_path_buf(),
                problem: format!("names none of {}", VERIFY_NAMES.join(", ")),
            }),
        }
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as standard base64, as `RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64`
    /// spells it.
    pub fn public_key_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.key.as_bytes())
    }

    /// `sha256:<hex>` of the raw public key.
    pub fn public_key_sha256(&self) -> String {
        sha256_hex(self.key.as_bytes())
    }

    /// The variables a cli-tool child may receive to verify receipts itself.
    pub fn child_env(&self) -> [(String, String); 2] {
        [
            (VERIFY_KID_ENV.to_string(), self.kid.clone()),
            (VERIFY_PUBLIC_KEY_ENV.to_string(), self.public_key_base64()),
        ]
    }

    pub(crate) fn verifying_key(&self) -> &VerifyingKey {
        &self.key
    }

    /// Checks `block` as the signature of a body whose digest is `body_digest`, naming the first
    /// part that does not check out.
    pub fn verify(
        &self,
        body_digest: &str,
        block: &SignatureBlock,
    ) -> Result<(), (SignatureCheck, String)> {
        if block.alg != ALGORITHM {
            return Err((
                SignatureCheck::Algorithm,
                format!(
                    "algorithm `{}` is not supported; runx signs with {ALGORITHM}",
                    printable(&block.alg)
                ),
            ));
        }
        if block.kid != self.kid {
            return Err((
                SignatureCheck::KeyId,
                format!(
                    "key id `{}` is not the verification key's id `{}`",
                    printable(&block.kid),
                    self.kid
                ),
            ));
        }
        let expected = self.public_key_sha256();
        if block.public_key_sha256 != expected {
            return Err((
                SignatureCheck::PublicKey,
                format!(
                    "public key digest `{}` is not the verification key's `{expected}`",
                    printable(&block.public_key_sha256)
                ),
            ));
        }
        if IssuerType::parse(&block.issuer_type).is_err() {
            return Err((
                SignatureCheck::IssuerType,
                format!(
                    "issuer type `{}` is not a signing issuer (`hosted` or `ci`)",
                    printable(&block.issuer_type)
                ),
            ));
        }
        let bad = |why: &str| (SignatureCheck::Signature, format!("signature value {why}"));
        let Some(encoded) = block.value.strip_prefix(VALUE_PREFIX) else {
            return Err(bad("does not start with `base64:`"));
        };
        // One spelling only: URL-safe base64 without padding, as `sign` writes it.
        let bytes = URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| bad("is not URL-safe base64 without padding"))?;
        let bytes: [u8; 64] = bytes.try_into().map_err(|b: Vec<u8>| {
            bad(&format!("is {} bytes; an Ed25519 signature is 64", b.len()))
        })?;
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        self.key
            .verify_strict(&statement(body_digest, block), &signature)
            .map_err(|_| {
                bad(&format!(
                    "does not verify with key `{}`: the signature, or the body digest and signature fields it covers, were changed",
                    self.kid
                ))
            })
    }
}

/// The names of `role` looked up through `get`: all set → their values in order, none → `None`,
/// some → [`KeyError::Incomplete`].
fn complete<const N: usize>(
    role: KeyRole,
    names: [&'static str; N],
    get: &dyn Fn(&str) -> Option<Zeroizing<String>>,
) -> Result<Option<[Zeroizing<String>; N]>, KeyError> {
    let values = names.map(|n| get(n).filter(|v| !v.trim().is_empty()));
    let given: Vec<&str> = names
        .iter()
        .zip(&values)
        .filter(|(_, v)| v.is_some())
        .map(|(n, _)| *n)
        .collect();
    if given.is_empty() {
        return Ok(None);
    }
    if given.len() < N {
        let missing: Vec<&str> = names
            .iter()
            .filter(|n| !given.contains(n))
            .copied()
            .collect();
        return Err(KeyError::Incomplete {
            what: role,
            given: given.join(", "),
            missing: missing.join(", "),
            all: names.join(", "),
        });
    }
    Ok(Some(values.map(Option::unwrap_or_default)))
}

/// A process environment value, or `None` when unset or not UTF-8 (a non-UTF-8 value then
/// reads as missing, which is reported as such).
fn env_value(name: &str) -> Option<Zeroizing<String>> {
    std::env::var(name).ok().map(Zeroizing::new)
}

fn check_kid(name: &'static str, kid: &str) -> Result<String, KeyError> {
    let kid = kid.trim();
    if kid.is_empty()
        || kid.chars().count() > MAX_KID_CHARS
        || !kid.chars().all(|c| c.is_ascii_graphic())
    {
        return Err(KeyError::Malformed {
            name,
            problem: format!(
                "must be 1 to {MAX_KID_CHARS} printable ASCII characters without spaces"
            ),
        });
    }
    Ok(kid.to_string())
}

/// Decodes a base64 key of exactly 32 bytes. The error never quotes the text: for a seed,
/// even a position or a byte of it would be a leak.
fn decode_key(name: &'static str, text: &str, what: &str) -> Result<Zeroizing<[u8; 32]>, KeyError> {
    let bytes = Zeroizing::new(
        decode_base64(text.trim()).ok_or_else(|| KeyError::Malformed {
            name,
            problem: format!("is not base64 (standard or URL-safe) of {what}"),
        })?,
    );
    let mut key = Zeroizing::new([0u8; 32]);
    if bytes.len() != key.len() {
        return Err(KeyError::Malformed {
            name,
            problem: format!("decodes to {} bytes; {what} is 32 bytes", bytes.len()),
        });
    }
    key.copy_from_slice(&bytes);
    Ok(key)
}

/// Base64 in either alphabet, padded or not: URL-safe first, as runx writes it.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    const INDIFFERENT: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, INDIFFERENT);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, INDIFFERENT);
    URL_SAFE
        .decode(text)
        .or_else(|_| STANDARD.decode(text))
        .ok()
}

/// Reads a key file: a regular file of at most [`KEY_FILE_BYTES`] with `NAME=VALUE` lines
/// (blank lines and `#` comments ignored, a value may be quoted), naming only `role`'s names.
/// A signing key file must not be readable by group or others.
fn read_key_file(
    path: &Path,
    role: KeyRole,
    private: bool,
) -> Result<Vec<(String, Zeroizing<String>)>, KeyError> {
    let problem = |problem: String| KeyError::File {
        path: path.to_path_buf(),
        problem,
    };
    // O_NONBLOCK: opening a FIFO must not hang; it is refused below as not a regular file.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| problem(format!("cannot be opened: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| problem(format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(problem("is not a regular file".to_string()));
    }
    if private && meta.permissions().mode() & 0o077 != 0 {
        return Err(problem(format!(
            "is readable or writable by group or others (mode {:o}); a signing key must be private: chmod 600 it",
            meta.permissions().mode() & 0o777
        )));
    }
    let mut bytes = Zeroizing::new(Vec::new());
    (&mut file)
        .take(KEY_FILE_BYTES.max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| problem(format!("cannot be read: {e}")))?;
    if bytes.len() as u64 > KEY_FILE_BYTES.max {
        return Err(problem(format!(
            "is larger than {} bytes; a key file holds a few short lines",
            KEY_FILE_BYTES.max
        )));
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| problem("is not UTF-8 text".to_string()))?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |what: String| problem(format!("line {}: {what}", i + 1));
        let Some((name, value)) = line.split_once('=') else {
            return Err(at("is not NAME=VALUE".to_string()));
        };
        let name = name
            .trim()
            .strip_prefix("export ")
            .unwrap_or(name.trim())
            .trim();
        if !role.names().contains(&name) {
            if SIGN_NAMES.contains(&name) || VERIFY_NAMES.contains(&name) {
                return Err(at(format!(
                    "names `{name}`, which does not belong in a {} key file",
                    role.adjective()
                )));
            }
            // Any other name is not quoted: a line holding a bare base64 seed splits at its
            // padding, and the seed would be the "name".
            return Err(at(format!(
                "names a variable other than those a {} key file holds ({})",
                role.adjective(),
                role.names().join(", ")
            )));
        }
        if entries.iter().any(|(n, _): &(String, _)| n == name) {
            return Err(at(format!("names `{name}` a second time")));
        }
        let value = value.trim();
        let value = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        entries.push((name.to_string(), Zeroizing::new(value.to_string())));
    }
    Ok(entries)
}
