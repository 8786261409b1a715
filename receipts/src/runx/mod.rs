//! Receipts in runx's own format, `runx.receipt.v1`: made, sealed and verified as runx makes,
//! seals and verifies them, so that runx's verifier accepts this runtime's receipts and this
//! runtime accepts runx's.
//!
//! | module | what it holds |
//! |---|---|
//! | `c14n` | runx's canonical form and the identity, body and full digests |
//! | `skill` | the receipt of one skill run, and where this runtime's evidence goes |
//! | `seal` | content address, digest and signature (a key's, or local development's) |
//! | `signature` | Ed25519 over a digest string |
//! | `verify` | runx's verdict on one receipt |

mod c14n;
mod seal;
mod signature;
mod skill;
mod verify;

pub use c14n::{
    CANONICALIZATION, body_digest, c14n_digest, c14n_object_digest, canonical_bytes, full_digest,
    identity_digest,
};
pub use seal::{
    ALGORITHM, LOCAL_ISSUER_TYPE, LOCAL_KID, LOCAL_PUBLIC_KEY_SHA256, LOCAL_SIGNATURE_PREFIX,
    file_name, seal, write,
};
pub use signature::DigestSignature;
pub use skill::{
    BYTES_COMMITMENT, Commitment, EVIDENCE_LABEL, EVIDENCE_SCHEMA, EVIDENCE_URI_PREFIX,
    JSON_COMMITMENT, RECEIPT_SCHEMA, SealParts, SkillRun, evidence_ref, identifier_segment,
    iso_millis, skill_receipt,
};
pub use verify::{
    Finding, LineageStatus, Recomputed, RunxVerdict, SignatureStatus, Trust, VERDICT_SCHEMA,
    verdict,
};
