//! runx receipts: what a run proves about itself, and how anyone checks it offline.
//!
//! Every run of a runx skill package that loads writes one `runx.receipt.v1` JSON file
//! ([`Receipt`]). It is *sealed*: its `body_digest` is the SHA-256 of the RFC 8785 canonical
//! JSON of every other field ([`canonical_json`], [`body_digest`]); with a signing key
//! ([`Signer`]) it is also *signed* with Ed25519 ([`SignatureBlock`]). `runx harness` writes a
//! `runx.harness_receipt.v1` that lists the digests of its cases' receipts.
//!
//! This crate is what a third party needs to read and verify those files: it does not depend
//! on the runtime, the worker or any JavaScript engine. It is not where receipts are *made*
//! from a run: `runx-runtime` fills a [`Receipt`] and seals it with this crate.
//!
//! ```
//! use runx_receipts::{Receipt, RECEIPT_SCHEMA, body_digest};
//!
//! let mut receipt = Receipt {
//!     schema: RECEIPT_SCHEMA.to_string(),
//!     id: Receipt::new_id(0),
//!     skill: "greet".to_string(),
//!     ..Receipt::default()
//! };
//! receipt.seal(None); // unsigned: a body digest, no signature
//! let written = serde_json::to_value(&receipt)?;
//! assert_eq!(body_digest(&written), receipt.body_digest);
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! | module | what it holds |
//! |---|---|
//! | `receipt` | the `runx.receipt.v1` model and its atomic write |
//! | `digest`, `strict`, `values` | canonical JSON (RFC 8785) and `sha256:` digests; JSON read with unique keys; the values of a JSON text, counted before it is parsed |
//! | `seal`, `signature`, `keys`, `names` | the seal (body digest), the signature block, signing and verification keys and where they come from |
//! | `verification` | checking receipt files offline (`runx receipt verify`) |
//! | `durable` | a file that appears whole or not at all |
//! | `bounds` | the bounds on the files this crate reads |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bounds;
mod digest;
mod durable;
mod keys;
mod names;
mod quote;
mod receipt;
mod seal;
mod signature;
mod strict;
mod values;
mod verification;

#[cfg(test)]
mod seal_tests;
#[cfg(test)]
mod verification_tests;

pub use bounds::{FileBound, KEY_FILE_BYTES, RECEIPT_BYTES, RECEIPT_VALUES, ValueBound};
pub use digest::{canonical_json, digest, sha256_hex, spell};
pub use durable::write_new;
pub use keys::{
    IssuerType, KeyError, KeyRole, SignatureCheck, Signer, VerifyKey, guard_process,
    require_signed_from_env,
};
pub use names::{
    RECEIPT_DIR_ENV, REQUIRE_SIGNED_ENV, SIGN_ENV_PREFIX, SIGN_ISSUER_TYPE_ENV, SIGN_KID_ENV,
    SIGN_SEED_ENV, VERIFY_KID_ENV, VERIFY_PUBLIC_KEY_ENV, is_signing_name,
};
pub use receipt::{
    ArtifactProvenance, Disposition, EngineRecord, FailureRecord, HARNESS_RECEIPT_SCHEMA,
    PageTimings, ProcessRecord, RECEIPT_SCHEMA, RUNX_VERSION, Receipt, RunStatus, SEALED_STATE,
    StreamRecord, now_ms,
};
pub use seal::{as_written, body_digest, seal};
pub use signature::{ALGORITHM, SignatureBlock, statement};
pub use strict::{check_unique, parse_unique};
pub use values::count_values;
pub use verification::{
    Check, Problem, Verdict, check_schema, check_sealed, read_receipt, receipt_files, verify_file,
};
