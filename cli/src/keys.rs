//! Receipt keys on the command line (`--sign-key`, `--require-signed`) and in the
//! environment, resolved before anything runs.

use runx_receipts::{KeyError, Signer, Trust, VerifyKey};
use runx_runtime::{FailureKind, RunError};
use std::path::{Path, PathBuf};

/// How the receipts of a run are signed.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SignArgs {
    /// Sign receipts with the key in FILE: `NAME=VALUE` lines for RUNX_RECEIPT_SIGN_KID,
    /// RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64 and RUNX_RECEIPT_SIGN_ISSUER_TYPE (mode 600).
    /// Without it, those environment variables are read.
    #[arg(long, value_name = "FILE")]
    sign_key: Option<PathBuf>,
    /// Refuse to run without a signing key (also RUNX_RECEIPT_REQUIRE_SIGNED=1).
    #[arg(long)]
    require_signed: bool,
}

/// The receipt keys of a run, resolved before anything runs.
#[derive(Debug, Default)]
pub struct Keys {
    /// Signs every receipt.
    pub signer: Option<Signer>,
    /// Given to cli-tool children (else the signer's public half).
    pub verify: Option<VerifyKey>,
}

/// Resolves the keys `args` and the environment configure. Half a key, a malformed value, or
/// no key under `--require-signed` is a usage error; messages never quote a seed.
pub fn keys(args: &SignArgs) -> Result<Keys, RunError> {
    let signer = match &args.sign_key {
        Some(file) => Some(Signer::from_file(file).map_err(|e| usage("signing_key", &e))?),
        None => Signer::from_env().map_err(|e| usage("signing_key", &e))?,
    };
    let verify = VerifyKey::from_env().map_err(|e| usage("verification_key", &e))?;
    let required = args.require_signed
        || runx_receipts::require_signed_from_env().map_err(|e| usage("require_signed", &e))?;
    if required && signer.is_none() {
        return Err(RunError::new(
            FailureKind::Usage,
            "unsigned",
            format!(
                "signed receipts are required (--require-signed or {}) but no signing key is configured; set {}, {} and {}, or pass --sign-key FILE",
                runx_receipts::REQUIRE_SIGNED_ENV,
                runx_receipts::SIGN_KID_ENV,
                runx_receipts::SIGN_SEED_ENV,
                runx_receipts::SIGN_ISSUER_TYPE_ENV
            ),
        ));
    }
    if signer.is_some() {
        runx_receipts::guard_process();
    }
    Ok(Keys { signer, verify })
}

fn usage(code: &str, e: &KeyError) -> RunError {
    RunError::new(FailureKind::Usage, code, e.to_string())
}

/// The verification key: the key in `file`, else the verification key in the environment, else
/// the public half of a configured signing key; `None` when none is configured. Half a key or a
/// malformed one is an error.
pub fn verify_key(file: Option<&Path>) -> Result<Option<VerifyKey>, KeyError> {
    match file {
        Some(file) => VerifyKey::from_file(file).map(Some),
        None => match VerifyKey::from_env()? {
            Some(key) => Ok(Some(key)),
            None => Ok(Signer::from_env()?.map(|s| s.verify_key())),
        },
    }
}

/// Whom a verifier trusts: the key in `file`, else the verification key in the environment,
/// else the public half of a configured signing key; with `allow_local`, local development
/// signatures too (integrity only), beside the key when there is one. Nothing at all is an
/// error that says what to give.
pub fn trust(file: Option<&Path>, allow_local: bool) -> Result<Trust, KeyError> {
    if let Some(key) = verify_key(file)? {
        return Ok(if allow_local {
            Trust::KeyOrLocal(key)
        } else {
            Trust::Key(key)
        });
    }
    if allow_local {
        return Ok(Trust::LocalDevelopment);
    }
    Err(KeyError::Malformed {
        name: runx_receipts::VERIFY_KID_ENV,
        problem: format!(
            "is not set: verifying needs a key; set it and {}, pass --public-key FILE, or pass --allow-local-development-signatures to check receipts made without a key for integrity only",
            runx_receipts::VERIFY_PUBLIC_KEY_ENV
        ),
    })
}
