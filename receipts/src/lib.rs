//! runx receipts: what a run proves about itself, and how anyone checks it offline.
//!
//! Every run of a skill package that loads writes one receipt in runx's own format,
//! `runx.receipt.v1` ([`runx`]): content-addressed (`id`), sealed with the digest of its
//! canonical body (`digest`) and signed, with Ed25519 when a key is configured ([`Signer`]) and
//! with runx's local-development signature otherwise, so that runx's verifier accepts it and
//! this crate accepts runx's. What this runtime records beyond runx's fields (engine, limits,
//! digests of inputs, output, bundle and pages, timings) is its own document, a
//! [`RunEvidence`] (`runx-rs.run_evidence.v1`), carried in the receipt and named by digest in a
//! signed reference. `runx harness` writes a `runx-rs.harness_receipt.v1` that lists the
//! digests of its cases' receipts.
//!
//! This crate is what a third party needs to read and verify those files: it does not depend
//! on the runtime, the worker or any JavaScript engine. It is not where receipts are *made*
//! from a run: `runx-runtime` fills a [`runx::SkillRun`] and seals it with this crate.
//!
//! ```
//! use runx_receipts::runx::{SealParts, SkillRun, Trust, seal, skill_receipt, verdict};
//! use serde_json::json;
//!
//! let at = "2026-12-01T00:00:00.000Z".to_string();
//! let hash = runx_receipts::sha256_hex(b"example");
//! let run = SkillRun {
//!     skill: "greet".into(), runner: "default".into(),
//!     run_id: "run_default_0".into(), harness_id: "hrn_run_default_0_default".into(),
//!     seal: SealParts { disposition: "closed".into(), reason_code: "process_closed".into(),
//!         summary: "javascript default completed".into(), closed_at: at },
//!     commitments: Vec::new(), intent_key: hash.clone(), trigger_fingerprint: hash.clone(),
//!     content_hash: hash.clone(), profile_hash: hash, execution_boundary: None,
//!     evidence: json!({ "schema": "runx-rs.run_evidence.v1" }),
//! };
//! let mut receipt = skill_receipt(&run);
//! seal(&mut receipt, None); // no key: a local-development signature
//! assert!(verdict(&receipt, &Trust::LocalDevelopment).valid);
//! ```
//!
//! | module | what it holds |
//! |---|---|
//! | `runx` | runx's `runx.receipt.v1`: made, sealed, written and verified as runx does |
//! | `receipt` | this runtime's evidence of a run, and the harness receipt's name |
//! | `digest`, `strict`, `values` | canonical JSON (RFC 8785) and `sha256:` digests; JSON read with unique keys; the values of a JSON text, counted before it is parsed |
//! | `seal`, `signature`, `keys`, `names`, `process` | the harness receipt's seal (body digest) and signature block, signing and verification keys, where they come from, and guarding the process that holds them |
//! | `schemas` | the JSON Schemas of the documents read here |
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
mod process;
mod quote;
mod receipt;
pub mod runx;
mod schemas;
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
pub use keys::{IssuerType, KeyError, KeyRole, SignatureCheck, Signer, VerifyKey};
pub use names::{
    RECEIPT_DIR_ENV, REQUIRE_SIGNED_ENV, SIGN_ENV_PREFIX, SIGN_ISSUER_TYPE_ENV, SIGN_KID_ENV,
    SIGN_SEED_ENV, VERIFY_KID_ENV, VERIFY_PUBLIC_KEY_ENV, is_signing_name,
};
pub use process::{guard_process, require_signed_from_env};
pub use receipt::{
    ArtifactProvenance, Disposition, EngineRecord, FailureRecord, HARNESS_RECEIPT_SCHEMA,
    PageTimings, ProcessRecord, RUNX_VERSION, RunEvidence, RunStatus, SEALED_STATE, StreamRecord,
    now_ms,
};
pub use runx::{EVIDENCE_SCHEMA, RECEIPT_SCHEMA, Trust};
pub use seal::{as_written, body_digest, seal};
pub use signature::{ALGORITHM, SignatureBlock, statement};
pub use strict::{check_unique, parse_unique};
pub use values::count_values;
pub use verification::{
    Check, Problem, Verdict, check_schema, check_sealed, misnamed, read_receipt, receipt_files,
    verify_file,
};
